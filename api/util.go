package api

import (
	"crypto/subtle"

	"github.com/google/uuid"
)

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func newClickID() string { return uuid.Must(uuid.NewV7()).String() }

// deref returns what p points at, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
