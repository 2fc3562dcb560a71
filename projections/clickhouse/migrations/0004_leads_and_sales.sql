-- Schema version 4: leads and sales, one row per recorded conversion. A row
-- may be written twice (delivery is at least once): ReplacingMergeTree by
-- conversion_id folds the copies, and reads group by conversion_id first.

CREATE TABLE IF NOT EXISTS {db}.leads
(
    `event_id` String,
    `conversion_id` String,
    `event_name` String,
    `click_id` String,
    `link_id` String,
    `workspace_id` String,
    `project_id` String,
    `customer_id` String,
    `customer_external_id` String,
    `timestamp` DateTime,
    `date` Date,
    `first` UInt8,
    `clicked_at` DateTime,
    `country` String,
    `device_type` String,
    `browser` String,
    `os` String,
    `referrer` String,
    `metadata` String
)
ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (workspace_id, link_id, conversion_id);

CREATE TABLE IF NOT EXISTS {db}.sales
(
    `event_id` String,
    `conversion_id` String,
    `event_name` String,
    `click_id` String,
    `link_id` String,
    `workspace_id` String,
    `project_id` String,
    `customer_id` String,
    `customer_external_id` String,
    `timestamp` DateTime,
    `date` Date,
    `first` UInt8,
    `clicked_at` DateTime,
    `country` String,
    `device_type` String,
    `browser` String,
    `os` String,
    `referrer` String,
    `metadata` String,
    `amount` Int64,
    `currency` String
)
ENGINE = ReplacingMergeTree PARTITION BY toYYYYMM(date) ORDER BY (workspace_id, link_id, conversion_id);
