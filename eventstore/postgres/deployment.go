package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Agree records value under name unless the deployment has one already,
// and returns the value recorded: the first instance to say it wins, and
// every later one learns what the first said. Instances sharing the store
// use it for what they must agree on (the server secret's fingerprint).
func (s *Store) Agree(ctx context.Context, name, value string) (string, error) {
	var got string
	err := s.pool.QueryRow(ctx, `WITH ins AS (
		INSERT INTO linkd_deployment (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING RETURNING value)
	SELECT value FROM ins UNION ALL SELECT value FROM linkd_deployment WHERE name = $1 LIMIT 1`, name, value).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		// Another instance's insert committed after this statement's
		// snapshot was taken (its INSERT waited for it, its SELECT could
		// not see it): a new statement does.
		err = s.pool.QueryRow(ctx, "SELECT value FROM linkd_deployment WHERE name = $1", name).Scan(&got)
	}
	if err != nil {
		return "", fmt.Errorf("postgres: deployment %s: %w", name, err)
	}
	return got, nil
}
