package projectiontest

import (
	"context"
	"testing"

	"github.com/linkd/linkd/eventstore"
)

// StreamTracker is projections.StreamTracker.
type StreamTracker interface {
	AppliedVersion(ctx context.Context, stream string) (uint64, bool, error)
}

// CheckVersions fails unless p tells, for every stream of events, the last
// version events hold of it.
func CheckVersions(t testing.TB, p StreamTracker, events []eventstore.RecordedEvent) {
	t.Helper()
	want := map[string]uint64{}
	for _, e := range events {
		want[e.Stream] = e.Version
	}
	for stream, v := range want {
		if got, ok, err := p.AppliedVersion(context.Background(), stream); err != nil || !ok || got != v {
			t.Errorf("AppliedVersion(%s) = %d, %v, %v; want %d", stream, got, ok, err, v)
		}
	}
}
