package api

import (
	"crypto/subtle"

	"github.com/google/uuid"
)

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func newClickID() string { return uuid.Must(uuid.NewV7()).String() }
