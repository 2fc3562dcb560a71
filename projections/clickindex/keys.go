package clickindex

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/linkd/linkd/internal/storage/versioncache"
)

// Storage layout: one Pebble database, keys by a leading tag byte.
//
//	tagMeta   "checkpoint"                  -> commit, prepare (2 x uint64 BE)
//	tagMeta   "format"                      -> layout version (1 byte)
//	tagMeta   "versions-gap"                -> versioncache.Gap (33 bytes)
//	tagStream <stream>                      -> last applied version (uint64 BE)
//	tagV7     <16-byte UUIDv7>              -> record (record.go)
//	tagID     <tracking id>                 -> record
//	tagExpiry <expiry day><tracking id>     -> empty: expiry index of tagID
//
// A tracking id in the canonical text form of a UUIDv7 (lowercase hex,
// version 7, RFC 4122 variant: what linkd hands out) is stored under tagV7
// as its 16 bytes. A UUIDv7 starts with its creation time in milliseconds,
// big-endian, so these keys sort by time: expiring them is one DeleteRange
// over the front of the range (expire.go), with no second key per click.
// Every other tracking id, and a UUIDv7 whose time is far from its click's
// (Slack), is stored under tagID as its bytes, with a second key in
// tagExpiry that orders it by the UTC day it expires, so that expiry finds
// it without scanning the records.
//
// Both layouts map a tracking id to its key by the id alone, so a lookup is
// one point read (two for a UUIDv7 not under tagV7: a miss there, served by
// the bloom filters, then tagID).
//
// <expiry day> is the UTC day (days since 1970-01-01) as a big-endian
// uint32 offset by 2³¹, so that days sort in date order.
const (
	tagMeta   byte = 0x01
	tagStream byte = 0x02
	tagV7     byte = 0x10
	tagID     byte = 0x11
	tagExpiry byte = 0x12
	tagEnd    byte = 0x13 // above every key: the upper bound of Reset
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

// Slack is how far the time inside a UUIDv7 tracking id may be from its
// click's expiry minus TTL for the id to be stored under tagV7. Expiry
// deletes tagV7 ids whose UUID time is older than now - TTL - Slack, so it
// never deletes an id before it expires, and keeps one at most 2 x Slack
// after.
const Slack = time.Hour

var errCorrupt = errors.New("clickindex: corrupt record")

func streamKey(dst []byte, stream string) []byte {
	dst = append(dst, tagStream)
	return append(dst, stream...)
}

// v7Key is the tagV7 key of a UUID.
func v7Key(dst []byte, u *[16]byte) []byte {
	dst = append(dst, tagV7)
	return append(dst, u[:]...)
}

// idKey is the tagID key of a tracking id.
func idKey[S ~string | ~[]byte](dst []byte, id S) []byte {
	dst = append(dst, tagID)
	return append(dst, id...)
}

// expiryKey is the tagExpiry key of a tracking id expiring on day.
func expiryKey[S ~string | ~[]byte](dst []byte, day int64, id S) []byte {
	dst = expiryDayKey(dst, day)
	return append(dst, id...)
}

// expiryDayKey is the first tagExpiry key of a day.
func expiryDayKey(dst []byte, day int64) []byte {
	dst = append(dst, tagExpiry)
	return binary.BigEndian.AppendUint32(dst, uint32(clampDay(day)+1<<31))
}

// dayOf is the UTC day of t.
func dayOf(t time.Time) int64 {
	s := t.Unix()
	d := s / 86400
	if s%86400 < 0 {
		d--
	}
	return d
}

// clampDay keeps a day inside the key's range.
func clampDay(d int64) int64 {
	const lo, hi = -1 << 31, 1<<31 - 1
	return max(lo, min(hi, d))
}

// v7Prefix is the tagV7 key prefix of the UUIDs made before t (the first
// six bytes of a UUIDv7 are its Unix time in milliseconds); ok is false
// before 1970.
func v7Prefix(dst []byte, t time.Time) ([]byte, bool) {
	ms := t.UnixMilli()
	if ms <= 0 {
		return dst, false
	}
	ms = min(ms, 1<<48-1)
	dst = append(dst, tagV7)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(ms))
	return append(dst, b[2:]...), true
}

// parseUUIDv7 reads the canonical text form of a UUIDv7 (36 characters,
// lowercase hex, version 7, variant 10). Anything else, uppercase included,
// is not one: the text and the key then correspond one to one.
func parseUUIDv7[S ~string | ~[]byte](s S) (u [16]byte, ok bool) {
	if !parseUUID(s, &u) || u[6]>>4 != 7 || u[8]>>6 != 2 {
		return u, false
	}
	return u, true
}

// parseUUID reads a canonical lowercase UUID.
func parseUUID[S ~string | ~[]byte](s S, u *[16]byte) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	bad := byte(0)
	for j, i := range uuidHexAt {
		hi, lo := unhex[s[i]], unhex[s[i+1]]
		bad |= hi | lo
		u[j] = hi<<4 | lo&0x0f
	}
	return bad&0xf0 == 0
}

// uuidHexAt are the offsets of the 16 hex pairs in a UUID's text form.
var uuidHexAt = [16]uint8{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// unhex is the value of a lowercase hex digit, 0xff for any other byte (a
// table: a UUID's 32 digits took a comparison chain each, 0.46 µs of a
// click at 1,000 links).
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := range 10 {
		t['0'+i] = byte(i)
	}
	for i := range 6 {
		t['a'+i] = byte(10 + i)
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendUUID appends the canonical text form of u.
func appendUUID(dst []byte, u []byte) []byte {
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xf])
	}
	return dst
}

// uuidTime is the time inside a UUIDv7.
func uuidTime(u *[16]byte) time.Time {
	ms := int64(u[0])<<40 | int64(u[1])<<32 | int64(u[2])<<24 | int64(u[3])<<16 | int64(u[4])<<8 | int64(u[5])
	return time.UnixMilli(ms)
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
