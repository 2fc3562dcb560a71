package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/projections"
)

// One deliverer for a deployment on a store without a shared queue
// (EventStoreDB; ADR 0114). Every instance projects the webhooks; one, the
// holder of the lease LeaseName, makes messages and delivers them. It
// saves, for each webhook, its progress in the store: the position before
// the event of its oldest message not yet done with (delivered, failed for
// good, or abandoned). Every event of the webhook's before it is done
// with. The instance that takes the lease over makes again the messages of
// the events after each webhook's progress and sends them: what the last
// holder had not finished arrives, some of it twice (the same webhook-id).
// The others make no message at all.

// LeaseName is the lease of the one deliverer (Coordination).
const LeaseName = "webhooks"

// progressName is the checkpoint of a webhook's progress.
func progressName(webhookID string) string { return "webhook-" + webhookID }

// deliverersMark is a checkpoint every holder saves: a deployment where
// it is missing ran deliverers that saved no progress (before ADR 0114, each
// instance delivered everything), and its first holder takes every
// webhook's progress to be the last event it applied.
const deliverersMark = "webhooks"

// Coordination is what the instances of a deployment share when the queue
// is not shared (Options.Coordinate): a lease and named positions in the
// event store.
type Coordination interface {
	eventstore.Leaser
	eventstore.Checkpoints
}

// ReplayRequester records a replay request in the log, for the instance
// that delivers (Options.RequestReplay).
type ReplayRequester func(ctx context.Context, webhookID, workspaceID string, start, end time.Time) error

// delivering is the state of a Store that coordinates with others.
type delivering struct {
	// mu is held by Apply for a whole batch, and by the switches on and
	// off: a batch makes messages or not, entirely.
	mu sync.Mutex
	on bool
	// caughtUp: the messages of the events before the switch on are made;
	// progress may be saved.
	caughtUp bool

	// pmu guards what follows (taken inside mu, never the other way): the
	// deliverer's results note their webhooks without waiting for a batch.
	pmu sync.Mutex
	// replays are the replays under way, by webhook: the position before
	// their requests holds the webhook's progress back until they are
	// written.
	replays map[string][]eventstore.Position
	// dirty are the webhooks whose progress may have moved since it was
	// saved; savedAll is when every webhook's was.
	dirty    map[string]bool
	savedAll time.Time
}

// markDirty notes webhooks whose progress may have moved.
func (d *delivering) markDirty(ids ...string) {
	d.pmu.Lock()
	defer d.pmu.Unlock()
	if d.dirty == nil {
		d.dirty = map[string]bool{}
	}
	for _, id := range ids {
		d.dirty[id] = true
	}
}

// muted says that this instance makes no message: it coordinates with
// others and does not hold the lease. d.mu is held.
func (s *Store) mutedLocked() bool { return s.coord != nil && !s.deliver.on }

// startDelivering switches this instance, which now holds the lease, to
// making messages, and makes those of the events it applied before, after
// each webhook's progress: the ones its last holder may not have finished.
// Rows left in the table by an earlier turn of this instance, whose events
// are before a webhook's progress, were finished by another: they go.
func (s *Store) startDelivering(ctx context.Context) error {
	s.deliver.mu.Lock()
	through := s.hot.lastApplied()
	s.deliver.on, s.deliver.caughtUp = true, false
	s.deliver.mu.Unlock()
	hooks := s.copyHooks()
	mark, err := s.coord.LoadCheckpoint(ctx, deliverersMark)
	if err != nil {
		return fmt.Errorf("webhooks: the deliverers' mark: %w", err)
	}
	from := make(map[string]eventstore.Position, len(hooks))
	lo := through
	for id, h := range hooks {
		p, err := s.coord.LoadCheckpoint(ctx, progressName(id))
		if err != nil {
			return fmt.Errorf("webhooks: progress of %s: %w", id, err)
		}
		switch {
		case p.IsZero() && mark.IsZero():
			p = through // saved by no holder: each instance delivered everything
		case p.Less(h.Created):
			p = h.Created
		}
		from[id] = p
		if p.Less(lo) {
			lo = p
		}
		if _, err := s.w.ExecContext(ctx, `DELETE FROM messages WHERE webhook_id = ? AND status = 'pending' AND before_commit IS NOT NULL
			AND (before_commit, before_prepare) < (?, ?)`, id, p.Commit, p.Prepare); err != nil {
			return err
		}
	}
	if lo.Less(through) {
		if err := s.remake(ctx, hooks, from, lo, through); err != nil {
			return err
		}
	}
	s.deliver.mu.Lock()
	s.deliver.caughtUp = true
	s.deliver.mu.Unlock()
	s.deliver.pmu.Lock()
	s.deliver.savedAll = time.Time{} // every webhook's progress, and the mark, at the next save
	s.deliver.pmu.Unlock()
	if err := s.saveProgress(ctx); err != nil {
		return err
	}
	if s.notify != nil {
		// Not the webhooks off: their messages wait until they are on.
		s.notify(s.activeHookIDs())
	}
	return nil
}

