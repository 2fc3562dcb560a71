// Command bare is the baseline of the load tests: a bare net/http server
// doing nothing else than answering. By default it answers every path with
// a 302 to a fixed URL (bench/redirect.sh measures linkd's /{code} against
// it); with -status 202 it reads the body and answers {"ok":true}, as
// Radar's collect does (bench/collect.sh).
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18181", "listen address")
	target := flag.String("target", "https://example.com/landing?utm_source=bench", "redirect target")
	status := flag.Int("status", http.StatusFound, "302: redirect to target; anything else: read the body, answer {\"ok\":true}")
	flag.Parse()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", *target)
		w.Header().Set("Cache-Control", "private, no-store")
		w.WriteHeader(http.StatusFound)
	})
	if *status != http.StatusFound {
		h = func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(*status)
			_, _ = w.Write([]byte(`{"ok":true}`))
		}
	}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
