// Package commands holds the write side: one file per command, named after
// it (create_link.go holds CreateLink and CreateLinkHandler), each with its
// handler. A handler loads the aggregates it needs from their streams,
// calls their behaviour, and appends the new events with the version it
// loaded (optimistic concurrency). The three member commands of a
// workspace share one handler (workspace_members.go); deleting with
// contents shares cascade.go; loading aggregates and reservations is in
// repo.go. The interfaces handlers need are declared here, small: the event
// store, the cipher, and the clock and id source in Deps.
package commands

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/eventstore"
)

// EventStore is what commands need of the event store.
type EventStore interface {
	Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events ...eventstore.EventData) (eventstore.AppendResult, error)
	ReadStream(ctx context.Context, stream string, from uint64, max int) ([]eventstore.RecordedEvent, error)
	StreamVersion(ctx context.Context, stream string) (uint64, bool, error)
}

// Cipher encrypts link passwords so that they never rest in plain text.
type Cipher interface {
	Encrypt(plain string) (string, error)
}

// Deps are what every handler is given.
type Deps struct {
	Store  EventStore
	Now    func() time.Time
	NewID  func() string
	Cipher Cipher
	// DefaultPlan is the plan of new workspaces.
	DefaultPlan string
	// CodeLength is the length of generated short codes (default 7).
	CodeLength int
	// Customers keeps the customers conversions recorded recently; nil
	// keeps none.
	Customers *CustomerCache
	// WebhookURLs checks the destinations of webhooks; nil checks only
	// their form.
	WebhookURLs WebhookURLChecker

	multi atomic.Int32 // whether Store appends to several streams at once: 0 not asked yet, multiYes, multiNo
}

const (
	multiYes = 1
	multiNo  = 2
)

// multiAppender returns the store as a MultiAppender when it appends to
// several streams at once. A store that wraps another answers an append of
// no parts with errors.ErrUnsupported when the one it wraps cannot: that is
// asked once.
func (d *Deps) multiAppender(ctx context.Context) (eventstore.MultiAppender, bool) {
	m, ok := d.Store.(eventstore.MultiAppender)
	if !ok {
		return nil, false
	}
	switch d.multi.Load() {
	case multiYes:
		return m, true
	case multiNo:
		return nil, false
	}
	if _, err := m.AppendMulti(ctx); errors.Is(err, errors.ErrUnsupported) {
		d.multi.Store(multiNo)
		return nil, false
	} else if err != nil {
		return nil, false // ask again next time
	}
	d.multi.Store(multiYes)
	return m, true
}

// NewUUID returns a time-ordered UUID (v7) string.
func NewUUID() string { return uuid.Must(uuid.NewV7()).String() }

func (d *Deps) now() time.Time {
	if d.Now == nil {
		return time.Now().UTC()
	}
	return d.Now().UTC()
}

func (d *Deps) newID() string {
	if d.NewID == nil {
		return NewUUID()
	}
	return d.NewID()
}

// Actor is who issues a command.
type Actor struct {
	UserID   string
	KeyID    string
	Operator bool
}

// Result tells where a command's events landed: the position a reader waits
// for to see them.
type Result struct {
	Position eventstore.Position
	Wrote    bool
	// Version is the stream version of the last event of the last append.
	Version uint64
}

// merge keeps the latest position of two results.
func (r *Result) merge(o Result) {
	if o.Wrote {
		if !r.Wrote || r.Position.Less(o.Position) {
			r.Position = o.Position
			r.Version = o.Version
		}
		r.Wrote = true
	}
}

// ErrConcurrency is returned when a stream changed under a command more
// times than it retried.
var ErrConcurrency = errors.New("commands: concurrent modification, try again")

// readAll reads the whole history of a stream; an absent stream is empty.
func readAll(ctx context.Context, s EventStore, stream string) ([]domain.Event, error) {
	if h, ok := s.(*historyStore); ok {
		return h.readAll(ctx, stream)
	}
	return readStream(ctx, s, stream, 0, nil)
}

// pending is what an aggregate offers to be saved.
type pending interface {
	Pending() []domain.Event
	LoadedVersion() (uint64, bool)
	ClearPending()
}

// save appends an aggregate's recorded events with the version it was
// loaded at.
func save(ctx context.Context, s EventStore, stream string, agg pending, meta domain.Metadata) (Result, error) {
	events := agg.Pending()
	if len(events) == 0 {
		return Result{}, nil
	}
	expected := eventstore.NoStream()
	loaded, ok := agg.LoadedVersion()
	if ok {
		expected = eventstore.Exact(loaded)
	}
	res, err := appendEvents(ctx, s, stream, expected, meta, events...)
	h, cached := s.(*historyStore)
	if err != nil {
		if cached && errors.Is(err, eventstore.ErrWrongExpectedVersion) {
			h.conflicted(stream)
		}
		return Result{}, err
	}
	if cached {
		h.saved(stream, loaded, ok, events)
	}
	agg.ClearPending()
	return res, nil
}

func appendEvents(ctx context.Context, s EventStore, stream string, expected eventstore.ExpectedVersion, meta domain.Metadata, events ...domain.Event) (Result, error) {
	md, err := encodeMeta(meta)
	if err != nil {
		return Result{}, err
	}
	data, err := encodeEvents(md, events)
	if err != nil {
		return Result{}, err
	}
	ar, err := s.Append(ctx, stream, expected, data...)
	if err != nil {
		return Result{}, err
	}
	return resultOf(ar), nil
}

// resultOf is the Result of an append that wrote.
func resultOf(ar eventstore.AppendResult) Result {
	return Result{Position: ar.Position, Wrote: true, Version: ar.NextExpectedVersion}
}

// encodeMeta is the JSON of an event's metadata; none when it is empty.
func encodeMeta(meta domain.Metadata) ([]byte, error) {
	if meta == (domain.Metadata{}) {
		return nil, nil
	}
	return json.Marshal(meta)
}

// encodeEvents makes the events to append, with metadata md (encodeMeta).
func encodeEvents(md []byte, events []domain.Event) ([]eventstore.EventData, error) {
	data := make([]eventstore.EventData, len(events))
	for i, e := range events {
		typ, body, err := domain.EncodeEvent(e)
		if err != nil {
			return nil, err
		}
		data[i] = eventstore.EventData{ID: uuid.Must(uuid.NewV7()), Type: typ, Data: body, Metadata: md}
	}
	return data, nil
}

// retry runs f again when it fails on a concurrent change of its stream.
func retry(ctx context.Context, f func() (Result, error)) (Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := f()
		if !errors.Is(err, eventstore.ErrWrongExpectedVersion) {
			return res, err
		}
		if attempt == 20 {
			return res, ErrConcurrency
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
}

func metaOf(a Actor) domain.Metadata {
	return domain.Metadata{UserID: a.UserID, KeyID: a.KeyID}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
