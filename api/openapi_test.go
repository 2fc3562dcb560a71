package api_test

// These tests keep api/openapi.json true to the implementation:
//
//   - TestOpenAPIDocument loads the document with kin-openapi and checks its
//     conventions: operation ids, security, 401 and 429 and the rate-limit
//     headers on every authenticated operation, closed response schemas.
//   - TestOpenAPIRoutes walks the gorilla/mux router of api.Server and
//     compares its routes with the document's operations, both ways.
//   - TestOpenAPIConformance starts a whole linkd (apptest), exercises every
//     operation for real, successes and the main errors, and validates every
//     request and response (status, declared headers, body) with
//     openapi3filter. Requests that break the document on purpose (a missing
//     key, a missing required field, a value out of range) must fail request
//     validation, which shows that the document states the constraint.
//     Its "drift" subtest shows that the validation is not vacuous: a real
//     body with an extra field, a wrong type or a missing field fails.
//   - TestOpenAPIAuthAndRateLimitAnswers validates the answers that come
//     before any handler (401, 403 for publishable keys, 429) for every
//     authenticated operation, with in-process servers whose limiter has
//     budget left or none. (The conformance test also spends a real budget
//     once.)
//   - TestOpenAPIServed checks that GET /openapi.json serves the document.
//
// kin-openapi v0.152.0 reads OpenAPI 3.1 documents, and openapi3filter
// validates with JSON Schema 2020-12 semantics (type arrays with "null")
// when the document says 3.1.x: no conversion to 3.0 is needed.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gorilla/mux"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/cmd/linkd/app"
	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/clock"
	"github.com/linkd/linkd/internal/dnscheck/dnstest"
	"github.com/linkd/linkd/queries"
)

// browserUA makes requests look like a desktop browser: known bots are
// redirected without counting a click.
const browserUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"

// loadOpenAPI parses and validates the embedded document.
func loadOpenAPI(t testing.TB) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPIDocument())
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI document: %v", err)
	}
	return doc
}

var registerDecoders sync.Once

// openAPIValidator validates requests and responses against the document.
type openAPIValidator struct {
	doc    *openapi3.T
	router routers.Router
}

func newOpenAPIValidator(t testing.TB) *openAPIValidator {
	t.Helper()
	// Bodies that are not JSON: HTML pages, images, Prometheus text.
	registerDecoders.Do(func() {
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("application/openmetrics-text", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("application/javascript", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("image/png", openapi3filter.FileBodyDecoder)
		openapi3filter.RegisterBodyDecoder("image/svg+xml", openapi3filter.FileBodyDecoder)
	})
	doc := loadOpenAPI(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("router of the document: %v", err)
	}
	return &openAPIValidator{doc: doc, router: router}
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// schemaOptions makes "format: uuid" checked (kin-openapi checks date and
// date-time by itself).
var schemaOptions = []openapi3.SchemaValidationOption{
	openapi3.WithStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(uuidPattern.String())),
}

// bearerAuth is the request side of the security schemes: a bearer token,
// or for publishableKey the X-Publishable-Key header, must be there
// (whether it is a valid key is the server's business).
func bearerAuth(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	switch in.SecuritySchemeName {
	case "bearerAuth":
	case "publishableKey":
		if strings.TrimSpace(in.RequestValidationInput.Request.Header.Get("X-Publishable-Key")) == "" {
			return errors.New("no publishable key")
		}
		return nil
	default:
		return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
	}
	h := in.RequestValidationInput.Request.Header.Get("Authorization")
	if len(h) < 8 || !strings.EqualFold(h[:7], "bearer ") || strings.TrimSpace(h[7:]) == "" {
		return errors.New("no bearer token")
	}
	return nil
}

// exchange is one request and its answer.
type exchange struct {
	method, target string // target: path and query
	header         http.Header
	reqBody        []byte
	status         int
	respHeader     http.Header
	respBody       []byte
}

// validation is what the document says about an exchange.
type validation struct {
	route      *routers.Route // nil when no operation matches
	requestErr error
	statusOK   bool // the status is listed (not only "default")
	respErr    error
}

func (v *openAPIValidator) validate(ex exchange) validation {
	var out validation
	req := httptest.NewRequest(ex.method, "http://linkd.test"+ex.target, bytes.NewReader(ex.reqBody))
	req.Header = ex.header.Clone()
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		out.requestErr = fmt.Errorf("no operation in the document: %w", err)
		return out
	}
	out.route = route
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			AuthenticationFunc: bearerAuth, MultiError: true, SchemaValidationOptions: schemaOptions,
		},
	}
	out.requestErr = openapi3filter.ValidateRequest(context.Background(), in)
	out.statusOK = route.Operation.Responses.Status(ex.status) != nil
	rin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: ex.status, Header: ex.respHeader,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, SchemaValidationOptions: schemaOptions},
	}
	rin.SetBodyBytes(ex.respBody)
	out.respErr = openapi3filter.ValidateResponse(context.Background(), rin)
	return out
}

// opKey names an operation: "GET /v1/links/{link_id}".
func opKey(method, path string) string { return strings.ToUpper(method) + " " + path }

// documentedOperations lists the document's operations.
func documentedOperations(doc *openapi3.T) map[string]*openapi3.Operation {
	ops := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops[opKey(method, path)] = op
		}
	}
	return ops
}

func isPublic(doc *openapi3.T, op *openapi3.Operation) bool {
	sec := doc.Security
	if op.Security != nil {
		sec = *op.Security
	}
	return len(sec) == 0
}

func TestOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	ids := map[string]string{}
	rateHeaders := []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
	ops := documentedOperations(doc)
	for _, key := range sortedKeys(ops) {
		op := ops[key]
		if op.OperationID == "" {
			t.Errorf("%s: no operationId", key)
		} else if other, dup := ids[op.OperationID]; dup {
			t.Errorf("%s: operationId %q already used by %s", key, op.OperationID, other)
		}
		ids[op.OperationID] = key
		path := strings.SplitN(key, " ", 2)[1]
		public := isPublic(doc, op)
		if strings.HasPrefix(path, "/v1/") && path != "/v1/links/code/{code}" && path != "/v1/links/code/{code}/stats" && public {
			t.Errorf("%s: a /v1 operation without security", key)
		}
		if public || !strings.HasPrefix(path, "/v1/") {
			continue // keys and rate limits as below are v1's
		}
		for _, code := range []int{401, 429} {
			if op.Responses.Status(code) == nil {
				t.Errorf("%s: does not document %d", key, code)
			}
		}
		if r := op.Responses.Status(429); r != nil && r.Value.Headers["Retry-After"] == nil {
			t.Errorf("%s: 429 without Retry-After", key)
		}
		for _, code := range sortedKeys(op.Responses.Map()) {
			if code == "401" || code == "default" {
				continue
			}
			for _, h := range rateHeaders {
				if op.Responses.Value(code).Value.Headers[h] == nil {
					t.Errorf("%s: %s does not declare %s", key, code, h)
				}
			}
		}
		success := false
		for code := range op.Responses.Map() {
			success = success || strings.HasPrefix(code, "2")
		}
		if !success {
			t.Errorf("%s: no success response", key)
		}
	}
	// Response objects are closed, so that a field the implementation adds
	// or renames fails the conformance test. Request bodies stay open: the
	// server ignores unknown fields.
	open := map[string]bool{"Counts": true, "PasswordForm": true, "Money": true}
	for _, name := range sortedKeys(doc.Components.Schemas) {
		sc := doc.Components.Schemas[name].Value
		if open[name] || strings.HasSuffix(name, "Request") || strings.HasSuffix(name, "Input") || !sc.Type.Is("object") {
			continue
		}
		if ap := sc.AdditionalProperties.Has; ap == nil || *ap {
			t.Errorf("schema %s: additionalProperties is not false", name)
		}
	}
}

