package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/linkd/linkd/eventstore"
)

// appendReq is one Append or AppendMulti on its way through the writer.
type appendReq struct {
	ctx   context.Context
	parts []eventstore.StreamAppend
	n     int // events
	size  int // bytes of data and metadata

	res  []eventstore.AppendResult
	err  error
	done chan struct{}
}

// Append implements eventstore.Store.
func (s *Store) Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error) {
	if err := validate(stream, events); err != nil {
		return eventstore.AppendResult{}, err
	}
	if err := s.enter(ctx); err != nil {
		return eventstore.AppendResult{}, err
	}
	defer s.exit()
	if len(events) == 0 {
		return s.check(ctx, stream, expected)
	}
	req := newReq(ctx, []eventstore.StreamAppend{{Stream: stream, Expected: expected, Events: events}})
	if err := s.submit(ctx, req); err != nil {
		return eventstore.AppendResult{}, err
	}
	return req.res[0], nil
}

// AppendMulti implements eventstore.MultiAppender: every part in one
// transaction.
func (s *Store) AppendMulti(ctx context.Context, parts ...eventstore.StreamAppend) ([]eventstore.AppendResult, error) {
	seen := make(map[string]bool, len(parts))
	for i, p := range parts {
		if len(p.Events) == 0 {
			return nil, fmt.Errorf("%w: part %d (stream %q) of a multi-stream append has no events", eventstore.ErrInvalidEvent, i, p.Stream)
		}
		if seen[p.Stream] {
			return nil, fmt.Errorf("%w: stream %q is in two parts of one append", eventstore.ErrInvalidEvent, p.Stream)
		}
		seen[p.Stream] = true
		if err := validate(p.Stream, p.Events); err != nil {
			return nil, err
		}
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.exit()
	if len(parts) == 0 {
		return nil, nil
	}
	req := newReq(ctx, parts)
	if err := s.submit(ctx, req); err != nil {
		return nil, err
	}
	return req.res, nil
}

func validate(stream string, events []eventstore.EventData) error {
	if stream == "" {
		return fmt.Errorf("%w: empty stream name", eventstore.ErrInvalidEvent)
	}
	if strings.HasPrefix(stream, "$") {
		return fmt.Errorf("%w: stream %q: names starting with $ are reserved", eventstore.ErrInvalidEvent, stream)
	}
	for i := range events {
		if events[i].Type == "" {
			return fmt.Errorf("%w: event %d of stream %q has no type", eventstore.ErrInvalidEvent, i, stream)
		}
		if n := len(events[i].Data) + len(events[i].Metadata); n > MaxEventSize {
			return fmt.Errorf("%w: event %d of stream %q is %d bytes, more than %d", eventstore.ErrInvalidEvent, i, stream, n, MaxEventSize)
		}
	}
	return nil
}

func newReq(ctx context.Context, parts []eventstore.StreamAppend) *appendReq {
	r := &appendReq{ctx: ctx, parts: parts, done: make(chan struct{})}
	for _, p := range parts {
		r.n += len(p.Events)
		for i := range p.Events {
			r.size += len(p.Events[i].Data) + len(p.Events[i].Metadata)
		}
	}
	return r
}

// check answers an append of no events: it only checks expected.
func (s *Store) check(ctx context.Context, stream string, expected eventstore.ExpectedVersion) (eventstore.AppendResult, error) {
	var ver, p *int64
	err := s.pool.QueryRow(ctx, "SELECT version, position FROM linkd_events WHERE stream = $1 ORDER BY version DESC LIMIT 1", stream).Scan(&ver, &p)
	if err != nil && err != pgx.ErrNoRows {
		return eventstore.AppendResult{}, s.dbErr(ctx, "append", err)
	}
	exists := err == nil
	var cur uint64
	if exists {
		cur = uint64(*ver)
	}
	if !expected.Check(cur, exists) {
		return eventstore.AppendResult{}, wrongVersion(stream, expected, cur, exists)
	}
	if !exists {
		return eventstore.AppendResult{}, nil
	}
	return eventstore.AppendResult{NextExpectedVersion: cur, Position: position(*p)}, nil
}

func wrongVersion(stream string, expected eventstore.ExpectedVersion, cur uint64, exists bool) error {
	state := "no stream"
	if exists {
		state = fmt.Sprintf("version %d", cur)
	}
	return fmt.Errorf("%w: stream %q is at %s, expected %s", eventstore.ErrWrongExpectedVersion, stream, state, expected)
}

// submit hands req to the writer and waits for its answer. The caller
// holds enter, so the writer runs until req is answered.
func (s *Store) submit(ctx context.Context, req *appendReq) error {
	select {
	case s.queue <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-req.done:
		return req.err
	case <-ctx.Done():
		// The append may still be committed: the caller cannot know.
		return ctx.Err()
	}
}

// runWriter is the single writer of the store: it takes every append
// waiting (up to MaxGroupEvents events and groupBytes) into one
// transaction, so that concurrent appends share one commit.
func (s *Store) runWriter() {
	defer close(s.writerEnd)
	var group []*appendReq
	var carry *appendReq
	for {
		group = group[:0]
		if carry != nil {
			group = append(group, carry)
			carry = nil
		} else {
			select {
			case r := <-s.queue:
				group = append(group, r)
			case <-s.closing:
				return
			}
		}
		n, size := group[0].n, group[0].size
	more:
		for n < s.opts.MaxGroupEvents && size < groupBytes {
			select {
			case r := <-s.queue:
				if n+r.n > s.opts.MaxGroupEvents || size+r.size > groupBytes {
					carry = r
					break more
				}
				group = append(group, r)
				n, size = n+r.n, size+r.size
			default:
				break more
			}
		}
		s.commitGroup(group)
	}
}

// streamHead is a stream's last version as the writer sees it.
type streamHead struct {
	version uint64
	exists  bool
}

// commitGroup writes the appends of group that pass their expected
// versions in one transaction and answers every one.
func (s *Store) commitGroup(group []*appendReq) {
	live := group[:0:0]
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	err := s.writeGroup(live)
	for _, r := range live {
		if r.err == nil && err != nil {
			r.err = err
		}
		close(r.done)
	}
	if err == nil {
		s.wake.broadcast()
	}
}

func (s *Store) writeGroup(group []*appendReq) error {
	ctx := context.Background()
	var names []string
	seen := map[string]bool{}
	total := 0
	for _, r := range group {
		total += r.n
		for _, p := range r.parts {
			if !seen[p.Stream] {
				seen[p.Stream] = true
				names = append(names, p.Stream)
			}
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.dbErr(ctx, "append", err)
	}
	ok := false
	defer func() {
		if !ok {
			// The transaction's state is unknown: drop the connection
			// rather than hand it back to the pool mid-transaction.
			conn.Conn().Close(ctx) //nolint:errcheck
		}
		conn.Release()
	}()

	// One round trip: begin, take the append lock, read the head and the
	// streams' last versions.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SELECT pg_advisory_xact_lock($1)", appendLock)
	b.Queue("SELECT coalesce(max(position), 0) FROM linkd_events")
	b.Queue(`SELECT n, (SELECT max(version) FROM linkd_events WHERE stream = n) FROM unnest($1::text[]) AS n`, names)
	br := conn.SendBatch(ctx, b)
	var head int64
	heads := make(map[string]streamHead, len(names))
	err = func() error {
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&head); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var v *int64
			if err := rows.Scan(&name, &v); err != nil {
				return err
			}
			if v != nil {
				heads[name] = streamHead{version: uint64(*v), exists: true}
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return s.dbErr(ctx, "append", err)
	}

	// Check each append in turn against the streams as the ones before it
	// in the group leave them; give positions and versions.
	var (
		positions = make([]int64, 0, total)
		streams   = make([]string, 0, total)
		versions  = make([]int64, 0, total)
		ids       = make([][16]byte, 0, total)
		types     = make([]string, 0, total)
		datas     = make([][]byte, 0, total)
		metas     = make([][]byte, 0, total)
	)
	next := head
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, r := range group {
		for _, p := range r.parts {
			h := heads[p.Stream]
			if !p.Expected.Check(h.version, h.exists) {
				r.err = wrongVersion(p.Stream, p.Expected, h.version, h.exists)
				break
			}
		}
		if r.err != nil {
			continue
		}
		r.res = make([]eventstore.AppendResult, len(r.parts))
		for i, p := range r.parts {
			h := heads[p.Stream]
			v := h.version
			if h.exists {
				v++
			}
			for _, ev := range p.Events {
				next++
				id := ev.ID
				if id == uuid.Nil {
					id = uuid.New()
				}
				data := ev.Data
				if data == nil {
					data = []byte{}
				}
				positions = append(positions, next)
				streams = append(streams, p.Stream)
				versions = append(versions, int64(v))
				ids = append(ids, [16]byte(id))
				types = append(types, ev.Type)
				datas = append(datas, data)
				metas = append(metas, ev.Metadata)
				v++
			}
			heads[p.Stream] = streamHead{version: v - 1, exists: true}
			r.res[i] = eventstore.AppendResult{NextExpectedVersion: v - 1, Position: position(next)}
		}
	}
	if len(positions) == 0 {
		// Every append failed its expected version: nothing to write.
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return s.dbErr(ctx, "append", err)
		}
		ok = true
		return nil
	}

	b = &pgx.Batch{}
	b.Queue(`INSERT INTO linkd_events (`+eventColumns+`)
		SELECT p, s, v, i, t, d, m, $8 FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::uuid[], $5::text[], $6::bytea[], $7::bytea[]) AS u(p, s, v, i, t, d, m)`,
		positions, streams, versions, ids, types, datas, metas, now)
	b.Queue("SELECT pg_notify($1, $2)", notifyChannel, fmt.Sprint(next))
	if s.opts.beforeCommit == nil {
		b.Queue("COMMIT")
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return s.dbErr(ctx, "append", err)
	}
	if s.opts.beforeCommit != nil {
		s.opts.beforeCommit()
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			return s.dbErr(ctx, "append", err)
		}
	}
	ok = true
	return nil
}
