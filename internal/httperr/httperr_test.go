package httperr_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/internal/httperr"
)

// A real server behind the listener, sent what Go's server refuses before
// any handler runs.
func TestServerErrorsAreJSON(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/text":
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.Header().Set("Connection", "close")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, "a handler's own 400")
			default:
				http.Redirect(w, r, "https://target.example/", http.StatusFound)
			}
		}),
		MaxHeaderBytes: 4 << 10,
	}
	go srv.Serve(httperr.Listener(ln))
	t.Cleanup(func() { srv.Close() })

	send := func(raw string) *http.Response {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	cases := []struct {
		name, raw string
		status    int
		detail    string
	}{
		{"overflowing Content-Length", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400, "Bad Request"},
		{"negative Content-Length", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400, "Bad Request"},
		{"conflicting Content-Length", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "Bad Request"},
		{"no Host", "GET /x HTTP/1.1\r\n\r\n", 400, "Bad Request: missing required Host header"},
		{"malformed request line", "NONSENSE\r\n\r\n", 400, "Bad Request"},
		{"header block too large", "GET /x HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 70<<10) + "\r\n\r\n", 431, "Request Header Fields Too Large"},
		{"unknown transfer encoding", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "Unsupported transfer encoding"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := send(c.raw)
			defer resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var body map[string]string
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if !strings.HasPrefix(body["detail"], c.detail) || len(body) != 1 {
				t.Errorf("body %v, want detail starting %q", body, c.detail)
			}
		})
	}
	// What handlers answer passes untouched, a plain-text 400 included.
	if resp := send("GET /r HTTP/1.1\r\nHost: a\r\n\r\n"); resp.StatusCode != 302 || resp.Header.Get("Location") != "https://target.example/" {
		t.Errorf("redirect changed: %d %v", resp.StatusCode, resp.Header)
	}
	resp := send("GET /text HTTP/1.1\r\nHost: a\r\n\r\n")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || string(b) != "a handler's own 400" || resp.Header.Get("Date") == "" {
		t.Errorf("handler's answer changed: %d %q %v", resp.StatusCode, b, resp.Header)
	}
}
