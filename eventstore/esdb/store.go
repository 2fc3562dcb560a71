package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/linkd/linkd/eventstore"
)

// readPage bounds the events asked for in one read of $all; reads that skip
// system events go on page by page.
const readPage = 512

// Append implements eventstore.Store. EventStoreDB checks expected and
// writes the events atomically; it reports the revision and the
// transaction-log position of the last event written.
func (s *Store) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if err := validate(stream, events); err != nil {
		return eventstore.AppendResult{}, err
	}
	if len(events) == 0 {
		return s.check(ctx, stream, expected)
	}
	db, err := s.client()
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	data := make([]esdb.EventData, len(events))
	for i, e := range events {
		data[i] = eventData(e)
	}
	res, err := db.AppendToStream(ctx, stream, esdb.AppendToStreamOptions{ExpectedRevision: expectedRevision(expected)}, data...)
	if err != nil {
		return eventstore.AppendResult{}, s.fail(ctx, db, fmt.Sprintf("append to %q (expected %s)", stream, expected), err)
	}
	return eventstore.AppendResult{
		NextExpectedVersion: res.NextExpectedVersion,
		Position:            eventstore.Position{Commit: res.CommitPosition, Prepare: res.PreparePosition},
	}, nil
}

// check is an append of no events: it writes nothing, so it reads the last
// event of the stream and checks expected here, where the port's
// ExpectedVersion.Check keeps every adapter in agreement. (The server would
// check too, but reports no revision for an empty stream.)
func (s *Store) check(ctx context.Context, stream string, expected eventstore.ExpectedVersion) (eventstore.AppendResult, error) {
	last, ok, err := s.last(ctx, stream)
	if err != nil {
		return eventstore.AppendResult{}, err
	}
	if !expected.Check(last.Version, ok) {
		current := "no stream"
		if ok {
			current = fmt.Sprint(last.Version)
		}
		return eventstore.AppendResult{}, fmt.Errorf("esdb: append to %q (expected %s): %w: stream is at %s",
			stream, expected, eventstore.ErrWrongExpectedVersion, current)
	}
	return eventstore.AppendResult{NextExpectedVersion: last.Version, Position: last.Position}, nil
}

func validate(stream string, events []eventstore.EventData) error {
	if stream == "" || isSystemStream(stream) {
		return fmt.Errorf("esdb: stream name %q: %w", stream, eventstore.ErrInvalidEvent)
	}
	for i, e := range events {
		if e.Type == "" {
			return fmt.Errorf("esdb: append to %q: event %d has no type: %w", stream, i, eventstore.ErrInvalidEvent)
		}
	}
	return nil
}

// ReadStream implements eventstore.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, max int) ([]eventstore.RecordedEvent, error) {
	if max <= 0 {
		return nil, nil
	}
	op := fmt.Sprintf("read stream %q", stream)
	var out []eventstore.RecordedEvent
	err := s.read(ctx, op, func(db *esdb.Client) (*esdb.ReadStream, error) {
		return db.ReadStream(ctx, stream, esdb.ReadStreamOptions{Direction: esdb.Forwards, From: esdb.Revision(from)}, uint64(max))
	}, func(e eventstore.RecordedEvent) bool {
		out = append(out, e)
		return true
	})
	return out, err
}

// StreamVersion implements eventstore.Store.
func (s *Store) StreamVersion(ctx context.Context, stream string) (uint64, bool, error) {
	last, ok, err := s.last(ctx, stream)
	return last.Version, ok, err
}

// last reads the last event of stream, false when the stream has none.
func (s *Store) last(ctx context.Context, stream string) (eventstore.RecordedEvent, bool, error) {
	var last eventstore.RecordedEvent
	found := false
	err := s.read(ctx, fmt.Sprintf("read stream %q", stream), func(db *esdb.Client) (*esdb.ReadStream, error) {
		return db.ReadStream(ctx, stream, esdb.ReadStreamOptions{Direction: esdb.Backwards, From: esdb.End{}}, 1)
	}, func(e eventstore.RecordedEvent) bool {
		last, found = e, true
		return false
	})
	if errors.Is(err, eventstore.ErrStreamNotFound) {
		return eventstore.RecordedEvent{}, false, nil
	}
	return last, found, err
}

// ReadAll implements eventstore.Store. A forward read of $all from a
// position includes the event at that position, and system events count
// against the read's size: both are skipped here, page after page, until
// max events are found or the log ends.
func (s *Store) ReadAll(ctx context.Context, afterPos eventstore.Position, max int) ([]eventstore.RecordedEvent, error) {
	var out []eventstore.RecordedEvent
	for len(out) < max {
		n := min(max-len(out)+1, readPage) // +1: the event at afterPos comes back
		read := 0
		err := s.read(ctx, "read $all", func(db *esdb.Client) (*esdb.ReadStream, error) {
			return db.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Forwards, From: allPosition(afterPos)}, uint64(n))
		}, func(e eventstore.RecordedEvent) bool {
			read++
			if !after(afterPos, e.Position) {
				return true
			}
			afterPos = e.Position
			if !isSystemStream(e.Stream) {
				out = append(out, e)
			}
			return len(out) < max
		})
		if err != nil {
			return nil, err
		}
		if read < n {
			break // the end of the log
		}
	}
	return out, nil
}

// Head implements eventstore.Store: the position of the last event that is
// not a system event, read backwards from the end of $all page by page.
// (Whether a backward read includes the event at its start position does
// not matter: that event is a system event already seen.)
func (s *Store) Head(ctx context.Context) (eventstore.Position, error) {
	var from esdb.AllPosition = esdb.End{}
	for {
		var head, last *eventstore.Position
		read := 0
		err := s.read(ctx, "read $all backwards", func(db *esdb.Client) (*esdb.ReadStream, error) {
			return db.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Backwards, From: from}, readPage)
		}, func(e eventstore.RecordedEvent) bool {
			read++
			last = &e.Position
			if isSystemStream(e.Stream) {
				return true
			}
			head = &e.Position
			return false
		})
		switch {
		case err != nil:
			return eventstore.Start, err
		case head != nil:
			return *head, nil
		case read < readPage:
			return eventstore.Start, nil // the start of the log
		}
		from = esdb.Position{Commit: last.Commit, Prepare: last.Prepare}
	}
}

// read runs one read and hands its events to each until each returns false
// or the read ends.
func (s *Store) read(ctx context.Context, op string, open func(*esdb.Client) (*esdb.ReadStream, error), each func(eventstore.RecordedEvent) bool) error {
	db, err := s.client()
	if err != nil {
		return err
	}
	rs, err := open(db)
	if err != nil {
		return s.fail(ctx, db, op, err)
	}
	defer rs.Close()
	for {
		r, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return s.fail(ctx, db, op, err)
		}
		e, ok := recorded(r)
		if !ok {
			continue
		}
		if !each(e) {
			return nil
		}
	}
}
