// Package reservation enforces uniqueness in the write model: a name (a
// short code on a domain, a workspace name, a project name, a custom domain)
// is held by at most one owner. Each name has its own stream, appended with
// the version it was read at, so two concurrent claims cannot both win.
package reservation

import (
	"fmt"
	"strings"
	"time"

	"github.com/linkd/linkd/domain"
)

const (
	EventReserved = "NameReserved"
	EventReleased = "NameReleased"
)

// Kinds of names, each its own stream category.
const (
	KindShortCode     = "shortcode"     // key: <domain id or "default">/<code>, case-sensitive
	KindWorkspaceName = "workspacename" // key: <owner user>/<lower-case name>
	KindProjectName   = "projectname"   // key: <workspace id>/<lower-case name>
	KindDomainName    = "domainname"    // key: <lower-case domain>
	KindDefaultSpace  = "defaultworkspace"
	KindOperatorKey   = "operatorkey"
	// KindUserEmail holds a user's email; key: user.EmailKey(email).
	KindUserEmail = "useremail"
	// KindAdminUser makes the operator user once; key: its user id.
	KindAdminUser = "adminuser"
	// KindConversionEvent holds the eventId of a lead or sale, forever: the
	// owner is the conversion id, the scope its customer stream. Key:
	// conversion.EventIDKey(workspace id, eventId).
	KindConversionEvent = "conversionevent"
)

// Stream names the reservation stream of a key of a kind.
func Stream(kind, key string) string { return kind + "-" + key }

// Reserved: Owner holds the name. Scope is extra context about the owner
// (for a domain name, the workspace holding it).
type Reserved struct {
	Name  string    `json:"name"`
	Owner string    `json:"owner"`
	Scope string    `json:"scope,omitempty"`
	At    time.Time `json:"at"`
}

// Released: the name is free again.
type Released struct {
	Name  string    `json:"name"`
	Owner string    `json:"owner"`
	At    time.Time `json:"at"`
}

func (Reserved) EventType() string { return EventReserved }
func (Released) EventType() string { return EventReleased }

func init() {
	domain.Register(func() domain.Event { return &Reserved{} })
	domain.Register(func() domain.Event { return &Released{} })
}

// Reservation is the write model of one name.
type Reservation struct {
	domain.Changes
	Name    string
	Owner   string
	Scope   string
	Since   time.Time
	Holding bool
}

// Load rebuilds a reservation from its history.
func Load(events []domain.Event) (*Reservation, error) {
	r := &Reservation{}
	for _, e := range events {
		if err := r.apply(e); err != nil {
			return nil, err
		}
		r.Changes.Loaded()
	}
	return r, nil
}

func (r *Reservation) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Reserved:
		r.Name, r.Owner, r.Scope, r.Since, r.Holding = e.Name, e.Owner, e.Scope, e.At, true
	case *Released:
		r.Owner, r.Scope, r.Holding = "", "", false
	default:
		return fmt.Errorf("reservation: unexpected event %T", e)
	}
	return nil
}

// HeldByOther is returned by Reserve when another owner holds the name.
type HeldByOther struct {
	Owner string
	Scope string
}

func (h *HeldByOther) Error() string { return "name held by " + h.Owner }

// Reserve claims the name for owner. Claiming a name one already holds is a
// no-op. takeOver allows claiming a name whose holder no longer exists (the
// caller checked), which repairs a claim left behind by a crash between the
// reservation and the owner's creation.
func (r *Reservation) Reserve(name, owner, scope string, takeOver bool, now time.Time) error {
	if r.Holding && r.Owner == owner {
		return nil
	}
	if r.Holding && !takeOver {
		return &HeldByOther{Owner: r.Owner, Scope: r.Scope}
	}
	e := &Reserved{Name: name, Owner: owner, Scope: scope, At: now.UTC()}
	_ = r.apply(e)
	r.Changes.Record(e)
	return nil
}

// Release frees the name if owner holds it.
func (r *Reservation) Release(owner string, now time.Time) {
	if !r.Holding || r.Owner != owner {
		return
	}
	e := &Released{Name: r.Name, Owner: owner, At: now.UTC()}
	_ = r.apply(e)
	r.Changes.Record(e)
}

// FoldName is the case-insensitive key of a display name.
func FoldName(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
