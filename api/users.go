package api

import (
	"net/http"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
)

type userBody struct {
	UserID   *string `json:"user_id"`
	Email    *string `json:"email"`
	Password *string `json:"password"`
}

// createUser is POST /v1/users: the operator key makes a user who signs
// in to the dashboard.
func (s *Server) createUser(w http.ResponseWriter, r *http.Request, p principal) error {
	if !p.key.Operator {
		return domain.ErrInsufficientPermissions()
	}
	var b userBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	switch {
	case b.UserID == nil:
		return domain.Invalid("user_id is required")
	case b.Email == nil:
		return domain.Invalid("email is required")
	case b.Password == nil:
		return domain.Invalid("password is required")
	}
	u, _, err := s.cmd.CreateUser.Handle(r.Context(), commands.CreateUser{
		Actor: p.actor(), UserID: *b.UserID, Email: *b.Email, Password: *b.Password,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"user_id": u.ID, "email": u.Email, "created_at": formatTime(u.CreatedAt)})
	return nil
}
