// Package domaintest helps aggregate tests read as "given events, when a
// command, then events or an error". It depends on the standard library and
// the domain package only, like the aggregates it tests.
package domaintest

import (
	"encoding/json"
	"errors"
	"math/rand"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
)

// T0 is the fixed time of scenarios; At(n) is n seconds after it.
var T0 = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

// At returns T0 plus n seconds.
func At(n int) time.Time { return T0.Add(time.Duration(n) * time.Second) }

// Pending is what an aggregate offers after a command.
type Pending interface {
	Pending() []domain.Event
}

// Then checks that the command recorded exactly want, compared by wire name
// and JSON (the stored form).
func Then(t testing.TB, agg Pending, want ...domain.Event) {
	t.Helper()
	got := agg.Pending()
	if len(got) != len(want) {
		t.Fatalf("recorded %d events, want %d:\n got  %s\n want %s", len(got), len(want), describe(got), describe(want))
	}
	for i := range got {
		g, w := wire(t, got[i]), wire(t, want[i])
		if g != w {
			t.Errorf("event %d:\n got  %s\n want %s", i, g, w)
		}
	}
}

// ThenNothing checks that the command recorded no event.
func ThenNothing(t testing.TB, agg Pending) {
	t.Helper()
	if got := agg.Pending(); len(got) != 0 {
		t.Fatalf("recorded %s, want nothing", describe(got))
	}
}

// ThenError checks that err is a domain error of kind with message (any
// message when msg is empty).
func ThenError(t testing.TB, err error, kind domain.Kind, msg string) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T), want a domain error of kind %d", err, err, kind)
	}
	if de.Kind != kind {
		t.Errorf("error kind %d (%q), want %d", de.Kind, de.Message, kind)
	}
	if msg != "" && de.Message != msg {
		t.Errorf("error %q, want %q", de.Message, msg)
	}
}

// Decoded encodes e and decodes it by its wire name, as loading history
// does.
func Decoded(t testing.TB, e domain.Event) domain.Event {
	t.Helper()
	name, data, err := domain.EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	out, err := domain.DecodeEvent(name, data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Given returns events as they come back from the store (encoded and
// decoded), for an aggregate's Load.
func Given(t testing.TB, events ...domain.Event) []domain.Event {
	t.Helper()
	out := make([]domain.Event, len(events))
	for i, e := range events {
		out[i] = Decoded(t, e)
	}
	return out
}

func wire(t testing.TB, e domain.Event) string {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return e.EventType() + " " + string(b)
}

func describe(events []domain.Event) string {
	s := "["
	for i, e := range events {
		if i > 0 {
			s += ", "
		}
		b, _ := json.Marshal(e)
		s += e.EventType() + string(b)
	}
	return s + "]"
}

// JSONString returns a string of one to four pieces that between them
// take every path of encoding/json's quoting (HTML characters, quotes,
// backslashes, control characters, U+2028/U+2029, invalid UTF-8) and
// plain text: for tests that hold a hand-written encoder to encoding/json.
func JSONString(rng *rand.Rand) string {
	parts := []string{"", "a", "Chrome", "cus_42", "<script>", "&amp;", `"quoted"`, `back\slash`, "\n\t\r\b\f", "\x00\x01\x1f",
		"ünïcödé", "日本語", "\u2028\u2029", "\xff\xfe", "emoji 😀", "https://example.com/?a=1&b=2"}
	var s string
	for n := rng.Intn(4); n >= 0; n-- {
		s += parts[rng.Intn(len(parts))]
	}
	return s
}
