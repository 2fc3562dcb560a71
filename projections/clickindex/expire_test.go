package clickindex

import (
	"context"
	"fmt"
	"github.com/linkd/linkd/projections"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
)

// idKinds are tracking ids of every storage path, for a click at ts; n
// keeps the ids of different calls apart.
func idKinds(ts time.Time, n uint64) map[string]string {
	return map[string]string{
		"UUIDv7 made with the click":         v7At(ts, n),
		"UUIDv7 made Slack before the click": v7At(ts.Add(-Slack), n),
		"UUIDv7 made Slack after the click":  v7At(ts.Add(Slack), n),
		"UUIDv7 made two days before":        v7At(ts.Add(-48*time.Hour), n),
		"UUIDv7 made two days after":         v7At(ts.Add(48*time.Hour), n),
		"plain string":                       fmt.Sprintf("tid_%d", n),
		"UUIDv4":                             fmt.Sprintf("5b0e7b0a-8c1f-4c3e-9a51-%012x", n),
	}
}

// TestExpiryAt90Days: a tracking id is found until 90 days after its click
// (or its own tracking_expires_at) and not from that instant on, whatever
// its kind; Click alone deletes nothing (moving the clock back finds it
// again).
func TestExpiryAt90Days(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock(t0)
	s := openTest(t, t.TempDir(), Options{Now: clk.Now})
	ts := t0.Add(123456789 * time.Nanosecond) // not on a millisecond
	f := newFeed()
	expiry := map[string]time.Time{}
	for n, ttl := range []time.Duration{90 * 24 * time.Hour, 7 * 24 * time.Hour} {
		for _, id := range idKinds(ts, uint64(n)) {
			c := tracked(id, lnk1, ws1, ts)
			exp := ts.Add(ttl)
			c.TrackingExpiresAt = &exp
			f.add(c)
			expiry[id] = exp
		}
	}
	if err := s.Apply(ctx, projections.Envelopes(f.events)); err != nil {
		t.Fatal(err)
	}
	for id, exp := range expiry {
		for _, tc := range []struct {
			now  time.Time
			want bool
		}{
			{ts, true},
			{exp.Add(-time.Nanosecond), true},
			{exp, false},
			{exp.Add(time.Nanosecond), false},
			{exp.AddDate(1, 0, 0), false},
			{exp.Add(-time.Nanosecond), true}, // back: still there
		} {
			clk.Set(tc.now)
			got, ok, err := s.Click(ctx, id)
			if err != nil || ok != tc.want {
				t.Errorf("%s at expiry%+v: found %v (%v), want %v", id, tc.now.Sub(exp), ok, err, tc.want)
			}
			if ok && !got.ExpiresAt.Equal(exp) {
				t.Errorf("%s: ExpiresAt %v, want %v", id, got.ExpiresAt, exp)
			}
		}
	}
	if d := click.TrackingTTL; d != 90*24*time.Hour {
		t.Errorf("TrackingTTL is %v", d)
	}
}

// storedKeys counts the keys of records and of the expiry index.
func storedKeys(t testing.TB, s *Store) int {
	return countKeys(t, s, tagV7) + countKeys(t, s, tagID) + countKeys(t, s, tagExpiry)
}

// TestExpireDeletes: Expire deletes what has expired, from every key
// space, and nothing else.
func TestExpireDeletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock(t0)
	s := openTest(t, t.TempDir(), Options{Now: clk.Now})
	f := newFeed()
	later := t0.AddDate(0, 0, 10)
	var old, young []string
	for _, id := range idKinds(t0, 1) {
		f.add(tracked(id, lnk1, ws1, t0))
		old = append(old, id)
	}
	for _, id := range idKinds(later, 2) {
		f.add(tracked(id, lnk2, ws2, later))
		young = append(young, id)
	}
	if err := s.Apply(ctx, projections.Envelopes(f.events)); err != nil {
		t.Fatal(err)
	}
	all := storedKeys(t, s)

	// Nothing has expired: nothing goes.
	clk.Set(t0.Add(click.TrackingTTL - time.Nanosecond))
	if _, err := s.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	if got := storedKeys(t, s); got != all {
		t.Fatalf("Expire before expiry deleted %d keys", all-got)
	}
	// The old ones have expired, and are deleted within 2 x Slack (UUIDv7)
	// or a day (others); the young ones stay.
	clk.Set(t0.Add(click.TrackingTTL + 24*time.Hour + 2*Slack + time.Millisecond))
	n, err := s.Expire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 { // plain, UUIDv4, two days before, two days after
		t.Errorf("Expire deleted %d indexed ids, want 4", n)
	}
	clk.Set(t0) // Click no longer hides them: they are gone
	for _, id := range old {
		if _, ok, _ := s.Click(ctx, id); ok {
			t.Errorf("%s was not deleted", id)
		}
	}
	for _, id := range young {
		if _, ok, _ := s.Click(ctx, id); !ok {
			t.Errorf("%s was deleted", id)
		}
	}
	if got := storedKeys(t, s); got != all/2 {
		t.Errorf("%d keys left, want %d", got, all/2)
	}
	// Again, later: everything goes, and Expire on an empty index is a
	// no-op.
	clk.Set(later.Add(click.TrackingTTL + 24*time.Hour + 2*Slack + time.Millisecond))
	for range 2 {
		if _, err := s.Expire(ctx); err != nil {
			t.Fatal(err)
		}
		if got := storedKeys(t, s); got != 0 {
			t.Errorf("%d keys left", got)
		}
	}
	// The dedup state and the checkpoint are not touched.
	if _, ok, _ := s.AppliedVersion(ctx, click.Stream(lnk1)); !ok {
		t.Error("stream versions deleted")
	}
	if cp, _ := s.Checkpoint(ctx); cp != f.events[len(f.events)-1].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
}

