package analytics

import (
	"encoding/binary"
	"errors"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/internal/storage/versioncache"
)

// Storage layout: one Pebble database, keys by a leading tag byte.
//
//	tagMeta   "checkpoint"                    -> commit, prepare (2 x uint64 BE)
//	tagMeta   "format"                        -> layout version (1 byte)
//	tagMeta   "versions-gap"                  -> versioncache.Gap (33 bytes)
//	tagStream <stream>                        -> last applied version (uint64 BE)
//	tagLink   <uvarint len><link id><day>     -> record (merge operands)
//	tagWS     <uvarint len><workspace id><day> -> record (merge operands)
//	tagConvLink, tagConvWS: the same keys     -> conversion record (conversions.go)
//
// <day> is the UTC day (days since 1970-01-01) as a big-endian uint32 offset
// by 2³¹, so that a scope's days sort in date order and a date range is one
// key range. The length prefix keeps one id from being a prefix of another's
// range. Records are written only with Merge (per-batch deltas, added up by
// the merger in reads and compactions); stream versions and the checkpoint
// with Set, in the same batch.
const (
	tagMeta   byte = 0x01
	tagStream byte = 0x02
	tagLink   byte = 0x03
	tagWS     byte = 0x04
	// Conversions (conversions.go).
	tagConvLink byte = 0x05
	tagConvWS   byte = 0x06
	tagEnd      byte = 0x07 // above every key: the upper bound of Reset
)

var (
	keyCheckpoint = []byte{tagMeta, 'c', 'h', 'e', 'c', 'k', 'p', 'o', 'i', 'n', 't'}
	keyFormat     = []byte{tagMeta, 'f', 'o', 'r', 'm', 'a', 't'}
	// keyGap: stream versions written behind (versioncache.Behind).
	keyGap = []byte{tagMeta, 'v', 'e', 'r', 's', 'i', 'o', 'n', 's', '-', 'g', 'a', 'p'}
)

// versionKeys are the keys of the checkpoint, the gap and the stream
// versions (versioncache.Behind).
var versionKeys = versioncache.Keys{Format: keyFormat, Layout: layoutVersion, Checkpoint: keyCheckpoint, Gap: keyGap, Stream: streamKey}

const layoutVersion = 1

func streamKey(dst []byte, stream string) []byte {
	dst = append(dst, tagStream)
	return append(dst, stream...)
}

// scopePrefix is the prefix of every day of one link or workspace.
func scopePrefix(dst []byte, tag byte, id string) []byte {
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(id)))
	return append(dst, id...)
}

func dayKey(dst []byte, tag byte, id string, day int64) []byte {
	dst = scopePrefix(dst, tag, id)
	return binary.BigEndian.AppendUint32(dst, uint32(day+1<<31))
}

func dayOfKey(k []byte) int64 {
	return int64(binary.BigEndian.Uint32(k[len(k)-4:])) - 1<<31
}

func getUint64(db *pebble.DB, key []byte) (uint64, bool, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, errCorrupt
	}
	return binary.BigEndian.Uint64(v), true, nil
}
