package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// The message codec. Two message shapes exist. A single-event message's
// payload is the event's JSON and its metadata (Kafka headers) name the
// stream, version, position and type. A batch message carries several
// events in order in a compact binary form (EncodeBatch), so that a
// projector applies many events in one transaction. The relay publishes
// batches of one partition's events, of one stream or several (ADR 0121);
// older relays published batches of one stream, and before them
// single-event messages: Decode reads them all.

// Metadata keys of single-event messages. Batch messages carry MetaBatch
// (their event count) and, when all their events are of one stream,
// MetaStream.
const (
	MetaStream   = "linkd-stream"
	MetaVersion  = "linkd-version"
	MetaPosition = "linkd-position"
	MetaType     = "linkd-type"
	MetaTime     = "linkd-time"
	MetaMetadata = "linkd-metadata"
	MetaBatch    = "linkd-batch"
	// MetaKey is the partition key of a batch of several streams: one of
	// them, whose partition holds them all (StreamKey).
	MetaKey = "linkd-key"
)

// TopicPrefix starts every topic name: "linkd.link", "linkd.clicks".
const TopicPrefix = "linkd."

// Topic is the topic of a stream category.
func Topic(category string) string { return TopicPrefix + category }

// TopicOf is the topic of the stream an event belongs to.
func TopicOf(stream string) string { return Topic(eventstore.Category(stream)) }

// EncodeEvent makes the single-event message of e. Its UUID is the event id,
// so duplicates of one event carry the same message id.
func EncodeEvent(e eventstore.RecordedEvent) *message.Message {
	m := message.NewMessage(e.ID.String(), e.Data)
	m.Metadata.Set(MetaStream, e.Stream)
	m.Metadata.Set(MetaVersion, strconv.FormatUint(e.Version, 10))
	m.Metadata.Set(MetaPosition, e.Position.String())
	m.Metadata.Set(MetaType, e.Type)
	m.Metadata.Set(MetaTime, e.Time.UTC().Format(time.RFC3339Nano))
	if len(e.Metadata) > 0 {
		m.Metadata.Set(MetaMetadata, string(e.Metadata))
	}
	return m
}

// batchID is the message id of a batch: its last event's id.
func batchID(events []eventstore.RecordedEvent) string {
	if len(events) == 0 {
		return uuid.Nil.String()
	}
	return events[len(events)-1].ID.String()
}

// EncodeBatch makes one message carrying events in order. When the events
// are all of one stream, its MetaStream names it, so that the message is
// keyed (StreamKey) and partitioned by it like a single-event message.
func EncodeBatch(events []eventstore.RecordedEvent) *message.Message {
	size := 8
	for i := range events {
		size += EncodedSize(&events[i])
	}
	b := make([]byte, 0, size)
	b = append(b, batchMagic...)
	b = binary.AppendUvarint(b, uint64(len(events)))
	for i := range events {
		e := &events[i]
		b = append(b, e.ID[:]...)
		b = appendBytes(b, []byte(e.Stream))
		b = binary.AppendUvarint(b, e.Version)
		b = binary.AppendUvarint(b, e.Position.Commit)
		b = binary.AppendUvarint(b, e.Position.Prepare)
		b = appendBytes(b, []byte(e.Type))
		b = binary.AppendVarint(b, e.Time.UnixNano())
		b = appendBytes(b, e.Data)
		b = appendBytes(b, e.Metadata)
	}
	m := message.NewMessage(batchID(events), b)
	m.Metadata.Set(MetaBatch, strconv.Itoa(len(events)))
	if len(events) > 0 && oneStream(events) {
		m.Metadata.Set(MetaStream, events[0].Stream)
	}
	return m
}

func oneStream(events []eventstore.RecordedEvent) bool {
	for i := 1; i < len(events); i++ {
		if events[i].Stream != events[0].Stream {
			return false
		}
	}
	return true
}

// EncodedSize is about the payload bytes e takes in a batch message (a
// bound: varints are counted at their largest).
func EncodedSize(e *eventstore.RecordedEvent) int {
	return 16 + 6*binary.MaxVarintLen64 + len(e.Stream) + len(e.Type) + len(e.Data) + len(e.Metadata)
}

// EventCount is the number of events m carries, read from its metadata
// alone (1 for a single-event message; 0 for a batch message whose count is
// unreadable, which Decode rejects).
func EventCount(m *message.Message) int {
	s := m.Metadata.Get(MetaBatch)
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

var batchMagic = []byte("LKB1")

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// ErrBadMessage is returned for a message that is not a linkd event.
var ErrBadMessage = errors.New("kafka: not a linkd event message")

// Decode returns the events a message carries, in order.
func Decode(m *message.Message) ([]eventstore.RecordedEvent, error) {
	if m.Metadata.Get(MetaBatch) != "" {
		return decodeBatch(m.Payload)
	}
	return decodeSingle(m)
}

func decodeSingle(m *message.Message) ([]eventstore.RecordedEvent, error) {
	id, err := uuid.Parse(m.UUID)
	if err != nil {
		return nil, fmt.Errorf("%w: id %q", ErrBadMessage, m.UUID)
	}
	stream, typ := m.Metadata.Get(MetaStream), m.Metadata.Get(MetaType)
	if stream == "" || typ == "" {
		return nil, fmt.Errorf("%w: no stream or type", ErrBadMessage)
	}
	version, err := strconv.ParseUint(m.Metadata.Get(MetaVersion), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: version: %v", ErrBadMessage, err)
	}
	pos, err := eventstore.ParsePosition(m.Metadata.Get(MetaPosition))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	t, err := time.Parse(time.RFC3339Nano, m.Metadata.Get(MetaTime))
	if err != nil {
		return nil, fmt.Errorf("%w: time: %v", ErrBadMessage, err)
	}
	var meta []byte
	if s := m.Metadata.Get(MetaMetadata); s != "" {
		meta = []byte(s)
	}
	return []eventstore.RecordedEvent{{
		ID: id, Stream: stream, Version: version, Position: pos, Type: typ,
		Data: m.Payload, Metadata: meta, Time: t.UTC(),
	}}, nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = ErrBadMessage
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = ErrBadMessage
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.err = ErrBadMessage
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func decodeBatch(p []byte) ([]eventstore.RecordedEvent, error) {
	if len(p) < len(batchMagic) || string(p[:len(batchMagic)]) != string(batchMagic) {
		return nil, fmt.Errorf("%w: bad batch header", ErrBadMessage)
	}
	r := &reader{b: p[len(batchMagic):]}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(p)) {
		return nil, fmt.Errorf("%w: bad batch length", ErrBadMessage)
	}
	events := make([]eventstore.RecordedEvent, 0, n)
	for i := uint64(0); i < n; i++ {
		var e eventstore.RecordedEvent
		copy(e.ID[:], r.bytes(16))
		e.Stream = string(r.bytes(r.uvarint()))
		e.Version = r.uvarint()
		e.Position.Commit = r.uvarint()
		e.Position.Prepare = r.uvarint()
		e.Type = string(r.bytes(r.uvarint()))
		e.Time = time.Unix(0, r.varint()).UTC()
		e.Data = r.bytes(r.uvarint())
		if md := r.bytes(r.uvarint()); len(md) > 0 {
			e.Metadata = md
		}
		if r.err != nil {
			return nil, fmt.Errorf("%w: truncated batch", ErrBadMessage)
		}
		events = append(events, e)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: trailing bytes", ErrBadMessage)
	}
	return events, nil
}
