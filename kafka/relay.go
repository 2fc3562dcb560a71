package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/linkd/linkd/eventstore"
)

// The relay publishes the global event log to Kafka: it reads the log
// after its checkpoint (catch-up, then live) and publishes every event on
// its category's topic (TopicOf), keyed by stream, through a Watermill
// publisher: Kafka when LINKD_KAFKA_BROKERS is set. Events go in batch
// messages (EncodeBatch), in order. With a Partitioned publisher (Kafka) a
// message holds the events of one partition that its worker had at hand,
// of whichever streams (ADR 0121), keyed by one of them; with another, the
// events of one stream. Either way up to MaxMessageEvents and
// MaxMessageBytes.
//
// Delivery is at least once. The checkpoint only moves past an event once
// the publisher has acknowledged it and every event before it, so a relay
// that dies re-publishes from its checkpoint: projectors skip the duplicates
// by (stream, version).
//
// A Kafka publish costs one round trip, so the relay publishes
// concurrently: events are routed to workers by their partition (or, with
// a publisher that is not Partitioned, a hash of their stream), and each
// worker publishes its events one Publish after another, so the events of
// one stream are published, and land in their partition, in version order.
//
// Why by partition: a consumer applies one message of a partition at a
// time (watermill-kafka hands over the next once the last is acknowledged),
// so its throughput is a message per partition per Apply. Messages of one
// stream each held one or two events under the realistic load (1,000
// links), and the statistics in ClickHouse fell minutes behind 11,000
// clicks a second; a partition's message holds every event of its Pace.

// DefaultRelayPace is RelayOptions.Pace's default.
const DefaultRelayPace = 200 * time.Millisecond

// RelayOptions tune a relay. Zero values take the defaults.
type RelayOptions struct {
	// Workers publish concurrently, each the events of its share of the
	// streams, in order (default 128). A Kafka publish is one round trip and
	// concurrent publishes share produce requests, so throughput grows with
	// workers (ADR 0016).
	Workers int
	// MaxBatch bounds the events read from the log before they are handed
	// to the workers (default 256). The checkpoint advances batch by batch.
	MaxBatch int
	// MaxInFlight bounds the events handed to workers and not yet
	// acknowledged (default 16384, at least MaxBatch): what a crash may
	// publish twice. A busy stream's backlog does not hold up the other
	// workers until it reaches this bound.
	MaxInFlight int
	// PublishBatch is the most events a worker takes from its queue at a
	// time (default 512). It groups them by partition (or stream): each
	// group becomes one message (split by MaxMessageEvents and MaxMessageBytes),
	// and the messages of one topic go in one Publish call. watermill-kafka
	// sends the messages of a Publish one round trip each.
	PublishBatch int
	// Pace is the least time between two takes of one worker (default
	// 200 ms; negative: none). A worker idle for longer publishes at once;
	// a busy one waits out the rest of Pace, so that its partition's events
	// accumulate into one message rather than one message each, unless its
	// queue holds a PublishBatch or half of MaxInFlight is unacknowledged
	// (a backlog: it takes again at once). A consumer applies one message
	// of a partition at a time (watermill-kafka hands over the next once
	// the last is acknowledged), so a partition's events are projected at
	// most one message per apply: with messages of one or two events, a
	// link clicked 400 times a second fell behind in ClickHouse by 30 s
	// (ADR 0119), and 1,000 links clicked together by minutes (ADR 0121).
	Pace time.Duration
	// MaxMessageEvents bounds the events of one message (default 256).
	MaxMessageEvents int
	// MaxMessageBytes bounds the encoded events of one message (default
	// 256 KiB, well under Kafka's default 1 MB message size limit); a
	// larger event goes alone.
	MaxMessageBytes int
	// SaveInterval is how often the checkpoint is saved while it moves
	// (default 100 ms). It is also saved when the relay stops.
	SaveInterval time.Duration
	// RetryBackoff is the first pause after a failed publish, doubled up to
	// MaxRetryBackoff (defaults 100 ms and 5 s). A failed event is retried
	// until it is published or the relay stops; it is never skipped.
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// StopTimeout bounds how long a stopping relay waits for the publishes in
	// progress (default 10 s).
	StopTimeout time.Duration
	Logger      *slog.Logger
}

