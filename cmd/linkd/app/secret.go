package app

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/linkd/linkd/eventstore"
	"github.com/linkd/linkd/internal/secrets"
)

// agreer is an event store that records what the instances sharing it
// must agree on (postgres.Store.Agree).
type agreer interface {
	Agree(ctx context.Context, name, value string) (string, error)
}

// secretFingerprint is the name under which the deployment's server
// secret is known by its fingerprint.
const secretFingerprint = "secret_fingerprint"

// checkSecret compares the server secret's fingerprint with the one the
// first instance on the event store recorded, and says so at error level
// when they differ: an instance started without LINKD_SECRET, or with
// another, makes its own, and API keys, link passwords and webhook
// secrets made on the other instances then fail on this one (and this
// one's on them). It still starts: its redirects work, and an instance
// whose secret file was lost has no other way to serve what it can.
func checkSecret(ctx context.Context, store eventstore.Store, secret *secrets.Secret, cfg Config, log *slog.Logger) {
	ag, ok := store.(agreer)
	if !ok {
		return
	}
	fp := secret.Fingerprint()
	got, err := ag.Agree(ctx, secretFingerprint, fp)
	if err != nil {
		log.Warn("could not compare the server secret with the deployment's", "err", err)
		return
	}
	if got == fp {
		return
	}
	from := "LINKD_SECRET"
	if cfg.Secret == "" {
		from = filepath.Join(cfg.DataDir, secrets.FileName) + " (LINKD_SECRET is not set)"
	}
	log.Error("the server secret is not the one of the other instances on this event store: API keys, link passwords and webhook secrets made there fail here, and this instance's fail there; set LINKD_SECRET to the same value on every instance (docs/operations.md)",
		"secret_from", from, "fingerprint", fp, "deployment_fingerprint", got)
}
