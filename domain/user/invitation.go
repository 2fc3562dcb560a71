package user

import (
	"fmt"
	"time"

	"github.com/linkd/linkd/domain"
)

// An invitation asks a person, by email, into a workspace with a role. It
// is used once, through a link that holds a random token; only the
// token's hash names the invitation's stream.
const (
	EventInvited            = "MemberInvited"
	EventInvitationAccepted = "InvitationAccepted"
)

// InvitationStreamPrefix is the category of invitation streams.
const InvitationStreamPrefix = "invitation-"

// InvitationStream names the stream of the invitation whose token hashes
// to hash.
func InvitationStream(hash string) string { return InvitationStreamPrefix + hash }

// InvitationTTL is how long an invitation can be accepted.
const InvitationTTL = 7 * 24 * time.Hour

// Invited: an admin of the workspace invited email as role.
type Invited struct {
	TokenHash   string    `json:"token_hash"`
	WorkspaceID string    `json:"workspace_id"`
	Email       string    `json:"email"`
	Role        string    `json:"role"`
	InvitedBy   string    `json:"invited_by"`
	ExpiresAt   time.Time `json:"expires_at"`
	At          time.Time `json:"at"`
}

// InvitationAccepted: the invitation was used by user.
type InvitationAccepted struct {
	TokenHash string    `json:"token_hash"`
	UserID    string    `json:"user_id"`
	At        time.Time `json:"at"`
}

func (Invited) EventType() string            { return EventInvited }
func (InvitationAccepted) EventType() string { return EventInvitationAccepted }

func init() {
	domain.Register(func() domain.Event { return &Invited{} })
	domain.Register(func() domain.Event { return &InvitationAccepted{} })
}

// Invitation is the write model of one invitation.
type Invitation struct {
	domain.Changes
	Invited
	AcceptedBy string
}

// LoadInvitation rebuilds an invitation from its history.
func LoadInvitation(events []domain.Event) (*Invitation, error) {
	inv := &Invitation{}
	for _, e := range events {
		if err := inv.apply(e); err != nil {
			return nil, err
		}
		inv.Changes.Loaded()
	}
	return inv, nil
}

func (inv *Invitation) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Invited:
		inv.Invited = *e
	case *InvitationAccepted:
		inv.AcceptedBy = e.UserID
	default:
		return fmt.Errorf("invitation: unexpected event %T", e)
	}
	return nil
}

// Exists reports whether the invitation was made.
func (inv *Invitation) Exists() bool { return inv.TokenHash != "" }

// Invite records a new invitation.
func Invite(tokenHash, workspaceID, email, role, by string, now time.Time) (*Invitation, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if role != "admin" && role != "member" {
		return nil, domain.Invalid("role must be admin or member")
	}
	if tokenHash == "" || workspaceID == "" || by == "" {
		return nil, domain.Invalid("an invitation needs a token, a workspace and who invites")
	}
	inv := &Invitation{}
	e := &Invited{TokenHash: tokenHash, WorkspaceID: workspaceID, Email: email, Role: role, InvitedBy: by,
		ExpiresAt: now.UTC().Add(InvitationTTL), At: now.UTC()}
	_ = inv.apply(e)
	inv.Changes.Record(e)
	return inv, nil
}

// Usable says why the invitation cannot be accepted now, or nil.
func (inv *Invitation) Usable(now time.Time) error {
	switch {
	case !inv.Exists():
		return domain.NotFound("Invitation not found")
	case inv.AcceptedBy != "":
		return domain.Gone("This invitation was already used")
	case !now.Before(inv.ExpiresAt):
		return domain.Gone("This invitation has expired")
	}
	return nil
}

// Accept records that user used the invitation.
func (inv *Invitation) Accept(userID string, now time.Time) error {
	if err := inv.Usable(now); err != nil {
		return err
	}
	e := &InvitationAccepted{TokenHash: inv.TokenHash, UserID: userID, At: now.UTC()}
	_ = inv.apply(e)
	inv.Changes.Record(e)
	return nil
}
