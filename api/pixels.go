package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/queries"
)

// Tracking pixels (an extension: /v1/pixels). Links name one by pixel_id;
// a browser following such a link gets the page of pixelpage.go.

type pixelBody struct {
	Name        domain.Opt[string] `json:"name"`
	WorkspaceID domain.Opt[string] `json:"workspace_id"`
	Type        domain.Opt[string] `json:"type"`
	PixelID     domain.Opt[string] `json:"pixel_id"`
}

func pixelJSON(p queries.Pixel) map[string]any {
	return map[string]any{
		"id": p.ID, "workspace_id": p.WorkspaceID, "name": p.Name, "type": p.Type, "pixel_id": p.PixelID,
		"created_at": formatTime(p.CreatedAt), "updated_at": formatTime(p.UpdatedAt),
	}
}

func (s *Server) pixelAccess(r *http.Request, p principal, id string) (queries.Pixel, error) {
	return s.q.PixelByID.Handle(r.Context(), queries.PixelByID{ID: id, UserID: p.key.UserID})
}

func (s *Server) createPixel(w http.ResponseWriter, r *http.Request, p principal) error {
	var b pixelBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	px, res, err := s.cmd.CreatePixel.Handle(r.Context(), commands.CreatePixel{
		Actor: p.actor(), WorkspaceID: b.WorkspaceID.V, Name: b.Name.V, Type: b.Type.V, PixelID: b.PixelID.V,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	v, err := s.pixelAccess(r, p, px.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, pixelJSON(v))
	return nil
}

func (s *Server) listPixels(w http.ResponseWriter, r *http.Request, p principal) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	s.barrier(r.Context(), s.core)
	res, err := s.q.PixelsPage.Handle(r.Context(), queries.PixelsPage{UserID: p.key.UserID, WorkspaceID: r.URL.Query().Get("workspace_id"), Page: page})
	if err != nil {
		return err
	}
	items := make([]any, 0, len(res.Items))
	for _, x := range res.Items {
		items = append(items, pixelJSON(x))
	}
	writeJSON(w, http.StatusOK, envelope(res, items))
	return nil
}

func (s *Server) getPixel(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	x, err := s.pixelAccess(r, p, mux.Vars(r)["pixel_id"])
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, pixelJSON(x))
	return nil
}

func (s *Server) updatePixel(w http.ResponseWriter, r *http.Request, p principal) error {
	var b pixelBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	id := mux.Vars(r)["pixel_id"]
	s.barrier(r.Context(), s.core)
	if _, err := s.pixelAccess(r, p, id); err != nil {
		return err
	}
	_, res, err := s.cmd.UpdatePixel.Handle(r.Context(), commands.UpdatePixel{
		Actor: p.actor(), ID: id, Name: b.Name, Type: b.Type, PixelID: b.PixelID,
	})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	v, err := s.pixelAccess(r, p, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, pixelJSON(v))
	return nil
}

func (s *Server) deletePixel(w http.ResponseWriter, r *http.Request, p principal) error {
	id := mux.Vars(r)["pixel_id"]
	s.barrier(r.Context(), s.core)
	if _, err := s.pixelAccess(r, p, id); err != nil {
		return err
	}
	res, err := s.cmd.DeletePixel.Handle(r.Context(), commands.DeletePixel{Actor: p.actor(), ID: id})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	writeJSON(w, http.StatusOK, map[string]string{"message": "Pixel deleted successfully"})
	return nil
}
