package radar

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/linkd/linkd/domain"
)

// decodeBoth decodes b as domain.DecodeEvent does and with encoding/json
// alone.
func decodeBoth(b []byte) (fast, slow PageviewRecorded, fastErr, slowErr error) {
	e, fastErr := domain.DecodeEvent(EventPageviewRecorded, b)
	if fastErr == nil {
		fast = *e.(*PageviewRecorded)
	}
	slowErr = json.Unmarshal(b, &slow)
	return
}

func samplePageview() PageviewRecorded {
	return PageviewRecorded{Hit{ProjectID: "prj_1", WorkspaceID: "ws_1", VisitorID: "v-42", URL: "https://shop.example/p/1?utm_source=x",
		Hostname: "shop.example", Pathname: "/p/1", Referrer: "https://www.google.com/", Source: "google.com", Country: "FR",
		Browser: "Chrome", OS: "Windows", Device: "Desktop", ClickID: "clk_1", LinkID: "lnk_1",
		At: time.Date(2026, 11, 24, 9, 30, 1, 123456789, time.UTC)}}
}

// What linkd writes is read as encoding/json reads it, fast or not.
func TestPageviewDecodeMatchesEncodingJSON(t *testing.T) {
	written, err := json.Marshal(samplePageview())
	if err != nil {
		t.Fatal(err)
	}
	var probe Hit
	if !probe.decodePlain(written) {
		t.Fatalf("what linkd writes is not read directly: %s", written)
	}
	cases := []string{
		string(written),
		`{}`, ` { } `, `{"project_id":"p","at":"2026-01-02T03:04:05Z"}`,
		`{"project_id":"p\u00e9"}`,                // escape: encoding/json
		`{"Project_ID":"p"}`,                      // another case: encoding/json matches it
		`{"project_id":"p","extra":"x"}`,          // unknown key
		`{"project_id":null}`, `{"project_id":1}`, // not strings
		`{"project_id":"p","project_id":"q"}`, // the last wins
		"{\"project_id\":\"\xff\"}",           // invalid UTF-8
		"{\"project_id\":\"a\tb\"}",           // control character
		`{"project_id":"p",}`, `{"project_id":"p"`, `{"project_id":"p"} x`, `[]`, ``, `"x"`,
		`{"at":"yesterday"}`, `{"at":""}`, `{"at":null}`,
		` {"pathname" : "/ü" , "os":"iOS"} `,
	}
	for _, c := range cases {
		fast, slow, fe, se := decodeBoth([]byte(c))
		if (fe == nil) != (se == nil) || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%q: fast %+v (%v), encoding/json %+v (%v)", c, fast, fe, slow, se)
		}
	}
}

func FuzzPageviewDecode(f *testing.F) {
	written, _ := json.Marshal(samplePageview())
	f.Add(written)
	f.Add([]byte(`{"project_id":"p","Visitor_Id":"v","at":"2026-01-02T03:04:05.5+02:00"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, slow, fe, se := decodeBoth(b)
		if (fe == nil) != (se == nil) {
			t.Fatalf("%q: errors differ: %v, %v", b, fe, se)
		}
		if fe == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: %+v, want %+v", b, fast, slow)
		}
	})
}

func BenchmarkDecodePageview(b *testing.B) {
	written, _ := json.Marshal(samplePageview())
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var e PageviewRecorded
			if err := json.Unmarshal(written, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeEvent", func(b *testing.B) {
		for b.Loop() {
			if _, err := domain.DecodeEvent(EventPageviewRecorded, written); err != nil {
				b.Fatal(err)
			}
		}
	})
}
