package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/eventstore/embedded"
)

// Appends, multi-stream ones too, are counted by category; failed ones as
// errors, with no events.
func TestInstrumentedCountsAppends(t *testing.T) {
	store, err := embedded.Open(embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	m := newMetrics()
	s := m.instrument(store).(*instrumented)
	ctx := context.Background()
	ev := func(n int) []eventstore.EventData {
		out := make([]eventstore.EventData, n)
		for i := range out {
			out[i] = eventstore.EventData{Type: "Tested", Data: []byte(`{}`)}
		}
		return out
	}
	if _, err := s.Append(ctx, "link-1", eventstore.NoStream(), ev(2)...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMulti(ctx, eventstore.StreamAppend{Stream: "link-2", Expected: eventstore.NoStream(), Events: ev(1)},
		eventstore.StreamAppend{Stream: "customer-1", Expected: eventstore.NoStream(), Events: ev(3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMulti(ctx, eventstore.StreamAppend{Stream: "link-3", Expected: eventstore.NoStream(), Events: ev(1)},
		eventstore.StreamAppend{Stream: "link-1", Expected: eventstore.NoStream(), Events: ev(1)}); err == nil {
		t.Fatal("an append to an existing stream expecting none succeeded")
	}
	if got := value(t, m.counter("link")); got != 3 {
		t.Errorf("link events %v, want 3", got)
	}
	if got := value(t, m.counter("customer")); got != 3 {
		t.Errorf("customer events %v, want 3", got)
	}
	if got := value(t, m.appendErr); got != 1 {
		t.Errorf("errors %v, want 1", got)
	}
}

func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// Requests are counted by kind and status class, and timed by kind.
func TestHTTPMetricsCountRequests(t *testing.T) {
	m := newMetrics()
	h := m.http(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/abc":
			w.WriteHeader(http.StatusFound)
		case "/v1/links":
			w.WriteHeader(http.StatusUnauthorized)
		case "/boom":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			_, _ = w.Write([]byte("ok")) // 200 without WriteHeader
		}
	}))
	for _, path := range []string{"/abc", "/abc", "/v1/links", "/healthz", "/boom", "/a/b"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	for _, c := range []struct {
		kind, class string
		want        float64
	}{
		{"redirect", "3xx", 2}, {"api", "4xx", 1}, {"other", "2xx", 2}, {"redirect", "5xx", 1}, {"api", "2xx", 0},
	} {
		if got := value(t, m.requests.WithLabelValues(c.kind, c.class)); got != c.want {
			t.Errorf("%s %s: %v requests, want %v", c.kind, c.class, got, c.want)
		}
	}
	var d dto.Metric
	if err := m.reqDur.WithLabelValues("redirect").(prometheus.Histogram).Write(&d); err != nil {
		t.Fatal(err)
	}
	if n := d.GetHistogram().GetSampleCount(); n != 3 {
		t.Errorf("redirect durations: %d samples, want 3", n)
	}
}
