package webhooks

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSQLiteQueueDrain is the embedded queue's share of a delivery:
// messages are made (as the projection does), taken in due order and their
// successful attempts recorded, in batches as the deliverer's (one
// operation: one message through the queue).
func BenchmarkSQLiteQueueDrain(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "webhooks.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	body := bytes.Repeat([]byte("x"), 1200) // a link.clicked payload's size
	now := time.Now()
	const batch = 512
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		c := &changes{now: now.UnixMilli()}
		for i := range n {
			c.msgs = append(c.msgs, queued{webhookID: "wh_1", eventID: "ev_" + strconv.Itoa(done+i), eventType: "link.clicked", body: body})
		}
		if err := s.q.write(ctx, nil, c); err != nil {
			b.Fatal(err)
		}
		seen := map[string]bool{}
		var msgs []message
		for tries := 0; len(msgs) < n; tries++ {
			got, _, err := s.q.take(ctx, "wh_1", now.Add(time.Second), 32, len(msgs))
			if err != nil || tries > 100 {
				b.Fatalf("took %d of %d: %v", len(msgs), n, err)
			}
			for _, m := range got {
				if !seen[m.id] {
					seen[m.id] = true
					msgs = append(msgs, m)
				}
			}
		}
		outs := make([]outcome, 0, len(msgs))
		for _, m := range msgs {
			outs = append(outs, outcome{msg: m, webhookID: "wh_1", attempt: 1, result: "succeeded", status: "succeeded", durMS: 1, at: now.UnixMilli()})
		}
		if _, err := s.q.record(ctx, outs, nil, []string{"wh_1"}); err != nil {
			b.Fatal(err)
		}
	}
}
