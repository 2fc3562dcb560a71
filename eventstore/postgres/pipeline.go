package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The pipelined writer (ADR 0124). With one writer, a group is sent on
// the writer's connection while the group before it is still on its
// way: PostgreSQL starts it as soon as the one before commits, rather
// than after a round trip through linkd. A group sent that way leaves
// out the streams of the group in flight, whose versions it would
// otherwise assume committed; it only takes the fast path (every
// stream's version known, the store not sharing its streams). Anything
// else waits for the group in flight and goes the serial way
// (commitGroup).

// flight is a group sent on the pipeline whose answer is not read yet.
type flight struct {
	group   []*appendReq
	names   []string
	rows    *groupRows
	relaxed bool
}

// pipe is the writer's pipeline on a connection of its own, open while
// groups follow one another.
type pipe struct {
	ctx    context.Context
	cancel context.CancelFunc
	conn   *pgxpool.Conn
	pl     *pgconn.Pipeline
	ends   time.Time // no group is sent after: its context then ends
	flight *flight
}

// runPipelined is the store's writer when it is alone (Options.Writers
// 1).
func (s *Store) runPipelined() {
	defer s.writers.Done()
	var (
		p       *pipe
		pending []*appendReq // taken from the queue, not yet in a group
		heads   = map[string]streamHead{}
		inHeld  = map[string]bool{} // the streams of the group in flight
	)
	for {
		if p != nil && p.flight == nil && len(pending) == 0 {
			// collect may wait for an append longer than p's context
			// lasts: close p first.
			s.endPipe(p)
			p = nil
		}
		var held map[string]bool // nil: nothing in flight
		if p != nil && p.flight != nil {
			clear(inHeld)
			for _, n := range p.flight.names {
				inHeld[n] = true
			}
			held = inHeld
		}
		var group []*appendReq
		var closing bool
		group, pending, closing = s.collect(pending, held)
		if closing {
			return // nothing in flight: collect waited
		}
		group = s.live(group)
		if len(group) == 0 {
			if p != nil {
				s.finish(p, heads)
				p = nil
			}
			continue
		}
		if p != nil && p.flight != nil && events(group) < len(p.flight.rows.streams)/2 {
			// Too few to go now: they wait for the group in flight, with
			// those that come meanwhile (smaller groups cost PostgreSQL
			// more a click).
			pending = append(group, pending...)
			if again := s.land(p); again != nil {
				s.endPipe(p)
				p = nil
				s.commitGroup(again, heads)
			}
			continue
		}
		if p != nil && time.Now().After(p.ends) {
			// Before knownHeads fills heads: finish may use it
			// (commitGroup).
			s.finish(p, heads)
			p = nil
		}
		names := streamNames(group)
		fast := s.opts.beforeCommit == nil && !(allAny(group) && s.sharing()) && s.knownHeads(group, names, heads)
		if !fast {
			if p != nil {
				s.finish(p, heads)
				p = nil
			}
			s.commitGroup(group, heads)
			continue
		}
		if p == nil {
			var err error
			if p, err = s.startPipe(); err != nil {
				s.answer(group, err)
				continue
			}
		}
		if p.flight != nil {
			s.overlapped.Add(1)
		}
		f := &flight{group: group, names: s.claim(names), relaxed: s.relaxable(group)}
		if f.relaxed {
			s.relaxing.Add(1)
		}
		f.rows = s.plan(group, heads, f.relaxed)
		p.pl.SendQueryPrepared(appendStmt, f.rows.appendParams(notifyChannel, s.instance), binaryFormats, binaryFormats[:1])
		p.pl.SendPipelineSync()
		err := p.pl.Flush()
		// The group before, sent earlier, answers first.
		again := s.land(p)
		p.flight = f
		if err != nil || again != nil {
			// Broken (f fails), or the group before goes again the
			// serial way once f is answered.
			s.finish(p, heads)
			p = nil
			if again != nil {
				s.commitGroup(again, heads)
			}
		}
	}
}

