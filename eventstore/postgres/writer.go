package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	if err := s.joined(ctx); err != nil {
		return err
	}
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

// runWriter is one of the store's writers: it takes every append waiting
// (up to MaxGroupEvents events and groupBytes) into one transaction, so
// that concurrent appends share one commit. With more than one writer
// (Options.Writers), claim keeps groups that share a stream one after the
// other.
func (s *Store) runWriter() {
	defer s.writers.Done()
	var group []*appendReq
	var carry *appendReq
	lastReqs := 0
	heads := map[string]streamHead{} // knownHeads', reused group after group
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
		// Under load (the last group held several appends) wait up to
		// Linger for the callers of the last group to come back: a bigger
		// group shares one commit among more appends.
		var (
			linger <-chan time.Time
			timer  *time.Timer
		)
		if s.opts.Linger > 0 && lastReqs >= lingerAfter {
			timer = time.NewTimer(s.opts.Linger)
			linger = timer.C
		}
	more:
		for n < s.opts.MaxGroupEvents && size < groupBytes {
			var r *appendReq
			select {
			case r = <-s.queue:
			default:
				if linger == nil || len(group) >= lastReqs {
					break more
				}
				select {
				case r = <-s.queue:
				case <-linger:
					break more
				}
			}
			if n+r.n > s.opts.MaxGroupEvents || size+r.size > groupBytes {
				carry = r
				break more
			}
			group = append(group, r)
			n, size = n+r.n, size+r.size
		}
		if timer != nil {
			timer.Stop()
		}
		lastReqs = len(group)
		s.commitGroup(group, heads)
	}
}

// streamHead is a stream's last version as the writer sees it.
type streamHead struct {
	version uint64
	exists  bool
}

// commitGroup writes the appends of group that pass their expected
// versions in one transaction and answers every one. heads is the
// writer's map for knownHeads.
func (s *Store) commitGroup(group []*appendReq, heads map[string]streamHead) {
	live := s.live(group)
	if len(live) == 0 {
		return
	}
	names := s.claim(streamNames(live))
	relaxed := s.relaxable(live)
	if relaxed {
		// Counted until committed has moved relaxedHead: the commit may
		// be visible to readers before.
		s.relaxing.Add(1)
	}
	err := s.writeGroup(live, names, relaxed, heads)
	if relaxed {
		s.relaxing.Add(-1)
	}
	s.release(names)
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

// writeGroup writes group in one transaction. When the writer knows the
// last version of every stream of the group and every append passes its
// expected version against them, the whole transaction goes in one round
// trip (begin, lock, insert, notify, commit). What it knows is what it
// wrote or read, so another process may have appended since: then the
// insert breaks UNIQUE (stream, version), the transaction rolls back, and
// the group goes the long way, reading the streams' versions under the
// lock first.
func (s *Store) writeGroup(group []*appendReq, names []string, relaxed bool, known map[string]streamHead) error {
	// A server that does not answer fails the group in time: its appends
	// answer ErrUnavailable (503) rather than hang (their outcome is then
	// unknown, as with any lost answer).
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.dbErr(ctx, "append", err)
	}
	ok := false
	defer func() {
		if !ok {
			// The transaction's state is unknown: drop the connection
			// rather than hand it back to the pool mid-transaction, and
			// forget the versions known.
			conn.Conn().Close(ctx) //nolint:errcheck
			s.forgetVersions()
		}
		conn.Release()
	}()

	// Appends that all expect any version can have their versions given
	// by the database, in the same one round trip (plan with nil heads):
	// when the writer does not know a stream's version, and while other
	// processes append to the same streams (clicks of one link on every
	// instance of a deployment), whose known versions would be stale.
	// Otherwise the versions it knows are cheaper to insert.
	byDB := func() error {
		rows := s.plan(group, nil, relaxed)
		if err := s.insert(ctx, conn.Conn(), rows); err != nil {
			return s.dbErr(ctx, "append", err)
		}
		ok = true
		s.committed(group, rows)
		return nil
	}
	anyVersion := allAny(group)
	if anyVersion && s.sharing() {
		return byDB()
	}
	fast := s.knownHeads(group, names, known)
	if !fast && anyVersion {
		return byDB()
	}
	if fast {
		rows := s.plan(group, known, relaxed)
		err := s.insert(ctx, conn.Conn(), rows)
		if err == nil {
			ok = true
			s.committed(group, rows)
			return nil
		}
		if !uniqueViolation(err) {
			return s.dbErr(ctx, "append", err)
		}
		s.metOtherProcess(group)
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return s.dbErr(ctx, "append", err)
		}
		if anyVersion {
			return byDB()
		}
	}

	// The long way: begin, take the append lock and read the streams'
	// last versions in one round trip, then insert and commit in another.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SELECT pg_advisory_xact_lock($1)", appendLock)
	b.Queue(`SELECT n, (SELECT max(version) FROM linkd_events WHERE stream = n) FROM unnest($1::text[]) AS n`, names)
	br := conn.SendBatch(ctx, b)
	heads := make(map[string]streamHead, len(names))
	err = func() error {
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return err
		}
		s.vmu.Lock()
		defer s.vmu.Unlock()
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
				s.versions[name] = uint64(*v)
			} else {
				delete(s.versions, name)
			}
		}
		return rows.Err()
	}()
	if err != nil {
		return s.dbErr(ctx, "append", err)
	}
	rows := s.plan(group, heads, relaxed)
	if len(rows.streams) == 0 {
		// Every append failed its expected version: nothing to write.
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return s.dbErr(ctx, "append", err)
		}
		ok = true
		return nil
	}
	if err := s.insert(ctx, conn.Conn(), rows); err != nil {
		return s.dbErr(ctx, "append", err)
	}
	ok = true
	s.committed(group, rows)
	return nil
}

