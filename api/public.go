package api

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/queries"
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
	now := s.clock.Now()
	info := rd.enricher.Enrich(r, now)
	q := queries.LinkAccess{
		Host: r.Host, Code: mux.Vars(r)["code"], Channel: queries.PublicRead,
		Counted: true, Country: info.Country, Platform: info.Platform, At: now,
	}
	if pw := r.Header.Get("X-Link-Password"); pw != "" {
		// Wrong passwords count against the same limit as the short URL's
		// form, or this read would be an unthrottled way to guess.
		q.Password, q.Client = &pw, rd.enricher.AddressKey(r, now)
	}
	a, err := rd.decide(ctx, &q, info.Network, r.UserAgent(), now)
	if err != nil {
		return err
	}
	switch a.Outcome {
	case queries.NotFound:
		return domain.NotFound("Link not found")
	case queries.Expired:
		return domain.Gone(commands.MsgLinkExpired)
	case queries.PasswordRequired:
		return &domain.Error{Kind: domain.KindUnauthorized, Message: "Password required",
			Extra: map[string]any{"password_description": a.Link.PasswordDescription}}
	case queries.PasswordThrottled:
		w.Header().Set("Retry-After", retryAfter(a.RetryAfter))
		return &domain.Error{Kind: domain.KindRateLimited, Message: "Rate limit exceeded"}
	case queries.PasswordWrong:
		return &domain.Error{Kind: domain.KindUnauthorized, Message: "Invalid password"}
	case queries.Granted:
	default:
		return fmt.Errorf("public read: unexpected access outcome %d", a.Outcome)
	}
	v := *a.Link
	if q.Counted {
		c := clickOf(a.Link, &info, r, click.SourceAPI, "", now)
		// This answer hands no svc_tid to anyone (there is no redirect to
		// carry it, nor a cookie): the click gets no tracking id, which
		// would only be a conversion id nobody can ever send.
		c.ClickID, c.TrackingID = "", ""
		_, res, err := rd.rec.Handle(ctx, commands.RecordClick{Click: c, Limit: a.Link.ExpirationClickCount})
		if err != nil {
			return err
		}
		v.Clicks = int64(res.Version) + 1
	}
	body, err := s.renderLink(ctx, v, false, map[string]string{})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}
