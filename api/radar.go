package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/domain/radar"
	"github.com/linkd/linkd/internal/enrich"
	"github.com/linkd/linkd/queries"
)

// Radar (spec 2.9, 2.10, 4.7) at {app_url}: collection from browsers with
// a publishable key bound to a project (POST /api/v1/radar/collect), and
// the reports, with a key bound to a project as bearer. Errors are
// {"error": ...}.

// Texts of the Radar interface.
const (
	msgVisitorNotFound   = "Visitor not found"
	msgKeyNotBound       = "API key is not bound to a project"
	msgInvalidCursor     = "Invalid cursor"
	radarDefaultLimit    = 50
	radarMaxLimit        = 1000
	radarMaxEventsLimit  = 500
	radarCollectDeadline = 10 * time.Second
)

// collectRadar records a page view, custom event or identification. The
// body is JSON, as application/json or text/plain (what sendBeacon sends),
// with the publishable key in X-Publishable-Key or as "key" in the body.
// Known crawlers are answered like everyone else and recorded nowhere.
func (s *Server) collectRadar(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), radarCollectDeadline)
	defer cancel()
	if err := s.collect(ctx, w, r); err != nil {
		s.writeEventError(w, r, err)
		return
	}
	writeOK(w, http.StatusAccepted)
}

func (s *Server) collect(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, radar.MaxBodyBytes+1))
	if err != nil {
		return &eventError{status: http.StatusBadRequest, message: "Invalid payload"}
	}
	if len(body) > radar.MaxBodyBytes {
		return &eventError{status: http.StatusRequestEntityTooLarge, message: msgEventTooLarge}
	}
	p, err := radar.ParsePayload(body)
	if err != nil {
		return err
	}
	value := strings.TrimSpace(r.Header.Get("X-Publishable-Key"))
	if value == "" {
		value = p.Key
	}
	k, err := s.publishableKey(ctx, w, r, value)
	if err != nil {
		return err
	}
	if k.ProjectID == "" {
		return &eventError{status: http.StatusForbidden, message: msgKeyNotBound}
	}
	now := s.clock.Now().UTC()
	var info enrich.Result
	if s.redirect != nil {
		info = s.redirect.enricher.Enrich(r, now)
	}
	if info.Bot && !info.Script {
		return nil // crawlers are not visitors
	}
	visitor := p.VisitorID
	if visitor == "" {
		visitor = "h-" + info.VisitorHash
	}
	var ev domain.Event
	if p.Type == radar.TypeIdentify {
		ev = &radar.VisitorIdentified{Hit: radar.Hit{ProjectID: k.ProjectID, VisitorID: visitor, At: now}, Name: p.Name, Email: p.Email}
	} else {
		hit := radar.Hit{
			ProjectID: k.ProjectID, VisitorID: visitor, URL: p.URL, Hostname: p.Hostname, Pathname: p.Pathname,
			Referrer: p.Referrer, Source: radar.Source(p), Country: info.Country, Browser: info.Browser, OS: info.OS,
			Device: deviceName(info.DeviceType), At: now,
		}
		tid := p.TrackingID
		if tid == "" {
			tid = p.Query.Get("svc_tid")
		}
		if tid != "" {
			s.joinClick(ctx, k, tid, &hit)
		}
		if p.Type == radar.TypeEvent {
			ev = &radar.EventRecorded{Hit: hit, Name: p.Name, Props: p.Props}
		} else {
			ev = &radar.PageviewRecorded{Hit: hit}
		}
	}
	_, err = s.cmd.RecordRadar.Handle(ctx, commands.RecordRadar{Event: ev})
	return err
}

// deviceName is the device of spec 2.10 from the enrichment's device type.
func deviceName(t string) string {
	switch t {
	case "mobile":
		return "Mobile"
	case "tablet":
		return "Tablet"
	case "desktop":
		return "Desktop"
	}
	return ""
}

// joinClick joins a hit to the short-link click of tracking id tid when the
// click exists, is valid, and is of the workspace of the key's project: the
// visit's source becomes the short link. Anything else leaves the hit as
// it is (a page view is never refused for its svc_tid).
//
// A visitor's tracker sends the tracking id with every hit: what it joins
// to is kept for joinTTL (found joins only: a click not indexed yet is
// looked up again).
func (s *Server) joinClick(ctx context.Context, k queries.APIKey, tid string, h *radar.Hit) {
	key := joinKey{k.ProjectID, tid}
	now := s.clock.Now()
	if j, ok := s.joins.get(key, now); ok {
		h.WorkspaceID, h.ClickID, h.LinkID, h.Source = j.workspaceID, j.clickID, j.linkID, j.source
		return
	}
	s.lookupClick(ctx, k, tid, h)
	if h.ClickID != "" {
		s.joins.put(key, joined{workspaceID: h.WorkspaceID, clickID: h.ClickID, linkID: h.LinkID, source: h.Source, until: now.Add(joinTTL)})
	}
}

