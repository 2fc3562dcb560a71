// Package projections holds the projector interface and the projectors
// that build linkd's read models; it feeds them in process from the event
// store (LocalRunner) and rebuilds them by replay. Package kafka feeds them
// from Kafka.
//
// A projector is idempotent: delivery is at least once, so every event may
// arrive more than once, and events of different streams may arrive in any
// order (each stream's own events keep their order). Projectors therefore
// remember, with their data and in the same transaction, the last version
// they applied of each stream, and skip what they have seen.
package projections

import (
	"context"
	"time"

	"github.com/linkd/linkd/eventstore"
)

// Projector builds one read model.
type Projector interface {
	// Name identifies the projection: its checkpoints, its consumer group
	// on Kafka, and the --projection argument of replay. It never changes.
	Name() string
	// Categories are the stream categories it consumes ("link", "clicks",
	// ...): one bus topic each.
	Categories() []string
	// Apply applies a batch of events atomically, together with the record
	// of what it applied, skipping events already applied. Events of one
	// stream come in version order; streams may interleave in any order.
	// When Apply returns nil the batch is durable in the read model. A batch
	// may hold events of other categories, which it skips but counts as
	// applied: the in-process runner hands one over after a long run of
	// them, so that the checkpoint moves past them. The slice is the
	// caller's again once Apply returns (the in-process runner fills it
	// with the next batch): a projector keeps copies of what it needs
	// later, never the slice or pointers into it. Each Event's domain event
	// comes from its Decode, decoded once for all projectors of the
	// process: a projector never decodes Data itself.
	Apply(ctx context.Context, events []Event) error
	// Checkpoint is the global position of the last event applied (stored
	// by Apply with the data). The in-process feeder resumes after it; on
	// Kafka, consumer-group offsets say where to resume instead.
	Checkpoint(ctx context.Context) (eventstore.Position, error)
	// Reset empties the read model before a replay.
	Reset(ctx context.Context) error
}

// StreamTracker is implemented by projectors that can tell which version of
// a stream they have applied (reads-follow-writes waits on it).
type StreamTracker interface {
	AppliedVersion(ctx context.Context, stream string) (version uint64, ok bool, err error)
}

// Batcher is implemented by projectors whose cost per Apply is high enough
// that they want larger deliveries than the runner's MaxBatch (ClickHouse:
// every Apply is a part on disk per table). The in-process runner delivers
// up to MaxBatch() events at once to such a projector; batches still only
// grow that large when events wait, that is under load.
type Batcher interface {
	MaxBatch() int
}

// Lingerer is implemented by projectors whose cost per event falls
// steeply with the batch, because the events of a batch write the same
// rows and pages (Radar: a visit's row and its B-tree page once per batch
// rather than once per page view). Under load the in-process runner waits
// up to Linger for more events before it delivers, instead of
// LocalOptions.Linger, so that a batch of up to MaxBatch builds up; a lone
// event still goes at once.
type Lingerer interface {
	Linger() time.Duration
}

// CategoryLingerer is a Lingerer whose linger pays off for one category
// of events only: the in-process runner waits its Linger for batches
// mostly of that category, LocalOptions.Linger for the others.
type CategoryLingerer interface {
	Lingerer
	LingerFor() string
}

// LongBatches, embedded in a projector, makes it a Batcher and a
// CategoryLingerer of large batches of clicks: under load the in-process
// runner waits up to 100 ms for up to 8,192 events while most of them are
// clicks. It suits projectors that see every click (the embedded
// statistics, the core read model, the click index), whose cost per batch
// is a write per link touched: with 1,000 links clicked at random,
// batches of a few hundred events touched a link per event. Longer
// (a second, 32,768 events) helped 10,000 links (0.44 of the bare server
// against 0.40) but not 1,000, and applying that much at once took the
// CPU from the requests in bursts: redirects' p99 rose from 7 to 9-16 ms.
// Other events (sales: a customer each) gain little from long batches and
// lost in latency the same way. A reader waiting for such a projection
// cuts its wait short (Watermark.Wanted), so the linger delays no read
// (ADR 0005).
type LongBatches struct{}

// MaxBatch implements Batcher.
func (LongBatches) MaxBatch() int { return 8192 }

// Linger implements Lingerer.
func (LongBatches) Linger() time.Duration { return 100 * time.Millisecond }

// LingerFor implements CategoryLingerer: clicks ("clicks-<link id>").
func (LongBatches) LingerFor() string { return "clicks" }

// Flusher is implemented by projectors that buffer (ClickHouse): Flush makes
// everything applied so far visible to queries.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Reloader is implemented by projectors that keep in memory what their
// tables hold (dedup marks, open visits, pending aggregates) and that the
// instances of a deployment write one at a time (ClickHouse, ADR 0125).
// Reload is called when this process's turn to write begins or ends:
// another process may have written the tables in between. It writes what
// is pending if it can, else drops it (the next writer's recovery rebuilds
// it from what reached the tables), and forgets the rest; the next Apply
// reads the tables again. It writes nothing else.
type Reloader interface {
	Reload(ctx context.Context)
}
