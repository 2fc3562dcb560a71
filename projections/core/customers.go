package core

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/queries"
)

// The customers of conversion tracking: one row per customer (a
// workspace's externalId), from the customer streams, and their journeys
// (every lead and sale, each with its click) in Pebble (journeys.go). A
// customer's leads, sales, revenue per currency and last activity are
// counted from the journey when read: a sale writes one key.
//
// The table is WITHOUT ROWID: a table clustered on its key is one B-tree
// to write instead of two (the rowid table and the key's index).

var customerSchema = []string{
	`CREATE TABLE IF NOT EXISTS customers (
		stream TEXT NOT NULL,
		id TEXT PRIMARY KEY,
		workspace_id TEXT NOT NULL,
		external_id TEXT NOT NULL,
		email TEXT NOT NULL DEFAULT '',
		firstname TEXT NOT NULL DEFAULT '',
		lastname TEXT NOT NULL DEFAULT '',
		phone_number TEXT NOT NULL DEFAULT '',
		avatar_url TEXT NOT NULL DEFAULT '',
		link_id TEXT NOT NULL DEFAULT '',
		click_id TEXT NOT NULL DEFAULT '',
		leads INTEGER NOT NULL DEFAULT 0,
		sales INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		version INTEGER NOT NULL) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS customers_ws ON customers (workspace_id, created_at, id)`,
}

// applyCustomer applies an event of a customer stream, once: the row keeps
// the stream version of the profile it reflects, and an update changes it
// only from an older version; a lead or sale is its journey row, keyed by
// the stream version (a redelivered event changes nothing), and a first
// lead's click is set only where none is.
func (a *applier) applyCustomer(re *projections.Event) error {
	e, err := re.Decode()
	if errors.Is(err, domain.ErrUnknownEvent) {
		return nil // every event below checks its own version
	}
	if err != nil {
		return err
	}
	switch e := e.(type) {
	case *conversion.CustomerCreated:
		// The stream's first event: a row exists only once it is applied.
		at := e.At.UnixNano()
		return a.Exec(`INSERT INTO customers (stream, id, workspace_id, external_id, email, firstname, lastname, phone_number, avatar_url, created_at, updated_at, version)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(id) DO NOTHING`,
			re.Stream, e.CustomerID, e.WorkspaceID, e.ExternalID, e.Email, e.Firstname, e.Lastname, e.PhoneNumber, e.AvatarURL, at, at, re.Version)
	case *conversion.CustomerUpdated:
		return a.Exec(`UPDATE customers SET
			email = CASE WHEN ? <> '' THEN ? ELSE email END,
			firstname = CASE WHEN ? <> '' THEN ? ELSE firstname END,
			lastname = CASE WHEN ? <> '' THEN ? ELSE lastname END,
			phone_number = CASE WHEN ? <> '' THEN ? ELSE phone_number END,
			avatar_url = CASE WHEN ? <> '' THEN ? ELSE avatar_url END,
			updated_at = ?, version = ? WHERE id = ? AND version < ?`,
			e.Email, e.Email, e.Firstname, e.Firstname, e.Lastname, e.Lastname, e.PhoneNumber, e.PhoneNumber, e.AvatarURL, e.AvatarURL,
			e.At.UnixNano(), re.Version, e.CustomerID, re.Version)
	case *conversion.LeadTracked:
		if e.First {
			if err := a.Exec(`UPDATE customers SET link_id = ?, click_id = ? WHERE id = ? AND click_id = ''`,
				e.LinkID, e.ClickID, e.CustomerID); err != nil {
				return err
			}
		}
		return a.journeyEvent(re, e.CustomerID, queries.CustomerEvent{Kind: "lead", ConversionID: e.ConversionID, EventName: e.EventName,
			LinkID: e.LinkID, ClickID: e.ClickID, ClickedAt: e.ClickedAt, First: e.First, Metadata: e.Metadata, Timestamp: e.Timestamp})
	case *conversion.SaleTracked:
		return a.journeyEvent(re, e.CustomerID, queries.CustomerEvent{Kind: "sale", ConversionID: e.ConversionID, EventName: e.EventName,
			LinkID: e.LinkID, ClickID: e.ClickID, ClickedAt: e.ClickedAt, AmountMinor: e.AmountMinor, Currency: e.Currency,
			First: e.First, Metadata: e.Metadata, Timestamp: e.Timestamp})
	}
	return nil
}