// TestExpireNeverEarly: live traffic over 120 days, with ids of every kind
// (UUIDv7 times anywhere within and beyond Slack of their click), the clock
// moving in uneven steps and Expire after each: an id that has not expired
// is always found; in the end everything is deleted.
func TestExpireNeverEarly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	clk := newClock(t0)
	s := openTest(t, t.TempDir(), Options{Now: clk.Now})
	const n = 4000
	type item struct {
		id      string
		ts, exp time.Time
	}
	items := make([]item, n)
	span := 120 * 24 * time.Hour
	for i := range items {
		ts := t0.Add(time.Duration(rng.Int64N(int64(span)))).Add(time.Duration(rng.IntN(1e6)))
		var id string
		switch k := rng.IntN(10); {
		case k < 5: // within Slack, edges included
			off := []time.Duration{-Slack, Slack, 0}[rng.IntN(3)]
			if rng.IntN(2) == 0 {
				off = time.Duration(rng.Int64N(int64(2*Slack))) - Slack
			}
			id = v7At(ts.Add(off), uint64(i))
		case k < 8: // beyond Slack
			off := Slack + time.Millisecond + time.Duration(rng.Int64N(int64(10*24*time.Hour)))
			if rng.IntN(2) == 0 {
				off = -off
			}
			id = v7At(ts.Add(off), uint64(i))
		default:
			id = fmt.Sprintf("tid-%d", i)
		}
		exp := ts.Add(click.TrackingTTL)
		if rng.IntN(5) == 0 {
			exp = ts.Add(time.Duration(rng.Int64N(int64(click.TrackingTTL))))
		}
		items[i] = item{id, ts, exp}
	}
	// Applied in time order of the clicks, as live traffic comes.
	order := rng.Perm(n)
	slices.SortFunc(order, func(a, b int) int { return items[a].ts.Compare(items[b].ts) })
	f := newFeed()
	next := 0
	now := t0
	end := t0.Add(span + click.TrackingTTL + 24*time.Hour + 2*Slack + time.Millisecond)
	for now.Before(end) {
		now = now.Add(time.Duration(rng.Int64N(int64(40 * time.Hour))))
		if now.After(end) {
			now = end
		}
		clk.Set(now)
		first := len(f.events)
		for ; next < n && !items[order[next]].ts.After(now); next++ {
			it := items[order[next]]
			c := tracked(it.id, fmt.Sprintf("link-%d", next%13), ws1, it.ts)
			c.TrackingExpiresAt = &it.exp
			f.add(c)
		}
		if err := s.Apply(ctx, projections.Envelopes(f.events[first:])); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Expire(ctx); err != nil {
			t.Fatal(err)
		}
		for _, i := range order[:next] {
			it := items[i]
			_, ok, err := s.Click(ctx, it.id)
			if err != nil {
				t.Fatal(err)
			}
			if want := now.Before(it.exp); ok != want {
				t.Fatalf("at %v: %s (click %v, expiry %v) found %v, want %v", now, it.id, it.ts, it.exp, ok, want)
			}
		}
	}
	if next != n {
		t.Fatalf("applied %d of %d", next, n)
	}
	if got := storedKeys(t, s); got != 0 {
		t.Errorf("%d keys left after everything expired", got)
	}
}

// Clicks that have expired when they are applied (a replay of old
// history) are not written; their versions and the checkpoint are.
func TestApplySkipsExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock(t0.Add(click.TrackingTTL))
	s := openTest(t, t.TempDir(), Options{Now: clk.Now})
	f := newFeed()
	f.add(tracked(v7At(t0, 1), lnk1, ws1, t0))                                   // expires now
	f.add(tracked("tid-1", lnk1, ws1, t0))                                       // too
	f.add(tracked(v7At(t0.Add(time.Second), 2), lnk1, ws1, t0.Add(time.Second))) // a second left
	if err := s.Apply(ctx, projections.Envelopes(f.events)); err != nil {
		t.Fatal(err)
	}
	if got := storedKeys(t, s); got != 1 {
		t.Errorf("%d keys stored, want 1", got)
	}
	if v, _, _ := s.AppliedVersion(ctx, click.Stream(lnk1)); v != 2 {
		t.Errorf("AppliedVersion = %d", v)
	}
	if cp, _ := s.Checkpoint(ctx); cp != f.events[2].Position {
		t.Errorf("Checkpoint = %v", cp)
	}
}

// The background expiry deletes without being called.
func TestExpireLoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := newClock(t0)
	s := openTest(t, t.TempDir(), Options{Now: clk.Now, ExpireEvery: time.Second})
	f := newFeed()
	f.add(tracked(v7At(t0, 1), lnk1, ws1, t0))
	f.add(tracked("tid-1", lnk1, ws1, t0))
	if err := s.Apply(ctx, projections.Envelopes(f.events)); err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.AddDate(1, 0, 0))
	deadline := time.Now().Add(20 * time.Second)
	for storedKeys(t, s) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d keys left after 20 s", storedKeys(t, s))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
