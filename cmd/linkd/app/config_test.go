package app

import "testing"

// LINKD_DEFAULT_PLAN and LINKD_PUBLIC_SCHEME are read without regard to
// case or surrounding spaces; anything else is still refused.
func TestConfigPlanAndSchemeCase(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct{ plan, scheme, wantPlan, wantScheme string }{
		{"free", "http", "free", "http"}, {" Free ", "HTTPS", "free", "https"}, {"PRO", "Http", "pro", "http"},
	} {
		cfg := Defaults()
		if err := cfg.FromEnv(env(map[string]string{"LINKD_DEFAULT_PLAN": c.plan, "LINKD_PUBLIC_SCHEME": c.scheme})); err != nil {
			t.Fatalf("%q %q: %v", c.plan, c.scheme, err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%q %q: %v", c.plan, c.scheme, err)
		}
		if cfg.DefaultPlan != c.wantPlan || cfg.PublicScheme != c.wantScheme {
			t.Errorf("%q %q: plan %q scheme %q", c.plan, c.scheme, cfg.DefaultPlan, cfg.PublicScheme)
		}
	}
	cfg := Defaults()
	if err := cfg.FromEnv(env(map[string]string{"LINKD_DEFAULT_PLAN": "enterprise"})); err != nil {
		t.Fatal(err)
	}
	if cfg.Validate() == nil {
		t.Errorf("LINKD_DEFAULT_PLAN=enterprise accepted")
	}
}

// LINKD_WEBHOOK_CONCURRENCY: 32 unless set, a whole number from 1 to 1024.
func TestConfigWebhookConcurrency(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "LINKD_WEBHOOK_CONCURRENCY" {
				return v
			}
			return ""
		}
	}
	if cfg := Defaults(); cfg.WebhookConcurrency != 32 {
		t.Errorf("default %d", cfg.WebhookConcurrency)
	}
	cfg := Defaults()
	if err := cfg.FromEnv(env("64")); err != nil || cfg.WebhookConcurrency != 64 {
		t.Errorf("64: %d %v", cfg.WebhookConcurrency, err)
	}
	for _, bad := range []string{"0", "-1", "1025", "x"} {
		cfg := Defaults()
		if err := cfg.FromEnv(env(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestPostgresDurabilityByDefault: on PostgreSQL every append waits for the
// server's WAL flush unless LINKD_DURABILITY=interval says otherwise
// (ADR 0132); the embedded store's default stays interval.
func TestPostgresDurabilityByDefault(t *testing.T) {
	for _, c := range []struct {
		env     string
		relaxed bool
	}{{"", false}, {"always", false}, {"interval", true}} {
		env := map[string]string{"LINKD_DURABILITY": c.env, "LINKD_EVENTSTORE": "postgres://linkd@localhost/linkd"}
		cfg := Defaults()
		if err := cfg.FromEnv(func(k string) string { return env[k] }); err != nil {
			t.Fatalf("LINKD_DURABILITY=%q: %v", c.env, err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("LINKD_DURABILITY=%q: %v", c.env, err)
		}
		o := postgresOptions(cfg, nil)
		if got := len(o.Relaxed) > 0; got != c.relaxed {
			t.Errorf("LINKD_DURABILITY=%q: relaxed categories %v, want relaxed %v", c.env, o.Relaxed, c.relaxed)
		}
	}
	cfg := Defaults()
	if err := cfg.FromEnv(func(k string) string { return map[string]string{"LINKD_DURABILITY": "sometimes"}[k] }); err == nil && cfg.Validate() == nil {
		t.Error("LINKD_DURABILITY=sometimes accepted")
	}
}
