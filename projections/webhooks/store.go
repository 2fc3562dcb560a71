// Package webhooks is the webhook delivery projection: it keeps the
// webhooks of every workspace (the read model of /v1/webhooks), turns each
// event a webhook subscribes to into one message for it, and delivers the
// messages at least once, signed as Standard Webhooks, with retries
// (deliver.go). Messages, their attempts and the position in the log are
// in one SQLite database, written with the checkpoint in the same
// transaction: a crash or restart loses no message, and a redelivery
// carries the same webhook-id (ADR 0101, docs/webhooks.md). With the event
// store in PostgreSQL the messages and attempts are there instead, shared
// by the instances of a deployment and committed before the checkpoint
// (queue.go, pgqueue.go; ADR 0108).
package webhooks

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/domain/workspace"
	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/storage/sqlitedb"
	"github.com/linkd/linkd/projections"
)

// Name is the projection's name: its checkpoint and its Kafka consumer
// group. It never changes.
const Name = "webhooks"

// Events is what the projection reads of the event store besides its
// feed: the history of a link or a customer, to put them in a payload,
// and the log, to replay.
type Events interface {
	ReadStream(ctx context.Context, stream string, from uint64, max int) ([]eventstore.RecordedEvent, error)
	StreamVersion(ctx context.Context, stream string) (uint64, bool, error)
	ReadAll(ctx context.Context, after eventstore.Position, max int) ([]eventstore.RecordedEvent, error)
}

// LinkRenderer renders a link as GET /v1/links/{id} shows it.
type LinkRenderer func(ctx context.Context, l *link.Link, clicks int64) (map[string]any, error)

const schema = `
CREATE TABLE IF NOT EXISTS webhooks (
	id TEXT PRIMARY KEY,
	workspace_id TEXT NOT NULL,
	url TEXT NOT NULL,
	events TEXT NOT NULL,
	link_ids TEXT NOT NULL,
	description TEXT NOT NULL,
	secret_enc TEXT NOT NULL,
	is_active INTEGER NOT NULL,
	deleted INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	created_commit INTEGER NOT NULL,
	created_prepare INTEGER NOT NULL,
	version INTEGER NOT NULL,
	failing_since INTEGER);
CREATE INDEX IF NOT EXISTS webhooks_ws ON webhooks (workspace_id, created_at);
CREATE TABLE IF NOT EXISTS messages (
	id TEXT PRIMARY KEY,
	webhook_id TEXT NOT NULL,
	event_id TEXT NOT NULL,
	event_type TEXT NOT NULL,
	body BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	status TEXT NOT NULL,
	next_attempt_at INTEGER,
	round INTEGER NOT NULL DEFAULT 0,
	before_commit INTEGER,
	before_prepare INTEGER);
DROP INDEX IF EXISTS messages_due;
DROP INDEX IF EXISTS messages_queue;
CREATE INDEX IF NOT EXISTS messages_waiting ON messages (webhook_id, next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS messages_pending ON messages (next_attempt_at) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS attempts (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	message_id TEXT NOT NULL,
	webhook_id TEXT NOT NULL,
	event_type TEXT NOT NULL,
	attempt INTEGER NOT NULL,
	status TEXT NOT NULL,
	response_status INTEGER,
	response_body TEXT,
	duration_ms INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	next_attempt_at INTEGER);
CREATE INDEX IF NOT EXISTS attempts_webhook ON attempts (webhook_id, seq);
CREATE TABLE IF NOT EXISTS hand_off (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	applied_commit INTEGER NOT NULL,
	applied_prepare INTEGER NOT NULL,
	attempts_floor INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS deliverer (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	owner TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS queued_through (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	commit_pos INTEGER NOT NULL,
	prepare_pos INTEGER NOT NULL);
` + sqlitedb.CheckpointTable

// hook is what deliveries and matching need of a webhook, kept in memory.
type hook struct {
	ID          string
	WorkspaceID string
	URL         string
	Events      []string
	LinkIDs     []string
	SecretEnc   string
	Active      bool
	Created     eventstore.Position
}

func (h *hook) wants(eventType, linkID string) bool {
	if !h.Active || !slices.Contains(h.Events, eventType) {
		return false
	}
	if len(h.LinkIDs) == 0 || eventType == webhook.TypeLinkCreated || eventType == webhook.TypeLinkUpdated || eventType == webhook.TypeLinkDeleted {
		return true
	}
	return slices.Contains(h.LinkIDs, linkID)
}

