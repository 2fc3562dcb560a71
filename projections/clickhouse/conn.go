package clickhouse

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// boundWrites makes every connection of opts bound each write to the server
// by timeout (or by the deadline the driver set, when earlier).
//
// Why: an INSERT into clicks goes out in several blocks (see clickChunk),
// and clickhouse-go v2.50 watches the context only in batch.Send, not in
// batch.Flush, whose writes have no deadline: a server that stops reading
// would block Apply for ever instead of failing it after InsertTimeout.
func boundWrites(opts *clickhouse.Options, timeout time.Duration) {
	if opts.DialContext != nil {
		return // the caller's dialer
	}
	tlsConfig, dialTimeout := opts.TLS, opts.DialTimeout
	opts.DialContext = func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: dialTimeout}
		raw, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		var c net.Conn = raw
		if tlsConfig != nil {
			cfg := tlsConfig
			if cfg.ServerName == "" {
				host, _, err := net.SplitHostPort(addr)
				if err != nil {
					host = addr
				}
				cfg = cfg.Clone()
				cfg.ServerName = host
			}
			tc := tls.Client(raw, cfg)
			hctx, cancel := context.WithTimeout(ctx, dialTimeout)
			err := tc.HandshakeContext(hctx)
			cancel()
			if err != nil {
				raw.Close()
				return nil, err
			}
			c = tc
		}
		return &writeBoundConn{Conn: c, timeout: timeout}, nil
	}
}

type writeBoundConn struct {
	net.Conn
	timeout time.Duration

	mu       sync.Mutex
	deadline time.Time // the write deadline the driver set; zero: none
}

func (c *writeBoundConn) SetDeadline(t time.Time) error {
	c.setDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *writeBoundConn) SetWriteDeadline(t time.Time) error {
	c.setDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *writeBoundConn) setDeadline(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
}

func (c *writeBoundConn) Write(b []byte) (int, error) {
	d := time.Now().Add(c.timeout)
	c.mu.Lock()
	if !c.deadline.IsZero() && c.deadline.Before(d) {
		d = c.deadline
	}
	c.mu.Unlock()
	if err := c.Conn.SetWriteDeadline(d); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