// routerRoutes walks the router that api.Server builds: "METHOD /template".
// The application adds /metrics through Handler's hook; the test adds it
// the same way.
func routerRoutes(t *testing.T) map[string]bool {
	t.Helper()
	rd := api.NewRedirector(api.RedirectConfig{}, queries.LinkAccessHandler{}, nil, nil, nil, nil)
	srv := api.New(api.Config{DefaultDomain: "linkd.test"}, api.Deps{Redirector: rd})
	var root *mux.Router
	srv.Handler(func(r *mux.Router) {
		root = r
		r.Handle("/metrics", http.NotFoundHandler()).Methods(http.MethodGet) // as cmd/linkd/app does
	})
	if root == nil {
		t.Fatal("Handler did not call its hook")
	}
	got := map[string]bool{}
	err := root.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return nil
		}
		methods, err := route.GetMethods()
		if err != nil {
			return nil // a prefix (the /v1 subrouter), not an endpoint
		}
		if strings.HasPrefix(tpl, "/dashboard") {
			return nil // the dashboard's HTML pages (docs/dashboard.md), not the interface
		}
		for _, m := range methods {
			got[opKey(m, tpl)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	routes := routerRoutes(t)
	ops := documentedOperations(doc)
	for _, r := range sortedKeys(routes) {
		if ops[r] == nil {
			t.Errorf("route %s is served but not in openapi.json", r)
		}
	}
	for _, o := range sortedKeys(ops) {
		if !routes[o] {
			t.Errorf("openapi.json documents %s, which the router does not serve", o)
		}
	}
	if len(routes) < 40 {
		t.Errorf("walked only %d routes: %v", len(routes), sortedKeys(routes))
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func TestOpenAPIServed(t *testing.T) {
	s := apptest.Start(t)
	r := s.Do("GET", "/openapi.json", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if !bytes.Equal(r.Body, api.OpenAPIDocument()) {
		t.Error("GET /openapi.json does not serve api/openapi.json")
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil || m["openapi"] != "3.1.0" {
		t.Errorf("served document: openapi = %v, err %v", m["openapi"], err)
	}
	v := newOpenAPIValidator(t)
	got := v.validate(exchange{method: "GET", target: "/openapi.json", header: http.Header{},
		status: r.Status, respHeader: r.Header, respBody: r.Body})
	if got.requestErr != nil || got.respErr != nil {
		t.Errorf("GET /openapi.json against the document: %v / %v", got.requestErr, got.respErr)
	}
}

// ---------------------------------------------------------------- in process

// oneKeyModel knows a few keys and nothing else: the answers under test
// come before any handler reads the model.
type oneKeyModel struct {
	queries.CoreReadModel
	keys map[string]queries.APIKey
}

func (m oneKeyModel) APIKeyByHash(_ context.Context, hash string) (queries.APIKey, bool, error) {
	k, ok := m.keys[hash]
	return k, ok, nil
}

type plainHasher struct{}

func (plainHasher) Hash(key string) string { return "hash:" + key }

// refuseAll is a limiter whose budget is spent.
type refuseAll struct{}

func (refuseAll) Allow(_ context.Context, _ string, limit int, per time.Duration, now time.Time) api.RateDecision {
	return api.RateDecision{Allowed: false, Limit: limit, Remaining: 0, Reset: now.Add(per), RetryAfter: 42 * time.Minute}
}

// allowAll is a limiter with budget left.
type allowAll struct{}

func (allowAll) Allow(_ context.Context, _ string, limit int, per time.Duration, now time.Time) api.RateDecision {
	return api.RateDecision{Allowed: true, Limit: limit, Remaining: limit - 1, Reset: now.Add(per)}
}

func TestOpenAPIAuthAndRateLimitAnswers(t *testing.T) {
	v := newOpenAPIValidator(t)
	const secret, publishable = "svc_sk_spent0123456789abcdefghijklmnopqrstuv", "svc_pk_client0123456789abcdefghijklmnopqrst"
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	perms := map[string]string{"domains": "write", "links": "write", "projects": "write", "workspaces": "write", "analytics": "write"}
	model := oneKeyModel{keys: map[string]queries.APIKey{
		"hash:" + secret: {ID: "0190a1b2-0000-7000-8000-000000000001", UserID: "u", Kind: "secret", Access: "full",
			Permissions: perms, IsActive: true, CreatedAt: now},
		"hash:" + publishable: {ID: "0190a1b2-0000-7000-8000-000000000002", UserID: "u", Kind: "publishable", Access: "full",
			Permissions: perms, IsActive: true, CreatedAt: now},
	}}
	server := func(l api.Limiter) http.Handler {
		return api.New(api.Config{DefaultDomain: "linkd.test"}, api.Deps{
			Queries: queries.New(queries.Sources{Core: model}), Hasher: plainHasher{}, Limiter: l, Clock: clock.NewManual(now),
		}).Handler(nil)
	}
	spent, fresh := server(refuseAll{}), server(allowAll{})
	ops := documentedOperations(v.doc)
	for _, key := range sortedKeys(ops) {
		method, path, _ := strings.Cut(key, " ")
		if isPublic(v.doc, ops[key]) || !strings.HasPrefix(path, "/v1/") {
			continue
		}
		target := regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllString(path, "0190a1b2-0000-7000-8000-0000000000ff")
		var body []byte
		if ops[key].RequestBody != nil {
			body = []byte("{}")
		}
		// Publishable keys are for client-side collection: /v1 refuses
		// them, except the key's own validation.
		pubWant := http.StatusForbidden
		if key == "GET /v1/api-keys/validate" {
			pubWant = http.StatusOK
		}
		for _, c := range []struct {
			h    http.Handler
			key  string
			want int
		}{
			{fresh, "", http.StatusUnauthorized},
			{fresh, "svc_sk_unknown0123456789abcdefghijklmnopq", http.StatusUnauthorized},
			{fresh, publishable, pubWant},
			{spent, secret, http.StatusTooManyRequests},
		} {
			req := httptest.NewRequest(method, "http://linkd.test"+target, bytes.NewReader(body))
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			if c.key != "" {
				req.Header.Set("Authorization", "Bearer "+c.key)
			}
			rec := httptest.NewRecorder()
			c.h.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Errorf("%s %s: status %d, want %d: %s", method, target, rec.Code, c.want, rec.Body)
				continue
			}
			got := v.validate(exchange{method: method, target: target, header: req.Header, reqBody: body,
				status: rec.Code, respHeader: rec.Header(), respBody: rec.Body.Bytes()})
			if !got.statusOK {
				t.Errorf("%s %s: status %d not documented", method, target, rec.Code)
			}
			if got.respErr != nil {
				t.Errorf("%s %s (%d): response does not match the document: %v", method, target, rec.Code, got.respErr)
			}
		}
	}
}

// ---------------------------------------------------------------- live

// call is one request of the conformance run.
type call struct {
	method, path string
	key          string
	body         any // nil; string or []byte sent as is; else JSON-encoded
	form         url.Values
	header       []string // name, value pairs
	want         int
	orWant       int // another acceptable status (0: none)
	// invalid marks a request that breaks the document on purpose: its
	// validation must fail.
	invalid bool
}

type liveRun struct {
	t    *testing.T
	s    *apptest.Server
	v    *openAPIValidator
	seen map[string]map[string]bool // operation -> statuses answered
	mu   sync.Mutex
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, a.body)
	}
	return m
}

func (a answer) str(t *testing.T, field string) string {
	t.Helper()
	s, ok := a.object(t)[field].(string)
	if !ok {
		t.Fatalf("no string %q in %s", field, a.body)
	}
	return s
}

// do sends c, checks its status, and validates request and response
// against the document.
func (r *liveRun) do(c call) answer {
	t := r.t
	t.Helper()
	var body []byte
	header := http.Header{}
	switch b := c.body.(type) {
	case nil:
	case string:
		body = []byte(b)
	case []byte:
		body = b
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	if body != nil {
		header.Set("Content-Type", "application/json")
	}
	if c.form != nil {
		body = []byte(c.form.Encode())
		header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.key != "" {
		header.Set("Authorization", "Bearer "+c.key)
	}
	header.Set("User-Agent", browserUA)
	for i := 0; i+1 < len(c.header); i += 2 {
		header.Set(c.header[i], c.header[i+1])
	}
	req, err := http.NewRequest(c.method, r.s.URL+c.path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	if h := header.Get("Host"); h != "" {
		req.Host = h // the client sends req.Host, not a Host header
	}
	resp, err := apptest.NoRedirect.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: respBody}
	name := c.method + " " + c.path
	if a.status != c.want && (c.orWant == 0 || a.status != c.orWant) {
		t.Errorf("%s: status %d, want %d: %.300s", name, a.status, c.want, respBody)
	}
	got := r.v.validate(exchange{method: c.method, target: c.path, header: header, reqBody: body,
		status: a.status, respHeader: a.header, respBody: respBody})
	if got.route == nil {
		t.Errorf("%s: %v", name, got.requestErr)
		return a
	}
	switch {
	case c.invalid && got.requestErr == nil:
		t.Errorf("%s: the request breaks the document on purpose, yet it validates", name)
	case !c.invalid && got.requestErr != nil:
		t.Errorf("%s: request does not match the document: %v", name, got.requestErr)
	}
	if !got.statusOK {
		t.Errorf("%s: status %d is not documented for %s %s", name, a.status, got.route.Method, got.route.Path)
	}
	if got.respErr != nil {
		t.Errorf("%s: response (%d) does not match the document: %v\nbody: %.500s", name, a.status, got.respErr, respBody)
	}
	r.mu.Lock()
	k := opKey(got.route.Method, got.route.Path)
	if r.seen[k] == nil {
		r.seen[k] = map[string]bool{}
	}
	r.seen[k][fmt.Sprint(a.status)] = true
	r.mu.Unlock()
	return a
}

// created does c (which must answer 201) and returns the object.
func (r *liveRun) created(c call) answer {
	r.t.Helper()
	c.want = http.StatusCreated
	a := r.do(c)
	if a.status != http.StatusCreated {
		r.t.FailNow()
	}
	return a
}

const unknownID = "0190a1b2-0000-7000-8000-00000000dead"

func TestOpenAPIConformance(t *testing.T) {
	// A DNS server of its own makes domain verification deterministic:
	// go.example.com points at the default short domain, nothing else
	// exists.
	dns := dnstest.Start(t, map[string]string{"go.example.com": "links.test"})
	s := apptest.Start(t, func(c *app.Config) {
		c.TrustedProxies = "127.0.0.1/32" // X-Forwarded-For picks the visitor's country
		c.DefaultPlan = "pro"
		c.DefaultDomain = "links.test"
		c.DNSServer = dns.Addr()
	})
	r := &liveRun{t: t, s: s, v: newOpenAPIValidator(t), seen: map[string]map[string]bool{}}
	op := apptest.OperatorKey

	// ---- API keys
	aliceKey := r.created(call{method: "POST", path: "/v1/api-keys", key: op,
		body: map[string]any{"name": "alice", "access": "full", "user_id": "alice"}})
	alice := aliceKey.str(t, "key")
	aliceRO := r.created(call{method: "POST", path: "/v1/api-keys", key: op,
		body: map[string]any{"name": "alice ro", "access": "read_only", "user_id": "alice"}}).str(t, "key")
	aliceLimited := r.created(call{method: "POST", path: "/v1/api-keys", key: alice,
		body: map[string]any{"name": "alice limited", "access": "limited", "permissions": map[string]string{"links": "read", "analytics": "read"}}}).str(t, "key")
	alicePub := r.created(call{method: "POST", path: "/v1/api-keys", key: alice,
		body: map[string]any{"name": "alice web", "kind": "publishable", "allowed_hostnames": []string{"example.com"}}}).str(t, "key")
	bobKey := r.created(call{method: "POST", path: "/v1/api-keys", key: op, body: map[string]any{"name": "bob", "user_id": "bob"}})
	bob := bobKey.str(t, "key")
	temp := r.created(call{method: "POST", path: "/v1/api-keys", key: alice, body: map[string]any{"name": "temporary", "access": nil}})
	r.do(call{method: "POST", path: "/v1/api-keys", key: aliceRO, body: map[string]any{"name": "x"}, want: 403})
	r.do(call{method: "POST", path: "/v1/api-keys", key: alice, body: map[string]any{"name": "x", "user_id": "bob"}, want: 403})
	r.do(call{method: "POST", path: "/v1/api-keys", key: alice, body: map[string]any{}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/api-keys", key: alice, body: `{"name": 5}`, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/api-keys", key: alice, body: `{"name": "x"`, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/api-keys", key: alice, body: map[string]any{"name": "x", "access": "everything"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/api-keys", key: alice, want: 400, invalid: true,
		body: map[string]any{"name": "x", "access": "limited", "permissions": map[string]string{"payments": "read"}}})
	r.do(call{method: "POST", path: "/v1/api-keys", key: alice, body: map[string]any{"name": "x", "project_id": unknownID}, want: 404})
	r.do(call{method: "POST", path: "/v1/api-keys", body: map[string]any{"name": "x"}, want: 401, invalid: true})
	r.do(call{method: "POST", path: "/v1/api-keys", key: "svc_sk_unknownunknownunknownunknown00", body: map[string]any{"name": "x"}, want: 401})
	r.do(call{method: "GET", path: "/v1/api-keys", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/api-keys", key: aliceRO, want: 200})
	r.do(call{method: "GET", path: "/v1/api-keys", key: alicePub, want: 403})
	r.do(call{method: "GET", path: "/v1/api-keys", want: 401, invalid: true})
	r.do(call{method: "GET", path: "/v1/api-keys/validate", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/api-keys/validate", key: aliceLimited, want: 200})
	r.do(call{method: "GET", path: "/v1/api-keys/validate", key: op, want: 200})
	r.do(call{method: "GET", path: "/v1/api-keys/validate", key: alicePub, want: 200})
	r.do(call{method: "GET", path: "/v1/api-keys/validate", key: "svc_sk_unknownunknownunknownunknown00", want: 401})
	r.do(call{method: "DELETE", path: "/v1/api-keys/" + temp.str(t, "id"), key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/api-keys/validate", key: temp.str(t, "key"), want: 401})
	r.do(call{method: "DELETE", path: "/v1/api-keys/" + bobKey.str(t, "id"), key: alice, want: 403})
	r.do(call{method: "DELETE", path: "/v1/api-keys/" + aliceKey.str(t, "id"), key: aliceRO, want: 403})
	r.do(call{method: "DELETE", path: "/v1/api-keys/" + unknownID, key: alice, want: 404})

	// ---- users
	r.created(call{method: "POST", path: "/v1/users", key: op, body: map[string]any{"user_id": "alice", "email": "alice@example.com", "password": "alice's password"}})
	r.do(call{method: "POST", path: "/v1/users", key: op, body: map[string]any{"user_id": "alice2", "email": "ALICE@example.com", "password": "long enough"}, want: 409})
	r.do(call{method: "POST", path: "/v1/users", key: op, body: map[string]any{"user_id": "alice3", "email": "not an email", "password": "long enough"}, want: 400})
	r.do(call{method: "POST", path: "/v1/users", key: op, body: map[string]any{"email": "x@example.com", "password": "long enough"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/users", key: alice, body: map[string]any{"user_id": "eve", "email": "eve@example.com", "password": "long enough"}, want: 403})

	// ---- workspaces
	ws := r.created(call{method: "POST", path: "/v1/workspaces", key: alice, body: map[string]any{"name": "Acme", "description": "Acme's links"}}).str(t, "id")
	r.do(call{method: "POST", path: "/v1/workspaces", key: alice, body: map[string]any{"name": "Acme"}, want: 409})
	r.do(call{method: "POST", path: "/v1/workspaces", key: alice, body: map[string]any{"description": "no name"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/workspaces", key: alice, body: map[string]any{"name": ""}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/workspaces", key: aliceRO, body: map[string]any{"name": "RO"}, want: 403})
	r.do(call{method: "GET", path: "/v1/workspaces", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/workspaces", key: aliceLimited, want: 403})
	r.do(call{method: "GET", path: "/v1/workspaces/" + ws, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/workspaces/" + ws, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/workspaces/" + unknownID, key: alice, want: 404})
	r.do(call{method: "PUT", path: "/v1/workspaces/" + ws, key: alice, body: map[string]any{"description": nil}, want: 200})
	r.do(call{method: "PUT", path: "/v1/workspaces/" + ws, key: alice, body: map[string]any{"name": "Acme Inc", "description": "All of Acme"}, want: 200})
	r.do(call{method: "PUT", path: "/v1/workspaces/" + ws, key: alice, body: map[string]any{"name": 1}, want: 400, invalid: true})
	r.created(call{method: "POST", path: "/v1/workspaces", key: alice, body: map[string]any{"name": "Taken"}})
	r.do(call{method: "PUT", path: "/v1/workspaces/" + ws, key: alice, body: map[string]any{"name": "Taken"}, want: 409})
	r.do(call{method: "PUT", path: "/v1/workspaces/" + ws, key: bob, body: map[string]any{"name": "Mine"}, want: 403})
	r.do(call{method: "PUT", path: "/v1/workspaces/" + unknownID, key: alice, body: map[string]any{"name": "Nope"}, want: 404})
	members := "/v1/workspaces/" + ws + "/members"
	r.do(call{method: "POST", path: members + "?user_id=bob&role=member&email=bob%40example.com", key: alice, want: 200})
	r.do(call{method: "POST", path: members + "?user_id=carol", key: alice, want: 200})
	r.do(call{method: "POST", path: members + "?role=member", key: alice, want: 400, invalid: true})
	r.do(call{method: "POST", path: members + "?user_id=dave&role=owner", key: alice, want: 400, invalid: true})
	r.do(call{method: "POST", path: members + "?user_id=dave", key: bob, want: 403})
	r.do(call{method: "POST", path: "/v1/workspaces/" + unknownID + "/members?user_id=dave", key: alice, want: 404})
	r.do(call{method: "GET", path: members, key: alice, want: 200})
	r.do(call{method: "GET", path: members, key: bob, want: 200})
	r.do(call{method: "GET", path: "/v1/workspaces/" + unknownID + "/members", key: alice, want: 404})
	r.do(call{method: "PUT", path: members + "/bob?role=admin", key: alice, want: 200})
	r.do(call{method: "PUT", path: members + "/bob", key: alice, want: 400, invalid: true})
	r.do(call{method: "PUT", path: members + "/nobody?role=member", key: alice, want: 404})
	r.do(call{method: "PUT", path: members + "/alice?role=member", want: 401, invalid: true})
	r.do(call{method: "PUT", path: members + "/bob?role=member", key: alice, want: 200})
	r.do(call{method: "PUT", path: members + "/carol?role=admin", key: bob, want: 403})
	r.do(call{method: "DELETE", path: members + "/bob", key: alice, want: 200})
	r.do(call{method: "GET", path: members, key: bob, want: 403})
	r.do(call{method: "DELETE", path: members + "/alice", key: alice, want: 400})
	r.do(call{method: "DELETE", path: members + "/nobody", key: alice, want: 404})
	r.do(call{method: "DELETE", path: members + "/carol", key: bob, want: 403})

	// ---- projects
	pr := r.created(call{method: "POST", path: "/v1/projects", key: alice,
		body: map[string]any{"name": "Launch", "description": "Spring launch", "color": "#abc", "workspace_id": ws}})
	if got := pr.str(t, "color"); got != "#ABC" {
		t.Errorf("project colour %q, want #ABC", got)
	}
	project := pr.str(t, "id")
	other := r.created(call{method: "POST", path: "/v1/projects", key: alice, body: map[string]any{"name": "Other", "workspace_id": ws}}).str(t, "id")
	r.created(call{method: "POST", path: "/v1/projects", key: alice, body: map[string]any{"name": "Default workspace project", "color": nil}})
	r.do(call{method: "POST", path: "/v1/projects", key: alice, body: map[string]any{"name": "Launch", "workspace_id": ws}, want: 409})
	r.do(call{method: "POST", path: "/v1/projects", key: alice, body: map[string]any{"name": "X", "color": "red"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/projects", key: alice, body: map[string]any{"color": "#fff"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/projects", key: bob, body: map[string]any{"name": "X", "workspace_id": ws}, want: 403})
	r.do(call{method: "POST", path: "/v1/projects", key: alice, body: map[string]any{"name": "X", "workspace_id": unknownID}, want: 404})
	page := r.do(call{method: "GET", path: "/v1/projects?page_size=1", key: alice, want: 200}).object(t)
	if cur, ok := page["next_cursor"].(string); ok {
		r.do(call{method: "GET", path: "/v1/projects?page_size=1&cursor=" + url.QueryEscape(cur), key: alice, want: 200})
	} else {
		t.Errorf("a first page of 1 of 3 projects has no next_cursor: %v", page)
	}
	r.do(call{method: "GET", path: "/v1/projects?page=2&page_size=2&workspace_id=" + ws, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/projects?page_size=500", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/projects?page=0", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/projects?workspace_id=" + unknownID, key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/projects?workspace_id=" + ws, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/projects/" + project, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/projects/" + project, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/projects/" + unknownID, key: alice, want: 404})
	r.do(call{method: "PUT", path: "/v1/projects/" + project, key: alice, body: map[string]any{"name": "Launch 2", "description": nil, "color": "#a1b2c3"}, want: 200})
	r.do(call{method: "PUT", path: "/v1/projects/" + project, key: alice, body: map[string]any{"name": "Other"}, want: 409})
	r.do(call{method: "PUT", path: "/v1/projects/" + project, key: alice, body: map[string]any{"color": "blue"}, want: 400, invalid: true})
	r.do(call{method: "PUT", path: "/v1/projects/" + project, key: bob, body: map[string]any{"name": "Bob's"}, want: 403})
	r.do(call{method: "PUT", path: "/v1/projects/" + unknownID, key: alice, body: map[string]any{"name": "Nope"}, want: 404})
	r.do(call{method: "DELETE", path: "/v1/projects/" + other, key: bob, want: 403})
	r.do(call{method: "DELETE", path: "/v1/projects/" + other, key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/projects/" + other, key: alice, want: 404})

	// ---- domains
	dom := r.created(call{method: "POST", path: "/v1/domains", key: alice,
		body: map[string]any{"domain": "go.example.com", "description": "Campaigns", "workspace_id": ws}}).str(t, "id")
	dom2 := r.created(call{method: "POST", path: "/v1/domains", key: alice, body: map[string]any{"domain": "tmp.example.com"}}).str(t, "id")
	r.do(call{method: "POST", path: "/v1/domains", key: alice, body: map[string]any{"domain": "go.example.com", "workspace_id": ws}, want: 409})
	r.do(call{method: "POST", path: "/v1/domains", key: bob, body: map[string]any{"domain": "go.example.com"}, want: 409})
	r.do(call{method: "POST", path: "/v1/domains", key: alice, body: map[string]any{"description": "no domain"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/domains", key: bob, body: map[string]any{"domain": "bob.example.com", "workspace_id": ws}, want: 403})
	r.do(call{method: "GET", path: "/v1/domains", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/domains?page_size=1&workspace_id=" + ws, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/domains?page_size=0", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/domains?workspace_id=" + unknownID, key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/domains?workspace_id=" + ws, key: bob, want: 403})
	r.do(call{method: "POST", path: "/v1/domains", key: alice, body: map[string]any{"domain": "x.example.com", "workspace_id": unknownID}, want: 404})
	r.do(call{method: "GET", path: "/v1/domains/" + dom, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/domains/" + dom, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/domains/" + unknownID, key: alice, want: 404})
	r.do(call{method: "PUT", path: "/v1/domains/" + dom, key: alice, body: map[string]any{"description": "Campaign links"}, want: 200})
	r.do(call{method: "PUT", path: "/v1/domains/" + dom, key: alice, body: map[string]any{"description": 5}, want: 400, invalid: true})
	r.do(call{method: "PUT", path: "/v1/domains/" + dom, key: bob, body: map[string]any{"description": "mine"}, want: 403})
	r.do(call{method: "PUT", path: "/v1/domains/" + unknownID, key: alice, body: map[string]any{"description": "x"}, want: 404})
	if v := r.do(call{method: "GET", path: "/v1/domains/" + dom + "/verify", key: alice, want: 200}).object(t); v["is_verified"] != true {
		t.Errorf("go.example.com is not verified: %v", v)
	}
	r.do(call{method: "GET", path: "/v1/domains/" + dom2 + "/verify", key: alice, want: 200}) // pending: no such name
	r.do(call{method: "GET", path: "/v1/domains/" + dom, key: alice, want: 200})              // now with last_checked
	r.do(call{method: "GET", path: "/v1/domains/" + dom + "/verify", key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/domains/" + unknownID + "/verify", key: alice, want: 404})
	r.do(call{method: "DELETE", path: "/v1/domains/" + dom2, key: bob, want: 403})
	r.do(call{method: "DELETE", path: "/v1/domains/" + dom2, key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/domains/" + dom2, key: alice, want: 404})

	// ---- UTM templates and pixels (extensions)
	tpl := r.created(call{method: "POST", path: "/v1/utm-templates", key: alice, body: map[string]any{
		"name": "Newsletter", "workspace_id": ws, "utm_source": "news", "utm_medium": "email", "utm_campaign": nil}}).str(t, "id")
	gone := r.created(call{method: "POST", path: "/v1/utm-templates", key: alice, body: map[string]any{"name": "Default workspace template"}}).str(t, "id")
	r.do(call{method: "POST", path: "/v1/utm-templates", key: alice, body: map[string]any{"utm_source": "x"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/utm-templates", key: bob, body: map[string]any{"name": "x", "workspace_id": ws}, want: 403})
	r.do(call{method: "POST", path: "/v1/utm-templates", key: alice, body: map[string]any{"name": "x", "workspace_id": unknownID}, want: 404})
	r.do(call{method: "GET", path: "/v1/utm-templates?page_size=1", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/utm-templates?workspace_id=" + ws, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/utm-templates?page=0", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/utm-templates?workspace_id=" + ws, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/utm-templates?workspace_id=" + unknownID, key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/utm-templates/" + tpl, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/utm-templates/" + tpl, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/utm-templates/" + unknownID, key: alice, want: 404})
	r.do(call{method: "PUT", path: "/v1/utm-templates/" + tpl, key: alice, body: map[string]any{"utm_campaign": "spring", "utm_medium": nil}, want: 200})
	r.do(call{method: "PUT", path: "/v1/utm-templates/" + tpl, key: alice, body: map[string]any{"name": ""}, want: 400, invalid: true})
	r.do(call{method: "PUT", path: "/v1/utm-templates/" + tpl, key: bob, body: map[string]any{"name": "x"}, want: 403})
	r.do(call{method: "PUT", path: "/v1/utm-templates/" + unknownID, key: alice, body: map[string]any{"name": "x"}, want: 404})
	r.do(call{method: "DELETE", path: "/v1/utm-templates/" + gone, key: bob, want: 403})
	r.do(call{method: "DELETE", path: "/v1/utm-templates/" + gone, key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/utm-templates/" + gone, key: alice, want: 404})
	px := r.created(call{method: "POST", path: "/v1/pixels", key: alice, body: map[string]any{
		"name": "Retargeting", "type": "meta", "pixel_id": "1234567890123456", "workspace_id": ws}}).str(t, "id")
	pxGone := r.created(call{method: "POST", path: "/v1/pixels", key: alice, body: map[string]any{"name": "Analytics", "type": "google", "pixel_id": "G-ABC123"}}).str(t, "id")
	r.do(call{method: "POST", path: "/v1/pixels", key: alice, body: map[string]any{"name": "x", "type": "snapchat", "pixel_id": "1"}, want: 400})
	r.do(call{method: "POST", path: "/v1/pixels", key: alice, body: map[string]any{"name": "x", "type": "meta", "pixel_id": "<script>"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/pixels", key: bob, body: map[string]any{"name": "x", "type": "x", "pixel_id": "o1", "workspace_id": ws}, want: 403})
	r.do(call{method: "POST", path: "/v1/pixels", key: alice, body: map[string]any{"name": "x", "type": "x", "pixel_id": "o1", "workspace_id": unknownID}, want: 404})
	r.do(call{method: "GET", path: "/v1/pixels", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/pixels?page_size=1&workspace_id=" + ws, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/pixels?page_size=101", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/pixels?workspace_id=" + ws, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/pixels?workspace_id=" + unknownID, key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/pixels/" + px, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/pixels/" + px, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/pixels/" + unknownID, key: alice, want: 404})
	r.do(call{method: "PUT", path: "/v1/pixels/" + px, key: alice, body: map[string]any{"name": "Meta retargeting"}, want: 200})
	r.do(call{method: "PUT", path: "/v1/pixels/" + px, key: alice, body: map[string]any{"pixel_id": "a b"}, want: 400, invalid: true})
	r.do(call{method: "PUT", path: "/v1/pixels/" + px, key: bob, body: map[string]any{"name": "x"}, want: 403})
	r.do(call{method: "PUT", path: "/v1/pixels/" + unknownID, key: alice, body: map[string]any{"name": "x"}, want: 404})
	r.do(call{method: "DELETE", path: "/v1/pixels/" + pxGone, key: bob, want: 403})
	r.do(call{method: "DELETE", path: "/v1/pixels/" + pxGone, key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/pixels/" + pxGone, key: alice, want: 404})
	r.do(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com", "utm_template_id": unknownID}, want: 404})
	r.do(call{method: "POST", path: "/v1/links", key: bob, body: map[string]any{"original_url": "https://example.com", "pixel_id": px}, want: 403})
	pixLink := r.created(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{
		"original_url": "https://example.com/pixel", "workspace_id": ws, "pixel_id": px, "utm_template_id": tpl}})
	pixPage := r.do(call{method: "GET", path: "/" + pixLink.str(t, "code"), want: 200, header: []string{
		"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", "Accept", "text/html"}})
	if !strings.Contains(string(pixPage.body), "utm_source=news") || !strings.Contains(string(pixPage.body), "fbevents.js") {
		t.Errorf("pixel page: %s", pixPage.body)
	}
	r.do(call{method: "GET", path: "/" + pixLink.str(t, "code"), want: 302})

	// ---- webhooks (extension); the receiver's name does not resolve, so
	// its deliveries fail and the log shows failed and pending attempts.
	hook := r.created(call{method: "POST", path: "/v1/webhooks", key: alice, body: map[string]any{
		"url": "https://receiver.invalid/hook", "events": []string{"link.created", "link.clicked"}, "workspace_id": ws, "description": "CRM"}})
	hookID := hook.str(t, "id")
	hookGone := r.created(call{method: "POST", path: "/v1/webhooks", key: alice, body: map[string]any{"url": "https://receiver.invalid/other", "events": []string{"sale.created"}, "link_ids": nil}}).str(t, "id")
	r.do(call{method: "POST", path: "/v1/webhooks", key: alice, body: map[string]any{"url": "https://receiver.invalid/x", "events": []string{"link.exploded"}}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/webhooks", key: alice, body: map[string]any{"url": "http://127.0.0.1/x", "events": []string{"link.created"}}, want: 400})
	r.do(call{method: "POST", path: "/v1/webhooks", key: alice, body: map[string]any{"events": []string{"link.created"}}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/webhooks", key: bob, body: map[string]any{"url": "https://receiver.invalid/x", "events": []string{"link.created"}, "workspace_id": ws}, want: 403})
	r.do(call{method: "POST", path: "/v1/webhooks", key: aliceRO, body: map[string]any{"url": "https://receiver.invalid/x", "events": []string{"link.created"}}, want: 403})
	r.do(call{method: "POST", path: "/v1/webhooks", key: alice, body: map[string]any{"url": "https://receiver.invalid/x", "events": []string{"link.created"}, "workspace_id": unknownID}, want: 404})
	r.do(call{method: "GET", path: "/v1/webhooks", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/webhooks?page_size=1&workspace_id=" + ws, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/webhooks?page_size=101", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/webhooks?workspace_id=" + ws, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/webhooks?workspace_id=" + unknownID, key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/webhooks/" + hookID, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/webhooks/" + hookID, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/webhooks/" + unknownID, key: alice, want: 404})
	r.do(call{method: "PUT", path: "/v1/webhooks/" + hookID, key: alice, body: map[string]any{"description": "CRM v2", "link_ids": nil, "is_active": true}, want: 200})
	r.do(call{method: "PUT", path: "/v1/webhooks/" + hookID, key: alice, body: map[string]any{"events": []string{}}, want: 400, invalid: true})
	r.do(call{method: "PUT", path: "/v1/webhooks/" + hookID, key: bob, body: map[string]any{"description": "x"}, want: 403})
	r.do(call{method: "PUT", path: "/v1/webhooks/" + unknownID, key: alice, body: map[string]any{"description": "x"}, want: 404})
	r.created(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com/hooked", "workspace_id": ws}})
	hookDeadline := time.Now().Add(10 * time.Second)
	for {
		d := r.do(call{method: "GET", path: "/v1/webhooks/" + hookID + "/deliveries", key: alice, want: 200})
		if strings.Contains(string(d.body), `"pending"`) && strings.Contains(string(d.body), `"failed"`) || time.Now().After(hookDeadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.do(call{method: "GET", path: "/v1/webhooks/" + hookID + "/deliveries?page=0", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/webhooks/" + hookID + "/deliveries", key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/webhooks/" + unknownID + "/deliveries", key: alice, want: 404})
	hookDay := time.Now().UTC().Format("2006-01-02")
	r.do(call{method: "POST", path: "/v1/webhooks/" + hookID + "/replay", key: alice, body: map[string]any{"start": hookDay, "end": time.Now().UTC().Add(time.Hour).Format(time.RFC3339)}, want: 200})
	r.do(call{method: "POST", path: "/v1/webhooks/" + hookID + "/replay", key: alice, body: map[string]any{"start": hookDay}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/webhooks/" + hookID + "/replay", key: bob, body: map[string]any{"start": hookDay, "end": hookDay}, want: 403})
	r.do(call{method: "POST", path: "/v1/webhooks/" + unknownID + "/replay", key: alice, body: map[string]any{"start": hookDay, "end": hookDay}, want: 404})
	r.do(call{method: "DELETE", path: "/v1/webhooks/" + hookGone, key: bob, want: 403})
	r.do(call{method: "DELETE", path: "/v1/webhooks/" + hookGone, key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/webhooks/" + hookGone, key: alice, want: 404})

	// ---- links
	plainLink := r.created(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com/a"}})
	plain, plainCode := plainLink.str(t, "id"), plainLink.str(t, "code")
	full := r.created(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{
		"original_url": "https://example.com/launch?ref=x", "custom_code": "launch-2025",
		"workspace_id": ws, "project_id": project, "domain_id": nil, "pixel_id": px,
		"name": "Launch", "description": "The launch page", "app": "Acme", "app_logo": "https://example.com/logo.png",
		"android_link": "intent://launch#Intent;scheme=acme;end", "ios_link": "acme://launch",
		"windows_link": "https://example.com/win", "macos_link": "https://example.com/mac",
		"whatsapp_message": "Look at this",
		"metadata": map[string]any{
			"title": "Launch", "description": "Spring", "favicon": "https://example.com/f.ico", "social_image": "https://example.com/s.png",
		},
		"qr_code_options": map[string]any{
			"size": 300, "color": "#112233", "background_color": "#fff", "error_correction_level": "q",
		},
		"utm_name": "n", "utm_source": "newsletter", "utm_medium": "email", "utm_campaign": "spring",
		"utm_term": "t", "utm_content": "c", "utm_template_id": tpl, "referrer": "https://example.com/",
		"password_description": "",
		"excluded_countries":   []map[string]any{{"code": "us", "label": "United States", "phone": "+1"}},
		"has_public_stat":      true, "enable_conversion_tracking": true,
		"expiration_date": time.Now().UTC().AddDate(1, 0, 0).Format(time.RFC3339), "expiration_click_count": 1000,
	}})
	fullID, fullCode := full.str(t, "id"), full.str(t, "code")
	secret := r.created(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{
		"original_url": "https://example.com/secret", "password": "s3cret", "password_description": "Ask Alice"}})
	if got := secret.str(t, "password"); got != "s3cret" {
		t.Errorf("password %q", got)
	}
	secretID, secretCode := secret.str(t, "id"), secret.str(t, "code")
	once := r.created(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com/once", "expiration_click_count": 1}})
	past := r.created(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "mailto:alice@example.com", "expiration_date": "2020-01-01"}})
	if got := r.created(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com/alias", "code": "alias-code"}}).str(t, "code"); got != "alias-code" {
		t.Errorf("code %q, want alias-code", got)
	}
	unclicked := r.created(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "tel:+15550100"}}).str(t, "id")
	r.do(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com/b", "custom_code": "launch-2025", "workspace_id": ws}, want: 409})
	r.do(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "ftp://example.com/file"}, want: 400})
	r.do(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"name": "no url"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com", "custom_code": "no spaces"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com", "expiration_click_count": 0}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com", "has_public_stat": "yes"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/v1/links", key: alice, body: map[string]any{"original_url": "https://example.com", "project_id": unknownID}, want: 404})
	r.do(call{method: "POST", path: "/v1/links", key: bob, body: map[string]any{"original_url": "https://example.com", "workspace_id": ws}, want: 403})
	r.do(call{method: "POST", path: "/v1/links", key: aliceRO, body: map[string]any{"original_url": "https://example.com"}, want: 403})
	big := `{"original_url": "https://example.com/` + strings.Repeat("a", api.MaxBodyBytes) + `"}`
	r.do(call{method: "POST", path: "/v1/links", key: alice, body: big, want: 413, invalid: true})

	r.do(call{method: "GET", path: "/v1/links", key: alice, want: 200})
	linkPage := r.do(call{method: "GET", path: "/v1/links?archived=false&sort_order=asc&page=1&page_size=2", key: alice, want: 200}).object(t)
	if cur, ok := linkPage["next_cursor"].(string); ok {
		r.do(call{method: "GET", path: "/v1/links?page_size=2&sort_order=asc&cursor=" + url.QueryEscape(cur), key: alice, want: 200})
	}
	r.do(call{method: "GET", path: "/v1/links?workspace_id=" + ws + "&project_id=" + project, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/links?sort_order=up", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/links?archived=maybe", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/links?workspace_id=" + unknownID, key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/links?workspace_id=" + ws, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/links/" + fullID, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/links/" + plain, key: aliceLimited, want: 200})
	r.do(call{method: "GET", path: "/v1/links/" + plain, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/links/" + unknownID, key: alice, want: 404})
	r.do(call{method: "PUT", path: "/v1/links/" + fullID, key: alice, want: 200, body: map[string]any{
		"name": nil, "project_id": nil, "metadata": nil, "qr_code_options": map[string]any{"size": 512, "logo_size": 0},
		"expiration_date": nil, "expiration_click_count": nil, "pixel_id": nil, "utm_template_id": nil,
		"excluded_countries": []map[string]any{{"code": "us", "label": "United States", "phone": "+1", "suggested": true, "lang": "en", "continent": "NA"}},
	}})
	r.do(call{method: "PUT", path: "/v1/links/" + plain, key: alice, body: map[string]any{"is_archived": true}, want: 200})
	r.do(call{method: "GET", path: "/v1/links?archived=true", key: alice, want: 200})
	r.do(call{method: "PUT", path: "/v1/links/" + plain, key: alice, body: map[string]any{"is_archived": false, "name": "A", "project_id": project, "workspace_id": ws}, want: 200})
	r.do(call{method: "PUT", path: "/v1/links/" + plain, key: alice, body: map[string]any{"is_archived": nil}, want: 400, invalid: true})
	r.do(call{method: "PUT", path: "/v1/links/" + plain, key: alice, body: map[string]any{"code": "launch-2025"}, want: 409})
	r.do(call{method: "PUT", path: "/v1/links/" + plain, key: alice, body: map[string]any{"original_url": "nope"}, want: 400})
	r.do(call{method: "PUT", path: "/v1/links/" + plain, key: alice, body: map[string]any{"excluded_countries": []map[string]any{{"code": "FR"}}}, want: 400, invalid: true})
	r.do(call{method: "PUT", path: "/v1/links/" + plain, key: aliceLimited, body: map[string]any{"name": "x"}, want: 403})
	r.do(call{method: "PUT", path: "/v1/links/" + unknownID, key: alice, body: map[string]any{"name": "x"}, want: 404})
	r.do(call{method: "GET", path: "/v1/links/" + fullID + "/qr", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/links/" + fullID + "/qr?format=svg&size=128", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/links/" + fullID + "/qr?format=gif", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/links/" + fullID + "/qr?size=10", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/links/" + fullID + "/qr", key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/links/" + unknownID + "/qr", key: alice, want: 404})

	// ---- a link on the verified custom domain
	custom := r.created(call{method: "POST", path: "/v1/links", key: alice,
		body: map[string]any{"original_url": "https://example.com/custom", "custom_code": "spring", "domain_id": dom, "workspace_id": ws}})
	if got := custom.str(t, "short_url"); got != "http://go.example.com/spring" {
		t.Errorf("short_url %q", got)
	}
	r.do(call{method: "GET", path: "/spring", header: []string{"Host", "go.example.com"}, want: 302})
	r.do(call{method: "GET", path: "/v1/links/code/spring", header: []string{"Host", "go.example.com"}, want: 200})
	r.do(call{method: "GET", path: "/spring", want: 404}) // not on the default domain

	// ---- public read by code
	r.do(call{method: "GET", path: "/v1/links/code/" + plainCode, want: 200})
	r.do(call{method: "GET", path: "/v1/links/code/" + secretCode, want: 401})
	r.do(call{method: "GET", path: "/v1/links/code/" + secretCode, header: []string{"X-Link-Password", "wrong"}, want: 401})
	r.do(call{method: "GET", path: "/v1/links/code/" + secretCode, header: []string{"X-Link-Password", "s3cret"}, want: 200})
	r.do(call{method: "GET", path: "/v1/links/code/no-such-code", want: 404})
	r.do(call{method: "GET", path: "/v1/links/code/" + once.str(t, "code"), want: 200})
	r.do(call{method: "GET", path: "/v1/links/code/" + once.str(t, "code"), want: 410})
	r.do(call{method: "GET", path: "/v1/links/code/" + past.str(t, "code"), want: 410})
	r.do(call{method: "GET", path: "/v1/links/" + once.str(t, "id"), key: alice, want: 200}) // is_active false

	// ---- short links
	r.do(call{method: "GET", path: "/" + plainCode, want: 302})
	tracked := r.do(call{method: "GET", path: "/" + fullCode + "?qr=1", want: 302})
	if !strings.Contains(tracked.header.Get("Location"), "svc_tid=") || tracked.header.Get("Set-Cookie") == "" {
		t.Errorf("conversion tracking: Location %q, Set-Cookie %q", tracked.header.Get("Location"), tracked.header.Get("Set-Cookie"))
	}
	r.do(call{method: "GET", path: "/" + fullCode, header: []string{"X-Forwarded-For", "8.8.8.8"}, want: 451})

	// ---- conversions: the click the redirect above handed a tracking id
	loc, err := url.Parse(tracked.header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	tid := loc.Query().Get("svc_tid")
	dave := r.created(call{method: "POST", path: "/v1/api-keys", key: op, body: map[string]any{"name": "dave", "user_id": "dave"}}).str(t, "key")
	lead := map[string]any{"trackingId": tid, "customer": map[string]any{"externalId": "cus_1", "email": "ann@example.com"}, "eventId": "signup-1"}
	sale := map[string]any{"trackingId": tid, "customer": map[string]any{"externalId": "cus_1"}, "amount": 29.99, "currency": "usd", "metadata": map[string]any{"plan": "pro"}}
	r.do(call{method: "POST", path: "/api/events/lead", key: alice, body: lead, want: 200})
	r.do(call{method: "POST", path: "/api/events/lead", key: alice, body: lead, want: 200}) // the same eventId: recorded once
	r.do(call{method: "POST", path: "/api/events/sale", key: alice, body: sale, want: 200})
	r.do(call{method: "POST", path: "/api/events/sale", body: sale, header: []string{"X-Publishable-Key", alicePub, "Origin", "https://example.com"}, want: 200})
	r.do(call{method: "POST", path: "/api/events/sale", body: sale, header: []string{"X-Publishable-Key", alicePub, "Origin", "https://example.com.evil.net"}, want: 401})
	r.do(call{method: "POST", path: "/api/events/lead", body: lead, header: []string{"X-Publishable-Key", alicePub}, want: 401}) // neither Origin nor Referer
	r.do(call{method: "POST", path: "/api/events/sale", key: "svc_sk_unknownunknownunknownunknown00", body: sale, want: 401})
	r.do(call{method: "POST", path: "/api/events/sale", body: sale, want: 401, invalid: true})
	r.do(call{method: "POST", path: "/api/events/sale", key: alice, body: map[string]any{"trackingId": tid, "customer": map[string]any{"externalId": "c"}, "amount": -1, "currency": "USD"}, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/api/events/lead", key: alice, body: map[string]any{"trackingId": tid, "customer": map[string]any{"email": "x@example.com"}}, want: 400})
	r.do(call{method: "POST", path: "/api/events/lead", key: alice, body: map[string]any{"trackingId": "no-such-click", "customer": map[string]any{"externalId": "c"}}, want: 404})
	r.do(call{method: "POST", path: "/api/events/lead", key: dave, body: lead, want: 403})
	r.do(call{method: "POST", path: "/api/events/lead", key: alice, body: `{"trackingId":"` + tid + `","customer":{"externalId":"c"},"metadata":"` + strings.Repeat("x", 70<<10) + `"}`, want: 413, invalid: true})
	// Customers, after the events above.
	custs := r.do(call{method: "GET", path: "/v1/customers?workspace_id=" + ws, key: alice, want: 200})
	var cpage struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := json.Unmarshal(custs.body, &cpage); err != nil || len(cpage.Items) == 0 {
		t.Fatalf("customers: %v %s", err, custs.body)
	}
	r.do(call{method: "GET", path: "/v1/customers?search=cus", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/customers?page_size=0", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/customers?workspace_id=" + ws, key: dave, want: 403})
	r.do(call{method: "GET", path: "/v1/customers/" + cpage.Items[0].ID, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/customers/" + cpage.Items[0].ID, key: dave, want: 403})
	r.do(call{method: "GET", path: "/v1/customers/" + unknownID, key: alice, want: 404})
	for _, ev := range []string{"lead", "sale"} {
		r.do(call{method: "OPTIONS", path: "/api/events/" + ev, header: []string{"Origin", "https://example.com", "Access-Control-Request-Method", "POST"}, want: 204})
		r.do(call{method: "OPTIONS", path: "/api/events/" + ev, header: []string{"Origin", "https://evil-example.com", "Access-Control-Request-Method", "POST"}, want: 403})
	}
	r.do(call{method: "HEAD", path: "/" + plainCode, want: 302})
	r.do(call{method: "GET", path: "/" + secretCode, want: 200})
	r.do(call{method: "POST", path: "/" + secretCode, form: url.Values{"password": {"wrong"}}, want: 401})
	r.do(call{method: "POST", path: "/" + secretCode, form: url.Values{"password": {"s3cret"}}, want: 302})
	r.do(call{method: "POST", path: "/" + plainCode, form: url.Values{"password": {""}}, want: 302})
	r.do(call{method: "GET", path: "/no-such-code", want: 404})
	r.do(call{method: "GET", path: "/" + past.str(t, "code"), want: 410})
	r.do(call{method: "HEAD", path: "/" + secretCode, want: 200})
	r.do(call{method: "HEAD", path: "/no-such-code", want: 404})
	r.do(call{method: "POST", path: "/no-such-code", form: url.Values{"password": {"x"}}, want: 404})
	r.do(call{method: "POST", path: "/" + past.str(t, "code"), form: url.Values{"password": {"x"}}, want: 410})
	r.do(call{method: "POST", path: "/" + fullCode, form: url.Values{"password": {""}}, header: []string{"X-Forwarded-For", "8.8.8.8"}, want: 451})
	// Five wrong passwords a minute per client and link, the public read's
	// X-Link-Password and the form together: two were tried above.
	for range 3 {
		r.do(call{method: "POST", path: "/" + secretCode, form: url.Values{"password": {"guess"}}, want: 401})
	}
	r.do(call{method: "POST", path: "/" + secretCode, form: url.Values{"password": {"guess"}}, want: 429})
	r.do(call{method: "GET", path: "/v1/links/code/" + secretCode, header: []string{"X-Link-Password", "s3cret"}, want: 429})

	// ---- statistics
	today := time.Now().UTC()
	r.do(call{method: "GET", path: "/v1/stats/links/" + plain, key: alice, want: 200})
	r.do(call{method: "GET", path: fmt.Sprintf("/v1/stats/links/%s?start_date=%s&end_date=%s&max_days=2", plain,
		today.AddDate(0, 0, -2).Format(time.DateOnly), today.Format(time.RFC3339)), key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/stats/links/" + plain + "/summary", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/stats/links/" + fullID, key: bob, want: 200}) // has_public_stat
	r.do(call{method: "GET", path: "/v1/stats/links/" + fullID + "/summary", key: aliceLimited, want: 200})
	r.do(call{method: "GET", path: "/v1/stats/links/" + secretID + "/summary", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/stats/links/" + plain, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/stats/links/" + plain + "/summary", key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/stats/links/" + unclicked, key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/stats/links/" + unknownID + "/summary", key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/stats/links/" + plain + "?start_date=2025-02-01&end_date=2025-01-01", key: alice, want: 400})
	r.do(call{method: "GET", path: "/v1/stats/links/" + plain + "/summary?start_date=2025-01-01&end_date=2025-03-01", key: alice, want: 400})
	r.do(call{method: "GET", path: "/v1/stats/links/" + plain + "?max_days=0", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/stats/workspaces", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/stats/workspaces?max_days=3", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/summary", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/summary?start_date=yesterday", key: alice, want: 400})
	r.do(call{method: "GET", path: "/v1/stats/workspaces?max_days=31", key: alice, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/" + ws, key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/" + ws + "/summary", key: alice, want: 200})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/" + ws, key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/" + ws + "/summary", key: bob, want: 403})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/" + unknownID, key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/" + unknownID + "/summary", key: alice, want: 404})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/" + ws + "?end_date=2025-13-01", key: alice, want: 400})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/" + ws + "/summary?start_date=2025-03-01&end_date=2025-01-01", key: alice, want: 400})
	r.do(call{method: "GET", path: "/v1/stats/workspaces/summary", key: alicePub, want: 403})
	r.do(call{method: "GET", path: "/v1/stats/workspaces", key: alicePub, want: 403})

	// ---- public statistics and the link's pages (issue 14)
	r.do(call{method: "GET", path: "/v1/links/code/" + fullCode + "/stats", want: 200})
	r.do(call{method: "GET", path: "/v1/links/code/" + fullCode + "/stats?start_date=" + today.Format(time.DateOnly) + "&max_days=2", want: 200})
	r.do(call{method: "GET", path: "/v1/links/code/" + plainCode + "/stats", want: 404})
	r.do(call{method: "GET", path: "/v1/links/code/" + fullCode + "/stats?start_date=2025-01-01&end_date=2025-03-01", want: 400})
	r.do(call{method: "GET", path: "/" + fullCode + "+", want: 200})
	r.do(call{method: "GET", path: "/" + plainCode + "+", want: 404})
	r.do(call{method: "GET", path: "/" + fullCode + "+?end_date=2025-13-01", want: 400})
	r.do(call{method: "HEAD", path: "/" + fullCode + "+", want: 200})
	r.do(call{method: "PUT", path: "/v1/links/" + fullID, key: alice, want: 200, body: map[string]any{
		"metadata": map[string]any{"title": "Launch", "description": "Spring", "social_image": "https://example.com/s.png"}}})
	r.do(call{method: "GET", path: "/" + fullCode, header: []string{"User-Agent", "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"}, want: 200})
	r.do(call{method: "HEAD", path: "/" + fullCode, header: []string{"User-Agent", "Twitterbot/1.0"}, want: 200})
	r.do(call{method: "GET", path: "/" + fullCode, want: 200, header: []string{"User-Agent",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 335.0.3.15.111 (iPhone15,3; iOS 17_5; en_US; en; scale=3.00; 1290x2796; 612165720)"}})

	// ---- the document catches drift
	plainNow := r.do(call{method: "GET", path: "/v1/links/" + plain, key: alice, want: 200})
	t.Run("drift", func(t *testing.T) { checkDriftIsCaught(t, r.v, plain, plainNow) })

	// ---- rate limit: domain operations allow 100 requests per hour. A
	// user of its own spends them, so that no other request counts.
	erin := r.created(call{method: "POST", path: "/v1/api-keys", key: op, body: map[string]any{"name": "erin", "user_id": "erin"}}).str(t, "key")
	limited := r.created(call{method: "POST", path: "/v1/domains", key: erin, body: map[string]any{"domain": "limit.example.com"}}).str(t, "id")
	spent := false
	for i := 0; i < 150 && !spent; i++ {
		spent = r.do(call{method: "GET", path: "/v1/domains/" + limited, key: erin, want: 200, orWant: 429}).status == http.StatusTooManyRequests
	}
	if !spent {
		t.Error("150 requests on one domain within a minute were not refused with 429")
	}

	// ---- deletes
	r.do(call{method: "DELETE", path: "/v1/links/" + fullID, key: bob, want: 403})
	r.do(call{method: "DELETE", path: "/v1/links/" + plain, key: aliceRO, want: 403})
	r.do(call{method: "DELETE", path: "/v1/links/" + plain, key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/links/" + plain, key: alice, want: 404})
	r.do(call{method: "GET", path: "/" + plainCode, want: 404})
	r.do(call{method: "DELETE", path: "/v1/links/" + custom.str(t, "id"), key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/domains/" + dom, key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/projects/" + project, key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/workspaces/" + ws, key: bob, want: 403})
	r.do(call{method: "DELETE", path: "/v1/workspaces/" + ws, key: alice, want: 200})
	r.do(call{method: "DELETE", path: "/v1/workspaces/" + ws, key: alice, want: 404})

	// ---- plan features: a free workspace refuses them with 403
	t.Run("free plan", func(t *testing.T) {
		free := apptest.Start(t, func(c *app.Config) { c.DefaultPlan = "free" })
		fr := &liveRun{t: t, s: free, v: r.v, seen: r.seen}
		k := free.NewKey("frank", "full", nil)
		l := fr.created(call{method: "POST", path: "/v1/links", key: k, body: map[string]any{"original_url": "https://example.com/f"}}).str(t, "id")
		fr.do(call{method: "POST", path: "/v1/links", key: k, body: map[string]any{"original_url": "https://example.com/p", "password": "pw"}, want: 403})
		fr.do(call{method: "PUT", path: "/v1/links/" + l, key: k, body: map[string]any{"metadata": map[string]any{"title": "T"}}, want: 403})
		fr.do(call{method: "PUT", path: "/v1/links/" + l, key: k, body: map[string]any{"original_url": "https://example.com/g"}, want: 403})
	})

	// ---- Radar: collection with a publishable key bound to the project,
	// then every report with a read key bound to it.
	site := r.created(call{method: "POST", path: "/v1/projects", key: alice, body: map[string]any{"name": "Radar site"}}).str(t, "id")
	radarPub := r.created(call{method: "POST", path: "/v1/api-keys", key: alice, body: map[string]any{"name": "tracker", "kind": "publishable",
		"project_id": site, "allowed_hostnames": []string{"example.com"}}}).str(t, "key")
	radarRead := r.created(call{method: "POST", path: "/v1/api-keys", key: alice, body: map[string]any{"name": "radar", "access": "read_only", "project_id": site}}).str(t, "key")
	web := []string{"Origin", "https://example.com", "User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"}
	r.do(call{method: "POST", path: "/api/v1/radar/collect", body: map[string]any{"type": "pageview", "url": "https://example.com/?svc_tid=" + tid, "visitorId": "v-1", "key": radarPub}, header: web, want: 202})
	r.do(call{method: "POST", path: "/api/v1/radar/collect", body: map[string]any{"type": "event", "url": "https://example.com/a", "visitorId": "v-1", "name": "Signup", "props": map[string]any{"plan": "pro", "seats": 2}},
		header: append([]string{"X-Publishable-Key", radarPub}, web...), want: 202})
	r.do(call{method: "POST", path: "/api/v1/radar/collect", body: `{"type":"identify","visitorId":"v-1","name":"Ann","key":"` + radarPub + `"}`, header: append([]string{"Content-Type", "text/plain"}, web...), want: 202})
	r.do(call{method: "POST", path: "/api/v1/radar/collect", body: map[string]any{"type": "pageview", "url": "https://example.com/", "key": "svc_pk_nope"}, header: web, want: 401})
	r.do(call{method: "POST", path: "/api/v1/radar/collect", body: map[string]any{"type": "pageview", "key": radarPub}, header: web, want: 400})
	r.do(call{method: "POST", path: "/api/v1/radar/collect", body: map[string]any{"type": "visit", "url": "https://example.com/", "key": radarPub}, header: web, want: 400, invalid: true})
	r.do(call{method: "POST", path: "/api/v1/radar/collect", body: map[string]any{"type": "pageview", "url": "https://example.com/", "key": alicePub}, header: web, want: 403})
	r.do(call{method: "POST", path: "/api/v1/radar/collect", body: `{"type":"event","url":"https://example.com/","name":"x","key":"` + radarPub + `","props":{"a":"` + strings.Repeat("p", 9000) + `"}}`, header: web, want: 413, invalid: true})
	r.do(call{method: "OPTIONS", path: "/api/v1/radar/collect", header: []string{"Origin", "https://example.com", "Access-Control-Request-Method", "POST"}, want: 204})
	r.do(call{method: "OPTIONS", path: "/api/v1/radar/collect", header: []string{"Origin", "https://evil-example.com", "Access-Control-Request-Method", "POST"}, want: 403})
	day := today.Format(time.DateOnly)
	rng := "start=" + day + "&end=" + day
	r.do(call{method: "GET", path: "/api/v1/radar/overview?" + rng, key: radarRead, want: 200})
	r.do(call{method: "GET", path: "/api/v1/radar/overview?" + rng, key: alice, want: 403})
	r.do(call{method: "GET", path: "/api/v1/radar/overview?" + rng, key: "svc_sk_unknownunknownunknownunknown00", want: 401})
	r.do(call{method: "GET", path: "/api/v1/radar/overview?start=" + day, key: radarRead, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/api/v1/radar/breakdowns?" + rng, key: radarRead, want: 200})
	r.do(call{method: "GET", path: "/api/v1/radar/breakdowns?limit=0&" + rng, key: radarRead, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/api/v1/radar/custom-events", key: radarRead, want: 200})
	r.do(call{method: "GET", path: "/api/v1/radar/people?" + rng, key: radarRead, want: 200})
	r.do(call{method: "GET", path: "/api/v1/radar/people/details?visitorId=v-1&" + rng, key: radarRead, want: 200})
	r.do(call{method: "GET", path: "/api/v1/radar/people/details?visitorId=nobody&" + rng, key: radarRead, want: 404})
	js := r.do(call{method: "GET", path: "/radar.js", want: 200})
	head := r.do(call{method: "HEAD", path: "/radar.js", want: 200}) // identity: its own ETag (GET asked for gzip)
	r.do(call{method: "GET", path: "/radar.js", header: []string{"If-None-Match", js.header.Get("ETag")}, want: 304})
	r.do(call{method: "HEAD", path: "/radar.js", header: []string{"If-None-Match", head.header.Get("ETag")}, want: 304})
	r.do(call{method: "GET", path: "/api/v1/radar/custom-events?limit=x", key: radarRead, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/api/v1/radar/people?limit=-1&" + rng, key: radarRead, want: 400, invalid: true})
	r.do(call{method: "GET", path: "/api/v1/radar/people/details?" + rng, key: radarRead, want: 400, invalid: true})
	for _, p := range []string{"breakdowns", "custom-events", "people", "people/details"} {
		r.do(call{method: "GET", path: "/api/v1/radar/" + p + "?visitorId=v-1&" + rng, key: alice, want: 403})
	}

	// ---- operations
	r.do(call{method: "GET", path: "/healthz", want: 200})
	r.do(call{method: "HEAD", path: "/healthz", want: 200})
	r.do(call{method: "GET", path: "/metrics", want: 200})
	r.do(call{method: "GET", path: "/openapi.json", want: 200})

	// Every operation was exercised; list the documented statuses that
	// were not (401 and 429 of every operation have their own test).
	var missing []string
	for key, op := range documentedOperations(r.v.doc) {
		seen := r.seen[key]
		if len(seen) == 0 {
			t.Errorf("operation %s was not exercised", key)
			continue
		}
		success := false
		for code := range op.Responses.Map() {
			if seen[code] && strings.HasPrefix(code, "2") || seen[code] && strings.HasPrefix(code, "3") {
				success = true
			}
			if code != "default" && code != "401" && code != "429" && !seen[code] {
				missing = append(missing, key+" "+code)
			}
		}
		if !success {
			t.Errorf("operation %s never succeeded", key)
		}
	}
	slices.Sort(missing)
	t.Logf("documented answers not produced by this run (%d): %s", len(missing), strings.Join(missing, ", "))
}

// checkDriftIsCaught shows that the validation is not vacuous: a real link
// body validates, and the same body with an extra field, a wrong type, a
// null where none is allowed or a missing field does not.
func checkDriftIsCaught(t *testing.T, v *openAPIValidator, id string, a answer) {
	valid := func(body []byte) error {
		return v.validate(exchange{method: "GET", target: "/v1/links/" + id,
			header: http.Header{"Authorization": {"Bearer svc_sk_x"}}, status: 200, respHeader: a.header, respBody: body}).respErr
	}
	if err := valid(a.body); err != nil {
		t.Fatalf("the real body does not validate: %v", err)
	}
	for name, change := range map[string]func(m map[string]any){
		"extra field":         func(m map[string]any) { m["surprise"] = true },
		"clicks as string":    func(m map[string]any) { m["clicks"] = "3" },
		"null name":           func(m map[string]any) { m["name"] = nil },
		"no password":         func(m map[string]any) { delete(m, "password") },
		"project_id number":   func(m map[string]any) { m["project_id"] = 7 },
		"bad created_at":      func(m map[string]any) { m["created_at"] = "yesterday" },
		"metadata extra":      func(m map[string]any) { m["metadata"] = map[string]any{"colour": "red"} },
		"id not a uuid":       func(m map[string]any) { m["id"] = "link-1" },
		"country lower case":  func(m map[string]any) { m["excluded_countries"] = []any{map[string]any{"code": "fr"}} },
		"expiration not time": func(m map[string]any) { m["expiration_date"] = 12 },
	} {
		var m map[string]any
		if err := json.Unmarshal(a.body, &m); err != nil {
			t.Fatal(err)
		}
		change(m)
		b, _ := json.Marshal(m)
		if valid(b) == nil {
			t.Errorf("%s: a drifted link body validates", name)
		}
	}
	// Without the rate-limit headers the response is not valid either.
	h := a.header.Clone()
	h.Del("X-RateLimit-Remaining")
	got := v.validate(exchange{method: "GET", target: "/v1/links/" + id,
		header: http.Header{"Authorization": {"Bearer svc_sk_x"}}, status: 200, respHeader: h, respBody: a.body})
	if got.respErr == nil {
		t.Error("a response without X-RateLimit-Remaining validates")
	}
}
