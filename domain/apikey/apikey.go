// Package apikey is the API key aggregate. A key's secret is never stored:
// only a keyed hash of it, and its first characters for display.
package apikey

import (
	"fmt"
	"time"

	"github.com/linkd/linkd/domain"
)

const (
	EventCreated     = "ApiKeyCreated"
	EventDeactivated = "ApiKeyDeactivated"
)

// StreamPrefix is the category of key streams.
const StreamPrefix = "apikey-"

// Stream names the stream of key id.
func Stream(id string) string { return StreamPrefix + id }

// Access levels.
const (
	AccessFull     = "full"
	AccessReadOnly = "read_only"
	AccessLimited  = "limited"
)

// Kinds of keys.
const (
	KindSecret      = "secret"
	KindPublishable = "publishable"
)

// Resources of limited keys.
var Resources = []string{"domains", "links", "projects", "workspaces", "analytics"}

// Permission values.
const (
	PermWrite = "write"
	PermRead  = "read"
	PermNone  = "none"
)

// Permissions of a limited key per resource.
type Permissions map[string]string

type Created struct {
	KeyID            string      `json:"key_id"`
	UserID           string      `json:"user_id"`
	Name             string      `json:"name"`
	Kind             string      `json:"kind"`
	Access           string      `json:"access"`
	Permissions      Permissions `json:"permissions,omitempty"`
	ProjectID        string      `json:"project_id,omitempty"`
	AllowedHostnames []string    `json:"allowed_hostnames,omitempty"`
	// Hash is the keyed hash of the whole key; Prefix its first characters.
	Hash     string    `json:"hash"`
	Prefix   string    `json:"prefix"`
	Operator bool      `json:"operator,omitempty"`
	At       time.Time `json:"at"`
}

type Deactivated struct {
	KeyID  string    `json:"key_id"`
	UserID string    `json:"user_id"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

func (Created) EventType() string     { return EventCreated }
func (Deactivated) EventType() string { return EventDeactivated }

func init() {
	domain.Register(func() domain.Event { return &Created{} })
	domain.Register(func() domain.Event { return &Deactivated{} })
}

// Key is the write model of one key.
type Key struct {
	domain.Changes
	Created
	Active bool
}

// Load rebuilds a key from its history.
func Load(events []domain.Event) (*Key, error) {
	k := &Key{}
	for _, e := range events {
		if err := k.apply(e); err != nil {
			return nil, err
		}
		k.Changes.Loaded()
	}
	return k, nil
}

func (k *Key) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Created:
		k.Created, k.Active = *e, true
	case *Deactivated:
		k.Active = false
	default:
		return fmt.Errorf("apikey: unexpected event %T", e)
	}
	return nil
}

// Exists reports whether the key was created.
func (k *Key) Exists() bool { return k.KeyID != "" }

// NormalizePermissions checks access and fills permissions: full gives
// write on everything, read_only read on everything, limited what is
// given (missing resources get none).
func NormalizePermissions(access string, given map[string]string) (Permissions, error) {
	p := Permissions{}
	switch access {
	case AccessFull:
		for _, r := range Resources {
			p[r] = PermWrite
		}
	case AccessReadOnly:
		for _, r := range Resources {
			p[r] = PermRead
		}
	case AccessLimited:
		for k, v := range given {
			known := false
			for _, r := range Resources {
				known = known || r == k
			}
			if !known {
				return nil, domain.Invalid("unknown permission resource %q", k)
			}
			if v != PermWrite && v != PermRead && v != PermNone {
				return nil, domain.Invalid("permission values are read, write or none")
			}
		}
		for _, r := range Resources {
			v := given[r]
			if v == "" {
				v = PermNone
			}
			p[r] = v
		}
	default:
		return nil, domain.Invalid("access must be full, read_only or limited")
	}
	return p, nil
}

// Limits of what a key holds.
const (
	MaxUserIDLength     = 255
	MaxAllowedHostnames = 100
	MaxHostnameLength   = 253 // DNS: 253 characters in text form
)

// Create records a new key.
func Create(c Created) (*Key, error) {
	if c.Name == "" {
		return nil, domain.Invalid("Key name is required")
	}
	if len(c.Name) > 255 {
		return nil, domain.Invalid("Key name is too long")
	}
	if c.Kind != KindSecret && c.Kind != KindPublishable {
		return nil, domain.Invalid("kind must be secret or publishable")
	}
	if c.UserID == "" || len(c.UserID) > MaxUserIDLength {
		return nil, domain.Invalid("user_id must be 1 to %d bytes", MaxUserIDLength)
	}
	if len(c.AllowedHostnames) > MaxAllowedHostnames {
		return nil, domain.Invalid("allowed_hostnames holds at most %d host names", MaxAllowedHostnames)
	}
	for _, h := range c.AllowedHostnames {
		if len(h) > MaxHostnameLength {
			return nil, domain.Invalid("allowed_hostnames: a host name is at most %d bytes", MaxHostnameLength)
		}
	}
	perms, err := NormalizePermissions(c.Access, c.Permissions)
	if err != nil {
		return nil, err
	}
	c.Permissions = perms
	c.At = c.At.UTC()
	k := &Key{}
	e := c
	_ = k.apply(&e)
	k.Changes.Record(&e)
	return k, nil
}

// Deactivate makes the key invalid; deactivating twice changes nothing.
func (k *Key) Deactivate(by string, now time.Time) error {
	if !k.Exists() {
		return domain.NotFound("API key not found")
	}
	if !k.Active {
		return nil
	}
	e := &Deactivated{KeyID: k.KeyID, UserID: k.UserID, By: by, At: now.UTC()}
	_ = k.apply(e)
	k.Changes.Record(e)
	return nil
}

// Grants is what a key may do through the /v1 interface: its access level
// and permissions, except for a publishable key, which is for client-side
// collection only and is granted nothing there (limited, every resource
// none).
func Grants(kind, access string, perms Permissions) (string, Permissions) {
	if kind != KindPublishable {
		return access, perms
	}
	none := Permissions{}
	for _, r := range Resources {
		none[r] = PermNone
	}
	return AccessLimited, none
}
