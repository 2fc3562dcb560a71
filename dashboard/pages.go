package dashboard

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/mux"
)

// The dashboard's pages (the links and Radar have files of their own):
// each reads and writes through d.call, the interface itself.

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