// journeyEvent writes a lead or sale of a customer's journey under the
// version of its event in the customer's stream (journeys.go).
func (a *applier) journeyEvent(re *projections.Event, customerID string, e queries.CustomerEvent) error {
	a.key = journeyKey(a.key[:0], customerID, re.Version)
	a.val = encodeJourneyEvent(a.val[:0], e)
	return a.journeys.Set(a.key, a.val, nil)
}

const customerCols = `id, workspace_id, external_id, email, firstname, lastname, phone_number, avatar_url, link_id, click_id, created_at, updated_at`

func scanCustomer(sc interface{ Scan(...any) error }, extra ...any) (queries.Customer, error) {
	var c queries.Customer
	var ca, ua int64
	err := sc.Scan(append([]any{&c.ID, &c.WorkspaceID, &c.ExternalID, &c.Email, &c.Firstname, &c.Lastname, &c.PhoneNumber, &c.AvatarURL,
		&c.LinkID, &c.ClickID, &ca, &ua}, extra...)...)
	c.CreatedAt, c.UpdatedAt = ts(ca), ts(ua)
	return c, err
}

// countJourneys fills the customers' leads, sales and revenue per currency from
// their journeys, and moves their updated_at to their last lead or sale.
func (s *Store) countJourneys(ctx context.Context, cs []queries.Customer) error {
	if len(cs) == 0 {
		return nil
	}
	for i := range cs {
		cs[i].Revenue = map[string]int64{}
	}
	it, err := s.journeys.NewIterWithContext(ctx, nil)
	if err != nil {
		return err
	}
	for i := range cs {
		c := &cs[i]
		err := journey(it, c.ID, func(e queries.CustomerEvent) {
			switch e.Kind {
			case "lead":
				c.Leads++
			case "sale":
				c.Sales++
				c.Revenue[e.Currency] += e.AmountMinor
			}
			if e.Timestamp.After(c.UpdatedAt) {
				c.UpdatedAt = e.Timestamp
			}
		})
		if err != nil {
			return errors.Join(err, it.Close())
		}
	}
	return it.Close()
}

// Customer returns a customer by id.
func (s *Store) Customer(ctx context.Context, id string) (queries.Customer, bool, error) {
	c, err := scanCustomer(s.r.QueryRowContext(ctx, `SELECT `+customerCols+` FROM customers WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	cs := []queries.Customer{c}
	err = s.countJourneys(ctx, cs)
	return cs[0], err == nil, err
}

// Customers lists the customers of workspaces, newest first; search
// matches the beginning of externalId or email, case-insensitively.
func (s *Store) Customers(ctx context.Context, workspaceIDs []string, search string, p queries.Page) (queries.PageResult[queries.Customer], error) {
	in, args := inList(workspaceIDs)
	where := "workspace_id IN " + in
	if search != "" {
		like := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(search)) + "%"
		where += ` AND (lower(external_id) LIKE ? ESCAPE '\' OR lower(email) LIKE ? ESCAPE '\')`
		args = append(args, like, like)
	}
	res, err := paginate(ctx, s.r, `SELECT `+customerCols+`, created_at AS ca, id AS i FROM customers`, where, args, false, p,
		func(rows *sql.Rows) (queries.Customer, int64, string, error) {
			var t int64
			var id string
			c, err := scanCustomer(rows, &t, &id)
			return c, t, id, err
		})
	if err != nil {
		return res, err
	}
	return res, s.countJourneys(ctx, res.Items)
}

// CustomerJourney returns a customer's leads and sales in the order they
// were recorded.
func (s *Store) CustomerJourney(ctx context.Context, customerID string) ([]queries.CustomerEvent, error) {
	it, err := s.journeys.NewIterWithContext(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := []queries.CustomerEvent{}
	err = journey(it, customerID, func(e queries.CustomerEvent) { out = append(out, e) })
	if err := errors.Join(err, it.Close()); err != nil {
		return nil, err
	}
	return out, nil
}
