package clickindex_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
	"github.com/linkd/linkd/kafka"
	"github.com/linkd/linkd/kafka/kafkatest"
	"github.com/linkd/linkd/projections"
	"github.com/linkd/linkd/projections/clickindex"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openStores(t *testing.T) (*embedded.Store, *clickindex.Store) {
	t.Helper()
	es, err := embedded.Open(embedded.Options{Dir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	ix, err := clickindex.Open(t.TempDir(), clickindex.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return es, ix
}

// appendClick appends a tracked click as a redirect records it now.
func appendClick(t *testing.T, es eventstore.Store, link string) (string, eventstore.AppendResult) {
	t.Helper()
	now := time.Now().UTC()
	exp := now.Add(click.TrackingTTL)
	id := uuid.Must(uuid.NewV7()).String()
	c := click.Recorded{ClickID: id, TrackingID: id, TrackingExpiresAt: &exp, LinkID: link,
		WorkspaceID: "ws-" + link, Timestamp: now, Source: click.SourceRedirect, Country: "DE"}
	res, err := es.Append(context.Background(), click.Stream(link), eventstore.Any(),
		eventstore.EventData{Type: click.EventRecorded, Data: c.AppendJSON(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return id, res
}

// checkFound: right after waiting on the watermark, the click is there.
func checkFound(t *testing.T, ix *clickindex.Store, id, link string) {
	t.Helper()
	c, ok, err := ix.Click(context.Background(), id)
	if err != nil || !ok {
		t.Fatalf("Click(%s) after the watermark = %v, %v", id, ok, err)
	}
	if c.LinkID != link || c.WorkspaceID != "ws-"+link || c.Country != "DE" {
		t.Fatalf("Click(%s) = %+v", id, c)
	}
}

// TestLocalRunner: fed by the in-process runner, a click can be read as
// soon as the projection's watermark reaches the head of the log (what the
// API's barrier waits for), and a restart resumes after the checkpoint.
func TestLocalRunner(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 60*time.Second)
	es, ix := openStores(t)
	links := []string{"a", "b", "c"}
	for i := range 50 { // history before the runner starts
		appendClick(t, es, links[i%3])
	}
	run := func() (*projections.LocalRunner, func()) {
		r := projections.NewLocalRunner(es, []projections.Projector{ix}, projections.LocalOptions{Logger: quiet})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		return r, func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("runner: %v", err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := range 2 {
		r, stop := run()
		wm := r.Watermark(clickindex.Name)
		for i := range 100 {
			link := links[i%3]
			id, _ := appendClick(t, es, link)
			head, err := es.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := wm.Wait(ctx, head); err != nil {
				t.Fatalf("round %d, click %d: %v", round, i, err)
			}
			checkFound(t, ix, id, link)
		}
		stop()
	}
	head, _ := es.Head(ctx)
	if cp, _ := ix.Checkpoint(ctx); cp != head {
		t.Errorf("checkpoint %v, head %v", cp, head)
	}
}

// TestKafkaRunner: the same through the relay, Kafka (an in-process
// cluster) and the Kafka runner: the watermark, on which the events the
// relay reads are registered (kafkatest.Registering), is reached only once
// the click can be read.
func TestKafkaRunner(t *testing.T) {
	t.Parallel()
	kafkatest.Deadline(t, 120*time.Second)
	es, ix := openStores(t)
	cfg := kafkatest.Start(t, 4)
	runner, err := kafka.NewRunner(cfg, []projections.Projector{ix}, kafka.RunnerOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- runner.Run(ctx) }()
	pub, err := kafka.NewPublisher(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	wm := runner.Watermark(clickindex.Name)
	registering := kafkatest.Registering(es, kafkatest.Watch{Watermark: wm, Categories: ix.Categories()})
	r := kafka.NewRelay(registering, pub, kafka.NewFileCheckpoint(filepath.Join(t.TempDir(), kafka.CheckpointFile)),
		kafka.RelayOptions{Workers: 4, Logger: quiet})
	relayed := make(chan error, 1)
	go func() { relayed <- r.Run(ctx) }()

	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	links := []string{"a", "b", "c", "d", "e"}
	for i := range 60 {
		link := links[i%len(links)]
		id, res := appendClick(t, es, link)
		if err := wm.Wait(wctx, res.Position); err != nil {
			t.Fatalf("click %d: watermark: %v (pending %d)", i, err, wm.Pending())
		}
		checkFound(t, ix, id, link)
	}
	cancel()
	for _, ch := range []chan error{ran, relayed} {
		if err := <-ch; err != nil && ctx.Err() == nil {
			t.Error(err)
		}
	}
}
