package webhooks

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/projections"
)

// A replay of the projection (linkd replay) rebuilds the webhooks from the
// events it had made messages of and makes none of them again, even when
// they were pruned long ago; it stops where the projection was, and the
// events after are live processing's, which sends them.
func TestReplayMakesNoMessageAgain(t *testing.T) {
	ctx := context.Background()
	es, err := embedded.Open(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	at := time.Now().UTC()
	appendEv := func(stream string, e domain.Event) {
		t.Helper()
		typ, data, err := domain.EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := es.Append(ctx, stream, eventstore.Any(), eventstore.EventData{Type: typ, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	created := func(id string) {
		appendEv(link.Stream(id), &link.Created{LinkID: id, Code: id, At: at, Attributes: link.Attributes{WorkspaceID: "ws", OriginalURL: "https://example.com/" + id}})
	}
	appendEv(webhook.Stream("wh1"), &webhook.Created{ID: "wh1", WorkspaceID: "ws", URL: "https://hooks.example/", Events: []string{webhook.TypeLinkCreated}, At: at})
	created("l1")
	created("l2")

	s, err := Open(filepath.Join(t.TempDir(), "webhooks.db"), Options{Events: es,
		RenderLink: func(_ context.Context, l *link.Link, _ int64) (map[string]any, error) {
			return map[string]any{"id": l.ID}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	live := func() {
		t.Helper()
		cp, _ := s.Checkpoint(ctx)
		recs, err := es.ReadAll(ctx, cp, 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(ctx, projections.Envelopes(recs)); err != nil {
			t.Fatal(err)
		}
	}
	messages := func() int {
		t.Helper()
		var n int
		if err := s.w.QueryRow(`SELECT count(*) FROM messages`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	live()
	if n := messages(); n != 2 {
		t.Fatalf("%d messages live, want 2", n)
	}
	if _, err := s.w.Exec(`DELETE FROM messages`); err != nil { // sent and pruned
		t.Fatal(err)
	}
	created("l3") // not yet seen by the projection when the replay runs

	applied, err := projections.Replay(ctx, es, s, projections.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if applied != 3 || messages() != 0 {
		t.Fatalf("replay applied %d events and made %d messages, want 3 and none", applied, messages())
	}
	if h, ok := s.hook("wh1"); !ok || !h.Active {
		t.Fatalf("webhook after the replay: %+v %v", h, ok)
	}
	live()
	var ev string
	if err := s.w.QueryRow(`SELECT event_id FROM messages`).Scan(&ev); err != nil || messages() != 1 {
		t.Fatalf("live after the replay: %d messages, %v", messages(), err)
	}
}
