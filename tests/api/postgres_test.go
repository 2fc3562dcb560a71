package api_test

import (
	"os"
	"strings"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/chtest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// TestMain stops the PostgreSQL and ClickHouse servers the tests started
// (ClickHouse's with LINKD_TEST_SCALED=1, apptest).
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	chtest.Stop()
	os.Exit(code)
}

// onPostgres is the prefix of the tests that TestOnPostgres runs again with
// the event log in PostgreSQL (start gives their servers a database each).
const onPostgres = "TestOnPostgres/"

// onScaled is the prefix of the tests that TestOnScaled runs again on the
// scaled deployment's parts.
const onScaled = "TestOnScaled/"

// postgresOption keeps a server's events in PostgreSQL when t runs under
// TestOnPostgres, and adds Kafka and ClickHouse under TestOnScaled.
func postgresOption(t *testing.T) []apptest.Option {
	switch {
	case strings.HasPrefix(t.Name(), onPostgres):
		return []apptest.Option{apptest.Postgres(t)}
	case strings.HasPrefix(t.Name(), onScaled):
		return []apptest.Option{apptest.Postgres(t), apptest.Scaled(t)}
	}
	return nil
}

// TestOnPostgres runs representative suites of the interface (links, reads
// that follow writes, concurrent uniqueness and click limits, conversions,
// statistics, webhooks) on a linkd whose event log is in PostgreSQL
// (LINKD_EVENTSTORE=postgres://...). Every other test of the package runs
// on PostgreSQL too when LINKD_EVENTSTORE names a server (apptest).
func TestOnPostgres(t *testing.T) {
	if !pgtest.Available() {
		t.Skip(pgtest.SkipMessage)
	}
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"LinkEveryFieldRoundTrips", TestLinkEveryFieldRoundTrips},
		{"LinkCodes", TestLinkCodes},
		{"LinkPartialUpdate", TestLinkPartialUpdate},
		{"LinkArchive", TestLinkArchive},
		{"LinkListFilters", TestLinkListFilters},
		{"LinkDelete", TestLinkDelete},
		{"LinkPublicByCode", TestLinkPublicByCode},
		{"LinkPasswordAndExpiry", TestLinkPasswordAndExpiry},
		{"WorkspaceCRUD", TestWorkspaceCRUD},
		{"ConcurrentUniqueness", TestConcurrentUniqueness},
		{"ConcurrentClickLimit", TestConcurrentClickLimit},
		{"ConversionIdempotencyUnderConcurrency", TestConversionIdempotencyUnderConcurrency},
		{"Customers", TestCustomers},
		{"ConversionStatistics", TestConversionStatistics},
		{"StatsRecordsAndSummary", TestStatsRecordsAndSummary},
		// Webhooks: the queue and the attempts are in PostgreSQL (ADR 0108).
		{"WebhookEveryEventType", TestWebhookEveryEventType},
		{"WebhookRetriesKeepTheID", TestWebhookRetriesKeepTheID},
		{"WebhookGoneDisables", TestWebhookGoneDisables},
		{"WebhookRetryAfter", TestWebhookRetryAfter},
		{"WebhookReplay", TestWebhookReplay},
		{"WebhookRestartWhileReceiverDown", TestWebhookRestartWhileReceiverDown},
	} {
		t.Run(tc.name, tc.run)
	}
}

// TestOnScaled runs the suites of statistics, Radar, conversions and clicks
// on the parts of a scaled deployment: the event log in PostgreSQL, the
// statistics and Radar reads in ClickHouse, fed through Kafka (each server
// has a database and a kfake cluster of its own). The whole package runs
// so with LINKD_TEST_SCALED=1 (apptest), and on PostgreSQL as well with
// LINKD_EVENTSTORE=postgres://...
func TestOnScaled(t *testing.T) {
	if !pgtest.Available() {
		t.Skip(pgtest.SkipMessage)
	}
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"StatsDateRules", TestStatsDateRules},
		{"StatsRecordsAndSummary", TestStatsRecordsAndSummary},
		{"StatsAccess", TestStatsAccess},
		{"RadarCollectAndReport", TestRadarCollectAndReport},
		{"RadarJourney", TestRadarJourney},
		{"ConversionStatistics", TestConversionStatistics},
		{"Customers", TestCustomers},
		{"ConcurrentClickLimit", TestConcurrentClickLimit},
	} {
		t.Run(tc.name, tc.run)
	}
}
