package password

import (
	"strings"
	"testing"
)

func TestHashAndVerify(t *testing.T) {
	var h Argon2id
	hash, err := h.Hash("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q", hash)
	}
	if ok, err := h.Verify(hash, "correct horse"); !ok || err != nil {
		t.Fatalf("right password: %v %v", ok, err)
	}
	if ok, err := h.Verify(hash, "correct horsE"); ok || err != nil {
		t.Fatalf("wrong password: %v %v", ok, err)
	}
	other, _ := h.Hash("correct horse")
	if other == hash {
		t.Fatal("two hashes of one password share a salt")
	}
	for _, bad := range []string{"", "$bcrypt$x", "$argon2id$v=19$m=0,t=2,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=19456,t=2,p=1$!!$aGFzaA"} {
		if _, err := h.Verify(bad, "x"); err != ErrMalformed {
			t.Errorf("Verify(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}