// Options configure a Store.
type Options struct {
	// Events reads streams and the log (payloads, replay).
	Events Events
	// RenderLink renders links in payloads.
	RenderLink LinkRenderer
	Logger     *slog.Logger
	// Now is the time of deliveries and of their schedule (default the
	// system's).
	Now func() time.Time
	// Postgres, when set, is the PostgreSQL database of the event store,
	// shared by the instances of a deployment: the queue and the attempts
	// are kept there, and every message is delivered by one instance (ADR
	// 0108). The webhooks stay in the instance's own database.
	Postgres string
	// Coordinate, when set (and Postgres is not), is the event store shared
	// by the instances of a deployment: one of them at a time, the holder
	// of its lease, makes and delivers the messages (progress.go, ADR
	// 0114). Replays are then requested through RequestReplay.
	Coordinate    Coordination
	RequestReplay ReplayRequester
	// PublishAttempts records in the log the attempts this instance made,
	// for the deliveries log of the others (with Coordinate).
	PublishAttempts func(ctx context.Context, e *webhook.AttemptsRecorded) error
}

// Store is the projection and its read model. Under load it takes clicks
// in long batches (projections.LongBatches): a transaction per batch of
// messages rather than per few.
type Store struct {
	projections.LongBatches
	w, r   *sql.DB
	opts   Options
	log    *slog.Logger
	mu     sync.RWMutex
	hooks  map[string]*hook   // by id: active or not, not deleted
	byWS   map[string][]*hook // by workspace
	links  *linkCache
	notify func(webhookIDs []string)
	// q holds the messages and the attempts.
	q queue
	// queuedThrough is how far in the log messages were made before the
	// last Reset (the checkpoint then): a replay rebuilds the webhooks
	// from those events but makes no message of them again (they were
	// sent, or are in the queue, or were pruned long ago), and stops
	// there (ReplayBound): what follows is live processing's.
	queuedThrough eventstore.Position
	// hot hands messages to the deliverer in memory (nil with the queue in
	// PostgreSQL); redo, after a crash, recognises the messages attempted
	// before it among those of the events applied again (hot.go).
	hot  *handOff
	redo *redone
	// coord is Options.Coordinate (nil with the queue in PostgreSQL);
	// deliver says whether this instance makes messages.
	coord   Coordination
	deliver delivering
	// instance names this Store in the attempts it publishes: it skips
	// its own when the log brings them back.
	instance string
	// replaying are the replays requested in the log under way, and the
	// publisher of attempts (bg ends them when the store closes).
	replaying sync.WaitGroup
	// attemptsOut are attempts to record in the log (progress.go).
	attemptsOut chan *webhook.AttemptsRecorded
	bg          context.Context
	stopBG      context.CancelFunc
}

