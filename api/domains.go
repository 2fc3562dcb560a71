package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/queries"
)

type domainBody struct {
	Domain      domain.Opt[string] `json:"domain"`
	Description domain.Opt[string] `json:"description"`
	WorkspaceID domain.Opt[string] `json:"workspace_id"`
}

func verificationStatus(d queries.Domain, withChecked bool) map[string]any {
	m := map[string]any{"dns_configured": d.DNSConfigured, "cname_added": d.CNAMEAdded}
	if withChecked || d.LastChecked != nil {
		m["last_checked"] = formatTimePtr(d.LastChecked)
	}
	return m
}

func renderDomain(d queries.Domain) map[string]any {
	return map[string]any{
		"id":                  d.ID,
		"domain":              d.Domain,
		"description":         d.Description,
		"is_verified":         d.IsVerified,
		"verification_status": verificationStatus(d, false),
		"created_at":          formatTime(d.CreatedAt),
		"updated_at":          formatTime(d.UpdatedAt),
		"workspace_id":        d.WorkspaceID,
	}
}

// domainAccess loads a domain of a workspace the caller belongs to.
func (s *Server) domainAccess(r *http.Request, p principal, id string) (queries.Domain, error) {
	return s.q.DomainByID.Handle(r.Context(), queries.DomainByID{ID: id, UserID: p.key.UserID})
}

func (s *Server) createDomain(w http.ResponseWriter, r *http.Request, p principal) error {
	var b domainBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	name, ok := b.Domain.Value()
	if !ok || name == "" {
		return domain.Invalid("Domain is required")
	}
	d, res, err := s.cmd.CreateDomain.Handle(r.Context(), commands.CreateDomain{
		Actor: p.actor(), WorkspaceID: b.WorkspaceID.V, Domain: name, Description: b.Description.V,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	v, err := s.domainAccess(r, p, d.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, renderDomain(v))
	return nil
}

func (s *Server) listDomains(w http.ResponseWriter, r *http.Request, p principal) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	s.barrier(r.Context(), s.core)
	res, err := s.q.DomainsPage.Handle(r.Context(), queries.DomainsPage{UserID: p.key.UserID, WorkspaceID: r.URL.Query().Get("workspace_id"), Page: page})
	if err != nil {
		return err
	}
	items := make([]any, 0, len(res.Items))
	for _, d := range res.Items {
		items = append(items, renderDomain(d))
	}
	writeJSON(w, http.StatusOK, envelope(res, items))
	return nil
}

func (s *Server) getDomain(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	d, err := s.domainAccess(r, p, mux.Vars(r)["domain_id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderDomain(d))
	return nil
}

func (s *Server) updateDomain(w http.ResponseWriter, r *http.Request, p principal) error {
	var b domainBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	id := mux.Vars(r)["domain_id"]
	if _, err := s.domainAccess(r, p, id); err != nil {
		return err
	}
	_, res, err := s.cmd.UpdateDomain.Handle(r.Context(), commands.UpdateDomain{
		Actor: p.actor(), DomainID: id, Description: nullAsEmpty(b.Description),
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	v, err := s.domainAccess(r, p, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderDomain(v))
	return nil
}

func (s *Server) deleteDomain(w http.ResponseWriter, r *http.Request, p principal) error {
	id := mux.Vars(r)["domain_id"]
	if _, err := s.domainAccess(r, p, id); err != nil {
		return err
	}
	res, err := s.cmd.DeleteDomain.Handle(r.Context(), commands.DeleteDomain{Actor: p.actor(), DomainID: id})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	if s.links != nil {
		s.links.Invalidate("domain", id)
	}
	writeJSON(w, http.StatusOK, map[string]string{"message": "Domain deleted successfully"})
	return nil
}

func (s *Server) verifyDomain(w http.ResponseWriter, r *http.Request, p principal) error {
	id := mux.Vars(r)["domain_id"]
	if _, err := s.domainAccess(r, p, id); err != nil {
		return err
	}
	verified, res, err := s.cmd.VerifyDomain.Handle(r.Context(), commands.VerifyDomain{Actor: p.actor(), DomainID: id})
	check := verified.Check
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	v, err := s.domainAccess(r, p, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"domain_id":           v.ID,
		"is_verified":         v.IsVerified,
		"verification_status": verificationStatus(v, true),
		"verification_details": map[string]any{
			"cname_record":   check.CNAMERecord,
			"expected_value": check.ExpectedValue,
			"actual_value":   check.ActualValue,
			"status":         check.Status,
		},
	})
	return nil
}
