package commands_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
)

type observed struct {
	mu    sync.Mutex
	calls []string
	errs  []error
}

func (o *observed) ObserveCommand(name string, took time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if took < 0 {
		panic("negative duration")
	}
	o.calls = append(o.calls, name)
	o.errs = append(o.errs, err)
}

// commands.New builds every handler over one set of dependencies and
// decorates them: the observer is told of each command with its name and
// outcome (refusals included), and the redirect path's RecordClick is not
// decorated.
func TestNewDecoratesEveryCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	obs := &observed{}
	c := commands.New(commands.Config{Deps: e.deps, Observer: obs, Clicks: noClicks{}})
	ctx := context.Background()
	w, _, err := c.CreateWorkspace.Handle(ctx, commands.CreateWorkspace{Actor: alice, Name: "Decorated"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.AddMember.Handle(ctx, commands.AddMember{Actor: bob, WorkspaceID: w.ID, UserID: "carol", Role: "member"})
	if domain.KindOf(err) == 0 {
		t.Fatalf("bob adding a member to alice's workspace: %v, want a refusal", err)
	}
	_, _, err = c.TrackLead.Handle(ctx, commands.TrackLead{Actor: alice, Payload: lead(t, `{"trackingId": "nope", "customer": {"externalId": "u"}}`)})
	if domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("lead of an unknown click: %v", err)
	}
	want := []string{"CreateWorkspace", "AddMember", "TrackLead"}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.calls) != len(want) {
		t.Fatalf("observed %v, want %v", obs.calls, want)
	}
	for i := range want {
		if obs.calls[i] != want[i] {
			t.Errorf("call %d observed as %q, want %q", i, obs.calls[i], want[i])
		}
	}
	if obs.errs[0] != nil || obs.errs[1] == nil || obs.errs[2] == nil {
		t.Errorf("outcomes observed: %v", obs.errs)
	}
	if _, ok := c.RecordClick.(commands.RecordClickHandler); !ok {
		t.Errorf("RecordClick is %T: the redirect path's command is not to be decorated", c.RecordClick)
	}
}
