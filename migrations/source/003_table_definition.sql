-- One definition of a table on the source.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- The capture's "tables" (001_capture.sql documents the JSON) and the
-- definition `setup`, `run` and `verify` read of a table
-- (source_query_table_def, src/source_query.c) come from the same
-- functions, so that a table is never described in two ways. They read
-- only the system catalogs, which every role may read, so any role may run
-- them: `run` needs no superuser to describe a table that appears later.
--
-- New in the definition:
--   - the key leaves out the INCLUDE columns of a covering index, and each
--     key column says its place in the key ("key_position", 1, 2, ...; null
--     for other columns), so that chunks are read in the index's order;
--   - a table with REPLICA IDENTITY FULL and no primary key takes as its key
--     a unique index on NOT NULL columns (non-partial, without expressions,
--     not deferrable), the one with the fewest columns;
--   - each table says whether it is a partition ("partition_of": the relid of
--     its parent, "partition_root": of its topmost partitioned ancestor, both
--     null otherwise).
--
-- Later migrations that change what a column or a key is replace only
-- tidemark.capture_columns, tidemark.column_target_type or
-- tidemark.table_keycols.

-- The key columns of a table, by attnum, in the index's order; null when the
-- table has none that tidemark can match rows by.
CREATE OR REPLACE FUNCTION tidemark.table_keycols(p_relid oid)
RETURNS int2[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
          WHERE i.indrelid = p_relid AND i.indisreplident AND c.relreplident = 'i'),
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i WHERE i.indrelid = p_relid AND i.indisprimary),
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
          WHERE i.indrelid = p_relid AND c.relreplident = 'f'
            AND i.indisunique AND i.indimmediate AND i.indisvalid
            AND i.indpred IS NULL AND i.indexprs IS NULL
            AND NOT EXISTS (SELECT FROM pg_attribute a
                             WHERE a.attrelid = p_relid AND NOT a.attnotnull
                               AND a.attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1]))
          ORDER BY i.indnkeyatts, i.indexrelid LIMIT 1))
$$;

-- The type a new target column of this source type gets: the same for
-- built-in types, the base type for a domain over a built-in type, text (or
-- text[]) for the others.
CREATE OR REPLACE FUNCTION tidemark.column_target_type(p_type oid, p_typmod integer)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN t.typnamespace = 'pg_catalog'::regnamespace
                  OR e.typnamespace = 'pg_catalog'::regnamespace
                THEN format_type(p_type, p_typmod)
                WHEN t.typtype = 'd' AND b.typnamespace = 'pg_catalog'::regnamespace
                THEN format_type(t.typbasetype, t.typtypmod)
                WHEN t.typcategory = 'A' THEN 'text[]'
                ELSE 'text' END
      FROM pg_type t
      LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
      LEFT JOIN pg_type b ON b.oid = t.typbasetype
     WHERE t.oid = p_type
$$;

-- The "columns" of one table (see 001_capture.sql), by attnum.
CREATE OR REPLACE FUNCTION tidemark.capture_columns(p_relid oid)
RETURNS json
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET datestyle = 'ISO, YMD'
SET intervalstyle = 'postgres'
SET extra_float_digits = 3
SET bytea_output = 'hex'
SET lc_monetary = 'C'
SET timezone = 'UTC'
AS $$
    SELECT coalesce(json_agg(json_build_object(
               'attnum', a.attnum, 'name', a.attname,
               'type', format_type(a.atttypid, a.atttypmod),
               'target_type', tidemark.column_target_type(a.atttypid, a.atttypmod),
               'type_oid', a.atttypid::bigint, 'typmod', a.atttypmod,
               'not_null', a.attnotnull,
               'key', coalesce(a.attnum = ANY (k.keycols), false),
               'key_position', array_position(k.keycols, a.attnum),
               'has_missing', a.atthasmissing,
               -- attmissingval is a one-element array of the column's type
               'missing', CASE WHEN a.atthasmissing
                               THEN (a.attmissingval::text::text[])[1] END,
               'default', a.atthasdef)
             ORDER BY a.attnum), '[]'::json)
      FROM pg_attribute a
     CROSS JOIN (SELECT tidemark.table_keycols(p_relid) AS keycols) k
     WHERE a.attrelid = p_relid AND a.attnum > 0 AND NOT a.attisdropped
       AND a.attgenerated = ''
$$;

-- The definitions of the capturable tables among p_relids (in that order),
-- as the "tables" of a message; null when there is none.
CREATE OR REPLACE FUNCTION tidemark.capture_tables(p_relids oid[])
RETURNS json
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT json_agg(json_build_object(
               'relid', c.oid::bigint, 'schema', n.nspname, 'name', c.relname,
               'relkind', c.relkind, 'replident', c.relreplident,
               'partition_of', (SELECT h.inhparent::bigint FROM pg_inherits h
                                 WHERE h.inhrelid = c.oid AND c.relispartition),
               'partition_root', CASE WHEN c.relispartition
                                      THEN pg_partition_root(c.oid)::bigint END,
               'columns', tidemark.capture_columns(c.oid))
             ORDER BY r.ord)
      FROM unnest(p_relids) WITH ORDINALITY AS r (relid, ord)
      JOIN pg_class c ON c.oid = r.relid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
       AND NOT tidemark.capture_schema_skipped(n.nspname)
$$;

GRANT USAGE ON SCHEMA tidemark TO PUBLIC;
GRANT EXECUTE ON FUNCTION tidemark.capture_schema_skipped(text), tidemark.table_keycols(oid),
    tidemark.column_target_type(oid, integer), tidemark.capture_columns(oid),
    tidemark.capture_tables(oid[]) TO PUBLIC;
