package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/linkd/linkd/domain/click"
)

func TestParseSchedule(t *testing.T) {
	got, err := ParseSchedule(" 100ms, 2s ,1h")
	if err != nil || len(got) != 3 || got[0] != 100*time.Millisecond || got[2] != time.Hour {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", ",", "5", "1s,x", "-1s"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if len(DefaultSchedule) != 9 || DefaultSchedule[0] != 5*time.Second || DefaultSchedule[8] != 24*time.Hour {
		t.Errorf("default schedule %v", DefaultSchedule)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":      0,
		"7":     7 * time.Second,
		"-3":    0,
		"nope":  0,
		"99999": 24 * time.Hour,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}

func TestNextDelay(t *testing.T) {
	d := &Deliverer{o: DeliveryOptions{Schedule: []time.Duration{time.Second, 10 * time.Second}}}
	for range 100 {
		got, ok := d.nextDelay(1, 0)
		if !ok || got < 900*time.Millisecond || got > 1100*time.Millisecond {
			t.Fatalf("first retry after %v", got)
		}
	}
	if got, ok := d.nextDelay(2, 3*time.Second); !ok || got != 3*time.Second {
		t.Errorf("Retry-After not honoured: %v", got)
	}
	if _, ok := d.nextDelay(3, 0); ok {
		t.Error("a retry after the schedule's end")
	}
}

func TestMessageIDIsStable(t *testing.T) {
	a, b := MessageID("0190e7a0-0000-7000-8000-000000000001", "w1"), MessageID("0190e7a0-0000-7000-8000-000000000001", "w1")
	if a != b || len(a) != len("msg_")+32 {
		t.Errorf("%q %q", a, b)
	}
	if a == MessageID("0190e7a0-0000-7000-8000-000000000001", "w2") {
		t.Error("two webhooks share a message id")
	}
}

func TestHookWants(t *testing.T) {
	h := &hook{Active: true, Events: []string{"link.clicked", "link.updated"}, LinkIDs: []string{"a"}}
	for _, c := range []struct {
		typ, link string
		want      bool
	}{
		{"link.clicked", "a", true}, {"link.clicked", "b", false}, {"link.updated", "b", true}, {"sale.created", "a", false},
	} {
		if got := h.wants(c.typ, c.link); got != c.want {
			t.Errorf("%s %s: %v", c.typ, c.link, got)
		}
	}
	h.Active = false
	if h.wants("link.clicked", "a") {
		t.Error("an inactive webhook wants events")
	}
}

func TestClickBodyIsJSON(t *testing.T) {
	s := &Store{links: newLinkCache(4)}
	s.links.putBytes("l1", []byte(`{"clicks":3,"id":"l1","name":"x"}`))
	e := &click.Recorded{ClickID: "c1", LinkID: "l1", Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Browser: "Chrome"}
	b, err := s.clickBody(context.Background(), e, 7, e.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      struct {
			Click map[string]any `json:"click"`
			Link  map[string]any `json:"link"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if m.Type != "link.clicked" || m.Timestamp != "2026-01-02T03:04:05Z" || m.Data.Click["browser"] != "Chrome" || m.Data.Click["tracking_id"] != nil ||
		m.Data.Link["clicks"] != float64(7) || m.Data.Link["click_count"] != float64(7) || m.Data.Link["name"] != "x" {
		t.Errorf("%s", b)
	}
}
