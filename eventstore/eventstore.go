// Package eventstore is the port through which linkd keeps its events: the
// source of truth of the whole system. Commands append to streams with an
// expected version; the relay and replay read the global log; projections
// never read it directly.
//
// Three adapters implement it: eventstore/embedded (durable files on local
// disk, the default), eventstore/esdb (EventStoreDB) and eventstore/postgres
// (PostgreSQL). All run the contract suite
// in eventstore/eventstoretest.
package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Errors every adapter returns (wrapped or bare) so that no driver error type
// leaks upward. Test with errors.Is.
var (
	// ErrWrongExpectedVersion: the stream's version did not match the
	// expectation given to Append. Nothing was written.
	ErrWrongExpectedVersion = errors.New("eventstore: wrong expected version")
	// ErrStreamNotFound: ReadStream of a stream that has no events.
	ErrStreamNotFound = errors.New("eventstore: stream not found")
	// ErrClosed: the store or subscription was closed.
	ErrClosed = errors.New("eventstore: closed")
	// ErrUnavailable is wrapped by the errors of a store that cannot be
	// reached (refused, timed out): the interface answers 503, and the
	// operation may be tried again.
	ErrUnavailable = errors.New("eventstore: the event store is unavailable")
	// ErrInvalidEvent: an event without a type, or a stream name that is
	// empty or reserved.
	ErrInvalidEvent = errors.New("eventstore: invalid event")
)

// Position is a place in the global log, totally ordered. The zero Position
// is "before the first event". Embedded positions use Commit == Prepare;
// EventStoreDB gives both parts of its transaction-log position.
type Position struct {
	Commit  uint64
	Prepare uint64
}

// Start is the position before every event.
var Start = Position{}

// Less reports whether p comes before q.
func (p Position) Less(q Position) bool {
	if p.Commit != q.Commit {
		return p.Commit < q.Commit
	}
	return p.Prepare < q.Prepare
}

// IsZero reports whether p is Start.
func (p Position) IsZero() bool { return p == Start }

// String renders p as "commit/prepare"; ParsePosition reads it back.
func (p Position) String() string {
	return strconv.FormatUint(p.Commit, 10) + "/" + strconv.FormatUint(p.Prepare, 10)
}

// ParsePosition parses the output of Position.String. An empty string is Start.
func ParsePosition(s string) (Position, error) {
	if s == "" {
		return Start, nil
	}
	c, pr, ok := strings.Cut(s, "/")
	if !ok {
		return Start, fmt.Errorf("eventstore: bad position %q", s)
	}
	commit, err := strconv.ParseUint(c, 10, 64)
	if err != nil {
		return Start, fmt.Errorf("eventstore: bad position %q: %w", s, err)
	}
	prepare, err := strconv.ParseUint(pr, 10, 64)
	if err != nil {
		return Start, fmt.Errorf("eventstore: bad position %q: %w", s, err)
	}
	return Position{Commit: commit, Prepare: prepare}, nil
}

type expectKind uint8

const (
	expectAny expectKind = iota
	expectNoStream
	expectStreamExists
	expectExact
)

// ExpectedVersion is the optimistic-concurrency condition of an Append.
// Stream versions (revisions) are 0-based: the first event of a stream has
// version 0.
type ExpectedVersion struct {
	kind    expectKind
	version uint64
}

// Any appends whatever the stream's state.
func Any() ExpectedVersion { return ExpectedVersion{kind: expectAny} }

// NoStream appends only if the stream has no events: the way reservation
// streams enforce uniqueness.
func NoStream() ExpectedVersion { return ExpectedVersion{kind: expectNoStream} }

// StreamExists appends only if the stream has at least one event.
func StreamExists() ExpectedVersion { return ExpectedVersion{kind: expectStreamExists} }

// Exact appends only if the stream's last event has version v.
func Exact(v uint64) ExpectedVersion { return ExpectedVersion{kind: expectExact, version: v} }

// IsAny, IsNoStream, IsStreamExists report the kind; Exact returns the
// version and true for an exact expectation.
func (e ExpectedVersion) IsAny() bool          { return e.kind == expectAny }
func (e ExpectedVersion) IsNoStream() bool     { return e.kind == expectNoStream }
func (e ExpectedVersion) IsStreamExists() bool { return e.kind == expectStreamExists }
func (e ExpectedVersion) Exact() (uint64, bool) {
	return e.version, e.kind == expectExact
}

// Check reports whether a stream whose last version is current (exists is
// false for an empty stream) satisfies e. Adapters that check versions in
// their own code use it so that every adapter agrees.
func (e ExpectedVersion) Check(current uint64, exists bool) bool {
	switch e.kind {
	case expectAny:
		return true
	case expectNoStream:
		return !exists
	case expectStreamExists:
		return exists
	default:
		return exists && current == e.version
	}
}

func (e ExpectedVersion) String() string {
	switch e.kind {
	case expectAny:
		return "any"
	case expectNoStream:
		return "no-stream"
	case expectStreamExists:
		return "stream-exists"
	default:
		return strconv.FormatUint(e.version, 10)
	}
}

// EventData is an event to append.
type EventData struct {
	// ID identifies the event; the zero UUID means "generate one".
	ID uuid.UUID
	// Type is the event's wire name, such as "LinkCreated". Required.
	Type string
	// Data is the event body, JSON.
	Data []byte
	// Metadata is optional JSON (correlation ids, the acting user).
	Metadata []byte
	// Value is optionally the event as the appender's Go value: exactly
	// what decoding Data gives back (set it only then), never changed after
	// the append. It is not stored. A store that feeds subscribers in
	// process may hand it to them as RecordedEvent.Value, so that they need
	// not decode Data again.
	Value any
}

