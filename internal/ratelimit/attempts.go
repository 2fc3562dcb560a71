package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Attempts counts wrong passwords in a sliding window, per client and
// target (a link, a dashboard account), and per target across all clients,
// in memory:
//   - a client (an IPv4 address, an IPv6 /64: enrich.AddressKey) gets
//     PerClient wrong attempts on a target per window;
//   - a target takes PerTarget wrong attempts per window from everyone
//     together, so that a guesser spread over many addresses gets no more
//     than that. Then the target refuses all attempts, its owner's
//     included, until the oldest leaves the window: a minute at most by
//     default.
//
// An attempt is counted before its password is compared (Try) and taken
// back when the password was right (Undo): so concurrent guesses cannot
// all pass a check that none of them has counted yet.
//
// It implements queries.PasswordThrottle; SharedAttempts does the same for
// the whole deployment.
type Attempts struct {
	mu        sync.Mutex
	perClient int
	perTarget int
	window    time.Duration
	seen      map[string][]time.Time // client|target and "|"+target -> wrong attempts
}

// Default limits of wrong passwords.
const (
	DefaultPasswordPerClient = 5
	DefaultPasswordPerTarget = 30
	DefaultPasswordWindow    = time.Minute
)

// maxAttemptKeys bounds the keys of an Attempts: beyond it, all are
// forgotten.
const maxAttemptKeys = 100_000

// NewAttempts allows perClient wrong attempts per client and target, and
// perTarget per target, per window (zero values: the defaults).
func NewAttempts(perClient, perTarget int, window time.Duration) *Attempts {
	perClient, perTarget, window = attemptDefaults(perClient, perTarget, window)
	return &Attempts{perClient: perClient, perTarget: perTarget, window: window, seen: map[string][]time.Time{}}
}

func attemptDefaults(perClient, perTarget int, window time.Duration) (int, int, time.Duration) {
	if perClient <= 0 {
		perClient = DefaultPasswordPerClient
	}
	if perTarget <= 0 {
		perTarget = DefaultPasswordPerTarget
	}
	if window <= 0 {
		window = DefaultPasswordWindow
	}
	return perClient, perTarget, window
}

// Window is how long a wrong attempt counts.
func (a *Attempts) Window() time.Duration { return a.window }

func (a *Attempts) recent(key string, now time.Time) []time.Time {
	ts := a.seen[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > a.window {
		i++
	}
	return ts[i:]
}

// Try counts an attempt of client on target at now as a wrong one and
// reports true, or reports false and counts nothing when the client or the
// target has no attempts left.
func (a *Attempts) Try(_ context.Context, client, target string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ck, tk := client+"|"+target, "|"+target
	c, t := a.recent(ck, now), a.recent(tk, now)
	if len(c) >= a.perClient || len(t) >= a.perTarget {
		return false
	}
	if len(a.seen) > maxAttemptKeys {
		a.seen = map[string][]time.Time{}
	}
	a.seen[ck], a.seen[tk] = append(c, now), append(t, now)
	return true
}

// Undo takes back the attempt that Try counted for client on target at
// now: the password was right.
func (a *Attempts) Undo(_ context.Context, client, target string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, key := range [2]string{client + "|" + target, "|" + target} {
		ts := a.seen[key]
		for i := len(ts) - 1; i >= 0; i-- {
			if ts[i].Equal(now) {
				ts = append(ts[:i], ts[i+1:]...)
				break
			}
		}
		if len(ts) == 0 {
			delete(a.seen, key)
		} else {
			a.seen[key] = ts
		}
	}
}

// Len returns the number of keys held (two per client and target).
func (a *Attempts) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}
