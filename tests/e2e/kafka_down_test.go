package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// TestKafkaPausedOnManyInstances: Kafka hanging for a while (SIGSTOP: its
// connections open, nothing answered, as a broker that stalls) does not
// stop a deployment (issue 38, "Faults"). Writes, redirects, conversions
// and the reads that follow them go on on every instance, promptly, and
// /healthz stays 200: the events are in the event store. Once Kafka is
// back, the statistics, projected through it into ClickHouse, catch up
// with every click.
func TestKafkaPausedOnManyInstances(t *testing.T) {
	d := newDeployment(t, 2)
	key := operatorKey
	newLink := func(i int, target string) (id, code string) {
		t.Helper()
		id, code, err := createLink(d.url(i), target)
		if err != nil {
			t.Fatalf("link on instance %d: %v", i, err)
		}
		return id, code
	}
	var slowest time.Duration
	follow := func(i int, code, target string) {
		t.Helper()
		t0 := time.Now()
		st, _, h, err := do("GET", d.url(i)+"/"+code, "", nil, "User-Agent", browserUA)
		slowest = max(slowest, time.Since(t0))
		if err != nil || st != 302 || h.Get("Location") != target {
			t.Fatalf("redirect of %s on instance %d: %d %v %q", code, i, st, err, h.Get("Location"))
		}
	}
	statsShow := func(id string, want int64, within time.Duration) time.Duration {
		t.Helper()
		t0 := time.Now()
		for j := range 2 {
			waitTotalClicks(t, d.url(j), id, t0.Add(within), fmt.Sprint(want), func(n int64) bool { return n == want })
		}
		return time.Since(t0)
	}

	// Before: the statistics follow the clicks through Kafka.
	before, beforeCode := newLink(0, "https://example.com/before")
	for n := range 10 {
		follow(n%2, beforeCode, "https://example.com/before")
	}
	statsShow(before, 10, 60*time.Second)

	if err := d.kafka.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = d.kafka.Signal(syscall.SIGCONT)
		}
	}()
	paused := time.Now()
	// Clicks right away: the relay's publishing hangs on them.
	for n := range 10 {
		follow(n%2, beforeCode, "https://example.com/before")
	}
	time.Sleep(2 * time.Second)

	// While Kafka hangs: a link made on one instance redirects on the
	// other at once, clicks are counted exactly on both, a sale is
	// attributed, keys are made, and both instances stay healthy.
	slowest = 0
	t0 := time.Now()
	during, duringCode := newLink(1, "https://example.com/during")
	slowest = max(slowest, time.Since(t0))
	for n := range 30 {
		follow(n%2, duringCode, "https://example.com/during")
		follow((n+1)%2, beforeCode, "https://example.com/before")
	}
	for j := range 2 {
		for id, want := range map[string]int64{before: 50, during: 30} {
			st, b, _, _ := do("GET", d.url(j)+"/v1/links/"+id, key, nil)
			if l := decode[struct{ Clicks int64 }](t, b); st != 200 || l.Clicks != want {
				t.Errorf("instance %d counts %d clicks on %s while Kafka hangs (%d), want %d", j, l.Clicks, id, st, want)
			}
		}
	}
	tid := trackedClick(t, d.url(0))
	t0 = time.Now()
	body := map[string]any{"trackingId": tid, "customer": map[string]any{"externalId": "kafka-paused"}, "eventId": "kafka-paused-1", "amount": 3, "currency": "usd"}
	if st, b, _, _ := do("POST", d.url(1)+"/api/events/sale", key, body); st != 200 {
		t.Errorf("sale while Kafka hangs: %d %s", st, b)
	}
	slowest = max(slowest, time.Since(t0))
	if got := customers(t, d.url(0))["kafka-paused"]; got[1] != 1 {
		t.Errorf("instance 0 shows %v sales of the customer whose sale instance 1 took, want 1", got)
	}
	for j := range 2 {
		resp, err := client.Get(d.url(j) + "/healthz")
		if err != nil {
			t.Fatalf("instance %d /healthz while Kafka hangs: %v", j, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("instance %d /healthz answered %d while Kafka hangs, want 200", j, resp.StatusCode)
		}
	}
	if slowest > 2*time.Second {
		t.Errorf("the slowest write or redirect took %v while Kafka hung", slowest)
	}

	// An instance killed and started again while Kafka hangs: it catches
	// up from the event store and serves (the statistics it shares with
	// the deployment wait for Kafka, not it), with what was written meanwhile.
	d.procs[1].kill()
	restartAt := time.Now()
	d.procs[1] = start(t, d.dirs[1], d.addrs[1], d.env...)
	restarted := time.Since(restartAt)
	if restarted > 15*time.Second {
		t.Errorf("an instance restarted while Kafka hung took %v to answer /healthz 200", restarted)
	}
	follow(1, duringCode, "https://example.com/during")
	follow(1, beforeCode, "https://example.com/before")
	for id, want := range map[string]int64{before: 51, during: 31} {
		st, b, _, _ := do("GET", d.url(1)+"/v1/links/"+id, key, nil)
		if l := decode[struct{ Clicks int64 }](t, b); st != 200 || l.Clicks != want {
			t.Errorf("the restarted instance counts %d clicks on %s while Kafka hangs (%d), want %d", l.Clicks, id, st, want)
		}
	}
	time.Sleep(time.Until(paused.Add(8 * time.Second)))

	// Kafka back: the statistics catch up with every click.
	hung := time.Since(paused)
	if err := d.kafka.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	caughtUp := statsShow(before, 51, 90*time.Second)
	caughtUp += statsShow(during, 31, 30*time.Second)
	t.Logf("Kafka hung %v; the slowest request meanwhile took %v; an instance restarted meanwhile was healthy in %v; the statistics caught up %v after it came back",
		hung.Round(100*time.Millisecond), slowest, restarted.Round(100*time.Millisecond), caughtUp.Round(100*time.Millisecond))
}
