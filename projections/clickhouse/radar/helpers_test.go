package radar

import (
	"context"
	"testing"
	"time"

	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/projections/clickhouse/stats"
)

// TestMain runs the tests on the ClickHouse server of chtest, or on current
// ClickHouse in process when LINKD_TEST_CHDB names libchdb.so (`make test`
// does both).
func TestMain(m *testing.M) {
	chtest.UseChDB()
	chtest.Main(m)
}

// radarPair is the Radar projector with the statistics projection that
// writes the sales it joins (as linkd runs them).
type radarPair struct {
	*Projection
	stats *stats.Projection
}

func (p radarPair) Apply(ctx context.Context, events []projections.Event) error {
	if err := p.stats.Apply(ctx, events); err != nil {
		return err
	}
	return p.Projection.Apply(ctx, events)
}

func openRadarTest(t testing.TB, dsn string) radarPair {
	t.Helper()
	ctx := chtest.Context(t, 2*time.Minute)
	s, err := stats.Open(ctx, dsn, stats.Options{Dial: chtest.Open})
	if err != nil {
		t.Fatalf("stats.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	r, err := New(ctx, s.DB())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return radarPair{Projection: r, stats: s}
}
