package stdwebhooks

import (
	"strings"
	"testing"
	"time"
)

// The example of the Standard Webhooks reference libraries' tests
// (standard-webhooks/standard-webhooks, libraries/go/webhooks_test.go):
// this secret, id, timestamp and payload sign to this signature.
func TestSignReferenceVector(t *testing.T) {
	key, err := Key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
}

func TestSecret(t *testing.T) {
	s := NewSecret()
	if !strings.HasPrefix(s, SecretPrefix) {
		t.Fatalf("secret %q", s)
	}
	if k, err := Key(s); err != nil || len(k) != SecretBytes {
		t.Errorf("key %d bytes, %v", len(k), err)
	}
	for _, bad := range []string{"", "whsec_", "sk_abc", "whsec_!!!!", "whsec_c2hvcnQ="} {
		if _, err := Key(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
