package domain

import (
	"errors"
	"fmt"
)

// Kind classifies domain errors. The HTTP layer maps kinds to statuses in one
// place; the message is what the caller reads.
type Kind uint8

const (
	KindInvalid      Kind = iota + 1 // bad input: 400
	KindUnauthorized                 // no valid key: 401
	KindForbidden                    // not allowed: 403
	KindPlan                         // the plan lacks a feature: 403
	KindNotFound                     // 404
	KindConflict                     // already exists: 409
	KindGone                         // expired: 410
	KindTooLarge                     // body over the limit: 413
	KindRateLimited                  // 429
)

// Error is a typed domain error whose Message is shown to callers as is.
type Error struct {
	Kind    Kind
	Message string
	// Extra fields shown beside "detail" (for example password_description).
	Extra map[string]any
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, &Error{Kind: k}) match by kind.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Kind == e.Kind && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

func newErr(k Kind, format string, args ...any) *Error {
	if len(args) == 0 {
		return &Error{Kind: k, Message: format}
	}
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

func Invalid(format string, args ...any) *Error   { return newErr(KindInvalid, format, args...) }
func Forbidden(format string, args ...any) *Error { return newErr(KindForbidden, format, args...) }
func NotFound(format string, args ...any) *Error  { return newErr(KindNotFound, format, args...) }
func Conflict(format string, args ...any) *Error  { return newErr(KindConflict, format, args...) }
func Gone(format string, args ...any) *Error      { return newErr(KindGone, format, args...) }

// PlanRequired says the workspace's plan lacks feature.
func PlanRequired(feature string) *Error {
	return &Error{Kind: KindPlan, Message: "Your plan does not include " + feature + ". Upgrade to the pro plan to use it."}
}

// The texts the interface fixes.
const (
	MsgInsufficientPermissions = "Insufficient permissions for this operation"
	MsgInvalidAPIKey           = "Invalid API key"
	MsgAccessDeniedWorkspace   = "Access denied to this workspace"
)

// ErrInsufficientPermissions is the 403 every permission check returns.
func ErrInsufficientPermissions() *Error { return Forbidden(MsgInsufficientPermissions) }

// KindOf returns the kind of a domain error, or 0.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}
