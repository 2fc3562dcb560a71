package postgres

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// Import puts another log's events after the head with their ids,
// streams, versions, types, bodies and times; a page this log already has
// is refused whole; appends and subscriptions go on after it as after any
// append.
func TestImportKeepsEverythingButPositions(t *testing.T) {
	s := openT(t, pgtest.DSN(t), Options{})
	ctx := t.Context()
	sub, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	at := time.Date(2025, 3, 30, 11, 0, 0, 123456000, time.UTC)
	var page []eventstore.RecordedEvent
	for i := range 10 {
		stream := fmt.Sprintf("link-%d", i%3)
		e := eventstore.RecordedEvent{ID: uuid.New(), Stream: stream, Version: uint64(i / 3), Type: "Tested",
			Data: fmt.Appendf(nil, `{"n":%d}`, i), Time: at.Add(time.Duration(i) * time.Hour)}
		if i%2 == 0 {
			e.Metadata = []byte(`{"by":"test"}`)
		}
		page = append(page, e)
	}
	head, err := s.Import(ctx, page[:6])
	if err != nil || head != position(6) {
		t.Fatalf("import: head %v, %v", head, err)
	}
	if _, err := s.Import(ctx, page[5:]); !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		t.Fatalf("a page with an event the log has: %v, want a wrong version", err)
	}
	if _, err := s.Import(ctx, page[6:]); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadAll(ctx, eventstore.Start, 100)
	if err != nil || len(got) != len(page) {
		t.Fatalf("read %d events, %v; want %d", len(got), err, len(page))
	}
	for i, g := range got {
		w := page[i]
		if g.ID != w.ID || g.Stream != w.Stream || g.Version != w.Version || g.Type != w.Type || !bytes.Equal(g.Data, w.Data) ||
			!bytes.Equal(g.Metadata, w.Metadata) || !g.Time.Equal(w.Time) || g.Position != position(int64(i+1)) {
			t.Fatalf("event %d is %+v, want %+v at position %d", i, g, w, i+1)
		}
	}
	for i := range page {
		e, err := sub.Recv(ctx)
		if err != nil || e.ID != page[i].ID {
			t.Fatalf("subscription's event %d: %v %v, want %v", i, e.ID, err, page[i].ID)
		}
	}
	// link-0 holds versions 0-3: an append after the import takes 4.
	if _, err := s.Append(ctx, "link-0", eventstore.Exact(2), ev(0)); !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
		t.Fatalf("an append behind the imported versions: %v", err)
	}
	res, err := s.Append(ctx, "link-0", eventstore.Any(), ev(0))
	if err != nil || res.NextExpectedVersion != 4 || res.Position != position(11) {
		t.Fatalf("append after the import: %+v %v", res, err)
	}
	if _, err := s.Import(ctx, []eventstore.RecordedEvent{{ID: uuid.New(), Stream: "$system", Type: "T", Time: at}}); !errors.Is(err, eventstore.ErrInvalidEvent) {
		t.Fatalf("a reserved stream imported: %v", err)
	}
}
