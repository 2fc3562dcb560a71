package core_test

import (
	"context"
	"fmt"
	"github.com/linkd/linkd/projections"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/projections/core"
	"github.com/linkd/linkd/projections/projectiontest"
)

// BenchmarkApplySales applies sales of random customers among 100,000 in
// batches of 50 events (what the in-process runner delivers under the sale
// load of bench/sale.sh): the core projection's cost per sale.
//
//	go test -run '^$' -bench ApplySales -benchtime 20000x ./projections/core/
func BenchmarkApplySales(b *testing.B) {
	const customers = 100_000
	s, err := core.Open(filepath.Join(b.TempDir(), "core.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var l projectiontest.Log
	for i := range customers {
		l.Add(b, conversion.CustomerStream("w1", fmt.Sprint(i)), &conversion.CustomerCreated{CustomerID: fmt.Sprintf("c%d", i),
			WorkspaceID: "w1", ExternalID: fmt.Sprint(i), At: t0})
		if len(l.Events) == 4096 {
			if err := s.Apply(ctx, projections.Envelopes(l.Events)); err != nil {
				b.Fatal(err)
			}
			l.Events = l.Events[:0]
		}
	}
	if err := s.Apply(ctx, projections.Envelopes(l.Events)); err != nil {
		b.Fatal(err)
	}
	l.Events = l.Events[:0]
	for i := range b.N {
		c := rand.IntN(customers)
		l.Add(b, conversion.CustomerStream("w1", fmt.Sprint(c)), &conversion.SaleTracked{ConversionID: fmt.Sprintf("v%d", i), CustomerID: fmt.Sprintf("c%d", c),
			Click:     conversion.Click{ClickID: fmt.Sprintf("k%d", rand.IntN(1<<30)), LinkID: "l1", WorkspaceID: "w1", ClickedAt: t0},
			EventName: "Purchase", AmountMinor: 1999, Currency: "usd", Timestamp: t0})
	}
	b.ResetTimer()
	for i := 0; i < len(l.Events); i += 50 {
		if err := s.Apply(ctx, projections.Envelopes(l.Events[i:min(i+50, len(l.Events))])); err != nil {
			b.Fatal(err)
		}
	}
}
