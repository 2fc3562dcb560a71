package stats

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// pending holds what the clicks already in the clicks table add to the
// aggregate tables (the daily tables through clicks_daily_input, the two
// breakdown tables), until the next flush writes it.
//
// Why: on the 18.16 server every INSERT into a MergeTree table makes a part,
// two files per column, and creating files is most of the server's cost of a
// small INSERT (about 10 ms for a one-row INSERT here; ADR 0011). Writing the four aggregate tables with
// every Apply cost more than the clicks INSERT itself; writing them once per
// FlushInterval, for all the Applies of that interval, costs a fraction.
//
// Nothing is lost by waiting: the clicks are in ClickHouse when Apply
// returns, and what is pending is derived from them. After a crash (or a
// failed flush), recovery rebuilds the aggregates of every unit that is in
// clicks but missing from a target (recover.go). Reads of this process see
// everything applied: a statistics query for a link or workspace with
// pending clicks flushes first (see sync).
type pending struct {
	month int       // partition (toYYYYMM) of every pending unit
	units []uint64  // insert ids, increasing
	since time.Time // when the first pending unit was added
	rows  int

	// clicks_daily_input, as columns (dailyInputColumns)
	linkID, workspaceID, browser, os, visitor []string
	date, ts                                  []time.Time
	qr                                        []uint8
	seq, insertID                             []uint64

	bd *breakdowns

	// Guarded by Projection.pmu as well (reads check them without the
	// projection's lock): the links (with their highest click_seq) and
	// the workspaces that have pending clicks.
	marks      map[string]int64
	workspaces map[string]bool

	// late holds the cells of days made final already (uniques.go), with
	// the highest insert_id of their pending clicks: their final records
	// are made invalid before the flush and again after.
	lateLinks, lateWorkspaces map[cellKey]uint64
	maxDay                    int32

	strs map[string]string // interned strings of the pending rows
}

func newPending() *pending {
	return &pending{
		bd:    newBreakdowns(),
		marks: map[string]int64{}, workspaces: map[string]bool{},
		lateLinks: map[cellKey]uint64{}, lateWorkspaces: map[cellKey]uint64{},
		strs: map[string]string{},
	}
}

// intern returns one copy of s per distinct value: the pending rows do not
// keep the whole JSON bodies their values are substrings of alive.
func (q *pending) intern(s string) string {
	if v, ok := q.strs[s]; ok {
		return v
	}
	v := strings.Clone(s)
	q.strs[v] = v
	return v
}

// addUnit adds the aggregates of a unit that is being inserted into clicks.
func (p *Projection) addUnit(unit []clickRow, insertID uint64) {
	q := p.pend
	if len(q.units) == 0 {
		q.since = time.Now()
		q.month = unit[0].month
	}
	q.units = append(q.units, insertID)
	q.rows += len(unit)
	// The columns grow by doubling, not by append's 1.25x for large slices
	// (each regrowth copies them all).
	n := len(unit)
	q.linkID, q.workspaceID, q.browser, q.os, q.visitor = grow(q.linkID, n), grow(q.workspaceID, n), grow(q.browser, n), grow(q.os, n), grow(q.visitor, n)
	q.date, q.ts, q.qr, q.seq, q.insertID = grow(q.date, n), grow(q.ts, n), grow(q.qr, n), grow(q.seq, n), grow(q.insertID, n)
	finalLink, finalWorkspace := p.finalLink.Load(), p.finalWorkspace.Load()
	base := len(q.workspaceID)
	for i := range unit {
		r := &unit[i]
		c := r.c
		ws := q.intern(c.WorkspaceID)
		q.linkID = append(q.linkID, r.linkID)
		q.workspaceID = append(q.workspaceID, ws)
		q.browser = append(q.browser, countedBrowser(c.Browser))
		q.os = append(q.os, countedOS(c.OS))
		q.visitor = append(q.visitor, strings.Clone(c.Visitor))
		q.date = append(q.date, r.day)
		q.ts = append(q.ts, r.ts)
		q.qr = append(q.qr, b2u(c.QR))
		q.seq = append(q.seq, r.seq)
		q.insertID = append(q.insertID, insertID)
		day := dayNumber(r.day)
		q.bd.addClick(p.keyer, r.linkID, ws, day, c)
		if day > q.maxDay {
			q.maxDay = day
		}
		if day <= finalLink {
			q.lateLinks[cellKey{r.linkID, day}] = insertID
		}
		if day <= finalWorkspace {
			q.lateWorkspaces[cellKey{ws, day}] = insertID
		}
	}
	p.pmu.Lock()
	for i := range unit {
		r := &unit[i]
		if m, ok := q.marks[r.linkID]; !ok || int64(r.seq) > m {
			q.marks[r.linkID] = int64(r.seq)
		}
		q.workspaces[q.workspaceID[base+i]] = true
	}
	p.pmu.Unlock()
}