// metOtherProcess notes that group's insert at the versions the writer
// knew met another process's append (the unique violation of
// uniqueViolation), and clears the results planned for group, which goes
// again with versions read or given by the database.
func (s *Store) metOtherProcess(group []*appendReq) {
	s.shared.Store(time.Now().UnixNano())
	for _, r := range group {
		r.res, r.err = nil, nil
	}
}

// uniqueViolation reports whether err broke UNIQUE (stream, version):
// another process took a version.
func uniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// forgetVersions drops the streams' versions the writer knows, after a
// transaction whose outcome it does not know.
func (s *Store) forgetVersions() {
	s.vmu.Lock()
	clear(s.versions)
	s.vmu.Unlock()
}

// sharingFor is how long, after an insert at the versions the writer
// knew met another process's append, appends that expect any version
// have their versions given by the database rather than tried at the
// versions the writer knows.
const sharingFor = 10 * time.Second

// sharing reports whether another process appended to a stream this one
// wrote lately.
func (s *Store) sharing() bool {
	t := s.shared.Load()
	return t != 0 && time.Since(time.Unix(0, t)) < sharingFor
}

// allAny reports whether every append of group expects any version: the
// database can then number the events itself.
func allAny(group []*appendReq) bool {
	for _, r := range group {
		for _, p := range r.parts {
			if !p.Expected.IsAny() {
				return false
			}
		}
	}
	return true
}

// knownHeads returns the last versions of names as the writer knows them,
// and whether it knows every one and every append of group passes its
// expected version against them (an append that fails goes the long way,
// to fail against what the database holds, not against a guess). It
// fills heads (cleared first) with those versions, which plan starts from.
func (s *Store) knownHeads(group []*appendReq, names []string, heads map[string]streamHead) bool {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	clear(heads)
	for _, n := range names {
		v, ok := s.versions[n]
		if !ok {
			return false
		}
		heads[n] = streamHead{version: v, exists: true}
	}
	for _, r := range group {
		for _, p := range r.parts {
			h := heads[p.Stream]
			if !p.Expected.Check(h.version, h.exists) {
				return false
			}
			if n := uint64(len(p.Events)); n > 0 {
				heads[p.Stream] = streamHead{version: h.version + n, exists: true}
			}
		}
	}
	// Undo the walk: plan starts from the known versions again.
	for _, n := range names {
		heads[n] = streamHead{version: s.versions[n], exists: true}
	}
	return true
}

