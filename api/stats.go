package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/queries"
)

// dateRange reads start_date, end_date and, for daily records, max_days;
// the date rules themselves are the queries' (queries.DateRange).
func dateRange(r *http.Request, daily bool) (queries.DateRange, error) {
	q := r.URL.Query()
	var rg queries.DateRange
	if v := q.Get("start_date"); v != "" {
		t, err := parseQueryTime(v)
		if err != nil {
			return rg, domain.Invalid("Invalid start_date: use ISO 8601 (YYYY-MM-DD or a date and time)")
		}
		rg.Start = &t
	}
	if v := q.Get("end_date"); v != "" {
		t, err := parseQueryTime(v)
		if err != nil {
			return rg, domain.Invalid("Invalid end_date: use ISO 8601 (YYYY-MM-DD or a date and time)")
		}
		rg.End = &t
	}
	if v := q.Get("max_days"); v != "" && daily {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > queries.MaxRangeDays {
			return rg, domain.Invalid("max_days must be an integer from 1 to 30")
		}
		rg.MaxDays = n
	}
	return rg, nil
}

// parseQueryTime reads a date or timestamp given in a query string. A '+'
// written unencoded in a query string arrives as a space, so a timestamp
// with a positive UTC offset sent as "...T10:00:00+02:00" reaches the server
// as "...T10:00:00 02:00": that space is read as the '+' it was.
func parseQueryTime(s string) (time.Time, error) {
	t, err := ParseTime(s)
	if err == nil {
		return t, nil
	}
	s = strings.TrimSpace(s)
	i := strings.LastIndexByte(s, ' ')
	if i < len("2006-01-02T15:04") || !isOffset(s[i+1:]) {
		return t, err
	}
	return ParseTime(s[:i] + "+" + s[i+1:])
}

