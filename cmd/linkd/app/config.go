// Package app is linkd's composition root: the one place that knows every
// adapter. It reads the configuration, opens the event store, the
// projections and, with brokers, the Kafka pipeline, and serves the
// interface.
package app

import (
	"github.com/linkd/linkd/internal/clock"

	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/linkd/linkd/domain/user"
	"github.com/linkd/linkd/eventstore/postgres"
	"github.com/linkd/linkd/internal/enrich"
	"github.com/linkd/linkd/internal/ssrf"
	"github.com/linkd/linkd/projections/webhooks"
)

// Config is every setting of linkd. Each has an environment variable; the
// table of DECISIONS.md and docs/operations.md lists them.
type Config struct {
	Addr            string        // LINKD_ADDR
	DataDir         string        // LINKD_DATA_DIR
	InitialAPIKey   string        // LINKD_INITIAL_API_KEY
	AdminEmail      string        // LINKD_ADMIN_EMAIL: the operator user's email (default admin@localhost)
	AdminPassword   string        // LINKD_INITIAL_ADMIN_PASSWORD: its first password (default generated, printed once)
	DefaultDomain   string        // LINKD_DEFAULT_DOMAIN (default: Addr)
	PublicScheme    string        // LINKD_PUBLIC_SCHEME
	TrustedProxies  string        // LINKD_TRUSTED_PROXIES
	DNSServer       string        // LINKD_DNS_SERVER
	DefaultPlan     string        // LINKD_DEFAULT_PLAN
	EventStore      string        // LINKD_EVENTSTORE: "" or "embedded" or esdb://... kurrentdb://... postgres://...
	KafkaBrokers    string        // LINKD_KAFKA_BROKERS
	ClickHouseDSN   string        // LINKD_CLICKHOUSE_DSN
	Secret          string        // LINKD_SECRET: hex or base64; default a file in DataDir
	GeoIPDB         string        // LINKD_GEOIP_DB: .mmdb city database
	KeyPrefix       string        // LINKD_KEY_PREFIX (default svc_)
	Durability      string        // LINKD_DURABILITY: "interval" or "always"; unset: interval embedded, always on PostgreSQL (ADR 0132)
	FlushInterval   time.Duration // LINKD_FLUSH_INTERVAL (default 100ms)
	LogLevel        string        // LINKD_LOG_LEVEL: debug, info, warn, error
	LogFormat       string        // LINKD_LOG_FORMAT: json (default) or text
	KafkaPartitions int           // LINKD_KAFKA_PARTITIONS (default 12)
	DebugAddr       string        // LINKD_DEBUG_ADDR: serves /debug/pprof when set (keep it private)
	ClickLimit      int           // LINKD_CLICK_LIMIT: counted clicks per visitor, link and hour (default 1000; 0 off)
	ClickLimitNet   int           // LINKD_CLICK_LIMIT_NETWORK: counted clicks per client network, link and hour (default 10000; 0 off)
	// WebhookRetrySchedule replaces the waits between webhook delivery
	// attempts (comma-separated Go durations).
	WebhookRetrySchedule string // LINKD_WEBHOOK_RETRY_SCHEDULE
	// WebhookAllowedNetworks are CIDRs webhooks may be delivered to although
	// they are loopback, private or link-local.
	WebhookAllowedNetworks string        // LINKD_WEBHOOK_ALLOWED_NETWORKS
	WebhookTimeout         time.Duration // LINKD_WEBHOOK_TIMEOUT: one delivery attempt (default 15s)
	WebhookConcurrency     int           // LINKD_WEBHOOK_CONCURRENCY: requests in flight per webhook, shared by the instances (default 32)
	// WebhookClaimTimeout: with the queue in PostgreSQL, how long after an
	// instance dies the messages it held are sent by another (ADR 0108).
	WebhookClaimTimeout time.Duration // LINKD_WEBHOOK_CLAIM_TIMEOUT (default 30s)

	// Clock is the application's one clock: commands, queries and the API
	// read the time from it. Nil is the system clock; tests set a
	// clock.Manual and move it instead of sleeping. Not configurable from
	// the environment.
	Clock clock.Clock
}

// Defaults returns the configuration before flags and environment.
func Defaults() Config {
	return Config{
		Addr: "127.0.0.1:8080", DataDir: "./data", PublicScheme: "http", DefaultPlan: "pro", AdminEmail: "admin@localhost",
		KeyPrefix: "svc_", FlushInterval: 100 * time.Millisecond,
		LogLevel: "info", LogFormat: "json", KafkaPartitions: 12, ClickLimit: 1000, ClickLimitNet: 10000,
		WebhookTimeout: 15 * time.Second, WebhookConcurrency: 32, WebhookClaimTimeout: webhooks.DefaultClaimTimeout,
	}
}

