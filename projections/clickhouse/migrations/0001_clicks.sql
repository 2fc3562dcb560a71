-- Schema version 1: clicks, one row per counted click, written by the
-- statistics projection (projections/clickhouse/stats); the daily tables of
-- links and workspaces; the links dimension; the projection's checkpoint.
-- docs/analytics.md describes every table and column.

CREATE TABLE IF NOT EXISTS {db}.clicks
(
    `click_id` String,
    `link_id` String,
    `workspace_id` String,
    `project_id` String,
    `domain_id` String,
    `code` String,
    `timestamp` DateTime,
    `date` Date,
    `source` String,
    `qr` UInt8,
    `visitor` String,
    `browser` String,
    `browser_version` String,
    `os` String,
    `os_version` String,
    `device_type` String,
    `device` String,
    `from_app` UInt8,
    `app` String,
    `language` String,
    `referrer` String,
    `referrer_url` String,
    `country` String,
    `continent` String,
    `city` String,
    `region` String,
    `destination` String,
    `tracking_id` String,
    `tracking_expires_at` Nullable(DateTime),
    `click_seq` UInt64,
    `event_position` UInt64,
    `event_prepare_position` UInt64,
    `insert_id` UInt64
)
ENGINE = MergeTree PARTITION BY toYYYYMM(date) ORDER BY (workspace_id, link_id, timestamp);

-- The daily tables have few rows, but rows that carry unique-visitor states,
-- and ClickHouse decodes every row of each granule it reads: a small
-- index_granularity keeps a query for one key from decoding the states of its
-- neighbours (10 million clicks, uniqMerge of the busiest link's 30 days:
-- 186 ms of CPU at the default 8192, 55 ms at 256, 26 ms at 32, 22 ms at 8;
-- workspace rows are fewer and fatter: 323 ms at 8192, 35 ms at 4).
-- unique_visitors: uniq keeps the 32-bit hashes of up to 65536 visitors, then
-- samples them (about 1% error); merging 30 days of the busiest workspace of
-- 10 million clicks took 27 ms of CPU with uniq, 59 ms with uniqExact.
-- max_click_seq is the projector's dedup mark of each link, max_insert_id
-- what recovery reads.
CREATE TABLE IF NOT EXISTS {db}.link_clicks_daily
(
    `link_id` String,
    `date` Date,
    `workspace_id` String,
    `clicks` UInt64,
    `qr_scans` UInt64,
    `direct_clicks` UInt64,
    `chrome_clicks` UInt64,
    `ios_clicks` UInt64,
    `android_clicks` UInt64,
    `unique_visitors` AggregateFunction(uniq, String),
    `first_click` AggregateFunction(min, DateTime),
    `last_click` AggregateFunction(max, DateTime),
    `max_click_seq` AggregateFunction(max, UInt64),
    `max_insert_id` AggregateFunction(max, UInt64)
)
ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (link_id, date, workspace_id) SETTINGS index_granularity = 8;

CREATE TABLE IF NOT EXISTS {db}.workspace_clicks_daily
(
    `workspace_id` String,
    `date` Date,
    `clicks` UInt64,
    `qr_scans` UInt64,
    `direct_clicks` UInt64,
    `chrome_clicks` UInt64,
    `ios_clicks` UInt64,
    `android_clicks` UInt64,
    `unique_visitors` AggregateFunction(uniq, String),
    `first_click` AggregateFunction(min, DateTime),
    `last_click` AggregateFunction(max, DateTime),
    `max_insert_id` AggregateFunction(max, UInt64)
)
ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (workspace_id, date) SETTINGS index_granularity = 4;

CREATE TABLE IF NOT EXISTS {db}.links
(
    `link_id` String,
    `code` String,
    `domain_id` String,
    `name` String,
    `workspace_id` String,
    `project_id` String,
    `original_url` String,
    `created_at` DateTime,
    `updated_at` DateTime,
    `archived` UInt8,
    `deleted` UInt8,
    `version` UInt64,
    `event_position` UInt64
)
ENGINE = ReplacingMergeTree(version) ORDER BY link_id;

CREATE TABLE IF NOT EXISTS {db}.projection_checkpoint
(
    `projection` String,
    `commit_position` UInt64,
    `prepare_position` UInt64,
    `updated_at` DateTime
)
ENGINE = ReplacingMergeTree(commit_position) ORDER BY projection;
