package esdb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/linkd/linkd/eventstore"
)

var (
	_ eventstore.Leaser        = (*Store)(nil)
	_ eventstore.Checkpoints   = (*Store)(nil)
	_ eventstore.CategoryHeads = (*Store)(nil)
)

// checkpointEvery is the least time between two writes of the relay's
// checkpoint: it moves every 100 ms under load, and one metadata event a
// second is plenty for a resume point.
const checkpointWrites = time.Second

// flushTimeout bounds the checkpoint writes of Close.
const flushTimeout = 5 * time.Second

// headPage is how many events of the end of $all CategoryHead reads.
const headPage = 32

// newShared keeps the store's leases and checkpoints in stream metadata.
func newShared(s *Store, opts Options) *eventstore.Shared {
	o := eventstore.SharedOptions{CheckpointEvery: checkpointWrites}
	if opts.Logger != nil {
		o.Logger = opts.Logger.With("component", "esdb")
	}
	return eventstore.NewShared(metadataRecords{s}, o)
}

// AcquireLease implements eventstore.Leaser (eventstore.Shared, ADR 0109):
// a holder that dies is replaced within 8 s.
func (s *Store) AcquireLease(ctx context.Context, name string) (context.Context, func(), error) {
	return s.shared.AcquireLease(ctx, name)
}

// LoadCheckpoint implements eventstore.Checkpoints.
func (s *Store) LoadCheckpoint(ctx context.Context, name string) (eventstore.Position, error) {
	return s.shared.LoadCheckpoint(ctx, name)
}

// SaveCheckpoint implements eventstore.Checkpoints: one write a second at
// most, the last save of a burst written when the second is up.
func (s *Store) SaveCheckpoint(ctx context.Context, name string, p eventstore.Position) error {
	return s.shared.SaveCheckpoint(ctx, name, p)
}

// metadataRecords keeps eventstore.Shared's records in the metadata of
// their streams: the record of stream "linkd_lease-relay" is the last
// event of "$$linkd_lease-relay", its fields custom properties written by
// SetStreamMetadata with the expected revision of that metadata stream.
// Metadata streams are system streams: the relay publishes none of them
// and no projection sees them, where records written as events would go
// around the relay (each checkpoint an event it publishes, which raises
// the checkpoint again). EventStoreDB keeps the last event of a metadata
// stream alone (its max count is 1), so they do not grow either.
type metadataRecords struct{ s *Store }

// recordType is the custom property that holds the record's type.
const recordType = "linkd_record"

func (r metadataRecords) LastRecord(ctx context.Context, stream string) (eventstore.Record, bool, error) {
	last, ok, err := r.s.last(ctx, "$$"+stream)
	if err != nil || !ok {
		return eventstore.Record{}, false, err
	}
	meta, err := esdb.StreamMetadataFromJson(last.Data)
	if err != nil {
		return eventstore.Record{}, false, fmt.Errorf("esdb: metadata of %q: %w", stream, err)
	}
	props := meta.CustomProperties()
	typ, _ := props[recordType].(string)
	fields := make(map[string]any, len(props))
	for k, v := range props {
		if k != recordType {
			fields[k] = v
		}
	}
	data, err := json.Marshal(fields)
	if err != nil {
		return eventstore.Record{}, false, fmt.Errorf("esdb: metadata of %q: %w", stream, err)
	}
	return eventstore.Record{Type: typ, Data: data, Version: last.Version}, true, nil
}

// PutRecord writes the record's fields as custom properties. Numbers come
// back as float64: records keep large ones (positions) in strings.
func (r metadataRecords) PutRecord(ctx context.Context, stream string, expected eventstore.ExpectedVersion, rec eventstore.Record) (uint64, error) {
	var fields map[string]any
	if err := json.Unmarshal(rec.Data, &fields); err != nil {
		return 0, fmt.Errorf("esdb: record for %q is no JSON object: %w", stream, err)
	}
	var meta esdb.StreamMetadata
	for k, v := range fields {
		meta.AddCustomProperty(k, v)
	}
	meta.AddCustomProperty(recordType, rec.Type)
	db, err := r.s.client()
	if err != nil {
		return 0, err
	}
	res, err := db.SetStreamMetadata(ctx, stream, esdb.AppendToStreamOptions{ExpectedRevision: expectedRevision(expected)}, meta)
	if err != nil {
		return 0, r.s.fail(ctx, db, fmt.Sprintf("set metadata of %q (expected %s)", stream, expected), err)
	}
	return res.NextExpectedVersion, nil
}

// CategoryHead implements eventstore.CategoryHeads with one backward read
// of the last headPage events of $all: the position of the last event of
// the categories among them, else the position of the oldest application
// event among them, which no event of the categories follows; Start when
// the log holds none. The answer is at or after the categories' last
// event and at or before the log's last, which is what eventstore.Follower
// needs: a watermark that reaches it has applied every change of the
// categories. It is exact when one of them changed lately, and otherwise
// a position a projection that keeps up has already passed, so that a
// redirect rarely waits for clicks.
//
// Why not something exact: the v4 client's ReadAll takes no filter (the
// server could filter a read of $all on stream prefixes, but it would
// still scan the log back to the categories' last event, far behind
// clicks); $ce-<category> streams need the server's system projections,
// which the deployment runs without, and they trail the log, so a head
// read there could miss a change already answered.
func (s *Store) CategoryHead(ctx context.Context, categories []string) (eventstore.Position, error) {
	cats := make([]string, len(categories))
	for i, c := range categories {
		cats[i] = eventstore.Category(c) // "link-" is "link"
	}
	var from esdb.AllPosition = esdb.End{}
	for {
		var head, oldest, last *eventstore.Position
		read := 0
		err := s.read(ctx, "read $all backwards", func(db *esdb.Client) (*esdb.ReadStream, error) {
			return db.ReadAll(ctx, esdb.ReadAllOptions{Direction: esdb.Backwards, From: from}, headPage)
		}, func(e eventstore.RecordedEvent) bool {
			read++
			last = &e.Position
			if isSystemStream(e.Stream) {
				return true
			}
			if slices.Contains(cats, eventstore.Category(e.Stream)) {
				head = &e.Position
				return false
			}
			oldest = &e.Position
			return true
		})
		switch {
		case err != nil:
			return eventstore.Start, err
		case head != nil:
			return *head, nil
		case read < headPage:
			return eventstore.Start, nil // the start of the log: none of the categories
		case oldest != nil:
			return *oldest, nil
		}
		// A page of system events alone: on to the next.
		from = esdb.Position{Commit: last.Commit, Prepare: last.Prepare}
	}
}
