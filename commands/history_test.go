package commands_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
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
		h := commands.TrackSaleHandler{Deps: other, Clicks: theClick{click: e.click("clk-1")}}
		if i%2 == 1 {
			h.Deps = e.deps
		}
		tr, _, err := h.Handle(ctx, commands.TrackSale{Actor: alice,
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

// Caches smaller than the customers in use evict and reload: every load
// still sees the whole history.
func TestHistoriesEvict(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // 64 customers
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

// readCounter counts the reads of each stream.
type readCounter struct {
	commands.EventStore
	mu    sync.Mutex
	reads map[string]int
}

func (c *readCounter) count(stream string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[stream]++
}

func (c *readCounter) ReadStream(ctx context.Context, stream string, from uint64, max int) ([]eventstore.RecordedEvent, error) {
	c.count(stream)
	return c.EventStore.ReadStream(ctx, stream, from, max)
}

func (c *readCounter) StreamVersion(ctx context.Context, stream string) (uint64, bool, error) {
	c.count(stream)
	return c.EventStore.StreamVersion(ctx, stream)
}

// A customer's state is cached: once a sale has saved it, the next sales
// read nothing of the customer's stream (their appends check it), while
// the workspace is still asked for its version every time. A repeat of an
// eventId reads the stream: the cached state knows no conversion ids.
func TestCustomerCacheReadsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	counter := &readCounter{EventStore: e.store, reads: map[string]int{}}
	deps := &commands.Deps{Store: commands.WithHistories(counter, 64, []string{workspace.StreamPrefix}),
		Customers: commands.NewCustomerCache(64), DefaultPlan: "pro", Now: e.deps.Now}
	track := func(i int) commands.Tracked {
		t.Helper()
		tr, _, err := commands.TrackSaleHandler{Deps: deps, Clicks: theClick{click: e.click("clk-1")}}.Handle(context.Background(), commands.TrackSale{Actor: alice,
			Payload: sale(t, fmt.Sprintf(`{"trackingId": "clk-1", "customer": {"externalId": "u-1"}, "amount": 2, "currency": "usd", "eventId": "o-%d"}`, i))})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for i := range 5 {
		if tr := track(i); tr.First != (i == 0) || !tr.Recorded {
			t.Fatalf("sale %d: %+v", i, tr)
		}
	}
	customer := conversion.CustomerStream(e.ws, "u-1")
	if n := counter.reads[customer]; n != 1 {
		t.Errorf("the customer's stream was read %d times, want once (the first sale, before it existed)", n)
	}
	if n := counter.reads[workspace.Stream(e.ws)]; n < 5 {
		t.Errorf("the workspace was read %d times for 5 sales, want every time", n)
	}
	if tr := track(3); tr.Recorded {
		t.Errorf("the repeat of o-3 recorded a sale: %+v", tr)
	}
	if n := counter.reads[customer]; n != 2 {
		t.Errorf("the customer's stream was read %d times, want twice (the repeat reads it)", n)
	}
	if n := len(e.stream(t, customer)); n != 6 {
		t.Errorf("the customer's stream holds %d events, want 6 (created, 5 sales)", n)
	}
}
