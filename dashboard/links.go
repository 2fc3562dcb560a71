package dashboard

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/internal/qrcode"
)

// The links: the list and its search, the builder, a link's page with
// its statistics, and QR codes.

const linksPageSize = 20

func (d *Dashboard) linksPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	q := r.URL.Query()
	params := url.Values{}
	for _, k := range []string{"workspace_id", "project_id", "archived"} {
		if v := q.Get(k); v != "" {
			params.Set(k, v)
		}
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	search := strings.TrimSpace(q.Get("search"))
	var items []any
	hasNext := false
	if search == "" {
		params.Set("page", strconv.Itoa(page))
		params.Set("page_size", strconv.Itoa(linksPageSize))
		res := d.call(r.Context(), c, "GET", "/v1/links?"+params.Encode(), nil)
		if !res.ok() {
			d.failed(w, r, c, res)
			return
		}
		o := res.object()
		items, _ = o["items"].([]any)
		hasNext, _ = o["has_next"].(bool)
	} else {
		// The interface has no search: the newest 1,000 links are read a
		// hundred at a time and matched by code, name and destination.
		needle := strings.ToLower(search)
		params.Set("page_size", "100")
		for p := 1; p <= 10; p++ {
			params.Set("page", strconv.Itoa(p))
			res := d.call(r.Context(), c, "GET", "/v1/links?"+params.Encode(), nil)
			if !res.ok() {
				d.failed(w, r, c, res)
				return
			}
			o := res.object()
			batch, _ := o["items"].([]any)
			for _, it := range batch {
				l, _ := it.(map[string]any)
				hay := strings.ToLower(fmt.Sprint(l["code"], " ", l["name"], " ", l["original_url"], " ", l["short_url"]))
				if strings.Contains(hay, needle) {
					items = append(items, it)
				}
			}
			if more, _ := o["has_next"].(bool); !more {
				break
			}
		}
		// Page through the matches.
		from := (page - 1) * linksPageSize
		if from > len(items) {
			from = len(items)
		}
		to := min(from+linksPageSize, len(items))
		hasNext = to < len(items)
		items = items[from:to]
	}
	data := d.options(r.Context(), c, "workspaces", "projects")
	data["Links"] = items
	data["Page"] = page
	data["HasNext"] = hasNext
	data["Query"] = map[string]string{"search": search, "workspace_id": q.Get("workspace_id"), "project_id": q.Get("project_id"), "archived": q.Get("archived")}
	pq := url.Values{}
	for k, v := range data["Query"].(map[string]string) {
		if v != "" {
			pq.Set(k, v)
		}
	}
	pq.Set("page", strconv.Itoa(page+1))
	data["NextURL"] = "/dashboard/links?" + pq.Encode()
	pq.Set("page", strconv.Itoa(page-1))
	data["PrevURL"] = "/dashboard/links?" + pq.Encode()
	d.render(w, r, c, http.StatusOK, "links", "Links", data)
}

// linkFields are the builder's fields, named as the interface's JSON.
var linkFields = []string{"original_url", "custom_code", "name", "description", "workspace_id", "project_id", "domain_id",
	"pixel_id", "utm_template_id", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_name",
	"referrer", "password", "password_description", "expiration_date", "expiration_click_count", "app", "app_logo",
	"android_link", "ios_link", "windows_link", "macos_link", "whatsapp_message", "excluded_countries",
	"metadata.title", "metadata.description", "metadata.image", "metadata.favicon",
	"qr_code_options.color", "qr_code_options.background_color", "has_public_stat", "enable_conversion_tracking"}

func (d *Dashboard) linkBuilder(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.renderBuilder(w, r, c, http.StatusOK, map[string]string{"qr_code_options.color": "#000000", "qr_code_options.background_color": "#FFFFFF"}, "")
}

func (d *Dashboard) renderBuilder(w http.ResponseWriter, r *http.Request, c *dashCtx, status int, values map[string]string, msg string) {
	data := d.options(r.Context(), c, "workspaces", "projects", "domains", "utm-templates", "pixels")
	data["V"] = values
	data["Error"] = msg
	data["ShortBase"] = d.cfg.PublicScheme + "://" + d.cfg.DefaultDomain + "/"
	d.render(w, r, c, status, "builder", "New link", data)
}

// linkBody turns the builder's form into the body of POST /v1/links.
func linkFormBody(v map[string]string) (map[string]any, error) {
	body := map[string]any{}
	nested := func(obj, key, val string) {
		m, _ := body[obj].(map[string]any)
		if m == nil {
			m = map[string]any{}
			body[obj] = m
		}
		m[key] = val
	}
	for _, k := range linkFields {
		val := strings.TrimSpace(v[k])
		if k == "password" {
			val = v[k]
		}
		if val == "" {
			continue
		}
		switch k {
		case "has_public_stat", "enable_conversion_tracking":
			body[k] = true
		case "expiration_click_count":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("expiration_click_count must be a whole number")
			}
			body[k] = n
		case "expiration_date":
			t, err := time.ParseInLocation("2006-01-02T15:04", val, time.UTC)
			if err != nil {
				t, err = api.ParseTime(val)
				if err != nil {
					return nil, fmt.Errorf("expiration_date must be a date and time")
				}
			}
			body[k] = t.UTC().Format(time.RFC3339)
		case "excluded_countries":
			var list []map[string]string
			for _, code := range strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ' ' }) {
				list = append(list, map[string]string{"code": strings.ToUpper(code)})
			}
			body[k] = list
		default:
			if obj, key, ok := strings.Cut(k, "."); ok {
				if obj == "qr_code_options" && (strings.EqualFold(val, "#000000") && key == "color" || strings.EqualFold(val, "#FFFFFF") && key == "background_color") {
					continue // the defaults
				}
				nested(obj, key, val)
				continue
			}
			body[k] = val
		}
	}
	return body, nil
}

