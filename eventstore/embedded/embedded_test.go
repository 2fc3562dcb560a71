package embedded_test

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/eventstore/eventstoretest"
)

func TestContract(t *testing.T) {
	for _, d := range []embedded.Durability{embedded.SyncInterval, embedded.SyncAlways} {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			eventstoretest.Run(t, harness(d))
		})
	}
}

// TestContractCollidingHashes: the contract holds when stream names share
// their hash in the index (every stream with a third of the others).
func TestContractCollidingHashes(t *testing.T) {
	eventstoretest.Run(t, harnessWith(func(o embedded.Options) embedded.Options {
		return embedded.WithCollidingHashes(o)
	}))
}

// harness opens each test's store in a directory of its own.
func harness(d embedded.Durability) eventstoretest.Harness {
	return harnessWith(func(o embedded.Options) embedded.Options {
		o.Durability = d
		return o
	})
}

// harnessWith is harness with options of its own.
func harnessWith(options func(embedded.Options) embedded.Options) eventstoretest.Harness {
	var mu sync.Mutex
	dirs := map[eventstore.Store]string{}
	open := func(t testing.TB, dir string) eventstore.Store {
		t.Helper()
		s, err := embedded.Open(options(embedded.Options{Dir: dir, Logger: quietLogger()}))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		mu.Lock()
		dirs[s] = dir
		mu.Unlock()
		return s
	}
	return eventstoretest.Harness{
		New: func(t testing.TB) eventstore.Store { return open(t, t.TempDir()) },
		Reopen: func(t testing.TB, s eventstore.Store) eventstore.Store {
			t.Helper()
			mu.Lock()
			dir := dirs[s]
			delete(dirs, s)
			mu.Unlock()
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return open(t, dir)
		},
	}
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type testWriter struct{}

func (testWriter) Write(p []byte) (int, error) { return len(p), nil }
