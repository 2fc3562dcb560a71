package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"
)

// Radar: a project's web analytics and one visitor's sessions, read
// through the interface's Radar reports as the user bound to the
// project.

func (d *Dashboard) radarIndex(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	items, res := d.collection(r.Context(), c, "/v1/projects?page_size=100")
	if !res.ok() {
		d.failed(w, r, c, res)
		return
	}
	d.render(w, r, c, http.StatusOK, "radarindex", "Radar", map[string]any{"Items": items})
}

// radarKey returns the page's context acting as the session's user bound
// to the project of the path, once the user has read the project (a
// member of its workspace); else it has answered the page.
func (d *Dashboard) radarKey(w http.ResponseWriter, r *http.Request, c *dashCtx) (*dashCtx, map[string]any, bool) {
	pid := mux.Vars(r)["project_id"]
	proj, ok := d.getObject(w, r, c, "/v1/projects/"+url.PathEscape(pid))
	if !ok {
		return nil, nil, false
	}
	k := *c
	k.as.ProjectID = pid
	return &k, proj, true
}

// radarAsk calls one of the interface's Radar reports
// (/api/v1/radar/<report>) as k over [from, to] with the extra query
// string, and decodes its answer (nil when it failed).
func (d *Dashboard) radarAsk(ctx context.Context, k *dashCtx, report string, from, to time.Time, extra string) (map[string]any, apiResult) {
	res := d.call(ctx, k, http.MethodGet, "/api/v1/radar/"+report+"?start="+url.QueryEscape(from.Format(time.RFC3339))+
		"&end="+url.QueryEscape(to.Format(time.RFC3339))+extra, nil)
	if !res.ok() {
		return nil, res
	}
	return res.object(), res
}

func (d *Dashboard) radarPeriod(r *http.Request) (days int, start, end time.Time) {
	days = 30
	if r.URL.Query().Get("period") == "7d" {
		days = 7
	}
	end = d.clock.Now().UTC()
	start = time.Date(end.Year(), end.Month(), end.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -(days - 1))
	return days, start, end
}

// radarPage is a project's Radar. The user may read it when they may read
// the project (a member of its workspace); the reads are the interface's
// Radar reads, as a key bound to the project.
func (d *Dashboard) radarPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	k, proj, ok := d.radarKey(w, r, c)
	if !ok {
		return
	}
	days, start, end := d.radarPeriod(r)
	ctx := r.Context()
	overview, res := d.radarAsk(ctx, k, "overview", start, end, "")
	if !res.ok() {
		d.failed(w, r, c, res)
		return
	}
	breakdowns, _ := d.radarAsk(ctx, k, "breakdowns", start, end, "&limit=10")
	people, _ := d.radarAsk(ctx, k, "people", start, end, "&limit=20")
	// The chart: one overview per day.
	var points []any
	for i := 0; i < days; i++ {
		from := start.AddDate(0, 0, i)
		o, res := d.radarAsk(ctx, k, "overview", from, from.Add(24*time.Hour-time.Millisecond), "")
		if !res.ok() {
			break
		}
		data, _ := o["data"].(map[string]any)
		points = append(points, map[string]any{"day": from.Format("2006-01-02"), "people": data["people"], "pageviews": data["pageviews"]})
	}
	data := map[string]any{
		"Project": proj, "ProjectID": k.as.ProjectID, "Days": days,
		"Overview":   overview["data"],
		"Breakdowns": breakdowns["data"],
		"People":     people["data"],
		"Chart":      dailyChart(points, end, days, "day", []series{{"people", "people"}, {"pageviews", "pageviews"}}),
	}
	d.render(w, r, c, http.StatusOK, "radar", "Radar", data)
}

// radarVisitor is one person of a project's Radar: their sessions.
func (d *Dashboard) radarVisitor(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	k, proj, ok := d.radarKey(w, r, c)
	if !ok {
		return
	}
	_, start, end := d.radarPeriod(r)
	start = start.AddDate(0, 0, -60) // a person's history: 90 days
	o, res := d.radarAsk(r.Context(), k, "people/details", start, end, "&visitorId="+url.QueryEscape(mux.Vars(r)["visitor_id"]))
	if !res.ok() {
		d.failed(w, r, c, res)
		return
	}
	d.render(w, r, c, http.StatusOK, "visitor", "Visitor", map[string]any{"Project": proj, "ProjectID": k.as.ProjectID, "V": o["data"]})
}
