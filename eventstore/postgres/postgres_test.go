package postgres

import (
	"context"
	"os"
	"testing"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/eventstoretest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchC != nil {
		benchC.Remove()
	}
	pgtest.Stop()
	os.Exit(code)
}

// openT opens a store on dsn, closed when t ends.
func openT(t testing.TB, dsn string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	dsns := map[eventstore.Store]string{}
	eventstoretest.Run(t, eventstoretest.Harness{
		New: func(t testing.TB) eventstore.Store {
			dsn := pgtest.DSN(t)
			s := openT(t, dsn, Options{})
			dsns[s] = dsn
			return s
		},
		Reopen: func(t testing.TB, s eventstore.Store) eventstore.Store {
			dsn := dsns[s]
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			s2 := openT(t, dsn, Options{})
			dsns[s2] = dsn
			return s2
		},
	})
}
