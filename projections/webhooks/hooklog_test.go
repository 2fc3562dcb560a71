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

// hookLog is an event log with webhook wh1 on link.created, and the
// projection of it, fed as the runner feeds it.
type hookLog struct {
	es      *embedded.Store
	path    string
	s       *Store
	applied eventstore.Position
	links   int
}

func newHookLog(t *testing.T, url string) *hookLog {
	t.Helper()
	es, err := embedded.Open(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	l := &hookLog{es: es, path: filepath.Join(t.TempDir(), "webhooks.db")}
	l.append(t, webhook.Stream("wh1"), &webhook.Created{ID: "wh1", WorkspaceID: "ws", URL: url, Events: []string{webhook.TypeLinkCreated},
		SecretEnc: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", At: time.Now().UTC()})
	l.open(t)
	return l
}

func (l *hookLog) append(t *testing.T, stream string, e domain.Event) {
	t.Helper()
	typ, data, err := domain.EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.es.Append(t.Context(), stream, eventstore.Any(), eventstore.EventData{Type: typ, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// open opens the projection, which goes on after its stored checkpoint.
func (l *hookLog) open(t *testing.T) {
	t.Helper()
	s, err := Open(l.path, Options{Events: l.es, RenderLink: func(_ context.Context, k *link.Link, _ int64) (map[string]any, error) {
		return map[string]any{"id": k.ID}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l.s = s
	if l.applied, err = s.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// add appends n link.Created events.
func (l *hookLog) add(t *testing.T, n int) {
	t.Helper()
	for range n {
		l.links++
		id := "l" + string(rune('a'+l.links/26)) + string(rune('a'+l.links%26))
		l.append(t, link.Stream(id), &link.Created{LinkID: id, Code: id, At: time.Now().UTC(), Attributes: link.Attributes{WorkspaceID: "ws", OriginalURL: "https://example.com/" + id}})
	}
}

// apply hands the projection every event after the last it was given.
func (l *hookLog) apply(t *testing.T) {
	t.Helper()
	recs, err := l.es.ReadAll(t.Context(), l.applied, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		return
	}
	if err := l.s.Apply(t.Context(), projections.Envelopes(recs)); err != nil {
		t.Fatal(err)
	}
	l.applied = recs[len(recs)-1].Position
}

// handOff applies the log, then n new links with the hand-off on, as a
// running deliverer has it, but nothing taking the messages.
func (l *hookLog) handOff(t *testing.T, n int) {
	t.Helper()
	l.s.hot.setOn(true)
	l.apply(t)
	l.add(t, n)
	l.apply(t)
}

func (l *hookLog) count(t *testing.T, q string) int {
	t.Helper()
	var n int
	if err := l.s.w.QueryRow(q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (l *hookLog) checkpoint(t *testing.T) eventstore.Position {
	t.Helper()
	cp, err := l.s.Checkpoint(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// waitFor polls cond for 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
