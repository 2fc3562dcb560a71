package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain/user"
)

// Sessions, CSRF and signing in and out. A session is events in the
// event store (Commands.StartSession, Commands.EndSession); the cookie
// holds 256 random bits, and the CSRF token is derived from it.

// session is a signed-in person. Sessions are events (user.SessionStarted,
// user.SessionEnded) in a stream named by the hash of the cookie's value,
// so a restart or another instance keeps them; this is the copy in memory.
type session struct {
	userID, email string
	csrf          string
	checked       time.Time // when its stream was last read
}

func tokenHash(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (d *Dashboard) secure() bool { return d.cfg.PublicScheme == "https" }

func (d *Dashboard) cookie(name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/dashboard", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: d.secure(), MaxAge: maxAge}
}

// csrfOf is the CSRF token of a session: derived from the cookie's value,
// so it is stored nowhere.
func csrfOf(cookie string) string {
	sum := sha256.Sum256([]byte("csrf|" + cookie))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// current returns the request's session, or nil.
func (d *Dashboard) current(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil
	}
	now := d.clock.Now()
	h := tokenHash(c.Value)
	d.mu.Lock()
	sess := d.sessions[h]
	d.mu.Unlock()
	if sess != nil && now.Sub(sess.checked) < sessionRecheck {
		return sess
	}
	st, ok, err := d.cmd.SessionByHash(r.Context(), h)
	if err != nil {
		d.log.Warn("dashboard: reading a session failed", "err", err)
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !ok {
		delete(d.sessions, h)
		return nil
	}
	sess = &session{userID: st.UserID, email: st.Email, csrf: csrfOf(c.Value), checked: now}
	d.sessions[h] = sess
	return sess
}

// sameOrigin refuses a request whose Origin (or, without one, Referer)
// names another site.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		o = r.Header.Get("Referer")
		if o == "" {
			return true // not a browser's cross-site form: the token decides
		}
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

func tokensEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// authed serves a page to a signed-in person; others go to the sign-in
// page. Forms (POST) must come from this site with the session's token:
// else 403, and nothing changes.
func (d *Dashboard) authed(h func(w http.ResponseWriter, r *http.Request, c *dashCtx)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		sess := d.current(r)
		if sess == nil {
			next := ""
			if r.Method == http.MethodGet && r.URL.Path != "/dashboard/" {
				next = "?next=" + url.QueryEscape(r.URL.RequestURI())
			}
			http.Redirect(w, r, "/dashboard/login"+next, http.StatusSeeOther)
			return
		}
		c := &dashCtx{sess: sess, as: api.User{ID: sess.userID}}
		if r.Method == http.MethodPost {
			if !sameOrigin(r) || !tokensEqual(r.PostFormValue(csrfField), sess.csrf) {
				d.render(w, r, c, http.StatusForbidden, "error", "Forbidden", map[string]any{
					"Message": "This form was not sent from this dashboard (missing or wrong CSRF token, or another site's Origin). Nothing was changed."})
				return
			}
		}
		h(w, r, c)
	})
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if d.current(r) != nil {
		http.Redirect(w, r, "/dashboard/links", http.StatusSeeOther)
		return
	}
	d.renderLogin(w, r, http.StatusOK, "", r.URL.Query().Get("next"))
}

func (d *Dashboard) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg, next string) {
	d.renderPublic(w, r, status, "login", "Sign in", msg, map[string]any{"Next": safeNext(next), "Email": r.PostFormValue("email")})
}

