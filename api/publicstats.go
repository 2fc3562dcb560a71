package api

import (
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/queries"
)

// Public statistics (has_public_stat): GET /v1/links/code/{code}/stats
// answers a link's summary and daily records without a key, and /{code}+
// shows them to people. Neither counts a click. Both count against one
// limit per client address, and answer a link without public statistics
// exactly as an unknown code (docs/decisions.md, "Public statistics").

// Limits of the public statistics, per client address (an IPv4 address,
// an IPv6 /64).
const (
	PublicStatsLimit  = 60
	PublicStatsWindow = time.Minute
)

// isPublicStatsPath reports whether a code path ("/<code>") is the public
// statistics page of a code, "/<code>+" (a '+' is never part of a code).
func isPublicStatsPath(path string) bool {
	return len(path) > 2 && strings.HasSuffix(path, "+")
}

// publicStatsAllowed counts a request against its client's limit, sets the
// rate-limit headers, and reports whether it may be answered.
func (s *Server) publicStatsAllowed(w http.ResponseWriter, r *http.Request) bool {
	if s.limiter == nil || s.redirect == nil {
		return true
	}
	now := s.clock.Now()
	d := s.limiter.Allow(r.Context(), "public-stats|"+s.redirect.enricher.AddressKey(r, now), PublicStatsLimit, PublicStatsWindow, now)
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(d.Remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(d.Reset.Unix(), 10))
	if d.Allowed {
		return true
	}
	h.Set("Retry-After", retryAfter(d.RetryAfter))
	return false
}

// readPublicStats reads the statistics of the code on the request's host.
func (s *Server) readPublicStats(r *http.Request, code string) (queries.PublicStats, error) {
	if s.redirect == nil {
		return queries.PublicStats{}, domain.NotFound("Link not found")
	}
	rg, err := dateRange(r, true)
	if err != nil {
		return queries.PublicStats{}, err
	}
	s.statsBarrier(r)
	return s.q.PublicLinkStats.Handle(r.Context(), queries.PublicLinkStats{Host: r.Host, Code: code, Range: rg})
}

// publicLinkStats answers GET /v1/links/code/{code}/stats.
func (s *Server) publicLinkStats(w http.ResponseWriter, r *http.Request) {
	if !s.publicStatsAllowed(w, r) {
		writeDetail(w, http.StatusTooManyRequests, "Rate limit exceeded")
		return
	}
	st, err := s.readPublicStats(r, mux.Vars(r)["code"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	summary := renderSummary(st.Summary)
	summary["link_id"] = st.Link.ID
	// Conversions (an extension of the keyed statistics) are the owner's
	// business figures: public statistics are clicks only.
	for _, k := range []string{"leads", "sales", "revenue"} {
		delete(summary, k)
	}
	daily := make([]any, 0, len(st.Daily))
	for _, d := range st.Daily {
		rec := renderDaily(d)
		for _, k := range []string{"leads", "sales", "revenue", "workspace_id"} {
			delete(rec, k)
		}
		daily = append(daily, rec)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"link_id":   st.Link.ID,
		"code":      st.Link.Code,
		"short_url": s.shortURL(r.Context(), *st.Link, nil),
		"summary":   summary,
		"daily":     daily,
	})
}

// publicStatsPage answers /{code}+: the public statistics as a page.
func (s *Server) publicStatsPage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		statsPage(w, http.StatusMethodNotAllowed, "invalid", "This page is only read (GET).")
		return
	}
	if !s.publicStatsAllowed(w, r) {
		statsPage(w, http.StatusTooManyRequests, "limited", nil)
		return
	}
	code := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "+")
	st, err := s.readPublicStats(r, code)
	if err != nil {
		switch domain.KindOf(err) {
		case domain.KindNotFound:
			page(w, http.StatusNotFound, pageNotFound, nil)
		case domain.KindInvalid:
			statsPage(w, http.StatusBadRequest, "invalid", err.Error())
		default:
			s.log.Error("public statistics failed", "err", err)
			page(w, http.StatusInternalServerError, pageError, nil)
		}
		return
	}
	statsPage(w, http.StatusOK, "stats", s.statsView(r, st))
}

type statsView struct {
	ShortURL     string
	Title        string
	From, To     string
	Total, QR    int64
	Countries    []statsBar
	Devices      []statsBar
	Browsers     []statsBar
	Days         []statsDay
	MaxDayClicks int64
}

type statsBar struct {
	Name  string
	Count int64
	Pct   int // of the largest in its list, for the bar's width
}

type statsDay struct {
	Date           string
	Clicks, Unique int64
	Pct            int
}

