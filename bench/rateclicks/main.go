// Command rateclicks sends GET requests to one URL at a fixed rate (not as
// fast as possible, as wrk does), so that a benchmark can ask whether
// something keeps up with that rate: bench/webhooks.sh with RATE. It
// follows no redirect and prints what it sent, at what rate, and how many
// answers were not a redirect.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:18190/b0", "what to request")
	rate := flag.Int("rate", 5000, "requests per second")
	dur := flag.Duration("d", 5*time.Second, "for how long")
	conns := flag.Int("c", 64, "connections (requests in flight at most)")
	ua := flag.String("ua", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", "User-Agent")
	flag.Parse()
	client := &http.Client{
		Transport:     &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
	var sent, bad, late atomic.Int64
	work := make(chan struct{}, *conns)
	var wg sync.WaitGroup
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				req, _ := http.NewRequest(http.MethodGet, *url, nil)
				req.Header.Set("User-Agent", *ua)
				resp, err := client.Do(req)
				sent.Add(1)
				if err != nil {
					bad.Add(1)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode/100 != 3 {
					bad.Add(1)
				}
			}
		}()
	}
	start := time.Now()
	// Requests are due at start + i/rate; a tick hands out every request
	// due by then (a late tick catches up), and one that finds every
	// connection busy counts as late rather than waiting.
	tick := time.NewTicker(time.Millisecond)
	total := int64(float64(*rate) * dur.Seconds())
	var given int64
	for given < total {
		now := <-tick.C
		due := min(total, int64(now.Sub(start).Seconds()*float64(*rate)))
		for ; given < due; given++ {
			select {
			case work <- struct{}{}:
			default:
				late.Add(1)
				work <- struct{}{}
			}
		}
	}
	tick.Stop()
	close(work)
	wg.Wait()
	el := time.Since(start)
	fmt.Printf("sent %d in %d ms (%.0f/s; asked %d/s), not a redirect %d, sent behind schedule %d\n",
		sent.Load(), el.Milliseconds(), float64(sent.Load())/el.Seconds(), *rate, bad.Load(), late.Load())
	if bad.Load() > 0 {
		os.Exit(1)
	}
}
