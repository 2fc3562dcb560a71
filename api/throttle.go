package api

import (
	"sync"
	"time"

	"github.com/linkd/linkd/queries"
)

// PasswordThrottle counts wrong passwords in a sliding window, per client
// and link, and per link across all clients:
//   - a client (an IPv4 address, an IPv6 /64: enrich.AddressKey) gets
//     PerClient wrong attempts on a link per window;
//   - a link takes PerLink wrong attempts per window from everyone
//     together, so that a guesser spread over many addresses gets no more
//     than that. Then the link refuses all attempts, its owner's included,
//     until the oldest leaves the window: a minute at most by default.
//
// The short URL's form and the public read count together.
type PasswordThrottle struct {
	mu        sync.Mutex
	perClient int
	perLink   int
	window    time.Duration
	seen      map[string][]time.Time // client|link and "|"+link -> wrong attempts
}

var _ queries.PasswordThrottle = (*PasswordThrottle)(nil)

// Default limits of the password throttle.
const (
	DefaultPasswordPerClient = 5
	DefaultPasswordPerLink   = 30
	DefaultPasswordWindow    = time.Minute
)

// NewPasswordThrottle allows perClient wrong attempts per client and link,
// and perLink per link, per window (zero values: the defaults).
func NewPasswordThrottle(perClient, perLink int, window time.Duration) *PasswordThrottle {
	if perClient <= 0 {
		perClient = DefaultPasswordPerClient
	}
	if perLink <= 0 {
		perLink = DefaultPasswordPerLink
	}
	if window <= 0 {
		window = DefaultPasswordWindow
	}
	return &PasswordThrottle{perClient: perClient, perLink: perLink, window: window, seen: map[string][]time.Time{}}
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
	return len(a.recent(client+"|"+linkID, now)) < a.perClient && len(a.recent("|"+linkID, now)) < a.perLink
}

// Failed counts a wrong attempt.
func (a *PasswordThrottle) Failed(client, linkID string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) > 100_000 {
		a.seen = map[string][]time.Time{}
	}
	for _, key := range [2]string{client + "|" + linkID, "|" + linkID} {
		a.seen[key] = append(a.recent(key, now), now)
	}
}
