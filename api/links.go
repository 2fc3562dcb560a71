package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/linkd/linkd/commands"
	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/queries"
)

// linkBody is the body of POST /v1/links.
type linkBody struct {
	OriginalURL              *string                `json:"original_url"`
	CustomCode               *string                `json:"custom_code"`
	Code                     *string                `json:"code"`
	WorkspaceID              *string                `json:"workspace_id"`
	ProjectID                *string                `json:"project_id"`
	DomainID                 *string                `json:"domain_id"`
	PixelID                  *string                `json:"pixel_id"`
	Name                     *string                `json:"name"`
	Description              *string                `json:"description"`
	App                      *string                `json:"app"`
	AppLogo                  *string                `json:"app_logo"`
	AndroidLink              *string                `json:"android_link"`
	IOSLink                  *string                `json:"ios_link"`
	WindowsLink              *string                `json:"windows_link"`
	MacOSLink                *string                `json:"macos_link"`
	WhatsappMessage          *string                `json:"whatsapp_message"`
	Metadata                 *link.Preview          `json:"metadata"`
	QRCodeOptions            *link.QRCodeOptions    `json:"qr_code_options"`
	UTMName                  *string                `json:"utm_name"`
	UTMSource                *string                `json:"utm_source"`
	UTMMedium                *string                `json:"utm_medium"`
	UTMCampaign              *string                `json:"utm_campaign"`
	UTMTerm                  *string                `json:"utm_term"`
	UTMContent               *string                `json:"utm_content"`
	UTMTemplateID            *string                `json:"utm_template_id"`
	Referrer                 *string                `json:"referrer"`
	Password                 *string                `json:"password"`
	PasswordDescription      *string                `json:"password_description"`
	ExcludedCountries        []link.ExcludedCountry `json:"excluded_countries"`
	HasPublicStat            *bool                  `json:"has_public_stat"`
	EnableConversionTracking *bool                  `json:"enable_conversion_tracking"`
	ExpirationDate           *Time                  `json:"expiration_date"`
	ExpirationClickCount     *int64                 `json:"expiration_click_count"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func optID(p *string) *string {
	if p == nil || *p == "" {
		return nil
	}
	return p
}

// command turns the body into the CreateLink command.
func (b *linkBody) command(a commands.Actor) (commands.CreateLink, error) {
	if b.OriginalURL == nil {
		return commands.CreateLink{}, domain.Invalid("original_url is required")
	}
	attrs := link.Attributes{
		ProjectID: optID(b.ProjectID), DomainID: optID(b.DomainID), PixelID: optID(b.PixelID),
		OriginalURL: *b.OriginalURL, Name: str(b.Name), Description: str(b.Description),
		App: str(b.App), AppLogo: str(b.AppLogo), AndroidLink: str(b.AndroidLink), IOSLink: str(b.IOSLink),
		WindowsLink: str(b.WindowsLink), MacOSLink: str(b.MacOSLink), WhatsappMessage: str(b.WhatsappMessage),
		Metadata: b.Metadata, QRCodeOptions: b.QRCodeOptions,
		UTMName: str(b.UTMName), UTMSource: str(b.UTMSource), UTMMedium: str(b.UTMMedium),
		UTMCampaign: str(b.UTMCampaign), UTMTerm: str(b.UTMTerm), UTMContent: str(b.UTMContent),
		UTMTemplateID: str(b.UTMTemplateID), Referrer: str(b.Referrer),
		PasswordDescription: str(b.PasswordDescription), ExcludedCountries: b.ExcludedCountries,
		ExpirationClickCount: b.ExpirationClickCount,
	}
	if b.HasPublicStat != nil {
		attrs.HasPublicStat = *b.HasPublicStat
	}
	if b.ExpirationDate != nil {
		t := b.ExpirationDate.Time
		attrs.ExpirationDate = &t
	}
	code := str(b.CustomCode)
	if code == "" {
		code = str(b.Code) // the field's name everywhere else
	}
	return commands.CreateLink{
		Actor: a, WorkspaceID: str(b.WorkspaceID), CustomCode: code,
		Password: str(b.Password), EnableConversionTracking: b.EnableConversionTracking, Attributes: attrs,
	}, nil
}

func (s *Server) createLink(w http.ResponseWriter, r *http.Request, p principal) error {
	var b linkBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	c, err := b.command(p.actor())
	if err != nil {
		return err
	}
	l, res, err := s.cmd.CreateLink.Handle(r.Context(), c)
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	return s.respondLink(w, r, p, http.StatusCreated, l.ID, true)
}

// respondLink answers the read model's view of a link.
func (s *Server) respondLink(w http.ResponseWriter, r *http.Request, p principal, status int, id string, withPassword bool) error {
	v, err := s.q.LinkByID.Handle(r.Context(), queries.LinkByID{ID: id, UserID: p.key.UserID})
	if err != nil {
		return err
	}
	body, err := s.renderLink(r.Context(), v, withPassword, nil)
	if err != nil {
		return err
	}
	writeJSON(w, status, body)
	return nil
}

// linkAccess loads a link the principal may see: 404 when it does not
// exist, 403 when it belongs to a workspace they are not in.
func (s *Server) linkAccess(ctx context.Context, p principal, id string) (queries.Link, error) {
	return s.q.LinkByID.Handle(ctx, queries.LinkByID{ID: id, UserID: p.key.UserID})
}

func (s *Server) getLink(w http.ResponseWriter, r *http.Request, p principal) error {
	s.barrier(r.Context(), s.core)
	v, err := s.linkAccess(r.Context(), p, mux.Vars(r)["link_id"])
	if err != nil {
		return err
	}
	body, err := s.renderLink(r.Context(), v, true, nil)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

// pageParams reads page, page_size and cursor.
func pageParams(r *http.Request) (queries.Page, error) {
	q := r.URL.Query()
	p := queries.Page{Page: 1, PageSize: 10, Cursor: q.Get("cursor")}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, domain.Invalid("page must be a positive integer")
		}
		p.Page = n
	}
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return p, domain.Invalid("page_size must be an integer from 1 to 100")
		}
		p.PageSize = n
	}
	return p, nil
}

func boolParam(r *http.Request, name string) (bool, bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, false, nil
	}
	switch strings.ToLower(v) {
	case "true", "1", "yes":
		return true, true, nil
	case "false", "0", "no":
		return false, true, nil
	}
	return false, false, domain.Invalid("%s must be true or false", name)
}

func (s *Server) listLinks(w http.ResponseWriter, r *http.Request, p principal) error {
	q := r.URL.Query()
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	archived, _, err := boolParam(r, "archived")
	if err != nil {
		return err
	}
	asc := false
	switch strings.ToLower(q.Get("sort_order")) {
	case "", "desc":
	case "asc":
		asc = true
	default:
		return domain.Invalid("sort_order must be asc or desc")
	}
	s.barrier(r.Context(), s.core)
	res, err := s.q.LinksPage.Handle(r.Context(), queries.LinksPage{
		UserID: p.key.UserID, WorkspaceID: q.Get("workspace_id"), ProjectID: q.Get("project_id"),
		Archived: archived, Ascending: asc, Page: page,
	})
	if err != nil {
		return err
	}
	domains := map[string]string{}
	items := make([]any, 0, len(res.Items))
	for _, l := range res.Items {
		body, err := s.renderLink(r.Context(), l, true, domains)
		if err != nil {
			return err
		}
		items = append(items, body)
	}
	writeJSON(w, http.StatusOK, envelope(res, items))
	return nil
}

func envelope[T any](res queries.PageResult[T], items []any) map[string]any {
	var next, prev any
	if res.NextCursor != "" {
		next = res.NextCursor
	}
	if res.PrevCursor != "" {
		prev = res.PrevCursor
	}
	return map[string]any{
		"items": items, "page": res.Page, "page_size": res.PageSize,
		"has_next": res.HasNext, "has_prev": res.HasPrev,
		"next_cursor": next, "prev_cursor": prev,
	}
}

// linkUpdateBody is the body of PUT /v1/links/{id}: absent fields stay.
type linkUpdateBody struct {
	WorkspaceID              domain.Opt[string]                 `json:"workspace_id"`
	ProjectID                domain.Opt[string]                 `json:"project_id"`
	PixelID                  domain.Opt[string]                 `json:"pixel_id"`
	OriginalURL              domain.Opt[string]                 `json:"original_url"`
	Code                     domain.Opt[string]                 `json:"code"`
	Name                     domain.Opt[string]                 `json:"name"`
	Description              domain.Opt[string]                 `json:"description"`
	App                      domain.Opt[string]                 `json:"app"`
	AppLogo                  domain.Opt[string]                 `json:"app_logo"`
	AndroidLink              domain.Opt[string]                 `json:"android_link"`
	IOSLink                  domain.Opt[string]                 `json:"ios_link"`
	WindowsLink              domain.Opt[string]                 `json:"windows_link"`
	MacOSLink                domain.Opt[string]                 `json:"macos_link"`
	WhatsappMessage          domain.Opt[string]                 `json:"whatsapp_message"`
	Metadata                 domain.Opt[link.Preview]           `json:"metadata"`
	QRCodeOptions            domain.Opt[link.QRCodeOptions]     `json:"qr_code_options"`
	UTMName                  domain.Opt[string]                 `json:"utm_name"`
	UTMSource                domain.Opt[string]                 `json:"utm_source"`
	UTMMedium                domain.Opt[string]                 `json:"utm_medium"`
	UTMCampaign              domain.Opt[string]                 `json:"utm_campaign"`
	UTMTerm                  domain.Opt[string]                 `json:"utm_term"`
	UTMContent               domain.Opt[string]                 `json:"utm_content"`
	UTMTemplateID            domain.Opt[string]                 `json:"utm_template_id"`
	Referrer                 domain.Opt[string]                 `json:"referrer"`
	Password                 domain.Opt[string]                 `json:"password"`
	PasswordDescription      domain.Opt[string]                 `json:"password_description"`
	ExcludedCountries        domain.Opt[[]link.ExcludedCountry] `json:"excluded_countries"`
	HasPublicStat            domain.Opt[bool]                   `json:"has_public_stat"`
	EnableConversionTracking domain.Opt[bool]                   `json:"enable_conversion_tracking"`
	IsArchived               domain.Opt[bool]                   `json:"is_archived"`
	ExpirationDate           domain.Opt[Time]                   `json:"expiration_date"`
	ExpirationClickCount     domain.Opt[int64]                  `json:"expiration_click_count"`
}

// nullAsEmpty turns an explicit null of a text field into "".
func nullAsEmpty(o domain.Opt[string]) domain.Opt[string] {
	if o.Set && o.Null {
		return domain.Some("")
	}
	return o
}

// command turns the body into the UpdateLink command of link id.
func (b *linkUpdateBody) command(a commands.Actor, id string) (commands.UpdateLink, error) {
	if b.HasPublicStat.Null || b.EnableConversionTracking.Null || b.IsArchived.Null {
		return commands.UpdateLink{}, domain.Invalid("Boolean fields cannot be null")
	}
	patch := link.Patch{
		WorkspaceID: b.WorkspaceID, ProjectID: b.ProjectID, PixelID: b.PixelID,
		OriginalURL: b.OriginalURL, Code: b.Code,
		Name: nullAsEmpty(b.Name), Description: nullAsEmpty(b.Description), App: nullAsEmpty(b.App),
		AppLogo: nullAsEmpty(b.AppLogo), AndroidLink: nullAsEmpty(b.AndroidLink), IOSLink: nullAsEmpty(b.IOSLink),
		WindowsLink: nullAsEmpty(b.WindowsLink), MacOSLink: nullAsEmpty(b.MacOSLink),
		WhatsappMessage: nullAsEmpty(b.WhatsappMessage), Metadata: b.Metadata, QRCodeOptions: b.QRCodeOptions,
		UTMName: nullAsEmpty(b.UTMName), UTMSource: nullAsEmpty(b.UTMSource), UTMMedium: nullAsEmpty(b.UTMMedium),
		UTMCampaign: nullAsEmpty(b.UTMCampaign), UTMTerm: nullAsEmpty(b.UTMTerm), UTMContent: nullAsEmpty(b.UTMContent),
		UTMTemplateID: nullAsEmpty(b.UTMTemplateID), Referrer: nullAsEmpty(b.Referrer),
		PasswordDescription: nullAsEmpty(b.PasswordDescription), ExcludedCountries: b.ExcludedCountries,
		HasPublicStat: b.HasPublicStat, EnableConversionTracking: b.EnableConversionTracking,
		ExpirationClickCount: b.ExpirationClickCount,
	}
	if b.ExpirationDate.Set {
		if b.ExpirationDate.Null {
			patch.ExpirationDate = domain.NullOpt[time.Time]()
		} else {
			patch.ExpirationDate = domain.Some(b.ExpirationDate.V.Time)
		}
	}
	var archived *bool
	if v, ok := b.IsArchived.Value(); ok {
		archived = &v
	}
	return commands.UpdateLink{Actor: a, LinkID: id, Patch: patch, Password: b.Password, IsArchived: archived}, nil
}

func (s *Server) updateLink(w http.ResponseWriter, r *http.Request, p principal) error {
	var b linkUpdateBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	c, err := b.command(p.actor(), mux.Vars(r)["link_id"])
	if err != nil {
		return err
	}
	l, res, err := s.cmd.UpdateLink.Handle(r.Context(), c)
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	return s.respondLink(w, r, p, http.StatusOK, l.ID, true)
}

func (s *Server) deleteLink(w http.ResponseWriter, r *http.Request, p principal) error {
	res, err := s.cmd.DeleteLink.Handle(r.Context(), commands.DeleteLink{Actor: p.actor(), LinkID: mux.Vars(r)["link_id"]})
	if err != nil {
		return err
	}
	s.WaitCore(r.Context(), res)
	writeJSON(w, http.StatusOK, map[string]string{"message": "Link deleted successfully"})
	return nil
}

// shortURL is the full short URL of a link; hosts holds the names of the
// custom domains already looked up (nil: none kept).
func (s *Server) shortURL(ctx context.Context, l queries.Link, hosts map[string]string) string {
	var host string
	if l.DomainID != nil && hosts != nil {
		host = hosts[*l.DomainID]
	}
	if host == "" {
		host, _ = s.q.ShortLinkHost.Handle(ctx, queries.ShortLinkHost{DomainID: l.DomainID})
		if l.DomainID != nil && hosts != nil {
			hosts[*l.DomainID] = host
		}
	}
	return s.cfg.PublicScheme + "://" + host + "/" + l.Code
}

// isActive reports whether a link still answers: not expired by date or
// by clicks.
func isActive(l queries.Link, now time.Time) bool {
	return !link.Expired(l.ExpirationDate, l.ExpirationClickCount, l.Clicks, now)
}

// renderLink is the JSON of a link (spec 2.5).
func (s *Server) renderLink(ctx context.Context, l queries.Link, withPassword bool, domains map[string]string) (map[string]any, error) {
	password := ""
	if withPassword && l.PasswordEnc != "" {
		p, err := s.cipher.Decrypt(l.PasswordEnc)
		if err != nil {
			return nil, err
		}
		password = p
	}
	countries := l.ExcludedCountries
	if countries == nil {
		countries = []link.ExcludedCountry{}
	}
	m := map[string]any{
		"id":                         l.ID,
		"created_at":                 formatTime(l.CreatedAt),
		"updated_at":                 formatTime(l.UpdatedAt),
		"workspace_id":               l.WorkspaceID,
		"project_id":                 l.ProjectID,
		"domain_id":                  l.DomainID,
		"pixel_id":                   l.PixelID,
		"original_url":               l.OriginalURL,
		"name":                       l.Name,
		"description":                l.Description,
		"code":                       l.Code,
		"short_url":                  s.shortURL(ctx, l, domains),
		"app":                        l.App,
		"app_logo":                   l.AppLogo,
		"android_link":               l.AndroidLink,
		"ios_link":                   l.IOSLink,
		"windows_link":               l.WindowsLink,
		"macos_link":                 l.MacOSLink,
		"whatsapp_message":           l.WhatsappMessage,
		"metadata":                   l.Metadata,
		"qr_code_options":            l.QRCodeOptions,
		"utm_name":                   l.UTMName,
		"utm_source":                 l.UTMSource,
		"utm_medium":                 l.UTMMedium,
		"utm_campaign":               l.UTMCampaign,
		"utm_term":                   l.UTMTerm,
		"utm_content":                l.UTMContent,
		"utm_template_id":            l.UTMTemplateID,
		"referrer":                   l.Referrer,
		"password_description":       l.PasswordDescription,
		"excluded_countries":         countries,
		"has_public_stat":            l.HasPublicStat,
		"enable_conversion_tracking": l.EnableConversionTracking,
		"is_archived":                l.IsArchived,
		"is_active":                  isActive(l, s.clock.Now()),
		"expiration_date":            formatTimePtr(l.ExpirationDate),
		"expiration_click_count":     l.ExpirationClickCount,
		"clicks":                     l.Clicks,
		"click_count":                l.Clicks,
		"has_password":               l.PasswordEnc != "",
	}
	if withPassword {
		if password == "" {
			m["password"] = nil
		} else {
			m["password"] = password
		}
	}
	return m, nil
}
