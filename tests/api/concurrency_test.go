package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
)

// raw sends a request from any goroutine and returns the status and the
// decoded body (nil when it is not an object).
func raw(s *apptest.Server, method, path, key string, body any) (int, map[string]any) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(b))
	if err != nil {
		return -1, nil
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := apptest.NoRedirect.Do(req)
	if err != nil {
		return -1, nil
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// race runs f n times at once and counts the statuses.
func race(n int, f func(i int) int) map[int]int {
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			st := f(i)
			mu.Lock()
			counts[st]++
			mu.Unlock()
		}(i)
	}
	close(start)
	wg.Wait()
	return counts
}

// Uniqueness holds under concurrent requests: exactly one wins, the others
// get 409, and no half-made resource is left behind.
func TestConcurrentUniqueness(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice, bob := s.NewKey("alice", "full", nil), s.NewKey("bob", "full", nil)
	keys := []string{alice, bob}
	const n = 12

	got := race(n, func(i int) int {
		st, _ := raw(s, "POST", "/v1/links", keys[i%2], map[string]any{"original_url": "https://race.example", "custom_code": "race"})
		return st
	})
	if got[201] != 1 || got[409] != n-1 {
		t.Errorf("custom code race: %v", got)
	}
	total := len(envelope(t, s.Do("GET", "/v1/links", alice, nil)).Items) + len(envelope(t, s.Do("GET", "/v1/links", bob, nil)).Items)
	if total != 1 {
		t.Errorf("%d links after the race", total)
	}

	got = race(n, func(int) int {
		st, _ := raw(s, "POST", "/v1/workspaces", alice, map[string]any{"name": "Racy"})
		return st
	})
	if got[201] != 1 || got[409] != n-1 {
		t.Errorf("workspace name race: %v", got)
	}

	ws := workspace(s, alice, "Projects")
	got = race(n, func(int) int {
		st, _ := raw(s, "POST", "/v1/projects", alice, map[string]any{"name": "Same", "workspace_id": ws})
		return st
	})
	if got[201] != 1 || got[409] != n-1 {
		t.Errorf("project name race: %v", got)
	}

	got = race(n, func(i int) int {
		st, _ := raw(s, "POST", "/v1/domains", keys[i%2], map[string]any{"domain": "race.example.com"})
		return st
	})
	if got[201] != 1 || got[409] != n-1 {
		t.Errorf("domain race: %v", got)
	}
}

// Concurrent first uses make one default workspace, not several.
func TestConcurrentDefaultWorkspace(t *testing.T) {
	t.Parallel()
	s := start(t)
	carol := s.NewKey("carol", "full", nil)
	var mu sync.Mutex
	seen := map[string]bool{}
	got := race(10, func(i int) int {
		st, m := raw(s, "POST", "/v1/links", carol, map[string]any{"original_url": q("https://c%d.example", i)})
		mu.Lock()
		seen[str(m, "workspace_id")] = true
		mu.Unlock()
		return st
	})
	if got[201] != 10 || len(seen) != 1 {
		t.Errorf("statuses %v, workspaces %v", got, seen)
	}
	if n := len(list(t, s.Do("GET", "/v1/workspaces", carol, nil), http.StatusOK)); n != 1 {
		t.Errorf("%d workspaces after concurrent first uses", n)
	}
}

// Concurrent clicks on a link with a click limit never count past it.
func TestConcurrentClickLimit(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	l := createLink(s, alice, map[string]any{"original_url": "https://lim.example", "custom_code": "lim", "expiration_click_count": 5})
	got := race(20, func(int) int {
		st, _ := raw(s, "GET", "/v1/links/code/lim", "", nil)
		return st
	})
	if got[200] != 5 || got[410] != 15 {
		t.Errorf("click-limit race: %v", got)
	}
	if m := obj(t, s.Do("GET", "/v1/links/"+str(l, "id"), alice, nil), http.StatusOK); m["clicks"] != 5.0 || m["is_active"] != false {
		t.Errorf("after the race: clicks %v active %v", m["clicks"], m["is_active"])
	}
}
