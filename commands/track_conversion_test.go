package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/reservation"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
)

var (
	alice = commands.Actor{UserID: "alice", KeyID: "key-alice"}
	bob   = commands.Actor{UserID: "bob", KeyID: "key-bob"}
	t0    = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
)

type env struct {
	store *embedded.Store
	deps  *commands.Deps
	ws    string // alice's workspace
	now   time.Time
	mu    sync.Mutex
}

// oneAtATime hides the embedded store's multi-stream appends, as
// EventStoreDB has none: conversions append the reservation of an eventId
// and the customer's events one after the other.
type oneAtATime struct{ commands.EventStore }

func newEnv(t *testing.T) *env { t.Helper(); return newEnvWith(t, true) }

// newEnvWith is newEnv on a store that appends to several streams at once
// (multi) or not.
func newEnvWith(t *testing.T, multi bool) *env {
	t.Helper()
	store, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	e := &env{store: store, now: t0}
	// Through the caches of histories and customers, as linkd serve runs
	// them.
	var base commands.EventStore = store
	if !multi {
		base = oneAtATime{store}
	}
	cached := commands.WithHistories(base, 64, []string{workspace.StreamPrefix})
	e.deps = &commands.Deps{Store: cached, DefaultPlan: "pro", Customers: commands.NewCustomerCache(64), Now: func() time.Time {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.now
	}}
	w, _, err := commands.CreateWorkspaceHandler{Deps: e.deps}.Handle(context.Background(), commands.CreateWorkspace{Actor: alice, Name: "Shop"})
	if err != nil {
		t.Fatal(err)
	}
	e.ws = w.ID
	return e
}

func (e *env) setNow(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = t
}

func (e *env) click(id string) conversion.Click {
	return conversion.Click{ClickID: id, LinkID: "lnk-" + id, WorkspaceID: e.ws, ProjectID: "prj-1", ClickedAt: t0.Add(-time.Hour)}
}

