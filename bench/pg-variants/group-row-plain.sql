-- Upper bound, unsafe: group-row.sql without its GIN index and with the
-- arrays stored uncompressed. Applied after it:
--   bench/pg-variant.sh SERVER bench/pg-variants/group-row.sql,bench/pg-variants/group-row-plain.sql
DROP INDEX linkd_click_batches_streams;
ALTER TABLE linkd_click_batches ALTER datas SET STORAGE EXTERNAL, ALTER streams SET STORAGE EXTERNAL,
	ALTER types SET STORAGE EXTERNAL, ALTER ids SET STORAGE EXTERNAL;
