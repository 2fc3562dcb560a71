package versioncache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/eventstore"
)

// LoadFrom is Load for a projector that keeps its gap in db under key:
// it reads it, and stores it again when Load changed it.
func (b *Behind) LoadFrom(db *pebble.DB, key []byte, checkpoint eventstore.Position, wopts *pebble.WriteOptions) error {
	var stored []byte
	v, closer, err := db.Get(key)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return err
	default:
		stored = slices.Clone(v)
		closer.Close()
	}
	changed, err := b.Load(stored, checkpoint)
	if err != nil || !changed {
		return err
	}
	if g := b.Gap(); g.Exists() {
		return db.Set(key, g.Encode(), wopts)
	}
	return db.Delete(key, wopts)
}

// Keys are where a projector keeps, in its Pebble database, the version of
// its storage layout (one byte, Layout), its checkpoint (16 bytes: commit
// and prepare, big-endian), its gap, and each stream's version (8 bytes,
// big-endian) under Stream(stream).
type Keys struct {
	Format          []byte
	Layout          byte
	Checkpoint, Gap []byte
	Stream          func(dst []byte, stream string) []byte
}

// ErrCorrupt: a stored checkpoint that is not 16 bytes.
var ErrCorrupt = errors.New("corrupt checkpoint")

// Open reads what a projector keeps of itself in db when it opens: it
// checks the storage layout (writing it into a new database), and returns
// the checkpoint (eventstore.Start when there is none) with the gap loaded
// into b (LoadFrom).
func (b *Behind) Open(db *pebble.DB, keys Keys, wopts *pebble.WriteOptions) (eventstore.Position, error) {
	v, closer, err := db.Get(keys.Format)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		if err := db.Set(keys.Format, []byte{keys.Layout}, wopts); err != nil {
			return eventstore.Start, err
		}
	case err != nil:
		return eventstore.Start, err
	default:
		ok := len(v) == 1 && v[0] == keys.Layout
		stored := slices.Clone(v)
		closer.Close()
		if !ok {
			return eventstore.Start, fmt.Errorf("unknown storage layout %v: replay into an empty directory", stored)
		}
	}
	checkpoint := eventstore.Start
	v, closer, err = db.Get(keys.Checkpoint)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return eventstore.Start, err
	default:
		n := len(v)
		if n == 16 {
			checkpoint = eventstore.Position{Commit: binary.BigEndian.Uint64(v), Prepare: binary.BigEndian.Uint64(v[8:])}
		}
		closer.Close()
		if n != 16 {
			return eventstore.Start, fmt.Errorf("checkpoint of %d bytes: %w", n, ErrCorrupt)
		}
	}
	return checkpoint, b.LoadFrom(db, keys.Gap, checkpoint, wopts)
}

// Add adds to batch the checkpoint top and what p writes: the gap, and the
// stream versions in ascending order (Pebble inserts sorted keys into its
// memtable faster).
func (p Plan) Add(batch *pebble.Batch, keys Keys, top eventstore.Position) error {
	var v [16]byte
	binary.BigEndian.PutUint64(v[:8], top.Commit)
	binary.BigEndian.PutUint64(v[8:], top.Prepare)
	if err := batch.Set(keys.Checkpoint, v[:], nil); err != nil {
		return err
	}
	if p.SetGap != nil {
		if err := batch.Set(keys.Gap, p.SetGap, nil); err != nil {
			return err
		}
	}
	if p.DeleteGap {
		if err := batch.Delete(keys.Gap, nil); err != nil {
			return err
		}
	}
	var key []byte
	for _, stream := range slices.Sorted(maps.Keys(p.Versions)) {
		key = keys.Stream(key[:0], stream)
		binary.BigEndian.PutUint64(v[:8], p.Versions[stream])
		if err := batch.Set(key, v[:8], nil); err != nil {
			return err
		}
	}
	return nil
}

// WriteWaiting commits the versions waiting, with the checkpoint, and
// deletes the gap when that ends it (a projector's Close).
func (b *Behind) WriteWaiting(db *pebble.DB, wopts *pebble.WriteOptions, keys Keys, checkpoint eventstore.Position) error {
	if b.Waiting() == 0 && !b.gap.Exists() {
		return nil
	}
	now := time.Now()
	p := b.Plan(nil, checkpoint, checkpoint, now, true)
	if len(p.Versions) == 0 && !p.DeleteGap {
		return nil
	}
	batch := db.NewBatch()
	defer batch.Close()
	if err := p.Add(batch, keys, checkpoint); err != nil {
		return err
	}
	if err := batch.Commit(wopts); err != nil {
		return err
	}
	b.Done(p, now)
	return nil
}
