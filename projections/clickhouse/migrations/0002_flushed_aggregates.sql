-- Schema version 2: the projector writes the aggregates of the clicks at most
-- every FlushInterval, through Null tables and their views; breakdowns are
-- maps per link (or workspace) and day, their keys named in breakdown_values;
-- the records of days that are over are kept in *_daily_final. Version 1's
-- long-form breakdown tables (link_clicks_daily_breakdown,
-- workspace_clicks_daily_breakdown) are no longer written: their views and
-- inputs go, the tables keep their data until a replay.

-- The columns of clicks that the daily views read: the projector writes them
-- here when it flushes (Null: nothing is stored).
CREATE TABLE IF NOT EXISTS {db}.clicks_daily_input
(
    `link_id` String,
    `workspace_id` String,
    `date` Date,
    `timestamp` DateTime,
    `qr` UInt8,
    `browser` String,
    `os` String,
    `visitor` String,
    `click_seq` UInt64,
    `insert_id` UInt64
)
ENGINE = Null;

-- The key of a breakdown value is cityHash64('<dimension>:<value>'). The same
-- entry may be written more than once: a ReplacingMergeTree folds the copies.
-- A new dimension extends the Enum8, in a migration of its own, in the
-- order of the projector's list.
CREATE TABLE IF NOT EXISTS {db}.breakdown_values
(
    `key` UInt64,
    `dimension` Enum8('os' = 1, 'os_version' = 2, 'city' = 3, 'language' = 4, 'browser' = 5, 'country' = 6, 'continent' = 7, 'device_and_os' = 8, 'app' = 9, 'device_type' = 10, 'from_app' = 11, 'referrer' = 12),
    `value` String
)
ENGINE = ReplacingMergeTree ORDER BY key SETTINGS index_granularity = 256;

-- Final records: a day that is over no longer changes (but for late clicks),
-- so its counters, unique visitors, first and last click are computed once
-- from the daily tables. A newer version supersedes a record; valid = 0 marks
-- a record that late clicks made stale. breakdownMap is empty since schema
-- version 3.
CREATE TABLE IF NOT EXISTS {db}.link_clicks_daily_final
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
    `unique_visitors` UInt64,
    `first_click` DateTime,
    `last_click` DateTime,
    `breakdownMap.key` Array(UInt64),
    `breakdownMap.clicks` Array(UInt64),
    `as_of_insert_id` UInt64,
    `valid` UInt8,
    `version` UInt64
)
ENGINE = ReplacingMergeTree(version) PARTITION BY toYYYYMM(date) ORDER BY (link_id, date) SETTINGS index_granularity = 32;

CREATE TABLE IF NOT EXISTS {db}.workspace_clicks_daily_final
(
    `workspace_id` String,
    `date` Date,
    `clicks` UInt64,
    `qr_scans` UInt64,
    `direct_clicks` UInt64,
    `chrome_clicks` UInt64,
    `ios_clicks` UInt64,
    `android_clicks` UInt64,
    `unique_visitors` UInt64,
    `first_click` DateTime,
    `last_click` DateTime,
    `breakdownMap.key` Array(UInt64),
    `breakdownMap.clicks` Array(UInt64),
    `as_of_insert_id` UInt64,
    `valid` UInt8,
    `version` UInt64
)
ENGINE = ReplacingMergeTree(version) PARTITION BY toYYYYMM(date) ORDER BY (workspace_id, date) SETTINGS index_granularity = 32;

-- A breakdown row holds, for one link (or workspace) and day, a map from
-- value keys to clicks: a Nested column whose name ends in "Map", which
-- SummingMergeTree sums key by key when it merges rows (on 18.16 as on
-- current versions; String keys would not be summed by 18.16, hence the
-- numeric keys). One row per cell and flush: about 0.3 rows a click instead
-- of 6 to 7 in long form, over 10 M clicks. The granularity is small because
-- a row carries up to hundreds of keys and a query wants one key's 30 rows.
-- The projector counts the breakdowns and writes them through the _input
-- table (Null); the view adds the max_insert_id state.
CREATE TABLE IF NOT EXISTS {db}.link_clicks_daily_breakdown_v2
(
    `link_id` String,
    `date` Date,
    `breakdownMap.key` Array(UInt64),
    `breakdownMap.clicks` Array(UInt64),
    `max_insert_id` AggregateFunction(max, UInt64)
)
ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (link_id, date) SETTINGS index_granularity = 32;