// groupRows are the columns of a group's events, in log order; positions
// are given by the database (its head plus the row's ordinal).
type groupRows struct {
	streams  []string
	versions []int64
	ids      [][16]byte
	types    []string
	datas    [][]byte
	metas    [][]byte
	values   []any
	now      time.Time
	head     int64 // the log's head before the group: set by insert
	ends     map[string]uint64
	cats     []string // the categories of the group's streams (linkd_heads)
	// relaxed: the group commits without waiting for the WAL flush
	// (relaxed.go).
	relaxed bool
	// byDB: the versions are the database's to give (plan had no heads):
	// insert fills versions and ends, committed the results' versions;
	// lasts[r][i] is the row of the last event of group[r]'s part i.
	byDB  bool
	lasts [][]int
}

// plan checks each append of group in turn against heads as the ones
// before it leave them, fails those that do not pass, and lays out the
// rows of the others. The results' positions are offsets from the head
// until insert learns it. With nil heads (every append expects any
// version) the database numbers the versions. relaxed: the group commits
// without waiting for the WAL flush (relaxed.go).
func (s *Store) plan(group []*appendReq, heads map[string]streamHead, relaxed bool) *groupRows {
	total := 0
	for _, r := range group {
		total += r.n
	}
	g := &groupRows{
		streams:  make([]string, 0, total),
		versions: make([]int64, 0, total),
		ids:      make([][16]byte, 0, total),
		types:    make([]string, 0, total),
		datas:    make([][]byte, 0, total),
		metas:    make([][]byte, 0, total),
		values:   make([]any, 0, total),
		now:      time.Now().UTC().Truncate(time.Microsecond),
		ends:     map[string]uint64{},
		byDB:     heads == nil,
		relaxed:  relaxed,
	}
	for _, r := range group {
		if g.byDB {
			last := make([]int, len(r.parts))
			for i, p := range r.parts {
				for _, ev := range p.Events {
					g.add(p.Stream, -1, ev)
				}
				last[i] = len(g.streams) - 1
				r.res = append(r.res, eventstore.AppendResult{Position: position(int64(len(g.streams)))})
			}
			g.lasts = append(g.lasts, last)
			continue
		}
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
				g.add(p.Stream, int64(v), ev)
				v++
			}
			heads[p.Stream] = streamHead{version: v - 1, exists: true}
			g.ends[p.Stream] = v - 1
			r.res[i] = eventstore.AppendResult{NextExpectedVersion: v - 1, Position: position(int64(len(g.streams)))}
		}
	}
	return g
}

// add lays out the row of one event of stream at version v (-1: the
// database's to give).
func (g *groupRows) add(stream string, v int64, ev eventstore.EventData) {
	id := ev.ID
	if id == uuid.Nil {
		id = uuid.New()
	}
	data := ev.Data
	if data == nil {
		data = []byte{}
	}
	g.streams = append(g.streams, stream)
	g.versions = append(g.versions, v)
	g.ids = append(g.ids, [16]byte(id))
	g.types = append(g.types, ev.Type)
	g.datas = append(g.datas, data)
	g.metas = append(g.metas, ev.Metadata)
	g.values = append(g.values, ev.Value)
	if c, _, _ := strings.Cut(stream, "-"); !slices.Contains(g.cats, c) {
		g.cats = append(g.cats, c)
	}
}

// insert runs the group's transaction to its commit: linkd_append (the
// append lock, the rows at the positions after the head, the heads, the
// notification) in one statement, its own transaction unless the long
// way began one already, or a test holds the commit (beforeCommit).
func (s *Store) insert(ctx context.Context, conn *pgx.Conn, g *groupRows) error {
	hold := s.opts.beforeCommit != nil
	began := conn.PgConn().TxStatus() != 'I'
	if _, err := conn.Prepare(ctx, appendStmt, appendSQL); err != nil {
		return err
	}
	b := &pgconn.Batch{}
	if hold && !began {
		b.ExecParams("BEGIN", nil, nil, nil, nil)
	}
	b.ExecPrepared(appendStmt, g.appendParams(notifyChannel, s.instance), binaryFormats, binaryFormats[:1])
	commit := began && !hold
	if commit {
		b.ExecParams("COMMIT", nil, nil, nil, nil)
	}
	results, err := conn.PgConn().ExecBatch(ctx, b).ReadAll()
	if err != nil {
		return err
	}
	for _, r := range results {
		if r.Err != nil {
			return r.Err
		}
	}
	res := results[0]
	if hold && !began {
		res = results[1]
	}
	if err := g.setHeadFrom(res); err != nil {
		return err
	}
	if hold {
		s.opts.beforeCommit()
		if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
			return err
		}
	}
	return nil
}

