package embedded_test

import (
	"testing"

	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/eventstore/eventstoretest"
)

// TestShared runs the suite of leases and checkpoints on eventstore.Shared
// over the embedded store, processes being Shared of their own on one
// store, with a short TTL: the generic leases and checkpoints that ADR 0109
// describes, not something the embedded store offers (it has one process).
func TestShared(t *testing.T) {
	s, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	eventstoretest.RunSharedOnStore(t, s)
}
