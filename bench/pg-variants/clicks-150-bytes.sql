-- Upper bound, unsafe (bench/pg-variant.sh): each click's data cut to its
-- first 150 bytes before it is stored (about 600 in full), as if clicks were
-- encoded a quarter the size. Every other event is stored whole; linkd's
-- projections get the clicks whole from its writer.
ALTER FUNCTION linkd_append(text[], bigint[], uuid[], text[], bytea[], bytea[], timestamptz, text[], text, text, boolean) RENAME TO linkd_append_real;
CREATE FUNCTION linkd_append(
	p_streams text[], p_versions bigint[], p_ids uuid[], p_types text[],
	p_datas bytea[], p_metas bytea[], p_created timestamptz, p_cats text[],
	p_channel text, p_instance text, p_relaxed boolean) RETURNS bigint[]
LANGUAGE sql AS $f$
	SELECT linkd_append_real(p_streams, p_versions, p_ids, p_types,
		ARRAY(SELECT CASE WHEN u.t = 'ClickRecorded' THEN substring(u.d FROM 1 FOR 150) ELSE u.d END
			FROM unnest(p_types, p_datas) WITH ORDINALITY AS u(t, d, o) ORDER BY u.o),
		p_metas, p_created, p_cats, p_channel, p_instance, p_relaxed)
$f$;
