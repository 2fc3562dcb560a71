package secrets

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadCreatesAndRereads(t *testing.T) {
	dir := t.TempDir()
	a, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v, want 0600", st.Mode().Perm())
	}
	b, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if a.Hasher().Hash("k") != b.Hasher().Hash("k") {
		t.Fatal("secret changed across loads")
	}
}

func TestHashIsKeyedAndStable(t *testing.T) {
	s1 := New([]byte(strings.Repeat("a", 32)))
	s2 := New([]byte(strings.Repeat("b", 32)))
	if s1.Hasher().Hash("svc_sk_x") == s2.Hasher().Hash("svc_sk_x") {
		t.Fatal("hash does not depend on the secret")
	}
	if !Equal(s1.Hasher().Hash("svc_sk_x"), s1.Hasher().Hash("svc_sk_x")) {
		t.Fatal("hash not stable")
	}
	if strings.Contains(s1.Hasher().Hash("svc_sk_x"), "svc_sk_x") {
		t.Fatal("hash contains the key")
	}
}

func TestCipherRoundTrip(t *testing.T) {
	c := New([]byte(strings.Repeat("k", 32))).Cipher()
	enc, err := c.Encrypt("hunter2")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(enc, "hunter2") {
		t.Fatal("ciphertext contains the plain text")
	}
	enc2, _ := c.Encrypt("hunter2")
	if enc == enc2 {
		t.Fatal("encryption is deterministic")
	}
	got, err := c.Decrypt(enc)
	if err != nil || got != "hunter2" {
		t.Fatalf("decrypt = %q, %v", got, err)
	}
	if _, err := c.Decrypt(enc[:len(enc)-2] + "AA"); err == nil {
		t.Fatal("tampered ciphertext accepted")
	}
	other := New([]byte(strings.Repeat("z", 32))).Cipher()
	if _, err := other.Decrypt(enc); err == nil {
		t.Fatal("decrypted with another secret")
	}
}

// A fingerprint is the same for the same secret, differs between secrets,
// and is none of the keys derived for use.
func TestFingerprint(t *testing.T) {
	a := New([]byte(strings.Repeat("a", 32)))
	b := New([]byte(strings.Repeat("b", 32)))
	if a.Fingerprint() != New([]byte(strings.Repeat("a", 32))).Fingerprint() {
		t.Error("the same secret has two fingerprints")
	}
	if a.Fingerprint() == b.Fingerprint() {
		t.Error("two secrets share a fingerprint")
	}
	if len(a.Fingerprint()) != 32 {
		t.Errorf("fingerprint %q: want 16 bytes in hex", a.Fingerprint())
	}
	for _, purpose := range []string{"apikey", "password", "visitor"} {
		if strings.Contains(hex.EncodeToString(a.Derive(purpose)), a.Fingerprint()) {
			t.Errorf("the fingerprint is part of the %s key", purpose)
		}
	}
}
