package postgres

import (
	"fmt"
	"sync"
	"testing"

	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// The first value said under a name is the deployment's: a store saying
// another learns the first, and of many stores saying theirs at once
// every one learns the same.
func TestAgree(t *testing.T) {
	dsn := pgtest.DSN(t)
	a := openT(t, dsn, Options{})
	b := openT(t, dsn, Options{})
	ctx := t.Context()
	if got, err := a.Agree(ctx, "fingerprint", "aaa"); err != nil || got != "aaa" {
		t.Fatalf("first: %q %v, want aaa", got, err)
	}
	if got, err := b.Agree(ctx, "fingerprint", "bbb"); err != nil || got != "aaa" {
		t.Fatalf("second: %q %v, want the first's aaa", got, err)
	}
	if got, err := a.Agree(ctx, "fingerprint", "aaa"); err != nil || got != "aaa" {
		t.Fatalf("first again: %q %v, want aaa", got, err)
	}

	stores := []*Store{a, b}
	for round := range 20 {
		name := fmt.Sprintf("raced-%d", round)
		got := make([]string, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() {
				v, err := stores[i%2].Agree(ctx, name, fmt.Sprint(i))
				if err != nil {
					t.Error(err)
				}
				got[i] = v
			})
		}
		wg.Wait()
		for i, v := range got {
			if v == "" || v != got[0] {
				t.Fatalf("round %d: store %d learnt %q, store 0 %q", round, i, v, got[0])
			}
		}
	}
}
