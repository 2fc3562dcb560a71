package api

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/queries"
)

// statsRange is the UTC days a statistics request covers.
type statsRange struct {
	from, to time.Time // dates at 00:00 UTC, inclusive
}

const maxRangeDays = 30

func day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// parseRange applies the spec's date rules to start_date, end_date and
// max_days.
func parseRange(r *http.Request, now time.Time, daily bool) (statsRange, error) {
	q := r.URL.Query()
	var start, end time.Time
	var err error
	hasStart, hasEnd := q.Get("start_date") != "", q.Get("end_date") != ""
	if hasStart {
		if start, err = parseQueryTime(q.Get("start_date")); err != nil {
			return statsRange{}, domain.Invalid("Invalid start_date: use ISO 8601 (YYYY-MM-DD or a date and time)")
		}
	}
	if hasEnd {
		if end, err = parseQueryTime(q.Get("end_date")); err != nil {
			return statsRange{}, domain.Invalid("Invalid end_date: use ISO 8601 (YYYY-MM-DD or a date and time)")
		}
	}
	maxDays := 0
	if v := q.Get("max_days"); v != "" && daily {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxRangeDays {
			return statsRange{}, domain.Invalid("max_days must be an integer from 1 to 30")
		}
		maxDays = n
	}
	switch {
	case hasStart && !hasEnd:
		end = start.AddDate(0, 0, maxRangeDays)
	case !hasStart && hasEnd:
		start = end.AddDate(0, 0, -maxRangeDays)
	case !hasStart && !hasEnd:
		end = now
		start = day(now).AddDate(0, 0, -maxRangeDays)
	}
	if start.After(end) {
		return statsRange{}, domain.Invalid("start_date cannot be after end_date")
	}
	if days := int(end.Sub(start) / (24 * time.Hour)); days > maxRangeDays {
		return statsRange{}, domain.Invalid("Date range cannot exceed 30 days. Current range: %d days", days)
	}
	rg := statsRange{from: day(start), to: day(end)}
	if maxDays > 0 {
		if hasStart {
			if lim := rg.from.AddDate(0, 0, maxDays-1); lim.Before(rg.to) {
				rg.to = lim
			}
		} else if lim := rg.to.AddDate(0, 0, -(maxDays - 1)); lim.After(rg.from) {
			rg.from = lim
		}
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
		"last_updated":        formatTime(d.LastUpdated),
		"created_at":          formatTime(d.FirstClick),
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

func top(m map[string]int64, n int) []nameCount {
	out := make([]nameCount, 0, len(m))
	for k, v := range m {
		if k != "" && v > 0 {
			out = append(out, nameCount{k, v})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func summary(days []queries.DailyStats, rg statsRange) map[string]any {
	var total, qr int64
	countries, devices, browsers := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for _, d := range days {
		total += d.TotalClicks
		qr += d.QRScans
		for k, v := range d.Country {
			countries[k] += v
		}
		for k, v := range d.DeviceType {
			devices[k] += v
		}
		for k, v := range d.Browser {
			browsers[k] += v
		}
	}
	return map[string]any{
		"total_clicks":  total,
		"top_countries": top(countries, 10),
		"top_devices":   top(devices, 10),
		"top_browsers":  top(browsers, 10),
		"qr_code_usage": qr,
		"date_range":    map[string]string{"start": rg.from.Format(time.DateOnly), "end": rg.to.Format(time.DateOnly)},
	}
}

// statsLink checks access to a link's statistics.
func (s *Server) statsLink(ctx context.Context, p principal, id string) (queries.Link, error) {
	l, ok, err := s.rm.Link(ctx, id)
	if err != nil {
		return l, err
	}
	if !ok {
		return l, domain.NotFound("Link not found")
	}
	if !l.HasPublicStat {
		role, err := s.rm.Role(ctx, l.WorkspaceID, p.key.UserID)
		if err != nil {
			return l, err
		}
		if role == "" {
			return l, domain.Forbidden("Access denied to this link")
		}
	}
	clicked, err := s.stats.LinkClicked(ctx, id)
	if err != nil {
		return l, err
	}
	if !clicked {
		return l, domain.NotFound("No stats found for this link")
	}
	return l, nil
}

func (s *Server) linkStats(r *http.Request, p principal, daily bool) ([]queries.DailyStats, statsRange, string, error) {
	rg, err := parseRange(r, s.now(), daily)
	if err != nil {
		return nil, rg, "", err
	}
	s.barrier(r.Context(), s.statsWM)
	s.barrier(r.Context(), s.core)
	id := mux.Vars(r)["link_id"]
	if _, err := s.statsLink(r.Context(), p, id); err != nil {
		return nil, rg, "", err
	}
	days, err := s.stats.LinkDaily(r.Context(), id, rg.from, rg.to)
	return days, rg, id, err
}

func (s *Server) linkDailyStats(w http.ResponseWriter, r *http.Request, p principal) error {
	days, _, _, err := s.linkStats(r, p, true)
	if err != nil {
		return err
	}
	out := make([]any, 0, len(days))
	for _, d := range days {
		out = append(out, renderDaily(d))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) linkSummary(w http.ResponseWriter, r *http.Request, p principal) error {
	days, rg, id, err := s.linkStats(r, p, false)
	if err != nil {
		return err
	}
	body := summary(days, rg)
	body["link_id"] = id
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) workspaceStats(r *http.Request, p principal, wsID string, daily bool) ([]queries.DailyStats, statsRange, error) {
	rg, err := parseRange(r, s.now(), daily)
	if err != nil {
		return nil, rg, err
	}
	s.barrier(r.Context(), s.statsWM)
	s.barrier(r.Context(), s.core)
	if wsID == "" {
		ws, ok, err := s.rm.DefaultWorkspace(r.Context(), p.key.UserID)
		if err != nil || !ok {
			return nil, rg, err
		}
		wsID = ws.ID
	} else if _, _, err := s.memberOf(r, p, wsID); err != nil {
		return nil, rg, err
	}
	days, err := s.stats.WorkspaceDaily(r.Context(), wsID, rg.from, rg.to)
	return days, rg, err
}

func (s *Server) writeWorkspaceDaily(w http.ResponseWriter, r *http.Request, p principal, wsID string) error {
	days, _, err := s.workspaceStats(r, p, wsID, true)
	if err != nil {
		return err
	}
	out := make([]any, 0, len(days))
	for _, d := range days {
		out = append(out, renderDaily(d))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) writeWorkspaceSummary(w http.ResponseWriter, r *http.Request, p principal, wsID string) error {
	days, rg, err := s.workspaceStats(r, p, wsID, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, summary(days, rg))
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
