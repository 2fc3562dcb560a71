package analytics

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// merger adds up record deltas in Pebble's reads, flushes and compactions.
// Records form a commutative monoid, so the direction of a merge does not
// matter. Its name is stored by Pebble and must change when the encoding
// stops being compatible.
var merger = &pebble.Merger{
	Name: "linkd.analytics.record.v1",
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		if len(key) > 0 && (key[0] == tagConvLink || key[0] == tagConvWS) {
			return &convMerger{acc: append([]byte(nil), value...)}, nil
		}
		m := &recordMerger{}
		m.acc = append(m.acc, value...)
		return m, nil
	},
}

// convMerger adds up conversion records (small: decoded and re-encoded).
type convMerger struct{ acc []byte }

func (m *convMerger) add(value []byte) error {
	out, err := mergeConv(nil, m.acc, value)
	if err != nil {
		return err
	}
	m.acc = out
	return nil
}

func (m *convMerger) MergeNewer(value []byte) error          { return m.add(value) }
func (m *convMerger) MergeOlder(value []byte) error          { return m.add(value) }
func (m *convMerger) Finish(bool) ([]byte, io.Closer, error) { return m.acc, nil, nil }

// recordMerger folds operands into acc with mergeEncoded, working on the
// encoded bytes: no record is decoded, no string allocated.
type recordMerger struct {
	acc, spare, scratch []byte
}

func (m *recordMerger) add(value []byte) error {
	out, scratch, err := mergeEncoded(m.spare[:0], m.scratch[:0], m.acc, value)
	if err != nil {
		return err
	}
	m.acc, m.spare, m.scratch = out, m.acc, scratch
	return nil
}

func (m *recordMerger) MergeNewer(value []byte) error { return m.add(value) }
func (m *recordMerger) MergeOlder(value []byte) error { return m.add(value) }
func (m *recordMerger) Finish(bool) ([]byte, io.Closer, error) {
	return m.acc, nil, nil
}

// mergeEncoded appends to dst the encoding of the sum of the encoded records
// a and b: the bytes encode(decode(a).merge(decode(b))) would give, without
// decoding (TestMergeEncoded checks it). scratch is working space, returned
// for reuse.
func mergeEncoded(dst, scratch, a, b []byte) ([]byte, []byte, error) {
	if len(a) == 0 || len(b) == 0 || a[0] != recordFormat || b[0] != recordFormat {
		return nil, scratch, errCorrupt
	}
	da, db := decoder{b: a[1:]}, decoder{b: b[1:]}
	dst = append(dst, recordFormat)

	wa, wb := da.bytes(), db.bytes()
	fa, fb := da.varint(), db.varint()
	la, lb := da.varint(), db.varint()
	// The workspace of the last click, as record.merge keeps it
	// (lastClickOf, on the bytes).
	if sa, sb := floorSecond(la), floorSecond(lb); fb != 0 && (fa == 0 || sb > sa || sb == sa && bytes.Compare(wb, wa) > 0) {
		wa = wb
	}
	dst = binary.AppendUvarint(dst, uint64(len(wa)))
	dst = append(dst, wa...)

	if fa == 0 || (fb != 0 && fb < fa) {
		fa = fb
	}
	dst = binary.AppendVarint(dst, fa)
	dst = binary.AppendVarint(dst, max(la, lb))
	for range 5 {
		dst = binary.AppendUvarint(dst, da.uvarint()+db.uvarint())
	}

	na, nb := da.uvarint(), db.uvarint()
	if da.err != nil || db.err != nil {
		return nil, scratch, errCorrupt
	}
	dst = binary.AppendUvarint(dst, max(na, nb))
	for i := uint64(0); i < max(na, nb); i++ {
		var ca, cb uint64
		if i < na {
			ca = da.uvarint()
		}
		if i < nb {
			cb = db.uvarint()
		}
		// Merge two sorted lists of (key, count) into scratch.
		scratch = scratch[:0]
		var n uint64
		var ka, kb []byte
		var va, vb uint64
		next := func(d *decoder, c *uint64) ([]byte, uint64, bool) {
			if *c == 0 || d.err != nil {
				return nil, 0, false
			}
			*c--
			k := d.bytes()
			return k, d.uvarint(), d.err == nil
		}
		ka, va, okA := next(&da, &ca)
		kb, vb, okB := next(&db, &cb)
		for okA || okB {
			var k []byte
			var v uint64
			switch c := compareOK(ka, kb, okA, okB); {
			case c < 0:
				k, v = ka, va
				ka, va, okA = next(&da, &ca)
			case c > 0:
				k, v = kb, vb
				kb, vb, okB = next(&db, &cb)
			default:
				k, v = ka, va+vb
				ka, va, okA = next(&da, &ca)
				kb, vb, okB = next(&db, &cb)
			}
			scratch = binary.AppendUvarint(scratch, uint64(len(k)))
			scratch = append(scratch, k...)
			scratch = binary.AppendUvarint(scratch, v)
			n++
		}
		if da.err != nil || db.err != nil || ca != 0 || cb != 0 {
			return nil, scratch, errCorrupt
		}
		dst = binary.AppendUvarint(dst, n)
		dst = append(dst, scratch...)
	}
	dst, err := mergeUniquesEncoded(dst, da.b, db.b)
	return dst, scratch, err
}