// FromEnv overlays the LINKD_* environment variables on c.
func (c *Config) FromEnv(getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	str := func(name string, dst *string) {
		if v, ok := lookup(getenv, name); ok {
			*dst = v
		}
	}
	str("LINKD_ADDR", &c.Addr)
	str("LINKD_DATA_DIR", &c.DataDir)
	str("LINKD_INITIAL_API_KEY", &c.InitialAPIKey)
	str("LINKD_ADMIN_EMAIL", &c.AdminEmail)
	str("LINKD_INITIAL_ADMIN_PASSWORD", &c.AdminPassword)
	str("LINKD_DEFAULT_DOMAIN", &c.DefaultDomain)
	str("LINKD_PUBLIC_SCHEME", &c.PublicScheme)
	str("LINKD_TRUSTED_PROXIES", &c.TrustedProxies)
	str("LINKD_DNS_SERVER", &c.DNSServer)
	str("LINKD_DEFAULT_PLAN", &c.DefaultPlan)
	str("LINKD_EVENTSTORE", &c.EventStore)
	str("LINKD_KAFKA_BROKERS", &c.KafkaBrokers)
	str("LINKD_CLICKHOUSE_DSN", &c.ClickHouseDSN)
	str("LINKD_SECRET", &c.Secret)
	str("LINKD_GEOIP_DB", &c.GeoIPDB)
	str("LINKD_KEY_PREFIX", &c.KeyPrefix)
	str("LINKD_DURABILITY", &c.Durability)
	str("LINKD_LOG_LEVEL", &c.LogLevel)
	str("LINKD_LOG_FORMAT", &c.LogFormat)
	str("LINKD_DEBUG_ADDR", &c.DebugAddr)
	str("LINKD_WEBHOOK_RETRY_SCHEDULE", &c.WebhookRetrySchedule)
	str("LINKD_WEBHOOK_ALLOWED_NETWORKS", &c.WebhookAllowedNetworks)
	// Plan and scheme names are words, not identifiers: "Free" and "HTTPS"
	// mean what "free" and "https" do.
	c.DefaultPlan = strings.ToLower(c.DefaultPlan)
	c.PublicScheme = strings.ToLower(c.PublicScheme)
	var errs []error
	if v, ok := lookup(getenv, "LINKD_FLUSH_INTERVAL"); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("LINKD_FLUSH_INTERVAL: %w", err))
		}
		c.FlushInterval = d
	}
	if v, ok := lookup(getenv, "LINKD_WEBHOOK_TIMEOUT"); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("LINKD_WEBHOOK_TIMEOUT: %w", err))
		}
		c.WebhookTimeout = d
	}
	if v, ok := lookup(getenv, "LINKD_WEBHOOK_CLAIM_TIMEOUT"); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("LINKD_WEBHOOK_CLAIM_TIMEOUT: %w", err))
		}
		c.WebhookClaimTimeout = d
	}
	if v, ok := lookup(getenv, "LINKD_CLICK_LIMIT"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("LINKD_CLICK_LIMIT %q: want a whole number, 0 for no limit", v))
		}
		c.ClickLimit = n
	}
	if v, ok := lookup(getenv, "LINKD_WEBHOOK_CONCURRENCY"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1024 {
			errs = append(errs, fmt.Errorf("LINKD_WEBHOOK_CONCURRENCY %q: want a whole number from 1 to 1024", v))
		}
		c.WebhookConcurrency = n
	}
	if v, ok := lookup(getenv, "LINKD_CLICK_LIMIT_NETWORK"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("LINKD_CLICK_LIMIT_NETWORK %q: want a whole number, 0 for no limit", v))
		}
		c.ClickLimitNet = n
	}
	if v, ok := lookup(getenv, "LINKD_KAFKA_PARTITIONS"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("LINKD_KAFKA_PARTITIONS: %w", err))
		}
		c.KafkaPartitions = n
	}
	return errors.Join(errs...)
}

