package conversion_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
)

func issue(msg string, path ...string) conversion.Issue {
	if path == nil {
		path = []string{}
	}
	return conversion.Issue{Path: path, Message: msg}
}

const okCustomer = `"customer": {"externalId": "user-42"}`

func TestParseLead(t *testing.T) {
	t.Parallel()
	t.Run("everything", func(t *testing.T) {
		body := `{"trackingId": "clk-1", "customer": {"externalId": "user-42", "email": "ada@example.com", "firstname": "Ada",
			"lastname": "Lovelace", "phoneNumber": "+44 20", "avatarUrl": "https://e.com/a.png", "unknown": 1},
			"eventName": "Trial started", "eventId": "evt-1", "metadata": {"plan": "pro", "seats": 3, "nested": {"a": [1, 2.50]}},
			"amount": 10, "extra": true}`
		got, err := conversion.ParseLead([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		want := conversion.Payload{
			TrackingID: "clk-1", ExternalID: "user-42",
			Profile:   conversion.Profile{Email: "ada@example.com", Firstname: "Ada", Lastname: "Lovelace", PhoneNumber: "+44 20", AvatarURL: "https://e.com/a.png"},
			EventName: "Trial started", EventID: "evt-1",
			Metadata: json.RawMessage(`{"plan":"pro","seats":3,"nested":{"a":[1,2.50]}}`),
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got  %+v\nwant %+v", got, want)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		for _, body := range []string{
			`{"trackingId": "clk-1", ` + okCustomer + `}`,
			`{"trackingId": "clk-1", ` + okCustomer + `, "eventName": null, "eventId": null, "metadata": null}`,
			`{"trackingId": "clk-1", ` + okCustomer + `, "eventName": "", "eventId": ""}`,
		} {
			got, err := conversion.ParseLead([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			want := conversion.Payload{TrackingID: "clk-1", ExternalID: "user-42", EventName: "Sign up"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:\n got  %+v\n want %+v", body, got, want)
			}
		}
	})
	t.Run("limits are inclusive", func(t *testing.T) {
		meta := `{"k":"` + strings.Repeat("x", conversion.MaxMetadataBytes-8) + `"}`
		body := `{"trackingId": "` + strings.Repeat("t", 255) + `", "customer": {"externalId": "` + strings.Repeat("e", 100) +
			`", "email": "` + strings.Repeat("m", 255) + `"}, "metadata": ` + meta + `}`
		got, err := conversion.ParseLead([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Metadata) != conversion.MaxMetadataBytes {
			t.Errorf("metadata of %d bytes", len(got.Metadata))
		}
	})
	t.Run("metadata is measured compacted", func(t *testing.T) {
		spaced := `{"k": ` + strings.Repeat(" ", 20000) + `"v"}`
		got, err := conversion.ParseLead([]byte(`{"trackingId": "c", ` + okCustomer + `, "metadata": ` + spaced + `}`))
		if err != nil || string(got.Metadata) != `{"k":"v"}` {
			t.Fatalf("%s, %v", got.Metadata, err)
		}
	})
	t.Run("multi-byte strings are counted in bytes", func(t *testing.T) {
		_, err := conversion.ParseLead([]byte(`{"trackingId": "c", "customer": {"externalId": "` + strings.Repeat("é", 51) + `"}}`))
		checkPayloadError(t, err, conversion.MsgInvalidPayload, issue("Must be at most 100 bytes", "customer", "externalId"))
	})
}

func TestParseSale(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, amount, currency string
		minor                  int64
	}{
		{"cents", `29.99`, `"usd"`, 2999},
		{"yen", `2999`, `"jpy"`, 2999},
		{"dinar", `1.234`, `"kwd"`, 1234},
		{"exponent", `2.5e1`, `"eur"`, 2500},
		{"beyond float precision", `90071992547409.91`, `"usd"`, conversion.MaxAmountMinor},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"trackingId": "clk-1", ` + okCustomer + `, "amount": ` + c.amount + `, "currency": ` + c.currency + `}`
			got, err := conversion.ParseSale([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			want := conversion.Payload{TrackingID: "clk-1", ExternalID: "user-42", EventName: "Purchase",
				AmountMinor: c.minor, Currency: strings.Trim(c.currency, `"`)}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func checkPayloadError(t *testing.T, err error, msg string, details ...conversion.Issue) {
	t.Helper()
	var pe *conversion.PayloadError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want a PayloadError", err, err)
	}
	if pe.Message != msg {
		t.Errorf("message %q, want %q (%v)", pe.Message, msg, pe)
	}
	if len(details) == 0 {
		details = nil
	}
	if !reflect.DeepEqual(pe.Details, details) {
		t.Errorf("details\n got  %+v\n want %+v", pe.Details, details)
	}
	if domain.KindOf(err) != domain.KindInvalid {
		t.Errorf("kind %d, want invalid", domain.KindOf(err))
	}
}

func TestPayloadErrors(t *testing.T) {
	t.Parallel()
	inv, missing := conversion.MsgInvalidPayload, conversion.MsgMissingExternalID
	long := strings.Repeat("x", 256)
	cases := []struct {
		name    string
		sale    bool
		body    string
		msg     string
		details []conversion.Issue
	}{
		// The whole body.
		{"empty body", false, ``, inv, []conversion.Issue{issue("Malformed JSON")}},
		{"malformed", false, `{"trackingId": }`, inv, []conversion.Issue{issue("Malformed JSON")}},
		{"two objects", false, `{} {}`, inv, []conversion.Issue{issue("Malformed JSON")}},
		{"array", false, `[1]`, inv, []conversion.Issue{issue("Expected object, received array")}},
		{"string", false, `"x"`, inv, []conversion.Issue{issue("Expected object, received string")}},
		{"null", false, `null`, inv, []conversion.Issue{issue("Expected object, received null")}},
		{"empty object", false, `{}`, inv, []conversion.Issue{issue("Required", "trackingId"), issue("Required", "customer")}},
		{"empty sale", true, `{}`, inv, []conversion.Issue{issue("Required", "trackingId"), issue("Required", "customer"),
			issue("Required", "amount"), issue("Required", "currency")}},

		// Missing customer.externalId: alone it has its own message.
		{"no externalId", false, `{"trackingId": "c", "customer": {}}`, missing, nil},
		{"null externalId", false, `{"trackingId": "c", "customer": {"externalId": null}}`, missing, nil},
		{"empty externalId", false, `{"trackingId": "c", "customer": {"externalId": ""}}`, missing, nil},
		{"no externalId but an email", false, `{"trackingId": "c", "customer": {"email": "a@b.c"}}`, missing, nil},
		{"no externalId in a sale", true, `{"trackingId": "c", "customer": {}, "amount": 1, "currency": "usd"}`, missing, nil},
		{"no externalId and more", false, `{"customer": {}}`, inv, []conversion.Issue{issue("Required", "trackingId"),
			issue("Required", "customer", "externalId")}},
		{"no externalId and a bad email", false, `{"trackingId": "c", "customer": {"email": 5}}`, inv, []conversion.Issue{
			issue("Required", "customer", "externalId"), issue("Expected string, received number", "customer", "email")}},
		{"no customer", false, `{"trackingId": "c"}`, inv, []conversion.Issue{issue("Required", "customer")}},
		{"null customer", false, `{"trackingId": "c", "customer": null}`, inv, []conversion.Issue{issue("Required", "customer")}},
		{"customer not an object", false, `{"trackingId": "c", "customer": "user-42"}`, inv, []conversion.Issue{
			issue("Expected object, received string", "customer")}},
		{"numeric externalId", false, `{"trackingId": "c", "customer": {"externalId": 42}}`, inv, []conversion.Issue{
			issue("Expected string, received number", "customer", "externalId")}},
		{"long externalId", false, `{"trackingId": "c", "customer": {"externalId": "` + strings.Repeat("e", 101) + `"}}`, inv,
			[]conversion.Issue{issue("Must be at most 100 bytes", "customer", "externalId")}},

		// Every bad field at once, in order.
		{"every customer field", false, `{"trackingId": 1, "customer": {"externalId": true, "email": "` + long + `", "firstname": [],
			"lastname": {}, "phoneNumber": 1.5, "avatarUrl": "` + long + `"}, "eventName": 3, "eventId": "` + long + `", "metadata": [1]}`, inv,
			[]conversion.Issue{
				issue("Expected string, received number", "trackingId"),
				issue("Expected string, received boolean", "customer", "externalId"),
				issue("Must be at most 255 bytes", "customer", "email"),
				issue("Expected string, received array", "customer", "firstname"),
				issue("Expected string, received object", "customer", "lastname"),
				issue("Expected string, received number", "customer", "phoneNumber"),
				issue("Must be at most 255 bytes", "customer", "avatarUrl"),
				issue("Expected string, received number", "eventName"),
				issue("Must be at most 255 bytes", "eventId"),
				issue("Expected object, received array", "metadata"),
			}},
		{"empty trackingId", false, `{"trackingId": "", ` + okCustomer + `}`, inv, []conversion.Issue{issue("Must not be empty", "trackingId")}},
		{"long trackingId", false, `{"trackingId": "` + long + `", ` + okCustomer + `}`, inv, []conversion.Issue{
			issue("Must be at most 255 bytes", "trackingId")}},
		{"long eventName", false, `{"trackingId": "c", ` + okCustomer + `, "eventName": "` + long + `"}`, inv, []conversion.Issue{
			issue("Must be at most 255 bytes", "eventName")}},
		{"metadata string", false, `{"trackingId": "c", ` + okCustomer + `, "metadata": "a=b"}`, inv, []conversion.Issue{
			issue("Expected object, received string", "metadata")}},
		{"metadata too large", false, `{"trackingId": "c", ` + okCustomer + `, "metadata": {"k": "` + strings.Repeat("x", conversion.MaxMetadataBytes) + `"}}`, inv,
			[]conversion.Issue{issue("Must be at most 10000 bytes of JSON", "metadata")}},

		// Amount and currency.
		{"amount as string", true, `{"trackingId": "c", ` + okCustomer + `, "amount": "29.99", "currency": "usd"}`, inv, []conversion.Issue{
			issue("Expected number, received string", "amount")}},
		{"amount null", true, `{"trackingId": "c", ` + okCustomer + `, "amount": null, "currency": "usd"}`, inv, []conversion.Issue{
			issue("Required", "amount")}},
		{"amount zero", true, `{"trackingId": "c", ` + okCustomer + `, "amount": 0, "currency": "usd"}`, inv, []conversion.Issue{
			issue(conversion.MsgAmountPositive, "amount")}},
		{"amount negative", true, `{"trackingId": "c", ` + okCustomer + `, "amount": -5, "currency": "usd"}`, inv, []conversion.Issue{
			issue(conversion.MsgAmountPositive, "amount")}},
		{"cents of a cent", true, `{"trackingId": "c", ` + okCustomer + `, "amount": 29.999, "currency": "usd"}`, inv, []conversion.Issue{
			issue(conversion.MsgAmountDecimals("usd", 2), "amount")}},
		{"yen with decimals", true, `{"trackingId": "c", ` + okCustomer + `, "amount": 10.5, "currency": "jpy"}`, inv, []conversion.Issue{
			issue(conversion.MsgAmountDecimals("jpy", 0), "amount")}},
		{"amount too large", true, `{"trackingId": "c", ` + okCustomer + `, "amount": 1e300, "currency": "usd"}`, inv, []conversion.Issue{
			issue(conversion.MsgAmountTooLarge, "amount")}},
		{"uppercase currency", true, `{"trackingId": "c", ` + okCustomer + `, "amount": 1, "currency": "USD"}`, inv, []conversion.Issue{
			issue(conversion.MsgCurrencyLowercase, "currency")}},
		{"unknown currency", true, `{"trackingId": "c", ` + okCustomer + `, "amount": 1, "currency": "btc"}`, inv, []conversion.Issue{
			issue(conversion.MsgCurrencyUnknown, "currency")}},
		{"currency not a string", true, `{"trackingId": "c", ` + okCustomer + `, "amount": 1, "currency": 840}`, inv, []conversion.Issue{
			issue("Expected string, received number", "currency")}},
		{"bad currency and negative amount", true, `{"trackingId": "c", ` + okCustomer + `, "amount": -1.555, "currency": "XX"}`, inv,
			[]conversion.Issue{issue(conversion.MsgAmountPositive, "amount"), issue(conversion.MsgCurrencyUnknown, "currency")}},
		{"bad currency, amount unjudged", true, `{"trackingId": "c", ` + okCustomer + `, "amount": 1.555, "currency": "XX"}`, inv,
			[]conversion.Issue{issue(conversion.MsgCurrencyUnknown, "currency")}},
		{"everything wrong in a sale", true, `{"customer": {"externalId": ""}, "amount": "1", "currency": "EUR", "metadata": 1}`, inv,
			[]conversion.Issue{issue("Required", "trackingId"), issue("Required", "customer", "externalId"),
				issue("Expected number, received string", "amount"), issue(conversion.MsgCurrencyLowercase, "currency"),
				issue("Expected object, received number", "metadata")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parse := conversion.ParseLead
			if c.sale {
				parse = conversion.ParseSale
			}
			got, err := parse([]byte(c.body))
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			checkPayloadError(t, err, c.msg, c.details...)
		})
	}
}

// The details serialise as the spec shows them: path is an array of
// strings, the whole body's path an empty array.
func TestIssueJSON(t *testing.T) {
	_, err := conversion.ParseLead([]byte(`[]`))
	var pe *conversion.PayloadError
	if !errors.As(err, &pe) {
		t.Fatal(err)
	}
	b, _ := json.Marshal(pe.Details)
	if string(b) != `[{"path":[],"message":"Expected object, received array"}]` {
		t.Errorf("%s", b)
	}
	b, _ = json.Marshal(issue("Required", "customer", "externalId"))
	if string(b) != `{"path":["customer","externalId"],"message":"Required"}` {
		t.Errorf("%s", b)
	}
	if s := issue("Required", "customer", "externalId").PathString(); s != "customer.externalId" {
		t.Errorf("%s", s)
	}
}

func FuzzParseSale(f *testing.F) {
	f.Add([]byte(`{"trackingId": "c", "customer": {"externalId": "e"}, "amount": 29.99, "currency": "usd"}`))
	f.Add([]byte(`{"trackingId": "c", "customer": {}, "amount": "1", "currency": "USD", "metadata": {"a": [1]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := conversion.ParseSale(body)
		if err != nil {
			var pe *conversion.PayloadError
			if !errors.As(err, &pe) {
				t.Fatalf("%T %v", err, err)
			}
			if (pe.Message == conversion.MsgInvalidPayload) != (len(pe.Details) > 0) {
				t.Fatalf("%q with %d details", pe.Message, len(pe.Details))
			}
			return
		}
		if p.TrackingID == "" || p.ExternalID == "" || p.AmountMinor <= 0 || p.AmountMinor > conversion.MaxAmountMinor {
			t.Fatalf("accepted %+v", p)
		}
		if _, err := conversion.ParseAmount(conversion.FormatAmount(p.AmountMinor, p.Currency), p.Currency); err != nil {
			t.Fatal(err)
		}
		if p.Metadata != nil && (!json.Valid(p.Metadata) || p.Metadata[0] != '{' || len(p.Metadata) > conversion.MaxMetadataBytes) {
			t.Fatalf("metadata %s", p.Metadata)
		}
	})
}

// BenchmarkParseSale reads a shop's sale body.
//
//	go test -run '^$' -bench ParseSale ./domain/conversion/
func BenchmarkParseSale(b *testing.B) {
	body := []byte(`{"trackingId":"01a20e83-f4a0-79c4-84f5-1f6ab4148518","customer":{"externalId":"cus_1732480000_4812","email":"ann@example.com","firstname":"Ann"},"amount":129.90,"currency":"usd","eventId":"order-99812"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conversion.ParseSale(body); err != nil {
			b.Fatal(err)
		}
	}
}