// renderPublic renders a page for a person without a session (sign-in,
// an invitation), with the sign-in form's token.
func (d *Dashboard) renderPublic(w http.ResponseWriter, r *http.Request, status int, name, title, msg string, data map[string]any) {
	tok := ""
	if c, err := r.Cookie(loginCSRFCookie); err == nil && len(c.Value) == 43 {
		tok = c.Value
	} else {
		tok = randomToken()
		http.SetCookie(w, d.cookie(loginCSRFCookie, tok, 3600))
	}
	var buf bytes.Buffer
	err := d.pages[name].ExecuteTemplate(&buf, "layout.html", pageView{Title: title, Nav: name, CSRF: tok, Error: msg, D: data})
	if err != nil {
		d.log.Error("dashboard: render", "page", name, "err", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// safeNext keeps a redirect after sign-in inside the dashboard.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/dashboard/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return ""
}

func (d *Dashboard) clientKey(r *http.Request) string {
	if d.addrs != nil {
		return d.addrs.AddressKey(r, d.clock.Now())
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	c, err := r.Cookie(loginCSRFCookie)
	if !sameOrigin(r) || err != nil || !tokensEqual(r.PostFormValue(csrfField), c.Value) {
		d.renderLogin(w, r, http.StatusForbidden, "This form was not sent from this dashboard (missing or wrong CSRF token). Reload the page and try again.", "")
		return
	}
	next := r.PostFormValue("next")
	email, pw := r.PostFormValue("email"), r.PostFormValue("password")
	now := d.clock.Now()
	client, target := d.clientKey(r), "signin|"+user.EmailKey(email)
	if !d.throttle.Try(r.Context(), client, target, now) {
		w.Header().Set("Retry-After", "60")
		d.renderLogin(w, r, http.StatusTooManyRequests, "Too many attempts. Wait a minute and try again.", next)
		return
	}
	u, _, err := d.cmd.SignIn.Handle(r.Context(), commands.SignIn{Email: email, Password: pw})
	if err != commands.ErrBadCredentials {
		d.throttle.Undo(r.Context(), client, target, now) // only wrong credentials count
	}
	if err != nil {
		if err == commands.ErrBadCredentials {
			d.renderLogin(w, r, http.StatusUnauthorized, "Wrong email or password.", next)
			return
		}
		d.log.Error("dashboard: sign-in", "err", err)
		d.renderLogin(w, r, http.StatusInternalServerError, "Signing in failed. Try again.", next)
		return
	}
	if err := d.startSession(r.Context(), w, u.ID, u.Email); err != nil {
		d.log.Error("dashboard: sign-in", "err", err)
		d.renderLogin(w, r, http.StatusInternalServerError, "Signing in failed. Try again.", next)
		return
	}
	if next = safeNext(next); next == "" {
		next = "/dashboard/links"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// startSession signs the user in: a new session and its cookie.
func (d *Dashboard) startSession(ctx context.Context, w http.ResponseWriter, userID, email string) error {
	now := d.clock.Now()
	tok := randomToken()
	h := tokenHash(tok)
	if _, err := d.cmd.StartSession.Handle(ctx, commands.StartSessionCmd{Hash: h, UserID: userID, Email: email}); err != nil {
		return err
	}
	d.mu.Lock()
	for k, s := range d.sessions {
		if now.Sub(s.checked) > time.Hour {
			delete(d.sessions, k)
		}
	}
	d.sessions[h] = &session{userID: userID, email: email, csrf: csrfOf(tok), checked: now}
	d.mu.Unlock()
	http.SetCookie(w, d.cookie(sessionCookie, tok, int(user.SessionTTL/time.Second)))
	http.SetCookie(w, d.cookie(loginCSRFCookie, "", -1))
	return nil
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		h := tokenHash(ck.Value)
		if _, err := d.cmd.EndSession.Handle(r.Context(), commands.EndSessionCmd{Hash: h}); err != nil {
			d.log.Error("dashboard: sign-out", "err", err)
			d.render(w, r, c, http.StatusInternalServerError, "error", "Sign-out failed", map[string]any{"Message": "Signing out failed. Try again."})
			return
		}
		d.mu.Lock()
		delete(d.sessions, h)
		d.mu.Unlock()
	}
	http.SetCookie(w, d.cookie(sessionCookie, "", -1))
	http.Redirect(w, r, "/dashboard/login", http.StatusSeeOther)
}
