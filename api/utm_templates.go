package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/utmtemplate"
	"github.com/linkd/linkd/queries"
)

// UTM templates (an extension: /v1/utm-templates). Links name one by
// utm_template_id and get its value of every utm_* they do not set.

type utmTemplateBody struct {
	Name        domain.Opt[string] `json:"name"`
	WorkspaceID domain.Opt[string] `json:"workspace_id"`
	Source      domain.Opt[string] `json:"utm_source"`
	Medium      domain.Opt[string] `json:"utm_medium"`
	Campaign    domain.Opt[string] `json:"utm_campaign"`
	Term        domain.Opt[string] `json:"utm_term"`
	Content     domain.Opt[string] `json:"utm_content"`
	UTMName     domain.Opt[string] `json:"utm_name"`
}

func (b *utmTemplateBody) patch() utmtemplate.Patch {
	return utmtemplate.Patch{Source: b.Source, Medium: b.Medium, Campaign: b.Campaign, Term: b.Term, Content: b.Content, Name: b.UTMName}
}

func utmTemplateJSON(t queries.UTMTemplate) map[string]any {
	v := t.Values
	return map[string]any{
		"id": t.ID, "workspace_id": t.WorkspaceID, "name": t.Name,
		"utm_source": v.Source, "utm_medium": v.Medium, "utm_campaign": v.Campaign,
		"utm_term": v.Term, "utm_content": v.Content, "utm_name": v.Name,
		"created_at": formatTime(t.CreatedAt), "updated_at": formatTime(t.UpdatedAt),
	}
}

func (s *Server) utmTemplateAccess(r *http.Request, p principal, id string) (queries.UTMTemplate, error) {
	return s.q.UTMTemplateByID.Handle(r.Context(), queries.UTMTemplateByID{ID: id, UserID: p.key.UserID})
}

func (s *Server) createUTMTemplate(w http.ResponseWriter, r *http.Request, p principal) error {
	var b utmTemplateBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	var values utmtemplate.Values
	values.Apply(b.patch())
	t, res, err := s.cmd.CreateUTMTemplate.Handle(r.Context(), commands.CreateUTMTemplate{
		Actor: p.actor(), WorkspaceID: b.WorkspaceID.V, Name: b.Name.V, Values: values,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	v, err := s.utmTemplateAccess(r, p, t.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, utmTemplateJSON(v))
	return nil
}

func (s *Server) listUTMTemplates(w http.ResponseWriter, r *http.Request, p principal) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	s.barrier(r.Context(), s.core)
	res, err := s.q.UTMTemplatesPage.Handle(r.Context(), queries.UTMTemplatesPage{UserID: p.key.UserID, WorkspaceID: r.URL.Query().Get("workspace_id"), Page: page})
	if err != nil {
		return err
	}
	items := make([]any, 0, len(res.Items))
	for _, t := range res.Items {
		items = append(items, utmTemplateJSON(t))
	}
	writeJSON(w, http.StatusOK, envelope(res, items))
	return nil
}

func (s *Server) getUTMTemplate(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	t, err := s.utmTemplateAccess(r, p, mux.Vars(r)["template_id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, utmTemplateJSON(t))
	return nil
}

func (s *Server) updateUTMTemplate(w http.ResponseWriter, r *http.Request, p principal) error {
	var b utmTemplateBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	id := mux.Vars(r)["template_id"]
	s.barrier(r.Context(), s.core)
	if _, err := s.utmTemplateAccess(r, p, id); err != nil {
		return err
	}
	_, res, err := s.cmd.UpdateUTMTemplate.Handle(r.Context(), commands.UpdateUTMTemplate{
		Actor: p.actor(), TemplateID: id, Name: b.Name, Values: b.patch(),
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	v, err := s.utmTemplateAccess(r, p, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, utmTemplateJSON(v))
	return nil
}

func (s *Server) deleteUTMTemplate(w http.ResponseWriter, r *http.Request, p principal) error {
	id := mux.Vars(r)["template_id"]
	s.barrier(r.Context(), s.core)
	if _, err := s.utmTemplateAccess(r, p, id); err != nil {
		return err
	}
	res, err := s.cmd.DeleteUTMTemplate.Handle(r.Context(), commands.DeleteUTMTemplate{Actor: p.actor(), TemplateID: id})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	writeJSON(w, http.StatusOK, map[string]string{"message": "UTM template deleted successfully"})
	return nil
}
