package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/sqlitedb"
	"github.com/linkd/linkd/queries"
)

// The hand-off (ADR 0111). With the instance's own SQLite queue, the
// messages the projection makes go to the deliverer in memory, not
// through the messages table: a message is written only when its first
// attempt fails, when it waited a second without being taken (spill), when
// the deliverer stops, or when the hand-off is full. What makes that safe
// is the checkpoint: the projection's stored checkpoint never passes an
// event whose messages are neither delivered nor written. After a crash
// the projection applies those events again and makes the same messages
// (same ids); the messages whose attempts were recorded before the crash
// are recognised (redone) and not sent again.

// hotCapacity bounds the messages held in memory (about 1.2 KB each for a
// click): beyond it the projection writes them to the table.
const hotCapacity = 8192

// spillAfter is how long a message may wait in memory for its webhook's
// runner before it is written to the table.
const spillAfter = time.Second

// hotMsg is a message handed off in memory.
type hotMsg struct {
	m         message
	webhookID string
	eventID   string
	// before is the position of the event applied before the message's:
	// a checkpoint that makes the message again after a crash.
	before eventstore.Position
	// floor: every attempt of the message has a greater attempts.seq.
	floor          int64
	taken, settled bool
}

// handOff is the messages in memory and the state the projection's
// checkpoint is computed from.
type handOff struct {
	mu sync.Mutex
	// on while a deliverer runs: without one, messages go to the table.
	on bool
	// capacity bounds the messages held (hotCapacity).
	capacity int
	waiting  map[string][]*hotMsg // by webhook, not taken, oldest first
	order    []*hotMsg            // unsettled ones, oldest first (settled ones leave from the front)
	byID     map[string]*hotMsg   // unsettled, by message id
	// applied is the last event the projection applied; seq the last
	// attempts.seq known to be written.
	applied eventstore.Position
	seq     int64
}

func newHandOff() *handOff {
	return &handOff{capacity: hotCapacity, waiting: map[string][]*hotMsg{}, byID: map[string]*hotMsg{}}
}

// lastApplied is the last event the projection applied.
func (h *handOff) lastApplied() eventstore.Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.applied
}

// restart: the projection applies the log again from its start (Reset).
func (h *handOff) restart() {
	h.mu.Lock()
	h.applied = eventstore.Start
	h.mu.Unlock()
}

func (h *handOff) setOn(on bool) {
	h.mu.Lock()
	h.on = on
	h.mu.Unlock()
}

// admit takes out of c the messages that go to memory, within the
// capacity (those made again after a crash, durable, stay in c).
func (h *handOff) admit(c *changes) []*hotMsg {
	h.mu.Lock()
	room, seq := h.capacity-len(h.byID), h.seq
	on := h.on
	h.mu.Unlock()
	if !on || room <= 0 || c.replay {
		return nil
	}
	var fresh []*hotMsg
	keep := c.msgs[:0]
	for _, q := range c.msgs {
		if q.durable || len(fresh) >= room {
			keep = append(keep, q)
			continue
		}
		fresh = append(fresh, &hotMsg{
			m:         message{next: c.now, id: q.id(), eventType: q.eventType, body: q.body, createdAt: c.now, hot: true, eventID: q.eventID, before: q.before},
			webhookID: q.webhookID, eventID: q.eventID, before: q.before, floor: seq,
		})
	}
	c.msgs = keep
	return fresh
}

// checkpoint is the position the projection may store, and the attempts
// floor of the events after it: the oldest unsettled message's (of fresh
// when none), or last. settling are settled by the transaction that
// stores it.
func (h *handOff) checkpoint(last eventstore.Position, fresh []*hotMsg, settling map[string]bool) (eventstore.Position, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.order {
		if !m.settled && !settling[m.m.id] {
			return m.before, m.floor
		}
	}
	if len(fresh) > 0 {
		return fresh[0].before, fresh[0].floor
	}
	return last, h.seq
}

// add hands fresh to the runners, once the projection's batch that made
// them is committed, and notes last as applied; dropped webhooks' messages
// are settled (they fail, as their pending rows do).
func (h *handOff) add(fresh []*hotMsg, last eventstore.Position, dropped []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.applied = last
	for _, m := range fresh {
		h.waiting[m.webhookID] = append(h.waiting[m.webhookID], m)
		h.order = append(h.order, m)
		h.byID[m.m.id] = m
	}
	for _, id := range dropped {
		for _, m := range h.waiting[id] {
			h.settleLocked(m)
		}
		delete(h.waiting, id)
	}
	h.trimLocked()
}

