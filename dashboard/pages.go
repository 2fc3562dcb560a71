package dashboard

import (
	"bytes"
	"context"
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

// The dashboard's pages: each reads and writes through d.call, the
// interface itself.

func (d *Dashboard) home(w http.ResponseWriter, r *http.Request, _ *dashCtx) {
	http.Redirect(w, r, "/dashboard/links", http.StatusSeeOther)
}

// options lists the workspaces, projects, domains, UTM templates and
// pixels the user can choose from in forms and filters.
func (d *Dashboard) options(ctx context.Context, c *dashCtx, which ...string) map[string]any {
	out := map[string]any{}
	for _, w := range which {
		switch w {
		case "workspaces":
			out["Workspaces"] = d.call(ctx, c, "GET", "/v1/workspaces", nil).list()
		default:
			res := d.call(ctx, c, "GET", "/v1/"+w+"?page_size=100", nil)
			items := res.object()["items"]
			key := map[string]string{"projects": "Projects", "domains": "Domains", "utm-templates": "Templates", "pixels": "Pixels"}[w]
			out[key] = items
		}
	}
	return out
}

func form(r *http.Request, names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = r.FormValue(n)
	}
	return m
}

// ---- links

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

// ---- keys

func (d *Dashboard) keysPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.renderKeys(w, r, c, http.StatusOK, nil, "")
}

func (d *Dashboard) renderKeys(w http.ResponseWriter, r *http.Request, c *dashCtx, status int, created map[string]any, msg string) {
	res := d.call(r.Context(), c, "GET", "/v1/api-keys", nil)
	if !res.ok() {
		d.failed(w, r, c, res)
		return
	}
	data := d.options(r.Context(), c, "projects")
	data["Keys"], data["Created"], data["Error"] = res.list(), created, msg
	d.render(w, r, c, status, "keys", "API keys", data)
}

func (d *Dashboard) createKey(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	body := map[string]any{"name": r.PostFormValue("name")}
	if r.PostFormValue("kind") == "publishable" {
		body["kind"] = "publishable"
	}
	if v := strings.TrimSpace(r.PostFormValue("project_id")); v != "" {
		body["project_id"] = v
	}
	if v := strings.TrimSpace(r.PostFormValue("allowed_hostnames")); v != "" {
		body["allowed_hostnames"] = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
	}
	res := d.call(r.Context(), c, "POST", "/v1/api-keys", body)
	if !res.ok() {
		d.renderKeys(w, r, c, res.Status, nil, res.detail())
		return
	}
	d.renderKeys(w, r, c, http.StatusCreated, res.object(), "")
}

func (d *Dashboard) deactivateKey(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	res := d.call(r.Context(), c, "DELETE", "/v1/api-keys/"+url.PathEscape(mux.Vars(r)["key_id"]), nil)
	if !res.ok() {
		d.renderKeys(w, r, c, res.Status, nil, res.detail())
		return
	}
	http.Redirect(w, r, "/dashboard/keys?flash="+url.QueryEscape("Key deactivated"), http.StatusSeeOther)
}

// ---- simple collections: list and create

// listPage reads a paged collection (items) or a list.
func (d *Dashboard) collection(ctx context.Context, c *dashCtx, path string) ([]any, apiResult) {
	res := d.call(ctx, c, "GET", path, nil)
	if !res.ok() {
		return nil, res
	}
	if bytes.HasPrefix(bytes.TrimSpace(res.Body), []byte("[")) {
		return res.list(), res
	}
	items, _ := res.object()["items"].([]any)
	return items, res
}

// collectionPage is a page listing one collection with a form that adds
// to it.
type collectionPage struct {
	name, title, list string
	fields            []string
	create            func(v map[string]string) (string, any) // path and body of the POST
	extra             []string                                // option lists
}

func (d *Dashboard) showCollection(w http.ResponseWriter, r *http.Request, c *dashCtx, p collectionPage, status int, values map[string]string, msg string) {
	items, res := d.collection(r.Context(), c, p.list)
	if !res.ok() {
		d.failed(w, r, c, res)
		return
	}
	data := d.options(r.Context(), c, p.extra...)
	data["Items"] = items
	data["V"] = values
	data["Error"] = msg
	data["CNAMETarget"] = hostOnly(d.cfg.DefaultDomain)
	d.render(w, r, c, status, p.name, p.title, data)
}

