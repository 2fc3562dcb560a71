package webhook_test

import (
	"testing"

	"github.com/linkd/linkd/domain"
	. "github.com/linkd/linkd/domain/domaintest"
	"github.com/linkd/linkd/domain/webhook"
)

func created() *webhook.Created {
	return &webhook.Created{ID: "w1", WorkspaceID: "ws", URL: "https://hooks.example/in", Events: []string{"link.clicked", "sale.created"},
		LinkIDs: []string{"l1"}, Description: "CRM", SecretEnc: "enc", CreatedBy: "alice", At: T0}
}

func given(t *testing.T, events ...domain.Event) *webhook.Webhook {
	t.Helper()
	w, err := webhook.Load(Given(t, events...))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestCreate(t *testing.T) {
	w, err := webhook.Create("w1", "ws", " https://hooks.example/in#frag ", []string{"link.clicked", "sale.created", "link.clicked"}, []string{"l1", "l1"}, "CRM", "enc", "alice", T0)
	if err != nil {
		t.Fatal(err)
	}
	Then(t, w, created())
	if !w.IsActive {
		t.Error("a new webhook is active")
	}
}

func TestCreateRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		url    string
		events []string
	}{
		"no url":        {"", []string{"link.clicked"}},
		"ftp":           {"ftp://hooks.example/in", []string{"link.clicked"}},
		"relative":      {"/in", []string{"link.clicked"}},
		"credentials":   {"https://u:p@hooks.example/in", []string{"link.clicked"}},
		"no events":     {"https://hooks.example/in", nil},
		"unknown event": {"https://hooks.example/in", []string{"link.exploded"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := webhook.Create("w1", "ws", c.url, c.events, nil, "", "enc", "alice", T0)
			if domain.KindOf(err) != domain.KindInvalid {
				t.Fatalf("err %v, want invalid", err)
			}
		})
	}
}

func TestUpdateDisableDelete(t *testing.T) {
	w := given(t, created())
	if err := w.Update(webhook.Patch{Events: domain.Some([]string{"lead.created"}), LinkIDs: domain.NullOpt[[]string]()}, At(1)); err != nil {
		t.Fatal(err)
	}
	Then(t, w, &webhook.Updated{ID: "w1", WorkspaceID: "ws", Events: domain.Some([]string{"lead.created"}), LinkIDs: domain.Some([]string{}), At: At(1)})
	if len(w.LinkIDs) != 0 || w.Events[0] != "lead.created" {
		t.Errorf("state %+v", w)
	}

	w = given(t, created())
	if err := w.Update(webhook.Patch{Events: domain.Some([]string{"nope"})}, At(1)); domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("unknown event: %v", err)
	}
	if err := w.Disable(webhook.ReasonGone, At(2)); err != nil {
		t.Fatal(err)
	}
	Then(t, w, &webhook.Disabled{ID: "w1", WorkspaceID: "ws", Reason: "gone", At: At(2)})
	if w.IsActive {
		t.Error("disabled webhook is active")
	}

	w = given(t, created(), &webhook.Disabled{ID: "w1", WorkspaceID: "ws", Reason: "gone", At: At(2)})
	if err := w.Disable(webhook.ReasonFailures, At(3)); err != nil {
		t.Fatal(err)
	}
	ThenNothing(t, w)
	if err := w.Update(webhook.Patch{IsActive: domain.Some(true)}, At(4)); err != nil || !w.IsActive {
		t.Errorf("re-enabled: %v %v", err, w.IsActive)
	}

	w = given(t, created(), &webhook.Deleted{ID: "w1", WorkspaceID: "ws", At: At(5)})
	if err := w.Delete(At(6)); domain.KindOf(err) != domain.KindNotFound {
		t.Errorf("delete twice: %v", err)
	}
}
