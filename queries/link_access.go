package queries

import (
	"context"
	"crypto/subtle"
	"net"
	"strings"
	"time"
)

// LinkAccess asks whether, and where, a short link may be followed: by a
// visitor of the short URL (/{code}) or by a client of the public read
// (GET /v1/links/code/{code}). This is the one place that decides; both
// answer with what it says (docs/decisions.md, "Short links").
type LinkAccess struct {
	Host    string  // the request's Host: a verified custom domain, else the default domain
	Code    string  // the short code
	Channel Channel // the short URL or the public read
	// Counted tells whether the access will be counted as a click (not a
	// known bot, not HEAD; the public read always is). Counting decides
	// click-limit expiry exactly, so only accesses that are not counted,
	// or that stop at a password, ask for the count here.
	Counted  bool
	Country  string  // the visitor's country (ISO alpha-2), "" when unknown
	Platform string  // the visitor's platform (link.PlatformIOS, ...)
	Password *string // the password given; nil when none was
	Client   string  // who guesses passwords: a keyed hash of the address
	// At is the time of the access: the one its click is recorded at, so
	// that expiry and the click agree.
	At time.Time
}

// Channel is how a link is accessed.
type Channel uint8

const (
	// ShortURL is /{code}: redirects and HTML pages.
	ShortURL Channel = iota
	// PublicRead is GET /v1/links/code/{code}: the link as JSON. It does not
	// apply excluded_countries (the 451 rule is the short URL's).
	PublicRead
)

// Outcome is what LinkAccess decided, in the order it checks.
type Outcome uint8

const (
	// Granted: follow the link to Target (and count the click, when
	// counted).
	Granted Outcome = iota
	// NotFound: no such code on this host's domain.
	NotFound
	// Expired: past its expiration date, or its click limit is used up.
	Expired
	// Excluded: the visitor's country is excluded (short URL only).
	Excluded
	// PasswordRequired: the link has a password and none was given.
	PasswordRequired
	// PasswordThrottled: too many wrong passwords from this client on this
	// link lately; retry after RetryAfter.
	PasswordThrottled
	// PasswordWrong: the password given is not the link's.
	PasswordWrong
)

// Access is LinkAccess's answer.
type Access struct {
	Outcome Outcome
	Link    *Link  // set for every outcome but NotFound; shared, read only
	Target  string // Granted: where the visitor goes, with the link's UTM values
	// RetryAfter is the throttle's window (PasswordThrottled).
	RetryAfter time.Duration
	// route is Target's prepared route (Link.PrepareRoutes), if any.
	route *route
}

// WithTracking is the target carrying the click's tracking id (svc_tid),
// for conversions to name later; http(s) targets only.
func (a Access) WithTracking(trackingID string) string {
	if trackingID == "" {
		return a.Target
	}
	return withTracking(a.route, a.Target, trackingID)
}

// LinkAccessReadModel is what LinkAccess reads: hot, so the API serves it
// from a cache over the core projection.
type LinkAccessReadModel interface {
	// VerifiedDomainID is the id of the verified custom domain named host;
	// ok is false when there is none.
	VerifiedDomainID(ctx context.Context, host string) (id string, ok bool, err error)
	// LinkByCode is the link of a code on a domain ("" for the default
	// domain), nil when there is none. The caller never modifies it.
	LinkByCode(ctx context.Context, domainID, code string) (*Link, error)
}

// ClickCounter tells the exact number of clicks counted on a link (the
// click recorder's count, ahead of the read model's).
type ClickCounter interface {
	Clicks(ctx context.Context, linkID string) (int64, error)
}

// PasswordThrottle limits wrong passwords per client and link
// (internal/ratelimit: Attempts in one instance, SharedAttempts for a
// deployment). An attempt is counted as wrong before its password is
// compared, and taken back when it was right: so guesses sent at once
// cannot all pass a check that none of them has counted yet.
type PasswordThrottle interface {
	// Try counts an attempt of client on the link at now as a wrong one
	// and reports true, or reports false and counts nothing when the
	// client or the link has no attempts left.
	Try(ctx context.Context, client, linkID string, now time.Time) bool
	// Undo takes back the attempt Try counted at now.
	Undo(ctx context.Context, client, linkID string, now time.Time)
	// Window is how long a wrong attempt counts.
	Window() time.Duration
}

