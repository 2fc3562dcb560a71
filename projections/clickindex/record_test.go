package clickindex

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestParseUUIDv7(t *testing.T) {
	t.Parallel()
	made := uuid.Must(uuid.NewV7())
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"made by google/uuid", made.String(), true},
		{"fixture", "0190a3c2-1111-7abc-8def-000000000001", true},
		{"uppercase", strings.ToUpper(made.String()), false},
		{"version 4", uuid.NewString(), false},
		{"variant not 10", "0190a3c2-1111-7abc-cdef-000000000001", false},
		{"no hyphens", strings.ReplaceAll(made.String(), "-", ""), false},
		{"braces", "{" + made.String() + "}", false},
		{"hyphen misplaced", "0190a3c21-111-7abc-8def-000000000001", false},
		{"not hex", "0190a3c2-1111-7abc-8def-00000000000g", false},
		{"short", made.String()[:35], false},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, ok := parseUUIDv7(tc.in)
			if ok != tc.want {
				t.Fatalf("parseUUIDv7(%q) = %v", tc.in, ok)
			}
			if ok && string(appendUUID(nil, u[:])) != tc.in {
				t.Errorf("round trip gives %s", appendUUID(nil, u[:]))
			}
		})
	}
	u, _ := parseUUIDv7(made.String())
	if d := time.Since(uuidTime(&u)); d < 0 || d > time.Minute {
		t.Errorf("uuidTime is %v ago", d)
	}
}

// Keys of UUIDv7 sort in time order, and v7Prefix(t) sits above every id
// made before t and below every id made from t on.
func TestV7KeysSortByTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var prev []byte
	for i := range 1000 {
		at := base.Add(time.Duration(i) * 7919 * time.Second)
		u, _ := parseUUIDv7(v7At(at, uint64(999-i)))
		k := v7Key(nil, &u)
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Fatalf("key %d does not sort after its predecessor", i)
		}
		prev = k
		lo, _ := v7Prefix(nil, at)
		hi, _ := v7Prefix(nil, at.Add(time.Millisecond))
		if bytes.Compare(lo, k) > 0 || bytes.Compare(k, hi) >= 0 {
			t.Fatalf("key of %v outside [prefix(t), prefix(t+1ms))", at)
		}
		if !uuidTime(&u).Equal(at) {
			t.Fatalf("uuidTime %v, want %v", uuidTime(&u), at)
		}
	}
	if _, ok := v7Prefix(nil, time.Unix(0, 0)); ok {
		t.Error("a prefix for 1970")
	}
}

func TestExpiryKeysSortByDay(t *testing.T) {
	t.Parallel()
	days := []int64{-1 << 40, -800, -1, 0, 1, 20513, 1 << 40}
	for i := 1; i < len(days); i++ {
		a, b := expiryKey(nil, days[i-1], "zzz"), expiryKey(nil, days[i], "aaa")
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("day %d does not sort before day %d", days[i-1], days[i])
		}
	}
	for _, tc := range []struct {
		t    time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(86399, 999), 0},
		{time.Unix(86400, 0), 1},
		{time.Unix(-1, 0), -1},
		{time.Unix(-86400, 0), -1},
		{time.Unix(-86401, 0), -2},
	} {
		if got := dayOf(tc.t); got != tc.want {
			t.Errorf("dayOf(%v) = %d, want %d", tc.t, got, tc.want)
		}
	}
}