// setHeadFrom reads linkd_append's answer, one row of one bigint[] in
// binary format, and sets the group's head from it (setHead).
func (g *groupRows) setHeadFrom(r *pgconn.Result) error {
	if len(r.Rows) != 1 || len(r.Rows[0]) != 1 {
		return errors.New("postgres: linkd_append returned no row")
	}
	res, err := parseInt8Array(r.Rows[0][0])
	if err != nil {
		return err
	}
	return g.setHead(res)
}

// setHead reads what linkd_append returned: the log's head before the
// group, then, when the database gave the versions, the rows' versions
// in position order, and the streams' last.
func (g *groupRows) setHead(res []int64) error {
	if len(res) == 0 {
		return errors.New("postgres: linkd_append returned nothing")
	}
	g.head = res[0]
	if !g.byDB {
		return nil
	}
	vs := res[1:]
	if len(vs) != len(g.versions) {
		return fmt.Errorf("postgres: linkd_append returned %d versions for %d events", len(vs), len(g.versions))
	}
	for i, v := range vs {
		g.versions[i] = v
		if e, ok := g.ends[g.streams[i]]; !ok || uint64(v) > e {
			g.ends[g.streams[i]] = uint64(v)
		}
	}
	return nil
}

// committed records what a group's commit wrote: the streams' versions,
// the results' positions, and the events for the store's subscriptions.
func (s *Store) committed(group []*appendReq, g *groupRows) {
	s.vmu.Lock()
	if len(s.versions) > maxKnownVersions {
		clear(s.versions)
	}
	for stream, v := range g.ends {
		s.versions[stream] = v
	}
	s.vmu.Unlock()
	for k, r := range group {
		for i := range r.res {
			r.res[i].Position = position(g.head + int64(r.res[i].Position.Commit))
			if g.byDB {
				r.res[i].NextExpectedVersion = uint64(g.versions[g.lasts[k][i]])
			}
		}
	}
	evs := make([]eventstore.RecordedEvent, len(g.streams))
	for i := range evs {
		// datas and metas are the copies in linkd_append's parameters
		// (appendParams): the caller may reuse its own once answered.
		evs[i] = eventstore.RecordedEvent{
			ID: uuid.UUID(g.ids[i]), Stream: g.streams[i], Version: uint64(g.versions[i]),
			Position: position(g.head + int64(i) + 1), Type: g.types[i],
			Data: g.datas[i], Metadata: g.metas[i], Time: g.now, Value: g.values[i],
		}
	}
	if len(evs) > 0 {
		// Before the events are in memory for the subscriptions, which
		// bound what they deliver by it.
		s.committedAt(int64(evs[len(evs)-1].Position.Commit), g.relaxed)
	}
	if !s.recent.add(evs) {
		s.foreign.Add(1) // another process committed between
	}
	if len(evs) > 0 {
		raise(&s.ownHead, int64(evs[len(evs)-1].Position.Commit))
	}
}

// claim waits until no other writer's group holds one of names (a
// group's streams), then marks them as held, and returns them.
func (s *Store) claim(names []string) []string {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	for s.held(names) {
		s.flight.Wait()
	}
	for _, n := range names {
		s.inflight[n] = true
	}
	return names
}

func (s *Store) held(names []string) bool {
	for _, n := range names {
		if s.inflight[n] {
			return true
		}
	}
	return false
}

// release ends a claim.
func (s *Store) release(names []string) {
	s.vmu.Lock()
	for _, n := range names {
		delete(s.inflight, n)
	}
	s.vmu.Unlock()
	s.flight.Broadcast()
}