func (d *Dashboard) createIn(w http.ResponseWriter, r *http.Request, c *dashCtx, p collectionPage) {
	values := form(r, p.fields...)
	path, body := p.create(values)
	res := d.call(r.Context(), c, "POST", path, body)
	if !res.ok() {
		d.showCollection(w, r, c, p, res.Status, values, res.detail())
		return
	}
	http.Redirect(w, r, r.URL.Path+"?flash="+url.QueryEscape("Created"), http.StatusSeeOther)
}

func hostOnly(hostport string) string {
	if i := strings.LastIndexByte(hostport, ':'); i > 0 && !strings.Contains(hostport[i:], "]") {
		return hostport[:i]
	}
	return hostport
}

// nonEmpty keeps the fields with a value, as strings.
func nonEmpty(v map[string]string, names ...string) map[string]any {
	out := map[string]any{}
	for _, n := range names {
		if s := strings.TrimSpace(v[n]); s != "" {
			out[n] = s
		}
	}
	return out
}

var projectsCollection = collectionPage{name: "projects", title: "Projects", list: "/v1/projects?page_size=100",
	fields: []string{"name", "description", "color", "workspace_id"}, extra: []string{"workspaces"},
	create: func(v map[string]string) (string, any) {
		return "/v1/projects", nonEmpty(v, "name", "description", "color", "workspace_id")
	}}

func (d *Dashboard) projectsPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.showCollection(w, r, c, projectsCollection, http.StatusOK, nil, "")
}
func (d *Dashboard) createProject(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.createIn(w, r, c, projectsCollection)
}

var domainsCollection = collectionPage{name: "domains", title: "Domains", list: "/v1/domains?page_size=100",
	fields: []string{"domain", "description", "workspace_id"}, extra: []string{"workspaces"},
	create: func(v map[string]string) (string, any) {
		return "/v1/domains", nonEmpty(v, "domain", "description", "workspace_id")
	}}

func (d *Dashboard) domainsPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.showCollection(w, r, c, domainsCollection, http.StatusOK, nil, "")
}
func (d *Dashboard) createDomain(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.createIn(w, r, c, domainsCollection)
}

func (d *Dashboard) verifyDomain(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	res := d.call(r.Context(), c, "GET", "/v1/domains/"+url.PathEscape(mux.Vars(r)["domain_id"])+"/verify", nil)
	if !res.ok() {
		d.showCollection(w, r, c, domainsCollection, res.Status, nil, res.detail())
		return
	}
	o := res.object()
	msg := "Not verified yet: the CNAME record is not there."
	if v, _ := o["is_verified"].(bool); v {
		msg = "Verified"
	}
	http.Redirect(w, r, "/dashboard/domains?flash="+url.QueryEscape(msg), http.StatusSeeOther)
}

var utmCollection = collectionPage{name: "utm", title: "UTM templates", list: "/v1/utm-templates?page_size=100",
	fields: []string{"name", "workspace_id", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_name"}, extra: []string{"workspaces"},
	create: func(v map[string]string) (string, any) {
		return "/v1/utm-templates", nonEmpty(v, "name", "workspace_id", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_name")
	}}

func (d *Dashboard) utmPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.showCollection(w, r, c, utmCollection, http.StatusOK, nil, "")
}
func (d *Dashboard) createUTM(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.createIn(w, r, c, utmCollection)
}

var pixelsCollection = collectionPage{name: "pixels", title: "Pixels", list: "/v1/pixels?page_size=100",
	fields: []string{"name", "type", "pixel_id", "workspace_id"}, extra: []string{"workspaces"},
	create: func(v map[string]string) (string, any) {
		return "/v1/pixels", nonEmpty(v, "name", "type", "pixel_id", "workspace_id")
	}}

func (d *Dashboard) pixelsPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.showCollection(w, r, c, pixelsCollection, http.StatusOK, nil, "")
}
func (d *Dashboard) createPixel(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.createIn(w, r, c, pixelsCollection)
}