// flushDue tells whether the pending aggregates must be written now.
func (p *Projection) flushDue() bool {
	q := p.pend
	return q.rows > 0 && (p.opts.FlushInterval < 0 || q.rows >= p.opts.MaxPendingClicks ||
		time.Since(q.since) >= p.opts.FlushInterval)
}

// flushLocked writes the pending aggregates: the new entries of
// breakdown_values first (the breakdown rows refer to them), then, at once,
// clicks_daily_input (whose views fill the two daily tables) and the two
// breakdown inputs. Each target gets one INSERT covering every pending unit,
// all in one partition: one part, committed atomically, so that every
// target always holds a prefix of the units of clicks (what recovery
// assumes). An error leaves the projection to recover.
func (p *Projection) flushLocked(ctx context.Context) error {
	if err := p.startFlushLocked(ctx); err != nil {
		return err
	}
	return p.waitFlushLocked(ctx)
}

// flight is a flush in progress: its INSERTs run in a goroutine while Apply
// goes on with the next units (applyClicks starts it when a flush is due).
// There is at most one; whatever else needs the aggregates written (the
// next flush, sync, Close, recovery, Reset) waits for it first
// (waitFlushLocked), so the flushes reach the targets in order and each
// target still holds a prefix of the units of clicks. Until it is waited
// for, the marks and workspaces of its units stay visible through
// Projection.flushing (clickMarksOf, hasPendingLink, hasPendingWorkspace).
//
// Once its INSERTs succeed, the flight also makes the final records of the
// days that are over (uniques.go), and makes again those of the days its
// late clicks changed: reads of the aggregates, not writes of clicks, need
// them, so Apply does not wait for them either. finalLink and
// finalWorkspace are the final days when it started: units added while it
// ran may have seen those, and waitFlushLocked marks their clicks of the
// days it made final as late (markLate).
type flight struct {
	q       *pending
	entries []dictEntry
	ids     []string // query ids of its INSERTs, killed by recovery if it fails
	done    chan struct{}
	err     error

	finalize                  bool  // make the final records (not in tests that want them missing)
	horizon                   int32 // the latest day to make final
	finalLink, finalWorkspace int32
}

// startFlushLocked starts writing the pending aggregates (after the flush
// in flight, if any, is over). The parts that use the keyer (whose ids the
// next units go on adding to) are done here; the INSERTs run in a
// goroutine.
func (p *Projection) startFlushLocked(ctx context.Context) error {
	if err := p.waitFlushLocked(ctx); err != nil {
		return err
	}
	q := p.pend
	if q.rows == 0 {
		return nil
	}
	last := q.units[len(q.units)-1]
	p.flushes++
	tag := "flush" + strconv.FormatUint(p.flushes, 10)
	f := &flight{
		q: q, entries: p.keyer.take(), done: make(chan struct{}),
		finalize: !p.noFinalize, horizon: p.finalHorizon(max(p.maxDay, q.maxDay)),
		finalLink: p.finalLink.Load(), finalWorkspace: p.finalWorkspace.Load(),
	}
	id := func(table string) string {
		id := "linkd-" + p.run + "-" + table + "-" + tag + "-" + strconv.FormatUint(last, 10)
		f.ids = append(f.ids, id)
		return id
	}
	var (
		valuesID    = id(tValues)
		lateLinkID  = id(tLinkFinal)
		lateWsID    = id(tWorkspaceFinal)
		dailyID     = id(tDailyInput)
		linkBdID    = id(tLinkBreakdown)
		wsBdID      = id(tWorkspaceBreakdown)
		linkRows    = rowsOf(p.keyer, q.bd.link, q.bd.linkOrder, last)
		wsRows      = rowsOf(p.keyer, q.bd.workspace, q.bd.wsOrder, last)
		insertValue = p.valueInserts(f.entries)
	)
	p.pmu.Lock()
	p.flushing = f
	p.pend = newPending()
	p.pmu.Unlock()
	p.keyer.trim()
	p.flight = f
	go func() {
		defer close(f.done)
		// Not the caller's context: the flush outlives the Apply that
		// started it. Each INSERT is bounded by InsertTimeout.
		ctx := context.WithoutCancel(ctx)
		run := func(err error) bool {
			f.err = err
			return err == nil
		}
		_ = run(insertValue(ctx, valuesID)) &&
			// Final records of days that get late clicks are invalid
			// from now on.
			run(p.invalidate(ctx, linkScope, q.lateLinks, lateLinkID)) &&
			run(p.invalidate(ctx, workspaceScope, q.lateWorkspaces, lateWsID)) &&
			// One after the other: run at once, they were slower here
			// (the server's file creations contend in the kernel).
			run(p.db.InsertColumns(ctx, tDailyInput, dailyInputColumns,
				[]any{q.linkID, q.workspaceID, q.date, q.ts, q.qr, q.browser, q.os, q.visitor, q.seq, q.insertID}, dailyID)) &&
			run(p.insertBreakdown(ctx, tLinkBreakdown, linkRows, linkBdID)) &&
			run(p.insertBreakdown(ctx, tWorkspaceBreakdown, wsRows, wsBdID))
		if f.err != nil || !f.finalize {
			return
		}
		if p.beforeFinalize != nil {
			p.beforeFinalize()
		}
		// A failure here costs speed, not correctness (a day without a
		// valid final record is read from the daily tables), so it is
		// only logged.
		if err := p.finalizeUpTo(ctx, f.horizon, q.lateLinks, q.lateWorkspaces); err != nil {
			p.log.Warn("clickhouse projection: final records of past days not written", "err", err)
		}
	}()
	return nil
}

