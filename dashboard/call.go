package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/linkd/linkd/api"
)

// Calling the interface: a page sends requests to the interface's router
// in process, as the session's user (api.AsUser), and reads its answers.

// apiResult is the answer of an in-process call to /v1.
type apiResult struct {
	Status int
	Body   []byte
}

func (a apiResult) ok() bool { return a.Status >= 200 && a.Status < 300 }

// detail is the error message of a failed call.
func (a apiResult) detail() string {
	var e struct {
		Detail any `json:"detail"`
		Error  any `json:"error"` // the Radar reports' shape
	}
	if json.Unmarshal(a.Body, &e) == nil && e.Detail == nil {
		e.Detail = e.Error
	}
	if e.Detail != nil {
		if s, ok := e.Detail.(string); ok {
			return s
		}
		b, _ := json.Marshal(e.Detail)
		return string(b)
	}
	return http.StatusText(a.Status)
}

// object decodes the answer as a JSON object (numbers kept exact).
func (a apiResult) object() map[string]any {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(a.Body))
	dec.UseNumber()
	_ = dec.Decode(&m)
	return m
}

func (a apiResult) list() []any {
	var l []any
	dec := json.NewDecoder(bytes.NewReader(a.Body))
	dec.UseNumber()
	_ = dec.Decode(&l)
	return l
}

// recorder collects a handler's answer.
type recorder struct {
	h    http.Header
	code int
	buf  bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.buf.Write(b)
}

// call sends a request to the interface in process as the session's user.
func (d *Dashboard) call(ctx context.Context, c *dashCtx, method, path string, body any) apiResult {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return apiResult{Status: http.StatusBadRequest, Body: []byte(`{"detail":"bad form"}`)}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(api.AsUser(ctx, c.as), method, path, rd)
	if err != nil {
		return apiResult{Status: http.StatusBadRequest, Body: []byte(`{"detail":"bad request"}`)}
	}
	req.Header.Set("Content-Type", "application/json")
	rec := &recorder{h: http.Header{}}
	d.router.ServeHTTP(rec, req)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return apiResult{Status: rec.code, Body: rec.buf.Bytes()}
}

// get calls GET path and decodes an object; a failure becomes the page's
// answer (its status and message) and false.
func (d *Dashboard) getObject(w http.ResponseWriter, r *http.Request, c *dashCtx, path string) (map[string]any, bool) {
	res := d.call(r.Context(), c, http.MethodGet, path, nil)
	if !res.ok() {
		d.failed(w, r, c, res)
		return nil, false
	}
	return res.object(), true
}

func (d *Dashboard) failed(w http.ResponseWriter, r *http.Request, c *dashCtx, res apiResult) {
	title := http.StatusText(res.Status)
	d.render(w, r, c, res.Status, "error", title, map[string]any{"Message": res.detail()})
}