// take gives up to limit messages of a webhook.
func (h *handOff) take(webhookID string, limit int) []message {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.waiting[webhookID]
	n := min(limit, len(w))
	if n == 0 {
		return nil
	}
	out := make([]message, n)
	for i, m := range w[:n] {
		m.taken = true
		out[i] = m.m
	}
	if n == len(w) {
		delete(h.waiting, webhookID)
	} else {
		h.waiting[webhookID] = slices.Clone(w[n:])
	}
	return out
}

// settled: the transaction that delivered or wrote the messages of
// settling, and wrote attempts up to seq (0: none), is committed.
func (h *handOff) settled(settling map[string]bool, seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range settling {
		if m := h.byID[id]; m != nil {
			h.settleLocked(m)
		}
	}
	h.trimLocked()
	h.seq = max(h.seq, seq)
}

func (h *handOff) settleLocked(m *hotMsg) {
	if m.settled {
		return
	}
	m.settled, m.m.body = true, nil
	delete(h.byID, m.m.id)
}

func (h *handOff) trimLocked() {
	i := 0
	for i < len(h.order) && h.order[i].settled {
		h.order[i] = nil
		i++
	}
	if i > 0 {
		h.order = h.order[i:]
	}
	if len(h.order) == 0 {
		h.order = nil
	}
}

// spillable takes out of the waiting lists the messages made before
// cutoff (all, with those taken and not settled, when stopping: the
// runners are gone).
func (h *handOff) spillable(cutoff int64, stopping bool) []*hotMsg {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*hotMsg
	if stopping {
		for _, m := range h.order {
			if !m.settled {
				out = append(out, m)
			}
		}
		clear(h.waiting)
		return out
	}
	for id, w := range h.waiting {
		i := 0
		for i < len(w) && w[i].m.createdAt < cutoff {
			out = append(out, w[i])
			i++
		}
		switch {
		case i == len(w):
			delete(h.waiting, id)
		case i > 0:
			h.waiting[id] = slices.Clone(w[i:])
		}
	}
	return out
}

// giveBack returns messages whose spill failed to their waiting lists.
func (h *handOff) giveBack(ms []*hotMsg) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range ms {
		if !m.settled && !m.taken {
			h.waiting[m.webhookID] = append([]*hotMsg{m}, h.waiting[m.webhookID]...)
		}
	}
}

// stats are the unsettled messages and the making time of the oldest.
func (h *handOff) stats() (n int64, oldest sql.NullInt64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.order {
		if !m.settled {
			return int64(len(h.byID)), sql.NullInt64{Int64: m.m.createdAt, Valid: true}
		}
	}
	return 0, oldest
}

// oldestUnsettled is, for each webhook with messages in memory not yet
// settled, the position before the event of the oldest.
func (h *handOff) oldestUnsettled() map[string]eventstore.Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]eventstore.Position{}
	for _, m := range h.order {
		if _, seen := out[m.webhookID]; !seen && !m.settled {
			out[m.webhookID] = m.before
		}
	}
	return out
}

// pendingOf are a webhook's unsettled messages as lines of its
// deliveries log.
func (h *handOff) pendingOf(webhookID string) []queries.WebhookDelivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []queries.WebhookDelivery
	for _, m := range h.order {
		if m.settled || m.webhookID != webhookID {
			continue
		}
		at := time.UnixMilli(m.m.createdAt).UTC()
		out = append(out, queries.WebhookDelivery{ID: "pend_" + m.m.id + "_1", MessageID: m.m.id, EventType: m.m.eventType,
			Attempt: 1, Status: "pending", CreatedAt: at, NextAttemptAt: &at})
	}
	return out
}

// redone recognises, after a crash, the messages of events applied again
// whose attempts were recorded before it.
type redone struct {
	through   eventstore.Position // the last event applied before the crash
	attempted map[string]bool
}

// saveCheckpoint stores the projection's checkpoint as pos, also when it
// is behind the stored one (sqlitedb.Batch.SaveCheckpoint only raises it:
// here a held-back checkpoint may follow a later one).
func saveCheckpoint(b *sqlitedb.Batch, pos eventstore.Position) error {
	return b.Exec(`INSERT INTO checkpoint (id, commit_pos, prepare_pos) VALUES (1, ?, ?)
		ON CONFLICT(id) DO UPDATE SET commit_pos = excluded.commit_pos, prepare_pos = excluded.prepare_pos`, pos.Commit, pos.Prepare)
}

