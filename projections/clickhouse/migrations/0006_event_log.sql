-- The event log the database's projections were built from (ADR 0131): the
-- id of its first event and the kind of store that keeps it (embedded,
-- postgres, esdb), one row each time a linkd records it; the latest is the
-- database's. Their checkpoints are positions of that log: linkd serve
-- refuses the database on another log until a replay of both projections.
CREATE TABLE IF NOT EXISTS {db}.event_log
(
    `first_event` String,
    `store_kind` String,
    `recorded_at` UInt64
)
ENGINE = MergeTree ORDER BY recorded_at;