// isOffset reports whether s is the digits of a UTC offset: "hh:mm".
func isOffset(s string) bool {
	return len(s) == 5 && s[2] == ':' && isDigits(s[:2]) && isDigits(s[3:])
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

var recordNamespace = uuid.MustParse("5b3c3d2e-9f0e-4c7a-8d0b-6a1f2e3d4c5b")

func counts(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

func renderDaily(d queries.DailyStats) map[string]any {
	scope := d.LinkID
	if scope == "" {
		scope = "workspace:" + d.WorkspaceID
	}
	devices := map[string]int64{"mobile": 0, "desktop": 0, "tablet": 0}
	for k, v := range d.DeviceType {
		devices[k] += v
	}
	fromApp := map[string]int64{"true": 0, "false": 0}
	for k, v := range d.FromApp {
		fromApp[k] += v
	}
	m := map[string]any{
		"id":                  uuid.NewSHA1(recordNamespace, []byte(scope+"/"+d.Date)).String(),
		"click_date":          d.Date,
		"last_updated":        formatTime(orDay(d.LastUpdated, d.Date)),
		"created_at":          formatTime(orDay(d.FirstClick, d.Date)),
		"total_clicks":        d.TotalClicks,
		"unique_visitors":     d.UniqueVisitors,
		"scans_only":          d.QRScans,
		"clicks_only":         d.DirectClicks,
		"chrome_clicks":       d.ChromeClicks,
		"ios_clicks":          d.IOSClicks,
		"android_clicks":      d.AndroidClicks,
		"os_stats":            counts(d.OS),
		"city_stats":          counts(d.City),
		"os_version_stats":    counts(d.OSVersion),
		"lang_stats":          counts(d.Language),
		"browser_stats":       counts(d.Browser),
		"country_stats":       counts(d.Country),
		"device_and_os_stats": counts(d.DeviceAndOS),
		"app_stats":           counts(d.App),
		"device_type_stats":   counts(d.DeviceType),
		"continent_stats":     counts(d.Continent),
		"device_stats":        devices,
		"from_app_stats":      fromApp,
		"referrer_stats":      counts(d.Referrer),
		"leads":               d.Leads,
		"sales":               d.Sales,
		"revenue":             money(d.Revenue),
		"workspace_id":        d.WorkspaceID,
	}
	if d.LinkID != "" {
		m["link_id"] = d.LinkID
	}
	return m
}

type nameCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

func renderTop(top []queries.NameCount) []nameCount {
	out := make([]nameCount, len(top))
	for i, e := range top {
		out[i] = nameCount{e.Name, e.Count}
	}
	return out
}

// renderSummary is the JSON of a summary (spec 2.8).
func renderSummary(sum queries.Summary) map[string]any {
	return map[string]any{
		"total_clicks":  sum.TotalClicks,
		"top_countries": renderTop(sum.TopCountries),
		"top_devices":   renderTop(sum.TopDevices),
		"top_browsers":  renderTop(sum.TopBrowsers),
		"qr_code_usage": sum.QRScans,
		"leads":         sum.Leads,
		"sales":         sum.Sales,
		"revenue":       money(sum.Revenue),
		"date_range":    map[string]string{"start": sum.Days.From.Format(time.DateOnly), "end": sum.Days.To.Format(time.DateOnly)},
	}
}

func renderDailies(days []queries.DailyStats) []any {
	out := make([]any, 0, len(days))
	for _, d := range days {
		out = append(out, renderDaily(d))
	}
	return out
}

// statsBarrier makes a statistics read show every click answered and every
// write acknowledged before it.
func (s *Server) statsBarrier(r *http.Request) {
	s.barrier(r.Context(), s.statsWM, s.core)
}

func (s *Server) linkDailyStats(w http.ResponseWriter, r *http.Request, p principal) error {
	rg, err := dateRange(r, true)
	if err != nil {
		return err
	}
	s.statsBarrier(r)
	days, err := s.q.DailyLinkStats.Handle(r.Context(), queries.DailyLinkStats{LinkID: mux.Vars(r)["link_id"], UserID: p.key.UserID, Range: rg})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderDailies(days))
	return nil
}

func (s *Server) linkSummary(w http.ResponseWriter, r *http.Request, p principal) error {
	rg, err := dateRange(r, false)
	if err != nil {
		return err
	}
	s.statsBarrier(r)
	id := mux.Vars(r)["link_id"]
	sum, err := s.q.LinkSummary.Handle(r.Context(), queries.LinkSummary{LinkID: id, UserID: p.key.UserID, Range: rg})
	if err != nil {
		return err
	}
	body := renderSummary(sum)
	body["link_id"] = id
	writeJSON(w, http.StatusOK, body)
	return nil
}

// writeWorkspaceDaily answers the daily records of a workspace ("" for the
// caller's default workspace).
func (s *Server) writeWorkspaceDaily(w http.ResponseWriter, r *http.Request, p principal, wsID string) error {
	rg, err := dateRange(r, true)
	if err != nil {
		return err
	}
	s.statsBarrier(r)
	days, err := s.q.DailyWorkspaceStats.Handle(r.Context(), queries.DailyWorkspaceStats{WorkspaceID: wsID, UserID: p.key.UserID, Range: rg})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderDailies(days))
	return nil
}

func (s *Server) writeWorkspaceSummary(w http.ResponseWriter, r *http.Request, p principal, wsID string) error {
	rg, err := dateRange(r, false)
	if err != nil {
		return err
	}
	s.statsBarrier(r)
	sum, err := s.q.WorkspaceSummary.Handle(r.Context(), queries.WorkspaceSummary{WorkspaceID: wsID, UserID: p.key.UserID, Range: rg})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderSummary(sum))
	return nil
}

func (s *Server) workspaceDailyStats(w http.ResponseWriter, r *http.Request, p principal) error {
	return s.writeWorkspaceDaily(w, r, p, mux.Vars(r)["workspace_id"])
}

func (s *Server) workspaceSummary(w http.ResponseWriter, r *http.Request, p principal) error {
	return s.writeWorkspaceSummary(w, r, p, mux.Vars(r)["workspace_id"])
}

func (s *Server) myWorkspaceDailyStats(w http.ResponseWriter, r *http.Request, p principal) error {
	return s.writeWorkspaceDaily(w, r, p, "")
}

func (s *Server) myWorkspaceSummary(w http.ResponseWriter, r *http.Request, p principal) error {
	return s.writeWorkspaceSummary(w, r, p, "")
}

// orDay is t, or the start of the record's day for a day without clicks
// (only conversions).
func orDay(t time.Time, date string) time.Time {
	if !t.IsZero() {
		return t
	}
	d, _ := time.Parse(time.DateOnly, date)
	return d
}
