// Command hookrecv is the webhook receiver of bench/webhooks.sh: it
// answers every delivery 200 at once, checks nothing, and counts the
// distinct webhook-ids it got and how late each arrived after its click
// (the payload's click timestamp). GET /stats reports them as JSON.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18182", "listen address")
	flag.Parse()
	var mu sync.Mutex
	ids := map[string]bool{}
	var requests int
	var maxLag, sumLag time.Duration
	var first, last time.Time
	http.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		now := time.Now()
		var m struct {
			Data struct {
				Click struct {
					Timestamp time.Time `json:"timestamp"`
				} `json:"click"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &m)
		lag := now.Sub(m.Data.Click.Timestamp)
		mu.Lock()
		requests++
		if !ids[r.Header.Get("webhook-id")] {
			ids[r.Header.Get("webhook-id")] = true
			sumLag += lag
			maxLag = max(maxLag, lag)
		}
		if first.IsZero() {
			first = now
		}
		last = now
		mu.Unlock()
	})
	http.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		n := len(ids)
		avg := time.Duration(0)
		if n > 0 {
			avg = sumLag / time.Duration(n)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"distinct": n, "requests": requests, "max_lag_ms": maxLag.Milliseconds(), "avg_lag_ms": avg.Milliseconds(),
			"first": first.UnixMilli(), "last": last.UnixMilli(),
		})
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}
