package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
)

// Fuzz tests of request decoding. Their seed corpora run in every `go
// test`; `go test -fuzz FuzzDecodeLinkBody ./api` explores further.
//
// Properties: decoding never panics; a refusal is always a domain error of
// kind invalid (400) or too large (413) whose text is meant for callers,
// not Go internals; what decodes also survives validation without a panic.

var decodeSeeds = []string{
	``, `{}`, `[]`, `null`, `"x"`, `{`, `{"original_url": "https://example.com"}`,
	`{"original_url": "https://example.com", "custom_code": "abc", "name": "n", "has_public_stat": true}`,
	`{"original_url": 1}`, `{"original_url": null}`, `{"original_url": ["x"]}`,
	`{"original_url": "https://e.com", "expiration_date": "2030-01-01"}`,
	`{"original_url": "https://e.com", "expiration_date": "2030-01-01T10:00:00+02:00"}`,
	`{"original_url": "https://e.com", "expiration_date": 5}`,
	`{"original_url": "https://e.com", "expiration_click_count": 1e3}`,
	`{"original_url": "https://e.com", "expiration_click_count": -1}`,
	`{"original_url": "https://e.com", "metadata": {"title": "t", "image": ""}}`,
	`{"original_url": "https://e.com", "metadata": {"title": 1}}`,
	`{"original_url": "https://e.com", "qr_code_options": {"size": 100, "color": "#abc", "error_correction_level": "q"}}`,
	`{"original_url": "https://e.com", "qr_code_options": {"size": 1e99}}`,
	`{"original_url": "https://e.com", "excluded_countries": [{"code": "us", "suggested": false}]}`,
	`{"original_url": "https://e.com", "excluded_countries": [null, {}]}`,
	`{"is_archived": null}`, `{"is_archived": true, "name": null, "project_id": null}`,
	`{"code": "x y"}`, `{"password": null}`, `{"expiration_date": null}`,
	`{"original_url": "https://e.com"} {}`, `{"original_url": "https://e.com"}]`,
	"{\"name\": \"\xff\"}", `{"name": "\ud800"}`, `{"a": {"b": {"c": [[[[[[]]]]]]}}}`,
	`{"ios_link": "fb://x", "android_link": "javascript:1"}`,
}

func fuzzRequest(body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/links", bytes.NewReader(body))
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, MaxBodyBytes+1)
	return r
}

// checkRefusal fails when err is not a caller-facing refusal.
func checkRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("%s: %T %v is not a domain error (it would answer 500)", what, err, err)
	}
	if de.Kind != domain.KindInvalid && de.Kind != domain.KindTooLarge {
		t.Fatalf("%s: kind %d, want invalid or too large: %v", what, de.Kind, de)
	}
	if de.Message == "" {
		t.Fatalf("%s: empty message", what)
	}
	for _, leak := range []string{"json:", "Go value", "Go struct", "api.", "link.", "domain.", "goroutine"} {
		if strings.Contains(de.Message, leak) {
			t.Fatalf("%s: message %q shows internals (%q)", what, de.Message, leak)
		}
	}
}

func FuzzDecodeLinkBody(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var b linkBody
		err := decodeBody(fuzzRequest(body), &b)
		checkRefusal(t, "decode", err)
		if err != nil {
			return
		}
		c, err := b.command(commands.Actor{UserID: "u"})
		checkRefusal(t, "command", err)
		if err != nil {
			return
		}
		attrs := c.Attributes
		attrs.WorkspaceID = "w"
		checkRefusal(t, "validate", link.ValidateAttributes(&attrs))
		if c.CustomCode != "" {
			checkRefusal(t, "code", link.ValidateCode(c.CustomCode))
		}
	})
}

func FuzzDecodeLinkUpdateBody(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var b linkUpdateBody
		err := decodeBody(fuzzRequest(body), &b)
		checkRefusal(t, "decode", err)
		if err != nil {
			return
		}
		c, err := b.command(commands.Actor{UserID: "u"}, "l")
		checkRefusal(t, "command", err)
		if err != nil {
			return
		}
		// Decoding is deterministic: the same bytes give the same patch.
		var again linkUpdateBody
		if err := decodeBody(fuzzRequest(body), &again); err != nil {
			t.Fatalf("second decode failed: %v", err)
		}
		c2, _ := again.command(commands.Actor{UserID: "u"}, "l")
		j1, _ := jsonOf(c.Patch)
		j2, _ := jsonOf(c2.Patch)
		if j1 != j2 {
			t.Fatalf("decode is not deterministic:\n%s\n%s", j1, j2)
		}
		// Validation normalises in place; it must not panic.
		checkRefusal(t, "validate", link.ValidatePatch(&c.Patch))
	})
}

// FuzzDecodeOtherBodies covers the bodies of workspaces, projects, domains
// and API keys.
func FuzzDecodeOtherBodies(f *testing.F) {
	for _, s := range append(decodeSeeds,
		`{"name": "W", "description": "d"}`, `{"name": null}`, `{"color": "#abc", "workspace_id": "w"}`,
		`{"domain": "a.example.com"}`, `{"access": "limited", "permissions": {"links": "read"}}`,
		`{"allowed_hostnames": ["a.com", 1]}`, `{"permissions": {"links": 1}}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&workspaceBody{}, &projectBody{}, &domainBody{}, &apiKeyBody{}} {
			checkRefusal(t, "decode", decodeBody(fuzzRequest(body), v))
		}
	})
}

func jsonOf(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// TestDecodeSizeLimit: one byte over the limit is 413, the limit itself is
// read.
func TestDecodeSizeLimit(t *testing.T) {
	pad := func(n int) []byte {
		b := []byte(`{"name": "`)
		b = append(b, bytes.Repeat([]byte("x"), n-len(b)-2)...)
		return append(b, '"', '}')
	}
	var b workspaceBody
	if err := decodeBody(fuzzRequest(pad(MaxBodyBytes)), &b); err != nil {
		t.Fatalf("a body of exactly the limit: %v", err)
	}
	err := decodeBody(fuzzRequest(pad(MaxBodyBytes+1)), &b)
	if domain.KindOf(err) != domain.KindTooLarge {
		t.Fatalf("one byte over: %v", err)
	}
}