func (s *Server) lookupClick(ctx context.Context, k queries.APIKey, tid string, h *radar.Hit) {
	c, err := s.q.ClickByTrackingID.Handle(ctx, queries.ClickByTrackingID{TrackingID: tid})
	if domain.KindOf(err) == domain.KindNotFound {
		s.barrier(ctx, s.clicksWM)
		c, err = s.q.ClickByTrackingID.Handle(ctx, queries.ClickByTrackingID{TrackingID: tid})
	}
	if err != nil {
		return
	}
	p, err := s.q.ProjectByID.Handle(ctx, queries.ProjectByID{ID: k.ProjectID, UserID: k.UserID})
	if err != nil || p.WorkspaceID != c.WorkspaceID {
		return
	}
	h.WorkspaceID, h.ClickID, h.LinkID = p.WorkspaceID, c.ClickID, c.LinkID
	if l, err := s.q.LinkByID.Handle(ctx, queries.LinkByID{ID: c.LinkID, UserID: k.UserID}); err == nil {
		host, err := s.q.ShortLinkHost.Handle(ctx, queries.ShortLinkHost{DomainID: l.DomainID})
		if err == nil {
			h.Source = host + "/" + l.Code
		}
	}
}

// radarKey authenticates a Radar report: an active secret key with
// analytics read access, bound to a project. A call in process as a user
// (AsUser) holds that user's key.
func (s *Server) radarKey(ctx context.Context, r *http.Request) (queries.APIKey, error) {
	p, inProcess := asUser(ctx)
	k := p.key
	if !inProcess {
		var err error
		if k, err = s.keyByValue(ctx, bearer(r)); err != nil {
			return k, err
		}
	}
	if !inProcess && k.ID == "" || k.Kind == apikey.KindPublishable {
		return k, &eventError{status: http.StatusUnauthorized, message: domain.MsgInvalidAPIKey}
	}
	if !permitted(k, resAnalytics, http.MethodGet) {
		return k, &eventError{status: http.StatusForbidden, message: domain.MsgInsufficientPermissions}
	}
	if k.ProjectID == "" {
		return k, &eventError{status: http.StatusForbidden, message: msgKeyNotBound}
	}
	return k, nil
}

// radarRange reads start and end (ISO 8601; a date alone is its whole
// day for end); required unless optional.
func radarRange(r *http.Request, projectID string, optional bool) (queries.RadarRange, error) {
	q := r.URL.Query()
	rr := queries.RadarRange{ProjectID: projectID, Currency: strings.ToLower(strings.TrimSpace(q.Get("currency")))}
	for _, name := range []string{"start", "end"} {
		v := strings.TrimSpace(q.Get(name))
		if v == "" {
			if optional {
				continue
			}
			return rr, &eventError{status: http.StatusBadRequest, message: "Missing required parameter: " + name}
		}
		t, err := parseInstant(v, name == "end")
		if err != nil {
			return rr, &eventError{status: http.StatusBadRequest, message: "Invalid " + name + ": expected an ISO 8601 date or timestamp"}
		}
		if name == "start" {
			rr.Start = t
		} else {
			rr.End = t
		}
	}
	if !rr.Start.IsZero() && !rr.End.IsZero() && rr.End.Before(rr.Start) {
		return rr, &eventError{status: http.StatusBadRequest, message: "end must not be before start"}
	}
	return rr, nil
}

// parseInstant reads a timestamp as the rest of the API does (ParseTime),
// years 1 to 9999; a bare date as an end is its last millisecond.
func parseInstant(v string, end bool) (time.Time, error) {
	t, err := ParseTime(v)
	if err != nil {
		return t, err
	}
	if t.Year() < 1 || t.Year() > 9999 {
		return time.Time{}, fmt.Errorf("year %d out of range", t.Year())
	}
	if end && len(strings.TrimSpace(v)) == len(time.DateOnly) {
		t = t.Add(24*time.Hour - time.Millisecond)
	}
	return t, nil
}

// radarLimit reads limit: a positive integer, def when absent, at most
// max.
func radarLimit(r *http.Request, def, max int) (int, error) {
	v := strings.TrimSpace(r.URL.Query().Get("limit"))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, &eventError{status: http.StatusBadRequest, message: "limit must be a positive integer"}
	}
	return min(n, max), nil
}

