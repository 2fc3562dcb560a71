package eventstore

import "testing"

func TestExpectedVersionCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		expected ExpectedVersion
		current  uint64
		exists   bool
		want     bool
	}{
		{"any/no stream", Any(), 0, false, true},
		{"any/stream", Any(), 7, true, true},
		{"no-stream/no stream", NoStream(), 0, false, true},
		{"no-stream/stream", NoStream(), 0, true, false},
		{"stream-exists/no stream", StreamExists(), 0, false, false},
		{"stream-exists/stream", StreamExists(), 0, true, true},
		{"exact/same", Exact(3), 3, true, true},
		{"exact/older", Exact(2), 3, true, false},
		{"exact/newer", Exact(4), 3, true, false},
		{"exact 0/no stream", Exact(0), 0, false, false},
		{"exact 0/first event", Exact(0), 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.expected.Check(tc.current, tc.exists); got != tc.want {
				t.Fatalf("%s.Check(%d, %v) = %v", tc.expected, tc.current, tc.exists, got)
			}
		})
	}
	if v, ok := Exact(5).Exact(); !ok || v != 5 {
		t.Fatalf("Exact(5).Exact() = %d, %v", v, ok)
	}
	if _, ok := Any().Exact(); ok || !Any().IsAny() || !NoStream().IsNoStream() || !StreamExists().IsStreamExists() {
		t.Fatal("kind accessors disagree")
	}
}

func TestPosition(t *testing.T) {
	for _, p := range []Position{Start, {Commit: 1, Prepare: 1}, {Commit: 1 << 40, Prepare: 1<<40 - 5}} {
		got, err := ParsePosition(p.String())
		if err != nil || got != p {
			t.Fatalf("ParsePosition(%q) = %v, %v", p.String(), got, err)
		}
	}
	if got, err := ParsePosition(""); err != nil || !got.IsZero() {
		t.Fatalf(`ParsePosition("") = %v, %v`, got, err)
	}
	for _, bad := range []string{"1", "a/1", "1/b", "-1/2", "1/2/3"} {
		if _, err := ParsePosition(bad); err == nil {
			t.Errorf("ParsePosition(%q) succeeded", bad)
		}
	}
	ordered := []Position{Start, {1, 1}, {2, 1}, {2, 2}, {3, 0}}
	for i := range ordered {
		for j := range ordered {
			if got := ordered[i].Less(ordered[j]); got != (i < j) {
				t.Errorf("%v.Less(%v) = %v", ordered[i], ordered[j], got)
			}
		}
	}
}

func TestFilterMatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter Filter
		stream string
		want   bool
	}{
		{"zero filter", Filter{}, "link-1", true},
		{"zero filter, system stream", Filter{}, "$stats-1", false},
		{"prefix", Filter{StreamPrefixes: []string{"link-"}}, "link-1", true},
		{"other prefix", Filter{StreamPrefixes: []string{"link-"}}, "workspace-1", false},
		{"second prefix", Filter{StreamPrefixes: []string{"link-", "workspace-"}}, "workspace-1", true},
		{"system stream matching a prefix", Filter{StreamPrefixes: []string{"$"}}, "$ce-link", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.filter.Match(tc.stream); got != tc.want {
				t.Fatalf("Match(%q) = %v", tc.stream, got)
			}
		})
	}
}

func TestCategory(t *testing.T) {
	for stream, want := range map[string]string{"link-0b1c": "link", "link-a-b": "link", "nodash": "nodash", "-x": ""} {
		if got := Category(stream); got != want {
			t.Errorf("Category(%q) = %q, want %q", stream, got, want)
		}
	}
}
