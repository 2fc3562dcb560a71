package commands

import (
	"context"
	"log/slog"
	"time"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/domain/click"
	"github.com/linkd/linkd/domain/customdomain"
	"github.com/linkd/linkd/domain/link"
	"github.com/linkd/linkd/domain/pixel"
	"github.com/linkd/linkd/domain/project"
	"github.com/linkd/linkd/domain/user"
	"github.com/linkd/linkd/domain/utmtemplate"
	"github.com/linkd/linkd/domain/webhook"
	"github.com/linkd/linkd/domain/workspace"
)

// Handler handles a command C whose answer is a value V and where its
// events landed (Result).
type Handler[C, V any] interface {
	Handle(ctx context.Context, c C) (V, Result, error)
}

// Doer handles a command C whose only answer is where its events landed.
type Doer[C any] interface {
	Handle(ctx context.Context, c C) (Result, error)
}

// NewKey is what CreateAPIKey answers: the key and its secret value, shown
// once.
type NewKey struct {
	Key    *apikey.Key
	Secret string
}

// DomainCheck is what VerifyDomain answers: the domain and what DNS said.
type DomainCheck struct {
	Domain *customdomain.Domain
	Check  customdomain.CheckResult
}

// Commands is the write side's front door: every command handler, built
// once by New over the same dependencies and decorated with logging and
// metrics, as queries.New builds Queries. The HTTP interface and the
// composition root call these; nothing else builds a handler.
type Commands struct {
	CreateWorkspace        Handler[CreateWorkspace, *workspace.Workspace]
	UpdateWorkspace        Handler[UpdateWorkspace, *workspace.Workspace]
	DeleteWorkspace        Doer[DeleteWorkspace]
	EnsureDefaultWorkspace Handler[EnsureDefaultWorkspace, *workspace.Workspace]
	AddMember              Doer[AddMember]
	ChangeMemberRole       Doer[ChangeMemberRole]
	RemoveMember           Doer[RemoveMember]

	CreateProject Handler[CreateProject, *project.Project]
	UpdateProject Handler[UpdateProject, *project.Project]
	DeleteProject Doer[DeleteProject]

	CreateDomain Handler[CreateDomain, *customdomain.Domain]
	UpdateDomain Handler[UpdateDomain, *customdomain.Domain]
	DeleteDomain Doer[DeleteDomain]
	VerifyDomain Handler[VerifyDomain, DomainCheck]

	CreateLink Handler[CreateLink, *link.Link]
	UpdateLink Handler[UpdateLink, *link.Link]
	DeleteLink Doer[DeleteLink]

	CreateUTMTemplate Handler[CreateUTMTemplate, *utmtemplate.Template]
	UpdateUTMTemplate Handler[UpdateUTMTemplate, *utmtemplate.Template]
	DeleteUTMTemplate Doer[DeleteUTMTemplate]
	CreatePixel       Handler[CreatePixel, *pixel.Pixel]
	UpdatePixel       Handler[UpdatePixel, *pixel.Pixel]
	DeletePixel       Doer[DeletePixel]

	CreateAPIKey      Handler[CreateAPIKey, NewKey]
	DeactivateAPIKey  Doer[DeactivateAPIKey]
	EnsureOperatorKey Handler[EnsureOperatorKey, string]

	// RecordClick is the redirect path's command: it is not decorated
	// (a click is counted and timed by the redirect's own metrics, and a
	// decorator's clock reads would be a cost on every redirect).
	RecordClick Handler[RecordClick, click.Recorded]
	RecordRadar Doer[RecordRadar]
	TrackLead   Handler[TrackLead, Tracked]
	TrackSale   Handler[TrackSale, Tracked]

	// Users, sign-in, sessions and invitations (the dashboard's).
	CreateUser       Handler[CreateUser, *user.User]
	SignIn           Handler[SignIn, *user.User]
	StartSession     Doer[StartSessionCmd]
	EndSession       Doer[EndSessionCmd]
	InviteMember     Handler[InviteMember, Invitation]
	AcceptInvitation Handler[AcceptInvitation, *user.User]

	// Webhooks (their deliveries disable one through DisableWebhook; the
	// projection of an instance among many records a replay through
	// RequestWebhookReplay).
	CreateWebhook         Handler[CreateWebhook, NewWebhook]
	UpdateWebhook         Handler[UpdateWebhook, *webhook.Webhook]
	DeleteWebhook         Doer[DeleteWebhook]
	DisableWebhook        Doer[DisableWebhook]
	RequestWebhookReplay  Doer[RequestWebhookReplay]
	RecordWebhookAttempts Doer[RecordWebhookAttempts]

	deps *Deps // for the reads the dashboard asks of the write side (users.go)
}

