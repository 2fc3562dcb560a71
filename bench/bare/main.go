// Command bare is the baseline of the redirect load test: a bare net/http
// server that answers every path with a 302 to a fixed URL, doing nothing
// else. linkd's /{code} is measured against it in the same run.
package main

import (
	"flag"
	"log"
	"net/http"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18181", "listen address")
	target := flag.String("target", "https://example.com/landing?utm_source=bench", "redirect target")
	flag.Parse()
	srv := &http.Server{
		Addr: *addr,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", *target)
			w.Header().Set("Cache-Control", "private, no-store")
			w.WriteHeader(http.StatusFound)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Fatal(srv.ListenAndServe())
}
