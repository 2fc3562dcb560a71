-- Upper bound, unsafe (bench/pg-variant.sh): the log without its (stream,
-- version) key, so that a click's row is inserted into the heap and the
-- position key only. Two appenders could then both take a stream's next
-- version; bench/redirect.sh runs one linkd, whose writer gives versions.
ALTER TABLE linkd_events DROP CONSTRAINT linkd_events_stream_version;