var workspacesCollection = collectionPage{name: "workspaces", title: "Workspaces", list: "/v1/workspaces",
	fields: []string{"name", "description"},
	create: func(v map[string]string) (string, any) {
		return "/v1/workspaces", nonEmpty(v, "name", "description")
	}}

func (d *Dashboard) workspacesPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.showCollection(w, r, c, workspacesCollection, http.StatusOK, nil, "")
}
func (d *Dashboard) createWorkspace(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.createIn(w, r, c, workspacesCollection)
}

// workspacePage is a workspace's statistics.
func (d *Dashboard) workspacePage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	id := url.PathEscape(mux.Vars(r)["workspace_id"])
	ws, ok := d.getObject(w, r, c, "/v1/workspaces/"+id)
	if !ok {
		return
	}
	now := d.clock.Now().UTC()
	rng := "?start_date=" + now.AddDate(0, 0, -29).Format("2006-01-02") + "&end_date=" + now.Format("2006-01-02")
	days := d.call(r.Context(), c, "GET", "/v1/stats/workspaces/"+id+rng, nil).list()
	summary := d.call(r.Context(), c, "GET", "/v1/stats/workspaces/"+id+"/summary"+rng, nil).object()
	data := map[string]any{"Workspace": ws, "Summary": summary,
		"Chart": dailyChart(days, now, 30, "click_date", []series{{"clicks", "total_clicks"}, {"leads", "leads"}, {"sales", "sales"}}),
		"Breakdowns": []breakdown{
			{"Countries", "country", sumCounts(days, "country_stats")},
			{"Devices", "device", sumCounts(days, "device_type_stats")},
			{"Browsers", "browser", sumCounts(days, "browser_stats")},
			{"Operating systems", "os", sumCounts(days, "os_stats")},
			{"Referrers", "referrer", sumCounts(days, "referrer_stats")},
		}}
	d.render(w, r, c, http.StatusOK, "workspace", "Workspace", data)
}

func (d *Dashboard) membersPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.renderMembers(w, r, c, http.StatusOK, "")
}

func (d *Dashboard) renderMembers(w http.ResponseWriter, r *http.Request, c *dashCtx, status int, msg string) {
	d.renderMembersWith(w, r, c, status, msg, "")
}

// renderMembersWith shows the members page, with an invitation's link
// when one was just made (shown this once).
func (d *Dashboard) renderMembersWith(w http.ResponseWriter, r *http.Request, c *dashCtx, status int, msg, inviteURL string) {
	id := url.PathEscape(mux.Vars(r)["workspace_id"])
	ws, ok := d.getObject(w, r, c, "/v1/workspaces/"+id)
	if !ok {
		return
	}
	res := d.call(r.Context(), c, "GET", "/v1/workspaces/"+id+"/members", nil)
	if !res.ok() {
		d.failed(w, r, c, res)
		return
	}
	d.render(w, r, c, status, "members", "Members", map[string]any{"Workspace": ws, "Members": res.list(), "Error": msg, "InviteURL": inviteURL})
}

func (d *Dashboard) addMember(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	id := url.PathEscape(mux.Vars(r)["workspace_id"])
	q := url.Values{}
	for _, k := range []string{"user_id", "role", "email"} {
		if v := strings.TrimSpace(r.PostFormValue(k)); v != "" {
			q.Set(k, v)
		}
	}
	res := d.call(r.Context(), c, "POST", "/v1/workspaces/"+id+"/members?"+q.Encode(), nil)
	if !res.ok() {
		d.renderMembers(w, r, c, res.Status, res.detail())
		return
	}
	http.Redirect(w, r, "/dashboard/workspaces/"+id+"/members?flash="+url.QueryEscape("Member added"), http.StatusSeeOther)
}

// changeMemberRole sets a member's role (admins only: the interface says
// so); removeMember removes one. Both answer on the members page.
func (d *Dashboard) changeMemberRole(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	id, user := url.PathEscape(mux.Vars(r)["workspace_id"]), url.PathEscape(mux.Vars(r)["user_id"])
	q := url.Values{"role": {strings.TrimSpace(r.PostFormValue("role"))}}
	res := d.call(r.Context(), c, "PUT", "/v1/workspaces/"+id+"/members/"+user+"?"+q.Encode(), nil)
	if !res.ok() {
		d.renderMembers(w, r, c, res.Status, res.detail())
		return
	}
	http.Redirect(w, r, "/dashboard/workspaces/"+id+"/members?flash="+url.QueryEscape("Role changed"), http.StatusSeeOther)
}

