-- Upper bound, unsafe (bench/pg-variant.sh): a group of clicks only is stored as
-- one row of arrays (one heap tuple, TOASTed, and one position key a group),
-- with a GIN index on its streams so that a click stream could still be read.
-- Positions run on from the larger of both tables' heads; nothing reads the
-- batches back (linkd's projections get the clicks from its writer).
CREATE TABLE linkd_click_batches (position bigint PRIMARY KEY, n int NOT NULL, streams text[], versions bigint[], ids uuid[], types text[], datas bytea[], metas bytea[], created timestamptz);
CREATE INDEX linkd_click_batches_streams ON linkd_click_batches USING gin (streams);
ALTER FUNCTION linkd_append(text[], bigint[], uuid[], text[], bytea[], bytea[], timestamptz, text[], text, text, boolean) RENAME TO linkd_append_real;
CREATE FUNCTION linkd_append(
	p_streams text[], p_versions bigint[], p_ids uuid[], p_types text[],
	p_datas bytea[], p_metas bytea[], p_created timestamptz, p_cats text[],
	p_channel text, p_instance text, p_relaxed boolean) RETURNS bigint[]
LANGUAGE plpgsql AS $f$
DECLARE h bigint; b bigint; n bigint := coalesce(cardinality(p_streams), 0);
BEGIN
	IF p_versions IS NOT NULL AND n > 0 AND p_cats = ARRAY['clicks'] THEN
		PERFORM pg_advisory_xact_lock(119200079897601);
		SELECT coalesce(max(position), 0) INTO h FROM linkd_events;
		SELECT position + n - 1 INTO b FROM linkd_click_batches ORDER BY position DESC LIMIT 1;
		h := greatest(h, coalesce(b, 0));
		INSERT INTO linkd_click_batches VALUES (h + 1, n, p_streams, p_versions, p_ids, p_types, p_datas, p_metas, p_created);
		INSERT INTO linkd_heads (category, position) VALUES ('clicks', h + n)
		ON CONFLICT (category) DO UPDATE SET position = excluded.position;
		PERFORM pg_notify(p_channel, p_instance || ' ' || (h + n)::text);
		RETURN ARRAY[h];
	END IF;
	RETURN linkd_append_real(p_streams, p_versions, p_ids, p_types, p_datas, p_metas, p_created, p_cats, p_channel, p_instance, p_relaxed);
END
$f$;
