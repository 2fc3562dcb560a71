// Package pixel is the tracking pixel aggregate: a retargeting or
// analytics tag of an ad platform (Meta, Google, LinkedIn, TikTok, X) that
// a workspace's links name by pixel_id. A browser following such a link
// gets a small page that fires the tag before it goes on to the target
// (docs/decisions.md, "UTM templates and pixels").
package pixel

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/linkd/linkd/domain"
)

// Wire names: never change.
const (
	EventCreated = "PixelCreated"
	EventUpdated = "PixelUpdated"
	EventDeleted = "PixelDeleted"
)

// Category is the stream category of pixels.
const Category = "pixel"

// StreamPrefix is the prefix of pixel streams.
const StreamPrefix = Category + "-"

// Stream names the stream of pixel id.
func Stream(id string) string { return StreamPrefix + id }

// The platforms a pixel can belong to.
const (
	TypeMeta     = "meta"
	TypeGoogle   = "google"
	TypeLinkedIn = "linkedin"
	TypeTikTok   = "tiktok"
	TypeX        = "x"
)

// Types lists every type, in the order refusals name them.
var Types = []string{TypeMeta, TypeGoogle, TypeLinkedIn, TypeTikTok, TypeX}

// MaxNameLength bounds a pixel's name.
const MaxNameLength = 255

// MsgNotFound is the refusal of an unknown (or deleted) pixel.
const MsgNotFound = "Pixel not found"

// tagID is what a platform's id (a Meta pixel id, a Google measurement id
// such as G-XXXX or AW-123, with a conversion label after a slash, a
// LinkedIn partner id, a TikTok or X pixel id) may look like: letters,
// digits and - _ . / only, since it ends up in a script and in URLs.
var tagID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_./-]{0,99}$`)

type Created struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	PixelID     string    `json:"pixel_id"`
	CreatedBy   string    `json:"created_by"`
	At          time.Time `json:"at"`
}

type Updated struct {
	ID          string             `json:"id"`
	WorkspaceID string             `json:"workspace_id"`
	Name        domain.Opt[string] `json:"name,omitzero"`
	Type        domain.Opt[string] `json:"type,omitzero"`
	PixelID     domain.Opt[string] `json:"pixel_id,omitzero"`
	At          time.Time          `json:"at"`
}

type Deleted struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	At          time.Time `json:"at"`
}

func (Created) EventType() string { return EventCreated }
func (Updated) EventType() string { return EventUpdated }
func (Deleted) EventType() string { return EventDeleted }

func init() {
	domain.Register(func() domain.Event { return &Created{} })
	domain.Register(func() domain.Event { return &Updated{} })
	domain.Register(func() domain.Event { return &Deleted{} })
}

// Pixel is the write model of one pixel.
type Pixel struct {
	domain.Changes
	ID          string
	WorkspaceID string
	Name        string
	Type        string
	PixelID     string
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Deleted     bool
}

// Load rebuilds a pixel from its history.
func Load(events []domain.Event) (*Pixel, error) {
	p := &Pixel{}
	for _, e := range events {
		if err := p.apply(e); err != nil {
			return nil, err
		}
		p.Changes.Loaded()
	}
	return p, nil
}

// Exists reports whether the pixel was created and not deleted.
func (p *Pixel) Exists() bool { return p.ID != "" && !p.Deleted }

func (p *Pixel) apply(e domain.Event) error {
	switch e := e.(type) {
	case *Created:
		p.ID, p.WorkspaceID, p.Name, p.Type, p.PixelID, p.CreatedBy = e.ID, e.WorkspaceID, e.Name, e.Type, e.PixelID, e.CreatedBy
		p.CreatedAt, p.UpdatedAt = e.At, e.At
	case *Updated:
		if v, ok := e.Name.Value(); ok {
			p.Name = v
		}
		if v, ok := e.Type.Value(); ok {
			p.Type = v
		}
		if v, ok := e.PixelID.Value(); ok {
			p.PixelID = v
		}
		p.UpdatedAt = e.At
	case *Deleted:
		p.Deleted, p.UpdatedAt = true, e.At
	default:
		return fmt.Errorf("pixel: unexpected event %T", e)
	}
	return nil
}

func (p *Pixel) record(e domain.Event) {
	if err := p.apply(e); err != nil {
		panic(err)
	}
	p.Changes.Record(e)
}

// ValidateName checks a pixel name.
func ValidateName(name string) error {
	return domain.ValidateName("Pixel", name, MaxNameLength)
}

// normalizeName trims a pixel name and checks it.
func normalizeName(name string) (string, error) {
	name = strings.TrimSpace(name)
	return name, ValidateName(name)
}

// typeAliases are the platforms' former names.
var typeAliases = map[string]string{"facebook": TypeMeta, "twitter": TypeX}

// NormalizeType checks a type and returns it in lower case; a platform's
// former name (facebook, twitter) gives its current one.
func NormalizeType(t string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(t))
	if a, ok := typeAliases[n]; ok {
		return a, nil
	}
	for _, v := range Types {
		if n == v {
			return n, nil
		}
	}
	if n == "" {
		return "", domain.Invalid("Pixel type is required (one of %s)", strings.Join(Types, ", "))
	}
	return "", domain.Invalid("Invalid pixel type. Use one of %s", strings.Join(Types, ", "))
}

// NormalizeTagID checks a platform's pixel or measurement id.
func NormalizeTagID(id string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", domain.Invalid("pixel_id is required")
	}
	if !tagID.MatchString(id) {
		return "", domain.Invalid("Invalid pixel_id: use the platform's id (letters, digits, '-', '_', '.' and '/', at most 100)")
	}
	return id, nil
}

// Create records a new pixel.
func Create(id, workspaceID, name, typ, tag, by string, now time.Time) (*Pixel, error) {
	name, err := normalizeName(name)
	if err != nil {
		return nil, err
	}
	if typ, err = NormalizeType(typ); err != nil {
		return nil, err
	}
	if tag, err = NormalizeTagID(tag); err != nil {
		return nil, err
	}
	p := &Pixel{}
	p.record(&Created{ID: id, WorkspaceID: workspaceID, Name: name, Type: typ, PixelID: tag, CreatedBy: by, At: now.UTC()})
	return p, nil
}

// Update changes the given fields; none of them can be cleared (each
// normalizer refuses a null as blank).
func (p *Pixel) Update(name, typ, tag domain.Opt[string], now time.Time) error {
	if !p.Exists() {
		return domain.NotFound(MsgNotFound)
	}
	var err error
	if name, err = name.Normalize(normalizeName); err != nil {
		return err
	}
	if typ, err = typ.Normalize(NormalizeType); err != nil {
		return err
	}
	if tag, err = tag.Normalize(NormalizeTagID); err != nil {
		return err
	}
	p.record(&Updated{ID: p.ID, WorkspaceID: p.WorkspaceID, Name: name, Type: typ, PixelID: tag, At: now.UTC()})
	return nil
}

// Delete removes the pixel. Links that name it keep working, without it.
func (p *Pixel) Delete(now time.Time) error {
	if !p.Exists() {
		return domain.NotFound(MsgNotFound)
	}
	p.record(&Deleted{ID: p.ID, WorkspaceID: p.WorkspaceID, At: now.UTC()})
	return nil
}
