package webhooks

import (
	"context"
	"testing"

	"github.com/linkd/linkd/projections"
)

// A replay of the projection (linkd replay) rebuilds the webhooks from the
// events it had made messages of and makes none of them again, even when
// they were pruned long ago; it stops where the projection was, and the
// events after are live processing's, which sends them.
func TestReplayMakesNoMessageAgain(t *testing.T) {
	ctx := context.Background()
	l := newHookLog(t, "https://hooks.example/")
	l.add(t, 2)
	messages := func() int { t.Helper(); return l.count(t, `SELECT count(*) FROM messages`) }
	l.apply(t)
	if n := messages(); n != 2 {
		t.Fatalf("%d messages live, want 2", n)
	}
	if _, err := l.s.w.Exec(`DELETE FROM messages`); err != nil { // sent and pruned
		t.Fatal(err)
	}
	l.add(t, 1) // not yet seen by the projection when the replay runs

	applied, err := projections.Replay(ctx, l.es, l.s, projections.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if applied != 3 || messages() != 0 {
		t.Fatalf("replay applied %d events and made %d messages, want 3 and none", applied, messages())
	}
	if h, ok := l.s.hook("wh1"); !ok || !h.Active {
		t.Fatalf("webhook after the replay: %+v %v", h, ok)
	}
	l.apply(t)
	var ev string
	if err := l.s.w.QueryRow(`SELECT event_id FROM messages`).Scan(&ev); err != nil || messages() != 1 {
		t.Fatalf("live after the replay: %d messages, %v", messages(), err)
	}
}
