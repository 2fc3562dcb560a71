package commands_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
)

// TestRecordClickHandsOverItsValue: a recorded click reaches the store's
// live subscribers with its value (eventstore.RecordedEvent.Value) when
// decoding its JSON gives that value back, and without one when it does
// not (a user agent's invalid UTF-8 becomes U+FFFD in JSON).
func TestRecordClickHandsOverItsValue(t *testing.T) {
	store, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sub, err := store.SubscribeAll(t.Context(), eventstore.Start, eventstore.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	h := commands.RecordClickHandler{Deps: &commands.Deps{Store: store}}
	for _, browser := range []string{"Chrome", "Chr\xffme"} {
		c := click.Recorded{LinkID: "019ca8dc-ce56-7000-8000-000000000001", WorkspaceID: "w", Code: "b1",
			Source: click.SourceRedirect, Browser: browser, TrackingID: "019ca8dc-ce56-7000-8000-00000000a1b2"}
		rec, _, err := h.Handle(t.Context(), commands.RecordClick{Click: c})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := sub.Recv(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		v, ok := ev.Value.(*click.Recorded)
		if browser != "Chrome" {
			if ev.Value != nil {
				t.Errorf("a click whose JSON is not exact has a value: %+v", ev.Value)
			}
			continue
		}
		if !ok {
			t.Fatalf("the click has no value: %#v", ev.Value)
		}
		var back click.Recorded
		if err := json.Unmarshal(ev.Data, &back); err != nil {
			t.Fatal(err)
		}
		if back.ClickID != v.ClickID || back.ClickID != rec.ClickID || !back.Timestamp.Equal(v.Timestamp) ||
			!back.TrackingExpiresAt.Equal(*v.TrackingExpiresAt) || back.Browser != v.Browser {
			t.Errorf("the value %+v is not what the data decodes to, %+v", v, back)
		}
	}
}

// BenchmarkRecordClick appends clicks as redirects do, from many
// goroutines, to 1,000 links of the embedded store: the encoding and the
// append, with their allocations.
func BenchmarkRecordClick(b *testing.B) {
	store, err := embedded.Open(embedded.Options{Dir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	h := commands.RecordClickHandler{Deps: &commands.Deps{Store: store}}
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			c := click.Recorded{
				LinkID: fmt.Sprintf("019ca8dc-ce56-7000-8000-%012d", i%1000), WorkspaceID: "019ca8dc-ce56-7000-8000-000000000001",
				Code: "b123", Source: "redirect", Visitor: "9f86d081884c7d659a2feaa0c55ad015",
				Browser: "Chrome", BrowserVersion: "126.0.0.0", OS: "Windows", OSVersion: "10", DeviceType: "desktop",
				Language: "en", Referrer: "news.ycombinator.com", ReferrerURL: "https://news.ycombinator.com/item?id=42424242",
				Country: "DE", Continent: "EU", City: "Berlin", Region: "BE",
				Destination: "https://example.com/landing/123?utm_source=bench", TrackingID: "019ca8dc-ce56-7000-8000-00000000a1b2",
			}
			if _, _, err := h.Handle(context.Background(), commands.RecordClick{Click: c}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