// serveRadar runs a report: key, then f; reports wait until the Radar
// projection has applied what was collected before (reads follow writes).
func (s *Server) serveRadar(f func(ctx context.Context, k queries.APIKey, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		k, err := s.radarKey(ctx, r)
		if err != nil {
			s.writeEventError(w, r, err)
			return
		}
		s.barrier(ctx, s.radarWM)
		out, err := f(ctx, k, r)
		if err != nil {
			s.writeEventError(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, out)
	}
}

func (s *Server) radarOverview(ctx context.Context, k queries.APIKey, r *http.Request) (any, error) {
	rr, err := radarRange(r, k.ProjectID, false)
	if err != nil {
		return nil, err
	}
	o, err := s.q.Radar.Overview(ctx, rr)
	return map[string]any{"data": o}, err
}

func (s *Server) radarBreakdowns(ctx context.Context, k queries.APIKey, r *http.Request) (any, error) {
	rr, err := radarRange(r, k.ProjectID, false)
	if err != nil {
		return nil, err
	}
	limit, err := radarLimit(r, radarDefaultLimit, radarMaxLimit)
	if err != nil {
		return nil, err
	}
	b, err := s.q.Radar.Breakdowns(ctx, rr, limit)
	if err != nil {
		return nil, err
	}
	data := map[string]any{}
	if len(b.Pages) > 0 {
		data["pages"] = map[string]any{"top": b.Pages}
	}
	if len(b.Sources) > 0 {
		data["sources"] = map[string]any{"referrer": b.Sources}
	}
	if len(b.Countries) > 0 {
		data["locations"] = map[string]any{"countries": b.Countries}
	}
	if len(b.Browsers) > 0 || len(b.OS) > 0 {
		devices := map[string]any{}
		if len(b.Browsers) > 0 {
			devices["browsers"] = b.Browsers
		}
		if len(b.OS) > 0 {
			devices["os"] = b.OS
		}
		data["devices"] = devices
	}
	if len(b.Events) > 0 {
		data["events"] = b.Events
	}
	if len(b.Hostnames) > 0 {
		data["hostnames"] = b.Hostnames
	}
	return map[string]any{"data": data}, nil
}

func (s *Server) radarCustomEvents(ctx context.Context, k queries.APIKey, r *http.Request) (any, error) {
	rr, err := radarRange(r, k.ProjectID, true)
	if err != nil {
		return nil, err
	}
	limit, err := radarLimit(r, radarDefaultLimit, radarMaxEventsLimit)
	if err != nil {
		return nil, err
	}
	ev, err := s.q.Radar.CustomEvents(ctx, rr, limit)
	if ev == nil {
		ev = []queries.RadarEventStat{}
	}
	return map[string]any{"data": ev, "limit": limit}, err
}

func (s *Server) radarPeople(ctx context.Context, k queries.APIKey, r *http.Request) (any, error) {
	rr, err := radarRange(r, k.ProjectID, false)
	if err != nil {
		return nil, err
	}
	limit, err := radarLimit(r, radarDefaultLimit, radarMaxEventsLimit)
	if err != nil {
		return nil, err
	}
	page, err := s.q.Radar.People(ctx, rr, limit, r.URL.Query().Get("cursor"))
	if err != nil && err.Error() == msgInvalidCursor {
		return nil, &eventError{status: http.StatusBadRequest, message: msgInvalidCursor}
	}
	return page, err
}

func (s *Server) radarPersonDetails(ctx context.Context, k queries.APIKey, r *http.Request) (any, error) {
	id := strings.TrimSpace(r.URL.Query().Get("visitorId"))
	if id == "" {
		return nil, &eventError{status: http.StatusBadRequest, message: "Missing required parameter: visitorId"}
	}
	rr, err := radarRange(r, k.ProjectID, false)
	if err != nil {
		return nil, err
	}
	d, ok, err := s.q.Radar.Visitor(ctx, rr, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &eventError{status: http.StatusNotFound, message: msgVisitorNotFound}
	}
	return map[string]any{"data": d}, nil
}

// joinTTL is how long a tracking id's join is reused: a link's code or a
// project's workspace changing shows in new visits' source after it.
const joinTTL = 5 * time.Minute

// maxJoins bounds the joins kept (about 200 bytes each).
const maxJoins = 1 << 16

type joinKey struct{ project, tid string }

type joined struct {
	workspaceID, clickID, linkID, source string
	until                                time.Time
}

// joinCache is a bounded map of recent joins; when full, an arbitrary
// entry makes room.
type joinCache struct {
	mu sync.Mutex
	m  map[joinKey]joined
}

func (c *joinCache) get(k joinKey, now time.Time) (joined, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.m[k]
	if ok && !now.Before(j.until) {
		delete(c.m, k)
		ok = false
	}
	return j, ok
}

func (c *joinCache) put(k joinKey, j joined) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[joinKey]joined{}
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= maxJoins {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[k] = j
}
