package api_test

import (
	"strings"
	"testing"

	"github.com/linkd/linkd/cmd/linkd/app/apptest"
	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// onPostgres is the prefix of the tests that TestOnPostgres runs again with
// the event log in PostgreSQL (start gives their servers a database each).
const onPostgres = "TestOnPostgres/"

// postgresOption keeps a server's events in PostgreSQL when t runs under
// TestOnPostgres.
func postgresOption(t *testing.T) []apptest.Option {
	if strings.HasPrefix(t.Name(), onPostgres) {
		return []apptest.Option{apptest.Postgres(t)}
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
