package embedded

import (
	"encoding/hex"
	"errors"
)

// Version keys name their stream in full (they must be exact), but in a
// packed form: linkd's stream names are mostly ids in hex, a customer's
// `customer-<workspace id>-<sha256 of its external id>` is 110 bytes, and a
// version key is written at every append. Packed:
//
//	a canonical UUID (8-4-4-4-12 lowercase hex)   0x01 and its 16 bytes
//	a run of 64 lowercase hex digits (a sha256)   0x02 and its 32 bytes
//	a byte 0x00-0x03 of the name                  0x03 and the byte
//	any other byte                                itself
//
// so that customer's name packs into 61 bytes and a link's click stream
// (`clicks-<link id>`) into 24 instead of 43. Unpacking gives the name
// back exactly: two names never pack alike.
const (
	packUUID   = 0x01
	packSHA256 = 0x02
	packEscape = 0x03
)

var errBadPackedName = errors.New("embedded: corrupt stream name in the index")

// packName appends the packed form of name.
func packName(dst []byte, name string) []byte {
	for i := 0; i < len(name); {
		if isUUIDAt(name, i) {
			dst = append(dst, packUUID)
			for _, r := range [][2]int{{0, 8}, {9, 13}, {14, 18}, {19, 23}, {24, 36}} {
				dst = appendHex(dst, name[i+r[0]:i+r[1]])
			}
			i += 36
			continue
		}
		if isHexRunAt(name, i, 64) {
			dst = append(dst, packSHA256)
			dst = appendHex(dst, name[i:i+64])
			i += 64
			continue
		}
		if c := name[i]; c <= packEscape {
			dst = append(dst, packEscape, c)
		} else {
			dst = append(dst, c)
		}
		i++
	}
	return dst
}

// unpackName appends the name packed in p.
func unpackName(dst, p []byte) ([]byte, error) {
	for i := 0; i < len(p); {
		switch c := p[i]; c {
		case packUUID:
			if i+17 > len(p) {
				return nil, errBadPackedName
			}
			u := p[i+1 : i+17]
			dst = hex.AppendEncode(dst, u[0:4])
			dst = append(dst, '-')
			dst = hex.AppendEncode(dst, u[4:6])
			dst = append(dst, '-')
			dst = hex.AppendEncode(dst, u[6:8])
			dst = append(dst, '-')
			dst = hex.AppendEncode(dst, u[8:10])
			dst = append(dst, '-')
			dst = hex.AppendEncode(dst, u[10:16])
			i += 17
		case packSHA256:
			if i+33 > len(p) {
				return nil, errBadPackedName
			}
			dst = hex.AppendEncode(dst, p[i+1:i+33])
			i += 33
		case packEscape:
			if i+2 > len(p) || p[i+1] > packEscape {
				return nil, errBadPackedName
			}
			dst = append(dst, p[i+1])
			i += 2
		default:
			if c < packEscape {
				return nil, errBadPackedName // 0x00
			}
			dst = append(dst, c)
			i++
		}
	}
	return dst, nil
}

// appendHex appends the bytes of h, lowercase hex digits (checked).
func appendHex(dst []byte, h string) []byte {
	for i := 0; i+1 < len(h); i += 2 {
		dst = append(dst, hexVal(h[i])<<4|hexVal(h[i+1]))
	}
	return dst
}

func hexVal(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// isHexRunAt reports whether s holds n lowercase hex digits at i.
func isHexRunAt(s string, i, n int) bool {
	if i+n > len(s) {
		return false
	}
	for k := i; k < i+n; k++ {
		if !isLowerHex(s[k]) {
			return false
		}
	}
	return true
}

// isUUIDAt reports whether s holds a canonical lowercase UUID at i.
func isUUIDAt(s string, i int) bool {
	if i+36 > len(s) {
		return false
	}
	for k := range 36 {
		c := s[i+k]
		if k == 8 || k == 13 || k == 18 || k == 23 {
			if c != '-' {
				return false
			}
		} else if !isLowerHex(c) {
			return false
		}
	}
	return true
}
