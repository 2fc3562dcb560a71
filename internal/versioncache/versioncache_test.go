package versioncache

import "testing"

func TestCacheKeepsTwoGenerations(t *testing.T) {
	c := New(2)
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("c", 3) // cur {c}, old {a, b}
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("Get(a) = %d, %v from the old generation", v, ok) // copied forward: cur {c, a}
	}
	c.Put("d", 4) // cur {d}, old {c, a}: b is gone
	if _, ok := c.Get("b"); ok {
		t.Errorf("b survived two generations without a hit")
	}
	for s, want := range map[string]uint64{"d": 4} {
		if v, ok := c.Get(s); !ok || v != want {
			t.Errorf("Get(%q) = %d, %v; want %d", s, v, ok, want)
		}
	}
	c.Reset()
	if _, ok := c.Get("d"); ok {
		t.Errorf("Reset kept d")
	}
}
