package e2e

import (
	"testing"

	"github.com/linkd/linkd/internal/testsupport/pgtest"
)

// The crash and replay tests again with the event log in PostgreSQL
// (LINKD_EVENTSTORE=postgres://...): SIGKILL of linkd under load loses
// nothing acknowledged, and `linkd replay` from PostgreSQL gives the same
// read models. The database is pgtest's (a throwaway cluster, or
// LINKD_TEST_POSTGRES_DSN); without PostgreSQL they skip.

func TestCrashKeepsAcknowledgedWritesAndClicksPostgres(t *testing.T) {
	crashScenario(t, "LINKD_EVENTSTORE="+pgtest.DSN(t))
}

func TestReplayGivesSameReadModelsPostgres(t *testing.T) {
	replayScenario(t, "LINKD_EVENTSTORE="+pgtest.DSN(t))
}