func (s *Server) statsView(r *http.Request, st queries.PublicStats) statsView {
	v := statsView{
		ShortURL: s.shortURL(r.Context(), *st.Link, nil),
		Title:    st.Link.Name,
		From:     st.Summary.Days.From.Format("2 Jan 2006"),
		To:       st.Summary.Days.To.Format("2 Jan 2006"),
		Total:    st.Summary.TotalClicks,
		QR:       st.Summary.QRScans,
	}
	v.Countries = bars(st.Summary.TopCountries)
	v.Devices = bars(st.Summary.TopDevices)
	v.Browsers = bars(st.Summary.TopBrowsers)
	days := append([]queries.DailyStats(nil), st.Daily...)
	sort.Slice(days, func(i, j int) bool { return days[i].Date > days[j].Date })
	for _, d := range days {
		v.MaxDayClicks = max(v.MaxDayClicks, d.TotalClicks)
	}
	for _, d := range days {
		pct := 0
		if v.MaxDayClicks > 0 {
			pct = int(d.TotalClicks * 100 / v.MaxDayClicks)
		}
		v.Days = append(v.Days, statsDay{Date: d.Date, Clicks: d.TotalClicks, Unique: d.UniqueVisitors, Pct: pct})
	}
	return v
}

func bars(top []queries.NameCount) []statsBar {
	out := make([]statsBar, len(top))
	for i, e := range top {
		out[i] = statsBar{Name: e.Name, Count: e.Count}
		if top[0].Count > 0 {
			out[i].Pct = int(e.Count * 100 / top[0].Count)
		}
	}
	return out
}

func statsPage(w http.ResponseWriter, status int, name string, data any) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	_ = statsPages.ExecuteTemplate(w, name, data)
}

// statsPages show public statistics; html/template escapes what they show.
var statsPages = template.Must(template.New("stats").Parse(`
{{define "head"}}<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>{{.}}</title><style>body{font-family:system-ui,sans-serif;max-width:44rem;margin:6vh auto;padding:0 1rem;color:#222}h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.05rem;margin:1.6rem 0 .5rem}.sub{color:#666;margin:0}.big{display:flex;gap:2rem;margin:1.2rem 0}.big div{font-size:.9rem;color:#666}.big b{display:block;font-size:2rem;color:#222}table{width:100%;border-collapse:collapse;font-size:.95rem}td{padding:.25rem .4rem;border-bottom:1px solid #eee;vertical-align:middle}td.n{text-align:right;width:4rem;font-variant-numeric:tabular-nums}td.bar{width:45%}.b{height:.7rem;background:#2b5fd9;border-radius:.2rem;min-width:2px}.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(13rem,1fr));gap:0 1.5rem}.none{color:#888}</style></head><body>{{end}}
{{define "bars"}}{{if .}}<table>{{range .}}<tr><td>{{.Name}}</td><td class="bar"><div class="b" style="width:{{.Pct}}%"></div></td><td class="n">{{.Count}}</td></tr>{{end}}</table>{{else}}<p class="none">Nothing recorded.</p>{{end}}{{end}}
{{define "stats"}}{{template "head" (print "Statistics of " .ShortURL)}}
<h1>{{with .Title}}{{.}}{{else}}Link statistics{{end}}</h1><p class="sub" id="short">{{.ShortURL}}</p><p class="sub">{{.From}} to {{.To}} (UTC)</p>
<div class="big"><div><b id="total">{{.Total}}</b>clicks</div><div><b id="qr">{{.QR}}</b>QR scans</div></div>
<div class="grid"><section><h2>Countries</h2>{{template "bars" .Countries}}</section><section><h2>Devices</h2>{{template "bars" .Devices}}</section><section><h2>Browsers</h2>{{template "bars" .Browsers}}</section></div>
<h2>By day</h2>{{if .Days}}<table id="days"><tr><td><b>Date</b></td><td></td><td class="n"><b>Clicks</b></td><td class="n"><b>Visitors</b></td></tr>{{range .Days}}<tr><td>{{.Date}}</td><td class="bar"><div class="b" style="width:{{.Pct}}%"></div></td><td class="n">{{.Clicks}}</td><td class="n">{{.Unique}}</td></tr>{{end}}</table>{{else}}<p class="none">No clicks in this period.</p>{{end}}
<p class="sub" style="margin-top:2rem">Public statistics of this short link, shared by its owner.</p></body></html>{{end}}
{{define "invalid"}}{{template "head" "Invalid request"}}<h1>Invalid request</h1><p>{{.}}</p></body></html>{{end}}
{{define "limited"}}{{template "head" "Too many requests"}}<h1>Too many requests</h1><p>Wait a minute and try again.</p></body></html>{{end}}
`))