// waitFlushLocked waits for the flush in flight, if any, and finishes it:
// on success its marks go to the cache, and the pending clicks of the days
// it made final are marked late; on failure its INSERTs are left for
// recovery to kill, and the error is returned (the caller makes the
// projection recover).
func (p *Projection) waitFlushLocked(ctx context.Context) error {
	f := p.flight
	if f == nil {
		return nil
	}
	<-f.done
	p.flight = nil
	q := f.q
	if f.err != nil {
		p.pending = append(p.pending, f.ids...)
		// The marks of its units stay visible until recovery, which
		// rebuilds the aggregates (and drops the pending ones).
		return f.err
	}
	p.values.putAll(f.entries)
	for id, m := range q.marks {
		p.clickMarks.put(id, m)
	}
	if q.maxDay > p.maxDay {
		p.maxDay = q.maxDay
	}
	p.pmu.Lock()
	p.flushing = nil
	p.pmu.Unlock()
	p.markLate(f.finalLink, f.finalWorkspace)
	return nil
}

// markLate records as late the cells of the pending clicks whose days were
// made final since finalLink and finalWorkspace: units added while the
// flush was in flight may have seen the older final days (addUnit), yet
// their clicks are not in the final records it made, so these must be made
// invalid before those clicks are flushed, as for any late click.
func (p *Projection) markLate(finalLink, finalWorkspace int32) {
	q := p.pend
	fl, fw := p.finalLink.Load(), p.finalWorkspace.Load()
	if fl <= finalLink && fw <= finalWorkspace {
		return
	}
	for i := range q.date {
		day, id := dayNumber(q.date[i]), q.insertID[i]
		if day > finalLink && day <= fl {
			if k := (cellKey{q.linkID[i], day}); q.lateLinks[k] < id {
				q.lateLinks[k] = id
			}
		}
		if day > finalWorkspace && day <= fw {
			if k := (cellKey{q.workspaceID[i], day}); q.lateWorkspaces[k] < id {
				q.lateWorkspaces[k] = id
			}
		}
	}
}

// countedBrowser and countedOS reduce the browser and the OS to what the
// daily views count of them (chrome_clicks, ios_clicks, android_clicks:
// lower(browser) = 'chrome', ...), so that the pending rows hold no copy of
// them. lower is ClickHouse's: ASCII letters only.
func countedBrowser(b string) string {
	if asciiLowerIs(b, "chrome") {
		return "chrome"
	}
	return ""
}

func countedOS(os string) string {
	switch {
	case asciiLowerIs(os, "ios"):
		return "ios"
	case asciiLowerIs(os, "android"):
		return "android"
	}
	return ""
}

