package ratelimit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestBurstThenRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		limit int
		per   time.Duration
	}{
		{name: "resource limit", limit: PerResource, per: Window},
		{name: "domain limit", limit: PerDomain, per: Window},
		{name: "one per minute", limit: 1, per: time.Minute},
		{name: "period not divisible by limit", limit: 7, per: time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := New()
			e := tc.per / time.Duration(tc.limit)
			for i := 0; i < tc.limit; i++ {
				d := l.Allow("k", tc.limit, tc.per, t0)
				if !d.Allowed || d.Limit != tc.limit || d.Remaining != tc.limit-1-i || d.RetryAfter != 0 {
					t.Fatalf("request %d: %+v, want allowed with %d remaining", i+1, d, tc.limit-1-i)
				}
				if wantReset := t0.Add(time.Duration(i+1) * e); !d.Reset.Equal(wantReset) {
					t.Fatalf("request %d: reset %v, want %v", i+1, d.Reset, wantReset)
				}
			}
			for i := 0; i < 3; i++ {
				d := l.Allow("k", tc.limit, tc.per, t0)
				if d.Allowed || d.Remaining != 0 || d.Limit != tc.limit {
					t.Fatalf("request %d over the limit: %+v, want refused", tc.limit+1+i, d)
				}
				// One request comes back after one emission interval.
				if d.RetryAfter != e {
					t.Errorf("RetryAfter = %v, want %v", d.RetryAfter, e)
				}
				if !d.Reset.After(t0) || d.Reset.After(t0.Add(tc.per)) {
					t.Errorf("Reset = %v, want within (%v, %v]", d.Reset, t0, t0.Add(tc.per))
				}
			}
		})
	}
}

func TestRefill(t *testing.T) {
	t.Parallel()
	const limit = 500
	e := Window / limit // 7.2 s
	cases := []struct {
		name        string
		after       time.Duration // after a full burst at t0
		wantAllowed int           // of limit+1 requests at that time
	}{
		{name: "just before one interval", after: e - time.Nanosecond, wantAllowed: 0},
		{name: "one interval", after: e, wantAllowed: 1},
		{name: "ten intervals", after: 10 * e, wantAllowed: 10},
		{name: "half the window", after: Window / 2, wantAllowed: limit / 2},
		{name: "whole window: a new burst", after: Window, wantAllowed: limit},
		{name: "long idle", after: 30 * 24 * time.Hour, wantAllowed: limit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := New()
			for i := 0; i < limit; i++ {
				l.Allow("link:1", limit, Window, t0)
			}
			now := t0.Add(tc.after)
			allowed := 0
			for i := 0; i <= limit; i++ {
				if l.Allow("link:1", limit, Window, now).Allowed {
					allowed++
				}
			}
			if allowed != tc.wantAllowed {
				t.Errorf("allowed %d after %v, want %d", allowed, tc.after, tc.wantAllowed)
			}
		})
	}
}

func TestKeysAreIndependent(t *testing.T) {
	t.Parallel()
	l := New()
	for i := 0; i < PerDomain; i++ {
		l.Allow("domains:w1", PerDomain, Window, t0)
	}
	if l.Allow("domains:w1", PerDomain, Window, t0).Allowed {
		t.Fatal("w1 allowed past its limit")
	}
	d := l.Allow("domains:w2", PerDomain, Window, t0)
	if !d.Allowed || d.Remaining != PerDomain-1 {
		t.Errorf("w2 = %+v, want a fresh quota", d)
	}
}

func TestInvalidLimits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		limit int
		per   time.Duration
	}{
		{"zero limit", 0, time.Hour},
		{"negative limit", -3, time.Hour},
		{"zero period", 10, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := New().Allow("k", tc.limit, tc.per, t0)
			if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 {
				t.Errorf("got %+v, want refused", d)
			}
		})
	}
}

