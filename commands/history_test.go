package commands_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
)

// The history cache never serves a stale history: another writer's events
// (another linkd on the same EventStoreDB, here Deps without the cache)
// are seen by the next load.
func TestHistoriesSeeOtherWriters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := &commands.Deps{Store: e.store, DefaultPlan: "pro", Now: e.deps.Now}
	ctx := context.Background()

	// Bob is not a member: refused, and the workspace is now cached.
	_, err := e.trackLead(t, bob, e.click("clk-1"), lead(t, `{"trackingId": "clk-1", "customer": {"externalId": "u-1"}}`))
	checkErr(t, err, domain.KindForbidden, conversion.MsgClickNotYours)
	if _, err := (commands.MembersHandler{Deps: other}).Add(ctx, commands.AddMember{Actor: alice, WorkspaceID: e.ws, UserID: "bob", Role: "member"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.trackLead(t, bob, e.click("clk-1"), lead(t, `{"trackingId": "clk-1", "customer": {"externalId": "u-1"}}`)); err != nil {
		t.Fatalf("bob, a member since another writer added him: %v", err)
	}

	// The customer's first sale, recorded by the other writer after this
	// one cached the customer: the next sale here is not first, and each
	// stream holds one first.
	if _, err := e.trackSale(t, alice, e.click("clk-1"), sale(t, `{"trackingId": "clk-1", "customer": {"externalId": "u-1"}, "amount": 1, "currency": "usd"}`)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		h := commands.TrackSaleHandler{Deps: other}
		if i%2 == 1 {
			h.Deps = e.deps
		}
		tr, _, err := h.Handle(ctx, commands.TrackSale{Actor: alice, Click: e.click("clk-1"),
			Payload: sale(t, fmt.Sprintf(`{"trackingId": "clk-1", "customer": {"externalId": "u-1"}, "amount": 2, "currency": "usd", "eventId": "o-%d"}`, i))})
		if err != nil {
			t.Fatal(err)
		}
		if tr.First {
			t.Errorf("sale %d is marked first", i)
		}
	}
	firsts, sales := 0, 0
	for _, ev := range e.stream(t, conversion.CustomerStream(e.ws, "u-1")) {
		if s, ok := ev.(*conversion.SaleTracked); ok {
			sales++
			if s.First {
				firsts++
			}
		}
	}
	if sales != 4 || firsts != 1 {
		t.Errorf("%d sales, %d first; want 4 and 1", sales, firsts)
	}
}

// A cache smaller than the streams in use evicts and reloads: every load
// still sees the whole history.
func TestHistoriesEvict(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // 64 streams
	for round := range 3 {
		for c := range 100 {
			tr, err := e.trackSale(t, alice, e.click("clk-1"),
				sale(t, fmt.Sprintf(`{"trackingId": "clk-1", "customer": {"externalId": "u-%d"}, "amount": 1, "currency": "usd"}`, c)))
			if err != nil {
				t.Fatal(err)
			}
			if tr.First != (round == 0) {
				t.Fatalf("round %d customer %d: first %v", round, c, tr.First)
			}
		}
	}
}
