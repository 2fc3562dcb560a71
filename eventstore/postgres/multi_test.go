package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

func part(stream string, exp eventstore.ExpectedVersion, n int) eventstore.StreamAppend {
	evs := make([]eventstore.EventData, n)
	for i := range evs {
		evs[i] = ev(i)
	}
	return eventstore.StreamAppend{Stream: stream, Expected: exp, Events: evs}
}

// AppendMulti writes its parts in one transaction: all, in order, or none
// when one part fails its expected version (the error names that stream).
func TestAppendMulti(t *testing.T) {
	s := openT(t, pgtest.DSN(t), Options{})
	ctx := t.Context()
	if _, err := s.Append(ctx, "a-1", eventstore.NoStream(), ev(0)); err != nil {
		t.Fatal(err)
	}
	res, err := s.AppendMulti(ctx, part("a-1", eventstore.Exact(0), 2), part("b-1", eventstore.NoStream(), 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].NextExpectedVersion != 2 || res[1].NextExpectedVersion != 0 || !res[0].Position.Less(res[1].Position) {
		t.Fatalf("results %+v", res)
	}
	_, err = s.AppendMulti(ctx, part("c-1", eventstore.NoStream(), 1), part("a-1", eventstore.NoStream(), 1))
	if !errors.Is(err, eventstore.ErrWrongExpectedVersion) || !strings.Contains(err.Error(), `"a-1"`) {
		t.Fatalf("err %v, want a wrong version of a-1", err)
	}
	if _, ok, _ := s.StreamVersion(ctx, "c-1"); ok {
		t.Fatal("c-1 was written by a failed append")
	}
	for _, bad := range [][]eventstore.StreamAppend{
		{part("d-1", eventstore.Any(), 1), part("d-1", eventstore.Any(), 1)},
		{part("d-1", eventstore.Any(), 1), part("e-1", eventstore.Any(), 0)},
		{part("$d-1", eventstore.Any(), 1)},
	} {
		if _, err := s.AppendMulti(ctx, bad...); !errors.Is(err, eventstore.ErrInvalidEvent) {
			t.Errorf("%d parts: err %v, want ErrInvalidEvent", len(bad), err)
		}
	}
	all, err := s.ReadAll(ctx, eventstore.Start, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a-1@0", "a-1@1", "a-1@2", "b-1@0"}
	if len(all) != len(want) {
		t.Fatalf("%d events, want %d", len(all), len(want))
	}
	for i, e := range all {
		if got := fmt.Sprintf("%s@%d", e.Stream, e.Version); got != want[i] {
			t.Errorf("event %d is %s, want %s", i, got, want[i])
		}
	}
}

// Concurrent multi-stream appends to a shared stream, grouped into common
// transactions by the writer: each is whole and adjacent in the log.
func TestAppendMultiConcurrent(t *testing.T) {
	s := openT(t, pgtest.DSN(t), Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if _, err := s.AppendMulti(ctx, part(fmt.Sprintf("own-%d", i), eventstore.NoStream(), 1), part("shared-1", eventstore.Any(), 2)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	all, err := s.ReadAll(ctx, eventstore.Start, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 120 {
		t.Fatalf("%d events, want 120", len(all))
	}
	for i := 0; i < len(all); i += 3 {
		if !strings.HasPrefix(all[i].Stream, "own-") || all[i+1].Stream != "shared-1" || all[i+2].Stream != "shared-1" || all[i+2].Version != all[i+1].Version+1 {
			t.Fatalf("events %d-%d: %s@%d %s@%d %s@%d", i, i+2, all[i].Stream, all[i].Version, all[i+1].Stream, all[i+1].Version, all[i+2].Stream, all[i+2].Version)
		}
	}
}

// A grouped transaction in which one append fails its expected version
// still commits the others.
func TestGroupedAppendsFailAlone(t *testing.T) {
	s := openT(t, pgtest.DSN(t), Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = s.Append(ctx, "race-1", eventstore.NoStream(), ev(i))
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, eventstore.ErrWrongExpectedVersion):
			t.Fatalf("Append: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d appends with NoStream won, want 1", won)
	}
	if v, ok, err := s.StreamVersion(ctx, "race-1"); err != nil || !ok || v != 0 {
		t.Fatalf("StreamVersion = %d, %v, %v", v, ok, err)
	}
}

// Two stores (two instances of a deployment) append to the same streams
// expecting any version, in groups of several appends and parts: the
// database numbers each stream's events without a hole, and each result
// names the version its last event was given.
func TestStoresAppendAnyToSharedStreams(t *testing.T) {
	dsn := pgtest.DSN(t)
	stores := []*Store{openT(t, dsn, Options{}), openT(t, dsn, Options{})}
	ctx := context.Background()
	type got struct {
		stream string
		last   uint64
		pos    eventstore.Position
	}
	var mu sync.Mutex
	var results []got
	var wg sync.WaitGroup
	for i := range 200 {
		s := stores[i%2]
		wg.Go(func() {
			a, b := fmt.Sprintf("click-%d", i%3), fmt.Sprintf("click-%d", 3+i%2)
			var res []eventstore.AppendResult
			var err error
			if i%4 == 0 {
				res, err = s.AppendMulti(ctx, part(a, eventstore.Any(), 2), part(b, eventstore.Any(), 1))
			} else {
				var r eventstore.AppendResult
				r, err = s.Append(ctx, a, eventstore.Any(), ev(i))
				res = []eventstore.AppendResult{r}
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			results = append(results, got{a, res[0].NextExpectedVersion, res[0].Position})
			if len(res) > 1 {
				results = append(results, got{b, res[1].NextExpectedVersion, res[1].Position})
			}
		})
	}
	wg.Wait()
	all, err := stores[0].ReadAll(ctx, eventstore.Start, 1000)
	if err != nil {
		t.Fatal(err)
	}
	at := map[eventstore.Position]eventstore.RecordedEvent{}
	next := map[string]uint64{}
	for _, e := range all {
		if e.Version != next[e.Stream] {
			t.Fatalf("%s@%d follows %d events of its stream", e.Stream, e.Version, next[e.Stream])
		}
		next[e.Stream]++
		at[e.Position] = e
	}
	for _, r := range results {
		e, ok := at[r.pos]
		if !ok || e.Stream != r.stream || e.Version != r.last {
			t.Fatalf("result %s@%d at %v; the log has %s@%d there", r.stream, r.last, r.pos, e.Stream, e.Version)
		}
	}
	if len(all) != 50*3+150 {
		t.Fatalf("%d events, want %d", len(all), 50*3+150)
	}
}

// A store that appends at the versions it knows until another process
// appends to the same stream: that insert fails, the group goes again with
// the versions given by the database, and for a while every such group
// does (sharing), rather than meet the other process again.
func TestStaleKnownVersionsSwitchToDatabaseVersions(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := openT(t, dsn, Options{}), openT(t, dsn, Options{})
	ctx := context.Background()
	for _, s := range []*Store{a, b, a} {
		if _, err := s.Append(ctx, "click-x", eventstore.Any(), ev(0)); err != nil {
			t.Fatal(err)
		}
	}
	// a knew version 0 and met b's append at 1; b never met another's.
	if !a.sharing() || b.sharing() {
		t.Fatalf("sharing: a %v, b %v; want a only", a.sharing(), b.sharing())
	}
	r, err := a.Append(ctx, "click-x", eventstore.Any(), ev(1))
	if err != nil || r.NextExpectedVersion != 3 {
		t.Fatalf("append while sharing: %+v %v", r, err)
	}
}
