package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
)

// TestTrackingCookie: the svc_tid cookie is what http.SetCookie writes.
func TestTrackingCookie(t *testing.T) {
	for _, id := range []string{"0190a3c2-7d1e-7abc-8def-0123456789ab", "plain", "with space", "a,b", `q"uote`, ""} {
		for _, secure := range []bool{false, true} {
			w := httptest.NewRecorder()
			http.SetCookie(w, &http.Cookie{
				Name: "svc_tid", Value: id, Path: "/", MaxAge: int(click.TrackingTTL / time.Second),
				Secure: secure, SameSite: http.SameSiteLaxMode,
			})
			if got, want := trackingCookie(id, secure), w.Header().Get("Set-Cookie"); got != want {
				t.Errorf("trackingCookie(%q, %v) = %q, want %q", id, secure, got, want)
			}
		}
	}
}
