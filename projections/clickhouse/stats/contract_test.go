package stats

import (
	"testing"
	"time"

	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/projections/statstest"
)

// The statistics contract, on a database of each test's own (on the test
// server, or on chDB: see TestMain).
func TestStatsContract(t *testing.T) {
	statstest.Run(t, func(t *testing.T) statstest.Store {
		return openTest(t, chtest.Context(t, 2*time.Minute), chtest.DSN(t))
	})
}
