package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// checkpointRecord is the data of a checkpoint record: the position as
// Position.String, since JSON numbers lose precision past 2^53.
type checkpointRecord struct {
	Position string `json:"position"`
}

// saveAttempts bounds the writes of one save that lose to other processes'.
const saveAttempts = 10

// flushTimeout bounds a delayed write of a checkpoint.
const flushTimeout = 10 * time.Second

// pendingCheckpoint is what this process has of one checkpoint.
type pendingCheckpoint struct {
	written time.Time // when a write last began
	pending Position  // the highest saved and not written yet; Start: none
	flush   *time.Timer
}

// LoadCheckpoint implements Checkpoints: the position of the last record,
// or a higher one this process saved and has not written yet.
func (s *Shared) LoadCheckpoint(ctx context.Context, name string) (Position, error) {
	r, ok, err := s.records.LastRecord(ctx, CheckpointStreamPrefix+name)
	if err != nil {
		return Start, err
	}
	p := Start
	if ok {
		if p, err = decodeCheckpoint(r); err != nil {
			return Start, fmt.Errorf("checkpoint %q: %w", name, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.checkpoints[name]; c != nil && p.Less(c.pending) {
		p = c.pending
	}
	return p, nil
}

// SaveCheckpoint implements Checkpoints. It writes a record when p is
// above the last one. With CheckpointEvery, a save that comes sooner
// after this process's last write is kept and written when the time is
// up (it returns nil at once): a store whose records are events grows by
// one event per CheckpointEvery at most, and a process that dies loses at
// most that much of its progress (what it then publishes again, the
// consumers skip).
func (s *Shared) SaveCheckpoint(ctx context.Context, name string, p Position) error {
	if s.every > 0 {
		s.mu.Lock()
		c := s.checkpoints[name]
		if c == nil {
			c = &pendingCheckpoint{}
			s.checkpoints[name] = c
		}
		if p.Less(c.pending) {
			p = c.pending
		}
		if wait := s.every - time.Since(c.written); wait > 0 {
			c.pending = p
			if c.flush == nil {
				s.flushes++
				c.flush = time.AfterFunc(wait, func() { s.flush(name) })
			}
			s.mu.Unlock()
			return nil
		}
		c.written, c.pending = time.Now(), Start
		s.mu.Unlock()
	}
	return s.writeCheckpoint(ctx, name, p)
}

// flush writes the checkpoint kept for name (a delayed write's timer).
func (s *Shared) flush(name string) {
	defer s.flushEnded()
	s.mu.Lock()
	c := s.checkpoints[name]
	p := c.pending
	c.written, c.pending, c.flush = time.Now(), Start, nil
	s.mu.Unlock()
	if p.IsZero() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := s.writeCheckpoint(ctx, name, p); err != nil {
		s.log.Warn("checkpoint: delayed write failed; the next save writes it", "checkpoint", name, "position", p.String(), "err", err)
	}
}

// flushEnded counts a delayed write as ended.
func (s *Shared) flushEnded() {
	s.mu.Lock()
	s.flushes--
	s.flushed.Broadcast()
	s.mu.Unlock()
}

// writeCheckpoint writes p after the last record unless that one is as
// high, reading again when another process wrote first.
func (s *Shared) writeCheckpoint(ctx context.Context, name string, p Position) error {
	stream := CheckpointStreamPrefix + name
	data, _ := json.Marshal(checkpointRecord{Position: p.String()})
	for attempt := 1; ; attempt++ {
		r, ok, err := s.records.LastRecord(ctx, stream)
		if err != nil {
			return err
		}
		expected := NoStream()
		if ok {
			if at, err := decodeCheckpoint(r); err == nil && !at.Less(p) {
				return nil
			}
			expected = Exact(r.Version)
		}
		_, err = s.records.PutRecord(ctx, stream, expected, Record{Type: checkpointSaved, Data: data})
		if err == nil || !errors.Is(err, ErrWrongExpectedVersion) || attempt == saveAttempts {
			return err
		}
	}
}

func decodeCheckpoint(r Record) (Position, error) {
	var c checkpointRecord
	if err := json.Unmarshal(r.Data, &c); err != nil {
		return Start, fmt.Errorf("bad checkpoint record: %w", err)
	}
	return ParsePosition(c.Position)
}

// Flush writes at once what this process saved and has not written yet
// (CheckpointEvery): a store calls it as it closes.
func (s *Shared) Flush(ctx context.Context) error {
	type save struct {
		name string
		p    Position
	}
	var saves []save
	s.mu.Lock()
	for name, c := range s.checkpoints {
		if c.flush != nil {
			if c.flush.Stop() {
				s.flushes-- // it will not run
			}
			c.flush = nil
		}
		if !c.pending.IsZero() {
			saves = append(saves, save{name, c.pending})
			c.written, c.pending = time.Now(), Start
		}
	}
	// A delayed write whose timer fired already ends before Flush
	// returns: the store may close its connection next, and closing the
	// EventStoreDB client under a call still running is a data race in
	// the client (found by the race detector).
	for s.flushes > 0 {
		s.flushed.Wait()
	}
	s.mu.Unlock()
	var errs []error
	for _, sv := range saves {
		if err := s.writeCheckpoint(ctx, sv.name, sv.p); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint %q: %w", sv.name, err))
		}
	}
	return errors.Join(errs...)
}
