-- Radar (projections/clickhouse/radar): page views and custom events, the
-- visits cut from them, and the aggregates its reports read. Every row of
-- radar_events and radar_sessions carries the insert_id of its INSERT (one
-- sequence for both), which the views' tables keep as max_insert_id: an
-- INSERT a view missed (a crash between the two) is rebuilt at start.

CREATE TABLE IF NOT EXISTS {db}.radar_events
(
    `project_id` String,
    `workspace_id` String,
    `visitor_id` String,
    `session_id` String,
    `timestamp` DateTime,
    `date` Date,
    `kind` Enum8('pageview' = 1, 'event' = 2),
    `event_name` String,
    `url` String,
    `hostname` String,
    `pathname` String,
    `referrer` String,
    `source` String,
    `country` String,
    `browser` String,
    `os` String,
    `device` String,
    `props.key` Array(String),
    `props.value` Array(String),
    `click_id` String,
    `link_id` String,
    `stream_version` UInt64,
    `position` UInt64,
    `insert_id` UInt64
)
ENGINE = MergeTree PARTITION BY toYYYYMM(date) ORDER BY (project_id, date, visitor_id, timestamp);

-- Each change of a visit writes the row of its previous state again with
-- sign -1 and its new state with sign +1, in the same INSERT. Rows written
-- before entry_source was added have their source.
CREATE TABLE IF NOT EXISTS {db}.radar_sessions
(
    `project_id` String,
    `workspace_id` String,
    `visitor_id` String,
    `session_id` String,
    `sign` Int8,
    `version` UInt64,
    `started_at` DateTime,
    `ended_at` DateTime,
    `start_ms` Int64,
    `end_ms` Int64,
    `duration_ms` UInt64,
    `pageviews` UInt32,
    `events` UInt32,
    `is_bounce` UInt8,
    `entry_page` String,
    `exit_page` String,
    `hostname` String,
    `source` String,
    `referrer` String,
    `country` String,
    `browser` String,
    `os` String,
    `device` String,
    `click_id` String,
    `link_id` String,
    `position` UInt64,
    `entry_source` String DEFAULT source,
    `insert_id` UInt64
)
ENGINE = CollapsingMergeTree(sign) PARTITION BY toYYYYMM(started_at) ORDER BY (project_id, started_at, session_id);

-- Per project, UTC day, dimension and value: the hits and unique visitors
-- (uniq states) of radar_events.
CREATE TABLE IF NOT EXISTS {db}.radar_daily
(
    `project_id` String,
    `date` Date,
    `dimension` String,
    `value` String,
    `hits` UInt64,
    `visitors` AggregateFunction(uniq, String),
    `max_insert_id` AggregateFunction(max, UInt64)
)
ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (project_id, date, dimension, value) SETTINGS index_granularity = 256;

