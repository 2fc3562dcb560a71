package commands

import (
	"context"
	"crypto/rand"
	"math/big"
	"strings"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
)

// KeyHasher turns a key into the keyed hash that is stored instead of it.
type KeyHasher interface {
	Hash(key string) string
}

// DisplayPrefixLength is how much of a key listings show.
const DisplayPrefixLength = 12

const keyAlphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

// NewKeySecret returns a key: prefix ("svc_"), "sk_" or "pk_", and 32
// random characters (190 bits).
func NewKeySecret(servicePrefix, kind string) string {
	var b strings.Builder
	b.WriteString(servicePrefix)
	if kind == apikey.KindPublishable {
		b.WriteString("pk_")
	} else {
		b.WriteString("sk_")
	}
	max := big.NewInt(int64(len(keyAlphabet)))
	for i := 0; i < 32; i++ {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic(err)
		}
		b.WriteByte(keyAlphabet[v.Int64()])
	}
	return b.String()
}

func displayPrefix(key string) string {
	if len(key) <= DisplayPrefixLength {
		return key
	}
	return key[:DisplayPrefixLength]
}

// CreateAPIKey makes a key. A key creates keys for its own user; the
// operator key for any user.
type CreateAPIKey struct {
	Actor            Actor
	UserID           string
	Name             string
	Kind             string
	Access           string
	Permissions      map[string]string
	ProjectID        string
	AllowedHostnames []string
}

type CreateAPIKeyHandler struct {
	*Deps
	Hasher        KeyHasher
	ServicePrefix string
}

// Handle returns the key's write model and the full key, shown once.
func (h CreateAPIKeyHandler) Handle(ctx context.Context, c CreateAPIKey) (*apikey.Key, string, Result, error) {
	user := c.UserID
	if user == "" {
		user = c.Actor.UserID
	}
	if user != c.Actor.UserID && !c.Actor.Operator {
		return nil, "", Result{}, domain.ErrInsufficientPermissions()
	}
	if c.Kind == "" {
		c.Kind = apikey.KindSecret
	}
	if c.Access == "" {
		c.Access = apikey.AccessFull
	}
	if c.ProjectID != "" {
		if _, err := projectForMemberOf(ctx, h.Deps, user, c.ProjectID); err != nil {
			return nil, "", Result{}, err
		}
	}
	if len(c.AllowedHostnames) > apikey.MaxAllowedHostnames {
		return nil, "", Result{}, domain.Invalid("allowed_hostnames holds at most %d host names", apikey.MaxAllowedHostnames)
	}
	hosts := make([]string, 0, len(c.AllowedHostnames))
	for _, hn := range c.AllowedHostnames {
		if len(hn) > apikey.MaxHostnameLength {
			return nil, "", Result{}, domain.Invalid("allowed_hostnames: a host name is at most %d bytes", apikey.MaxHostnameLength)
		}
		norm, err := apikey.NormalizeAllowedHostname(hn)
		if err != nil {
			return nil, "", Result{}, domain.Invalid("allowed_hostnames: %q: %s", hn, err.Error())
		}
		hosts = append(hosts, norm)
	}
	secret := NewKeySecret(h.ServicePrefix, c.Kind)
	k, err := apikey.Create(apikey.Created{
		KeyID: h.newID(), UserID: user, Name: strings.TrimSpace(c.Name), Kind: c.Kind, Access: c.Access,
		Permissions: c.Permissions, ProjectID: c.ProjectID, AllowedHostnames: hosts,
		Hash: h.Hasher.Hash(secret), Prefix: displayPrefix(secret), At: h.now(),
	})
	if err != nil {
		return nil, "", Result{}, err
	}
	res, err := save(ctx, h.Store, apikey.Stream(k.KeyID), k, metaOf(c.Actor))
	if err != nil {
		return nil, "", Result{}, err
	}
	return k, secret, res, nil
}

func projectForMemberOf(ctx context.Context, d *Deps, user, projectID string) (*struct{}, error) {
	p, err := loadProject(ctx, d.Store, projectID)
	if err != nil {
		return nil, err
	}
	if !p.Exists() {
		return nil, domain.NotFound("Project not found")
	}
	if _, err := memberWorkspace(ctx, d.Store, Actor{UserID: user}, p.WorkspaceID); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}
