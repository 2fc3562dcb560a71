package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Text in lead, sale and collect bodies must be valid UTF-8 without lone
// surrogates (DECISIONS.md, "Conversion events"): a decoder would make
// both U+FFFD, so two customers whose externalId differ only there would
// become one. Every field is held to it, as /v1 bodies are.
func TestEventBodiesRefuseTextThatIsNotUTF8(t *testing.T) {
	t.Parallel()
	e := newRadar(t)
	s, alice := e.s, e.owner
	tid := trackingID(t, s, alice)
	bads := map[string]string{
		"an invalid byte":        "\xff",
		"a truncated sequence":   "\xe2\x82",
		"a lone high surrogate":  `\ud800`,
		"a lone low surrogate":   `\udc00`,
		"a high surrogate, text": `\uD800x`,
	}
	conversion := map[string]string{
		"externalId":   `{"trackingId":"` + tid + `","customer":{"externalId":"cus_@"},"amount":1,"currency":"usd"}`,
		"email":        `{"trackingId":"` + tid + `","customer":{"externalId":"cus_1","email":"a@"},"amount":1,"currency":"usd"}`,
		"firstname":    `{"trackingId":"` + tid + `","customer":{"externalId":"cus_1","firstname":"@"},"amount":1,"currency":"usd"}`,
		"eventName":    `{"trackingId":"` + tid + `","customer":{"externalId":"cus_1"},"eventName":"@","amount":1,"currency":"usd"}`,
		"eventId":      `{"trackingId":"` + tid + `","customer":{"externalId":"cus_1"},"eventId":"o@","amount":1,"currency":"usd"}`,
		"metadata":     `{"trackingId":"` + tid + `","customer":{"externalId":"cus_1"},"metadata":{"k":"@"},"amount":1,"currency":"usd"}`,
		"metadata key": `{"trackingId":"` + tid + `","customer":{"externalId":"cus_1"},"metadata":{"@":"v"},"amount":1,"currency":"usd"}`,
		"trackingId":   `{"trackingId":"` + tid + `@","customer":{"externalId":"cus_1"},"amount":1,"currency":"usd"}`,
	}
	collect := map[string]string{
		"url":       `{"type":"pageview","visitorId":"v1","url":"https://shop.example/@"}`,
		"referrer":  `{"type":"pageview","visitorId":"v1","url":"https://shop.example/","referrer":"https://r.example/@"}`,
		"visitorId": `{"type":"pageview","visitorId":"v@","url":"https://shop.example/"}`,
		"name":      `{"type":"event","visitorId":"v1","url":"https://shop.example/","name":"Sign@"}`,
		"props":     `{"type":"event","visitorId":"v1","url":"https://shop.example/","name":"Sign","props":{"plan":"@"}}`,
		"email":     `{"type":"identify","visitorId":"v1","email":"a@"}`,
	}
	for bad, text := range bads {
		for field, tmpl := range conversion {
			body := strings.Replace(tmpl, "@", text, 1)
			for _, kind := range []string{"lead", "sale"} {
				t.Run(kind+" with "+bad+" in "+field, func(t *testing.T) {
					eventErr(t, s.Do("POST", "/api/events/"+kind, alice, body), http.StatusBadRequest, msgInvalidPayload)
				})
			}
		}
		for field, tmpl := range collect {
			body := strings.Replace(tmpl, "@", text, 1)
			body = strings.Replace(body, "{", `{"key":"`+e.pk+`",`, 1)
			r := s.Do("POST", "/api/v1/radar/collect", "", body, "Content-Type", "text/plain;charset=UTF-8",
				"Origin", "https://shop.example", "User-Agent", chromeUA)
			if r.Status != http.StatusBadRequest {
				t.Errorf("collect with %s in %s: %d %s, want 400", bad, field, r.Status, r.Body)
				continue
			}
			var m map[string]any
			if json.Unmarshal(r.Body, &m) != nil || m["error"] != msgInvalidPayload {
				t.Errorf("collect with %s in %s: %s, want {\"error\": %q}", bad, field, r.Body, msgInvalidPayload)
			}
		}
	}
	// Nothing was stored: no customer, no visitor.
	customers := obj(t, s.Do("GET", "/v1/customers", alice, nil), http.StatusOK)
	if items, _ := customers["items"].([]any); len(items) != 0 {
		t.Errorf("customers stored from refused bodies: %v", items)
	}
	if people := e.get(t, "/api/v1/radar/people?"+e.rangeQ())["data"].([]any); len(people) != 0 {
		t.Errorf("visitors stored from refused bodies: %v", people)
	}
	// A proper surrogate pair and plain non-ASCII text are text.
	okEvent(t, s.Do("POST", "/api/events/lead", alice, `{"trackingId":"`+tid+`","customer":{"externalId":"cus_\ud83d\ude00 Zoë"}}`))
}

// A body over the 1 MiB limit answers 413 in its interface's own shape:
// {error} under /api/, {detail} under /v1.
func TestOversizedBodiesAnswerInTheirInterfaceShape(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.NewKey("alice", "full", nil)
	big := `{"x":"` + strings.Repeat("a", 1<<20+10) + `"}`
	for _, path := range []string{"/api/events/lead", "/api/events/sale", "/api/v1/radar/collect"} {
		r := s.Do("POST", path, alice, big)
		if r.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: %d, want 413", path, r.Status)
			continue
		}
		var m map[string]any
		if json.Unmarshal(r.Body, &m) != nil || m["error"] != msgBodyTooLarge || m["detail"] != nil {
			t.Errorf("%s: %s, want {\"error\": %q}", path, r.Body, msgBodyTooLarge)
		}
	}
	wantError(t, s.Do("POST", "/v1/links", alice, big), http.StatusRequestEntityTooLarge, msgBodyTooLarge)
}
