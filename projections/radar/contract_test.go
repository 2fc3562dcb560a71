package radar_test

import (
	"testing"

	"github.com/linkd/linkd/projections/radartest"
)

// The Radar reports' contract, shared with ClickHouse.
func TestRadarContract(t *testing.T) {
	radartest.Run(t, func(t *testing.T) radartest.Store { return open(t) })
}
