package conversion_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/conversion"
	. "github.com/linkd/linkd/domain/domaintest"
)

func givenCustomer(t *testing.T, events ...domain.Event) *conversion.Customer {
	t.Helper()
	c, err := conversion.LoadCustomer(Given(t, events...))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	clk     = conversion.Click{ClickID: "clk-1", LinkID: "lnk-1", WorkspaceID: "ws-1", ProjectID: "prj-1", ClickedAt: At(-60)}
	clk2    = conversion.Click{ClickID: "clk-2", LinkID: "lnk-2", WorkspaceID: "ws-1", ClickedAt: At(-30)}
	created = &conversion.CustomerCreated{CustomerID: "cus-1", WorkspaceID: "ws-1", ExternalID: "user-42",
		Profile: conversion.Profile{Email: "ada@example.com"}, At: T0}
	lead1 = &conversion.LeadTracked{ConversionID: "cnv-1", EventName: "Sign up", Click: clk, CustomerID: "cus-1",
		CustomerExternalID: "user-42", First: true, Timestamp: At(1)}
	sale1 = &conversion.SaleTracked{ConversionID: "cnv-2", EventName: "Purchase", Click: clk, CustomerID: "cus-1",
		CustomerExternalID: "user-42", AmountMinor: 2999, Currency: "usd", First: true, Timestamp: At(2)}
)

func TestUpsert(t *testing.T) {
	t.Run("creates a new customer", func(t *testing.T) {
		c := givenCustomer(t)
		if err := c.Upsert("cus-1", "ws-1", "user-42", conversion.Profile{Email: "ada@example.com"}, T0); err != nil {
			t.Fatal(err)
		}
		Then(t, c, created)
		if v, exists := c.LoadedVersion(); exists || v != 0 {
			t.Errorf("a new customer expects no stream: %d %v", v, exists)
		}
	})
	t.Run("the same values change nothing", func(t *testing.T) {
		c := givenCustomer(t, created)
		if err := c.Upsert("cus-other", "ws-1", "user-42", conversion.Profile{Email: "ada@example.com"}, At(1)); err != nil {
			t.Fatal(err)
		}
		ThenNothing(t, c)
	})
	t.Run("empty values change nothing", func(t *testing.T) {
		c := givenCustomer(t, created)
		if err := c.Upsert("cus-other", "ws-1", "user-42", conversion.Profile{}, At(1)); err != nil {
			t.Fatal(err)
		}
		ThenNothing(t, c)
		if c.Profile.Email != "ada@example.com" {
			t.Errorf("email %q", c.Profile.Email)
		}
	})
	t.Run("later non-empty values win", func(t *testing.T) {
		c := givenCustomer(t, created)
		err := c.Upsert("cus-other", "ws-1", "user-42", conversion.Profile{Email: "ada@new.example", Firstname: "Ada", Lastname: ""}, At(1))
		if err != nil {
			t.Fatal(err)
		}
		Then(t, c, &conversion.CustomerUpdated{CustomerID: "cus-1", WorkspaceID: "ws-1", ExternalID: "user-42",
			Profile: conversion.Profile{Email: "ada@new.example", Firstname: "Ada"}, At: At(1)})
		if v, exists := c.LoadedVersion(); !exists || v != 0 {
			t.Errorf("an update expects version 0: %d %v", v, exists)
		}
	})
	t.Run("an update keeps the other fields", func(t *testing.T) {
		c := givenCustomer(t, created, &conversion.CustomerUpdated{CustomerID: "cus-1", WorkspaceID: "ws-1", ExternalID: "user-42",
			Profile: conversion.Profile{Firstname: "Ada", PhoneNumber: "+44"}, At: At(1)})
		want := conversion.Profile{Email: "ada@example.com", Firstname: "Ada", PhoneNumber: "+44"}
		if c.Profile != want || c.ID != "cus-1" || c.CreatedAt != T0 {
			t.Errorf("%+v", c)
		}
	})
	for _, x := range []struct {
		name                  string
		id, ws, ext           string
		p                     conversion.Profile
		kind                  domain.Kind
		existing, internalErr bool
	}{
		{name: "no external id", id: "cus-1", ws: "ws-1", kind: domain.KindInvalid},
		{name: "long external id", id: "cus-1", ws: "ws-1", ext: strings.Repeat("e", 101), kind: domain.KindInvalid},
		{name: "long email", id: "cus-1", ws: "ws-1", ext: "e", p: conversion.Profile{Email: strings.Repeat("m", 256)}, kind: domain.KindInvalid},
		{name: "no id", ws: "ws-1", ext: "e", kind: domain.KindInvalid},
		{name: "no workspace", id: "cus-1", ext: "e", kind: domain.KindInvalid},
		{name: "another external id in the stream", id: "x", ws: "ws-1", ext: "user-43", existing: true, internalErr: true},
		{name: "another workspace in the stream", id: "x", ws: "ws-2", ext: "user-42", existing: true, internalErr: true},
	} {
		t.Run(x.name, func(t *testing.T) {
			c := givenCustomer(t)
			if x.existing {
				c = givenCustomer(t, created)
			}
			err := c.Upsert(x.id, x.ws, x.ext, x.p, At(1))
			if x.internalErr {
				if err == nil || domain.KindOf(err) != 0 {
					t.Fatalf("err %v, want an internal error", err)
				}
			} else {
				ThenError(t, err, x.kind, "")
			}
			ThenNothing(t, c)
		})
	}
}

