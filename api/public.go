package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
)

// publicLinkByCode answers GET /v1/links/code/{code}: the link, without its
// password, counting the access as a click. Password-protected links need
// the X-Link-Password header.
func (s *Server) publicLinkByCode(w http.ResponseWriter, r *http.Request) {
	if err := s.servePublicLink(w, r); err != nil {
		s.writeError(w, r, err)
	}
}

func (s *Server) servePublicLink(w http.ResponseWriter, r *http.Request) error {
	rd := s.redirect
	if rd == nil {
		return domain.NotFound("Link not found")
	}
	ctx := r.Context()
	domainID, _, err := rd.domainOf(ctx, r.Host)
	if err != nil {
		return err
	}
	code := mux.Vars(r)["code"]
	l, err := rd.lookup(ctx, domainID, code)
	if err != nil {
		return err
	}
	if l == nil {
		return domain.NotFound("Link not found")
	}
	now := s.now()
	if l.ExpirationDate != nil && !now.Before(*l.ExpirationDate) {
		return domain.Gone(commands.MsgLinkExpired)
	}
	if l.PasswordEnc != "" {
		// An expired link says so before it asks for its password, as the
		// short URL does.
		used, err := rd.usedUp(ctx, l)
		if err != nil {
			return err
		}
		if used {
			return domain.Gone(commands.MsgLinkExpired)
		}
		given := r.Header.Get("X-Link-Password")
		if given == "" {
			return &domain.Error{Kind: domain.KindUnauthorized, Message: "Password required",
				Extra: map[string]any{"password_description": l.PasswordDescription}}
		}
		// Wrong passwords count against the same limit as the short URL's
		// form, or this read would be an unthrottled way to guess.
		who := rd.enricher.AddressKey(r, now) + "|" + l.ID
		if !rd.throttle.allowed(who, now) {
			w.Header().Set("Retry-After", rd.retryAfter())
			return &domain.Error{Kind: domain.KindRateLimited, Message: "Rate limit exceeded"}
		}
		want, err := s.cipher.Decrypt(l.PasswordEnc)
		if err != nil {
			return err
		}
		if !constantTimeEqual(given, want) {
			rd.throttle.fail(who, now)
			return &domain.Error{Kind: domain.KindUnauthorized, Message: "Invalid password"}
		}
	}
	info := rd.enricher.Enrich(r, now)
	c := clickOf(l, &info, r, click.SourceAPI, "", now)
	// This answer hands no svc_tid to anyone (there is no redirect to carry
	// it, nor a cookie): the click gets no tracking id, which would only be
	// a conversion id nobody can ever send.
	c.ClickID, c.TrackingID = "", ""
	_, res, err := rd.rec.Handle(ctx, commands.RecordClick{Click: c, Limit: l.ExpirationClickCount})
	if err != nil {
		return err
	}
	v := *l
	v.Clicks = int64(res.Version) + 1
	body, err := s.renderLink(ctx, v, false, map[string]string{})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
