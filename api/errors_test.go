package api

import (
	"net/http/httptest"
	"testing"
)

// writeOK writes what writeJSON writes for {"ok": true}.
func TestWriteOKIsWriteJSON(t *testing.T) {
	a, b := httptest.NewRecorder(), httptest.NewRecorder()
	writeOK(a, 202)
	writeJSON(b, 202, map[string]bool{"ok": true})
	if a.Code != b.Code || a.Body.String() != b.Body.String() || a.Header().Get("Content-Type") != b.Header().Get("Content-Type") {
		t.Fatalf("writeOK: %d %q %q; writeJSON: %d %q %q", a.Code, a.Body, a.Header(), b.Code, b.Body, b.Header())
	}
}
