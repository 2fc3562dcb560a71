// Package httperr gives the answers that Go's HTTP server writes before
// any handler runs (a malformed request line, a bad or conflicting
// Content-Length, a header block over the limit, an unknown transfer
// encoding) the interface's error shape: a JSON body {"detail": "..."}
// instead of net/http's plain text.
//
// net/http offers no hook for these; it writes them straight to the
// connection, as one write of a fixed form: a status line, then exactly
// "Content-Type: text/plain; charset=utf-8", "Connection: close", no Date
// header, and the text. Listener wraps connections and rewrites writes of
// that form; every response a handler makes carries a Date header and is
// never of that form, so it passes through untouched.
package httperr

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
)

// Listener wraps ln so that the server's own error answers are JSON.
func Listener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return conn{c}, nil
}

type conn struct{ net.Conn }

// NetConn returns the connection c wraps (deadline.ConnContext finds its
// own through it).
func (c conn) NetConn() net.Conn { return c.Conn }

const errorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c conn) Write(p []byte) (int, error) {
	if out, ok := Rewrite(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// Rewrite turns one of net/http's own error answers into the JSON shape;
// ok is false for anything else.
func Rewrite(p []byte) ([]byte, bool) {
	// "HTTP/1.1 4xx" or "5xx": a redirect or a 200 is ruled out at once.
	if len(p) < 13 || (p[9] != '4' && p[9] != '5') || !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return nil, false
	}
	i := bytes.Index(p, []byte(errorHeaders))
	if i < 0 || bytes.Contains(p[:i], []byte("\r\n")) {
		return nil, false // not a bare status line followed by exactly these headers
	}
	code, err := strconv.Atoi(string(p[9:12]))
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}
	text := string(p[i+len(errorHeaders):])
	// The text repeats the status: "400 Bad Request: invalid Content-Length".
	if len(text) > 4 && text[:3] == string(p[9:12]) && text[3] == ' ' {
		text = text[4:]
	}
	if text == "" {
		text = http.StatusText(code)
	}
	body, _ := json.Marshal(map[string]string{"detail": text})
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(code))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(code))
	b.WriteString("\r\nContent-Type: application/json\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\nConnection: close\r\n\r\n")
	b.Write(body)
	return b.Bytes(), true
}
