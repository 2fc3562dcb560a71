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

// An update refuses to clear what a webhook cannot be without, with the
// message a create gives.
func TestUpdateRefusals(t *testing.T) {
	long := make([]byte, webhook.MaxDescriptionLength+1)
	for i := range long {
		long[i] = 'x'
	}
	for _, c := range []struct {
		name  string
		patch webhook.Patch
		msg   string
	}{
		{"null url", webhook.Patch{URL: domain.NullOpt[string]()}, "Webhook url is required"},
		{"blank url", webhook.Patch{URL: domain.Some(" ")}, "Webhook url is required"},
		{"null events", webhook.Patch{Events: domain.NullOpt[[]string]()},
			"events must name at least one of link.created, link.updated, link.deleted, link.clicked, lead.created, sale.created"},
		{"empty link id", webhook.Patch{LinkIDs: domain.Some([]string{" "})}, "link_ids must not hold empty ids"},
		{"long description", webhook.Patch{Description: domain.Some(string(long))}, ""},
		{"null is_active", webhook.Patch{IsActive: domain.NullOpt[bool]()}, "is_active must be true or false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := given(t, created())
			ThenError(t, w.Update(c.patch, At(1)), domain.KindInvalid, c.msg)
			ThenNothing(t, w)
		})
	}
	t.Run("null description clears it", func(t *testing.T) {
		w := given(t, created())
		if err := w.Update(webhook.Patch{Description: domain.NullOpt[string](), URL: domain.Some(" https://hooks.example/new#x")}, At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, w, &webhook.Updated{ID: "w1", WorkspaceID: "ws", URL: domain.Some("https://hooks.example/new"), Description: domain.Some(""), At: At(1)})
	})
}
