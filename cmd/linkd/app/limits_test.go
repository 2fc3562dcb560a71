package app_test

import (
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// TestMain stops the PostgreSQL and ClickHouse servers the tests started.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	chtest.Stop()
	os.Exit(code)
}

// Two instances on one PostgreSQL database are one deployment: requests
// alternating between them meet the rate limit of spec section 8 once,
// not once per instance, and a client guessing a link's password over both
// gets five wrong guesses, not ten (DECISIONS.md, "Many instances: one
// deployment"; ADR 0107).
func TestLimitsHoldForTheDeployment(t *testing.T) {
	dsn := pgtest.DSN(t)
	shared := func(c *app.Config) {
		c.EventStore = dsn
		c.Secret = "6c696e6b642074657374207365637265742c2073686172656420627920616c6c"
	}
	a := apptest.Start(t, shared)
	b := apptest.Start(t, shared)
	servers := []*apptest.Server{a, b}

	alice := a.NewKey("alice", "full", nil)
	dom := a.MustCreate("/v1/domains", alice, map[string]any{"domain": "limited.example.com"})["id"].(string)
	link := a.MustCreate("/v1/links", alice, map[string]any{"original_url": "https://pw.example", "custom_code": "pw", "password": "open sesame"})
	// b shows what a wrote (these reads count against the link's own
	// limit, not the domain's).
	deadline := time.Now().Add(10 * time.Second)
	for b.Do("GET", "/v1/links/"+link["id"].(string), alice, nil).Status != http.StatusOK {
		if time.Now().After(deadline) {
			r := b.Do("GET", "/v1/links/"+link["id"].(string), alice, nil)
			t.Fatalf("the second instance does not show the first's link: %d %s", r.Status, r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}

	t.Run("rate limit", func(t *testing.T) {
		// 100 an hour on a domain: 150 requests alternating over the two
		// instances get 100 answers and 50 refusals.
		path := "/v1/domains/" + dom
		ok, refused := 0, 0
		for i := range 150 {
			r := servers[i%2].Do("GET", path, alice, nil)
			switch r.Status {
			case http.StatusOK:
				ok++
				if rem, _ := strconv.Atoi(r.Header.Get("X-RateLimit-Remaining")); rem != 99-i {
					t.Fatalf("request %d: X-RateLimit-Remaining %s, want %d", i+1, r.Header.Get("X-RateLimit-Remaining"), 99-i)
				}
			case http.StatusTooManyRequests:
				refused++
				if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 1 || r.Header.Get("X-RateLimit-Remaining") != "0" {
					t.Fatalf("request %d refused with Retry-After %q, remaining %q", i+1, r.Header.Get("Retry-After"), r.Header.Get("X-RateLimit-Remaining"))
				}
			default:
				t.Fatalf("request %d on instance %d: %d %s", i+1, i%2, r.Status, r.Body)
			}
		}
		if ok != 100 || refused != 50 {
			t.Errorf("%d answered, %d refused; want 100 and 50", ok, refused)
		}
	})

	t.Run("password throttle", func(t *testing.T) {
		wrong := 0
		for i := range 20 {
			r := servers[i%2].Do("GET", "/v1/links/code/pw", "", nil, "X-Link-Password", "guess "+strconv.Itoa(i))
			switch r.Status {
			case http.StatusUnauthorized:
				wrong++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("guess %d on instance %d: %d %s", i+1, i%2, r.Status, r.Body)
			}
		}
		if wrong != 5 {
			t.Errorf("%d wrong guesses answered over two instances, want 5", wrong)
		}
		// The right password is refused too, on either instance, until the
		// window passes.
		for _, s := range servers {
			if r := s.Do("GET", "/v1/links/code/pw", "", nil, "X-Link-Password", "open sesame"); r.Status != http.StatusTooManyRequests {
				t.Errorf("right password while throttled: %d %s", r.Status, r.Body)
			}
		}
	})
}
