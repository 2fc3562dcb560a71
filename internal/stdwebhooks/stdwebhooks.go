// Package stdwebhooks signs webhook messages as the Standard Webhooks
// specification (standardwebhooks.com, version 1) says: the headers
// webhook-id, webhook-timestamp and webhook-signature, the last being "v1,"
// and the base64 HMAC-SHA256, keyed with the secret's bytes, of
// "{id}.{timestamp}.{body}". A secret is "whsec_" and the base64 of its
// bytes.
package stdwebhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every secret.
const SecretPrefix = "whsec_"

// SecretBytes is how many random bytes a new secret holds (the
// specification allows 24 to 64).
const SecretBytes = 32

// Header names.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// NewSecret makes a random secret.
func NewSecret() string {
	b := make([]byte, SecretBytes)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ErrSecret is a secret that is not whsec_ and base64.
var ErrSecret = errors.New("stdwebhooks: invalid secret")

// Key is the HMAC key of a secret: its decoded bytes.
func Key(secret string) ([]byte, error) {
	s, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrSecret
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) < 24 || len(b) > 64 {
		return nil, ErrSecret
	}
	return b, nil
}

// Sign is the webhook-signature of one message.
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts.Unix(), 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}
