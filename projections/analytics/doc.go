// Package analytics is the embedded, durable statistics projection: the read
// model of the daily link and workspace statistics (queries.StatsReadModel)
// when no ClickHouse is configured.
//
// It consumes the "clicks" category and keeps, in a Pebble database,
// pre-aggregated daily records per (link, UTC day) and per (workspace, UTC
// day): counters, breakdown maps and the day's unique visitors. A query reads
// one record per clicked day of its range, through one iterator (a consistent
// view while batches commit), and never scans clicks.
//
// # Storage
//
// One Pebble database (see keys.go for the exact layout):
//
//	0x01 "checkpoint"                 -> global position of the last event applied
//	0x01 "versions-gap"               -> positions whose stream versions may be missing
//	0x02 <stream>                     -> last version applied of that stream
//	0x03 <len><link id><day>          -> daily record of a link
//	0x04 <len><workspace id><day>     -> daily record of a workspace
//
// # Writes
//
// Apply deduplicates the batch by (stream, version), decodes the clicks (on
// every core), adds them up in memory per (link, day) and per (workspace,
// day) (two goroutines), and commits one Pebble batch that holds one merge
// operand per touched (scope, day) — the delta of this batch —, the new last
// version of every touched stream, and the checkpoint.
//
// Daily records form a commutative monoid (record.merge: counters and maps
// add up, first/last click take min/max, visitors unite), so deltas can be
// added in any grouping and order. Pebble's merge operator (merge.go) adds
// them up in flushes, compactions and reads, on the encoded bytes. This is
// the read-modify-write of the daily record done lazily: Apply never reads a
// record, so a batch touching 3,000 records costs 3,000 blind writes instead
// of 3,000 point reads, decodes and re-encodes (a busy workspace-day carries
// a 16 KiB visitor sketch), and the merging happens off the Apply path, many
// deltas at a time. A read merges at most the operands not yet compacted
// (docs/performance.md has the query latencies).
//
// # Idempotence
//
// An event is applied only when its version is newer than the last version
// applied of its stream (kept in the database, cached in memory); events of
// one stream arrive in version order, streams interleave freely. Duplicates
// in one batch, in later batches, and after a restart are skipped.
//
// Fed in log order (the in-process runner: WriteVersionsBehind), the
// checkpoint alone tells what was applied, so the stream versions wait in
// memory and are written about once a second and at Close, not with every
// batch: at a thousand links they were as many keys as the deltas. A crash
// loses the waiting ones; a durable gap (0x01 "versions-gap") says which
// positions' versions may be missing, the feeder goes back to its start,
// and its events are skipped as applied while their versions are learned
// (internal/storage/versioncache, Behind; TestVersionsWrittenBehind, which also
// goes on with Kafka after the crash).
//
// # Written behind
//
// With Options.FlushEvery (linkd serve in process sets five seconds), the
// deltas of many batches wait in memory, added up, and go to Pebble in one
// batch with the checkpoint and the stream versions at most that often,
// when FlushMax clicks wait, before any query reads (so reads still follow
// clicks) and at Close: at a thousand links a second of clicks is a
// thousand merge operands instead of one per link per batch. Checkpoint()
// reports what was applied; the stored checkpoint only what was written,
// so after a crash the feeder, resuming after it, applies the lost events
// again (the NoSync contract, which FlushEvery requires). Dedup consults
// the waiting versions first. A write that fails keeps its encoded deltas
// for the next (TestDeltasWrittenBehind, and the contract suite run with
// everything waiting until a query: TestStatsContractWrittenBehind).
// ADR 0007 has the measurement.
//
// # Durability
//
// The deltas, the stream versions and the checkpoint are in one atomic
// batch: after any crash the database holds a prefix of the committed
// batches, each whole, so the checkpoint and the dedup state are never ahead
// of (nor behind) the data they describe. By default the batch is committed
// with pebble.Sync: when Apply returns nil the batch is on disk and survives
// a crash of the process and of the machine. Options.NoSync trades that for
// speed and is safe only when the feeder resumes after Checkpoint() (the
// in-process runner and Replay do; Kafka does not): see its comment, and
// TestCrash, which crashes a simulated file system in both modes.
//
// # Breakdowns
//
// Empty values (an unknown city, no referrer) are not counted in breakdown
// maps; they still count in every total. Keys:
//   - os_version: "<os> <version>" ("iOS 17.4"); the bare version when the OS
//     is unknown; not counted without a version.
//   - device_and_os: "<device_type> <os>" ("mobile iOS"); only when both are
//     known.
//   - app: only clicks with from_app true and a known app.
//   - from_app: "true" or "false", always counted.
//   - chrome_clicks, ios_clicks, android_clicks: browser "Chrome", OS "iOS",
//     OS "Android" (ASCII case-insensitive, as ClickHouse's lower(): no
//     Unicode folding).
//   - scans_only counts clicks with qr true; clicks_only = total - scans_only.
//   - FirstClick and LastUpdated are the times of the day's first and last
//     click counted, to the second (rounded down), as ClickHouse gives them.
//   - WorkspaceID of a link's record is the workspace of the day's last
//     click (a link may move; of the clicks of the last second, the greatest
//     id), whatever the order of the batches and merges.
//
// The records are those of every statistics store: projections/statstest
// holds them to the same contract as the ClickHouse projection.
//
// A click without a time counts on the day it was recorded; a click without
// a link id in its body counts for the link its stream names.
//
// # Unique visitors
//
// Distinct "visitor" values of the day, per link and per workspace: exact
// (64-bit hashes) up to 2048 a day and scope, then a HyperLogLog sketch of
// 2^14 registers, relative standard error 0.81% (uniques.go). Clicks without
// a visitor value count in the totals only.
//
// # Memory
//
// Bounded by Options: Pebble's block cache (CacheSize) and memtables
// (MemTableSize, a few of them), the stream-version cache (StreamCacheSize
// entries, twice at most), and per Apply the batch being applied.
package analytics
