package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand"
	neturl "net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const browserUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"

// TestCrashKeepsAcknowledgedWritesAndClicks runs linkd, writes links,
// clicks, leads and sales from many goroutines, kills the process with
// SIGKILL in the middle, starts it again, and checks that every
// acknowledged link is listed, every answered access (redirect or public
// read) is counted, and every acknowledged lead and sale is recorded, once.
func TestCrashKeepsAcknowledgedWritesAndClicks(t *testing.T) {
	crashScenario(t)
}

// crashScenario is the crash test with extra settings of the child's
// environment (the Kafka variant passes LINKD_KAFKA_BROKERS).
func crashScenario(t *testing.T, extra ...string) {
	rounds := 1
	if os.Getenv("LINKD_INTEGRATION") != "" {
		rounds = 3
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	acked := map[string]bool{}
	answered := map[string]int64{}  // link id -> answered accesses
	attempted := map[string]int64{} // link id -> accesses sent
	codes := map[string]string{}    // link id -> code
	conv := newConversions()
	for round := 0; round < rounds; round++ {
		p := start(t, dir, addr, extra...)
		if round > 0 {
			check(t, p.url, acked, answered, attempted)
			conv.check(t, p.url)
		}
		tid := trackedClick(t, p.url)
		// Seed links to click.
		for i := 0; i < 10; i++ {
			id, code, err := createLink(p.url, fmt.Sprintf("https://example.com/seed/%d/%d", round, i))
			if err != nil {
				t.Fatal(err)
			}
			acked[id], codes[id] = true, code
		}
		var mu sync.Mutex
		var stop atomic.Bool
		var wg sync.WaitGroup
		ids := make([]string, 0, len(codes))
		for id := range codes {
			ids = append(ids, id)
		}
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) { // writers
				defer wg.Done()
				for n := 0; !stop.Load(); n++ {
					id, code, err := createLink(p.url, fmt.Sprintf("https://example.com/w/%d/%d/%d", round, w, n))
					if err == nil {
						mu.Lock()
						acked[id], codes[id] = true, code
						mu.Unlock()
					}
				}
			}(w)
		}
		for c := 0; c < 16; c++ {
			wg.Add(1)
			go func(c int) { // clickers
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(c)))
				for !stop.Load() {
					id := ids[rng.Intn(len(ids))]
					mu.Lock()
					code := codes[id]
					attempted[id]++
					mu.Unlock()
					var st int
					var err error
					if c%2 == 0 {
						st, _, _, err = do("GET", p.url+"/"+code, "", nil, "User-Agent", browserUA)
						if st != 302 {
							err = fmt.Errorf("status %d", st)
						}
					} else {
						st, _, _, err = do("GET", p.url+"/v1/links/code/"+code, "", nil, "User-Agent", browserUA)
						if st != 200 {
							err = fmt.Errorf("status %d", st)
						}
					}
					if err == nil {
						mu.Lock()
						answered[id]++
						mu.Unlock()
					}
				}
			}(c)
		}
		for c := 0; c < 4; c++ {
			wg.Add(1)
			go func(c int) { // converters: a lead, then sales, each with its own eventId
				defer wg.Done()
				for n := 0; !stop.Load(); n++ {
					conv.send(p.url, tid, fmt.Sprintf("crash-%d", c), fmt.Sprintf("r%d-c%d-n%d", round, c, n), n > 0)
				}
			}(c)
		}
		time.Sleep(time.Duration(800+rand.Intn(700)) * time.Millisecond)
		p.kill() // SIGKILL while requests are in flight
		stop.Store(true)
		wg.Wait()
		t.Logf("round %d: %d links acknowledged, %d accesses answered", round, len(acked), sum(answered))
	}
	p := start(t, dir, addr, extra...)
	defer p.stop()
	check(t, p.url, acked, answered, attempted)
	conv.check(t, p.url)
	conv.repeat(t, p.url)
}

// conversions remembers the leads and sales sent and acknowledged, per
// customer.
type conversions struct {
	mu                     sync.Mutex
	ackedLeads, ackedSales map[string]int64     // customer -> acknowledged
	sentLeads, sentSales   map[string]int64     // customer -> sent
	last                   map[string][2]string // customer -> an acknowledged sale's tracking id and eventId
}

func newConversions() *conversions {
	return &conversions{ackedLeads: map[string]int64{}, ackedSales: map[string]int64{}, sentLeads: map[string]int64{},
		sentSales: map[string]int64{}, last: map[string][2]string{}}
}

// trackedClick follows a new tracked link once and returns its svc_tid.
func trackedClick(t *testing.T, url string) string {
	t.Helper()
	st, b, _, err := do("POST", url+"/v1/links", operatorKey, map[string]any{"original_url": "https://shop.example/crash", "enable_conversion_tracking": true})
	if err != nil || st != 201 {
		t.Fatalf("tracked link: %d %v %s", st, err, b)
	}
	var l struct{ Code string }
	_ = json.Unmarshal(b, &l)
	st, _, h, err := do("GET", url+"/"+l.Code, "", nil, "User-Agent", browserUA)
	if err != nil || st != 302 {
		t.Fatalf("tracked redirect: %d %v", st, err)
	}
	loc, err := neturl.Parse(h.Get("Location"))
	if err != nil || loc.Query().Get("svc_tid") == "" {
		t.Fatalf("no svc_tid in %q", h.Get("Location"))
	}
	return loc.Query().Get("svc_tid")
}

