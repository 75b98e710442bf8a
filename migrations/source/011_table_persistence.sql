-- A table's persistence in its definition.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- An UNLOGGED table's changes are not written to the WAL, so logical
-- decoding never sees them. PostgreSQL refuses to add one to a publication
-- by name, but a schema publication skips it silently: a table created
-- UNLOGGED in a replicated schema was registered and copied once, and then
-- stayed as copied. capture_tables now gives "persistence" (pg_class's
-- relpersistence), so that `run` leaves such a table out until it is made
-- LOGGED (it then joins, and is copied) and `setup` names it with the fix.
CREATE OR REPLACE FUNCTION tidemark.capture_tables(p_relids oid[])
RETURNS json
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT json_agg(json_build_object(
               'relid', c.oid::bigint, 'schema', n.nspname, 'name', c.relname,
               'relkind', c.relkind, 'replident', c.relreplident,
               -- 'p' permanent, 'u' unlogged (whose changes are not in the WAL)
               'persistence', c.relpersistence,
               'partition_of', (SELECT h.inhparent::bigint FROM pg_inherits h
                                 WHERE h.inhrelid = c.oid AND c.relispartition),
               'partition_root', CASE WHEN c.relispartition
                                      THEN pg_partition_root(c.oid)::bigint END,
               'columns', tidemark.capture_columns(c.oid),
               'types', coalesce(tidemark.type_definitions(ARRAY(
                            SELECT a.atttypid FROM pg_attribute a
                             WHERE a.attrelid = c.oid AND a.attnum > 0
                               AND NOT a.attisdropped)), '[]'::json))
             ORDER BY r.ord)
      FROM unnest(p_relids) WITH ORDINALITY AS r (relid, ord)
      JOIN pg_class c ON c.oid = r.relid
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
       AND NOT tidemark.capture_schema_skipped(n.nspname)
$$;