// collect takes the next group: pending first, then the queue, up to
// MaxGroupEvents and groupBytes, leaving in pending the appends that
// touch a stream of held (the group in flight) or do not fit. It waits
// for a first append only when nothing is held (no group in flight);
// closing reports the store closing with nothing to write.
func (s *Store) collect(pending []*appendReq, held map[string]bool) (group, rest []*appendReq, closing bool) {
	n, size := 0, 0
	full := false
	take := func(r *appendReq) {
		waits := touches(r, held)
		if full || waits || (len(group) > 0 && (n+r.n > s.opts.MaxGroupEvents || size+r.size > groupBytes)) {
			full = full || !waits
			rest = append(rest, r)
			return
		}
		group = append(group, r)
		n, size = n+r.n, size+r.size
	}
	for _, r := range pending {
		take(r)
	}
	if len(group) == 0 && len(rest) == 0 && held == nil {
		select {
		case r := <-s.queue:
			take(r)
		case <-s.closing:
			return nil, nil, true
		}
	}
	for !full {
		select {
		case r := <-s.queue:
			take(r)
			continue
		default:
		}
		break
	}
	return group, rest, false
}

func touches(r *appendReq, held map[string]bool) bool {
	if held == nil {
		return false
	}
	for _, p := range r.parts {
		if held[p.Stream] {
			return true
		}
	}
	return false
}

// live answers the appends of group whose callers have gone, and returns
// the others (in group's array).
func (s *Store) live(group []*appendReq) []*appendReq {
	live := group[:0]
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	return live
}

func streamNames(group []*appendReq) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range group {
		for _, p := range r.parts {
			if !seen[p.Stream] {
				seen[p.Stream] = true
				names = append(names, p.Stream)
			}
		}
	}
	return names
}

// answer fails every append of group with err.
func (s *Store) answer(group []*appendReq, err error) {
	for _, r := range group {
		r.err = err
		close(r.done)
	}
}

// startPipe acquires the writer's connection and opens a pipeline on it,
// whose context ends WriteTimeout after: groups are sent on it for half
// that, so that a server that stops answering fails them in time.
func (s *Store) startPipe() (*pipe, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		cancel()
		return nil, s.dbErr(ctx, "append", err)
	}
	if _, err := conn.Conn().Prepare(ctx, appendStmt, appendSQL); err != nil {
		conn.Conn().Close(ctx) //nolint:errcheck
		conn.Release()
		cancel()
		return nil, s.dbErr(ctx, "append", err)
	}
	return &pipe{
		ctx: ctx, cancel: cancel, conn: conn,
		pl:   conn.Conn().PgConn().StartPipeline(ctx),
		ends: time.Now().Add(s.opts.WriteTimeout / 2),
	}, nil
}

// finish lands p's group in flight and closes p; the group goes again the
// serial way if land says so.
func (s *Store) finish(p *pipe, heads map[string]streamHead) {
	again := s.land(p)
	s.endPipe(p)
	if again != nil {
		s.commitGroup(again, heads)
	}
}

// endPipe closes p's pipeline, which has nothing in flight, and gives its
// connection back, or drops it when broken.
func (s *Store) endPipe(p *pipe) {
	if err := p.pl.Close(); err != nil || p.conn.Conn().PgConn().TxStatus() != 'I' {
		p.conn.Conn().Close(p.ctx) //nolint:errcheck
	}
	p.conn.Release()
	p.cancel()
}

// land reads the answer of p's group in flight, if any, and answers its
// appends. A group that met another process's append (its versions
// taken) is returned unanswered, to go again the serial way (as
// writeGroup's fast path does) once the groups sent after it are
// answered: memory takes in commits in the order of their positions.
func (s *Store) land(p *pipe) (again []*appendReq) {
	f := p.flight
	if f == nil {
		return nil
	}
	p.flight = nil
	err := s.readAppend(p, f.rows)
	if f.relaxed {
		defer s.relaxing.Add(-1)
	}
	if err == nil {
		s.committed(f.group, f.rows)
		s.release(f.names)
		for _, r := range f.group {
			close(r.done)
		}
		s.wake.broadcast()
		return nil
	}
	s.release(f.names)
	if uniqueViolation(err) {
		s.metOtherProcess(f.group)
		return f.group
	}
	s.forgetVersions()
	s.answer(f.group, s.dbErr(p.ctx, "append", err))
	return nil
}

// readAppend reads linkd_append's answer and the pipeline's sync, and
// sets the head of the group in flight.
func (s *Store) readAppend(p *pipe, g *groupRows) error {
	res, err := p.pl.GetResults()
	if err != nil {
		return err
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return fmt.Errorf("postgres: pipeline answered %T, not linkd_append's rows", res)
	}
	r := rr.Read()
	if res, err := p.pl.GetResults(); err != nil {
		return err
	} else if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("postgres: pipeline answered %T, not its sync", res)
	}
	if r.Err != nil {
		return r.Err
	}
	return g.setHeadFrom(r)
}

func events(group []*appendReq) int {
	n := 0
	for _, r := range group {
		n += r.n
	}
	return n
}
