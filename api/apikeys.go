package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/queries"
)

type apiKeyBody struct {
	Name             *string           `json:"name"`
	Access           *string           `json:"access"`
	Permissions      map[string]string `json:"permissions"`
	Kind             *string           `json:"kind"`
	ProjectID        *string           `json:"project_id"`
	AllowedHostnames []string          `json:"allowed_hostnames"`
	UserID           *string           `json:"user_id"`
}

func renderKey(k queries.APIKey, full string) map[string]any {
	shown := k.Prefix + "..."
	if full != "" {
		shown = full
	}
	m := map[string]any{
		"id":               k.ID,
		"name":             k.Name,
		"key":              shown,
		"is_active":        k.IsActive,
		"access_full":      k.Access == "full",
		"access_read_only": k.Access == "read_only",
		"access_limited":   k.Access == "limited",
		"created_at":       formatTime(k.CreatedAt),
		"user_id":          k.UserID,
		"kind":             k.Kind,
		"permissions":      k.Permissions,
	}
	if k.ProjectID != "" {
		m["project_id"] = k.ProjectID
	} else {
		m["project_id"] = nil
	}
	hosts := k.AllowedHostnames
	if hosts == nil {
		hosts = []string{}
	}
	m["allowed_hostnames"] = hosts
	return m
}

func (s *Server) createAPIKey(w http.ResponseWriter, r *http.Request, p principal) error {
	if p.key.Access != "full" {
		return domain.ErrInsufficientPermissions()
	}
	var b apiKeyBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	if b.Name == nil {
		return domain.Invalid("Key name is required")
	}
	made, res, err := s.cmd.CreateAPIKey.Handle(r.Context(), commands.CreateAPIKey{
		Actor: p.actor(), UserID: str(b.UserID), Name: *b.Name, Kind: str(b.Kind), Access: str(b.Access),
		Permissions: b.Permissions, ProjectID: str(b.ProjectID), AllowedHostnames: b.AllowedHostnames,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	k := made.Key
	view := queries.APIKey{
		ID: k.KeyID, UserID: k.UserID, Name: k.Name, Hash: k.Hash, Prefix: k.Prefix, Kind: k.Kind, Access: k.Access,
		Permissions: k.Permissions, ProjectID: k.ProjectID, AllowedHostnames: k.AllowedHostnames, IsActive: true, CreatedAt: k.At,
	}
	writeJSON(w, http.StatusCreated, renderKey(view, made.Secret))
	return nil
}

func (s *Server) listAPIKeys(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	keys, err := s.q.UserAPIKeys.Handle(r.Context(), queries.UserAPIKeys{UserID: p.key.UserID})
	if err != nil {
		return err
	}
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		out = append(out, renderKey(k, ""))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) validateAPIKey(w http.ResponseWriter, r *http.Request, p principal) error {
	access, perms := apikey.Grants(p.key.Kind, p.key.Access, p.key.Permissions)
	writeJSON(w, http.StatusOK, map[string]any{
		"valid":       true,
		"user_id":     p.key.UserID,
		"key_id":      p.key.ID,
		"kind":        p.key.Kind,
		"permissions": perms,
		"access":      access,
	})
	return nil
}

func (s *Server) deactivateAPIKey(w http.ResponseWriter, r *http.Request, p principal) error {
	if p.key.Access != "full" {
		return domain.ErrInsufficientPermissions()
	}
	res, err := s.cmd.DeactivateAPIKey.Handle(r.Context(), commands.DeactivateAPIKey{Actor: p.actor(), KeyID: mux.Vars(r)["key_id"]})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	s.InvalidateKeys()
	writeJSON(w, http.StatusOK, map[string]string{"message": "API key deactivated successfully"})
	return nil
}
