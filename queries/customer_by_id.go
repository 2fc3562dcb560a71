package queries

import (
	"context"

	"github.com/linkd/linkd/domain"
)

// CustomerByID asks for a customer of a workspace the user is in, with
// their journey: every lead and sale in the order recorded, each with its
// click and link.
type CustomerByID struct {
	ID     string
	UserID string
}

// CustomerWithJourney is a customer and their leads and sales.
type CustomerWithJourney struct {
	Customer
	Events []CustomerEvent
	// Links are the links of the customer's clicks, by id (a deleted link
	// is absent).
	Links map[string]Link
}

// CustomerByIDReadModel is what CustomerByID reads.
type CustomerByIDReadModel interface {
	Customer(ctx context.Context, id string) (Customer, bool, error)
	CustomerJourney(ctx context.Context, customerID string) ([]CustomerEvent, error)
	Link(ctx context.Context, id string) (Link, bool, error)
	Roles
}

// CustomerByIDHandler answers CustomerByID: 404 `Customer not found`, 403
// (insufficient permissions) for a customer of another workspace.
type CustomerByIDHandler struct {
	ReadModel CustomerByIDReadModel
}

// MsgCustomerNotFound is the detail of an unknown customer.
const MsgCustomerNotFound = "Customer not found"

// Handle answers the query.
func (h CustomerByIDHandler) Handle(ctx context.Context, q CustomerByID) (CustomerWithJourney, error) {
	c, ok, err := h.ReadModel.Customer(ctx, q.ID)
	if err != nil {
		return CustomerWithJourney{}, err
	}
	if !ok {
		return CustomerWithJourney{}, domain.NotFound(MsgCustomerNotFound)
	}
	if _, err := requireMember(ctx, h.ReadModel, c.WorkspaceID, q.UserID, domain.ErrInsufficientPermissions()); err != nil {
		return CustomerWithJourney{}, err
	}
	evs, err := h.ReadModel.CustomerJourney(ctx, c.ID)
	if err != nil {
		return CustomerWithJourney{}, err
	}
	out := CustomerWithJourney{Customer: c, Events: evs, Links: map[string]Link{}}
	for _, e := range evs {
		if _, seen := out.Links[e.LinkID]; seen || e.LinkID == "" {
			continue
		}
		l, ok, err := h.ReadModel.Link(ctx, e.LinkID)
		if err != nil {
			return out, err
		}
		if ok {
			out.Links[e.LinkID] = l
		}
	}
	return out, nil
}
