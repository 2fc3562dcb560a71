package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/internal/secrets"
)

// GenerateOptions shape generated traffic.
type GenerateOptions struct {
	Workspaces int
	Links      int
	Clicks     int
	Days       int // clicks are spread over the last Days days
	Workers    int
	Seed       int64
	// Tracking gives every click a tracking id, as a link with conversion
	// tracking does; TrackingIDsOut receives a sample of them.
	Tracking       bool
	TrackingIDsOut string
}

// Generate writes synthetic links and clicks through the real write path
// (the CreateLink and RecordClick commands into the event store), for
// benchmarks and demos. linkd serve must not be running on the same data
// directory; its projections catch up on the next start.
func Generate(ctx context.Context, cfg Config, log *slog.Logger, o GenerateOptions, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if o.Workspaces < 1 || o.Links < o.Workspaces || o.Clicks < 0 || o.Days < 1 {
		return fmt.Errorf("generate: need workspaces >= 1, links >= workspaces, clicks >= 0, days >= 1")
	}
	if o.Workers < 1 {
		o.Workers = 64
	}
	store, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("event store (is linkd serve running on this data directory?): %w", err)
	}
	defer store.Close()
	secret, err := secrets.Load(cfg.DataDir, cfg.Secret)
	if err != nil {
		return err
	}
	deps := &commands.Deps{Store: store, Cipher: secret.Cipher(), DefaultPlan: cfg.DefaultPlan}
	start := time.Now()
	var wsIDs []string
	for i := 0; i < o.Workspaces; i++ {
		w, _, err := commands.CreateWorkspaceHandler{Deps: deps}.Handle(ctx, commands.CreateWorkspace{
			Actor: commands.Actor{UserID: commands.OperatorUser, Operator: true}, Name: fmt.Sprintf("Generated %d %d", o.Seed, i),
		})
		if err != nil {
			return err
		}
		wsIDs = append(wsIDs, w.ID)
	}
	type lk struct{ id, ws, code string }
	links := make([]lk, o.Links)
	for i := range links {
		l, _, err := commands.CreateLinkHandler{Deps: deps}.Handle(ctx, commands.CreateLink{
			Actor:       commands.Actor{UserID: commands.OperatorUser, Operator: true},
			WorkspaceID: wsIDs[i%len(wsIDs)],
			Attributes:  link.Attributes{OriginalURL: fmt.Sprintf("https://example.com/generated/%d", i), Name: fmt.Sprintf("generated %d", i)},
		})
		if err != nil {
			return err
		}
		links[i] = lk{l.ID, l.WorkspaceID, l.Code}
	}
	fmt.Fprintf(out, "created %d workspaces and %d links in %s\n", len(wsIDs), len(links), time.Since(start).Round(time.Millisecond))
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, o.Workers)
	now := time.Now().UTC()
	span := time.Duration(o.Days) * 24 * time.Hour
	start = time.Now()
	rec := commands.RecordClickHandler{Deps: deps}
	var sample *os.File
	var sampleMu sync.Mutex
	every := int64(max(o.Clicks/100_000, 1))
	if o.Tracking && o.TrackingIDsOut != "" {
		if sample, err = os.Create(o.TrackingIDsOut); err != nil {
			return err
		}
		defer sample.Close()
	}
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(o.Seed*1000 + int64(w)))
			for {
				n := next.Add(1)
				if n > int64(o.Clicks) {
					return
				}
				l := links[zipf(rng, len(links))]
				p := profiles[rng.Intn(len(profiles))]
				c := click.Recorded{
					LinkID: l.id, WorkspaceID: l.ws, Code: l.code, Source: click.SourceRedirect,
					// Clicks arrive in time order, as a real log's do, spread
					// evenly over the last Days days.
					Timestamp: now.Add(-span + time.Duration(float64(span)*float64(n)/float64(o.Clicks))),
					QR:        rng.Intn(5) == 0, Visitor: fmt.Sprintf("%032x", rng.Intn(o.Clicks/3+1)),
					Browser: p.browser, BrowserVersion: "126.0", OS: p.os, OSVersion: p.osv, DeviceType: p.device, Device: p.dev,
					FromApp: p.app != "", App: p.app, Language: languages[rng.Intn(len(languages))],
					Referrer: referrers[rng.Intn(len(referrers))], Country: countries[rng.Intn(len(countries))][0],
					Continent: countries[rng.Intn(len(countries))][1], City: cities[rng.Intn(len(cities))],
				}
				if o.Tracking {
					c.ClickID = commands.NewUUID()
					c.TrackingID = c.ClickID
				}
				if _, _, err := rec.Handle(ctx, commands.RecordClick{Click: c}); err != nil {
					errc <- err
					return
				}
				if sample != nil && n%every == 0 {
					sampleMu.Lock()
					fmt.Fprintln(sample, c.TrackingID)
					sampleMu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	el := time.Since(start)
	fmt.Fprintf(out, "recorded %d clicks in %s (%.0f clicks/s)\n", o.Clicks, el.Round(time.Millisecond), float64(o.Clicks)/max(el.Seconds(), 1e-9))
	return nil
}

// zipf picks link indexes with a skew: a few links get most clicks.
func zipf(rng *rand.Rand, n int) int {
	if rng.Intn(2) == 0 {
		return rng.Intn(max(n/20, 1))
	}
	return rng.Intn(n)
}

type profile struct{ browser, os, osv, device, dev, app string }

var profiles = []profile{
	{"Chrome", "Windows", "10", "desktop", "Windows PC", ""},
	{"Chrome", "Android", "14", "mobile", "Android", ""},
	{"Safari", "iOS", "17.4", "mobile", "iPhone", ""},
	{"Safari", "macOS", "10.15.7", "desktop", "Mac", ""},
	{"Edge", "Windows", "10", "desktop", "Windows PC", ""},
	{"Firefox", "Linux", "", "desktop", "Linux PC", ""},
	{"Instagram", "iOS", "17.4", "mobile", "iPhone", "Instagram"},
	{"Facebook", "Android", "13", "mobile", "Android", "Facebook"},
	{"Safari", "iOS", "17.4", "tablet", "iPad", ""},
}

var (
	languages = []string{"en", "de", "fr", "es", "pt", "ja", "it", "nl"}
	referrers = []string{"", "", "google.com", "t.co", "facebook.com", "linkedin.com", "news.ycombinator.com"}
	countries = [][2]string{{"US", "NA"}, {"DE", "EU"}, {"FR", "EU"}, {"GB", "EU"}, {"BR", "SA"}, {"JP", "AS"}, {"IN", "AS"}, {"AU", "OC"}, {"NG", "AF"}, {"CA", "NA"}}
	cities    = []string{"", "New York", "Berlin", "Paris", "London", "São Paulo", "Tokyo", "Mumbai", "Sydney"}
)
