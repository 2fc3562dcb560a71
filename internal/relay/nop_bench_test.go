package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/linkd/linkd/internal/relay"
)

type nopPub struct{ d time.Duration }

func (p nopPub) Publish(string, ...*message.Message) error { time.Sleep(p.d); return nil }
func (nopPub) Close() error                               { return nil }

func BenchmarkRelayNop(b *testing.B) {
	for _, w := range []int{1, 32} {
		b.Run("", func(b *testing.B) {
			store := openStore(b)
			fill(b, store, b.N)
			head, _ := store.Head(context.Background())
			r := relay.New(store, nopPub{}, &relay.MemoryCheckpoint{}, relay.Options{Workers: w, Logger: quiet})
			start := time.Now()
			stop := runRelay(b, r)
			for r.Acked().Less(head) {
				time.Sleep(time.Millisecond)
			}
			el := time.Since(start)
			stop()
			b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
		})
	}
}
