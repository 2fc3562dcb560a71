package radarjs

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func get(t *testing.T, method string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, "/radar.js", nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec
}

func TestServesScript(t *testing.T) {
	rec := get(t, http.MethodGet, nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	h := rec.Header()
	if got := h.Get("Content-Type"); got != "application/javascript; charset=utf-8" {
		t.Errorf("Content-Type %q", got)
	}
	if got := h.Get("Cache-Control"); got != "public, max-age=3600" {
		t.Errorf("Cache-Control %q", got)
	}
	if got := h.Get("Vary"); got != "Accept-Encoding" {
		t.Errorf("Vary %q", got)
	}
	if got := h.Get("Content-Encoding"); got != "" {
		t.Errorf("Content-Encoding %q without Accept-Encoding", got)
	}
	if got := h.Get("Content-Length"); got != strconv.Itoa(len(Script())) {
		t.Errorf("Content-Length %q, script is %d bytes", got, len(Script()))
	}
	if !bytes.Equal(rec.Body.Bytes(), Script()) {
		t.Error("body is not Script()")
	}
	etag := h.Get("ETag")
	if len(etag) < 10 || !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) {
		t.Fatalf("ETag %q: want a strong, quoted tag", etag)
	}
	if again := get(t, http.MethodGet, nil).Header().Get("ETag"); again != etag {
		t.Errorf("ETag changed between requests: %q then %q", etag, again)
	}
	if !bytes.HasPrefix(Script(), []byte("// linkd Radar")) {
		t.Errorf("script does not start with its comment naming linkd Radar: %.40q", Script())
	}
}

func TestNotModified(t *testing.T) {
	for _, enc := range []string{"", "gzip"} {
		etag := get(t, http.MethodGet, map[string]string{"Accept-Encoding": enc}).Header().Get("ETag")
		for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
			rec := get(t, http.MethodGet, map[string]string{"Accept-Encoding": enc, "If-None-Match": inm})
			if rec.Code != http.StatusNotModified {
				t.Errorf("Accept-Encoding %q, If-None-Match %q: status %d, want 304", enc, inm, rec.Code)
			}
			if rec.Body.Len() != 0 {
				t.Errorf("304 with a body of %d bytes", rec.Body.Len())
			}
			if got := rec.Header().Get("ETag"); got != etag {
				t.Errorf("304 ETag %q, want %q", got, etag)
			}
		}
		rec := get(t, http.MethodGet, map[string]string{"Accept-Encoding": enc, "If-None-Match": `"stale"`})
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Errorf("Accept-Encoding %q, stale If-None-Match: status %d, %d bytes", enc, rec.Code, rec.Body.Len())
		}
	}
}

func TestGzip(t *testing.T) {
	for _, ae := range []string{"gzip", "gzip, deflate, br, zstd", "br;q=1.0, GZIP;q=0.5"} {
		rec := get(t, http.MethodGet, map[string]string{"Accept-Encoding": ae})
		if got := rec.Header().Get("Content-Encoding"); got != "gzip" {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q", ae, got)
		}
		if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(GzipSize()) {
			t.Errorf("Content-Length %q, GzipSize %d", got, GzipSize())
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain, Script()) {
			t.Error("gunzipped body is not Script()")
		}
		if rec.Header().Get("ETag") == get(t, http.MethodGet, nil).Header().Get("ETag") {
			t.Error("gzip and identity share one strong ETag")
		}
	}
	for _, ae := range []string{"", "br", "gzip;q=0", "deflate, gzip; q=0.0"} {
		rec := get(t, http.MethodGet, map[string]string{"Accept-Encoding": ae})
		if got := rec.Header().Get("Content-Encoding"); got != "" || !bytes.Equal(rec.Body.Bytes(), Script()) {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", ae, got)
		}
	}
}

func TestHead(t *testing.T) {
	for _, ae := range []string{"", "gzip"} {
		rec := get(t, http.MethodHead, map[string]string{"Accept-Encoding": ae})
		full := get(t, http.MethodGet, map[string]string{"Accept-Encoding": ae})
		if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
			t.Errorf("HEAD: status %d, %d bytes of body", rec.Code, rec.Body.Len())
		}
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding", "ETag", "Cache-Control", "Vary"} {
			if rec.Header().Get(k) != full.Header().Get(k) {
				t.Errorf("HEAD %s %q, GET %q", k, rec.Header().Get(k), full.Header().Get(k))
			}
		}
	}
}

func TestMethodNotAllowed(t *testing.T) {
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions} {
		rec := get(t, m, nil)
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d", m, rec.Code)
		}
		if got := rec.Header().Get("Allow"); got != "GET, HEAD" {
			t.Errorf("%s: Allow %q", m, got)
		}
		if got := rec.Header().Get("Content-Type"); got != "application/json" {
			t.Errorf("%s: Content-Type %q", m, got)
		}
		var body map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body) != 1 || body["error"] != "Method not allowed" {
			t.Errorf("%s: body %q (%v)", m, rec.Body, err)
		}
	}
}

// The script is loaded by every page of every site that uses Radar.
func TestSize(t *testing.T) {
	t.Logf("radar.js: %d bytes, %d gzipped", len(Script()), GzipSize())
	if GzipSize() > 1500 {
		t.Errorf("radar.js is %d bytes gzipped, over the limit of 1500", GzipSize())
	}
}