func conv(id string, click conversion.Click, at int) conversion.Conversion {
	return conversion.Conversion{ConversionID: id, Click: click, At: At(at)}
}

func TestTrackLead(t *testing.T) {
	t.Run("the first lead keeps its click", func(t *testing.T) {
		c := givenCustomer(t, created)
		if err := c.TrackLead(conv("cnv-1", clk, 1)); err != nil {
			t.Fatal(err)
		}
		Then(t, c, lead1)
		if c.LeadClick != clk || c.Leads != 1 || !c.Has("cnv-1") {
			t.Errorf("%+v", c)
		}
	})
	t.Run("a later lead is not first and keeps the first click", func(t *testing.T) {
		c := givenCustomer(t, created, lead1)
		cv := conv("cnv-3", clk2, 3)
		cv.EventName, cv.EventID, cv.Metadata = "Trial", "evt-3", json.RawMessage("{ \"a\" : [1, 2.50] }")
		if err := c.TrackLead(cv); err != nil {
			t.Fatal(err)
		}
		Then(t, c, &conversion.LeadTracked{ConversionID: "cnv-3", EventID: "evt-3", EventName: "Trial", Click: clk2, CustomerID: "cus-1",
			CustomerExternalID: "user-42", Metadata: json.RawMessage(`{"a":[1,2.50]}`), Timestamp: At(3)})
		if c.LeadClick != clk || c.Leads != 2 {
			t.Errorf("%+v", c)
		}
	})
	t.Run("a sale before any lead leaves the lead first", func(t *testing.T) {
		c := givenCustomer(t, created, sale1)
		if err := c.TrackLead(conv("cnv-1", clk, 1)); err != nil {
			t.Fatal(err)
		}
		Then(t, c, lead1)
	})
	t.Run("created and tracked in one append", func(t *testing.T) {
		c := givenCustomer(t)
		if err := c.Upsert("cus-1", "ws-1", "user-42", conversion.Profile{Email: "ada@example.com"}, T0); err != nil {
			t.Fatal(err)
		}
		if err := c.TrackLead(conv("cnv-1", clk, 1)); err != nil {
			t.Fatal(err)
		}
		Then(t, c, created, lead1)
		if _, exists := c.LoadedVersion(); exists {
			t.Errorf("the append must expect no stream")
		}
	})
	t.Run("recorded already", func(t *testing.T) {
		c := givenCustomer(t, created, lead1)
		if err := c.TrackLead(conv("cnv-1", clk2, 5)); !errors.Is(err, conversion.ErrAlreadyRecorded) {
			t.Fatalf("err %v", err)
		}
		ThenNothing(t, c)
	})
	for _, x := range []struct {
		name   string
		given  []domain.Event
		change func(*conversion.Conversion)
		kind   domain.Kind
		msg    string
	}{
		{"no customer", nil, nil, domain.KindInvalid, ""},
		{"no conversion id", []domain.Event{created}, func(cv *conversion.Conversion) { cv.ConversionID = "" }, domain.KindInvalid, ""},
		{"no click", []domain.Event{created}, func(cv *conversion.Conversion) { cv.Click = conversion.Click{} }, domain.KindNotFound, conversion.MsgClickNotFound},
		{"click of another workspace", []domain.Event{created}, func(cv *conversion.Conversion) { cv.Click.WorkspaceID = "ws-2" },
			domain.KindForbidden, conversion.MsgClickNotYours},
		{"metadata not an object", []domain.Event{created}, func(cv *conversion.Conversion) { cv.Metadata = json.RawMessage(`[1]`) }, domain.KindInvalid, ""},
		{"metadata not JSON", []domain.Event{created}, func(cv *conversion.Conversion) { cv.Metadata = json.RawMessage(`{`) }, domain.KindInvalid, ""},
		{"metadata too large", []domain.Event{created}, func(cv *conversion.Conversion) {
			cv.Metadata = json.RawMessage(`{"k":"` + strings.Repeat("x", conversion.MaxMetadataBytes) + `"}`)
		}, domain.KindInvalid, ""},
		{"long event name", []domain.Event{created}, func(cv *conversion.Conversion) { cv.EventName = strings.Repeat("n", 256) }, domain.KindInvalid, ""},
	} {
		t.Run(x.name, func(t *testing.T) {
			c := givenCustomer(t, x.given...)
			cv := conv("cnv-9", clk, 9)
			if x.change != nil {
				x.change(&cv)
			}
			ThenError(t, c.TrackLead(cv), x.kind, x.msg)
			ThenNothing(t, c)
		})
	}
}

