package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/queries"
)

type projectBody struct {
	Name        domain.Opt[string] `json:"name"`
	Description domain.Opt[string] `json:"description"`
	Color       domain.Opt[string] `json:"color"`
	WorkspaceID domain.Opt[string] `json:"workspace_id"`
}

// The spec gives each operation its own subset of fields.
func projectCreated(p queries.Project) map[string]any {
	return map[string]any{"id": p.ID, "created_at": formatTime(p.CreatedAt), "name": p.Name, "description": p.Description, "color": p.Color}
}

func projectUpdated(p queries.Project) map[string]any {
	return map[string]any{"id": p.ID, "name": p.Name, "description": p.Description, "updated_at": formatTime(p.UpdatedAt)}
}

func projectRead(p queries.Project) map[string]any {
	return map[string]any{"id": p.ID, "name": p.Name, "description": p.Description, "created_at": formatTime(p.CreatedAt), "updated_at": formatTime(p.UpdatedAt)}
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request, p principal) error {
	var b projectBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	name, _ := b.Name.Value()
	color, _ := b.Color.Value()
	pr, res, err := s.cmd.CreateProject.Handle(r.Context(), commands.CreateProject{
		Actor: p.actor(), WorkspaceID: b.WorkspaceID.V, Name: name, Description: b.Description.V, Color: color,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	v, err := s.projectAccess(r, p, pr.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, projectCreated(v))
	return nil
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request, p principal) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	s.barrier(r.Context(), s.core)
	res, err := s.q.ProjectsPage.Handle(r.Context(), queries.ProjectsPage{UserID: p.key.UserID, WorkspaceID: r.URL.Query().Get("workspace_id"), Page: page})
	if err != nil {
		return err
	}
	items := make([]any, 0, len(res.Items))
	for _, pr := range res.Items {
		items = append(items, projectRead(pr))
	}
	writeJSON(w, http.StatusOK, envelope(res, items))
	return nil
}

// projectAccess loads a project of a workspace the caller belongs to.
func (s *Server) projectAccess(r *http.Request, p principal, id string) (queries.Project, error) {
	return s.q.ProjectByID.Handle(r.Context(), queries.ProjectByID{ID: id, UserID: p.key.UserID})
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	pr, err := s.projectAccess(r, p, mux.Vars(r)["project_id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, projectRead(pr))
	return nil
}

func (s *Server) updateProject(w http.ResponseWriter, r *http.Request, p principal) error {
	var b projectBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	id := mux.Vars(r)["project_id"]
	if _, err := s.projectAccess(r, p, id); err != nil {
		return err
	}
	_, res, err := s.cmd.UpdateProject.Handle(r.Context(), commands.UpdateProject{
		Actor: p.actor(), ProjectID: id, Name: b.Name, Description: nullAsEmpty(b.Description), Color: b.Color,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	v, err := s.projectAccess(r, p, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, projectUpdated(v))
	return nil
}

func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request, p principal) error {
	id := mux.Vars(r)["project_id"]
	if _, err := s.projectAccess(r, p, id); err != nil {
		return err
	}
	res, err := s.cmd.DeleteProject.Handle(r.Context(), commands.DeleteProject{Actor: p.actor(), ProjectID: id})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	writeJSON(w, http.StatusOK, map[string]string{"message": "Project deleted successfully"})
	return nil
}
