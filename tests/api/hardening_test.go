package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// What a request can store is bounded and clean: text is UTF-8 without
// control characters, ids and lists have documented limits, every refusal
// is a 400 in the spec's shape (issue 13).
func TestStoredTextIsBoundedAndClean(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	ws := workspace(s, alice, "Team")
	// hosts is a JSON array of n valid host names of size bytes each.
	hosts := func(n, size int) string {
		hs := make([]string, n)
		for i := range hs {
			h := fmt.Sprintf("h%03d", i)
			for len(h) < size {
				l := min(63, size-len(h)-1)
				h += "." + strings.Repeat("a", l)
			}
			hs[i] = fmt.Sprintf("%q", h)
		}
		return "[" + strings.Join(hs, ",") + "]"
	}
	cases := []struct {
		name, method, path, body, detail string
	}{
		{"invalid UTF-8", "POST", "/v1/workspaces", "{\"name\":\"caf\xe9\"}", "Request body is not valid UTF-8"},
		{"lone surrogate", "POST", "/v1/workspaces", `{"name":"x\ud800"}`, "Request body is not valid UTF-8: a \\u escape is half of a surrogate pair"},
		{"NUL workspace name", "POST", "/v1/workspaces", `{"name":"\u0000"}`, "Control characters are not allowed in 'name'"},
		{"escape sequence in a link name", "POST", "/v1/links", `{"original_url":"https://a.example","name":"\u001b[2J"}`, "Control characters are not allowed in 'name'"},
		{"NUL member", "POST", "/v1/workspaces/" + ws + "/members?user_id=%00", "", "Control characters are not allowed in 'user_id'"},
		{"invalid UTF-8 member", "POST", "/v1/workspaces/" + ws + "/members?user_id=%FF", "", "user_id is not valid UTF-8"},
		{"long member", "POST", "/v1/workspaces/" + ws + "/members?user_id=" + strings.Repeat("u", 256), "", "user_id is too long (at most 255 bytes)"},
		{"control in email", "POST", "/v1/workspaces/" + ws + "/members?user_id=bob&email=b%0A@x.example", "", "Control characters are not allowed in 'email'"},
		{"long key user", "POST", "/v1/api-keys", `{"name":"k","user_id":"` + strings.Repeat("u", 10000) + `"}`, ""},
		{"101 hostnames", "POST", "/v1/api-keys", `{"name":"k","kind":"publishable","allowed_hostnames":` + hosts(101, 20) + `}`, "allowed_hostnames holds at most 100 host names"},
		{"hostname of 254 bytes", "POST", "/v1/api-keys", `{"name":"k","kind":"publishable","allowed_hostnames":` + hosts(1, 254) + `}`, "allowed_hostnames: a host name is at most 253 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.body != "" {
				body = c.body
			}
			r := s.Do(c.method, c.path, alice, body)
			if c.detail == "" {
				// Another user's key is refused before its length matters;
				// either way nothing is stored.
				if r.Status != http.StatusBadRequest && r.Status != http.StatusForbidden {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				return
			}
			wantError(t, r, http.StatusBadRequest, c.detail)
		})
	}
	// Multi-line text, tabs and any printable Unicode stay welcome.
	obj(t, s.Do("POST", "/v1/projects", alice, `{"name":"Café ☕","description":"line one\nline\ttwo","workspace_id":"`+ws+`"}`), http.StatusCreated)
	obj(t, s.Do("POST", "/v1/api-keys", alice, `{"name":"k","kind":"publishable","allowed_hostnames":`+hosts(100, 253)+`}`), http.StatusCreated)
}

// What Go's server refuses before any handler runs is answered in the
// spec's error shape too.
func TestServerLevelErrorsAreJSON(t *testing.T) {
	t.Parallel()
	s := start(t)
	for name, raw := range map[string]string{
		"overflowing Content-Length": "POST /v1/links HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551616\r\n\r\n",
		"two Content-Lengths":        "POST /v1/links HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"a 70 KB header":             "GET /v1/links HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("p", 70<<10) + "\r\n\r\n",
		"negative Content-Length":    "POST /v1/links HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
	} {
		c, err := net.Dial("tcp", s.Host)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, raw)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var body map[string]any
		err = json.NewDecoder(resp.Body).Decode(&body)
		c.Close()
		if resp.StatusCode/100 != 4 || err != nil || body["detail"] == nil || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %v %v %v", name, resp.StatusCode, resp.Header, body, err)
		}
	}
}
