// Package statstest is the contract suite of the statistics read model: the
// daily link and workspace records (queries.DailyStats, spec 2.7) that the
// embedded analytics projection (projections/analytics) and the ClickHouse
// projection (projections/clickhouse/stats) both serve. Every store's tests run
// it with a factory that opens an empty store:
//
//	func TestStatsContract(t *testing.T) {
//		statstest.Run(t, func(t *testing.T) statstest.Store { return open(t) })
//	}
//
// The suite feeds ClickRecorded events, encoded by domain/click as the
// application writes them, in the streams it writes them to
// ("clicks-<link id>"), and compares whole daily records with values written
// out by hand in fixture.go: nothing it expects is computed by code under
// test. Both stores therefore give the same answers for the same events.
//
// Model is a third implementation, in memory, that counts every click the
// plainest way; the suite runs on it too (model_test.go). Store-specific
// tests (recovery, crashes, pending aggregates) compare a store with a Model
// fed the same events, where writing every expected record by hand is not
// practical.
package statstest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/queries"
)

// Reader is the read side of the statistics read model, with the method
// names and result type the statistics queries use.
type Reader interface {
	// LinkDaily returns the days of [from, to] (UTC dates, inclusive) on
	// which the link was clicked, in date order.
	LinkDaily(ctx context.Context, linkID string, from, to time.Time) ([]queries.DailyStats, error)
	// WorkspaceDaily is the same over every link of a workspace.
	WorkspaceDaily(ctx context.Context, workspaceID string, from, to time.Time) ([]queries.DailyStats, error)
	// LinkClicked reports whether the link was ever clicked.
	LinkClicked(ctx context.Context, linkID string) (bool, error)
}

// Store is a statistics store under test: the projector that fills it
// (projections.Projector's Apply, Checkpoint and Reset) and its reads. A
// store that buffers implements projections.Flusher as well: the suite
// calls Flush before it reads (reads must show what Apply applied without
// it too; the suite flushes to test what was applied, not when it shows).
type Store interface {
	Apply(ctx context.Context, events []projections.Event) error
	Checkpoint(ctx context.Context) (eventstore.Position, error)
	Reset(ctx context.Context) error
	Reader
}

// opTimeout bounds each test's operations together.
const opTimeout = 2 * time.Minute

// Run runs the contract suite. open returns an empty store for one test
// and closes it when that test ends (t.Cleanup). The tests run in
// parallel, each on a store of its own.
func Run(t *testing.T, open func(t *testing.T) Store) {
	if open == nil {
		t.Fatal("statstest: open is nil")
	}
	tests := []struct {
		name string
		run  func(*testing.T, *env)
		// subStores: the test's subtests open a store each (e.open), the
		// test itself none.
		subStores bool
	}{
		{"DailyRecords", testDailyRecords, false},
		{"DateRanges", testDateRanges, false},
		{"UnknownIDs", testUnknownIDs, false},
		{"LinkClicked", testLinkClicked, false},
		{"CaseOfBrowserAndOS", testCaseOfBrowserAndOS, false},
		{"BreakdownValues", testBreakdownValues, false},
		{"ClickWithoutTimestamp", testClickWithoutTimestamp, false},
		{"LinkMoved", testLinkMoved, true},
		{"Deliveries", testDeliveries, true},
		{"OtherEventsIgnored", testOtherEventsIgnored, false},
		{"Reset", testReset, false},
		{"UniqueVisitorsExact", testUniqueVisitorsExact, false},
		{"UniqueVisitorsMany", testUniqueVisitorsMany, false},
		{"Conversions", testConversions, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
			t.Cleanup(cancel)
			e := &env{t: t, ctx: ctx, openStore: open}
			if !tc.subStores {
				e.open()
			}
			tc.run(t, e)
		})
	}
}

// env is one test's store.
type env struct {
	t         *testing.T
	s         Store
	ctx       context.Context
	openStore func(t *testing.T) Store
}

// open opens an empty store for e.t.
func (e *env) open() {
	e.t.Helper()
	e.s = e.openStore(e.t)
	if e.s == nil {
		e.t.Fatal("statstest: open returned nil")
	}
}

