package embedded

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/google/uuid"

	"github.com/linkd/linkd/eventstore"
)

// A record is one event in the log:
//
//	[u32 length][u32 crc32c][payload]
//
// length is the payload's length; the CRC (Castagnoli) covers the four length
// bytes and the payload. The payload is
//
//	u8  flags          flagLast on the last event of an append
//	u64 version        stream version, little endian
//	i64 time           Unix nanoseconds, little endian
//	[16] id
//	uvarint len, stream
//	uvarint len, type
//	uvarint len, data
//	uvarint len, metadata
//
// An append's events are consecutive records; only the last carries flagLast,
// so recovery can drop an append whose tail was torn off.
const (
	recHeaderSize = 8
	offFlags      = recHeaderSize
	offVersion    = offFlags + 1
	offTime       = offVersion + 8
	offID         = offTime + 8
	fixedPayload  = 1 + 8 + 8 + 16
	minPayload    = fixedPayload + 4 // four empty length-prefixed fields

	flagLast = 1

	// MaxEventSize bounds the stream name, type, data and metadata of one
	// event together. EventStoreDB's default is the same 16 MiB.
	MaxEventSize = 16 << 20
	// MaxAppendSize bounds the encoded size of one Append (about the size
	// of its events plus 50 bytes and the stream name per event): an append
	// is held in memory and written at once.
	MaxAppendSize = 64 << 20
	maxPayload    = fixedPayload + 4*binary.MaxVarintLen64 + MaxEventSize
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	// errShort: the buffer ends before the record does.
	errShort = errors.New("short record")
	// errCorrupt: bad length, bad CRC or malformed payload.
	errCorrupt = errors.New("corrupt record")
)

func uvarintLen(x int) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

func fieldLen(n int) int { return uvarintLen(n) + n }

// eventSize is what MaxEventSize limits.
func eventSize(stream string, e *eventstore.EventData) int {
	return len(stream) + len(e.Type) + len(e.Data) + len(e.Metadata)
}

// recordSize is the encoded size of one event, header included.
func recordSize(stream string, e *eventstore.EventData) int {
	return recHeaderSize + fixedPayload + fieldLen(len(stream)) + fieldLen(len(e.Type)) +
		fieldLen(len(e.Data)) + fieldLen(len(e.Metadata))
}

// appendRecord appends the record of e to dst with version and time zero and
// no CRC: sealRecord fills them in once the writer knows them.
func appendRecord(dst []byte, stream string, e *eventstore.EventData, id uuid.UUID, last bool) []byte {
	payload := recordSize(stream, e) - recHeaderSize
	dst = binary.LittleEndian.AppendUint32(dst, uint32(payload))
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	var flags byte
	if last {
		flags = flagLast
	}
	dst = append(dst, flags)
	dst = binary.LittleEndian.AppendUint64(dst, 0)
	dst = binary.LittleEndian.AppendUint64(dst, 0)
	dst = append(dst, id[:]...)
	dst = appendField(dst, stream)
	dst = appendField(dst, e.Type)
	dst = appendField(dst, e.Data)
	dst = appendField(dst, e.Metadata)
	return dst
}

func appendField[T string | []byte](dst []byte, v T) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

// recordLen returns the full length of the record at the start of b, which
// must be a record built by appendRecord.
func recordLen(b []byte) int {
	return recHeaderSize + int(binary.LittleEndian.Uint32(b))
}

// sealRecord sets the version and time of the record rec and computes its CRC.
func sealRecord(rec []byte, version uint64, nanos int64) {
	binary.LittleEndian.PutUint64(rec[offVersion:], version)
	binary.LittleEndian.PutUint64(rec[offTime:], uint64(nanos))
	binary.LittleEndian.PutUint32(rec[4:], recordCRC(rec))
}

func recordCRC(rec []byte) uint32 {
	crc := crc32.Update(0, castagnoli, rec[:4])
	return crc32.Update(crc, castagnoli, rec[recHeaderSize:])
}

// rawRecord is a decoded record whose byte fields alias the buffer it was
// parsed from.
type rawRecord struct {
	flags   byte
	version uint64
	nanos   int64
	id      uuid.UUID
	stream  []byte
	typ     []byte
	data    []byte
	meta    []byte
}

func (r *rawRecord) last() bool { return r.flags&flagLast != 0 }

// parseRecord decodes the record at the start of b and returns its full
// length. When b holds only part of the record it returns errShort and the
// number of bytes the record needs (0 when even its header is missing).
func parseRecord(b []byte) (rawRecord, int, error) {
	var r rawRecord
	if len(b) < recHeaderSize {
		return r, 0, errShort
	}
	plen := int(binary.LittleEndian.Uint32(b))
	if plen < minPayload || plen > maxPayload {
		return r, 0, errCorrupt
	}
	n := recHeaderSize + plen
	if len(b) < n {
		return r, n, errShort
	}
	rec := b[:n]
	if binary.LittleEndian.Uint32(rec[4:]) != recordCRC(rec) {
		return r, 0, errCorrupt
	}
	r.flags = rec[offFlags]
	r.version = binary.LittleEndian.Uint64(rec[offVersion:])
	r.nanos = int64(binary.LittleEndian.Uint64(rec[offTime:]))
	copy(r.id[:], rec[offID:offID+16])
	p := rec[offID+16:]
	var ok bool
	if r.stream, p, ok = readField(p); !ok {
		return r, 0, errCorrupt
	}
	if r.typ, p, ok = readField(p); !ok {
		return r, 0, errCorrupt
	}
	if r.data, p, ok = readField(p); !ok {
		return r, 0, errCorrupt
	}
	if r.meta, p, ok = readField(p); !ok || len(p) != 0 {
		return r, 0, errCorrupt
	}
	return r, n, nil
}

func readField(p []byte) (field, rest []byte, ok bool) {
	l, k := binary.Uvarint(p)
	if k <= 0 || l > uint64(len(p)-k) {
		return nil, nil, false
	}
	end := k + int(l)
	return p[k:end:end], p[end:], true
}