func TestTrackSale(t *testing.T) {
	t.Run("the first sale", func(t *testing.T) {
		c := givenCustomer(t, created, lead1)
		if err := c.TrackSale(conv("cnv-2", clk, 2), 2999, "usd"); err != nil {
			t.Fatal(err)
		}
		Then(t, c, sale1)
		if c.Sales != 1 {
			t.Errorf("sales %d", c.Sales)
		}
	})
	t.Run("a second sale is not first", func(t *testing.T) {
		c := givenCustomer(t, created, lead1, sale1)
		cv := conv("cnv-4", clk2, 4)
		cv.EventName = "Renewal"
		if err := c.TrackSale(cv, 2999, "jpy"); err != nil {
			t.Fatal(err)
		}
		Then(t, c, &conversion.SaleTracked{ConversionID: "cnv-4", EventName: "Renewal", Click: clk2, CustomerID: "cus-1",
			CustomerExternalID: "user-42", AmountMinor: 2999, Currency: "jpy", Timestamp: At(4)})
	})
	t.Run("leads do not count as sales", func(t *testing.T) {
		c := givenCustomer(t, created, lead1, &conversion.LeadTracked{ConversionID: "cnv-5", EventName: "x", Click: clk2,
			CustomerID: "cus-1", CustomerExternalID: "user-42", Timestamp: At(5)})
		if err := c.TrackSale(conv("cnv-2", clk, 2), 2999, "usd"); err != nil {
			t.Fatal(err)
		}
		Then(t, c, sale1)
	})
	t.Run("recorded already", func(t *testing.T) {
		c := givenCustomer(t, created, sale1)
		if err := c.TrackSale(conv("cnv-2", clk, 2), 1, "usd"); !errors.Is(err, conversion.ErrAlreadyRecorded) {
			t.Fatalf("err %v", err)
		}
		ThenNothing(t, c)
	})
	for _, x := range []struct {
		name     string
		minor    int64
		currency string
		msg      string
	}{
		{"zero", 0, "usd", conversion.MsgAmountPositive},
		{"negative", -1, "usd", conversion.MsgAmountPositive},
		{"too large", conversion.MaxAmountMinor + 1, "usd", conversion.MsgAmountTooLarge},
		{"uppercase currency", 1, "USD", conversion.MsgCurrencyLowercase},
		{"unknown currency", 1, "btc", conversion.MsgCurrencyUnknown},
	} {
		t.Run(x.name, func(t *testing.T) {
			c := givenCustomer(t, created)
			ThenError(t, c.TrackSale(conv("cnv-9", clk, 9), x.minor, x.currency), domain.KindInvalid, x.msg)
			ThenNothing(t, c)
		})
	}
}

