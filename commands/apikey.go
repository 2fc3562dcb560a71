package commands

import (
	"context"
	"crypto/rand"
	"math/big"
	"strings"

	"github.com/linkd/linkd/domain"
	"github.com/linkd/linkd/domain/apikey"
	"github.com/linkd/linkd/domain/reservation"
)

// KeyHasher turns a key into the keyed hash that is stored instead of it.
type KeyHasher interface {
	Hash(key string) string
}

// OperatorUser is the user of the operator key.
const OperatorUser = "admin"

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
	hosts := make([]string, 0, len(c.AllowedHostnames))
	for _, hn := range c.AllowedHostnames {
		hn = strings.ToLower(strings.TrimSpace(hn))
		if hn == "" || strings.ContainsAny(hn, "/ ") {
			return nil, "", Result{}, domain.Invalid("allowed_hostnames must be host names")
		}
		hosts = append(hosts, hn)
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

// EnsureOperatorKey creates the operator's full-access key for user
// "admin" on first start. The claim "operatorkey-admin" makes it happen
// once; a later start with another LINKD_INITIAL_API_KEY adds that key too.
type EnsureOperatorKey struct {
	// Key is LINKD_INITIAL_API_KEY, or empty to generate one.
	Key string
	// Exists tells whether a key with this hash is already known.
	Exists func(ctx context.Context, hash string) (bool, error)
}

type EnsureOperatorKeyHandler struct {
	*Deps
	Hasher        KeyHasher
	ServicePrefix string
}

// Handle returns the generated key when one was made ("" otherwise).
func (h EnsureOperatorKeyHandler) Handle(ctx context.Context, c EnsureOperatorKey) (string, Result, error) {
	a := Actor{UserID: OperatorUser, Operator: true}
	r, err := loadReservation(ctx, h.Store, reservation.KindOperatorKey, OperatorUser)
	if err != nil {
		return "", Result{}, err
	}
	secret := c.Key
	generated := false
	if secret == "" {
		if r.Holding {
			return "", Result{}, nil // made on an earlier start
		}
		secret, generated = NewKeySecret(h.ServicePrefix, apikey.KindSecret), true
	} else {
		hash := h.Hasher.Hash(secret)
		if c.Exists != nil {
			ok, err := c.Exists(ctx, hash)
			if err != nil {
				return "", Result{}, err
			}
			if ok {
				return "", Result{}, nil
			}
		}
	}
	id := h.newID()
	k, err := apikey.Create(apikey.Created{
		KeyID: id, UserID: OperatorUser, Name: "operator", Kind: apikey.KindSecret, Access: apikey.AccessFull,
		Hash: h.Hasher.Hash(secret), Prefix: displayPrefix(secret), Operator: true, At: h.now(),
	})
	if err != nil {
		return "", Result{}, err
	}
	res, _, err := reserve(ctx, h.Deps, a, reservation.KindOperatorKey, OperatorUser, "operator", id, "", nil)
	if err != nil {
		return "", Result{}, err
	}
	r2, err := save(ctx, h.Store, apikey.Stream(id), k, metaOf(a))
	if err != nil {
		return "", Result{}, err
	}
	res.merge(r2)
	if generated {
		return secret, res, nil
	}
	return "", res, nil
}

// DeactivateAPIKey makes a key invalid. Users deactivate their own keys;
// the operator any key.
type DeactivateAPIKey struct {
	Actor Actor
	KeyID string
}

type DeactivateAPIKeyHandler struct{ *Deps }

func (h DeactivateAPIKeyHandler) Handle(ctx context.Context, c DeactivateAPIKey) (Result, error) {
	return retry(ctx, func() (Result, error) {
		k, err := loadKey(ctx, h.Store, c.KeyID)
		if err != nil {
			return Result{}, err
		}
		if !k.Exists() {
			return Result{}, domain.NotFound("API key not found")
		}
		if k.UserID != c.Actor.UserID && !c.Actor.Operator {
			return Result{}, domain.ErrInsufficientPermissions()
		}
		if err := k.Deactivate(c.Actor.UserID, h.now()); err != nil {
			return Result{}, err
		}
		return save(ctx, h.Store, apikey.Stream(k.KeyID), k, metaOf(c.Actor))
	})
}
