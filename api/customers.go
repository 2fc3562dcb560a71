package api

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/domain/conversion"
	"github.com/linkd/linkd/queries"
)

// Customers of conversion tracking (an extension, DECISIONS.md
// "Conversion events"): GET /v1/customers and /v1/customers/{id}, with the
// analytics permission.

func (s *Server) listCustomers(w http.ResponseWriter, r *http.Request, p principal) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	s.barrier(r.Context(), s.core)
	q := r.URL.Query()
	res, err := s.q.CustomersPage.Handle(r.Context(), queries.CustomersPage{
		UserID: p.key.UserID, WorkspaceID: q.Get("workspace_id"), Search: q.Get("search"), Page: page,
	})
	if err != nil {
		return err
	}
	items := make([]any, 0, len(res.Items))
	for _, c := range res.Items {
		items = append(items, renderCustomer(c))
	}
	writeJSON(w, http.StatusOK, envelope(res, items))
	return nil
}

func (s *Server) getCustomer(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	c, err := s.q.CustomerByID.Handle(r.Context(), queries.CustomerByID{ID: mux.Vars(r)["customer_id"], UserID: p.key.UserID})
	if err != nil {
		return err
	}
	body := renderCustomer(c.Customer)
	body["events"] = s.renderJourney(r, c)
	writeJSON(w, http.StatusOK, body)
	return nil
}

// money renders amounts in minor units as the currency's units, exactly:
// {"usd": 29.99, "jpy": 2999}.
func money(minor map[string]int64) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(minor))
	for cur, n := range minor {
		out[cur] = json.RawMessage(conversion.FormatAmount(n, cur))
	}
	return out
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func renderCustomer(c queries.Customer) map[string]any {
	return map[string]any{
		"id": c.ID, "externalId": c.ExternalID, "email": orNull(c.Email), "firstname": orNull(c.Firstname),
		"lastname": orNull(c.Lastname), "phoneNumber": orNull(c.PhoneNumber), "avatarUrl": orNull(c.AvatarURL),
		"workspace_id": c.WorkspaceID, "link_id": orNull(c.LinkID), "click_id": orNull(c.ClickID),
		"leads": c.Leads, "sales": c.Sales, "revenue": money(c.Revenue),
		"created_at": formatTime(c.CreatedAt), "updated_at": formatTime(c.UpdatedAt),
	}
}

// renderJourney lists the customer's clicks, leads and sales in time
// order, each with its link: a click comes before the conversions made
// from it.
func (s *Server) renderJourney(r *http.Request, c queries.CustomerWithJourney) []any {
	type item struct {
		at    int64
		order int
		body  map[string]any
	}
	link := func(id string) any {
		l, ok := c.Links[id]
		if !ok {
			return nil
		}
		return map[string]any{"id": l.ID, "code": l.Code, "short_url": s.shortURL(r.Context(), l, nil), "original_url": l.OriginalURL}
	}
	var items []item
	seen := map[string]bool{}
	for i, e := range c.Events {
		if e.ClickID != "" && !seen[e.ClickID] {
			seen[e.ClickID] = true
			items = append(items, item{e.ClickedAt.UnixNano(), 2 * i, map[string]any{
				"type": "click", "timestamp": formatTime(e.ClickedAt), "click_id": e.ClickID, "link_id": e.LinkID, "link": link(e.LinkID),
			}})
		}
		b := map[string]any{
			"type": e.Kind, "timestamp": formatTime(e.Timestamp), "event_name": e.EventName, "conversion_id": e.ConversionID,
			"click_id": e.ClickID, "link_id": e.LinkID, "link": link(e.LinkID), "first": e.First,
			"metadata": json.RawMessage("null"),
		}
		if e.Metadata != nil {
			b["metadata"] = json.RawMessage(e.Metadata)
		}
		if e.Kind == "sale" {
			b["amount"] = json.RawMessage(conversion.FormatAmount(e.AmountMinor, e.Currency))
			b["currency"] = e.Currency
		}
		items = append(items, item{e.Timestamp.UnixNano(), 2*i + 1, b})
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].at != items[j].at {
			return items[i].at < items[j].at
		}
		return items[i].order < items[j].order
	})
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it.body
	}
	return out
}