// Config is what New builds the handlers over.
type Config struct {
	Deps *Deps
	// Hasher hashes API keys; KeyPrefix is the service's key prefix
	// ("svc_").
	Hasher    KeyHasher
	KeyPrefix string
	// Contents lists what a workspace, project or domain holds, for the
	// deletes that cascade.
	Contents Contents
	// DNS and ExpectedHost verify custom domains.
	DNS          DNSChecker
	ExpectedHost string
	// Clicks resolves the clicks conversions name.
	Clicks Clicks
	// Passwords hashes and checks users' passwords.
	Passwords PasswordHasher
	// Logger logs failed commands (at debug level every command); nil logs
	// nothing. Observer is told of every command; nil tells nobody.
	Logger   *slog.Logger
	Observer Observer
}

// Observer is told of every decorated command: its name, how long it took
// and its error (nil on success). cmd/linkd's metrics implement it.
type Observer interface {
	ObserveCommand(name string, took time.Duration, err error)
}

// New builds every command handler over c, decorated.
func New(c Config) *Commands {
	d := c.Deps
	dec := decorator{log: c.Logger, obs: c.Observer}
	members := MembersHandler{Deps: d}
	cmds := &Commands{
		deps:                   d,
		CreateWorkspace:        decorate[CreateWorkspace, *workspace.Workspace](dec, "CreateWorkspace", CreateWorkspaceHandler{Deps: d}),
		UpdateWorkspace:        decorate[UpdateWorkspace, *workspace.Workspace](dec, "UpdateWorkspace", UpdateWorkspaceHandler{Deps: d}),
		DeleteWorkspace:        decorateDoer[DeleteWorkspace](dec, "DeleteWorkspace", DeleteWorkspaceHandler{Deps: d, Contents: c.Contents}),
		EnsureDefaultWorkspace: decorate[EnsureDefaultWorkspace, *workspace.Workspace](dec, "EnsureDefaultWorkspace", EnsureDefaultWorkspaceHandler{Deps: d}),
		AddMember:              decorateDoer[AddMember](dec, "AddMember", doerFunc[AddMember](members.Add)),
		ChangeMemberRole:       decorateDoer[ChangeMemberRole](dec, "ChangeMemberRole", doerFunc[ChangeMemberRole](members.ChangeRole)),
		RemoveMember:           decorateDoer[RemoveMember](dec, "RemoveMember", doerFunc[RemoveMember](members.Remove)),

		CreateProject: decorate[CreateProject, *project.Project](dec, "CreateProject", CreateProjectHandler{Deps: d}),
		UpdateProject: decorate[UpdateProject, *project.Project](dec, "UpdateProject", UpdateProjectHandler{Deps: d}),
		DeleteProject: decorateDoer[DeleteProject](dec, "DeleteProject", DeleteProjectHandler{Deps: d, Contents: c.Contents}),

		CreateDomain: decorate[CreateDomain, *customdomain.Domain](dec, "CreateDomain", CreateDomainHandler{Deps: d}),
		UpdateDomain: decorate[UpdateDomain, *customdomain.Domain](dec, "UpdateDomain", UpdateDomainHandler{Deps: d}),
		DeleteDomain: decorateDoer[DeleteDomain](dec, "DeleteDomain", DeleteDomainHandler{Deps: d, Contents: c.Contents}),
		VerifyDomain: decorate[VerifyDomain, DomainCheck](dec, "VerifyDomain", handlerFunc[VerifyDomain, DomainCheck](
			func(ctx context.Context, v VerifyDomain) (DomainCheck, Result, error) {
				dom, check, res, err := VerifyDomainHandler{Deps: d, DNS: c.DNS, ExpectedHost: c.ExpectedHost}.Handle(ctx, v)
				return DomainCheck{Domain: dom, Check: check}, res, err
			})),

		CreateLink: decorate[CreateLink, *link.Link](dec, "CreateLink", CreateLinkHandler{Deps: d}),
		UpdateLink: decorate[UpdateLink, *link.Link](dec, "UpdateLink", UpdateLinkHandler{Deps: d}),
		DeleteLink: decorateDoer[DeleteLink](dec, "DeleteLink", DeleteLinkHandler{Deps: d}),

		CreateUTMTemplate: decorate[CreateUTMTemplate, *utmtemplate.Template](dec, "CreateUTMTemplate", CreateUTMTemplateHandler{Deps: d}),
		UpdateUTMTemplate: decorate[UpdateUTMTemplate, *utmtemplate.Template](dec, "UpdateUTMTemplate", UpdateUTMTemplateHandler{Deps: d}),
		DeleteUTMTemplate: decorateDoer[DeleteUTMTemplate](dec, "DeleteUTMTemplate", DeleteUTMTemplateHandler{Deps: d}),
		CreatePixel:       decorate[CreatePixel, *pixel.Pixel](dec, "CreatePixel", CreatePixelHandler{Deps: d}),
		UpdatePixel:       decorate[UpdatePixel, *pixel.Pixel](dec, "UpdatePixel", UpdatePixelHandler{Deps: d}),
		DeletePixel:       decorateDoer[DeletePixel](dec, "DeletePixel", DeletePixelHandler{Deps: d}),

		CreateAPIKey: decorate[CreateAPIKey, NewKey](dec, "CreateAPIKey", handlerFunc[CreateAPIKey, NewKey](
			func(ctx context.Context, k CreateAPIKey) (NewKey, Result, error) {
				key, secret, res, err := CreateAPIKeyHandler{Deps: d, Hasher: c.Hasher, ServicePrefix: c.KeyPrefix}.Handle(ctx, k)
				return NewKey{Key: key, Secret: secret}, res, err
			})),
		DeactivateAPIKey:  decorateDoer[DeactivateAPIKey](dec, "DeactivateAPIKey", DeactivateAPIKeyHandler{Deps: d}),
		EnsureOperatorKey: decorate[EnsureOperatorKey, string](dec, "EnsureOperatorKey", EnsureOperatorKeyHandler{Deps: d, Hasher: c.Hasher, ServicePrefix: c.KeyPrefix}),

		RecordClick: RecordClickHandler{Deps: d},
		RecordRadar: decorateDoer[RecordRadar](dec, "RecordRadar", RecordRadarHandler{Deps: d}),
		TrackLead:   decorate[TrackLead, Tracked](dec, "TrackLead", TrackLeadHandler{Deps: d, Clicks: c.Clicks}),
		TrackSale:   decorate[TrackSale, Tracked](dec, "TrackSale", TrackSaleHandler{Deps: d, Clicks: c.Clicks}),
	}
	c.userCommands(dec, cmds)
	c.webhookCommands(dec, cmds)
	return cmds
}