func (d *Dashboard) removeMember(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	id, user := url.PathEscape(mux.Vars(r)["workspace_id"]), url.PathEscape(mux.Vars(r)["user_id"])
	res := d.call(r.Context(), c, "DELETE", "/v1/workspaces/"+id+"/members/"+user, nil)
	if !res.ok() {
		d.renderMembers(w, r, c, res.Status, res.detail())
		return
	}
	http.Redirect(w, r, "/dashboard/workspaces/"+id+"/members?flash="+url.QueryEscape("Member removed"), http.StatusSeeOther)
}

// ---- customers

func (d *Dashboard) customersPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	q := url.Values{"page_size": {"50"}}
	for _, k := range []string{"search", "workspace_id", "page"} {
		if v := r.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	o, ok := d.getObject(w, r, c, "/v1/customers?"+q.Encode())
	if !ok {
		return
	}
	data := d.options(r.Context(), c, "workspaces")
	data["Customers"] = o["items"]
	data["Query"] = map[string]string{"search": r.URL.Query().Get("search"), "workspace_id": r.URL.Query().Get("workspace_id")}
	d.render(w, r, c, http.StatusOK, "customers", "Customers", data)
}

func (d *Dashboard) customerPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	o, ok := d.getObject(w, r, c, "/v1/customers/"+url.PathEscape(mux.Vars(r)["customer_id"]))
	if !ok {
		return
	}
	d.render(w, r, c, http.StatusOK, "customer", "Customer", map[string]any{"Customer": o})
}

// ---- Radar

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

// webhookEvents are the event types a webhook may subscribe to.
var webhookEvents = []string{"link.created", "link.updated", "link.deleted", "link.clicked", "lead.created", "sale.created"}

// webhooksPage lists the webhooks the user manages, with a form that adds
// one; its secret is shown once, on the page that answers the form.
func (d *Dashboard) webhooksPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	d.showWebhooks(w, r, c, http.StatusOK, nil, "", "")
}

func (d *Dashboard) showWebhooks(w http.ResponseWriter, r *http.Request, c *dashCtx, status int, values map[string]string, msg, secret string) {
	items, res := d.collection(r.Context(), c, "/v1/webhooks?page_size=100")
	if !res.ok() && res.Status != http.StatusForbidden {
		d.failed(w, r, c, res)
		return
	}
	data := d.options(r.Context(), c, "workspaces")
	data["Items"] = items
	data["V"] = values
	data["Error"] = msg
	data["Secret"] = secret
	data["Events"] = webhookEvents
	if res.Status == http.StatusForbidden {
		data["Error"] = res.detail()
	}
	d.render(w, r, c, status, "webhooks", "Webhooks", data)
}

func (d *Dashboard) createWebhook(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	values := form(r, "url", "description", "workspace_id")
	body := nonEmpty(values, "url", "description", "workspace_id")
	events := r.PostForm["events"]
	if len(events) == 0 {
		events = []string{}
	}
	body["events"] = events
	res := d.call(r.Context(), c, "POST", "/v1/webhooks", body)
	if !res.ok() {
		d.showWebhooks(w, r, c, res.Status, values, res.detail(), "")
		return
	}
	secret, _ := res.object()["secret"].(string)
	d.showWebhooks(w, r, c, http.StatusCreated, nil, "", secret)
}

// webhookPage is a webhook and its latest deliveries.
func (d *Dashboard) webhookPage(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	id := url.PathEscape(mux.Vars(r)["webhook_id"])
	wh, ok := d.getObject(w, r, c, "/v1/webhooks/"+id)
	if !ok {
		return
	}
	deliveries, res := d.collection(r.Context(), c, "/v1/webhooks/"+id+"/deliveries?page_size=100")
	if !res.ok() {
		d.failed(w, r, c, res)
		return
	}
	d.render(w, r, c, http.StatusOK, "webhook", "Webhook", map[string]any{"Webhook": wh, "Deliveries": deliveries})
}