// remake writes to the table the messages of the events after lo up to
// through that each webhook wants after its progress (from), and carries
// out the replays requested there.
//
// Each event is matched against the webhooks as they were at it (their
// streams folded up to it), as live processing matched it: a webhook off
// now that was on at the event has its message made, waiting in the table
// until the webhook is on again, as on one instance.
func (s *Store) remake(ctx context.Context, hooks map[string]*hook, from map[string]eventstore.Position, lo, through eventstore.Position) error {
	hist := map[string]*hookHistory{} // the webhooks of hooks, folded up to the event matched
	at := map[string]*hook{}
	for id := range hooks {
		recs, err := s.opts.Events.ReadStream(ctx, webhook.Stream(id), 0, 1<<16)
		if err != nil {
			return err
		}
		hist[id] = &hookHistory{}
		for i := range recs {
			if lo.Less(recs[i].Position) {
				break
			}
			if at[id], err = hist[id].add(&recs[i]); err != nil {
				return err
			}
		}
	}
	byWS := indexHooks(at)
	cats := s.Categories()
	after, before := lo, lo
	for {
		recs, err := s.opts.Events.ReadAll(ctx, after, 4096)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return nil
		}
		c := &changes{now: s.opts.Now().UnixMilli()}
		done := false
		for i := range recs {
			re := &recs[i]
			if through.Less(re.Position) {
				done = true
				break
			}
			switch {
			case re.Type == webhook.EventReplayRequested:
				if err := s.replayRequested(ctx, re, before, from); err != nil {
					return err
				}
			case strings.HasPrefix(re.Stream, webhook.StreamPrefix):
				id := strings.TrimPrefix(re.Stream, webhook.StreamPrefix)
				if h := hist[id]; h != nil {
					if at[id], err = h.add(re); err != nil {
						return err
					}
					byWS = indexHooks(at)
				}
			case !inCategories(re.Stream, cats) || strings.HasPrefix(re.Stream, workspace.StreamPrefix):
			default:
				m, err := s.match(ctx, re, func() (domain.Event, error) { return domain.DecodeEvent(re.Type, re.Data) }, byWS, true)
				if err != nil {
					return err
				}
				if m == nil {
					break
				}
				for _, h := range m.hooks {
					if !from[h.ID].Less(re.Position) {
						continue
					}
					q := queued{webhookID: h.ID, eventID: re.ID.String(), eventType: m.eventType, body: m.body,
						eventTime: re.Time, before: before, durable: true}
					if keep, err := s.unfinished(ctx, &q); err != nil {
						return err
					} else if keep {
						c.msgs = append(c.msgs, q)
					}
				}
			}
			before = re.Position
		}
		after = recs[len(recs)-1].Position
		if len(c.msgs) > 0 {
			if err := s.q.write(ctx, nil, c); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// replayRequested carries out a replay request found again after its
// webhook's progress (from).
func (s *Store) replayRequested(ctx context.Context, re *eventstore.RecordedEvent, before eventstore.Position, from map[string]eventstore.Position) error {
	e, err := domain.DecodeEvent(re.Type, re.Data)
	if err != nil {
		return err
	}
	r, ok := e.(*webhook.ReplayRequested)
	if !ok {
		return nil
	}
	if p, ok := from[r.ID]; !ok || !p.Less(re.Position) {
		return nil
	}
	_, err = s.replayRange(ctx, r.ID, r.Start, r.End, before, true)
	return err
}

// stopDelivering switches this instance back to making no message: it
// lost or gave up the lease. What it had not finished stays in its table;
// another holder makes it again from the progress it saved.
func (s *Store) stopDelivering() {
	s.deliver.mu.Lock()
	s.deliver.on, s.deliver.caughtUp = false, false
	s.deliver.mu.Unlock()
}

// replayStarted holds a webhook's progress at before until replayEnded.
// Apply calls it under s.deliver.mu, with the last event applied it moves:
// saveProgress reads both under mu.
func (s *Store) replayStarted(id string, before eventstore.Position) {
	s.deliver.pmu.Lock()
	defer s.deliver.pmu.Unlock()
	if s.deliver.replays == nil {
		s.deliver.replays = map[string][]eventstore.Position{}
	}
	s.deliver.replays[id] = append(s.deliver.replays[id], before)
}

func (s *Store) replayEnded(id string, before eventstore.Position) {
	s.deliver.markDirty(id)
	s.deliver.pmu.Lock()
	defer s.deliver.pmu.Unlock()
	rs := s.deliver.replays[id]
	for i, p := range rs {
		if p == before {
			s.deliver.replays[id] = append(rs[:i], rs[i+1:]...)
			break
		}
	}
	if len(s.deliver.replays[id]) == 0 {
		delete(s.deliver.replays, id)
	}
}

// progressAll is how often every webhook's progress is saved; in between,
// only that of the webhooks whose messages were done with, every second
// (the deliverer's tick). An idle webhook's moves with the log: a next
// holder reads the log from it.
const progressAll = time.Minute

// progressed notes the webhooks whose messages' results were recorded:
// their progress may have moved.
func (s *Store) progressed(batch []result) {
	if s.coord == nil {
		return
	}
	ids := make([]string, len(batch))
	for i := range batch {
		ids[i] = batch[i].webhookID
	}
	s.deliver.markDirty(ids...)
}

// saveProgress saves the progress of the webhooks whose messages were
// done with since the last save, or of all of them (with the deployment's
// mark, deliverersMark) once a progressAll has passed, once the messages
// of the events before this instance took the lease are made. A webhook
// whose progress is not saved has had no message done with: the events it
// wants after its saved progress are still to be done with, or there are
// none. The last event applied is read first, then the messages in
// memory, then the table: a message that moves from memory to the table
// in between is seen in one of them, and one made after the first read is
// after that event.
func (s *Store) saveProgress(ctx context.Context) error {
	if s.coord == nil {
		return nil
	}
	// The last event applied and the replays it holds back are read
	// together: Apply moves both under mu.
	s.deliver.mu.Lock()
	ok := s.deliver.on && s.deliver.caughtUp
	applied := s.hot.lastApplied()
	s.deliver.pmu.Lock()
	all := time.Since(s.deliver.savedAll) >= progressAll
	ids := s.deliver.dirty
	s.deliver.dirty = nil
	replays := map[string]eventstore.Position{}
	for id, rs := range s.deliver.replays {
		oldest := rs[0]
		for _, p := range rs[1:] {
			if p.Less(oldest) {
				oldest = p
			}
		}
		replays[id] = oldest
	}
	s.deliver.pmu.Unlock()
	s.deliver.mu.Unlock()
	if !ok {
		s.deliver.markDirty(slices.Collect(maps.Keys(ids))...)
		return nil
	}
	inMemory := s.hot.oldestUnsettled()
	if all {
		s.mu.RLock()
		ids = make(map[string]bool, len(s.hooks))
		for id := range s.hooks {
			ids[id] = true
		}
		s.mu.RUnlock()
	}
	failed := func(err error) error {
		s.deliver.markDirty(slices.Collect(maps.Keys(ids))...)
		return err
	}
	for id := range ids {
		p := applied
		if q, ok := inMemory[id]; ok && q.Less(p) {
			p = q
		}
		if q, ok := replays[id]; ok && q.Less(p) {
			p = q
		}
		var c, pr sql.NullInt64
		err := s.r.QueryRowContext(ctx, `SELECT before_commit, before_prepare FROM messages WHERE webhook_id = ? AND status = 'pending'
			AND before_commit IS NOT NULL ORDER BY before_commit, before_prepare LIMIT 1`, id).Scan(&c, &pr)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return failed(err)
		default:
			if q := (eventstore.Position{Commit: uint64(c.Int64), Prepare: uint64(pr.Int64)}); q.Less(p) {
				p = q
			}
		}
		if err := s.coord.SaveCheckpoint(ctx, progressName(id), p); err != nil {
			return failed(err)
		}
	}
	if all {
		if err := s.coord.SaveCheckpoint(ctx, deliverersMark, applied); err != nil {
			return failed(err)
		}
		s.deliver.pmu.Lock()
		s.deliver.savedAll = time.Now()
		s.deliver.pmu.Unlock()
	}
	return nil
}

// requested is a replay request applied, and the position before it.
type requested struct {
	re     eventstore.RecordedEvent
	before eventstore.Position
}

// startReplay (called by Apply, s.deliver.mu held) carries out a replay
// request in the background, holding its
// webhook's progress before the request until its messages are written: a
// holder that dies before leaves it to the next, which finds the request
// again after the progress.
func (s *Store) startReplay(r requested) {
	e, err := domain.DecodeEvent(r.re.Type, r.re.Data)
	rr, ok := e.(*webhook.ReplayRequested)
	if err != nil || !ok {
		s.log.Warn("webhooks: replay request", "err", err)
		return
	}
	s.replayStarted(rr.ID, r.before)
	s.replaying.Add(1)
	go func() {
		defer s.replaying.Done()
		defer s.replayEnded(rr.ID, r.before)
		// A replay that fails is tried again, its hold kept: the request
		// is in the log, answered already.
		for wait := time.Second; ; wait = min(2*wait, time.Minute) {
			_, err := s.replayRange(s.bg, rr.ID, rr.Start, rr.End, r.before, true)
			if err == nil || s.bg.Err() != nil {
				return
			}
			s.log.Warn("webhooks: replay; trying again", "webhook", rr.ID, "err", err, "in", wait)
			select {
			case <-s.bg.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
}

// publishAttempts records in the log the attempts of outs, for the
// deliveries log of the other instances. A failure loses lines of their
// logs, not a message: it is logged.
func (s *Store) publishAttempts(outs []outcome) {
	if s.coord == nil || s.opts.PublishAttempts == nil {
		return
	}
	const most = 256 // attempts in one event (a response keeps 1 KB at most)
	by := map[string][]webhook.Attempt{}
	for i := range outs {
		o := &outs[i]
		if o.abandon {
			continue
		}
		at := webhook.Attempt{MessageID: o.msg.id, EventType: o.msg.eventType, Attempt: o.attempt, Status: o.result,
			ResponseBody: o.respBody, DurationMS: o.durMS, At: time.UnixMilli(o.at).UTC()}
		if o.respStatus.Valid {
			v := int(o.respStatus.Int64)
			at.ResponseStatus = &v
		}
		if o.next.Valid {
			t := time.UnixMilli(o.next.Int64).UTC()
			at.NextAttemptAt = &t
		}
		by[o.webhookID] = append(by[o.webhookID], at)
	}
	for id, ats := range by {
		for len(ats) > 0 {
			n := min(len(ats), most)
			select {
			case s.attemptsOut <- &webhook.AttemptsRecorded{ID: id, Deliverer: s.instance, Attempts: ats[:n]}:
			default:
				s.log.Warn("webhooks: too many attempts waiting to be recorded in the log; some are left out", "webhook", id, "attempts", n)
			}
			ats = ats[n:]
		}
	}
}

// publisher records in the log the attempts publishAttempts hands it, off
// the deliverer's way: a slow store delays the others' deliveries logs,
// not the deliveries.
func (s *Store) publisher() {
	defer s.replaying.Done()
	for {
		select {
		case <-s.bg.Done():
			return
		case e := <-s.attemptsOut:
			ctx, cancel := context.WithTimeout(s.bg, 5*time.Second)
			if err := s.opts.PublishAttempts(ctx, e); err != nil && s.bg.Err() == nil {
				s.log.Warn("webhooks: recording attempts in the log", "webhook", e.ID, "err", err)
			}
			cancel()
		}
	}
}

// attemptsRecorded writes the attempts another instance made to the
// deliveries log; those already there (an event applied again, or this
// instance's own before a restart) are not written twice. The webhook's
// run of failures follows them, as the deliverer's own record does: a
// next deliverer counts the five days from the first failure of any.
func (a *applier) attemptsRecorded(ev *projections.Event) error {
	if a.s.coord == nil {
		return nil
	}
	e, err := ev.Decode()
	if err != nil {
		return err
	}
	r, ok := e.(*webhook.AttemptsRecorded)
	if !ok || r.Deliverer == a.s.instance {
		return nil
	}
	var firstFailure int64
	succeeded := false
	for _, at := range r.Attempts {
		switch ms := at.At.UnixMilli(); {
		case at.Status == "succeeded":
			succeeded = true
		case firstFailure == 0 || ms < firstFailure:
			firstFailure = ms
		}
		var next sql.NullInt64
		if at.NextAttemptAt != nil {
			next = sql.NullInt64{Int64: at.NextAttemptAt.UnixMilli(), Valid: true}
		}
		var status sql.NullInt64
		if at.ResponseStatus != nil {
			status = sql.NullInt64{Int64: int64(*at.ResponseStatus), Valid: true}
		}
		ms := at.At.UnixMilli()
		if err := a.b.Exec(`INSERT INTO attempts (message_id, webhook_id, event_type, attempt, status, response_status, response_body, duration_ms, created_at, next_attempt_at)
			SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM attempts WHERE message_id = ? AND attempt = ? AND created_at = ?)`,
			at.MessageID, r.ID, at.EventType, at.Attempt, at.Status, status, at.ResponseBody, at.DurationMS, ms, next,
			at.MessageID, at.Attempt, ms); err != nil {
			return err
		}
	}
	switch {
	case succeeded:
		return a.b.Exec(`UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL`, r.ID)
	case firstFailure != 0:
		return a.b.Exec(`UPDATE webhooks SET failing_since = COALESCE(failing_since, ?) WHERE id = ?`, firstFailure, r.ID)
	}
	return nil
}

// unfinished says whether a message made again by a takeover is still to
// be delivered, from the attempts the log brought (WebhookAttemptsRecorded):
// not when its last attempt succeeded or failed for good; when it waits
// for a retry, it keeps its attempts and its due time.
func (s *Store) unfinished(ctx context.Context, q *queued) (bool, error) {
	var status string
	var attempt int
	var next sql.NullInt64
	err := s.w.QueryRowContext(ctx, `SELECT status, attempt, next_attempt_at FROM attempts WHERE message_id = ?
		ORDER BY attempt DESC, seq DESC LIMIT 1`, q.id()).Scan(&status, &attempt, &next)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return true, nil
	case err != nil:
		return false, err
	case status == "succeeded" || !next.Valid:
		return false, nil
	}
	q.attempts, q.next = attempt, next
	return true, nil
}

// indexHooks lists hooks by workspace.
func indexHooks(hooks map[string]*hook) map[string][]*hook {
	byWS := map[string][]*hook{}
	for _, h := range hooks {
		if h != nil {
			byWS[h.WorkspaceID] = append(byWS[h.WorkspaceID], h)
		}
	}
	return byWS
}

// hookHistory is a webhook's history up to an event: what matching needs
// of it is the write model's fold of it (webhook.Load), with the position
// of its creation.
type hookHistory struct {
	events  []domain.Event
	created eventstore.Position
}

// add takes re, the next event of the webhook's stream, and returns the
// webhook after it (nil when it does not exist).
func (h *hookHistory) add(re *eventstore.RecordedEvent) (*hook, error) {
	e, err := domain.DecodeEvent(re.Type, re.Data)
	if err != nil && !errors.Is(err, domain.ErrUnknownEvent) {
		return nil, err
	}
	if err == nil {
		if _, ok := e.(*webhook.Created); ok {
			h.created = re.Position
		}
		h.events = append(h.events, e)
	}
	w, err := webhook.Load(h.events)
	if err != nil || !w.Exists() {
		return nil, err
	}
	return &hook{ID: w.ID, WorkspaceID: w.WorkspaceID, URL: w.URL, Events: w.Events, LinkIDs: w.LinkIDs,
		SecretEnc: w.SecretEnc, Active: w.IsActive, Created: h.created}, nil
}
