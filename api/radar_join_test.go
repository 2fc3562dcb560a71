package api

import (
	"fmt"
	"testing"
	"time"
)

func TestJoinCacheExpiresAndStaysBounded(t *testing.T) {
	var c joinCache
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	k := joinKey{"p1", "tid-1"}
	c.put(k, joined{clickID: "c1", source: "go.example/x", until: now.Add(joinTTL)})
	if j, ok := c.get(k, now.Add(joinTTL-time.Second)); !ok || j.clickID != "c1" || j.source != "go.example/x" {
		t.Fatalf("get before expiry: %+v %v", j, ok)
	}
	if _, ok := c.get(joinKey{"p2", "tid-1"}, now); ok {
		t.Fatal("another project's join served")
	}
	if _, ok := c.get(k, now.Add(joinTTL)); ok {
		t.Fatal("expired join served")
	}
	for i := range maxJoins + 100 {
		c.put(joinKey{"p1", fmt.Sprint(i)}, joined{until: now.Add(time.Hour)})
	}
	if n := len(c.m); n != maxJoins {
		t.Fatalf("%d joins kept, want at most %d", n, maxJoins)
	}
}
