package analytics

import (
	"testing"

	"github.com/linkd/linkd/projections/statstest"
)

// The statistics contract, on a store in a directory of each test's own.
func TestStatsContract(t *testing.T) {
	statstest.Run(t, func(t *testing.T) statstest.Store { return openTest(t, t.TempDir(), Options{}) })
}
