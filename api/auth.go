package api

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/queries"
)

// Resources a key's permissions name.
const (
	resDomains    = "domains"
	resLinks      = "links"
	resProjects   = "projects"
	resWorkspaces = "workspaces"
	resAnalytics  = "analytics"
	resAPIKeys    = "api_keys" // key management: full access only for writes
	resAny        = ""         // any valid key
	resUnrouted   = "unrouted" // /v1 requests no route takes: rate-limit headers only
)

type principal struct {
	key queries.APIKey
}

// User is whom a request served in process acts as (ADR 0102): a user as
// the holder of a full-access secret key of theirs, bound to a project
// when ProjectID is set (the Radar reports read one project).
type User struct{ ID, ProjectID string }

// principalKey carries a User's principal in a request's context.
type principalKey struct{}

// AsUser returns ctx carrying u. A request made with it and served by the
// interface's router in process (the dashboard's pages) passes the same
// permission checks, commands and queries as u's key would, and counts
// against no hourly request limit; a request from the network never
// carries it.
func AsUser(ctx context.Context, u User) context.Context {
	perms, _ := apikey.NormalizePermissions(apikey.AccessFull, nil)
	return context.WithValue(ctx, principalKey{}, principal{key: queries.APIKey{UserID: u.ID, ProjectID: u.ProjectID,
		Name: "dashboard", Kind: apikey.KindSecret, Access: apikey.AccessFull, Permissions: perms, IsActive: true}})
}

// asUser returns the principal AsUser put in ctx.
func asUser(ctx context.Context) (principal, bool) {
	p, ok := ctx.Value(principalKey{}).(principal)
	return p, ok
}

func (p principal) actor() commands.Actor {
	return commands.Actor{UserID: p.key.UserID, KeyID: p.key.ID, Operator: p.key.Operator}
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, p principal) error

// bearer returns the key of an "Authorization: Bearer <key>" header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// authenticate finds the active key of a request.
func (s *Server) authenticate(ctx context.Context, r *http.Request) (queries.APIKey, error) {
	k, err := s.keyByValue(ctx, bearer(r))
	if err != nil {
		return queries.APIKey{}, err
	}
	if k.ID == "" {
		return queries.APIKey{}, &domain.Error{Kind: domain.KindUnauthorized, Message: domain.MsgInvalidAPIKey}
	}
	return k, nil
}

// keyByValue finds the active key of a key's value (ID empty when none),
// through the cache of keys already seen.
func (s *Server) keyByValue(ctx context.Context, value string) (queries.APIKey, error) {
	if value == "" || len(value) > 256 {
		return queries.APIKey{}, nil
	}
	var hash string
	if s.fresh != nil {
		// A key deactivated on another instance is refused here at once;
		// one made there is found. Behind or unreachable: the cache.
		_ = s.fresh.Follow(ctx)
	}
	if h, ok := s.pubHashes.Load(value); ok {
		hash = h.(string)
	} else {
		hash = s.hasher.Hash(value)
	}
	if v, ok := s.keyCache.Load(hash); ok {
		if k := v.(queries.APIKey); k.IsActive {
			return k, nil
		}
		return queries.APIKey{}, nil
	}
	k, ok, err := s.q.APIKeyByHash.Handle(ctx, queries.APIKeyByHash{Hash: hash})
	if err != nil || !ok {
		return queries.APIKey{}, err
	}
	s.keyCache.Store(hash, k)
	if k.Kind == apikey.KindPublishable {
		s.pubHashes.Store(value, hash)
	}
	return k, nil
}

// permitted applies the key's access level to a resource and method.
func permitted(k queries.APIKey, resource, method string) bool {
	if resource == resAny {
		return true // validate: any active key may ask about itself
	}
	if k.Kind == apikey.KindPublishable {
		return false // publishable keys are for client-side collection only (apikey.Grants)
	}
	read := method == http.MethodGet || method == http.MethodHead
	switch k.Access {
	case apikey.AccessFull:
		return true
	case apikey.AccessReadOnly:
		return read
	case apikey.AccessLimited:
		if resource == resAPIKeys {
			return read
		}
		switch k.Permissions[resource] {
		case apikey.PermWrite:
			return true
		case apikey.PermRead:
			return read
		}
	}
	return false
}

// authed wraps a handler: key, rate limit, permission, then the handler.
// The rate limit comes before the permission check so that every
// authenticated answer, a refusal included, carries the rate-limit headers.
func (s *Server) authed(resource string, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := asUser(r.Context()); ok {
			// A call in process as a user (AsUser): the same permission
			// check and handler; the caller throttles its own sign-in
			// instead of the requests.
			if !permitted(p.key, resource, r.Method) {
				s.writeError(w, r, domain.ErrInsufficientPermissions())
				return
			}
			if err := h(w, r, p); err != nil {
				s.writeError(w, r, err)
			}
			return
		}
		k, err := s.authenticate(r.Context(), r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		p := principal{key: k}
		if !s.rateLimit(w, r, p, resource) {
			return
		}
		if !permitted(k, resource, r.Method) {
			s.writeError(w, r, domain.ErrInsufficientPermissions())
			return
		}
		if err := h(w, r, p); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// rateLimit counts the request against its resource and sets the headers;
// it answers 429 and returns false when the limit is spent.
func (s *Server) rateLimit(w http.ResponseWriter, r *http.Request, p principal, resource string) bool {
	if s.limiter == nil {
		return true
	}
	limit := s.cfg.ResourceLimit
	if resource == resDomains {
		limit = s.cfg.DomainLimit
	}
	// The count is per resource (the link, project, domain, workspace, UTM
	// template or pixel a path names; the caller's collection otherwise)
	// and per user, so that nobody spends another user's quota, not even
	// with refused requests.
	vars := mux.Vars(r)
	id := "user:" + p.key.UserID
	if p.key.Operator {
		// The operator key is exempt: it counts in a bucket of its own, so
		// that its traffic never spends the quota of the other keys of its
		// user (keys the operator makes without user_id are user admin's).
		id = "operator:" + p.key.ID
	}
	for _, name := range []string{"link_id", "project_id", "domain_id", "workspace_id", "key_id", "template_id", "pixel_id", "webhook_id"} {
		if v := vars[name]; v != "" {
			id = name + ":" + v + "|" + id
			break
		}
	}
	if resource == resAny {
		resource = "keys"
	}
	d := s.limiter.Allow(r.Context(), resource+"|"+id, limit, time.Hour, s.clock.Now())
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(d.Remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(d.Reset.Unix(), 10))
	if d.Allowed || p.key.Operator {
		return true
	}
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(d.RetryAfter.Seconds()))))
	writeDetail(w, http.StatusTooManyRequests, "Rate limit exceeded")
	return false
}
