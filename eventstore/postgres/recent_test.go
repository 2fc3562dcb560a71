package postgres

import (
	"testing"

	"github.com/linkd/linkd/eventstore"
)

// recentEvents are events at positions from..to of the streams given in
// turn.
func recentEvents(from, to int, streams ...string) []eventstore.RecordedEvent {
	var out []eventstore.RecordedEvent
	for p := from; p <= to; p++ {
		out = append(out, eventstore.RecordedEvent{Stream: streams[(p-from)%len(streams)], Position: position(int64(p))})
	}
	return out
}

// The heads a recentLog keeps (ADR 0123): a seed is taken only when every
// event after its snapshot was or will be taken in; after it, every event
// taken in moves its category's head, and a gap is refused.
func TestRecentLogHeads(t *testing.T) {
	var l recentLog
	if !l.add(recentEvents(10, 12, "link-a", "link-a", "clicks-b")) {
		t.Fatal("the first events refused")
	}
	// A snapshot older than memory's first event: positions 6-9 were
	// never taken in, so their categories' heads would be missing.
	if l.seed(5, []string{"link"}, []int64{4}) || l.seeded() {
		t.Fatal("seeded from a snapshot that memory does not follow")
	}
	// A snapshot at 11: 12 (clicks) was taken in after it.
	if !l.seed(11, []string{"link", "domain"}, []int64{11, 3}) {
		t.Fatal("seed at 11 refused")
	}
	for _, c := range []struct {
		cats []string
		want int64
	}{{[]string{"link"}, 11}, {[]string{"clicks"}, 12}, {[]string{"domain", "clicks"}, 12}, {[]string{"nothing"}, 0}} {
		if got := l.head(c.cats); got != c.want {
			t.Errorf("head of %v = %d, want %d", c.cats, got, c.want)
		}
	}
	if l.add(recentEvents(14, 14, "domain-x")) {
		t.Fatal("a gap taken in")
	}
	if !l.add(recentEvents(11, 14, "domain-x")) { // 11 and 12 again, read by a fill
		t.Fatal("the events after memory refused")
	}
	if got := l.head([]string{"domain"}); got != 14 {
		t.Errorf("domain's head %d, want 14", got)
	}
}

// A store's memory that is empty when seeded starts at the snapshot: the
// next events must follow it; one that trimmed events taken in after the
// snapshot refuses the seed.
func TestRecentLogSeedEmptyAndTrimmed(t *testing.T) {
	var l recentLog
	if !l.seed(40, []string{"link"}, []int64{40}) {
		t.Fatal("seed of an empty memory refused")
	}
	if end, ok := l.end(); !ok || end != 40 {
		t.Fatalf("end %d %v, want 40", end, ok)
	}
	if l.add(recentEvents(45, 46, "link-a")) {
		t.Fatal("events after a gap from the seed taken in")
	}
	if !l.add(recentEvents(41, 46, "clicks-a")) || l.head([]string{"clicks"}) != 46 {
		t.Fatalf("clicks' head %d, want 46", l.head([]string{"clicks"}))
	}

	var m recentLog
	for p := 1; p <= 3*recentKeep; p += 1000 {
		m.add(recentEvents(p, min(p+999, 3*recentKeep), "clicks-a"))
	}
	if first := int(m.events[0].Position.Commit); first <= 100 {
		t.Fatalf("memory kept from %d: the test needs it trimmed", first)
	}
	if m.seed(100, []string{"clicks"}, []int64{100}) {
		t.Fatal("seeded although events taken in after the snapshot are no longer kept")
	}
	if !m.seed(int64(3*recentKeep), []string{"clicks"}, []int64{int64(3 * recentKeep)}) {
		t.Fatalf("seed at the end (%d) refused", 3*recentKeep)
	}
}