// Open opens (creating) the database at path.
func Open(path string, o Options) (*Store, error) {
	w, r, err := sqlitedb.Open(path)
	if err != nil {
		return nil, err
	}
	if _, err := w.Exec(schema); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("webhooks schema: %w", err)
	}
	if err := addColumns(w); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("webhooks schema: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	sq := newSQLiteQueue(w, r)
	s := &Store{w: w, r: r, opts: o, log: o.Logger, links: newLinkCache(1 << 14), q: sq}
	s.bg, s.stopBG = context.WithCancel(context.Background())
	if o.Postgres == "" && o.Coordinate != nil {
		s.coord = o.Coordinate
		var b [8]byte
		_, _ = rand.Read(b[:])
		s.instance = hex.EncodeToString(b[:])
		// The attempts the log brings are looked up before they are
		// written: an event applied again writes nothing twice.
		if _, err := w.Exec(`CREATE INDEX IF NOT EXISTS attempts_message ON attempts (message_id, attempt)`); err != nil {
			s.Close()
			return nil, fmt.Errorf("webhooks schema: %w", err)
		}
		if o.PublishAttempts != nil {
			s.attemptsOut = make(chan *webhook.AttemptsRecorded, 1024)
			s.replaying.Add(1)
			go s.publisher()
		}
	}
	if o.Postgres == "" {
		if err := s.loadHandOff(context.Background()); err != nil {
			s.Close()
			return nil, fmt.Errorf("webhooks: %w", err)
		}
		sq.hot = s.hot
	} else {
		pq, err := openPGQueue(o.Postgres)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.q = pq
		if err := pq.succeed(context.Background(), s.w); err != nil {
			s.Close()
			return nil, fmt.Errorf("webhooks: taking over the claims of this data directory's last process: %w", err)
		}
		if err := s.adopt(context.Background()); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.loadHooks(context.Background()); err != nil {
		s.Close()
		return nil, err
	}
	err = w.QueryRow(`SELECT commit_pos, prepare_pos FROM queued_through WHERE id = 1`).Scan(&s.queuedThrough.Commit, &s.queuedThrough.Prepare)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		s.Close()
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	return s, nil
}

// adopt moves the messages still pending in the instance's own queue (it
// ran with a queue of its own before) to the shared one, with their ids.
func (s *Store) adopt(ctx context.Context) error {
	rows, err := s.w.QueryContext(ctx, `SELECT id, webhook_id, event_id, event_type, body FROM messages WHERE status = 'pending'`)
	if err != nil {
		return err
	}
	c := &changes{now: s.opts.Now().UnixMilli()}
	for rows.Next() {
		var id string
		var m queued
		if err := rows.Scan(&id, &m.webhookID, &m.eventID, &m.eventType, &m.body); err != nil {
			rows.Close()
			return err
		}
		m.eventTime = time.UnixMilli(c.now)
		c.msgs = append(c.msgs, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(c.msgs) == 0 {
		return err
	}
	if err := s.q.write(ctx, nil, c); err != nil {
		return fmt.Errorf("webhooks: moving the pending messages to PostgreSQL: %w", err)
	}
	_, err = s.w.ExecContext(ctx, `DELETE FROM messages WHERE status = 'pending'`)
	return err
}

// addColumns adds to a database made before them:
//   - messages.round: a replay starts a new round of a message, and the
//     result of an attempt of the round before (in flight when the replay
//     queued it again) must not end it;
//   - messages.before_commit and before_prepare, the position before the
//     message's event: the progress of a deliverer shared through the
//     event store (progress.go). NULL in rows made before them.
func addColumns(w *sql.DB) error {
	for _, c := range []struct{ name, def string }{
		{"round", "round INTEGER NOT NULL DEFAULT 0"},
		{"before_commit", "before_commit INTEGER"},
		{"before_prepare", "before_prepare INTEGER"},
	} {
		var n int
		if err := w.QueryRow(`SELECT COUNT(*) FROM pragma_table_info('messages') WHERE name = ?`, c.name).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := w.Exec(`ALTER TABLE messages ADD COLUMN ` + c.def); err != nil {
				return err
			}
		}
	}
	_, err := w.Exec(`CREATE INDEX IF NOT EXISTS messages_before ON messages (webhook_id, before_commit, before_prepare) WHERE status = 'pending'`)
	return err
}

// Close closes the databases.
func (s *Store) Close() error {
	s.stopBG()
	s.replaying.Wait()
	var qerr error
	if s.q != nil {
		qerr = s.q.close()
	}
	return errors.Join(s.w.Close(), s.r.Close(), qerr)
}

// Name implements projections.Projector.
func (s *Store) Name() string { return Name }

// Categories implements projections.Projector.
func (s *Store) Categories() []string {
	return []string{webhook.Category, webhook.ReplayCategory, webhook.AttemptsCategory, "link", "clicks", "customer", strings.TrimSuffix(workspace.StreamPrefix, "-")}
}

// Checkpoint implements projections.Projector.
func (s *Store) Checkpoint(ctx context.Context) (eventstore.Position, error) {
	return sqlitedb.Checkpoint(ctx, s.w)
}

// Reset implements projections.Projector: a replay rebuilds the webhooks
// and matches events again; messages already made keep their ids, so
// nothing is delivered twice by a rebuild that reaches them again.
//
// Messages are made only of events after the checkpoint the projection
// had reached (queuedThrough): a replay rebuilds the webhooks, it does not
// send the log again (POST /v1/webhooks/{id}/replay does, for a range).
func (s *Store) Reset(ctx context.Context) error {
	cp, err := sqlitedb.Checkpoint(ctx, s.w)
	if err != nil {
		return err
	}
	if cp.Less(s.queuedThrough) {
		cp = s.queuedThrough
	}
	if _, err := s.w.ExecContext(ctx, `INSERT INTO queued_through (id, commit_pos, prepare_pos) VALUES (1, ?, ?)
		ON CONFLICT(id) DO UPDATE SET commit_pos = excluded.commit_pos, prepare_pos = excluded.prepare_pos;
		DELETE FROM webhooks; DELETE FROM checkpoint;`, cp.Commit, cp.Prepare); err != nil {
		return err
	}
	s.queuedThrough = cp
	if s.hot != nil {
		s.hot.restart()
	}
	return s.loadHooks(ctx)
}

// ReplayBound implements projections.Bounded: a replay stops where
// messages were made up to before it (see Reset).
func (s *Store) ReplayBound() eventstore.Position { return s.queuedThrough }

func (s *Store) loadHooks(ctx context.Context) error {
	rows, err := s.w.QueryContext(ctx, `SELECT id, workspace_id, url, events, link_ids, secret_enc, is_active, created_commit, created_prepare FROM webhooks WHERE deleted = 0`)
	if err != nil {
		return err
	}
	defer rows.Close()
	hooks := map[string]*hook{}
	for rows.Next() {
		h := &hook{}
		var ev, ids string
		if err := rows.Scan(&h.ID, &h.WorkspaceID, &h.URL, &ev, &ids, &h.SecretEnc, &h.Active, &h.Created.Commit, &h.Created.Prepare); err != nil {
			return err
		}
		_ = json.Unmarshal([]byte(ev), &h.Events)
		_ = json.Unmarshal([]byte(ids), &h.LinkIDs)
		hooks[h.ID] = h
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.setHooks(hooks)
	s.mu.Unlock()
	return nil
}

// setHooks replaces the hooks; s.mu is held.
func (s *Store) setHooks(hooks map[string]*hook) {
	s.hooks = hooks
	s.byWS = map[string][]*hook{}
	for _, h := range hooks {
		s.byWS[h.WorkspaceID] = append(s.byWS[h.WorkspaceID], h)
	}
}

// copyHooks copies the webhooks' state.
func (s *Store) copyHooks() map[string]*hook {
	s.mu.RLock()
	defer s.mu.RUnlock()
	hooks := make(map[string]*hook, len(s.hooks))
	for id, h := range s.hooks {
		c := *h
		hooks[id] = &c
	}
	return hooks
}

// hook returns a copy of webhook id's state.
func (s *Store) hook(id string) (hook, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.hooks[id]
	if !ok {
		return hook{}, false
	}
	return *h, true
}

// activeHookIDs lists the active webhooks.
func (s *Store) activeHookIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for id, h := range s.hooks {
		if h.Active {
			out = append(out, id)
		}
	}
	return out
}

// MessageID is the webhook-id of an event delivered to a webhook: the
// same for every attempt and every replay.
func MessageID(eventID, webhookID string) string {
	sum := sha256.Sum256([]byte(eventID + "/" + webhookID))
	return "msg_" + hex.EncodeToString(sum[:16])
}

// Apply implements projections.Projector.
func (s *Store) Apply(ctx context.Context, events []projections.Event) error {
	if len(events) == 0 {
		return nil
	}
	s.deliver.mu.Lock()
	defer s.deliver.mu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	b := sqlitedb.NewBatch(ctx, tx)
	// The hooks change as the batch applies; they are copied so that a
	// batch that fails leaves them as they were.
	hooks := s.copyHooks()
	a := &applier{s: s, b: b, hooks: hooks, changes: changes{now: s.opts.Now().UnixMilli()}, mute: s.mutedLocked()}
	if s.hot != nil {
		a.before = s.hot.lastApplied()
	}
	a.index()
	for i := range events {
		if err := a.apply(ctx, &events[i]); err != nil {
			return fmt.Errorf("webhooks: %s %s@%d: %w", events[i].Type, events[i].Stream, events[i].Version, err)
		}
		a.before = events[i].Position
	}
	last := events[len(events)-1].Position
	var fresh []*hotMsg
	if s.hot != nil {
		fresh = s.hot.admit(&a.changes)
	}
	if err := s.q.write(ctx, b, &a.changes); err != nil {
		return err
	}
	if s.hot == nil {
		if err := saveCheckpoint(b, last); err != nil {
			return err
		}
	} else {
		// The checkpoint stays before the oldest message only in memory.
		cp, floor := s.hot.checkpoint(last, fresh, nil)
		if err := saveHandOff(b, cp, last, floor); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if s.hot != nil {
		s.hot.add(fresh, last, a.changes.dropped)
		if s.redo != nil && s.redo.through.Less(last) {
			s.redo = nil
		}
	}
	s.mu.Lock()
	s.setHooks(a.hooks)
	s.mu.Unlock()
	for _, id := range a.changedLinks {
		s.links.forget(id)
	}
	for _, r := range a.replays {
		s.startReplay(r)
	}
	if len(a.touched) > 0 && s.notify != nil {
		ids := make([]string, 0, len(a.touched))
		for id := range a.touched {
			ids = append(ids, id)
		}
		s.notify(ids)
	}
	return nil
}

// applier applies one batch.
type applier struct {
	s       *Store
	b       *sqlitedb.Batch
	hooks   map[string]*hook
	byWS    map[string][]*hook
	changes changes         // to the queue
	touched map[string]bool // webhooks given messages
	// before is the position of the event applied before the one being
	// applied.
	before       eventstore.Position
	changedLinks []string
	// mute: this instance makes no message (progress.go).
	mute bool
	// replays are the replay requests of the batch, carried out once it is
	// committed.
	replays []requested
}

func (a *applier) index() {
	a.byWS = map[string][]*hook{}
	for _, h := range a.hooks {
		a.byWS[h.WorkspaceID] = append(a.byWS[h.WorkspaceID], h)
	}
}

func (a *applier) apply(ctx context.Context, ev *projections.Event) error {
	re := &ev.RecordedEvent
	switch {
	case strings.HasPrefix(re.Stream, webhook.StreamPrefix):
		return a.webhookEvent(ev)
	case re.Type == workspace.EventDeleted:
		return a.workspaceDeleted(ev)
	case strings.HasPrefix(re.Stream, workspace.StreamPrefix):
		return nil
	case re.Type == webhook.EventAttemptsRecorded:
		return a.attemptsRecorded(ev)
	case re.Type == webhook.EventReplayRequested:
		if !a.mute && a.s.queuedThrough.Less(re.Position) {
			a.replays = append(a.replays, requested{re: *re, before: a.before})
		}
		return nil
	case re.Type == click.EventRecorded:
		if !a.anyWants(webhook.TypeLinkClicked) {
			return nil
		}
	case re.Type == link.EventCreated || re.Type == link.EventUpdated || re.Type == link.EventArchived ||
		re.Type == link.EventUnarchived || re.Type == link.EventDeleted:
		a.changedLinks = append(a.changedLinks, strings.TrimPrefix(re.Stream, "link-"))
		if !a.anyWants(webhook.TypeLinkCreated, webhook.TypeLinkUpdated, webhook.TypeLinkDeleted) {
			return nil
		}
	case re.Type == conversion.EventLeadTracked:
		if !a.anyWants(webhook.TypeLeadCreated) {
			return nil
		}
	case re.Type == conversion.EventSaleTracked:
		if !a.anyWants(webhook.TypeSaleCreated) {
			return nil
		}
	default:
		return nil
	}
	if a.mute || !a.s.queuedThrough.Less(re.Position) {
		return nil // another instance delivers, or made before a replay (Reset)
	}
	m, err := a.s.match(ctx, re, ev.Decode, a.byWS, true)
	if err != nil || m == nil {
		return err
	}
	for _, h := range m.hooks {
		q := queued{webhookID: h.ID, eventID: re.ID.String(), eventType: m.eventType, body: m.body, eventTime: re.Time, before: a.before}
		if !a.s.redo.filter(re, &q) {
			continue // attempted before a crash
		}
		a.changes.msgs = append(a.changes.msgs, q)
		if a.touched == nil {
			a.touched = map[string]bool{}
		}
		a.touched[h.ID] = true
	}
	return nil
}

func (a *applier) anyWants(types ...string) bool {
	for _, h := range a.hooks {
		if !h.Active {
			continue
		}
		for _, t := range types {
			if slices.Contains(h.Events, t) {
				return true
			}
		}
	}
	return false
}

func (a *applier) webhookEvent(ev *projections.Event) error {
	re := &ev.RecordedEvent
	id := strings.TrimPrefix(re.Stream, webhook.StreamPrefix)
	var v int64 = -1
	err := a.b.Tx.QueryRowContext(a.b.Ctx, `SELECT version FROM webhooks WHERE id = ?`, id).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if int64(re.Version) <= v {
		return nil // applied before
	}
	e, err := ev.Decode()
	if errors.Is(err, domain.ErrUnknownEvent) {
		return nil
	}
	if err != nil {
		return err
	}
	switch e := e.(type) {
	case *webhook.Created:
		ev, _ := json.Marshal(e.Events)
		ids, _ := json.Marshal(nonNil(e.LinkIDs))
		if err := a.b.Exec(`INSERT INTO webhooks (id, workspace_id, url, events, link_ids, description, secret_enc, is_active,
			created_at, updated_at, created_commit, created_prepare, version) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)
			ON CONFLICT(id) DO NOTHING`, e.ID, e.WorkspaceID, e.URL, string(ev), string(ids), e.Description, e.SecretEnc,
			e.At.UnixNano(), e.At.UnixNano(), re.Position.Commit, re.Position.Prepare, re.Version); err != nil {
			return err
		}
		a.hooks[e.ID] = &hook{ID: e.ID, WorkspaceID: e.WorkspaceID, URL: e.URL, Events: e.Events, LinkIDs: e.LinkIDs,
			SecretEnc: e.SecretEnc, Active: true, Created: re.Position}
	case *webhook.Updated:
		h := a.hooks[e.ID]
		sets := []string{"updated_at = ?", "version = ?"}
		args := []any{e.At.UnixNano(), re.Version}
		if u, ok := e.URL.Value(); ok {
			sets, args = append(sets, "url = ?"), append(args, u)
			if h != nil {
				h.URL = u
			}
		}
		if ev, ok := e.Events.Value(); ok {
			j, _ := json.Marshal(ev)
			sets, args = append(sets, "events = ?"), append(args, string(j))
			if h != nil {
				h.Events = ev
			}
		}
		if e.LinkIDs.Set {
			j, _ := json.Marshal(nonNil(e.LinkIDs.V))
			sets, args = append(sets, "link_ids = ?"), append(args, string(j))
			if h != nil {
				h.LinkIDs = e.LinkIDs.V
			}
		}
		if e.Description.Set {
			sets, args = append(sets, "description = ?"), append(args, e.Description.V)
		}
		if act, ok := e.IsActive.Value(); ok {
			sets, args = append(sets, "is_active = ?"), append(args, act)
			if h != nil {
				h.Active = act
			}
			if act {
				if a.changes.reenabled == nil {
					a.changes.reenabled = map[string]int64{}
				}
				a.changes.reenabled[e.ID] = e.At.UnixMilli()
			}
		}
		if err := a.b.Exec(`UPDATE webhooks SET `+strings.Join(sets, ", ")+` WHERE id = ?`, append(args, e.ID)...); err != nil {
			return err
		}
	case *webhook.Disabled:
		if err := a.b.Exec(`UPDATE webhooks SET is_active = 0, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, e.ID); err != nil {
			return err
		}
		if h := a.hooks[e.ID]; h != nil {
			h.Active = false
		}
	case *webhook.Deleted:
		if err := a.b.Exec(`UPDATE webhooks SET deleted = 1, is_active = 0, updated_at = ?, version = ? WHERE id = ?`, e.At.UnixNano(), re.Version, e.ID); err != nil {
			return err
		}
		a.changes.dropped = append(a.changes.dropped, e.ID)
		delete(a.hooks, e.ID)
	}
	a.index()
	return nil
}

// workspaceDeleted ends the webhooks of a deleted workspace as a deletion
// of each would (docs/decisions.md, "References that stop existing"):
// nothing more is queued for them, not even the link.deleted of the
// deletion's own cascade, which follows in the log, and what was pending
// fails. Their streams stay as they were; the API no longer shows them.
func (a *applier) workspaceDeleted(ev *projections.Event) error {
	wsID := strings.TrimPrefix(ev.Stream, workspace.StreamPrefix)
	hooks := a.byWS[wsID]
	if len(hooks) == 0 {
		return nil
	}
	for _, h := range hooks {
		if err := a.b.Exec(`UPDATE webhooks SET deleted = 1, is_active = 0, updated_at = ? WHERE id = ?`, ev.Time.UnixNano(), h.ID); err != nil {
			return err
		}
		a.changes.dropped = append(a.changes.dropped, h.ID)
		delete(a.hooks, h.ID)
	}
	a.index()
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
