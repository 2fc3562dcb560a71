package password

import (
	"sync"
	"time"
)

// Throttle counts wrong passwords in a sliding window, per client
// and link, and per link across all clients:
//   - a client (an IPv4 address, an IPv6 /64: enrich.AddressKey) gets
//     PerClient wrong attempts on a link per window;
//   - a link takes PerLink wrong attempts per window from everyone
//     together, so that a guesser spread over many addresses gets no more
//     than that. Then the link refuses all attempts, its owner's included,
//     until the oldest leaves the window: a minute at most by default.
//
// The short URL's form and the public read count together
// (queries.PasswordThrottle); the dashboard's sign-in and invitations
// name an email or an invitation where a link stands.
type Throttle struct {
	mu        sync.Mutex
	perClient int
	perLink   int
	window    time.Duration
	seen      map[string][]time.Time // client|link and "|"+link -> wrong attempts
}

// Default limits of the throttle.
const (
	DefaultPerClient = 5
	DefaultPerLink   = 30
	DefaultWindow    = time.Minute
)

// NewThrottle allows perClient wrong attempts per client and link,
// and perLink per link, per window (zero values: the defaults).
func NewThrottle(perClient, perLink int, window time.Duration) *Throttle {
	if perClient <= 0 {
		perClient = DefaultPerClient
	}
	if perLink <= 0 {
		perLink = DefaultPerLink
	}
	if window <= 0 {
		window = DefaultWindow
	}
	return &Throttle{perClient: perClient, perLink: perLink, window: window, seen: map[string][]time.Time{}}
}

// Window is how long a wrong attempt counts.
func (a *Throttle) Window() time.Duration { return a.window }

func (a *Throttle) recent(key string, now time.Time) []time.Time {
	ts := a.seen[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > a.window {
		i++
	}
	return ts[i:]
}

// Allowed reports whether the client may try a password on the link.
func (a *Throttle) Allowed(client, linkID string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.recent(client+"|"+linkID, now)) < a.perClient && len(a.recent("|"+linkID, now)) < a.perLink
}

// Failed counts a wrong attempt.
func (a *Throttle) Failed(client, linkID string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) > 100_000 {
		a.seen = map[string][]time.Time{}
	}
	for _, key := range [2]string{client + "|" + linkID, "|" + linkID} {
		a.seen[key] = append(a.recent(key, now), now)
	}
}