// saveHandOff stores, beside the checkpoint cp, the last event applied
// and the attempts floor of the events after cp.
func saveHandOff(b *sqlitedb.Batch, cp, applied eventstore.Position, floor int64) error {
	if err := saveCheckpoint(b, cp); err != nil {
		return err
	}
	// The last event applied only moves on: a deliverer's transaction may
	// carry an older one than the projection's last batch stored.
	return b.Exec(`INSERT INTO hand_off (id, applied_commit, applied_prepare, attempts_floor) VALUES (1, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET attempts_floor = excluded.attempts_floor,
		applied_commit = CASE WHEN (excluded.applied_commit, excluded.applied_prepare) > (applied_commit, applied_prepare) THEN excluded.applied_commit ELSE applied_commit END,
		applied_prepare = CASE WHEN (excluded.applied_commit, excluded.applied_prepare) > (applied_commit, applied_prepare) THEN excluded.applied_prepare ELSE applied_prepare END`,
		applied.Commit, applied.Prepare, floor)
}

// loadHandOff reads where the projection was when it stopped: when it had
// applied events past its checkpoint (messages in memory at a crash), the
// messages attempted since are listed, so that applying those events
// again sends only the others.
func (s *Store) loadHandOff(ctx context.Context) error {
	h := newHandOff()
	if err := s.w.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM attempts`).Scan(&h.seq); err != nil {
		return err
	}
	cp, err := sqlitedb.Checkpoint(ctx, s.w)
	if err != nil {
		return err
	}
	h.applied = cp
	s.hot = h
	var applied eventstore.Position
	var floor int64
	err = s.w.QueryRowContext(ctx, `SELECT applied_commit, applied_prepare, attempts_floor FROM hand_off WHERE id = 1`).Scan(&applied.Commit, &applied.Prepare, &floor)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !cp.Less(applied) {
		return nil
	}
	if err != nil {
		return err
	}
	rows, err := s.w.QueryContext(ctx, `SELECT message_id FROM attempts WHERE seq > ?`, floor)
	if err != nil {
		return err
	}
	defer rows.Close()
	r := &redone{through: applied, attempted: map[string]bool{}}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		r.attempted[id] = true
	}
	s.redo = r
	return rows.Err()
}

// spill writes messages waiting in memory to the table: those made before
// cutoff, or all when the deliverer stops.
func (s *Store) spill(ctx context.Context, cutoff int64, stopping bool) error {
	if s.hot == nil {
		return nil
	}
	ms := s.hot.spillable(cutoff, stopping)
	if len(ms) == 0 {
		return nil
	}
	settling := make(map[string]bool, len(ms))
	for _, m := range ms {
		settling[m.m.id] = true
	}
	if err := s.writeSpill(ctx, ms, settling); err != nil {
		s.hot.giveBack(ms)
		return err
	}
	s.hot.settled(settling, 0)
	return nil
}

func (s *Store) writeSpill(ctx context.Context, ms []*hotMsg, settling map[string]bool) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if sq, ok := s.q.(*sqliteQueue); ok {
		sq.gen.Add(1) // within the transaction (see sqliteQueue.gen)
	}
	b := sqlitedb.NewBatch(ctx, tx)
	for _, m := range ms {
		if err := b.Exec(insertPendingSQL+` ON CONFLICT(id) DO NOTHING`, m.m.id, m.webhookID, m.eventID, m.m.eventType, m.m.body, m.m.createdAt, 0, m.m.createdAt, m.before.Commit, m.before.Prepare); err != nil {
			return err
		}
	}
	if err := s.hot.save(b, settling); err != nil {
		return err
	}
	return tx.Commit()
}

// save stores the checkpoint as it is once settling are settled, in a
// transaction of the deliverer's (b).
func (h *handOff) save(b *sqlitedb.Batch, settling map[string]bool) error {
	applied := h.lastApplied()
	cp, floor := h.checkpoint(applied, nil, settling)
	return saveHandOff(b, cp, applied, floor)
}

// filter says whether an event applied again after a crash makes q: only
// when q was not attempted before the crash, and then in the table.
func (r *redone) filter(re *eventstore.RecordedEvent, q *queued) (keep bool) {
	if r == nil || r.through.Less(re.Position) {
		return true
	}
	q.durable = true
	return !r.attempted[q.id()]
}
