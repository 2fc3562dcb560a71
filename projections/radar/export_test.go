package radar

import "context"

// DowngradeToV1 turns s's conversions into what linkd wrote before schema
// version 2 (keyed by conversion id, with an index by click; customer
// streams in applied; user_version 0), keeping their rows.
func DowngradeToV1(s *Store) error {
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`ALTER TABLE conversions RENAME TO tmp`,
		`CREATE TABLE conversions (
			conversion_id TEXT PRIMARY KEY,
			kind TEXT NOT NULL,
			click_id TEXT NOT NULL,
			customer TEXT NOT NULL,
			amount_minor INTEGER NOT NULL,
			currency TEXT NOT NULL,
			at INTEGER NOT NULL) WITHOUT ROWID`,
		`CREATE INDEX conversions_click ON conversions (click_id, kind)`,
		`INSERT INTO conversions SELECT conversion_id, kind, click_id, customer, amount_minor, currency, at FROM tmp`,
		`DROP TABLE tmp`,
		`INSERT INTO applied (stream, version) SELECT DISTINCT customer, 99 FROM conversions`,
		`PRAGMA user_version = 0`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// AppliedStreams counts the streams in applied.
func AppliedStreams(s *Store) (n int, err error) {
	err = s.w.QueryRow(`SELECT count(*) FROM applied`).Scan(&n)
	return n, err
}