func lead(t *testing.T, body string) conversion.Payload {
	t.Helper()
	p, err := conversion.ParseLead([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func sale(t *testing.T, body string) conversion.Payload {
	t.Helper()
	p, err := conversion.ParseSale([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// theClick resolves every tracking id to one click, valid until expires
// (zero: for ever), as the click index would.
type theClick struct {
	click   conversion.Click
	expires time.Time
}

func (c theClick) ClickByTrackingID(context.Context, string) (conversion.Click, time.Time, error) {
	return c.click, c.expires, nil
}

func (e *env) trackLead(t *testing.T, a commands.Actor, click conversion.Click, p conversion.Payload) (commands.Tracked, error) {
	t.Helper()
	tr, _, err := commands.TrackLeadHandler{Deps: e.deps, Clicks: theClick{click: click}}.Handle(context.Background(), commands.TrackLead{Actor: a, Payload: p})
	return tr, err
}

func (e *env) trackSale(t *testing.T, a commands.Actor, click conversion.Click, p conversion.Payload) (commands.Tracked, error) {
	t.Helper()
	tr, _, err := commands.TrackSaleHandler{Deps: e.deps, Clicks: theClick{click: click}}.Handle(context.Background(), commands.TrackSale{Actor: a, Payload: p})
	return tr, err
}

// stream returns the events of a stream, decoded.
func (e *env) stream(t *testing.T, name string) []domain.Event {
	t.Helper()
	recs, err := e.store.ReadStream(context.Background(), name, 0, 100000)
	if err != nil {
		if errors.Is(err, eventstore.ErrStreamNotFound) {
			return nil
		}
		t.Fatal(err)
	}
	out := make([]domain.Event, len(recs))
	for i, r := range recs {
		if out[i], err = domain.DecodeEvent(r.Type, r.Data); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// all returns every event of the log whose wire name is one of types.
func (e *env) all(t *testing.T, types ...string) []domain.Event {
	t.Helper()
	recs, err := e.store.ReadAll(context.Background(), eventstore.Start, 1000000)
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.Event
	for _, r := range recs {
		for _, typ := range types {
			if r.Type == typ {
				ev, err := domain.DecodeEvent(r.Type, r.Data)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, ev)
			}
		}
	}
	return out
}

func wireOf(t *testing.T, events ...domain.Event) string {
	t.Helper()
	s := ""
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		s += e.EventType() + " " + string(b) + "\n"
	}
	return s
}

func TestTrackLead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := lead(t, `{"trackingId": "clk-1", "customer": {"externalId": "user/42", "email": "ada@example.com"}, "metadata": {"plan": "pro"}}`)
	tr, err := e.trackLead(t, alice, e.click("clk-1"), p)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Recorded || !tr.First || tr.CustomerID == "" || tr.ConversionID == "" {
		t.Fatalf("%+v", tr)
	}
	stream := conversion.CustomerStream(e.ws, "user/42")
	want := []domain.Event{
		&conversion.CustomerCreated{CustomerID: tr.CustomerID, WorkspaceID: e.ws, ExternalID: "user/42",
			Profile: conversion.Profile{Email: "ada@example.com"}, At: t0},
		&conversion.LeadTracked{ConversionID: tr.ConversionID, EventName: "Sign up", Click: e.click("clk-1"), CustomerID: tr.CustomerID,
			CustomerExternalID: "user/42", First: true, Metadata: json.RawMessage(`{"plan":"pro"}`), Timestamp: t0},
	}
	if got := wireOf(t, e.stream(t, stream)...); got != wireOf(t, want...) {
		t.Fatalf("stream:\n%s\nwant:\n%s", got, wireOf(t, want...))
	}

	// A later lead of the same customer from another click: not first, and
	// its new non-empty values update the customer.
	e.setNow(t0.Add(time.Minute))
	p2 := lead(t, `{"trackingId": "clk-2", "customer": {"externalId": "user/42", "firstname": "Ada", "email": ""}, "eventName": "Trial"}`)
	tr2, err := e.trackLead(t, alice, e.click("clk-2"), p2)
	if err != nil {
		t.Fatal(err)
	}
	if !tr2.Recorded || tr2.First || tr2.CustomerID != tr.CustomerID || tr2.ConversionID == tr.ConversionID {
		t.Fatalf("%+v after %+v", tr2, tr)
	}
	got := e.stream(t, stream)[2:]
	want = []domain.Event{
		&conversion.CustomerUpdated{CustomerID: tr.CustomerID, WorkspaceID: e.ws, ExternalID: "user/42",
			Profile: conversion.Profile{Firstname: "Ada"}, At: t0.Add(time.Minute)},
		&conversion.LeadTracked{ConversionID: tr2.ConversionID, EventName: "Trial", Click: e.click("clk-2"), CustomerID: tr.CustomerID,
			CustomerExternalID: "user/42", Timestamp: t0.Add(time.Minute)},
	}
	if wireOf(t, got...) != wireOf(t, want...) {
		t.Fatalf("stream:\n%s\nwant:\n%s", wireOf(t, got...), wireOf(t, want...))
	}
	events := e.stream(t, stream)
	c, err := conversion.LoadCustomer(events)
	if err != nil {
		t.Fatal(err)
	}
	if c.LeadClick != e.click("clk-1") || c.Leads != 2 || c.Profile != (conversion.Profile{Email: "ada@example.com", Firstname: "Ada"}) {
		t.Errorf("customer %+v", c)
	}
}

func TestTrackSale(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := `{"trackingId": "clk-1", "customer": {"externalId": "user-42"}, "amount": 29.99, "currency": "usd"}`
	first, err := e.trackSale(t, alice, e.click("clk-1"), sale(t, body))
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.trackSale(t, alice, e.click("clk-1"), sale(t, `{"trackingId": "clk-1", "customer": {"externalId": "user-42"},
		"amount": 2999, "currency": "jpy", "eventName": "Renewal"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !first.First || !first.Recorded || second.First || !second.Recorded || first.CustomerID != second.CustomerID {
		t.Fatalf("%+v then %+v", first, second)
	}
	sales := e.all(t, conversion.EventSaleTracked)
	want := []domain.Event{
		&conversion.SaleTracked{ConversionID: first.ConversionID, EventName: "Purchase", Click: e.click("clk-1"), CustomerID: first.CustomerID,
			CustomerExternalID: "user-42", AmountMinor: 2999, Currency: "usd", First: true, Timestamp: t0},
		&conversion.SaleTracked{ConversionID: second.ConversionID, EventName: "Renewal", Click: e.click("clk-1"), CustomerID: first.CustomerID,
			CustomerExternalID: "user-42", AmountMinor: 2999, Currency: "jpy", Timestamp: t0},
	}
	if wireOf(t, sales...) != wireOf(t, want...) {
		t.Fatalf("sales:\n%s\nwant:\n%s", wireOf(t, sales...), wireOf(t, want...))
	}
	// A lead after the sales is still the customer's first lead.
	tr, err := e.trackLead(t, alice, e.click("clk-2"), lead(t, `{"trackingId": "clk-2", "customer": {"externalId": "user-42"}}`))
	if err != nil || !tr.First {
		t.Fatalf("%+v %v", tr, err)
	}
	if n := len(e.all(t, conversion.EventCustomerCreated)); n != 1 {
		t.Errorf("%d customers created", n)
	}
}

type noClicks struct{}

func (noClicks) ClickByTrackingID(context.Context, string) (conversion.Click, time.Time, error) {
	return conversion.Click{}, time.Time{}, domain.NotFound(conversion.MsgClickNotFound)
}

func TestTrackErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := lead(t, `{"trackingId": "clk-1", "customer": {"externalId": "user-42"}, "eventId": "evt-1"}`)
	cmd := commands.TrackLead{Actor: alice, Payload: p}
	_, _, err := commands.TrackLeadHandler{Deps: e.deps, Clicks: theClick{e.click("clk-1"), t0}}.Handle(context.Background(), cmd)
	checkErr(t, err, domain.KindNotFound, conversion.MsgClickNotFound)
	// still valid a second later
	if _, _, err := (commands.TrackLeadHandler{Deps: e.deps, Clicks: theClick{e.click("clk-1"), t0.Add(time.Second)}}).Handle(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
	// The resolver's refusal is the command's answer.
	_, _, err = commands.TrackLeadHandler{Deps: e.deps, Clicks: noClicks{}}.Handle(context.Background(), cmd)
	checkErr(t, err, domain.KindNotFound, conversion.MsgClickNotFound)

	_, err = e.trackLead(t, bob, e.click("clk-1"), lead(t, `{"trackingId": "clk-1", "customer": {"externalId": "user-43"}}`))
	checkErr(t, err, domain.KindForbidden, conversion.MsgClickNotYours)
	other := e.click("clk-9")
	other.WorkspaceID = "no-such-workspace"
	_, err = e.trackLead(t, alice, other, p)
	checkErr(t, err, domain.KindNotFound, conversion.MsgClickNotFound)
	_, err = e.trackLead(t, alice, conversion.Click{}, p)
	checkErr(t, err, domain.KindNotFound, conversion.MsgClickNotFound)
	_, err = e.trackSale(t, alice, e.click("clk-1"), conversion.Payload{TrackingID: "clk-1", AmountMinor: 1, Currency: "usd", EventID: "evt-3"})
	checkErr(t, err, domain.KindInvalid, conversion.MsgMissingExternalID)
	_, err = e.trackSale(t, alice, e.click("clk-1"), conversion.Payload{TrackingID: "clk-1", ExternalID: "user-44", Currency: "usd", EventID: "evt-4"})
	checkErr(t, err, domain.KindInvalid, conversion.MsgAmountPositive)
	_, err = e.trackSale(t, alice, e.click("clk-1"), conversion.Payload{TrackingID: "clk-1", ExternalID: "user-44", AmountMinor: 1, Currency: "USD", EventID: "evt-2"})
	checkErr(t, err, domain.KindInvalid, conversion.MsgCurrencyLowercase)

	// Refused calls recorded nothing, and reserved no eventId: only the
	// one valid lead is in the log.
	if n := len(e.all(t, conversion.EventLeadTracked, conversion.EventSaleTracked)); n != 1 {
		t.Errorf("%d conversions recorded", n)
	}
	if n := len(e.all(t, reservation.EventReserved)) - 2; n != 1 { // the workspace holds two names
		t.Errorf("%d eventIds reserved", n)
	}
}

func checkErr(t *testing.T, err error, kind domain.Kind, msg string) {
	t.Helper()
	if domain.KindOf(err) != kind {
		t.Fatalf("error %v (kind %d), want kind %d", err, domain.KindOf(err), kind)
	}
	if err.Error() != msg {
		t.Errorf("error %q, want %q", err.Error(), msg)
	}
}

func TestEventIDRecordsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := `{"trackingId": "clk-1", "customer": {"externalId": "user-42"}, "amount": 10, "currency": "eur", "eventId": "order-1"}`
	first, err := e.trackSale(t, alice, e.click("clk-1"), sale(t, body))
	if err != nil || !first.Recorded {
		t.Fatalf("%+v %v", first, err)
	}
	// Later, with another amount, another event name, even as a lead: the
	// eventId is taken in the workspace, forever.
	e.setNow(t0.Add(365 * 24 * time.Hour))
	again, err := e.trackSale(t, alice, e.click("clk-2"), sale(t, `{"trackingId": "clk-2", "customer": {"externalId": "user-42"},
		"amount": 99, "currency": "eur", "eventId": "order-1", "eventName": "Other"}`))
	if err != nil || again.Recorded || again.ConversionID != first.ConversionID || again.CustomerID != first.CustomerID {
		t.Fatalf("%+v %v after %+v", again, err, first)
	}
	asLead, err := e.trackLead(t, alice, e.click("clk-2"), lead(t, `{"trackingId": "clk-2", "customer": {"externalId": "user-42"}, "eventId": "order-1"}`))
	if err != nil || asLead.Recorded {
		t.Fatalf("%+v %v", asLead, err)
	}
	// A repeat naming another customer records nothing for either.
	otherCustomer, err := e.trackSale(t, alice, e.click("clk-1"), sale(t, `{"trackingId": "clk-1", "customer": {"externalId": "user-43"},
		"amount": 10, "currency": "eur", "eventId": "order-1"}`))
	if err != nil || otherCustomer.Recorded || otherCustomer.CustomerID != "" || otherCustomer.ConversionID != first.ConversionID {
		t.Fatalf("%+v %v", otherCustomer, err)
	}
	if got := e.stream(t, conversion.CustomerStream(e.ws, "user-43")); len(got) != 0 {
		t.Errorf("the other customer has %d events", len(got))
	}
	if n := len(e.all(t, conversion.EventLeadTracked, conversion.EventSaleTracked)); n != 1 {
		t.Fatalf("%d conversions recorded", n)
	}

	// The same eventId in another workspace is another event.
	w2, _, err := commands.CreateWorkspaceHandler{Deps: e.deps}.Handle(context.Background(), commands.CreateWorkspace{Actor: alice, Name: "Second"})
	if err != nil {
		t.Fatal(err)
	}
	click2 := e.click("clk-3")
	click2.WorkspaceID = w2.ID
	tr, err := e.trackSale(t, alice, click2, sale(t, body))
	if err != nil || !tr.Recorded || !tr.First || tr.CustomerID == first.CustomerID {
		t.Fatalf("%+v %v", tr, err)
	}
	// Without eventId nothing is deduplicated.
	for range 2 {
		tr, err := e.trackSale(t, alice, e.click("clk-1"), sale(t, `{"trackingId": "clk-1", "customer": {"externalId": "user-42"}, "amount": 10, "currency": "eur"}`))
		if err != nil || !tr.Recorded {
			t.Fatalf("%+v %v", tr, err)
		}
	}
	if n := len(e.all(t, conversion.EventSaleTracked)); n != 4 {
		t.Fatalf("%d sales recorded, want 4", n)
	}
}

// A crash between the eventId's reservation and the customer's append
// leaves the eventId held by a conversion that is nowhere: the next call
// with that eventId records it, under the first call's conversion id.
func TestEventIDCompletesAfterACrash(t *testing.T) {
	t.Parallel()
	for _, multi := range []bool{true, false} {
		t.Run(fmt.Sprintf("multi-stream appends %v", multi), func(t *testing.T) {
			t.Parallel()
			eventIDCompletesAfterACrash(t, newEnvWith(t, multi))
		})
	}
}

func eventIDCompletesAfterACrash(t *testing.T, e *env) {
	stream := conversion.CustomerStream(e.ws, "user-42")
	_, data, err := domain.EncodeEvent(&reservation.Reserved{Name: "order-1", Owner: "cnv-lost", Scope: stream, At: t0})
	if err != nil {
		t.Fatal(err)
	}
	key := reservation.Stream(reservation.KindConversionEvent, conversion.EventIDKey(e.ws, "order-1"))
	if _, err := e.store.Append(context.Background(), key, eventstore.NoStream(),
		eventstore.EventData{Type: reservation.EventReserved, Data: data}); err != nil {
		t.Fatal(err)
	}
	body := `{"trackingId": "clk-1", "customer": {"externalId": "user-42"}, "amount": 10, "currency": "eur", "eventId": "order-1"}`
	tr, err := e.trackSale(t, alice, e.click("clk-1"), sale(t, body))
	if err != nil || !tr.Recorded || !tr.First || tr.ConversionID != "cnv-lost" {
		t.Fatalf("%+v %v", tr, err)
	}
	again, err := e.trackSale(t, alice, e.click("clk-1"), sale(t, body))
	if err != nil || again.Recorded || again.ConversionID != "cnv-lost" {
		t.Fatalf("%+v %v", again, err)
	}
	if n := len(e.all(t, conversion.EventSaleTracked)); n != 1 {
		t.Fatalf("%d sales recorded", n)
	}
}

// Twenty identical requests at once record the sale exactly once, and all
// of them answer without error.
func TestConcurrentIdenticalRequests(t *testing.T) {
	t.Parallel()
	for _, x := range []struct {
		kind  string
		multi bool
	}{{"lead", true}, {"sale", true}, {"lead", false}, {"sale", false}} {
		kind := x.kind
		t.Run(fmt.Sprintf("%s multi-stream appends %v", kind, x.multi), func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, x.multi)
			body := `{"trackingId": "clk-1", "customer": {"externalId": "user-42", "email": "a@example.com"}, "amount": 29.99,
				"currency": "usd", "eventId": "order-7"}`
			const n = 20
			results := make([]commands.Tracked, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			leadBody, saleBody := lead(t, body), sale(t, body)
			for i := range n {
				wg.Go(func() {
					<-start
					if kind == "lead" {
						results[i], errs[i] = e.trackLead(t, alice, e.click("clk-1"), leadBody)
					} else {
						results[i], errs[i] = e.trackSale(t, alice, e.click("clk-1"), saleBody)
					}
				})
			}
			close(start)
			wg.Wait()
			recorded := 0
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				if results[i].ConversionID != results[0].ConversionID {
					t.Errorf("request %d: conversion %s, request 0: %s", i, results[i].ConversionID, results[0].ConversionID)
				}
				if results[i].Recorded {
					recorded++
				}
			}
			if recorded != 1 {
				t.Errorf("%d requests say they recorded it", recorded)
			}
			if got := len(e.all(t, conversion.EventLeadTracked, conversion.EventSaleTracked)); got != 1 {
				t.Errorf("%d conversions in the log", got)
			}
			if got := len(e.all(t, conversion.EventCustomerCreated, conversion.EventCustomerUpdated)); got != 1 {
				t.Errorf("%d customer events in the log", got)
			}
		})
	}
}

// Distinct sales of one customer at once: every one is recorded, exactly
// one is first, and the customer is created once.
func TestConcurrentSalesOfOneCustomer(t *testing.T) {
	t.Parallel()
	for _, x := range []struct{ existing, multi bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		existing := x.existing
		t.Run(fmt.Sprintf("existing customer %v multi-stream appends %v", existing, x.multi), func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, x.multi)
			if existing {
				if _, err := e.trackLead(t, alice, e.click("clk-0"), lead(t, `{"trackingId": "clk-0", "customer": {"externalId": "user-42"}}`)); err != nil {
					t.Fatal(err)
				}
			}
			const n = 20
			results := make([]commands.Tracked, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				eventID := ""
				if i%2 == 0 {
					eventID = fmt.Sprintf(`, "eventId": "order-%d"`, i)
				}
				body := sale(t, fmt.Sprintf(`{"trackingId": "clk-%d", "customer": {"externalId": "user-42"}, "amount": %d, "currency": "usd"%s}`, i, i+1, eventID))
				wg.Go(func() {
					<-start
					results[i], errs[i] = e.trackSale(t, alice, e.click(fmt.Sprintf("clk-%d", i)), body)
				})
			}
			close(start)
			wg.Wait()
			firsts := 0
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("sale %d: %v", i, errs[i])
				}
				if !results[i].Recorded {
					t.Errorf("sale %d not recorded", i)
				}
				if results[i].First {
					firsts++
				}
			}
			if firsts != 1 {
				t.Errorf("%d sales answered first", firsts)
			}
			sales := e.all(t, conversion.EventSaleTracked)
			inLog, amounts := 0, map[int64]bool{}
			for _, ev := range sales {
				s := ev.(*conversion.SaleTracked)
				amounts[s.AmountMinor] = true
				if s.First {
					inLog++
				}
			}
			if len(sales) != n || len(amounts) != n || inLog != 1 {
				t.Errorf("%d sales, %d distinct, %d first in the log", len(sales), len(amounts), inLog)
			}
			if !sales[0].(*conversion.SaleTracked).First {
				t.Errorf("the first sale in the stream is not the first")
			}
			if got := len(e.all(t, conversion.EventCustomerCreated)); got != 1 {
				t.Errorf("customer created %d times", got)
			}
		})
	}
}

// appendCounter counts the appends of each kind.
type appendCounter struct {
	*embedded.Store
	mu            sync.Mutex
	single, multi int
}

func (c *appendCounter) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	c.mu.Lock()
	c.single++
	c.mu.Unlock()
	return c.Store.Append(ctx, stream, expected, events...)
}

func (c *appendCounter) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	if len(parts) > 0 {
		c.mu.Lock()
		c.multi++
		c.mu.Unlock()
	}
	return c.Store.AppendMulti(ctx, parts...)
}

// On a store that appends to several streams at once, an eventId's
// reservation and the customer's events are one append, so that a crash
// keeps both or neither; a repeat writes nothing.
func TestEventIDReservedInTheConversionsAppend(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	counter := &appendCounter{Store: e.store}
	e.deps = &commands.Deps{Store: commands.WithHistories(counter, 64, []string{workspace.StreamPrefix}),
		Customers: commands.NewCustomerCache(64), DefaultPlan: "pro", Now: e.deps.Now}
	body := `{"trackingId": "clk-1", "customer": {"externalId": "user-42"}, "amount": 10, "currency": "eur", "eventId": "order-1"}`
	for i := range 2 {
		if tr, err := e.trackSale(t, alice, e.click("clk-1"), sale(t, body)); err != nil || tr.Recorded != (i == 0) {
			t.Fatalf("call %d: %+v %v", i, tr, err)
		}
		// The repeat tries the one append too, which finds the eventId
		// reserved and writes nothing.
		if counter.single != 0 || counter.multi != i+1 {
			t.Fatalf("after call %d: %d appends, %d multi-stream appends; want 0 and %d", i, counter.single, counter.multi, i+1)
		}
	}
	reserved := e.stream(t, reservation.Stream(reservation.KindConversionEvent, conversion.EventIDKey(e.ws, "order-1")))
	if len(reserved) != 1 || len(e.all(t, conversion.EventSaleTracked)) != 1 {
		t.Errorf("%d reservations, %d sales; want 1 and 1", len(reserved), len(e.all(t, conversion.EventSaleTracked)))
	}
}
