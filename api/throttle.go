package api

import (
	"sync"
	"time"

	"github.com/linkd/linkd/queries"
)

// PasswordThrottle counts wrong passwords per client and link in a window:
// after max of them, the link refuses that client's attempts until the
// oldest leaves the window. The short URL's form and the public read count
// together.
type PasswordThrottle struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	seen   map[string][]time.Time
}

var _ queries.PasswordThrottle = (*PasswordThrottle)(nil)

// NewPasswordThrottle allows max wrong attempts per window (defaults: 5
// per minute).
func NewPasswordThrottle(max int, window time.Duration) *PasswordThrottle {
	if max <= 0 {
		max = 5
	}
	if window <= 0 {
		window = time.Minute
	}
	return &PasswordThrottle{max: max, window: window, seen: map[string][]time.Time{}}
}

// Window is how long a wrong attempt counts.
func (a *PasswordThrottle) Window() time.Duration { return a.window }

func (a *PasswordThrottle) recent(key string, now time.Time) []time.Time {
	ts := a.seen[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > a.window {
		i++
	}
	return ts[i:]
}

// Allowed reports whether the client may try a password on the link.
func (a *PasswordThrottle) Allowed(client, linkID string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.recent(client+"|"+linkID, now)) < a.max
}

// Failed counts a wrong attempt.
func (a *PasswordThrottle) Failed(client, linkID string, now time.Time) {
	key := client + "|" + linkID
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) > 100_000 {
		a.seen = map[string][]time.Time{}
	}
	a.seen[key] = append(a.recent(key, now), now)
}
