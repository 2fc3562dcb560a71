// Package ports hands tests TCP ports for servers they start in another
// process (linkd, PostgreSQL, ClickHouse), which bind a moment later.
//
// A port that the kernel chose for a listener on ":0" comes from the
// ephemeral range, which the kernel also gives to every outgoing
// connection: between the check and the child's bind, a connection to
// Kafka or ClickHouse made by a test running in parallel may take it
// ("bind: address already in use"). These ports come from below that range,
// where only listeners that ask for a port by number go, and each is
// handed out once per process.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// Free returns a port that was free a moment ago and lies outside the
// ephemeral range.
func Free() (int, error) {
	lo, hi := span()
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		p := lo + rand.IntN(hi-lo)
		if handed[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		handed[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("ports: no free port in [%d, %d)", lo, hi)
}

// Addr is Free as "127.0.0.1:port".
func Addr() (string, error) {
	p, err := Free()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(p), nil
}

// span is the range ports are drawn from: from 10000 up to the start of
// the kernel's ephemeral range (Linux's default starts at 32768).
func span() (lo, hi int) {
	lo, hi = 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) == 2 {
		if start, err := strconv.Atoi(f[0]); err == nil && start > lo+1000 {
			hi = start
		}
	}
	return lo, hi
}
