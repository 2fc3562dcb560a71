package versioncache

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"

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

// AddTo adds to batch what p writes: the gap under gapKey, and the stream
// versions (8 bytes big-endian) under streamKey(stream), in ascending
// order (Pebble inserts sorted keys into its memtable faster).
func (p Plan) AddTo(batch *pebble.Batch, gapKey []byte, streamKey func(dst []byte, stream string) []byte) error {
	if p.SetGap != nil {
		if err := batch.Set(gapKey, p.SetGap, nil); err != nil {
			return err
		}
	}
	if p.DeleteGap {
		if err := batch.Delete(gapKey, nil); err != nil {
			return err
		}
	}
	var key []byte
	var v [8]byte
	for _, stream := range slices.Sorted(maps.Keys(p.Versions)) {
		key = streamKey(key[:0], stream)
		binary.BigEndian.PutUint64(v[:], p.Versions[stream])
		if err := batch.Set(key, v[:], nil); err != nil {
			return err
		}
	}
	return nil
}
