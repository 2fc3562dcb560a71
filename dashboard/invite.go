package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/api"
	"github.com/linkd/linkd/commands"
)

// Invitations: a workspace admin makes a one-time link on the members
// page; whoever opens it becomes a user (or signs in as theirs) and joins
// the workspace. No mail server: the admin hands the link over.

func (d *Dashboard) inviteMember(w http.ResponseWriter, r *http.Request, c *dashCtx) {
	id := mux.Vars(r)["workspace_id"]
	inv, _, err := d.cmd.InviteMember.Handle(r.Context(), commands.InviteMember{
		Actor: commands.Actor{UserID: c.as.ID}, WorkspaceID: id, Email: r.PostFormValue("email"), Role: r.PostFormValue("role"),
	})
	if err != nil {
		d.renderMembersWith(w, r, c, api.ErrorStatus(err), err.Error(), "")
		return
	}
	scheme := d.cfg.PublicScheme
	d.renderMembersWith(w, r, c, http.StatusCreated, "", scheme+"://"+r.Host+"/dashboard/invite/"+url.PathEscape(inv.Token))
}

func (d *Dashboard) invitePage(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	d.renderInvite(w, r, http.StatusOK, "")
}

func (d *Dashboard) renderInvite(w http.ResponseWriter, r *http.Request, status int, msg string) {
	token := mux.Vars(r)["token"]
	inv, err := d.cmd.InvitationByToken(r.Context(), token)
	if err != nil {
		d.renderPublic(w, r, api.ErrorStatus(err), "invite", "Invitation", err.Error(), map[string]any{"Invalid": true})
		return
	}
	taken, err := d.cmd.EmailTaken(r.Context(), inv.Email)
	if err != nil {
		d.renderPublic(w, r, http.StatusInternalServerError, "invite", "Invitation", "Reading the invitation failed", map[string]any{"Invalid": true})
		return
	}
	d.renderPublic(w, r, status, "invite", "Invitation", msg, map[string]any{
		"Email": inv.Email, "Role": inv.Role, "InvitedBy": inv.InvitedBy, "Existing": taken,
		"Action": "/dashboard/invite/" + url.PathEscape(token), "UserID": r.PostFormValue("user_id"),
	})
}

func (d *Dashboard) acceptInvite(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	c, err := r.Cookie(loginCSRFCookie)
	if !sameOrigin(r) || err != nil || !tokensEqual(r.PostFormValue(csrfField), c.Value) {
		d.renderInvite(w, r, http.StatusForbidden, "This form was not sent from this dashboard (missing or wrong CSRF token). Reload the page and try again.")
		return
	}
	now := d.clock.Now()
	client, target := d.clientKey(r), "invite|"+commands.InvitationTokenHash(mux.Vars(r)["token"])
	if !d.throttle.Try(r.Context(), client, target, now) {
		d.renderInvite(w, r, http.StatusTooManyRequests, "Too many attempts. Wait a minute and try again.")
		return
	}
	u, res, err := d.cmd.AcceptInvitation.Handle(r.Context(), commands.AcceptInvitation{
		Token: mux.Vars(r)["token"], UserID: strings.TrimSpace(r.PostFormValue("user_id")), Password: r.PostFormValue("password"),
	})
	if err != commands.ErrBadCredentials {
		d.throttle.Undo(r.Context(), client, target, now) // only wrong credentials count
	}
	if err != nil {
		d.renderInvite(w, r, api.ErrorStatus(err), err.Error())
		return
	}
	d.api.WaitCore(r.Context(), res)
	if err := d.startSession(r.Context(), w, u.ID, u.Email); err != nil {
		d.renderInvite(w, r, http.StatusInternalServerError, "You joined, but signing in failed: sign in at /dashboard/login.")
		return
	}
	http.Redirect(w, r, "/dashboard/workspaces?flash="+url.QueryEscape("Welcome: you joined the workspace"), http.StatusSeeOther)
}
