package versioncache

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/linkd/linkd/eventstore"
)

// Behind writes a projector's stream versions behind its data, for a
// projector fed in log order (the in-process runner; never Kafka, whose
// partitions interleave).
//
// Fed in log order, a projector's checkpoint alone tells which events it
// has applied: Dedup only looks a stream's version up for an event at or
// below the checkpoint, and the in-process feeder never delivers one. The
// versions then only serve a later run on Kafka, and a stream version per
// stream per batch was as many keys as the data itself (at 1,000 links,
// one per link per batch). So they wait in memory and go to the database
// with a batch about once a second (Every) or once Max of them wait, and
// at Close.
//
// A crash loses the ones waiting. The gap records which: the first batch
// that leaves versions waiting also writes an open gap starting at the
// checkpoint before it; the batch that writes them deletes it. An open gap
// found by Open is closed at the checkpoint (Close): every event in
// (From, To] was applied, and its stream's stored version may be older.
// Dedup treats those events as applied, and learns their versions. Fed in
// log order, the projector reports From as its checkpoint, so the feeder
// delivers (From, To] again; the batch that passes To writes what was
// learned and deletes the gap. On Kafka the gap stays: a redelivery in it
// is known to be applied whenever it comes. ADR 0008 has the measurement.
type Behind struct {
	// On: versions are written behind (the projector is fed in log
	// order). Off, every batch writes its versions, as before.
	On    bool
	Every time.Duration
	Max   int

	pending map[string]uint64 // applied, not written
	flushed time.Time
	gap     Gap
}

// DefaultEvery and DefaultMax are Behind's defaults.
const (
	DefaultEvery = time.Second
	DefaultMax   = 1 << 15
)

// Gap is a range of positions whose events were all applied while their
// streams' versions were not all written: (From, To]. An open gap's To is
// not known yet: it is the checkpoint of the run that opened it.
type Gap struct {
	From, To eventstore.Position
	Open     bool
	set      bool
}

// Exists reports whether there is a gap.
func (g Gap) Exists() bool { return g.set }

// Contains reports whether the event at p is in a closed gap.
func (g Gap) Contains(p eventstore.Position) bool {
	return g.set && !g.Open && g.From.Less(p) && !g.To.Less(p)
}

// gapSize is the encoded size of a Gap.
const gapSize = 33

// Encode is the value stored for g.
func (g Gap) Encode() []byte {
	b := make([]byte, 0, gapSize)
	b = binary.BigEndian.AppendUint64(b, g.From.Commit)
	b = binary.BigEndian.AppendUint64(b, g.From.Prepare)
	b = binary.BigEndian.AppendUint64(b, g.To.Commit)
	b = binary.BigEndian.AppendUint64(b, g.To.Prepare)
	if g.Open {
		return append(b, 1)
	}
	return append(b, 0)
}

// DecodeGap reads a value Encode wrote.
func DecodeGap(v []byte) (Gap, error) {
	if len(v) != gapSize || v[32] > 1 {
		return Gap{}, errors.New("versioncache: corrupt gap")
	}
	u := binary.BigEndian.Uint64
	return Gap{
		From: eventstore.Position{Commit: u(v), Prepare: u(v[8:])},
		To:   eventstore.Position{Commit: u(v[16:]), Prepare: u(v[24:])},
		Open: v[32] == 1, set: true,
	}, nil
}

// Load sets the gap Open found stored (nil: none), with the checkpoint
// stored with it. An open gap is closed at the checkpoint (or dropped when
// nothing was applied after it opened): changed tells the caller to store
// Gap() again (or delete it when it no longer Exists).
func (b *Behind) Load(stored []byte, checkpoint eventstore.Position) (changed bool, err error) {
	b.pending, b.gap, b.flushed = nil, Gap{}, time.Time{}
	if stored == nil {
		return false, nil
	}
	g, err := DecodeGap(stored)
	if err != nil {
		return false, err
	}
	if !g.Open {
		b.gap = g
		return false, nil
	}
	if g.From.Less(checkpoint) {
		b.gap = Gap{From: g.From, To: checkpoint, set: true}
	}
	return true, nil
}

// Gap is the current gap.
func (b *Behind) Gap() Gap { return b.gap }

