// Package secrets keeps the server secret and what is derived from it: the
// keyed hash of API keys, the cipher of link passwords, and the key of the
// unique-visitor hash.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/linkd/linkd/internal/storage/fsdir"
)

// Secret is the server's 32-byte master secret.
type Secret struct {
	master []byte
}

// FileName is where the secret is kept in the data directory.
const FileName = "secret.key"

// Load returns the secret given as hex or base64 text (LINKD_SECRET), or
// the one in dir, creating it (mode 0600) on first start.
func Load(dir, given string) (*Secret, error) {
	if given != "" {
		b, err := decode(given)
		if err != nil {
			return nil, fmt.Errorf("secrets: LINKD_SECRET: %w", err)
		}
		return &Secret{master: b}, nil
	}
	path := filepath.Join(dir, FileName)
	text, err := os.ReadFile(path)
	if err == nil {
		b, err := decode(strings.TrimSpace(string(text)))
		if err != nil {
			return nil, fmt.Errorf("secrets: %s: %w", path, err)
		}
		return &Secret{master: b}, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := fsdir.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return &Secret{master: b}, nil
}

// New makes a Secret from raw bytes (tests).
func New(b []byte) *Secret { return &Secret{master: append([]byte(nil), b...)} }

func decode(s string) ([]byte, error) {
	if b, err := hex.DecodeString(s); err == nil && len(b) >= 32 {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) >= 32 {
		return b, nil
	}
	return nil, errors.New("want at least 32 bytes, hex or base64")
}

// Derive returns a 32-byte key for one purpose.
func (s *Secret) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, s.master)
	m.Write([]byte("linkd/" + purpose))
	return m.Sum(nil)
}

// Fingerprint names the secret without revealing it (16 bytes of a key
// derived for no other use, in hex): instances sharing an event store
// compare fingerprints to find one started with another secret.
func (s *Secret) Fingerprint() string { return hex.EncodeToString(s.Derive("fingerprint")[:16]) }

// KeyHasher hashes API keys with HMAC-SHA256 under a derived key.
type KeyHasher struct{ key []byte }

// Hasher returns the API key hasher.
func (s *Secret) Hasher() *KeyHasher { return &KeyHasher{key: s.Derive("apikey")} }

// Hash returns the hex keyed hash of an API key.
func (h *KeyHasher) Hash(key string) string {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(key))
	return hex.EncodeToString(m.Sum(nil))
}

// Equal compares two hashes in constant time.
func Equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Cipher encrypts short texts (link passwords) with AES-256-GCM.
type Cipher struct{ aead cipher.AEAD }

// Cipher returns the password cipher.
func (s *Secret) Cipher() *Cipher {
	block, err := aes.NewCipher(s.Derive("password"))
	if err != nil {
		panic(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &Cipher{aead: aead}
}

const cipherPrefix = "v1:"

// Encrypt returns "v1:" and the base64 of nonce and sealed text.
func (c *Cipher) Encrypt(plain string) (string, error) {
	nonce := make([]byte, c.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := c.aead.Seal(nonce, nonce, []byte(plain), nil)
	return cipherPrefix + base64.RawStdEncoding.EncodeToString(out), nil
}

// Decrypt reverses Encrypt.
func (c *Cipher) Decrypt(text string) (string, error) {
	if text == "" {
		return "", nil
	}
	if !strings.HasPrefix(text, cipherPrefix) {
		return "", errors.New("secrets: unknown ciphertext version")
	}
	b, err := base64.RawStdEncoding.DecodeString(text[len(cipherPrefix):])
	if err != nil {
		return "", err
	}
	n := c.aead.NonceSize()
	if len(b) < n {
		return "", errors.New("secrets: short ciphertext")
	}
	plain, err := c.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return "", err
	}
	return string(plain), nil
}