func (c *conversions) send(url, tid, customer, eventID string, sale bool) {
	body := map[string]any{"trackingId": tid, "customer": map[string]any{"externalId": customer}, "eventId": eventID}
	path := "/api/events/lead"
	if sale {
		path = "/api/events/sale"
		body["amount"] = 1.25
		body["currency"] = "usd"
	}
	c.mu.Lock()
	if sale {
		c.sentSales[customer]++
	} else {
		c.sentLeads[customer]++
	}
	c.mu.Unlock()
	st, _, _, err := do("POST", url+path, operatorKey, body)
	if err != nil || st != 200 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sale {
		c.ackedSales[customer]++
		c.last[customer] = [2]string{tid, eventID}
	} else {
		c.ackedLeads[customer]++
	}
}

// check reads every customer: at least the acknowledged leads and sales,
// at most those sent.
func (c *conversions) check(t *testing.T, url string) {
	t.Helper()
	got := customers(t, url)
	c.mu.Lock()
	defer c.mu.Unlock()
	for cust, n := range c.ackedSales {
		if g := got[cust]; g[1] < n || g[1] > c.sentSales[cust] {
			t.Errorf("customer %s: %d sales recorded, %d acknowledged, %d sent", cust, g[1], n, c.sentSales[cust])
		}
	}
	for cust, n := range c.ackedLeads {
		if g := got[cust]; g[0] < n || g[0] > c.sentLeads[cust] {
			t.Errorf("customer %s: %d leads recorded, %d acknowledged, %d sent", cust, g[0], n, c.sentLeads[cust])
		}
	}
	t.Logf("conversions: %d customers, leads %v, sales %v acknowledged", len(got), c.ackedLeads, c.ackedSales)
}

// repeat sends an acknowledged sale again after the crash: ok, and not
// recorded twice.
func (c *conversions) repeat(t *testing.T, url string) {
	for cust, last := range c.last {
		before := customers(t, url)[cust][1]
		st, b, err := postSale(url, last[0], cust, last[1])
		if err != nil || st != 200 {
			t.Errorf("repeat of %s: %d %v %s", last[1], st, err, b)
		}
		if after := customers(t, url)[cust][1]; after != before {
			t.Errorf("repeat of %s recorded again: %d sales, then %d", last[1], before, after)
		}
		return
	}
}

// postSale sends a sale of 1.25 USD by customer with eventID, on the click
// of tid.
func postSale(url, tid, customer, eventID string) (int, []byte, error) {
	st, b, _, err := do("POST", url+"/api/events/sale", operatorKey, map[string]any{"trackingId": tid,
		"customer": map[string]any{"externalId": customer}, "eventId": eventID, "amount": 1.25, "currency": "usd"})
	return st, b, err
}

// customers returns externalId -> [leads, sales] of the operator's
// customers.
func customers(t *testing.T, url string) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	cursor := ""
	for {
		st, b, _, err := do("GET", url+"/v1/customers?page_size=100&cursor="+cursor, operatorKey, nil)
		if err != nil || st != 200 {
			t.Fatalf("customers: %d %v %s", st, err, b)
		}
		var page struct {
			Items []struct {
				ExternalID   string `json:"externalId"`
				Leads, Sales int64
			} `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[it.ExternalID] = [2]int64{it.Leads, it.Sales}
		}
		if page.NextCursor == nil {
			return out
		}
		cursor = *page.NextCursor
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func check(t *testing.T, url string, acked map[string]bool, answered, attempted map[string]int64) {
	t.Helper()
	listed := allLinks(t, url, false)
	for id := range acked {
		if _, ok := listed[id]; !ok {
			t.Errorf("acknowledged link %s is missing after the crash", id)
		}
	}
	for id, n := range answered {
		got := int64(listed[id])
		if got < n {
			t.Errorf("link %s: %d clicks counted, %d accesses were answered", id, got, n)
		}
		if got > attempted[id] {
			t.Errorf("link %s: %d clicks counted, only %d accesses were sent", id, got, attempted[id])
		}
	}
}

func createLink(url, target string) (string, string, error) {
	st, b, _, err := do("POST", url+"/v1/links", operatorKey, map[string]any{"original_url": target, "enable_conversion_tracking": false})
	if err != nil {
		return "", "", err
	}
	if st != 201 {
		return "", "", fmt.Errorf("create link: %d %s", st, b)
	}
	var l struct{ ID, Code string }
	if err := json.Unmarshal(b, &l); err != nil {
		return "", "", err
	}
	return l.ID, l.Code, nil
}
