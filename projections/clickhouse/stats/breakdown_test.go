package stats

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linkd/linkd/internal/testsupport/chtest"
)

// dimensionEnum is the type breakdown_values.dimension must have: an Enum8
// of the dimensions' names, numbered from 1 in their order.
func dimensionEnum() string {
	var b strings.Builder
	b.WriteString("Enum8(")
	for i, d := range dimensions {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "'%s' = %d", d.name, i+1)
	}
	b.WriteString(")")
	return b.String()
}

// The projector's dimensions are those the schema's Enum8 names: a new one
// needs a migration that extends it.
func TestDimensionsAreTheEnumOfBreakdownValues(t *testing.T) {
	t.Parallel()
	ctx := chtest.Context(t, time.Minute)
	p := openTest(t, ctx, chtest.DSN(t))
	got := chtest.QueryStrings(t, ctx, p.conn, "SELECT type FROM system.columns WHERE database = ? AND table = ? AND name = 'dimension'", p.Database(), tValues)
	if len(got) != 1 || got[0][0] != dimensionEnum() {
		t.Errorf("%s.dimension is %v, want %s", tValues, got, dimensionEnum())
	}
}