// compareOK orders two list heads, an exhausted list coming last.
func compareOK(a, b []byte, okA, okB bool) int {
	switch {
	case !okA:
		return 1
	case !okB:
		return -1
	}
	return bytes.Compare(a, b)
}

// bytes reads a length-prefixed byte string, aliasing the input.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

// mergeUniquesEncoded appends the union of two encoded visitor states, as
// uniques.merge then appendTo would.
func mergeUniquesEncoded(dst, a, b []byte) ([]byte, error) {
	if len(a) == 0 || len(b) == 0 {
		return nil, errCorrupt
	}
	if a[0] == uniqHLL || b[0] == uniqHLL {
		// At least one sketch: the result is a sketch. Copy one sketch and
		// add the other operand into the copy.
		if a[0] != uniqHLL {
			a, b = b, a
		}
		if len(a) < 2+hllM || a[1] != hllP {
			return nil, errCorrupt
		}
		start := len(dst)
		dst = append(dst, a[:2+hllM]...)
		regs := dst[start+2:]
		switch b[0] {
		case uniqHLL:
			if len(b) < 2+hllM || b[1] != hllP {
				return nil, errCorrupt
			}
			for i, r := range b[2 : 2+hllM] {
				if r > regs[i] {
					regs[i] = r
				}
			}
		case uniqSet:
			hs, err := setBytes(b)
			if err != nil {
				return nil, err
			}
			for k := 0; k < len(hs); k += 8 {
				hllAdd(regs, binary.BigEndian.Uint64(hs[k:]))
			}
		default:
			return nil, errCorrupt
		}
		return dst, nil
	}
	sa, err := setBytes(a)
	if err != nil {
		return nil, err
	}
	sb, err := setBytes(b)
	if err != nil {
		return nil, err
	}
	// Count the union first: past setMax it becomes a sketch.
	n := 0
	i, j := 0, 0
	for i < len(sa) && j < len(sb) {
		x, y := binary.BigEndian.Uint64(sa[i:]), binary.BigEndian.Uint64(sb[j:])
		switch {
		case x < y:
			i += 8
		case x > y:
			j += 8
		default:
			i += 8
			j += 8
		}
		n++
	}
	n += (len(sa)-i)/8 + (len(sb)-j)/8
	if n > setMax {
		regs := make([]byte, hllM)
		for _, s := range [][]byte{sa, sb} {
			for k := 0; k < len(s); k += 8 {
				hllAdd(regs, binary.BigEndian.Uint64(s[k:]))
			}
		}
		u := uniques{hll: regs}
		return u.appendTo(dst), nil
	}
	dst = append(dst, uniqSet)
	dst = binary.AppendUvarint(dst, uint64(n))
	i, j = 0, 0
	for i < len(sa) && j < len(sb) {
		x, y := binary.BigEndian.Uint64(sa[i:]), binary.BigEndian.Uint64(sb[j:])
		switch {
		case x < y:
			dst = append(dst, sa[i:i+8]...)
			i += 8
		case x > y:
			dst = append(dst, sb[j:j+8]...)
			j += 8
		default:
			dst = append(dst, sa[i:i+8]...)
			i += 8
			j += 8
		}
	}
	dst = append(dst, sa[i:]...)
	return append(dst, sb[j:]...), nil
}

// setBytes returns the 8-byte hashes of an encoded set.
func setBytes(b []byte) ([]byte, error) {
	if len(b) == 0 || b[0] != uniqSet {
		return nil, errCorrupt
	}
	cnt, k := binary.Uvarint(b[1:])
	if k <= 0 || cnt > uint64(len(b)) || uint64(len(b)-1-k) < cnt*8 {
		return nil, errCorrupt
	}
	return b[1+k : 1+k+int(cnt)*8], nil
}
