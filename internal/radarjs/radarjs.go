// Package radarjs serves radar.js, the tracker script of linkd Radar (web
// analytics), from bytes embedded in the binary. A site includes it as
//
//	<script defer src="https://HOST/radar.js" data-key="svc_pk_..."></script>
//
// and the script POSTs page views, events and identifications to
// /api/v1/radar/collect (see docs/radar-tracker.md for the body it sends).
package radarjs

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

//go:embed radar.js
var script []byte

// The two representations, made once: the script as is, and gzipped.
var (
	gzipped   = compress(script)
	plainETag = etagOf(script, "")
	gzipETag  = etagOf(script, "-gzip")
)

// Script returns the bytes of radar.js (not a copy: do not modify them).
func Script() []byte { return script }

// GzipSize is the size of radar.js gzipped, as served to browsers.
func GzipSize() int { return len(gzipped) }

func compress(b []byte) []byte {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		panic(err)
	}
	if _, err := zw.Write(b); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// etagOf is a strong entity tag: a hash of the script's bytes. The gzipped
// representation has its own tag (suffix "-gzip"), as a strong validator
// must differ between representations whose bytes differ.
func etagOf(b []byte, suffix string) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + suffix + `"`
}

// Handler serves radar.js for GET and HEAD; any other method is answered
// 405 with {"error":"Method not allowed"} and an Allow header.
func Handler() http.Handler { return http.HandlerFunc(serve) }

func serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_, _ = w.Write([]byte(`{"error":"Method not allowed"}` + "\n"))
		return
	}
	body, tag := script, plainETag
	gz := acceptsGzip(r.Header.Values("Accept-Encoding"))
	if gz {
		body, tag = gzipped, gzipETag
	}
	h.Set("Content-Type", "application/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	// The URL has no version in it (every site's snippet names /radar.js),
	// so the script cannot be cached forever: an hour bounds how long a
	// browser keeps running an old script after linkd is upgraded, and the
	// ETag makes the check after that a 304 without a body.
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("Vary", "Accept-Encoding")
	h.Set("ETag", tag)
	if noneMatch(r.Header.Values("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// acceptsGzip reports whether Accept-Encoding lists gzip (or x-gzip)
// without q=0.
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "x-gzip" {
				continue
			}
			return !zeroQ(params)
		}
	}
	return false
}

// zeroQ reports whether the parameters of an Accept-Encoding entry say
// q=0 (q=0, q=0.0, q=0.000).
func zeroQ(params string) bool {
	for _, p := range strings.Split(params, ";") {
		name, val, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		return err == nil && q == 0
	}
	return false
}

// noneMatch reports whether If-None-Match names tag or "*" (weak
// comparison, as RFC 9110 asks for If-None-Match: W/"x" matches "x").
func noneMatch(values []string, tag string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == tag {
				return true
			}
		}
	}
	return false
}