type handlerFunc[C, V any] func(ctx context.Context, c C) (V, Result, error)

func (f handlerFunc[C, V]) Handle(ctx context.Context, c C) (V, Result, error) { return f(ctx, c) }

type doerFunc[C any] func(ctx context.Context, c C) (Result, error)

func (f doerFunc[C]) Handle(ctx context.Context, c C) (Result, error) { return f(ctx, c) }

// decorator logs and observes a command around its handler.
type decorator struct {
	log *slog.Logger
	obs Observer
}

func (d decorator) done(ctx context.Context, name string, start time.Time, err error) {
	took := time.Since(start)
	if d.obs != nil {
		d.obs.ObserveCommand(name, took, err)
	}
	if d.log == nil {
		return
	}
	switch {
	case err == nil:
		d.log.DebugContext(ctx, "command", "name", name, "took", took)
	case domain.KindOf(err) == 0:
		// Not a refusal of the caller's (a domain error): the store, a
		// timeout or a bug.
		d.log.WarnContext(ctx, "command failed", "name", name, "took", took, "err", err)
	default:
		d.log.DebugContext(ctx, "command refused", "name", name, "took", took, "err", err)
	}
}

func decorate[C, V any](d decorator, name string, h Handler[C, V]) Handler[C, V] {
	if d.log == nil && d.obs == nil {
		return h
	}
	return handlerFunc[C, V](func(ctx context.Context, c C) (V, Result, error) {
		start := time.Now()
		v, res, err := h.Handle(ctx, c)
		d.done(ctx, name, start, err)
		return v, res, err
	})
}

func decorateDoer[C any](d decorator, name string, h Doer[C]) Doer[C] {
	if d.log == nil && d.obs == nil {
		return h
	}
	return doerFunc[C](func(ctx context.Context, c C) (Result, error) {
		start := time.Now()
		res, err := h.Handle(ctx, c)
		d.done(ctx, name, start, err)
		return res, err
	})
}