func TestLoadCustomerRefusesOtherEvents(t *testing.T) {
	if _, err := conversion.LoadCustomer([]domain.Event{&conversion.CustomerCreated{}, &struct{ domain.Event }{}}); err == nil {
		t.Fatal("an unexpected event loaded")
	}
}

func TestStreamNames(t *testing.T) {
	s := conversion.CustomerStream("ws-1", "user/42 ü\x00")
	if !strings.HasPrefix(s, "customer-ws-1-") || len(s) != len("customer-ws-1-")+64 || strings.Trim(s[len("customer-ws-1-"):], "0123456789abcdef") != "" {
		t.Errorf("stream %q", s)
	}
	if conversion.CustomerStream("ws-1", "a") == conversion.CustomerStream("ws-2", "a") ||
		conversion.CustomerStream("ws-1", "a") == conversion.CustomerStream("ws-1", "A") {
		t.Errorf("streams collide")
	}
	if k := conversion.EventIDKey("ws-1", "evt-1"); !strings.HasPrefix(k, "ws-1-") || len(k) != len("ws-1-")+64 {
		t.Errorf("key %q", k)
	}
	if conversion.EventIDKey("ws-1", "e") == conversion.EventIDKey("ws-2", "e") {
		t.Errorf("keys collide across workspaces")
	}
}

// A snapshot is the customer at its version, without pending events, and
// knows only its last few conversion ids; recording on it leaves the
// original as it was.
func TestSnapshot(t *testing.T) {
	c := givenCustomer(t, created, lead1)
	if err := c.TrackSale(conv("cnv-2", clk, 2), 2999, "usd"); err != nil {
		t.Fatal(err)
	}
	s := c.Snapshot()
	if len(s.Pending()) != 0 || s.Version() != c.Version() || s.ID != "cus-1" || s.Leads != 1 || s.Sales != 1 || s.LeadClick != clk {
		t.Fatalf("snapshot %+v of %+v", s, c)
	}
	if v, ok := s.LoadedVersion(); !ok || v != 2 {
		t.Errorf("snapshot loaded at %d %v, want 2", v, ok)
	}
	if !s.Has("cnv-1") || !s.Has("cnv-2") || s.Has("cnv-3") || s.Has("") || !c.Has("cnv-1") {
		t.Errorf("a snapshot knows its last conversion ids; the customer knows its own")
	}
	if err := s.TrackSale(conv("cnv-4", clk2, 4), 100, "eur"); err != nil {
		t.Fatal(err)
	}
	Then(t, s, &conversion.SaleTracked{ConversionID: "cnv-4", EventName: "Purchase", Click: clk2, CustomerID: "cus-1",
		CustomerExternalID: "user-42", AmountMinor: 100, Currency: "eur", Timestamp: At(4)})
	if c.Sales != 1 || c.Has("cnv-4") || len(c.Pending()) != 1 {
		t.Errorf("recording on the snapshot changed the customer: %+v", c)
	}
	// Four conversions on, a snapshot has forgotten cnv-1 and cnv-2
	// (the customer loaded from its history would know them).
	for i := range 3 {
		if err := s.TrackSale(conv(fmt.Sprintf("cnv-%d", 5+i), clk2, 5+i), 100, "eur"); err != nil {
			t.Fatal(err)
		}
	}
	if s2 := s.Snapshot(); s2.Has("cnv-1") || s2.Has("cnv-2") || !s2.Has("cnv-4") || !s2.Has("cnv-7") {
		t.Errorf("a snapshot keeps the last %d ids", 4)
	}
}