// sub is e for a subtest, on the same store.
func (e *env) sub(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// apply applies the batches in order, then makes them visible.
func (e *env) apply(batches ...[]eventstore.RecordedEvent) {
	e.t.Helper()
	for i, b := range batches {
		if err := e.s.Apply(e.ctx, projections.Envelopes(b)); err != nil {
			e.t.Fatalf("Apply (batch %d of %d, %d events): %v", i+1, len(batches), len(b), err)
		}
	}
	e.flush()
}

func (e *env) flush() {
	e.t.Helper()
	if f, ok := e.s.(projections.Flusher); ok {
		if err := f.Flush(e.ctx); err != nil {
			e.t.Fatalf("Flush: %v", err)
		}
	}
}

func (e *env) checkpoint(want eventstore.Position) {
	e.t.Helper()
	got, err := e.s.Checkpoint(e.ctx)
	if err != nil {
		e.t.Fatalf("Checkpoint: %v", err)
	}
	if got != want {
		e.t.Errorf("Checkpoint = %v, want %v", got, want)
	}
}

func (e *env) linkDaily(id string, from, to time.Time) []queries.DailyStats {
	e.t.Helper()
	got, err := e.s.LinkDaily(e.ctx, id, from, to)
	if err != nil {
		e.t.Fatalf("LinkDaily(%q, %v, %v): %v", id, from, to, err)
	}
	return got
}

func (e *env) workspaceDaily(id string, from, to time.Time) []queries.DailyStats {
	e.t.Helper()
	got, err := e.s.WorkspaceDaily(e.ctx, id, from, to)
	if err != nil {
		e.t.Fatalf("WorkspaceDaily(%q, %v, %v): %v", id, from, to, err)
	}
	return got
}

func (e *env) linkClicked(id string) bool {
	e.t.Helper()
	got, err := e.s.LinkClicked(e.ctx, id)
	if err != nil {
		e.t.Fatalf("LinkClicked(%q): %v", id, err)
	}
	return got
}

// checkRecords fails unless the store holds exactly want: the records of
// every link and workspace named in want over the whole range, and
// LinkClicked true for exactly those links.
func (e *env) checkRecords(want records) {
	e.t.Helper()
	for _, id := range slices.Sorted(maps.Keys(want.links)) {
		if d := Diff(e.linkDaily(id, allFrom, allTo), want.links[id]); d != "" {
			e.t.Errorf("LinkDaily(%q): %s", id, d)
		}
		if clicked := len(want.links[id]) > 0; e.linkClicked(id) != clicked {
			e.t.Errorf("LinkClicked(%q) = %v, want %v", id, !clicked, clicked)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want.workspaces)) {
		if d := Diff(e.workspaceDaily(id, allFrom, allTo), want.workspaces[id]); d != "" {
			e.t.Errorf("WorkspaceDaily(%q): %s", id, d)
		}
	}
}

// records are the daily records a store should hold, by link and by
// workspace.
type records struct {
	links, workspaces map[string][]queries.DailyStats
}

// Diff describes how the daily records got differ from want, field by
// field, or returns "" when they are the same. Times are compared as
// instants and must be in UTC; a nil breakdown map is the same as an empty
// one.
func Diff(got, want []queries.DailyStats) string {
	var b strings.Builder
	n := max(len(got), len(want))
	for i := range n {
		switch {
		case i >= len(got):
			fmt.Fprintf(&b, "\n  missing record %s", want[i].Date)
		case i >= len(want):
			fmt.Fprintf(&b, "\n  extra record %s: %+v", got[i].Date, got[i])
		default:
			for _, d := range diffRecord(got[i], want[i]) {
				fmt.Fprintf(&b, "\n  [%d] %s: %s", i, want[i].Date, d)
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return fmt.Sprintf("%d records, want %d:%s", len(got), len(want), b.String())
}

var (
	timeType = reflect.TypeFor[time.Time]()
	mapType  = reflect.TypeFor[map[string]int64]()
)

// diffRecord lists the fields in which got differs from want.
func diffRecord(got, want queries.DailyStats) []string {
	var out []string
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range g.NumField() {
		name := g.Type().Field(i).Name
		gf, wf := g.Field(i), w.Field(i)
		switch gf.Type() {
		case timeType:
			gt, wt := gf.Interface().(time.Time), wf.Interface().(time.Time)
			switch {
			case !gt.Equal(wt):
				out = append(out, fmt.Sprintf("%s %s, want %s", name, gt.Format(time.RFC3339Nano), wt.Format(time.RFC3339Nano)))
			case gt.Location() != time.UTC:
				out = append(out, fmt.Sprintf("%s %v is not in UTC", name, gt))
			}
		case mapType:
			gm, wm := gf.Interface().(map[string]int64), wf.Interface().(map[string]int64)
			if !maps.Equal(gm, wm) {
				out = append(out, fmt.Sprintf("%s %v, want %v", name, gm, wm))
			}
		default:
			if !reflect.DeepEqual(gf.Interface(), wf.Interface()) {
				out = append(out, fmt.Sprintf("%s %#v, want %#v", name, gf.Interface(), wf.Interface()))
			}
		}
	}
	return out
}
