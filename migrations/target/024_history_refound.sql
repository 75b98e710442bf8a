-- A table's history and its versions view are followed by their oids
-- (tidemark.tables.history_relid, versions_relid), kept by the sync of a
-- table's mode under the names <target_table>_history and
-- <target_table>_versions beside the table. A target moved by a logical
-- copy (pg_dump and pg_restore into another database or server) keeps the
-- catalog's rows but not the oids: an oid recorded then names nothing,
-- or another relation, whose view the next sync of the mode would drop
-- and into which the history's entries would go.
--
-- history_refind, called by `run` at each session's start and by `mode`,
-- points each oid that no longer names the relation of its name and kind
-- beside the table at the one that does: a table with the history's own
-- columns, a view. An oid naming a relation that is neither is forgotten
-- (a history made again by `tidemark mode`). Returns what it changed.

-- Is relid a relation of kind in schema named name (and, for a history,
-- with the history's own columns)?
CREATE OR REPLACE FUNCTION tidemark.history_relation_is(p_relid oid, p_schema text, p_name text,
                                                        p_kind "char")
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.oid = p_relid AND c.relkind = p_kind
           AND (p_name IS NULL OR (n.nspname = p_schema AND c.relname = p_name))
           AND (p_kind <> 'r' OR (SELECT count(*) FROM pg_attribute a
                                   WHERE a.attrelid = c.oid AND NOT a.attisdropped
                                     AND a.attname IN ('tidemark_lsn', 'tidemark_seq',
                                                       'tidemark_op')) = 3))
$$;

-- The oid of the relation of kind named name in schema, with the history's
-- columns for a table; NULL when there is none.
CREATE OR REPLACE FUNCTION tidemark.history_relation_named(p_schema text, p_name text,
                                                           p_kind "char")
RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = p_schema AND c.relname = p_name
       AND tidemark.history_relation_is(c.oid, p_schema, p_name, p_kind)
$$;

-- One oid of a table's history (kind 'r') or versions view (kind 'v'):
-- kept when it names the relation of that name beside the table, else the
-- one of that name, else kept when it names a table with the history's
-- columns still (a history renamed by hand) or nothing (the history made
-- again by `tidemark mode`), else NULL: it names another relation.
CREATE OR REPLACE FUNCTION tidemark.history_relation_find(p_relid oid, p_schema text,
                                                          p_name text, p_kind "char")
RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN p_relid IS NULL OR tidemark.history_relation_is(p_relid, p_schema, p_name, p_kind)
            THEN p_relid
        WHEN tidemark.history_relation_named(p_schema, p_name, p_kind) IS NOT NULL
            THEN tidemark.history_relation_named(p_schema, p_name, p_kind)
        WHEN p_kind = 'r' AND tidemark.history_relation_is(p_relid, NULL, NULL, 'r') THEN p_relid
        WHEN tidemark.relation_if_any(p_relid) IS NULL THEN p_relid
        ELSE NULL END
$$;

CREATE OR REPLACE FUNCTION tidemark.history_refind(p_slot text)
RETURNS TABLE (mirror text, history text, versions text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    h oid;
    v oid;
BEGIN
    FOR t IN SELECT table_id, target_schema, target_table, history_relid, versions_relid
               FROM tidemark.tables
              WHERE slot_name = p_slot AND (history_relid IS NOT NULL OR versions_relid IS NOT NULL)
              ORDER BY table_id FOR UPDATE
    LOOP
        h := tidemark.history_relation_find(t.history_relid, t.target_schema,
                                            t.target_table || '_history', 'r');
        v := tidemark.history_relation_find(t.versions_relid, t.target_schema,
                                            t.target_table || '_versions', 'v');
        CONTINUE WHEN h IS NOT DISTINCT FROM t.history_relid
                  AND v IS NOT DISTINCT FROM t.versions_relid;
        UPDATE tidemark.tables SET history_relid = h, versions_relid = v
         WHERE table_id = t.table_id;
        mirror := format('%I.%I', t.target_schema, t.target_table);
        history := coalesce(tidemark.relation_if_any(h)::text, '(none)');
        versions := coalesce(tidemark.relation_if_any(v)::text, '(none)');
        RETURN NEXT;
    END LOOP;
END
$$;
