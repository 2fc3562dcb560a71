package reservation_test

import (
	"errors"
	"testing"

	"github.com/linkd/linkd/domain"
	. "github.com/linkd/linkd/domain/domaintest"
	"github.com/linkd/linkd/domain/reservation"
)

func given(t *testing.T, events ...domain.Event) *reservation.Reservation {
	t.Helper()
	r, err := reservation.Load(Given(t, events...))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var held = &reservation.Reserved{Name: "promo", Owner: "l1", Scope: "w1", At: T0}

func TestReserve(t *testing.T) {
	t.Run("a free name", func(t *testing.T) {
		r := given(t)
		if err := r.Reserve("promo", "l1", "w1", false, T0); err != nil {
			t.Fatal(err)
		}
		Then(t, r, held)
		if v, exists := r.LoadedVersion(); exists || v != 0 {
			t.Errorf("a first claim must expect no stream: %d %v", v, exists)
		}
	})
	t.Run("claimed again by its holder", func(t *testing.T) {
		r := given(t, held)
		if err := r.Reserve("promo", "l1", "w1", false, At(1)); err != nil {
			t.Fatal(err)
		}
		ThenNothing(t, r)
	})
	t.Run("held by another", func(t *testing.T) {
		r := given(t, held)
		err := r.Reserve("promo", "l2", "w2", false, At(1))
		var h *reservation.HeldByOther
		if !errors.As(err, &h) || h.Owner != "l1" || h.Scope != "w1" {
			t.Fatalf("err %v, want HeldByOther l1/w1", err)
		}
		ThenNothing(t, r)
	})
	t.Run("taken over from a holder that does not exist", func(t *testing.T) {
		r := given(t, held)
		if err := r.Reserve("promo", "l2", "w2", true, At(1)); err != nil {
			t.Fatal(err)
		}
		Then(t, r, &reservation.Reserved{Name: "promo", Owner: "l2", Scope: "w2", At: At(1)})
		if v, exists := r.LoadedVersion(); !exists || v != 0 {
			t.Errorf("a take-over must expect version 0: %d %v", v, exists)
		}
	})
	t.Run("free again after release", func(t *testing.T) {
		r := given(t, held, &reservation.Released{Name: "promo", Owner: "l1", At: At(1)})
		if err := r.Reserve("promo", "l2", "", false, At(2)); err != nil {
			t.Fatal(err)
		}
		Then(t, r, &reservation.Reserved{Name: "promo", Owner: "l2", At: At(2)})
	})
}

func TestRelease(t *testing.T) {
	r := given(t, held)
	r.Release("l2", At(1))
	ThenNothing(t, r)
	r.Release("l1", At(1))
	Then(t, r, &reservation.Released{Name: "promo", Owner: "l1", At: At(1)})
	if r.Holding {
		t.Errorf("still holding")
	}
	r.ClearPending()
	r.Release("l1", At(2))
	ThenNothing(t, r)
}

func TestFoldName(t *testing.T) {
	for in, want := range map[string]string{" Sales ": "sales", "SALES": "sales", "Ünïcode": "ünïcode"} {
		if got := reservation.FoldName(in); got != want {
			t.Errorf("FoldName(%q) = %q, want %q", in, got, want)
		}
	}
}