func TestSetHeaders(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	cases := []struct {
		name           string
		d              Decision
		wantReset      string
		wantRetryAfter string // "" means absent
	}{
		{name: "allowed, reset on a second", d: Decision{Allowed: true, Limit: 500, Remaining: 499, Reset: now.Add(7200 * time.Millisecond).Truncate(time.Second)},
			wantReset: "1700000007"},
		{name: "allowed, reset rounded up", d: Decision{Allowed: true, Limit: 500, Remaining: 499, Reset: now.Add(7200 * time.Millisecond)},
			wantReset: "1700000008"},
		{name: "refused, retry rounded up", d: Decision{Limit: 100, Reset: now.Add(time.Hour), RetryAfter: 35*time.Second + time.Millisecond},
			wantReset: "1700003600", wantRetryAfter: "36"},
		{name: "refused, retry under a second is 1", d: Decision{Limit: 100, Reset: now.Add(time.Hour), RetryAfter: time.Millisecond},
			wantReset: "1700003600", wantRetryAfter: "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			tc.d.SetHeaders(h)
			want := map[string]string{
				"X-Ratelimit-Limit":     strconv.Itoa(tc.d.Limit),
				"X-Ratelimit-Remaining": strconv.Itoa(tc.d.Remaining),
				"X-Ratelimit-Reset":     tc.wantReset,
				"Retry-After":           tc.wantRetryAfter,
			}
			for k, v := range want {
				if got := h.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// The headers of a real sequence: Reset is an absolute Unix time in the
// future, not seconds from now.
func TestHeadersFromAllow(t *testing.T) {
	t.Parallel()
	l := New()
	now := time.Now()
	h := http.Header{}
	l.Allow("p:1", 2, time.Minute, now).SetHeaders(h)
	reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if reset <= now.Unix() || reset > now.Add(time.Minute).Unix()+1 {
		t.Errorf("X-RateLimit-Reset = %d, want a Unix time within the next minute of %d", reset, now.Unix())
	}
	if h.Get("X-RateLimit-Limit") != "2" || h.Get("X-RateLimit-Remaining") != "1" || h.Get("Retry-After") != "" {
		t.Errorf("headers = %v", h)
	}

	l.Allow("p:1", 2, time.Minute, now)
	rec := httptest.NewRecorder()
	d := l.Allow("p:1", 2, time.Minute, now)
	d.WriteRefusal(rec)
	res := rec.Result()
	if res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("status = %d, want 429", res.StatusCode)
	}
	var body map[string]string
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || body["detail"] != "Rate limit exceeded" || len(body) != 1 {
		t.Errorf("body = %v (%v), want {detail: Rate limit exceeded}", body, err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	// Two per minute: one comes back 30 s after the first.
	if got := res.Header.Get("Retry-After"); got != "30" {
		t.Errorf("Retry-After = %q, want 30", got)
	}
	if res.Header.Get("X-RateLimit-Remaining") != "0" || res.Header.Get("X-RateLimit-Limit") != "2" {
		t.Errorf("headers = %v", res.Header)
	}
}

func TestIdleKeysExpire(t *testing.T) {
	t.Parallel()
	l := New(WithSweepEvery(time.Minute))
	for i := 0; i < 1000; i++ {
		l.Allow(fmt.Sprintf("link:%d", i), PerResource, Window, t0)
	}
	if got := l.Len(); got != 1000 {
		t.Fatalf("Len = %d, want 1000", got)
	}
	// Each of them spent one request: whole again after 7.2 s. Touch every
	// shard after the sweep interval.
	later := t0.Add(2 * time.Minute)
	for i := 0; i < 10*shards; i++ {
		l.Allow(fmt.Sprintf("other:%d", i), PerResource, Window, later)
	}
	if got := l.Len(); got != 10*shards {
		t.Errorf("Len = %d after the sweep, want %d (the idle keys dropped)", got, 10*shards)
	}
	// A busy key survives the sweep with its debt.
	for i := 0; i < PerResource; i++ {
		l.Allow("busy", PerResource, Window, later)
	}
	for i := 0; i < 10*shards; i++ {
		l.Allow(fmt.Sprintf("third:%d", i), PerResource, Window, later.Add(5*time.Minute))
	}
	if l.Allow("busy", PerResource, Window, later.Add(5*time.Minute)).Remaining > 50 {
		t.Error("busy key lost its debt in a sweep")
	}
}

func TestMaxKeys(t *testing.T) {
	t.Parallel()
	const maxKeys = 4 * shards
	l := New(WithMaxKeys(maxKeys))
	for i := 0; i < 20*maxKeys; i++ {
		if !l.Allow(fmt.Sprintf("k%d", i), 10, time.Hour, t0).Allowed {
			t.Fatalf("new key %d refused", i)
		}
	}
	if got := l.Len(); got > maxKeys {
		t.Errorf("Len = %d, want at most %d", got, maxKeys)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		goroutines int
		perG       int
		limit      int
	}{
		{name: "many goroutines one key", goroutines: 16, perG: 100, limit: PerResource},
		{name: "limit above demand", goroutines: 8, perG: 50, limit: 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := New()
			var allowed atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < tc.goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < tc.perG; i++ {
						if l.Allow("shared", tc.limit, Window, t0).Allowed {
							allowed.Add(1)
						}
						l.Allow(fmt.Sprintf("own:%d", i), tc.limit, Window, t0)
					}
				}()
			}
			wg.Wait()
			want := min(tc.limit, tc.goroutines*tc.perG)
			if got := int(allowed.Load()); got != want {
				t.Errorf("allowed %d, want %d", got, want)
			}
		})
	}
}

func BenchmarkAllow(b *testing.B) {
	b.Run("one key", func(b *testing.B) {
		l := New()
		now := t0
		for b.Loop() {
			now = now.Add(8 * time.Second) // always allowed
			l.Allow("link:abc", PerResource, Window, now)
		}
	})
	b.Run("10k keys", func(b *testing.B) {
		l := New()
		keys := make([]string, 10_000)
		for i := range keys {
			keys[i] = fmt.Sprintf("link:%d", i)
		}
		i := 0
		for b.Loop() {
			l.Allow(keys[i%len(keys)], PerResource, Window, t0.Add(time.Duration(i)*time.Millisecond))
			i++
		}
	})
	b.Run("parallel", func(b *testing.B) {
		l := New()
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			key := fmt.Sprintf("workspace:%d", n.Add(1))
			for pb.Next() {
				l.Allow(key, PerResource, Window, time.Now())
			}
		})
	})
}
