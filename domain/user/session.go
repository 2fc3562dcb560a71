package user

import (
	"fmt"
	"time"

	"github.com/linkd/linkd/domain"
)

// A dashboard session: started at sign-in, ended at sign-out, valid for
// SessionTTL at most. Its stream is named by the hash of the cookie's
// value; the value itself is never stored.
const (
	EventSessionStarted = "SessionStarted"
	EventSessionEnded   = "SessionEnded"
)

// SessionStreamPrefix is the category of session streams.
const SessionStreamPrefix = "session-"

// SessionStream names the stream of the session whose cookie hashes to
// hash.
func SessionStream(hash string) string { return SessionStreamPrefix + hash }

// SessionTTL is how long a session lasts at most.
const SessionTTL = 7 * 24 * time.Hour

type SessionStarted struct {
	SessionHash string    `json:"session_hash"`
	UserID      string    `json:"user_id"`
	Email       string    `json:"email"`
	At          time.Time `json:"at"`
}

type SessionEnded struct {
	SessionHash string    `json:"session_hash"`
	UserID      string    `json:"user_id"`
	At          time.Time `json:"at"`
}

func (SessionStarted) EventType() string { return EventSessionStarted }
func (SessionEnded) EventType() string   { return EventSessionEnded }

func init() {
	domain.Register(func() domain.Event { return &SessionStarted{} })
	domain.Register(func() domain.Event { return &SessionEnded{} })
}

// Session is the write model of one session.
type Session struct {
	domain.Changes
	SessionStarted
	Ended bool
}

// LoadSession rebuilds a session from its history.
func LoadSession(events []domain.Event) (*Session, error) {
	s := &Session{}
	for _, e := range events {
		if err := s.apply(e); err != nil {
			return nil, err
		}
		s.Changes.Loaded()
	}
	return s, nil
}

func (s *Session) apply(e domain.Event) error {
	switch e := e.(type) {
	case *SessionStarted:
		s.SessionStarted = *e
	case *SessionEnded:
		s.Ended = true
	default:
		return fmt.Errorf("session: unexpected event %T", e)
	}
	return nil
}

// StartSession records a new session of a user.
func StartSession(hash, userID, email string, now time.Time) (*Session, error) {
	if hash == "" || userID == "" {
		return nil, domain.Invalid("a session needs its hash and its user")
	}
	s := &Session{}
	e := &SessionStarted{SessionHash: hash, UserID: userID, Email: email, At: now.UTC()}
	_ = s.apply(e)
	s.Changes.Record(e)
	return s, nil
}

// Valid reports whether the session signs its user in at now.
func (s *Session) Valid(now time.Time) bool {
	return s.SessionHash != "" && !s.Ended && now.Before(s.At.Add(SessionTTL))
}

// End records the sign-out; ending twice changes nothing.
func (s *Session) End(now time.Time) {
	if s.SessionHash == "" || s.Ended {
		return
	}
	e := &SessionEnded{SessionHash: s.SessionHash, UserID: s.UserID, At: now.UTC()}
	_ = s.apply(e)
	s.Changes.Record(e)
}
