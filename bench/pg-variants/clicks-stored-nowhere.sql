-- Upper bound, unsafe (bench/pg-variant.sh): a group of clicks only is answered
-- after the append lock and the head are read, and nothing of it is stored or
-- notified. linkd's own projections still count the clicks (the writer hands
-- them to its subscriptions); what is left of the server's part is the round
-- trip and a commit without WAL.
ALTER FUNCTION linkd_append(text[], bigint[], uuid[], text[], bytea[], bytea[], timestamptz, text[], text, text, boolean) RENAME TO linkd_append_real;
CREATE FUNCTION linkd_append(
	p_streams text[], p_versions bigint[], p_ids uuid[], p_types text[],
	p_datas bytea[], p_metas bytea[], p_created timestamptz, p_cats text[],
	p_channel text, p_instance text, p_relaxed boolean) RETURNS bigint[]
LANGUAGE plpgsql AS $f$
DECLARE h bigint;
BEGIN
	IF p_versions IS NOT NULL AND cardinality(p_streams) > 0 AND p_cats = ARRAY['clicks'] THEN
		PERFORM pg_advisory_xact_lock(119200079897601);
		SELECT coalesce(max(position), 0) INTO h FROM linkd_events;
		RETURN ARRAY[h];
	END IF;
	RETURN linkd_append_real(p_streams, p_versions, p_ids, p_types, p_datas, p_metas, p_created, p_cats, p_channel, p_instance, p_relaxed);
END
$f$;
