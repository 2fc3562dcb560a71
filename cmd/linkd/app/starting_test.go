package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Before it has caught up, an instance answers everything 503 in the
// shape of each interface, with Retry-After: /healthz says "starting".
func TestStartingAnswers(t *testing.T) {
	for path, field := range map[string]string{"/healthz": "status", "/v1/links": "detail", "/api/events/lead": "error", "/abc": "detail"} {
		w := httptest.NewRecorder()
		starting(w, httptest.NewRequest(http.MethodGet, path, nil))
		var body map[string]string
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v: %s", path, err, w.Body)
		}
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || body[field] == "" || len(body) != 1 {
			t.Errorf("%s: %d %v %v", path, w.Code, w.Header(), body)
		}
	}
	if w := httptest.NewRecorder(); true {
		starting(w, httptest.NewRequest(http.MethodHead, "/healthz", nil))
		if w.Code != http.StatusServiceUnavailable || w.Body.Len() != 0 {
			t.Errorf("HEAD: %d %q", w.Code, w.Body)
		}
	}
}