-- Per project and visitor who came through a short-link click: its first
-- click and its latest country (the sales join of the reports).
CREATE TABLE IF NOT EXISTS {db}.radar_clicks
(
    `project_id` String,
    `visitor_id` String,
    `first_click` AggregateFunction(argMin, String, DateTime),
    `click_country` AggregateFunction(argMax, String, DateTime),
    `max_insert_id` AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree ORDER BY (project_id, visitor_id) SETTINGS index_granularity = 1024;

-- radar_daily's unique visitors as uniqHLL12 states (about 2.5 KB, merged in
-- microseconds, where a uniq state of a busy day holds 65,536 hashes that cost
-- milliseconds to merge), per day and per week (Monday to Sunday; week is the
-- Monday).
CREATE TABLE IF NOT EXISTS {db}.radar_daily_hll
(
    `project_id` String,
    `date` Date,
    `dimension` String,
    `value` String,
    `visitors` AggregateFunction(uniqHLL12, String),
    `max_insert_id` AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (project_id, date, dimension, value) SETTINGS index_granularity = 256;

CREATE TABLE IF NOT EXISTS {db}.radar_weekly_hll
(
    `project_id` String,
    `week` Date,
    `dimension` String,
    `value` String,
    `visitors` AggregateFunction(uniqHLL12, String),
    `max_insert_id` AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree PARTITION BY toYYYYMM(week) ORDER BY (project_id, week, dimension, value) SETTINGS index_granularity = 256;

-- Per project, UTC day a visit started on and its entry source: the visits,
-- bounces and durations (sums weighed by sign, exact as radar_sessions is),
-- and the visitors as uniq and uniqHLL12 states (of the rows of sign 1).
CREATE TABLE IF NOT EXISTS {db}.radar_daily_sources
(
    `project_id` String,
    `date` Date,
    `source` String,
    `visits` Int64,
    `bounces` Int64,
    `duration_ms` Int64,
    `visitors` AggregateFunction(uniq, String),
    `visitors_hll` AggregateFunction(uniqHLL12, String),
    `max_insert_id` AggregateFunction(max, UInt64)
)
ENGINE = SummingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (project_id, date, source) SETTINGS index_granularity = 256;

CREATE TABLE IF NOT EXISTS {db}.radar_checkpoint
(
    `projection` String,
    `commit_position` UInt64,
    `prepare_position` UInt64,
    `updated_at` DateTime
)
ENGINE = ReplacingMergeTree(commit_position) ORDER BY projection;

-- Each row of radar_events counts in dimension "all", in "kind" (pageview or
-- event), in "page" (page views) or "event" (custom events), and in
-- "country", "browser", "os" and "hostname".
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.radar_daily_mv TO {db}.radar_daily AS
SELECT project_id, date, tupleElement(dv, 1) AS dimension, tupleElement(dv, 2) AS value, count() AS hits,
    uniqState(visitor_id) AS visitors, maxState(insert_id) AS max_insert_id
FROM {db}.radar_events
ARRAY JOIN arrayConcat([('all', ''), ('kind', toString(kind)), ('country', country), ('browser', browser), ('os', os), ('hostname', hostname)],
    if(kind = 'pageview', [('page', pathname)], [('event', event_name)])) AS dv
GROUP BY project_id, date, dimension, value;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.radar_clicks_mv TO {db}.radar_clicks AS
SELECT project_id, visitor_id, argMinState(click_id, timestamp) AS first_click,
    argMaxStateIf(country, timestamp, country != '') AS click_country, maxState(insert_id) AS max_insert_id
FROM {db}.radar_events WHERE click_id != '' GROUP BY project_id, visitor_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.radar_daily_hll_mv TO {db}.radar_daily_hll AS
SELECT project_id, date, tupleElement(dv, 1) AS dimension, tupleElement(dv, 2) AS value,
    uniqHLL12State(visitor_id) AS visitors, maxState(insert_id) AS max_insert_id
FROM {db}.radar_events
ARRAY JOIN arrayConcat([('all', ''), ('kind', toString(kind)), ('country', country), ('browser', browser), ('os', os), ('hostname', hostname)],
    if(kind = 'pageview', [('page', pathname)], [('event', event_name)])) AS dv
GROUP BY project_id, date, dimension, value;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.radar_weekly_hll_mv TO {db}.radar_weekly_hll AS
SELECT project_id, toMonday(date) AS week, tupleElement(dv, 1) AS dimension, tupleElement(dv, 2) AS value,
    uniqHLL12State(visitor_id) AS visitors, maxState(insert_id) AS max_insert_id
FROM {db}.radar_events
ARRAY JOIN arrayConcat([('all', ''), ('kind', toString(kind)), ('country', country), ('browser', browser), ('os', os), ('hostname', hostname)],
    if(kind = 'pageview', [('page', pathname)], [('event', event_name)])) AS dv
GROUP BY project_id, week, dimension, value;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.radar_daily_sources_mv TO {db}.radar_daily_sources AS
SELECT project_id, toDate(started_at) AS date, entry_source AS source, sum(sign) AS visits, sum(sign * is_bounce) AS bounces,
    sum(sign * (1 - is_bounce) * (end_ms - start_ms)) AS duration_ms, uniqStateIf(visitor_id, sign = 1) AS visitors,
    uniqHLL12StateIf(visitor_id, sign = 1) AS visitors_hll, maxState(insert_id) AS max_insert_id
FROM {db}.radar_sessions GROUP BY project_id, date, source;
