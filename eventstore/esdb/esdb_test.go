package esdb_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/esdb"
	"github.com/linkd/linkd/eventstore/eventstoretest"
)

// TestContract runs the port's contract suite against a real server. The
// suite gives every test its own stream prefix, so a shared server works.
func TestContract(t *testing.T) {
	url := os.Getenv("ESDB_TEST_URL")
	if url == "" {
		t.Skip("set ESDB_TEST_URL=esdb://localhost:2113?tls=false to run the EventStoreDB contract suite (deploy/docker-compose.yml starts one)")
	}
	open := func(t testing.TB) eventstore.Store {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := esdb.Open(ctx, url, esdb.Options{})
		if err != nil {
			t.Fatalf("open %s: %v", url, err)
		}
		return s
	}
	eventstoretest.Run(t, eventstoretest.Harness{
		New: open,
		Reopen: func(t testing.TB, s eventstore.Store) eventstore.Store {
			t.Helper()
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			return open(t)
		},
	})
}

// TestContractFake runs the suite against the in-memory fake of the server
// (fake_test.go): it checks the adapter's own logic on every run, without a
// server, but says nothing of the real server's behaviour.
func TestContractFake(t *testing.T) {
	url := esdb.StartFakeServer(t)
	open := func(t testing.TB) eventstore.Store {
		t.Helper()
		s, err := esdb.Open(context.Background(), url, esdb.Options{})
		if err != nil {
			t.Fatalf("open the fake server: %v", err)
		}
		return s
	}
	eventstoretest.Run(t, eventstoretest.Harness{
		New: open,
		Reopen: func(t testing.TB, s eventstore.Store) eventstore.Store {
			t.Helper()
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			return open(t)
		},
	})
}

// sharedHarness runs the suite of leases and checkpoints on stores opened
// on url, one per process, at linkd's settings: a holder that dies is
// replaced within 10 s.
func sharedHarness(url string) eventstoretest.SharedHarness {
	return eventstoretest.SharedHarness{
		Process: func(t testing.TB) eventstoretest.SharedProcess {
			t.Helper()
			s, err := esdb.Open(context.Background(), url, esdb.Options{})
			if err != nil {
				t.Fatalf("open %s: %v", url, err)
			}
			t.Cleanup(func() { s.Close() })
			return eventstoretest.SharedProcess{Leaser: s, Checkpoints: s, Break: func() { s.Close() }}
		},
		Takeover:        10 * time.Second,
		Handover:        2 * time.Second,
		CheckpointDelay: 1500 * time.Millisecond,
	}
}

// TestShared runs the suite of leases and checkpoints against a real server.
func TestShared(t *testing.T) {
	url := os.Getenv("ESDB_TEST_URL")
	if url == "" {
		t.Skip("set ESDB_TEST_URL=esdb://localhost:2113?tls=false to run the EventStoreDB suites")
	}
	eventstoretest.RunShared(t, sharedHarness(url))
}

// TestSharedFake runs it against the fake of the server.
func TestSharedFake(t *testing.T) {
	eventstoretest.RunShared(t, sharedHarness(esdb.StartFakeServer(t)))
}

// TestSharedOnStoreFake runs the suite on eventstore.Shared over the
// events of an EventStoreDB store (eventstore.StoreRecords), with a short
// TTL: the generic leases and checkpoints on this adapter.
func TestSharedOnStoreFake(t *testing.T) {
	s, err := esdb.Open(context.Background(), esdb.StartFakeServer(t), esdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	eventstoretest.RunSharedOnStore(t, s)
}
