package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// Under concurrent appends the pipelined writer sends groups while the
// one before is on its way, and none of them assumes another's versions:
// appends that expect exact versions of their own streams and appends to
// a few hot streams all land, each answered with the version and the
// position its event has in the log, every stream without a gap, and a
// subscription sees every event once, in order.
func TestPipelinedGroupsKeepStreamsApart(t *testing.T) {
	s := openT(t, pgtest.DSN(t), Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const writers, each = 48, 40
	type answer struct {
		id     uuid.UUID
		stream string
		res    eventstore.AppendResult
	}
	answers := make([][]answer, writers)
	owns := make([]uint64, writers) // events in own-w
	// Rounds of concurrent appends until the writer has sent a group
	// while another was on its way (most rounds do; it depends on how the
	// appends arrive).
	rounds := 0
	for ; rounds < 50 && s.overlapped.Load() == 0; rounds++ {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				own := fmt.Sprintf("own-%d", w)
				for i := range each {
					stream, exp := own, eventstore.Exact(owns[w]-1)
					if owns[w] == 0 {
						exp = eventstore.NoStream()
					}
					if i%2 == 1 {
						stream, exp = fmt.Sprintf("hot-%d", i%3), eventstore.Any()
					}
					e := ev(i)
					res, err := s.Append(ctx, stream, exp, e)
					if err != nil {
						t.Errorf("%s: %v", stream, err)
						return
					}
					if stream == own {
						owns[w]++
					}
					answers[w] = append(answers[w], answer{e.ID, stream, res})
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
	if s.overlapped.Load() == 0 {
		t.Fatalf("in %d rounds no group was sent while another was on its way", rounds)
	}
	t.Logf("%d rounds, %d groups sent while another was on its way", rounds, s.overlapped.Load())
	total := rounds * writers * each

	all, err := s.ReadAll(ctx, eventstore.Start, total+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != total {
		t.Fatalf("%d events in the log, want %d", len(all), total)
	}
	byID := map[uuid.UUID]eventstore.RecordedEvent{}
	next := map[string]uint64{}
	for i, e := range all {
		if e.Position.Commit != uint64(i+1) {
			t.Fatalf("event %d at position %d", i, e.Position.Commit)
		}
		if e.Version != next[e.Stream] {
			t.Fatalf("%s: version %d after %d events", e.Stream, e.Version, next[e.Stream])
		}
		next[e.Stream]++
		byID[e.ID] = e
	}
	for _, as := range answers {
		for _, a := range as {
			e := byID[a.id]
			if e.Stream != a.stream || e.Version != a.res.NextExpectedVersion || e.Position != a.res.Position {
				t.Fatalf("answered %s@%d at %v; the log has %s@%d at %v",
					a.stream, a.res.NextExpectedVersion, a.res.Position, e.Stream, e.Version, e.Position)
			}
		}
	}

	sub, err := s.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := range all {
		e, err := sub.Recv(ctx)
		if err != nil {
			t.Fatalf("Recv %d: %v", i, err)
		}
		if e.ID != all[i].ID || e.Position != all[i].Position {
			t.Fatalf("subscription event %d: %s at %v, want %s at %v", i, e.ID, e.Position, all[i].ID, all[i].Position)
		}
	}
}

// The pipeline's context ends WriteTimeout after it opened: under appends
// that go on for several times that, the writer opens new ones in time,
// and no append fails with the context of an old one.
func TestPipelineOutlivesItsContext(t *testing.T) {
	const timeout = time.Second
	s := openT(t, pgtest.DSN(t), Options{WriteTimeout: timeout})
	ctx := t.Context()
	stop := time.Now().Add(3*timeout + timeout/2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for w := range 16 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				if _, err := s.Append(ctx, fmt.Sprintf("w-%d", w%4), eventstore.Any(), ev(i)); err != nil {
					t.Errorf("append after %v: %v", time.Until(stop), err)
					return
				}
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	all, err := s.ReadAll(ctx, eventstore.Start, n+1)
	if err != nil || len(all) != n {
		t.Fatalf("%d events in the log (%v), %d appended", len(all), err, n)
	}
	if s.overlapped.Load() == 0 {
		t.Error("no group was sent while another was on its way")
	}
}

// A group whose versions another process took meanwhile (a unique
// violation) goes again the serial way after the group sent behind it:
// both are answered with the log's versions and positions, and a
// subscription sees every event once, in order. With groups of one
// event, x and y queue while the writer waits for a group z that the
// append lock, held by the test, keeps waiting in PostgreSQL; then x is
// sent, and y behind it.
func TestPipelinedRetryAfterTheGroupBehind(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := openT(t, dsn, Options{MaxGroupEvents: 1}), openT(t, dsn, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, step := range []struct {
		s      *Store
		stream string
	}{{a, "x-1"}, {a, "y-1"}, {a, "z-1"}, {b, "x-1"}} { // a knows x-1 at 0; b takes 1
		if _, err := step.s.Append(ctx, step.stream, eventstore.Any(), ev(0)); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(context.Background())
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_lock($1)", appendLock); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res eventstore.AppendResult
		err error
	}
	appendAsync := func(stream string) chan answer {
		c := make(chan answer, 1)
		go func() {
			r, err := a.Append(ctx, stream, eventstore.Any(), ev(1))
			c <- answer{r, err}
		}()
		return c
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatal(what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	z := appendAsync("z-1")
	until("z never waited for the append lock", func() bool {
		var waiting int
		if err := lock.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		return waiting > 0
	})
	x := appendAsync("x-1")
	until("x never queued", func() bool { return len(a.queue) == 1 || a.overlapped.Load() > 0 })
	y := appendAsync("y-1")
	until("y never queued", func() bool { return len(a.queue) >= 1 })
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_unlock($1)", appendLock); err != nil {
		t.Fatal(err)
	}
	az, ax, ay := <-z, <-x, <-y
	if az.err != nil || ax.err != nil || ay.err != nil {
		t.Fatalf("z: %v, x: %v, y: %v", az.err, ax.err, ay.err)
	}
	if a.overlapped.Load() == 0 {
		t.Fatal("no group was sent behind another")
	}
	// y commits before x, which met b's append and went again after it.
	if ay.res.NextExpectedVersion != 1 || ay.res.Position.Commit != 6 || ax.res.NextExpectedVersion != 2 || ax.res.Position.Commit != 7 {
		t.Fatalf("y answered %+v, x %+v; want y-1@1 at 6, x-1@2 at 7", ay.res, ax.res)
	}
	sub, err := a.SubscribeAll(ctx, eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	want := []string{"x-1@0", "y-1@0", "z-1@0", "x-1@1", "z-1@1", "y-1@1", "x-1@2"}
	for i, w := range want {
		e, err := sub.Recv(ctx)
		if err != nil {
			t.Fatalf("Recv %d: %v", i, err)
		}
		if got := fmt.Sprintf("%s@%d", e.Stream, e.Version); got != w || e.Position.Commit != uint64(i+1) {
			t.Fatalf("event %d: %s at %d, want %s at %d", i, got, e.Position.Commit, w, i+1)
		}
	}
}