CREATE TABLE IF NOT EXISTS {db}.link_clicks_daily_breakdown_v2_input
(
    `link_id` String,
    `date` Date,
    `keys` Array(UInt64),
    `counts` Array(UInt64),
    `insert_id` UInt64
)
ENGINE = Null;

CREATE TABLE IF NOT EXISTS {db}.workspace_clicks_daily_breakdown_v2
(
    `workspace_id` String,
    `date` Date,
    `breakdownMap.key` Array(UInt64),
    `breakdownMap.clicks` Array(UInt64),
    `max_insert_id` AggregateFunction(max, UInt64)
)
ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (workspace_id, date) SETTINGS index_granularity = 8;

CREATE TABLE IF NOT EXISTS {db}.workspace_clicks_daily_breakdown_v2_input
(
    `workspace_id` String,
    `date` Date,
    `keys` Array(UInt64),
    `counts` Array(UInt64),
    `insert_id` UInt64
)
ENGINE = Null;

-- Version 1's breakdown views and inputs (they hold nothing), and its daily
-- views, which read clicks.
DROP TABLE IF EXISTS {db}.link_clicks_daily_breakdown_mv;
DROP TABLE IF EXISTS {db}.workspace_clicks_daily_breakdown_mv;
DROP TABLE IF EXISTS {db}.link_clicks_daily_breakdown_input;
DROP TABLE IF EXISTS {db}.workspace_clicks_daily_breakdown_input;
DROP TABLE IF EXISTS {db}.link_clicks_daily_mv;
DROP TABLE IF EXISTS {db}.workspace_clicks_daily_mv;

-- The counters count clicks without a visitor key in no visitor.
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.link_clicks_daily_mv TO {db}.link_clicks_daily AS
SELECT link_id, date, workspace_id, count() AS clicks, countIf(qr = 1) AS qr_scans, countIf(qr = 0) AS direct_clicks,
    countIf(lower(browser) = 'chrome') AS chrome_clicks, countIf(lower(os) = 'ios') AS ios_clicks,
    countIf(lower(os) = 'android') AS android_clicks, uniqStateIf(visitor, visitor != '') AS unique_visitors,
    minState(timestamp) AS first_click, maxState(timestamp) AS last_click, maxState(click_seq) AS max_click_seq,
    maxState(insert_id) AS max_insert_id
FROM {db}.clicks_daily_input GROUP BY link_id, date, workspace_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.workspace_clicks_daily_mv TO {db}.workspace_clicks_daily AS
SELECT workspace_id, date, count() AS clicks, countIf(qr = 1) AS qr_scans, countIf(qr = 0) AS direct_clicks,
    countIf(lower(browser) = 'chrome') AS chrome_clicks, countIf(lower(os) = 'ios') AS ios_clicks,
    countIf(lower(os) = 'android') AS android_clicks, uniqStateIf(visitor, visitor != '') AS unique_visitors,
    minState(timestamp) AS first_click, maxState(timestamp) AS last_click, maxState(insert_id) AS max_insert_id
FROM {db}.clicks_daily_input GROUP BY workspace_id, date;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.link_clicks_daily_breakdown_v2_mv TO {db}.link_clicks_daily_breakdown_v2 AS
SELECT link_id, date, keys AS `breakdownMap.key`, counts AS `breakdownMap.clicks`, arrayReduce('maxState', [insert_id]) AS max_insert_id
FROM {db}.link_clicks_daily_breakdown_v2_input;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.workspace_clicks_daily_breakdown_v2_mv TO {db}.workspace_clicks_daily_breakdown_v2 AS
SELECT workspace_id, date, keys AS `breakdownMap.key`, counts AS `breakdownMap.clicks`, arrayReduce('maxState', [insert_id]) AS max_insert_id
FROM {db}.workspace_clicks_daily_breakdown_v2_input;
