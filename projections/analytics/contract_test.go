package analytics

import (
	"testing"
	"time"

	"github.com/linkd/linkd/projections/statstest"
)

// The statistics contract, on a store in a directory of each test's own.
func TestStatsContract(t *testing.T) {
	statstest.Run(t, func(t *testing.T) statstest.Store { return openTest(t, t.TempDir(), Options{}) })
}

// The contract again with every delta waiting in memory until a query
// reads (FlushEvery): queries see what waits.
func TestStatsContractWrittenBehind(t *testing.T) {
	statstest.Run(t, func(t *testing.T) statstest.Store {
		return openTest(t, t.TempDir(), Options{NoSync: true, FlushEvery: time.Hour})
	})
}