// Decrypter opens link passwords.
type Decrypter interface {
	Decrypt(text string) (string, error)
}

// Freshness brings a read model up to the changes answered by every
// instance of a deployment before the call (nil: one instance, whose read
// models follow its own writes already). An error leaves the read model
// as it is: the caller serves what it shows.
type Freshness interface {
	Follow(ctx context.Context) error
}

// LinkAccessHandler answers LinkAccess.
type LinkAccessHandler struct {
	ReadModel LinkAccessReadModel
	// Fresh, when set, is followed before each access: a link changed or
	// deleted on another instance is seen at once.
	Fresh    Freshness
	Clicks   ClickCounter // nil: the read model's count is trusted
	Throttle PasswordThrottle
	Cipher   Decrypter
	// DefaultHost is the host of the default short domain, as HostOnly
	// gives it: lower case, no port.
	DefaultHost string
}

// Handle decides. Its checks, in order: unknown code; expired by date, or
// by click count for accesses not counted themselves (a counted access
// learns it when its click is recorded); excluded country; password; then
// the target for the visitor's platform. An expired or excluded link never
// asks for its password.
func (h LinkAccessHandler) Handle(ctx context.Context, q LinkAccess) (Access, error) {
	if h.Fresh != nil {
		_ = h.Fresh.Follow(ctx) // behind or unreachable: serve what is known
	}
	domainID, err := h.domainOf(ctx, q.Host)
	if err != nil {
		return Access{}, err
	}
	l, err := h.ReadModel.LinkByCode(ctx, domainID, q.Code)
	if err != nil || l == nil {
		return Access{Outcome: NotFound}, err
	}
	now := q.At
	a := Access{Link: l}
	if l.ExpirationDate != nil && !now.Before(*l.ExpirationDate) {
		a.Outcome = Expired
		return a, nil
	}
	if l.ExpirationClickCount != nil && (!q.Counted || l.PasswordEnc != "") {
		used, err := h.usedUp(ctx, l)
		if err != nil {
			return Access{}, err
		}
		if used {
			a.Outcome = Expired
			return a, nil
		}
	}
	if q.Channel == ShortURL && l.ExcludesCountry(q.Country) {
		a.Outcome = Excluded
		return a, nil
	}
	if l.PasswordEnc != "" {
		if q.Password == nil {
			a.Outcome = PasswordRequired
			return a, nil
		}
		if !h.Throttle.Try(ctx, q.Client, l.ID, now) {
			a.Outcome, a.RetryAfter = PasswordThrottled, h.Throttle.Window()
			return a, nil
		}
		want, err := h.Cipher.Decrypt(l.PasswordEnc)
		if err != nil {
			h.Throttle.Undo(ctx, q.Client, l.ID, now)
			return Access{}, err
		}
		if subtle.ConstantTimeCompare([]byte(*q.Password), []byte(want)) != 1 {
			a.Outcome = PasswordWrong // counted by Try
			return a, nil
		}
		h.Throttle.Undo(ctx, q.Client, l.ID, now)
	}
	a.Outcome = Granted
	a.Target, a.route = l.targetRoute(q.Platform)
	return a, nil
}

// domainOf maps a Host to the id of a verified custom domain, or "" for
// the default domain. A host that is neither (an unverified or unknown
// name, a bare IP) is served as the default domain: linkd may sit behind a
// proxy under any name.
func (h LinkAccessHandler) domainOf(ctx context.Context, host string) (string, error) {
	name := HostOnly(host)
	if name == "" || name == h.DefaultHost {
		return "", nil
	}
	id, _, err := h.ReadModel.VerifiedDomainID(ctx, name)
	return id, err
}

// usedUp reports whether a click-limited link has counted all its clicks:
// from the read model when that already says so, else from the exact
// count.
func (h LinkAccessHandler) usedUp(ctx context.Context, l *Link) (bool, error) {
	limit := l.ExpirationClickCount
	if limit == nil {
		return false, nil
	}
	if l.Clicks >= *limit {
		return true, nil
	}
	if h.Clicks == nil {
		return false, nil
	}
	n, err := h.Clicks.Clicks(ctx, l.ID)
	return n >= *limit, err
}

// HostOnly strips a port and a trailing dot and lower-cases a host.
func HostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
