package link

import (
	"net/url"
	"strings"
	"testing"
)

// addParamsBefore is AddParams as it was before its one-pass form: the
// reference it must agree with.
func addParamsBefore(target string, params [][2]string) string {
	lower := strings.ToLower(target)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return target
	}
	q := splitQuery(target)
	var kept []string
	for _, pair := range q.pairs {
		name := pairName(pair)
		drop := false
		for _, p := range params {
			if name == p[0] {
				drop = true
				break
			}
		}
		if !drop {
			kept = append(kept, pair)
		}
	}
	for _, p := range params {
		kept = append(kept, url.QueryEscape(p[0])+"="+url.QueryEscape(p[1]))
	}
	return q.with(kept)
}

var addParamsCases = []string{
	"https://example.com/landing/5",
	"HTTPS://Example.com/a?b=1",
	"http://x.io/?",
	"https://x.io/p?a=1&&b=2&svc_tid=old#frag?x=1&y",
	"https://x.io/p?svc_tid=a&svc_tid=b&utm_source=x",
	"https://x.io/p?%73vc_tid=escaped&a=%zz",
	"https://x.io/p#only-frag",
	"https://x.io/p?=&a",
	"mailto:a@b.c?subject=x",
	"myapp://open?x=1",
	"httpſ://long-s",
	"",
}

func TestAddParamsAsBefore(t *testing.T) {
	for _, target := range addParamsCases {
		for _, params := range [][][2]string{
			nil,
			{{"svc_tid", "0190a3c2-7d1e-7abc-8def-0123456789ab"}},
			{{"utm_source", "news letter"}, {"utm_medium", "e&mail"}, {"svc_tid", "x/y"}},
		} {
			if got, want := AddParams(target, params), addParamsBefore(target, params); got != want {
				t.Errorf("AddParams(%q, %v) = %q, want %q", target, params, got, want)
			}
		}
	}
}

func FuzzAddParams(f *testing.F) {
	for _, c := range addParamsCases {
		f.Add(c, "svc_tid", "v")
	}
	f.Fuzz(func(t *testing.T, target, name, value string) {
		params := [][2]string{{name, value}, {"utm_source", value}}
		if got, want := AddParams(target, params), addParamsBefore(target, params); got != want {
			t.Errorf("AddParams(%q, %v) = %q, want %q", target, params, got, want)
		}
	})
}

func TestSplitParam(t *testing.T) {
	for _, target := range addParamsCases {
		for _, v := range []string{"0190a3c2-7d1e-7abc-8def-0123456789ab", "", "x/y z&", "#?"} {
			want := AddParams(target, [][2]string{{"svc_tid", v}})
			pre, post, ok := SplitParam(target, "svc_tid")
			if !ok {
				if want != target {
					t.Errorf("SplitParam(%q) refused, but AddParams gives %q", target, want)
				}
				continue
			}
			if got := pre + url.QueryEscape(v) + post; got != want {
				t.Errorf("SplitParam(%q) with %q = %q, want %q", target, v, got, want)
			}
		}
	}
}

func FuzzSplitParam(f *testing.F) {
	for _, c := range addParamsCases {
		f.Add(c, "svc_tid", "v")
	}
	f.Fuzz(func(t *testing.T, target, name, value string) {
		want := AddParams(target, [][2]string{{name, value}})
		pre, post, ok := SplitParam(target, name)
		if got := pre + url.QueryEscape(value) + post; ok && got != want || !ok && want != target {
			t.Errorf("SplitParam(%q, %q) = %q, %q, %v; AddParams with %q gives %q", target, name, pre, post, ok, value, want)
		}
	})
}

func BenchmarkAddParams(b *testing.B) {
	params := [][2]string{{"svc_tid", "0190a3c2-7d1e-7abc-8def-0123456789ab"}}
	for _, c := range []struct {
		name string
		f    func(string, [][2]string) string
	}{{"one-pass", AddParams}, {"before", addParamsBefore}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				_ = c.f("https://example.com/landing/5?utm_source=bench", params)
			}
		})
	}
}