// A record written before the index kept the click's stream version
// decodes as it did, without one.
func TestRecordWithoutVersion(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	f := fields{TrackingID: []byte(lnk1), ClickID: []byte(lnk1), LinkID: []byte(lnk2), Country: []byte("DE"), Version: 7}
	v := appendRecord(nil, &f, ts, ts.Add(ttl))
	old := slices.Clone(v[:len(v)-1]) // the version's one byte
	old[1] &^= flagVersion
	c, err := decodeRecord(old, lnk1)
	if err != nil {
		t.Fatal(err)
	}
	if c.HasVersion || c.Version != 0 || c.LinkID != lnk2 || c.Country != "DE" || !c.Timestamp.Equal(ts) {
		t.Errorf("old record decoded as %+v", c)
	}
	if c, _ := decodeRecord(v, lnk1); !c.HasVersion || c.Version != 7 {
		t.Errorf("new record decoded as %+v", c)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	tests := []struct {
		name string
		f    fields
		exp  time.Time
	}{
		{"UUID ids, TTL expiry", fields{
			ClickID: []byte(lnk1), TrackingID: []byte(lnk1), LinkID: []byte(lnk2), WorkspaceID: []byte(ws1),
			ProjectID: []byte(prj1), DomainID: []byte(dom1), Country: []byte("US"), DeviceType: []byte("mobile"),
			Browser: []byte("Chrome"), OS: []byte("iOS"), Referrer: []byte("t.co"), QR: true, Version: 1 << 40,
		}, ts.Add(ttl)},
		{"text ids, own expiry, click id apart", fields{
			ClickID: []byte("click-1"), TrackingID: []byte("tid-1"), LinkID: []byte("lnk_1"),
			WorkspaceID: []byte("ws_1"), Browser: []byte("Sämsung\x00Internet"), Referrer: []byte(strings.Repeat("r", 300)),
		}, ts.Add(time.Hour)},
		{"nothing but the id", fields{TrackingID: []byte("t")}, ts.Add(ttl)},
		{"uppercase UUID stays text", fields{TrackingID: []byte("t"), LinkID: []byte(strings.ToUpper(lnk1))}, ts.Add(ttl)},
		{"before 1970", fields{TrackingID: []byte("t")}, time.Unix(-5, 7).UTC()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at := ts
			if tc.name == "before 1970" {
				at = time.Unix(-100, 3).UTC()
			}
			v := appendRecord(nil, &tc.f, at, tc.exp)
			c, err := decodeRecord(v, string(tc.f.TrackingID))
			if err != nil {
				t.Fatal(err)
			}
			want := Click{
				TrackingID: string(tc.f.TrackingID), ClickID: string(tc.f.ClickID), LinkID: string(tc.f.LinkID),
				WorkspaceID: string(tc.f.WorkspaceID), ProjectID: string(tc.f.ProjectID), DomainID: string(tc.f.DomainID),
				Timestamp: at, ExpiresAt: tc.exp, Country: string(tc.f.Country), DeviceType: string(tc.f.DeviceType),
				Browser: string(tc.f.Browser), OS: string(tc.f.OS), Referrer: string(tc.f.Referrer), QR: tc.f.QR,
				Version: tc.f.Version, HasVersion: true,
			}
			if len(tc.f.ClickID) == 0 {
				want.ClickID = "" // differs from the tracking id: kept as is
			}
			if c != want {
				t.Errorf("got  %+v\nwant %+v", c, want)
			}
			// Every truncation and a trailing byte are refused.
			for n := range len(v) {
				if _, err := decodeRecord(v[:n], "t"); !errors.Is(err, errCorrupt) {
					t.Fatalf("a record cut at %d of %d bytes decoded (%v)", n, len(v), err)
				}
			}
			if _, err := decodeRecord(append(v, 0), "t"); !errors.Is(err, errCorrupt) {
				t.Error("a record with a trailing byte decoded")
			}
		})
	}
}

// The record of a typical click linkd makes: UUID ids, a few short values.
func TestRecordSize(t *testing.T) {
	t.Parallel()
	f := fields{
		ClickID: []byte(lnk1), TrackingID: []byte(lnk1), LinkID: []byte(lnk2), WorkspaceID: []byte(ws1),
		ProjectID: []byte(prj1), DomainID: []byte(dom1), Country: []byte("US"), DeviceType: []byte("mobile"),
		Browser: []byte("Chrome"), OS: []byte("Android"), Referrer: []byte("instagram.com"),
	}
	ts := time.Now()
	v := appendRecord(nil, &f, ts, ts.Add(ttl))
	if len(v) > 120 {
		t.Errorf("record of %d bytes", len(v))
	}
	t.Logf("record of a typical click: %d bytes", len(v))
}