func (o RelayOptions) withDefaults() RelayOptions {
	if o.Workers <= 0 {
		o.Workers = 128
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 16384
	}
	o.MaxInFlight = max(o.MaxInFlight, o.MaxBatch)
	if o.PublishBatch <= 0 {
		o.PublishBatch = 512
	}
	if o.Pace == 0 {
		o.Pace = DefaultRelayPace
	}
	if o.MaxMessageEvents <= 0 {
		o.MaxMessageEvents = 256
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 256 << 10
	}
	if o.SaveInterval <= 0 {
		o.SaveInterval = 100 * time.Millisecond
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 100 * time.Millisecond
	}
	if o.MaxRetryBackoff <= 0 {
		o.MaxRetryBackoff = 5 * time.Second
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Relay publishes the global log. Make one with NewRelay; Run it once (a new
// Relay over the same checkpoint store continues where it stopped).
type Relay struct {
	store eventstore.Store
	pub   message.Publisher
	parts Partitioned // pub, when it is; else nil
	cp    CheckpointStore
	opts  RelayOptions

	track     tracker
	published atomic.Uint64
	failures  atomic.Uint64
	saved     atomic.Pointer[eventstore.Position]
}

// NewRelay prepares a relay that reads store after the position cp holds and
// publishes through pub. pub must be safe for concurrent use (Watermill's
// contract; the Kafka publisher is).
func NewRelay(store eventstore.Store, pub message.Publisher, cp CheckpointStore, opts RelayOptions) *Relay {
	r := &Relay{store: store, pub: pub, cp: cp, opts: opts.withDefaults()}
	r.parts, _ = pub.(Partitioned)
	return r
}

// RelayStats describe a relay's progress, for metrics.
type RelayStats struct {
	// Acked is the position below which every event is acknowledged.
	Acked eventstore.Position
	// Saved is the checkpoint last saved.
	Saved eventstore.Position
	// Published counts events acknowledged since the relay started.
	Published uint64
	// Failures counts failed publish attempts (each was retried).
	Failures uint64
	// Pending counts events read and not yet acknowledged.
	Pending int
}

// Stats returns the relay's progress. Safe to call at any time.
func (r *Relay) Stats() RelayStats {
	acked, pending := r.track.state()
	s := RelayStats{Acked: acked, Published: r.published.Load(), Failures: r.failures.Load(), Pending: pending}
	if p := r.saved.Load(); p != nil {
		s.Saved = *p
	}
	return s
}

// Acked is the position below which every event has been acknowledged.
func (r *Relay) Acked() eventstore.Position { p, _ := r.track.state(); return p }

// Published counts the events acknowledged since the relay started.
func (r *Relay) Published() uint64 { return r.published.Load() }

// item is what the reader hands dispatch: an event read, or the error that
// ended the read.
type item struct {
	ev  eventstore.RecordedEvent
	err error
}

// Run publishes until ctx ends, then waits for the publishes in progress
// (up to StopTimeout), saves the checkpoint and returns nil. It returns an
// error if the checkpoint cannot be loaded or the log cannot be read.
func (r *Relay) Run(ctx context.Context) error {
	start, err := r.cp.Load(ctx)
	if err != nil {
		return fmt.Errorf("relay: load checkpoint: %w", err)
	}
	r.saved.Store(&start)
	r.track.reset(start)
	// runCtx ends when ctx does or the read loop fails; everything inside
	// watches it alone, so that a cancellation is seen the same everywhere.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	sub, err := r.store.SubscribeAll(runCtx, start, eventstore.Filter{})
	if err != nil {
		return fmt.Errorf("relay: subscribe: %w", err)
	}
	defer sub.Close()
	log := r.opts.Logger.With("component", "relay")
	log.Info("relay: starting", "after", start.String(), "workers", r.opts.Workers)

	items := make(chan item, r.opts.MaxBatch)
	readerDone := make(chan struct{})
	defer func() { <-readerDone }() // before sub.Close
	go func() {
		defer close(readerDone)
		for {
			ev, err := sub.Recv(runCtx)
			select {
			case items <- item{ev, err}:
			case <-runCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	var workersWG sync.WaitGroup
	queues := make([]*queue, r.opts.Workers)
	for i := range queues {
		queues[i] = newQueue()
		workersWG.Add(1)
		go func() {
			defer workersWG.Done()
			r.work(runCtx, queues[i], log)
		}()
	}
	saverDone := make(chan struct{})
	go func() {
		defer close(saverDone)
		r.saveLoop(runCtx, log)
	}()

	runErr := r.dispatch(runCtx, items, queues)
	if ctx.Err() != nil {
		runErr = nil // stopping: a read cut short is no failure
	}
	stop()

	workersDone := make(chan struct{})
	go func() { workersWG.Wait(); close(workersDone) }()
	select {
	case <-workersDone:
	case <-time.After(r.opts.StopTimeout):
		log.Warn("relay: publishes still in progress at stop; they will be published again", "timeout", r.opts.StopTimeout)
	}
	<-saverDone
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.save(saveCtx); err != nil {
		runErr = errors.Join(runErr, err)
	}
	s := r.Stats()
	log.Info("relay: stopped", "checkpoint", s.Saved.String(), "published", s.Published, "failures", s.Failures)
	return runErr
}

// dispatch reads the log in batches and hands each event to the worker of
// its partition (or stream). It returns nil when ctx ends.
func (r *Relay) dispatch(ctx context.Context, items <-chan item, queues []*queue) error {
	events := make([]eventstore.RecordedEvent, 0, r.opts.MaxBatch)
	perWorker := make([][]job, len(queues))
	for {
		var first item
		select {
		case first = <-items:
		case <-ctx.Done():
			return nil
		}
		if first.err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("relay: read log: %w", first.err)
		}
		events = append(events[:0], first.ev)
	drain:
		for len(events) < r.opts.MaxBatch {
			select {
			case it := <-items:
				if it.err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("relay: read log: %w", it.err)
				}
				events = append(events, it.ev)
			default:
				break drain
			}
		}
		if !r.track.waitRoom(ctx, len(events), r.opts.MaxInFlight) {
			return nil
		}
		last := events[len(events)-1].Position
		b := r.track.add(last, len(events))
		for i := range events {
			j := job{ev: events[i], b: b, topic: TopicOf(events[i].Stream), part: -1}
			w := 0
			if r.parts == nil {
				w = shard(j.ev.Stream, len(queues))
			} else {
				var ok bool
				if j.part, ok = r.partitionOf(ctx, j.topic, j.ev.Stream); !ok {
					return nil
				}
				w = (shard(j.topic, len(queues)) + int(j.part)) % len(queues)
			}
			perWorker[w] = append(perWorker[w], j)
		}
		for w, jobs := range perWorker {
			if len(jobs) > 0 {
				queues[w].push(jobs)
				clear(jobs)
				perWorker[w] = jobs[:0]
			}
		}
	}
}

// partitionOf is the partition of topic that stream's events go to,
// asked of the publisher until it answers (false when ctx ends first): it
// asks Kafka once per topic.
func (r *Relay) partitionOf(ctx context.Context, topic, stream string) (int32, bool) {
	var p int32
	ok := r.retry(ctx, func() (err error) {
		p, err = r.parts.PartitionOf(topic, stream)
		return err
	}, func(err error, wait time.Duration) {
		r.opts.Logger.Warn("relay: reading a topic's partitions failed; retrying", "topic", topic, "err", err, "retry_in", wait)
	})
	return p, ok
}

// retry runs try until it succeeds (true) or ctx ends (false), counting
// each failure, which failed reports with the wait before the next try:
// RetryBackoff, doubled each time up to MaxRetryBackoff.
func (r *Relay) retry(ctx context.Context, try func() error, failed func(err error, wait time.Duration)) bool {
	backoff := r.opts.RetryBackoff
	for {
		if ctx.Err() != nil {
			return false
		}
		err := try()
		if err == nil {
			return true
		}
		r.failures.Add(1)
		if ctx.Err() != nil {
			return false
		}
		failed(err, backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return false
		}
		backoff = min(2*backoff, r.opts.MaxRetryBackoff)
	}
}

// work publishes the jobs of one queue. It takes up to PublishBatch jobs at
// a time and groups them by partition (or stream), keeping the log's order
// in each: each group becomes one batch message (EncodeBatch, keyed by one
// of its streams), split
// when it exceeds MaxMessageEvents or MaxMessageBytes, and the messages of
// one topic go in one Publish, a stream's in order. A job is acknowledged
// once the message holding it is published. It returns when ctx ends,
// leaving queued jobs unpublished (they are after the checkpoint).
func (r *Relay) work(ctx context.Context, q *queue, log *slog.Logger) {
	var (
		jobs   []job
		g      grouper
		msgs   []*message.Message
		spans  []span
		events []eventstore.RecordedEvent
	)
	var took time.Time
	for {
		if !r.pace(ctx, q, took) {
			return
		}
		var ok bool
		if jobs, ok = q.take(ctx, r.opts.PublishBatch, jobs); !ok {
			return
		}
		took = time.Now()
		sorted := g.group(jobs)
		for len(sorted) > 0 {
			topic := sorted[0].topic
			n := 1
			for n < len(sorted) && sorted[n].topic == topic {
				n++
			}
			run := sorted[:n]
			msgs, spans = msgs[:0], spans[:0]
			for lo := 0; lo < len(run); {
				hi, size := lo+1, EncodedSize(&run[lo].ev)
				for hi < len(run) && run[hi].si == run[lo].si && hi-lo < r.opts.MaxMessageEvents {
					sz := EncodedSize(&run[hi].ev)
					if size+sz > r.opts.MaxMessageBytes {
						break
					}
					size += sz
					hi++
				}
				spans = append(spans, span{lo, hi})
				events = encodeSpan(&msgs, events, run[lo:hi])
				lo = hi
			}
			if !r.publish(ctx, topic, msgs, run, spans, &events, log) {
				return
			}
			for i := range run {
				r.track.ack(run[i].b)
			}
			r.published.Add(uint64(n))
			sorted = sorted[n:]
		}
		clear(jobs)
	}
}

// pace waits until Pace has passed since took, the last take, so that
// the events of that time go in one message, unless there is a backlog:
// the queue holds a PublishBatch (its messages are full without waiting),
// or half of MaxInFlight or more is handed out and not acknowledged (the
// relay is catching up, its queues hold what the in-flight bound lets in,
// spread over them: pacing would cap it at MaxInFlight a Pace). False when
// ctx ends.
func (r *Relay) pace(ctx context.Context, q *queue, took time.Time) bool {
	wait := r.opts.Pace - time.Since(took)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for q.len() < r.opts.PublishBatch && r.track.pending.Load() < int64(r.opts.MaxInFlight/2) {
		select {
		case <-t.C:
			return true
		case <-q.wake: // take looks at the queue before it waits for one
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// span is the jobs [lo, hi) of a run that one message carries.
type span struct{ lo, hi int }

// encodeSpan appends to *msgs the batch message of jobs (one stream, or one
// partition's streams), using buf for the events; it returns buf for reuse.
func encodeSpan(msgs *[]*message.Message, buf []eventstore.RecordedEvent, jobs []keyedJob) []eventstore.RecordedEvent {
	buf = buf[:0]
	for i := range jobs {
		buf = append(buf, jobs[i].ev)
	}
	m := EncodeBatch(buf)
	if m.Metadata.Get(MetaStream) == "" {
		m.Metadata.Set(MetaKey, buf[0].Stream)
	}
	*msgs = append(*msgs, m)
	clear(buf)
	return buf[:0]
}

// keyedJob is a job with the order of first appearance of its topic and
// of its message key among the jobs grouped.
type keyedJob struct {
	job
	ti, si int
}

// grouper orders jobs by topic, then message key, each in order of first
// appearance, keeping the order of each key's jobs (a stable sort). The
// key is the job's partition when it has one (a message per partition,
// whatever its streams), else its stream.
type grouper struct {
	topics map[string]int
	keys   map[groupKey]int
	out    []keyedJob
}

// groupKey is what a message holds: a partition's events (stream empty;
// partitions are numbered per topic, and the topic order keeps two
// topics' partition 3 apart), or a stream's (part -1).
type groupKey struct {
	part   int32
	stream string
}

func (g *grouper) group(jobs []job) []keyedJob {
	if g.topics == nil {
		g.topics, g.keys = map[string]int{}, map[groupKey]int{}
	}
	clear(g.topics)
	clear(g.keys)
	clear(g.out)
	g.out = g.out[:0]
	for _, j := range jobs {
		k := keyedJob{job: j}
		key := groupKey{part: j.part}
		if j.part < 0 {
			key.stream = j.ev.Stream
		}
		si, ok := g.keys[key]
		if !ok {
			si = len(g.keys)
			g.keys[key] = si
		}
		k.si = si
		ti, ok := g.topics[k.topic]
		if !ok {
			ti = len(g.topics)
			g.topics[k.topic] = ti
		}
		k.ti = ti
		g.out = append(g.out, k)
	}
	slices.SortStableFunc(g.out, func(a, b keyedJob) int {
		if c := cmp.Compare(a.ti, b.ti); c != 0 {
			return c
		}
		return cmp.Compare(a.si, b.si)
	})
	return g.out
}

// publish publishes msgs (message i carries run[spans[i].lo:spans[i].hi])
// until it succeeds (true) or ctx ends (false). A failed multi-message
// Publish may have published some: all are published again, in order, so a
// duplicate never precedes an event it followed.
func (r *Relay) publish(ctx context.Context, topic string, msgs []*message.Message, run []keyedJob, spans []span, buf *[]eventstore.RecordedEvent, log *slog.Logger) bool {
	tried := false
	return r.retry(ctx, func() error {
		if tried {
			msgs = msgs[:0] // a message is not published twice by Watermill
			for _, sp := range spans {
				*buf = encodeSpan(&msgs, *buf, run[sp.lo:sp.hi])
			}
		}
		tried = true
		return r.pub.Publish(topic, msgs...)
	}, func(err error, wait time.Duration) {
		first := run[0].ev
		log.Warn("relay: publish failed; retrying", "topic", topic, "messages", len(msgs), "events", len(run), "stream", first.Stream,
			"version", first.Version, "position", first.Position.String(), "retry_in", wait, "err", err)
	})
}

func (r *Relay) saveLoop(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(r.opts.SaveInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.save(ctx); err != nil && ctx.Err() == nil {
			log.Error("relay: save checkpoint failed; will retry", "err", err)
		}
	}
}

// save writes the acknowledged position if it moved since the last save.
func (r *Relay) save(ctx context.Context) error {
	acked, _ := r.track.state()
	if saved := r.saved.Load(); saved != nil && !saved.Less(acked) {
		return nil
	}
	if err := r.cp.Save(ctx, acked); err != nil {
		return fmt.Errorf("relay: save checkpoint: %w", err)
	}
	r.saved.Store(&acked)
	return nil
}
