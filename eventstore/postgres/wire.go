package postgres

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// linkd_append's parameters in PostgreSQL's binary format, laid out by
// the writer itself: pgx's generic encoding (reflection over the slices,
// buffers grown as it goes) took a third of the writer's CPU, on the
// writer's chain between two commits (ADR 0124).

// Element types of the arrays linkd_append takes (pg_type.oid).
const (
	oidBytea = 17
	oidInt8  = 20
	oidText  = 25
	oidUUID  = 2950
)

// pgEpoch is PostgreSQL's timestamp zero, in Unix microseconds.
const pgEpoch = 946684800 * 1_000_000

// appendSQL is the statement the writer prepares on each connection.
const (
	appendStmt = "linkd_append_v1"
	appendSQL  = `SELECT linkd_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
)

// binaryFormats is the format of each of appendSQL's parameters, and of
// its result: binary.
var binaryFormats = []int16{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}

// appendParams lays out linkd_append's parameters for g. The events' data
// and metadata are copied into them once, and g's datas and metas point
// at those copies after: they are what the store keeps of them (the
// caller may reuse its own once answered).
func (g *groupRows) appendParams(channel, instance string) [][]byte {
	var versions []byte // NULL: the database's to give
	if !g.byDB {
		versions = arrayInt8(g.versions)
	}
	relaxed := []byte{0}
	if g.relaxed {
		relaxed[0] = 1
	}
	return [][]byte{
		arrayText(g.streams),
		versions,
		arrayUUID(g.ids),
		arrayText(g.types),
		arrayBytes(oidBytea, g.datas, false),
		arrayBytes(oidBytea, g.metas, true),
		binary.BigEndian.AppendUint64(nil, uint64(g.now.UnixMicro()-pgEpoch)),
		arrayText(g.cats),
		[]byte(channel),
		[]byte(instance),
		relaxed,
	}
}

// arrayHeader starts a one-dimensional array of n elements of type oid:
// dimensions, whether it has NULLs, the element type, then the dimension's
// length and lower bound.
func arrayHeader(size, n int, oid uint32, nulls bool) []byte {
	b := make([]byte, 0, 20+4*n+size)
	b = binary.BigEndian.AppendUint32(b, 1)
	var hasNull uint32
	if nulls {
		hasNull = 1
	}
	b = binary.BigEndian.AppendUint32(b, hasNull)
	b = binary.BigEndian.AppendUint32(b, oid)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return binary.BigEndian.AppendUint32(b, 1)
}

func arrayText(vs []string) []byte {
	size := 0
	for _, v := range vs {
		size += len(v)
	}
	b := arrayHeader(size, len(vs), oidText, false)
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

// arrayBytes lays out vs as an array of oid; with nilIsNull a nil element
// is NULL, otherwise it is empty. The other elements of vs are replaced
// by their copies in the array (its capacity is exact: they never move).
func arrayBytes(oid uint32, vs [][]byte, nilIsNull bool) []byte {
	size, nulls := 0, false
	for _, v := range vs {
		size += len(v)
		nulls = nulls || (v == nil && nilIsNull)
	}
	b := arrayHeader(size, len(vs), oid, nulls)
	for i, v := range vs {
		if v == nil && nilIsNull {
			b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF) // -1: NULL
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		start := len(b)
		b = append(b, v...)
		vs[i] = b[start:len(b):len(b)]
	}
	return b
}

func arrayInt8(vs []int64) []byte {
	b := arrayHeader(8*len(vs), len(vs), oidInt8, false)
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func arrayUUID(vs [][16]byte) []byte {
	b := arrayHeader(16*len(vs), len(vs), oidUUID, false)
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, 16)
		b = append(b, v[:]...)
	}
	return b
}

// parseInt8Array reads a bigint[] in binary format without NULLs.
func parseInt8Array(b []byte) ([]int64, error) {
	bad := func(why string) ([]int64, error) {
		return nil, fmt.Errorf("postgres: linkd_append returned a malformed bigint[]: %s", why)
	}
	if len(b) < 12 {
		return bad("short header")
	}
	dims := binary.BigEndian.Uint32(b)
	if oid := binary.BigEndian.Uint32(b[8:]); oid != oidInt8 {
		return bad(fmt.Sprintf("element type %d", oid))
	}
	if dims == 0 {
		return nil, nil
	}
	if dims != 1 || len(b) < 20 {
		return bad(fmt.Sprintf("%d dimensions", dims))
	}
	n := int(binary.BigEndian.Uint32(b[12:]))
	b = b[20:]
	if len(b) != 12*n {
		return bad(fmt.Sprintf("%d bytes for %d elements", len(b), n))
	}
	out := make([]int64, n)
	for i := range out {
		if binary.BigEndian.Uint32(b) != 8 {
			return nil, errors.New("postgres: linkd_append returned a NULL or malformed element")
		}
		out[i] = int64(binary.BigEndian.Uint64(b[4:]))
		b = b[12:]
	}
	return out, nil
}
