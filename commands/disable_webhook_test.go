package commands_test

import (
	"context"
	"sync"
	"testing"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/internal/secrets"
)

// Deliverers on several instances may each find that a webhook must be
// turned off (a 410 each, or each sees the five days pass): the webhook's
// expected version lets one WebhookDisabled through, whatever the number
// of instances and of tries (ADR 0108).
func TestDisableWebhookOnceFromManyInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.deps.Cipher = secrets.New([]byte("0123456789abcdef0123456789abcdef")).Cipher()
	w, _, _, err := commands.CreateWebhookHandler{Deps: e.deps}.Handle(ctx, commands.CreateWebhook{
		Actor: alice, WorkspaceID: e.ws, URL: "https://hooks.example.com/x", Events: []string{webhook.TypeLinkClicked}})
	if err != nil {
		t.Fatal(err)
	}
	// One Deps per instance: each loads the webhook itself.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &commands.Deps{Store: e.store, Now: e.deps.Now}
			reason := webhook.ReasonGone
			if i%2 == 1 {
				reason = webhook.ReasonFailures
			}
			if _, err := (commands.DisableWebhookHandler{Deps: d}).Handle(ctx, commands.DisableWebhook{ID: w.ID, Reason: reason}); err != nil {
				t.Errorf("instance %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	disabled := 0
	for _, ev := range e.stream(t, webhook.Stream(w.ID)) {
		if _, ok := ev.(*webhook.Disabled); ok {
			disabled++
		}
	}
	if disabled != 1 {
		t.Errorf("%d WebhookDisabled events, want 1", disabled)
	}
}