func (d *Dashboard) createLink(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	values := form(r, linkFields...)
	body, err := linkFormBody(values)
	if err != nil {
		d.renderBuilder(w, r, c, http.StatusBadRequest, values, err.Error())
		return
	}
	res := d.call(r.Context(), c, "POST", "/v1/links", body)
	if !res.ok() {
		d.renderBuilder(w, r, c, res.Status, values, res.detail())
		return
	}
	id, _ := res.object()["id"].(string)
	http.Redirect(w, r, "/dashboard/links/"+url.PathEscape(id)+"?flash="+url.QueryEscape("Link created"), http.StatusSeeOther)
}

func (d *Dashboard) archiveLink(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	id := mux.Vars(r)["link_id"]
	archive := r.PostFormValue("is_archived") == "true"
	res := d.call(r.Context(), c, "PUT", "/v1/links/"+url.PathEscape(id), map[string]any{"is_archived": archive})
	if !res.ok() {
		d.failed(w, r, c, res)
		return
	}
	msg := "Link restored"
	if archive {
		msg = "Link archived"
	}
	http.Redirect(w, r, "/dashboard/links/"+url.PathEscape(id)+"?flash="+url.QueryEscape(msg), http.StatusSeeOther)
}

// named is a breakdown row.
type named struct {
	Name  string
	Count int64
	Share float64 // of the largest, 0..1
}

// sumCounts adds the per-day maps of one statistic over days.
func sumCounts(days []any, field string) []named {
	tot := map[string]int64{}
	for _, it := range days {
		day, _ := it.(map[string]any)
		m, _ := day[field].(map[string]any)
		for k, v := range m {
			tot[k] += int64(number(v))
		}
	}
	return ranked(tot, 10)
}

func ranked(tot map[string]int64, limit int) []named {
	out := make([]named, 0, len(tot))
	for k, v := range tot {
		if v > 0 {
			out = append(out, named{Name: k, Count: v})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	if len(out) > limit {
		out = out[:limit]
	}
	if len(out) > 0 {
		for i := range out {
			out[i].Share = float64(out[i].Count) / float64(out[0].Count)
		}
	}
	return out
}

func (d *Dashboard) linkPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	id := url.PathEscape(mux.Vars(r)["link_id"])
	l, ok := d.getObject(w, r, c, "/v1/links/"+id)
	if !ok {
		return
	}
	data := map[string]any{"Link": l}
	if r.URL.Query().Get("flash") == "Link created" {
		data["Created"] = true
	}
	now := d.clock.Now().UTC()
	start := now.AddDate(0, 0, -29).Format("2006-01-02")
	days := d.call(r.Context(), c, "GET", "/v1/stats/links/"+id+"?start_date="+start+"&end_date="+now.Format("2006-01-02"), nil).list()
	summary := d.call(r.Context(), c, "GET", "/v1/stats/links/"+id+"/summary?start_date="+start+"&end_date="+now.Format("2006-01-02"), nil).object()
	data["Summary"] = summary
	data["Chart"] = dailyChart(days, now, 30, "click_date", []series{{"clicks", "total_clicks"}, {"leads", "leads"}, {"sales", "sales"}})
	data["Breakdowns"] = []breakdown{
		{"Countries", "country", sumCounts(days, "country_stats")},
		{"Devices", "device", sumCounts(days, "device_type_stats")},
		{"Browsers", "browser", sumCounts(days, "browser_stats")},
		{"Operating systems", "os", sumCounts(days, "os_stats")},
		{"Referrers", "referrer", sumCounts(days, "referrer_stats")},
	}
	d.render(w, r, c, http.StatusOK, "link", "Link", data)
}

type breakdown struct {
	Title, Key string
	Rows       []named
}

func (d *Dashboard) linkQR(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	id := mux.Vars(r)["link_id"]
	format := "png"
	if r.URL.Query().Get("format") == "svg" {
		format = "svg"
	}
	res := d.call(r.Context(), c, "GET", "/v1/links/"+url.PathEscape(id)+"/qr?format="+format, nil)
	if !res.ok() {
		d.failed(w, r, c, res)
		return
	}
	ct := "image/png"
	if format == "svg" {
		ct = "image/svg+xml"
	}
	w.Header().Set("Content-Type", ct)
	if r.URL.Query().Get("download") != "" {
		w.Header().Set("Content-Disposition", `attachment; filename="qr-`+safeFileName(id)+`.`+format+`"`)
	}
	_, _ = w.Write(res.Body)
}

func safeFileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// qrPreview draws the QR code of the text given, for the builder's live
// preview (no logo: nothing is fetched).
func (d *Dashboard) qrPreview(w http.ResponseWriter, r *http.Request, _ *dashCtx) {
	q := r.URL.Query()
	text := q.Get("text")
	if text == "" || len(text) > 2048 {
		http.Error(w, "text is 1 to 2048 bytes", http.StatusBadRequest)
		return
	}
	o := qrcode.Options{Size: 200, Color: q.Get("color"), BackgroundColor: q.Get("background_color")}
	if qrcode.Validate(o) != nil {
		o.Color, o.BackgroundColor = "", ""
	}
	var buf bytes.Buffer
	if err := qrcode.SVG(&buf, text, o, ""); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "private, max-age=300")
	_, _ = w.Write(buf.Bytes())
}
