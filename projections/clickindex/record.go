package clickindex

import (
	"encoding/binary"
	"time"
)

// Click is what the index keeps of a tracked click: what conversions are
// attributed to and segmented by.
type Click struct {
	// TrackingID is the svc_tid handed to the visitor: the key.
	TrackingID string
	// ClickID is the click's id (the same as TrackingID for every click
	// linkd records today).
	ClickID     string
	LinkID      string
	WorkspaceID string
	ProjectID   string // "" when the link has no project
	DomainID    string // "" on the default domain
	// Timestamp is the time of the click (UTC).
	Timestamp time.Time
	// ExpiresAt is when the tracking id stops being valid: the click's
	// tracking_expires_at, else Timestamp + click.TrackingTTL (UTC).
	ExpiresAt  time.Time
	Country    string // ISO 3166-1 alpha-2, "" when unknown
	DeviceType string // mobile, desktop, tablet, "" when unknown
	Browser    string
	OS         string
	Referrer   string // host, "" for none
	QR         bool
	// Version is the click's version in its link's click stream
	// (click.Stream), where the whole click is; HasVersion is false for
	// records written before the index kept it.
	Version    uint64
	HasVersion bool
}

// Record value, version 1:
//
//	format   byte (1)
//	flags    byte: flagQR, flagClickID, flagExpires
//	time     varint Unix seconds, uvarint nanoseconds
//	[expiry] varint Unix seconds, uvarint nanoseconds        (flagExpires)
//	[click id]                                                (flagClickID)
//	link id, workspace id, project id, domain id, country, device type,
//	browser, os, referrer
//	[version] uvarint: the click's version in its stream       (flagVersion)
//
// Each string is uvarint(n<<1 | 1) then the 16 bytes of a canonical
// lowercase UUID when n is 16 (most ids), or uvarint(len<<1) then its bytes.
// The expiry is written only when it is not time + TTL, the click id only
// when it differs from the tracking id (the key). A typical record takes
// about 120 bytes before Pebble's block compression.
const (
	recordFormat byte = 1

	flagQR      byte = 1 << 0
	flagClickID byte = 1 << 1
	flagExpires byte = 1 << 2
	// flagVersion: the record ends with the click's stream version
	// (records written before it have none; they decode as before).
	flagVersion byte = 1 << 3
)

// appendRecord encodes f (decoded, with ts and exp resolved) after dst.
func appendRecord(dst []byte, f *fields, ts, exp time.Time) []byte {
	var flags byte
	if f.QR {
		flags |= flagQR
	}
	clickID := string(f.ClickID) != string(f.TrackingID) // no allocation
	if clickID {
		flags |= flagClickID
	}
	custom := !exp.Equal(ts.Add(ttl))
	if custom {
		flags |= flagExpires
	}
	flags |= flagVersion
	dst = append(dst, recordFormat, flags)
	dst = appendTime(dst, ts)
	if custom {
		dst = appendTime(dst, exp)
	}
	if clickID {
		dst = appendStr(dst, f.ClickID)
	}
	for _, s := range [...][]byte{f.LinkID, f.WorkspaceID, f.ProjectID, f.DomainID,
		f.Country, f.DeviceType, f.Browser, f.OS, f.Referrer} {
		dst = appendStr(dst, s)
	}
	return binary.AppendUvarint(dst, f.Version)
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = binary.AppendVarint(dst, t.Unix())
	return binary.AppendUvarint(dst, uint64(t.Nanosecond()))
}

func appendStr(dst []byte, s []byte) []byte {
	var u [16]byte
	if parseUUID(s, &u) {
		dst = binary.AppendUvarint(dst, 16<<1|1)
		return append(dst, u[:]...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(s))<<1)
	return append(dst, s...)
}

// decodeRecord decodes a record of trackingID.
func decodeRecord(v []byte, trackingID string) (Click, error) {
	if len(v) < 2 || v[0] != recordFormat {
		return Click{}, errCorrupt
	}
	c := Click{TrackingID: trackingID, ClickID: trackingID}
	flags, d := v[1], recDecoder{b: v[2:]}
	c.QR = flags&flagQR != 0
	c.Timestamp = d.time()
	c.ExpiresAt = c.Timestamp.Add(ttl)
	if flags&flagExpires != 0 {
		c.ExpiresAt = d.time()
	}
	if flags&flagClickID != 0 {
		c.ClickID = d.str()
	}
	for _, p := range [...]*string{&c.LinkID, &c.WorkspaceID, &c.ProjectID, &c.DomainID,
		&c.Country, &c.DeviceType, &c.Browser, &c.OS, &c.Referrer} {
		*p = d.str()
	}
	if flags&flagVersion != 0 {
		c.Version, c.HasVersion = d.uvarint(), true
	}
	if d.bad || len(d.b) != 0 {
		return Click{}, errCorrupt
	}
	return c, nil
}

// recDecoder reads a record; bad sticks at the first error.
type recDecoder struct {
	b   []byte
	bad bool
}

func (d *recDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recDecoder) time() time.Time {
	s, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return time.Time{}
	}
	d.b = d.b[n:]
	ns := d.uvarint()
	if ns >= 1e9 {
		d.bad = true
	}
	return time.Unix(s, int64(ns)).UTC()
}

func (d *recDecoder) str() string {
	h := d.uvarint()
	if h&1 == 1 {
		if h>>1 != 16 || len(d.b) < 16 {
			d.bad, d.b = true, nil
			return ""
		}
		s := string(appendUUID(make([]byte, 0, 36), d.b[:16]))
		d.b = d.b[16:]
		return s
	}
	n := h >> 1
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return ""
	}
	if n == 0 {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
