-- Exact lookups on declared fields only (issue 19): a structured source's
-- `lookup` fields are the ones the `lookup` tool may search, and only their
-- cells are written to `lookup_values` (every cell of every row made
-- ingestion four times slower). Declared with `fields[].lookup` on create;
-- a source that marks none, or declares no fields, looks up by its first
-- column. A version keeps the lookup columns it was parsed with.
ALTER TABLE data_source_fields ADD COLUMN lookup INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ingestion_columns ADD COLUMN lookup INTEGER NOT NULL DEFAULT 0;
-- Versions parsed before this indexed every column.
UPDATE ingestion_columns SET lookup = 1;
UPDATE data_source_fields SET lookup = 1
 WHERE data_source_id IN (SELECT id FROM data_sources WHERE fields_declared = 0 AND built_in = 0);
UPDATE data_source_fields SET lookup = 1
 WHERE position = 0 AND data_source_id IN (SELECT id FROM data_sources WHERE fields_declared = 1);
