package embedded

import (
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// ReadStream implements eventstore.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, max int) ([]eventstore.RecordedEvent, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.exit()
	if max <= 0 {
		return nil, nil
	}
	// Load committed before opening the iterator: every event before it
	// is already in the index.
	limit := s.committed.Load()
	// A stream that was never written has no version key: one point read
	// (bloom filters) says so, where an iterator would read every level.
	if !s.streams.mayHold(maphash.String(hashSeed, stream)) {
		return nil, fmt.Errorf("%w: %q", eventstore.ErrStreamNotFound, stream)
	}
	last, exists, lastEnd, err := s.lastVersion(stream, -1)
	if err != nil {
		return nil, fmt.Errorf("embedded: read index: %w", err)
	}
	if !exists {
		return nil, fmt.Errorf("%w: %q", eventstore.ErrStreamNotFound, stream)
	}
	// acked: the stream's last append is acknowledged, so it exists.
	acked := lastEnd <= limit
	if acked && from > last {
		return nil, nil
	}
	h := s.opts.hash(stream)
	// The stream's events not in the index yet, asked before the iterator
	// opens (pendingVersions.eventsOf): from the first of them on, the
	// index is not read.
	pend := s.pending.eventsOf(stream)
	below := firstPending(pend)
	lower, upper := streamBounds(h)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("embedded: read index: %w", err)
	}
	defer it.Close()
	var (
		locs   []eventLoc
		events []eventstore.RecordedEvent
		in     interner
	)
	// read appends the events of locs, reading runs of adjacent records
	// (one append, usually) with one read, and skipping another stream's.
	read := func(locs []eventLoc) error {
		for i := 0; i < len(locs); {
			j := i + 1
			end := locs[i].start + int64(locs[i].n)
			for j < len(locs) && locs[j].start == end && end-locs[i].start < readChunk {
				end += int64(locs[j].n)
				j++
			}
			r := newLogReader(s, locs[i].start, end)
			r.chunk, r.owned = int(end-locs[i].start), true
			for k := i; k < j; k++ {
				rec, start, n, err := r.next()
				if err != nil {
					return fmt.Errorf("embedded: read stream %q: %w", stream, err)
				}
				if string(rec.stream) != stream {
					continue // another stream's name has the same hash
				}
				if rec.version != locs[k].version {
					return fmt.Errorf("embedded: index and log disagree at log offset %d (stream %q version %d)", start, stream, locs[k].version)
				}
				events = append(events, toEvent(&rec, start+int64(n), &in, false))
			}
			i = j
		}
		return nil
	}
	ok := it.SeekGE(eventKey(nil, h, from, 0))
	for len(events) < max {
		// The next entries under the stream's hash, as many as events are
		// still wanted: a stream sharing the hash makes it take more rounds.
		locs = locs[:0]
		for ; ok && len(locs) < max-len(events); ok = it.Next() {
			version, start, n, err := decodeEvent(it.Key(), it.Value())
			if err != nil {
				return nil, err
			}
			if version >= below {
				ok = false // the stream's are pending from here on
				break
			}
			if start+int64(n) > limit {
				continue // written, not acknowledged yet
			}
			locs = append(locs, eventLoc{version, start, n})
		}
		if len(locs) == 0 {
			break
		}
		if err := read(locs); err != nil {
			return nil, err
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("embedded: read index: %w", err)
	}
	locs = locs[:0]
	for _, e := range pend {
		if len(events)+len(locs) >= max {
			break
		}
		if e.version >= from && e.start+int64(e.n) <= limit {
			locs = append(locs, e)
		}
	}
	if err := read(locs); err != nil {
		return nil, err
	}
	if len(events) > 0 || acked {
		return events, nil
	}
	// Nothing from "from" on, and the last append is not acknowledged:
	// the stream exists if an earlier append of it is.
	for _, e := range pend {
		if e.start+int64(e.n) <= limit {
			return nil, nil
		}
	}
	for ok := it.First(); ok; ok = it.Next() {
		_, start, n, err := decodeEvent(it.Key(), it.Value())
		if err != nil {
			return nil, err
		}
		if start+int64(n) > limit {
			continue
		}
		if mine, err := s.owns(stream, start, n); err != nil || mine {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: %q", eventstore.ErrStreamNotFound, stream)
}

// StreamVersion implements eventstore.Store.
func (s *Store) StreamVersion(ctx context.Context, stream string) (uint64, bool, error) {
	if err := s.enter(ctx); err != nil {
		return 0, false, err
	}
	defer s.exit()
	h := maphash.String(hashSeed, stream)
	if !s.streams.mayHold(h) {
		return 0, false, nil
	}
	if v, ok, cached := s.versions.get(h, stream); cached {
		return v, ok, nil
	}
	old := s.versions.slot(h)
	at := s.committed.Load()
	v, ok, _, err := s.lastVersion(stream, at)
	if err != nil {
		return 0, false, fmt.Errorf("embedded: read index: %w", err)
	}
	s.versions.put(old, h, stream, v, ok, at)
	return v, ok, nil
}

// Head implements eventstore.Store.
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	if err := s.enter(ctx); err != nil {
		return eventstore.Start, err
	}
	defer s.exit()
	return position(s.committed.Load()), nil
}

// ReadAll implements eventstore.Store.
func (s *Store) ReadAll(ctx context.Context, after eventstore.Position, max int) ([]eventstore.RecordedEvent, error) {
	off, err := offsetOf(after)
	if err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.exit()
	if max <= 0 {
		return nil, nil
	}
	events, _, err := s.scan(ctx, off, s.committed.Load(), max, eventstore.Filter{}, false)
	return events, err
}

// scan reads the log from off (a record boundary) up to limit and returns
// up to max events that filter keeps, and the position of the last event it
// read (kept or not). The events' bytes are copied, or else the read
// buffers' own (ReadAll: a replay's pages, no copy and no allocation an
// event, ADR 0112).
func (s *Store) scan(ctx context.Context, off, limit int64, max int, filter eventstore.Filter, copied bool) ([]eventstore.RecordedEvent, int64, error) {
	if off >= limit {
		return nil, off, nil
	}
	if max <= 0 {
		max = math.MaxInt
	}
	// Sized for what the range can hold (a record takes more than 64
	// bytes), up to a page: a replay's pages are not grown by copying,
	// and a subscription reading its few new events allocates few.
	events := make([]eventstore.RecordedEvent, 0, min(int64(max), (limit-off)/64+1, 8192))
	var in interner
	r := newLogReader(s, off, limit)
	r.owned = !copied
	last := off
	for skipped := 0; len(events) < max; {
		rec, start, n, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if last == off {
				return nil, off, fmt.Errorf("embedded: position %v is not the position of an event of this store: %w", position(off), err)
			}
			return nil, off, err
		}
		last = start + int64(n)
		if !match(filter, rec.stream) {
			if skipped++; skipped%1024 == 0 && ctx.Err() != nil {
				return nil, off, ctx.Err()
			}
			continue
		}
		events = append(events, toEvent(&rec, last, &in, copied))
	}
	return events, last, nil
}

