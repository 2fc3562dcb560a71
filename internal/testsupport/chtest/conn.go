package chtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Conn opens a connection pool to the server of dsn (on chDB, to the engine)
// whose current database is database ("" for none), as an analyst's would
// be, and closes it when t ends.
func Conn(t testing.TB, dsn, database string) driver.Conn {
	t.Helper()
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	opts.Auth.Database = database
	conn, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// QueryStrings runs q and renders every value as a string (dates as
// YYYY-MM-DD, times as YYYY-MM-DD hh:mm:ss).
func QueryStrings(t testing.TB, ctx context.Context, conn driver.Conn, q string, args ...any) [][]string {
	t.Helper()
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	var out [][]string
	for rows.Next() {
		dest := make([]any, len(types))
		for i, ct := range types {
			dest[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(dest))
		for i, d := range dest {
			v := reflect.ValueOf(d).Elem().Interface()
			switch x := v.(type) {
			case time.Time:
				if types[i].DatabaseTypeName() == "Date" {
					row[i] = x.UTC().Format(time.DateOnly)
				} else {
					row[i] = x.UTC().Format(time.DateTime)
				}
			default:
				row[i] = fmt.Sprint(x)
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ServerPID finds the clickhouse-server process of dsn (for benchmarks that
// measure its CPU time): the one whose config file names the DSN's port, or
// the only one running; else 0.
func ServerPID(dsn string) int {
	port := ""
	if opts, err := clickhouse.ParseDSN(dsn); err == nil && len(opts.Addr) > 0 {
		if _, p, err := net.SplitHostPort(opts.Addr[0]); err == nil {
			port = p
		}
	}
	ents, _ := os.ReadDir("/proc")
	var found []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), "clickhouse-server") {
			continue
		}
		found = append(found, pid)
		for _, arg := range strings.Split(string(cmd), "\x00") {
			if cfg, ok := strings.CutPrefix(arg, "--config-file="); ok && port != "" {
				if data, err := os.ReadFile(cfg); err == nil && strings.Contains(string(data), "<tcp_port>"+port+"</tcp_port>") {
					return pid
				}
			}
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return 0
}

// ServerCPU is the CPU time of process pid (all threads), from /proc; 0 when
// pid is 0 or unknown.
func ServerCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// fields after the command: state is f[0]; utime, stime are f[11], f[12]
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond // USER_HZ = 100
}

// Context bounds a test: an INSERT that 18.16 does not like can hang until
// the deadline.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Database is the name of the database dsn names.
func Database(t testing.TB, dsn string) string {
	t.Helper()
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return opts.Auth.Database
}