// Resume is where a projector fed in log order is to be fed from: the
// start of a closed gap, else its checkpoint.
func (b *Behind) Resume(checkpoint eventstore.Position) eventstore.Position {
	if b.On && b.gap.Contains(checkpoint) {
		return b.gap.From
	}
	return checkpoint
}

// Pending is the version of stream applied and not written yet.
func (b *Behind) Pending(stream string) (uint64, bool) {
	v, ok := b.pending[stream]
	return v, ok
}

// Waiting is how many streams' versions wait.
func (b *Behind) Waiting() int { return len(b.pending) }

// Plan is what one batch writes of the stream versions: Versions, and the
// gap key (SetGap, or DeleteGap).
type Plan struct {
	Versions  map[string]uint64
	SetGap    []byte
	DeleteGap bool

	flush, open bool
	next        map[string]uint64
}

// Plan says what a batch writes at now: it applied next (Dedup.Next), its
// events' highest position is last, and the checkpoint before it was
// applied. force writes every waiting version (Close).
func (b *Behind) Plan(next map[string]uint64, applied, last eventstore.Position, now time.Time, force bool) Plan {
	p := Plan{next: next}
	// The batch that reaches a closed gap's end writes what it learned.
	passed := b.gap.set && !b.gap.Open && !last.Less(b.gap.To)
	if !b.On || (b.gap.set && !b.gap.Open && !passed) {
		// Every batch writes its versions: off, or on while a gap is
		// repaired (its events' versions are only in memory until then).
		p.Versions = next
		return p
	}
	if b.flushed.IsZero() {
		b.flushed = now
	}
	if force || passed || len(b.pending)+len(next) >= b.max() || now.Sub(b.flushed) >= b.every() {
		p.flush = true
		p.Versions = next
		if len(b.pending) > 0 {
			p.Versions = make(map[string]uint64, len(b.pending)+len(next))
			for s, v := range b.pending {
				p.Versions[s] = v
			}
			for s, v := range next {
				p.Versions[s] = v
			}
		}
		p.DeleteGap = b.gap.set
		return p
	}
	if len(next) > 0 && !b.gap.set {
		p.open = true
		p.SetGap = Gap{From: applied, Open: true, set: true}.Encode()
	}
	return p
}

// Done records that the batch of p was committed.
func (b *Behind) Done(p Plan, now time.Time) {
	switch {
	case p.flush:
		b.pending, b.flushed = nil, now
	case p.Versions == nil:
		if b.pending == nil {
			b.pending = make(map[string]uint64, len(p.next))
		}
		for s, v := range p.next {
			b.pending[s] = v
		}
	}
	if p.DeleteGap {
		b.gap = Gap{}
	}
	if p.open {
		g, _ := DecodeGap(p.SetGap)
		b.gap = g
	}
}

// Reset forgets everything (the projector was emptied).
func (b *Behind) Reset() {
	b.pending, b.gap, b.flushed = nil, Gap{}, time.Time{}
}

func (b *Behind) every() time.Duration {
	if b.Every > 0 {
		return b.Every
	}
	return DefaultEvery
}

func (b *Behind) max() int {
	if b.Max > 0 {
		return b.Max
	}
	return DefaultMax
}

// Last is the last applied version of stream: the one waiting here, else
// the one read (from the database) by read, through the cache c when the
// versions are written with every batch. Written behind, c is not used:
// the waiting map holds the newest versions, and a version cached from
// the database would be stale once the map is written.
func (b *Behind) Last(c *Cache, stream string, read func(stream string) (uint64, bool, error)) (uint64, bool, error) {
	if v, ok := b.Pending(stream); ok {
		return v, true, nil
	}
	if !b.On {
		if v, ok := c.Get(stream); ok {
			return v, true, nil
		}
	}
	v, ok, err := read(stream)
	if err != nil || !ok {
		return 0, false, err
	}
	if !b.On {
		c.Put(stream, v)
	}
	return v, true, nil
}

// Committed records that the batch of p was committed at now: its
// versions in the cache c when they are written with every batch, else in
// the waiting map (Done).
func (b *Behind) Committed(p Plan, c *Cache, now time.Time) {
	if !b.On {
		for stream, v := range p.next {
			c.Put(stream, v)
		}
	}
	b.Done(p, now)
}