// asciiLowerIs tells whether s with its ASCII letters lowered is lower.
func asciiLowerIs(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// valueInserts returns the INSERT of entries into breakdown_values (which
// the caller then adds to the values cache).
func (p *Projection) valueInserts(entries []dictEntry) func(ctx context.Context, queryID string) error {
	return func(ctx context.Context, queryID string) error {
		if len(entries) == 0 {
			return nil
		}
		keys, dims, values := make([]uint64, len(entries)), make([]int8, len(entries)), make([]string, len(entries))
		for i, e := range entries {
			keys[i], dims[i], values[i] = e.key, e.dim+1, e.value
		}
		return p.db.InsertColumns(ctx, tValues, "key, dimension, value", []any{keys, dims, values}, queryID)
	}
}

// insertBreakdown writes breakdown rows through the input table of target.
func (p *Projection) insertBreakdown(ctx context.Context, target string, b *breakdownRows, queryID string) error {
	if len(b.key) == 0 {
		return nil
	}
	key := "link_id"
	if target == tWorkspaceBreakdown {
		key = "workspace_id"
	}
	return p.db.InsertColumns(ctx, target+inputSuffix, key+", "+breakdownInsertColumns, b.columns(), queryID)
}

// hasPendingLink and hasPendingWorkspace tell whether a read must flush
// first.
func (p *Projection) hasPendingLink(linkID string) bool {
	p.pmu.RLock()
	defer p.pmu.RUnlock()
	if _, ok := p.pend.marks[linkID]; ok {
		return true
	}
	if p.flushing != nil {
		_, ok := p.flushing.q.marks[linkID]
		return ok
	}
	return false
}

func (p *Projection) hasPendingWorkspace(workspaceID string) bool {
	p.pmu.RLock()
	defer p.pmu.RUnlock()
	return p.pend.workspaces[workspaceID] || p.flushing != nil && p.flushing.q.workspaces[workspaceID]
}

// sync makes everything applied so far visible to queries: it flushes the
// pending aggregates (and recovers first if an Apply or a flush failed).
// Reads call it when the link or workspace they read has pending clicks, so
// that a read shows every click applied before it.
func (p *Projection) sync(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	return p.flushOrRecoverLocked(ctx)
}

func (p *Projection) flushOrRecoverLocked(ctx context.Context) error {
	if p.needRecovery {
		if err := p.recoverLocked(ctx); err != nil {
			return fmt.Errorf("clickhouse: recover: %w", err)
		}
	}
	if err := p.flushLocked(ctx); err != nil {
		p.needRecovery = true
		return fmt.Errorf("clickhouse: flush: %w", err)
	}
	return nil
}

// background flushes the pending aggregates once they are FlushInterval
// old when no Apply comes to do it, until Close. After a failure it waits
// longer and longer (up to a minute) before it tries again.
func (p *Projection) background(tick time.Duration) {
	defer close(p.bgDone)
	t := time.NewTicker(tick)
	defer t.Stop()
	var flushes, finals retry
	for {
		select {
		case <-p.bgStop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		if !p.closed && !p.needRecovery && p.flight != nil && isClosed(p.flight.done) {
			// Finishes the flush that an Apply started.
			ctx, cancel := context.WithTimeout(context.Background(), p.opts.RecoveryTimeout)
			if err := p.waitFlushLocked(ctx); err != nil {
				p.needRecovery = true
				p.log.Warn("clickhouse projection: flush failed", "err", err)
			}
			cancel()
		}
		// Not while a flush is in flight: its clicks may be of the days
		// made final, and were not counted as late.
		if !p.closed && !p.needRecovery && p.flight == nil && p.pend.rows == 0 && finals.due() && p.finalizeDue() {
			// Idle: days may still be over (a new day began, or the
			// projection was just upgraded).
			ctx, cancel := context.WithTimeout(context.Background(), p.opts.RecoveryTimeout)
			if err := p.finalizeUpTo(ctx, p.finalHorizon(p.maxDay), nil, nil); err != nil {
				p.log.Warn("clickhouse projection: final records of past days not written", "retry_in", finals.failed(), "err", err)
			} else {
				finals.succeeded()
			}
			cancel()
		}
		if !p.closed && flushes.due() && (p.flushDue() || p.needRecovery && p.pend.rows > 0) {
			ctx, cancel := context.WithTimeout(context.Background(), p.opts.RecoveryTimeout)
			if err := p.flushOrRecoverLocked(ctx); err != nil {
				p.log.Warn("clickhouse projection: background flush failed", "retry_in", flushes.failed(), "err", err)
			} else {
				flushes.succeeded()
			}
			cancel()
		}
		p.mu.Unlock()
	}
}

// retry spaces the attempts of a background task that fails: a second after
// the first failure, then twice as long after each next one, up to a minute.
type retry struct {
	at      time.Time
	backoff time.Duration
}

// due tells whether the task may run now.
func (r *retry) due() bool { return !time.Now().Before(r.at) }

// failed records a failure and returns how long until the next attempt.
func (r *retry) failed() time.Duration {
	r.backoff = min(max(2*r.backoff, time.Second), time.Minute)
	r.at = time.Now().Add(r.backoff)
	return r.backoff
}

// succeeded makes the next failure wait a second again.
func (r *retry) succeeded() { r.backoff = 0 }

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// grow returns s with room for n more elements, at least doubling its
// capacity when it must grow.
func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	out := make([]T, len(s), max(len(s)+n, 2*cap(s)))
	copy(out, s)
	return out
}
