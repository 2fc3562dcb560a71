// Package user is the user aggregate: a person who signs in to the
// dashboard with an email and a password. The password itself is never
// stored: only its hash, made outside the domain (commands.PasswordHasher).
// An email belongs to one user at a time: a reservation of kind
// reservation.KindUserEmail, keyed by EmailKey.
package user

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/linkd/linkd/domain"
)

const (
	EventCreated     = "UserCreated"
	EventPasswordSet = "UserPasswordSet"
)

// StreamPrefix is the category of user streams.
const StreamPrefix = "user-"

// Stream names the stream of user id.
func Stream(id string) string { return StreamPrefix + id }

// Created: a user exists, with an email and a password hash.
type Created struct {
	UserID       string    `json:"user_id"`
	Email        string    `json:"email"`
	PasswordHash string    `json:"password_hash"`
	At           time.Time `json:"at"`
}

// PasswordSet: the user's password changed.
type PasswordSet struct {
	UserID       string    `json:"user_id"`
	PasswordHash string    `json:"password_hash"`
	At           time.Time `json:"at"`
}

func (Created) EventType() string     { return EventCreated }
func (PasswordSet) EventType() string { return EventPasswordSet }

func init() {
	domain.Register(func() domain.Event { return &Created{} })
	domain.Register(func() domain.Event { return &PasswordSet{} })
}

// Limits of what a user holds.
const (
	MaxUserIDLength   = 255
	MaxEmailLength    = 254
	MinPasswordLength = 8
	MaxPasswordLength = 1024
)

// User is the write model of one user.
type User struct {
	domain.Changes
	ID           string
	Email        string
	PasswordHash string
	CreatedAt    time.Time
}

// Load rebuilds a user from its history.
func Load(events []domain.Event) (*User, error) {
	u := &User{}
	for _, e := range events {
		if err := u.apply(e); err != nil {
			return nil, err
		}
		u.Changes.Loaded()
	}
	return u, nil
}

func (u *User) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Created:
		u.ID, u.Email, u.PasswordHash, u.CreatedAt = e.UserID, e.Email, e.PasswordHash, e.At
	case *PasswordSet:
		u.PasswordHash = e.PasswordHash
	default:
		return fmt.Errorf("user: unexpected event %T", e)
	}
	return nil
}

// Exists reports whether the user was created.
func (u *User) Exists() bool { return u.ID != "" }

// NormalizeEmail trims an email and checks its form: one "@" with text on
// both sides, no spaces, at most MaxEmailLength bytes.
func NormalizeEmail(email string) (string, error) {
	email = strings.TrimSpace(email)
	at := strings.LastIndexByte(email, '@')
	if email == "" || len(email) > MaxEmailLength || at <= 0 || at == len(email)-1 ||
		strings.ContainsAny(email, " \t\r\n<>\"") || !utf8.ValidString(email) {
		return "", domain.Invalid("email must be an email address")
	}
	return email, nil
}

// EmailKey is the reservation key of an email: emails are unique without
// regard to case.
func EmailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// CheckPassword checks a password's length before it is hashed.
func CheckPassword(password string) error {
	n := utf8.RuneCountInString(password)
	if n < MinPasswordLength || len(password) > MaxPasswordLength {
		return domain.Invalid("password must be %d to %d characters", MinPasswordLength, MaxPasswordLength)
	}
	return nil
}

// CheckUserID checks a user id's form.
func CheckUserID(id string) error {
	if id == "" || len(id) > MaxUserIDLength || strings.ContainsAny(id, "/ \t\r\n") || !utf8.ValidString(id) {
		return domain.Invalid("user_id must be 1 to %d bytes without spaces or slashes", MaxUserIDLength)
	}
	return nil
}

// Create records a new user. The email is normalized with NormalizeEmail
// and the hash made by the caller.
func (u *User) Create(id, email, hash string, now time.Time) error {
	if u.Exists() {
		return domain.Conflict("User already exists")
	}
	if err := CheckUserID(id); err != nil {
		return err
	}
	email, err := NormalizeEmail(email)
	if err != nil {
		return err
	}
	if hash == "" {
		return domain.Invalid("password is required")
	}
	e := &Created{UserID: id, Email: email, PasswordHash: hash, At: now.UTC()}
	_ = u.apply(e)
	u.Changes.Record(e)
	return nil
}

// SetPassword records a new password hash.
func (u *User) SetPassword(hash string, now time.Time) error {
	if !u.Exists() {
		return domain.NotFound("User not found")
	}
	if hash == "" {
		return domain.Invalid("password is required")
	}
	e := &PasswordSet{UserID: u.ID, PasswordHash: hash, At: now.UTC()}
	_ = u.apply(e)
	u.Changes.Record(e)
	return nil
}