// offsetOf returns the log offset of a position of this store.
func offsetOf(p eventstore.Position) (int64, error) {
	if p.Commit != p.Prepare || p.Commit > math.MaxInt64 {
		return 0, fmt.Errorf("embedded: position %v is not a position of this store", p)
	}
	return int64(p.Commit), nil
}

func timeOf(nanos int64) time.Time { return time.Unix(0, nanos).UTC() }

func position(off int64) eventstore.Position {
	return eventstore.Position{Commit: uint64(off), Prepare: uint64(off)}
}

// toEvent makes rec an event. Unless copied, its data and metadata are
// rec's own bytes: the reader that read rec must be owned.
func toEvent(rec *rawRecord, end int64, in *interner, copied bool) eventstore.RecordedEvent {
	ev := eventstore.RecordedEvent{
		ID:       uuid.UUID(rec.id),
		Stream:   in.bytes(rec.stream),
		Version:  rec.version,
		Position: position(end),
		Type:     in.bytes(rec.typ),
		Time:     timeOf(rec.nanos),
	}
	data, meta := rec.data, rec.meta
	if copied && len(data)+len(meta) > 0 {
		b := make([]byte, len(data)+len(meta))
		copy(b, data)
		copy(b[len(data):], meta)
		data, meta = b[:len(data)], b[len(data):]
	}
	if len(data) > 0 {
		ev.Data = data[:len(data):len(data)]
	}
	if len(meta) > 0 {
		ev.Metadata = meta[:len(meta):len(meta)]
	}
	return ev
}

// interner shares the strings of stream names and types within one read.
type interner struct{ m map[string]string }

func (in *interner) bytes(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if in.m == nil {
		in.m = make(map[string]string)
	}
	if len(in.m) < 4096 {
		in.m[s] = s
	}
	return s
}

// match is Filter.Match on a stream name in a read buffer.
func match(f eventstore.Filter, stream []byte) bool {
	if len(stream) > 0 && stream[0] == '$' {
		return false
	}
	if len(f.StreamPrefixes) == 0 {
		return true
	}
	for _, p := range f.StreamPrefixes {
		if len(stream) >= len(p) && string(stream[:len(p)]) == p {
			return true
		}
	}
	return false
}