func lookup(getenv func(string) string, name string) (string, bool) {
	v := strings.TrimSpace(getenv(name))
	return v, v != ""
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("LINKD_ADDR %q: want host:port", c.Addr))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("LINKD_DATA_DIR is empty"))
	}
	if c.AdminEmail != "" {
		if _, err := user.NormalizeEmail(c.AdminEmail); err != nil {
			errs = append(errs, fmt.Errorf("LINKD_ADMIN_EMAIL %q: want an email address", c.AdminEmail))
		}
	}
	if c.AdminPassword != "" {
		if err := user.CheckPassword(c.AdminPassword); err != nil {
			errs = append(errs, fmt.Errorf("LINKD_INITIAL_ADMIN_PASSWORD: %w", err))
		}
	}
	if c.PublicScheme != "http" && c.PublicScheme != "https" {
		errs = append(errs, fmt.Errorf("LINKD_PUBLIC_SCHEME %q: want http or https", c.PublicScheme))
	}
	if c.DefaultPlan != "free" && c.DefaultPlan != "pro" {
		errs = append(errs, fmt.Errorf("LINKD_DEFAULT_PLAN %q: want free or pro", c.DefaultPlan))
	}
	if _, err := enrich.ParseTrustedProxies(c.TrustedProxies); err != nil {
		errs = append(errs, fmt.Errorf("LINKD_TRUSTED_PROXIES: %w", err))
	}
	if c.DNSServer != "" {
		if _, _, err := net.SplitHostPort(c.DNSServer); err != nil {
			errs = append(errs, fmt.Errorf("LINKD_DNS_SERVER %q: want host:port", c.DNSServer))
		}
	}
	switch es := strings.ToLower(c.EventStore); {
	case es == "", es == "embedded":
	case strings.HasPrefix(es, "esdb://"), strings.HasPrefix(es, "esdb+discover://"),
		strings.HasPrefix(es, "kurrentdb://"), strings.HasPrefix(es, "kurrentdb+discover://"),
		strings.HasPrefix(es, "kurrent://"):
	case postgres.IsDSN(es):
	default:
		errs = append(errs, fmt.Errorf("LINKD_EVENTSTORE %q: want embedded, esdb://..., kurrentdb://... or postgres://...", c.EventStore))
	}
	if c.ClickHouseDSN != "" && !strings.HasPrefix(c.ClickHouseDSN, "clickhouse://") && !strings.HasPrefix(c.ClickHouseDSN, "tcp://") {
		errs = append(errs, fmt.Errorf("LINKD_CLICKHOUSE_DSN: want clickhouse://user:password@host:9000/database"))
	}
	if c.Durability != "" && c.Durability != "interval" && c.Durability != "always" {
		errs = append(errs, fmt.Errorf("LINKD_DURABILITY %q: want interval or always", c.Durability))
	}
	if c.FlushInterval <= 0 || c.FlushInterval > time.Minute {
		errs = append(errs, fmt.Errorf("LINKD_FLUSH_INTERVAL %v: want between 1ms and 1m", c.FlushInterval))
	}
	if c.KeyPrefix == "" {
		errs = append(errs, errors.New("LINKD_KEY_PREFIX is empty"))
	}
	if c.KafkaPartitions < 1 || c.KafkaPartitions > 1024 {
		errs = append(errs, fmt.Errorf("LINKD_KAFKA_PARTITIONS %d: want 1 to 1024", c.KafkaPartitions))
	}
	if c.WebhookRetrySchedule != "" {
		if _, err := webhooks.ParseSchedule(c.WebhookRetrySchedule); err != nil {
			errs = append(errs, fmt.Errorf("LINKD_WEBHOOK_RETRY_SCHEDULE: %w", err))
		}
	}
	if _, err := ssrf.ParseNetworks(c.WebhookAllowedNetworks); err != nil {
		errs = append(errs, fmt.Errorf("LINKD_WEBHOOK_ALLOWED_NETWORKS: %w", err))
	}
	if c.WebhookTimeout < 0 || c.WebhookTimeout > 5*time.Minute {
		errs = append(errs, fmt.Errorf("LINKD_WEBHOOK_TIMEOUT %v: want up to 5m", c.WebhookTimeout))
	}
	if c.WebhookClaimTimeout != 0 && (c.WebhookClaimTimeout < time.Second || c.WebhookClaimTimeout > 10*time.Minute) {
		errs = append(errs, fmt.Errorf("LINKD_WEBHOOK_CLAIM_TIMEOUT %v: want 1s to 10m", c.WebhookClaimTimeout))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("LINKD_LOG_LEVEL %q: want debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
}

// ShortDomain is the host of short URLs.
func (c *Config) ShortDomain() string {
	if c.DefaultDomain != "" {
		return c.DefaultDomain
	}
	return c.Addr
}

// Trusted parses LINKD_TRUSTED_PROXIES.
func (c *Config) Trusted() []netip.Prefix {
	p, _ := enrich.ParseTrustedProxies(c.TrustedProxies)
	return p
}

// Embedded reports whether the event store is the embedded one.
func (c *Config) Embedded() bool {
	return c.EventStore == "" || strings.EqualFold(c.EventStore, "embedded")
}
