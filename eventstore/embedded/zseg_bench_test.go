package embedded

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// clickLike is an event shaped like a ClickRecorded of linkd generate.
func clickLike(r *rand.Rand, i int) eventstore.EventData {
	countries := []string{"US", "DE", "FR", "GB", "BR", "IN", "JP"}
	browsers := []string{"Chrome", "Safari", "Firefox", "Edge"}
	id := uuid.Must(uuid.NewV7()).String()
	data := fmt.Sprintf(`{"click_id":%q,"link_id":"%s","workspace_id":"%s","domain_id":"","code":"c%04d","timestamp":"2026-11-%02dT%02d:%02d:%02d.%06dZ","source":"redirect","qr":%v,"visitor":"%016x","browser":%q,"browser_version":"%d.0","os":"Android","os_version":"14","device_type":"mobile","device":"Pixel","language":"en","referrer":"news.example","referrer_url":"https://news.example/a/%d","country":%q,"continent":"EU","city":"Berlin","region":"BE","destination":"https://example.com/landing/%d?utm_source=newsletter","tracking_id":%q,"tracking_expires_at":"2027-02-22T10:00:00Z"}`,
		id, uuid.NewSHA1(uuid.Nil, []byte(fmt.Sprint(r.IntN(1000)))), uuid.NewSHA1(uuid.Nil, []byte(fmt.Sprint(r.IntN(10)))),
		r.IntN(1000), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1e6), r.IntN(10) == 0, r.Uint64(),
		browsers[r.IntN(len(browsers))], 100+r.IntN(30), r.IntN(1e5), countries[r.IntN(len(countries))], r.IntN(1000), id)
	return eventstore.EventData{ID: uuid.New(), Type: "ClickRecorded", Data: []byte(data)}
}

// BenchmarkReadByPosition reads one event by its place in the log
// (ReadStream of a one-event stream: an index lookup, then one read at the
// record's offset) and the whole log in order (ReadAll pages), from plain
// segments and from compressed ones, built from the same events in the
// same run. docs/performance.md has the bytes per click these lead to.
func BenchmarkReadByPosition(b *testing.B) {
	const events = 40_000 // about 28 MB of click events
	r := rand.New(rand.NewPCG(7, 8))
	evs := make([]eventstore.EventData, events)
	for i := range evs {
		evs[i] = clickLike(r, i)
	}
	for _, compressed := range []bool{false, true} {
		name := "plain"
		if compressed {
			name = "zstd"
		}
		s := openT(b, Options{Dir: b.TempDir(), segmentSize: 4 << 20, noCompress: !compressed})
		for i := 0; i < events; i += 500 {
			var group []eventstore.EventData
			for j := i; j < i+500; j++ {
				group = append(group, evs[j])
			}
			// One stream per click, as linkd's click streams are small.
			for j, ev := range group {
				mustAppend(b, s, fmt.Sprintf("click-%d", i+j), eventstore.NoStream(), ev)
			}
		}
		if compressed {
			waitCompressed(b, s)
		}
		b.Run(name+"/one-event", func(b *testing.B) {
			rr := rand.New(rand.NewPCG(9, 10))
			for b.Loop() {
				i := rr.IntN(events)
				got, err := s.ReadStream(b.Context(), fmt.Sprintf("click-%d", i), 0, 1)
				if err != nil || len(got) != 1 || got[0].ID != evs[i].ID {
					b.Fatalf("ReadStream(click-%d): %v", i, err)
				}
			}
		})
		b.Run(name+"/read-all", func(b *testing.B) {
			for b.Loop() {
				n := 0
				after := eventstore.Start
				for {
					page, err := s.ReadAll(b.Context(), after, 1024)
					if err != nil {
						b.Fatal(err)
					}
					if len(page) == 0 {
						break
					}
					n += len(page)
					after = page[len(page)-1].Position
				}
				if n != events {
					b.Fatalf("%d events, want %d", n, events)
				}
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
		closeT(b, s)
	}
}
