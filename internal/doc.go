// Package internal holds nothing itself: its packages are linkd's
// infrastructure (clock, ids, enrichment, limits, storage helpers, test
// support), the level below the application. They may import the standard
// library, other modules, each other, the event store's port (eventstore)
// and the value types of domain/link; never an application layer (api,
// commands, queries, projections, dashboard, kafka, cmd, the other domain
// packages) nor an event store adapter. Only tests and internal/testsupport
// may use internal/testsupport and the adapters. A test in this package
// (layers_test.go) keeps it so.
package internal