// RecordedEvent is an event as stored.
type RecordedEvent struct {
	ID       uuid.UUID
	Stream   string
	Version  uint64 // 0-based revision within Stream
	Position Position
	Type     string
	Data     []byte
	Metadata []byte
	Time     time.Time // when it was appended, UTC
	// Value is the appender's EventData.Value when the event reaches a
	// subscriber in the process that appended it (the embedded store's live
	// subscriptions); nil otherwise, and never to be relied on. It is
	// shared: read it, never change it.
	Value any
}

// AppendResult tells where an append landed.
type AppendResult struct {
	// NextExpectedVersion is the version of the last event written: pass
	// Exact(NextExpectedVersion) to append after it.
	NextExpectedVersion uint64
	// Position is the global position of the last event written.
	Position Position
}

// Filter selects events of a subscription. The zero Filter selects every
// event of every application stream (streams whose name starts with "$" are
// system streams and are never delivered).
type Filter struct {
	// StreamPrefixes, when not empty, keeps only events of streams that
	// start with one of them.
	StreamPrefixes []string
}

// Match reports whether the filter keeps an event of stream.
func (f Filter) Match(stream string) bool {
	if strings.HasPrefix(stream, "$") {
		return false
	}
	if len(f.StreamPrefixes) == 0 {
		return true
	}
	for _, p := range f.StreamPrefixes {
		if strings.HasPrefix(stream, p) {
			return true
		}
	}
	return false
}

// Store is the event store port.
type Store interface {
	// Append writes events atomically to stream, all or nothing, if the
	// stream satisfies expected; otherwise it returns an error wrapping
	// ErrWrongExpectedVersion and writes nothing. When Append returns
	// without error the events survive a crash of the process; how they
	// survive a crash of the machine is the adapter's durability setting.
	// Appending zero events only checks expected. Append keeps nothing of
	// the events' Data and Metadata once it returns: the caller may reuse
	// them.
	Append(ctx context.Context, stream string, expected ExpectedVersion, events ...EventData) (AppendResult, error)

	// ReadStream returns up to max events of stream with version >= from,
	// in version order. A stream without events gives ErrStreamNotFound.
	ReadStream(ctx context.Context, stream string, from uint64, max int) ([]RecordedEvent, error)

	// StreamVersion returns the version of the last event of stream, and
	// false when the stream has no events.
	StreamVersion(ctx context.Context, stream string) (uint64, bool, error)

	// ReadAll returns up to max events of the global log strictly after
	// position after, in position order, skipping system streams.
	ReadAll(ctx context.Context, after Position, max int) ([]RecordedEvent, error)

	// Head returns the position of the last event in the global log, or
	// Start when it is empty.
	Head(ctx context.Context) (Position, error)

	// SubscribeAll delivers every event after position after that the
	// filter keeps: first the history (catch-up), then new events as they
	// are appended (live), with no gap and no duplicate at the handover.
	SubscribeAll(ctx context.Context, after Position, filter Filter) (Subscription, error)

	// Close releases the store. Appends in flight finish or fail.
	Close() error
}

// StreamAppend is one stream's part of AppendMulti.
type StreamAppend struct {
	Stream   string
	Expected ExpectedVersion
	Events   []EventData
}

// MultiAppender is implemented by stores that append to several streams in
// one atomic write (the embedded store; EventStoreDB cannot). AppendMulti
// writes every part or none: when a part's stream does not satisfy its
// expected version it returns an error wrapping ErrWrongExpectedVersion,
// naming that stream, and writes nothing. Each part needs at least one
// event, and a stream appears in one part at most. The results are the
// parts', in order. With no parts it writes nothing and answers nil, or,
// from a store that wraps another, errors.ErrUnsupported when the one it
// wraps cannot append to several streams at once.
type MultiAppender interface {
	AppendMulti(ctx context.Context, parts ...StreamAppend) ([]AppendResult, error)
}

// Subscription is a stream of recorded events from SubscribeAll.
type Subscription interface {
	// Recv returns the next event, waiting for one. Its Data and Metadata
	// may be shared with other subscribers: they must not be changed. It
	// returns an error wrapping ErrClosed after Close, or ctx's error. With
	// a ctx that is already done, an adapter may still hand out an event it
	// has buffered: readers use that to drain a batch without waiting.
	// A subscription has one reader: Recv is not called concurrently.
	Recv(ctx context.Context) (RecordedEvent, error)
	// Close stops the subscription; it may be called from any goroutine,
	// while Recv waits.
	Close() error
}

// A Drainer is a Subscription whose Recv, with a ctx that is already done,
// hands out every event it can without waiting (every one committed, not
// only those it buffered; with a log shared by several processes, every
// one the process has seen committed). A reader can then sleep while
// events gather and take them at once rather than wake at every append.
type Drainer interface {
	Subscription
	// DrainsCommitted marks the promise; it does nothing.
	DrainsCommitted()
}

// Category returns the category of a stream: the part before the first "-".
// "link-0b1c..." is in category "link".
func Category(stream string) string {
	if i := strings.IndexByte(stream, '-'); i >= 0 {
		return stream[:i]
	}
	return stream
}
