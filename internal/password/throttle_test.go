package password

import (
	"fmt"
	"testing"
	"time"
)

func TestThrottle(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	th := NewThrottle(0, 0, 0)
	// Per client and link: five wrong attempts, then refused for a minute.
	for i := 0; i < DefaultPerClient; i++ {
		if !th.Allowed("a", "l1", now) {
			t.Fatalf("attempt %d refused", i+1)
		}
		th.Failed("a", "l1", now)
	}
	if th.Allowed("a", "l1", now) {
		t.Errorf("sixth attempt allowed")
	}
	if !th.Allowed("a", "l2", now) || !th.Allowed("b", "l1", now) {
		t.Errorf("another link or client refused")
	}
	if !th.Allowed("a", "l1", now.Add(DefaultWindow+time.Second)) {
		t.Errorf("still refused after the window")
	}
	// Per link across clients: a guesser with many addresses gets 30.
	n := 0
	for c := 0; c < 100; c++ {
		client := fmt.Sprintf("c%d", c)
		if th.Allowed(client, "l3", now) {
			th.Failed(client, "l3", now)
			n++
		}
	}
	if n != DefaultPerLink {
		t.Errorf("%d wrong attempts across clients, want %d", n, DefaultPerLink)
	}
	if th.Allowed("owner", "l3", now.Add(30*time.Second)) {
		t.Errorf("the link took attempts within the window")
	}
	if !th.Allowed("owner", "l3", now.Add(DefaultWindow+time.Second)) {
		t.Errorf("the owner is still locked out after the window")
	}
}
