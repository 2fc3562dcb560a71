package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/queries"
)

func renderWorkspace(ws queries.Workspace) map[string]any {
	return map[string]any{
		"id":          ws.ID,
		"name":        ws.Name,
		"description": ws.Description,
		"created_at":  formatTime(ws.CreatedAt),
		"updated_at":  formatTime(ws.UpdatedAt),
		"plan":        ws.Plan,
	}
}

type workspaceBody struct {
	Name        domain.Opt[string] `json:"name"`
	Description domain.Opt[string] `json:"description"`
}

func (s *Server) respondWorkspace(w http.ResponseWriter, r *http.Request, p principal, status int, id string) error {
	ws, err := s.q.WorkspaceByID.Handle(r.Context(), queries.WorkspaceByID{ID: id, UserID: p.key.UserID})
	if err != nil {
		return err
	}
	writeJSON(w, status, renderWorkspace(ws.Workspace))
	return nil
}

func (s *Server) createWorkspace(w http.ResponseWriter, r *http.Request, p principal) error {
	var b workspaceBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	name, _ := b.Name.Value()
	ws, res, err := s.cmd.CreateWorkspace.Handle(r.Context(), commands.CreateWorkspace{
		Actor: p.actor(), Name: name, Description: b.Description.V,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	return s.respondWorkspace(w, r, p, http.StatusCreated, ws.ID)
}

func (s *Server) listWorkspaces(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	list, err := s.q.UserWorkspaces.Handle(r.Context(), queries.UserWorkspaces{UserID: p.key.UserID})
	if err != nil {
		return err
	}
	out := make([]any, 0, len(list))
	for _, ws := range list {
		out = append(out, renderWorkspace(ws))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getWorkspace(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	ws, err := s.q.WorkspaceByID.Handle(r.Context(), queries.WorkspaceByID{ID: mux.Vars(r)["workspace_id"], UserID: p.key.UserID})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderWorkspace(ws.Workspace))
	return nil
}

func (s *Server) updateWorkspace(w http.ResponseWriter, r *http.Request, p principal) error {
	var b workspaceBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	ws, res, err := s.cmd.UpdateWorkspace.Handle(r.Context(), commands.UpdateWorkspace{
		Actor: p.actor(), WorkspaceID: mux.Vars(r)["workspace_id"], Name: b.Name, Description: nullAsEmpty(b.Description),
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	return s.respondWorkspace(w, r, p, http.StatusOK, ws.ID)
}

func (s *Server) deleteWorkspace(w http.ResponseWriter, r *http.Request, p principal) error {
	res, err := s.cmd.DeleteWorkspace.Handle(r.Context(), commands.DeleteWorkspace{
		Actor: p.actor(), WorkspaceID: mux.Vars(r)["workspace_id"],
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	writeJSON(w, http.StatusOK, map[string]string{"message": "Workspace deleted successfully"})
	return nil
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	id := mux.Vars(r)["workspace_id"]
	members, err := s.q.WorkspaceMembers.Handle(r.Context(), queries.WorkspaceMembers{WorkspaceID: id, UserID: p.key.UserID})
	if err != nil {
		return err
	}
	out := make([]any, 0, len(members))
	for _, m := range members {
		out = append(out, map[string]any{"user_id": m.UserID, "email": m.Email, "role": m.Role, "joined_at": formatTime(m.JoinedAt)})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request, p principal) error {
	q := r.URL.Query()
	userID := q.Get("user_id")
	if userID == "" {
		return domain.Invalid("user_id is required")
	}
	role := q.Get("role") // empty: member for a new member, unchanged for an existing one
	res, err := s.cmd.AddMember.Handle(r.Context(), commands.AddMember{
		Actor: p.actor(), WorkspaceID: mux.Vars(r)["workspace_id"], UserID: userID, Email: q.Get("email"), Role: role,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	writeJSON(w, http.StatusOK, map[string]string{"message": "Member added successfully"})
	return nil
}

func (s *Server) changeMemberRole(w http.ResponseWriter, r *http.Request, p principal) error {
	role := r.URL.Query().Get("role")
	if role == "" {
		return domain.Invalid("role is required")
	}
	vars := mux.Vars(r)
	res, err := s.cmd.ChangeMemberRole.Handle(r.Context(), commands.ChangeMemberRole{
		Actor: p.actor(), WorkspaceID: vars["workspace_id"], UserID: vars["user_id"], Role: role,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	writeJSON(w, http.StatusOK, map[string]string{"message": "Member role updated successfully"})
	return nil
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request, p principal) error {
	vars := mux.Vars(r)
	res, err := s.cmd.RemoveMember.Handle(r.Context(), commands.RemoveMember{
		Actor: p.actor(), WorkspaceID: vars["workspace_id"], UserID: vars["user_id"],
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	writeJSON(w, http.StatusOK, map[string]string{"message": "Member removed successfully"})
	return nil
}
