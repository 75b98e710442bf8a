-- The capture's cost per DDL no longer grows with the tables it touches,
-- their columns, or the size of the catalog.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- The capture runs inside the application's DDL, while it holds its locks,
-- so its time is lock time. Four things made it costly:
--
--   - A table's description called helper functions per column (type_ref,
--     column_target_type, collation_definition, ...), and table_keycols
--     once per column and key reference instead of once per table. These
--     were SQL functions, whose statements PostgreSQL plans again at every
--     execution of their caller: per table, per column.
--   - capture_types joined the DDL's commands to pg_type with a plan that
--     read all of pg_type, and capture_truncate_install to pg_trigger with
--     one that read all of pg_trigger, at every DDL: their cost grew with
--     the database's tables.
--   - A table's "types" were looked for even when all its columns have
--     built-in types (then they are always empty).
--   - The message was read back from its text four times (a jsonb to add
--     its "types", then three fields for its head), which for a DDL
--     touching many tables is megabytes each time.
--
-- Measured with tests/bench/bench_ddl (the same DDL in a database without
-- the capture): an ALTER TABLE ... ADD COLUMN on a table of 500 partitions
-- (500 tables touched) took 1.4 s with the capture against 23 ms without,
-- a CREATE INDEX on it 1.7 s against 0.33 s, each small CREATE or ALTER
-- TABLE 8 ms against 1.4 ms.
--
-- Now the helpers are PL/pgSQL (their plans are kept for the session, and
-- generic: catalog lookups by oid); the columns of all the touched tables
-- are described in one statement (capture_columns_of), with the helpers run
-- once per distinct type, collation and table; both scans go by index;
-- "types" is read only for a table with a column of a user-defined type;
-- and the message is read once. The descriptions are the same, byte for
-- byte (the JSON of 014 and 004); the message is the same JSON object.
--
-- The helpers' statements below are those of the migrations named, in
-- RETURN (...); capture_types is found by its oids instead of by a join.

-- type_ref: as in 004_target_types.sql
CREATE OR REPLACE FUNCTION tidemark.type_ref(p_type oid)
RETURNS oid
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT CASE WHEN x.typnamespace = 'pg_catalog'::regnamespace THEN NULL ELSE x.oid END
      FROM pg_type t
      JOIN pg_type x ON x.oid = CASE WHEN t.typelem <> 0
                                      AND t.typsubscript = 'array_subscript_handler'::regproc
                                     THEN t.typelem ELSE t.oid END
     WHERE t.oid = p_type);
END
$$;

-- type_extension: as in 004_target_types.sql
CREATE OR REPLACE FUNCTION tidemark.type_extension(p_type oid)
RETURNS oid
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT d.refobjid FROM pg_depend d
     WHERE d.classid = 'pg_type'::regclass AND d.objid = p_type
       AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     LIMIT 1);
END
$$;

-- collation_definition: as in 004_target_types.sql
CREATE OR REPLACE FUNCTION tidemark.collation_definition(p_coll oid)
RETURNS json
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT CASE WHEN p_coll = 0 THEN NULL
                WHEN p_coll = 100 OR c.collprovider = 'd' THEN
                    (SELECT json_build_object(
                         'schema', 'pg_catalog', 'name', 'default', 'default', true,
                         'builtin', true, 'provider', d.datlocprovider,
                         'collate', d.datcollate, 'ctype', d.datctype,
                         'locale', coalesce(to_jsonb(d) ->> 'daticulocale',
                                            to_jsonb(d) ->> 'datlocale'),
                         'rules', to_jsonb(d) ->> 'daticurules',
                         'deterministic', true,
                         'version', pg_database_collation_actual_version(d.oid))
                       FROM pg_database d WHERE d.datname = current_database())
                ELSE json_build_object(
                         'schema', n.nspname, 'name', c.collname, 'default', false,
                         'builtin', c.collnamespace = 'pg_catalog'::regnamespace,
                         'provider', c.collprovider,
                         'collate', c.collcollate, 'ctype', c.collctype,
                         'locale', coalesce(to_jsonb(c) ->> 'colliculocale',
                                            to_jsonb(c) ->> 'colllocale'),
                         'rules', to_jsonb(c) ->> 'collicurules',
                         'deterministic', c.collisdeterministic,
                         'version', pg_collation_actual_version(c.oid)) END
      FROM (SELECT p_coll AS oid) p
      LEFT JOIN pg_collation c ON c.oid = p.oid
      LEFT JOIN pg_namespace n ON n.oid = c.collnamespace);
END
$$;

-- column_target_type: as in 004_target_types.sql
CREATE OR REPLACE FUNCTION tidemark.column_target_type(p_type oid, p_typmod integer)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT CASE WHEN x.typnamespace = 'pg_catalog'::regnamespace
                  OR tidemark.type_extension(x.oid) IS NOT NULL
                  OR x.typtype IN ('e', 'd') OR (x.typtype = 'c' AND r.relkind = 'c')
                THEN format_type(p_type, p_typmod)
                WHEN x.oid <> t.oid THEN 'text[]'
                ELSE 'text' END
      FROM pg_type t
      JOIN pg_type x ON x.oid = coalesce(tidemark.type_ref(t.oid), t.oid)
      LEFT JOIN pg_class r ON r.oid = x.typrelid
     WHERE t.oid = p_type);
END
$$;

-- not_null_unchecked: as in 013_deferrable_key.sql
CREATE OR REPLACE FUNCTION tidemark.not_null_unchecked(p_relid oid, p_attnum int2)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT EXISTS (SELECT FROM pg_constraint c
                    WHERE c.conrelid = p_relid AND c.contype = 'n' AND NOT c.convalidated
                      AND c.conkey = ARRAY[p_attnum]));
END
$$;

-- table_keycols: as in 013_deferrable_key.sql
CREATE OR REPLACE FUNCTION tidemark.table_keycols(p_relid oid)
RETURNS int2[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT coalesce(
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
          WHERE i.indrelid = p_relid AND i.indisreplident AND c.relreplident = 'i'),
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i WHERE i.indrelid = p_relid AND i.indisprimary AND i.indimmediate),
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
          WHERE i.indrelid = p_relid AND c.relreplident = 'f'
            AND i.indisunique AND i.indimmediate AND i.indisvalid
            AND i.indpred IS NULL AND i.indexprs IS NULL
            AND NOT EXISTS (SELECT FROM pg_attribute a
                             WHERE a.attrelid = p_relid
                               AND (NOT a.attnotnull
                                    OR tidemark.not_null_unchecked(p_relid, a.attnum))
                               AND a.attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1]))
          ORDER BY i.indnkeyatts, i.indexrelid LIMIT 1)));
END
$$;

-- type_definition: as in 004_target_types.sql
CREATE OR REPLACE FUNCTION tidemark.type_definition(p_type oid)
RETURNS json
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT json_build_object(
        'oid', t.oid::bigint, 'schema', n.nspname, 'name', t.typname,
        'kind', CASE WHEN x.oid IS NOT NULL THEN 'extension'
                     WHEN t.typtype = 'e' THEN 'enum'
                     WHEN t.typtype = 'd' THEN 'domain'
                     WHEN t.typtype = 'c' AND r.relkind = 'c' THEN 'composite'
                     WHEN t.typtype = 'c' THEN 'row'
                     WHEN t.typtype = 'r' THEN 'range'
                     WHEN t.typtype = 'm' THEN 'multirange'
                     WHEN t.typtype = 'p' THEN 'pseudo'
                     ELSE 'base' END,
        'extension', x.extname, 'extension_schema', xn.nspname,
        'extension_version', x.extversion,
        'labels', CASE WHEN t.typtype = 'e' AND x.oid IS NULL THEN coalesce(
            (SELECT json_agg(json_build_object('oid', e.oid::bigint, 'label', e.enumlabel)
                             ORDER BY e.enumsortorder)
               FROM pg_enum e WHERE e.enumtypid = t.oid), '[]'::json) END,
        'attributes', CASE WHEN t.typtype = 'c' AND r.relkind = 'c' AND x.oid IS NULL
            THEN coalesce(
            (SELECT json_agg(json_build_object(
                        'attnum', a.attnum, 'name', a.attname,
                        'type', format_type(a.atttypid, a.atttypmod),
                        'type_oid', a.atttypid::bigint,
                        'type_ref', tidemark.type_ref(a.atttypid)::bigint,
                        'collation', tidemark.collation_definition(a.attcollation))
                     ORDER BY a.attnum)
               FROM pg_attribute a
              WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped), '[]'::json) END,
        'base_type', CASE WHEN t.typtype = 'd' THEN format_type(t.typbasetype, t.typtypmod) END,
        'base_type_oid', CASE WHEN t.typtype = 'd' THEN t.typbasetype::bigint END,
        'base_type_ref', CASE WHEN t.typtype = 'd' THEN tidemark.type_ref(t.typbasetype)::bigint END,
        'collation', CASE WHEN t.typtype = 'd' THEN tidemark.collation_definition(t.typcollation) END,
        'not_null', t.typnotnull,
        'constraints', CASE WHEN t.typtype = 'd' THEN coalesce(
            (SELECT json_agg(c.conname ORDER BY c.conname) FROM pg_constraint c
              WHERE c.contypid = t.oid), '[]'::json) END,
        'depends', coalesce(
            (SELECT json_agg(DISTINCT dep::bigint) FROM (
                 SELECT tidemark.type_ref(t.typbasetype) AS dep
                  WHERE t.typtype = 'd' AND x.oid IS NULL
                 UNION ALL
                 SELECT tidemark.type_ref(a.atttypid) FROM pg_attribute a
                  WHERE r.relkind = 'c' AND x.oid IS NULL AND a.attrelid = r.oid
                    AND a.attnum > 0 AND NOT a.attisdropped) deps
              WHERE dep IS NOT NULL), '[]'::json))
      FROM pg_type t
      JOIN pg_namespace n ON n.oid = t.typnamespace
      LEFT JOIN pg_class r ON r.oid = t.typrelid
      LEFT JOIN pg_extension x ON x.oid = tidemark.type_extension(t.oid)
      LEFT JOIN pg_namespace xn ON xn.oid = x.extnamespace
     WHERE t.oid = p_type);
END
$$;

-- type_closure: as in 004_target_types.sql
CREATE OR REPLACE FUNCTION tidemark.type_closure(p_types oid[])
RETURNS oid[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (WITH RECURSIVE c (oid) AS (
        SELECT tidemark.type_ref(x) FROM unnest(p_types) AS x
         WHERE tidemark.type_ref(x) IS NOT NULL
        UNION
        SELECT d.dep
          FROM c
          JOIN pg_type t ON t.oid = c.oid
          LEFT JOIN pg_class r ON r.oid = t.typrelid AND r.relkind = 'c'
          CROSS JOIN LATERAL (
              SELECT tidemark.type_ref(t.typbasetype) AS dep WHERE t.typtype = 'd'
              UNION ALL
              SELECT tidemark.type_ref(a.atttypid) FROM pg_attribute a
               WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped) d
         WHERE d.dep IS NOT NULL AND tidemark.type_extension(t.oid) IS NULL)
    SELECT coalesce(array_agg(oid), '{}') FROM c);
END
$$;

-- type_definitions: as in 004_target_types.sql
CREATE OR REPLACE FUNCTION tidemark.type_definitions(p_types oid[])
RETURNS json
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT json_agg(tidemark.type_definition(x) ORDER BY x)
      FROM unnest(tidemark.type_closure(p_types)) AS x);
END
$$;

-- capture_types: as in 004_target_types.sql, but found by their oids in pg_type
-- (its index) rather than by a join the planner made a scan of all of pg_type
CREATE OR REPLACE FUNCTION tidemark.capture_types()
RETURNS oid[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT coalesce(array_agg(DISTINCT t.oid), '{}')
      FROM pg_type t
      JOIN pg_namespace n ON n.oid = t.typnamespace
     WHERE t.oid = ANY (ARRAY(
               SELECT CASE WHEN c.classid = 'pg_type'::regclass THEN c.objid ELSE r.reltype END
                 FROM pg_event_trigger_ddl_commands() c
                 LEFT JOIN pg_class r ON c.classid = 'pg_class'::regclass AND r.oid = c.objid
                                     AND r.relkind = 'c'
                WHERE c.command_tag NOT IN ('COMMENT', 'SECURITY LABEL') AND NOT c.in_extension))
       AND NOT tidemark.capture_schema_skipped(n.nspname));
END
$$;


-- The columns of every table in p_relids (each once), as 014's
-- capture_columns describes them; with the types of those columns that are
-- user-defined (type_ref not null), in no particular order. A relid with no
-- columns, or that is no relation, gives '[]' and '{}'.
CREATE OR REPLACE FUNCTION tidemark.capture_columns_of(p_relids oid[])
RETURNS TABLE (relid oid, columns json, user_types oid[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET datestyle = 'ISO, YMD'
SET intervalstyle = 'postgres'
SET extra_float_digits = 3
SET bytea_output = 'hex'
SET lc_monetary = 'C'
SET timezone = 'UTC'
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH rel AS MATERIALIZED (
        SELECT r.relid, tidemark.table_keycols(r.relid) AS keycols
          FROM (SELECT DISTINCT x AS relid FROM unnest(p_relids) AS x) r),
    col AS MATERIALIZED (
        SELECT a.attrelid, a.attnum, a.attname, a.atttypid, a.atttypmod, a.attcollation,
               a.attnotnull, a.atthasmissing,
               -- attmissingval is a one-element array of the column's type
               CASE WHEN a.atthasmissing THEN (a.attmissingval::text::text[])[1] END AS missing,
               a.atthasdef AND a.attgenerated = '' AS has_default,
               -- stored ('s') and, from PostgreSQL 18, virtual ('v')
               CASE WHEN a.attgenerated IN ('s', 'v')
                    THEN (SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d
                           WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum) END AS generated
          FROM rel
          JOIN pg_attribute a ON a.attrelid = rel.relid
         WHERE a.attnum > 0 AND NOT a.attisdropped),
    typ AS MATERIALIZED (
        SELECT t.atttypid, t.atttypmod,
               format_type(t.atttypid, t.atttypmod) AS type,
               tidemark.column_target_type(t.atttypid, t.atttypmod) AS target_type,
               tidemark.type_ref(t.atttypid) AS type_ref
          FROM (SELECT DISTINCT atttypid, atttypmod FROM col) t),
    coll AS MATERIALIZED (
        SELECT c.attcollation, tidemark.collation_definition(c.attcollation) AS definition
          FROM (SELECT DISTINCT attcollation FROM col) c),
    unchecked AS MATERIALIZED (
        SELECT attrelid, attnum FROM col
         WHERE attnotnull AND tidemark.not_null_unchecked(attrelid, attnum))
    SELECT rel.relid,
           coalesce(json_agg(json_build_object(
               'attnum', a.attnum, 'name', a.attname,
               'type', t.type,
               'target_type', t.target_type,
               'type_oid', a.atttypid::bigint, 'typmod', a.atttypmod,
               'type_ref', t.type_ref::bigint,
               'collation', co.definition,
               'not_null', a.attnotnull AND u.attnum IS NULL,
               'key', coalesce(a.attnum = ANY (rel.keycols), false),
               'key_position', array_position(rel.keycols, a.attnum),
               'has_missing', a.atthasmissing, 'missing', a.missing,
               'default', a.has_default, 'generated', a.generated)
             ORDER BY a.attnum) FILTER (WHERE a.attnum IS NOT NULL), '[]'::json),
           coalesce(array_agg(DISTINCT a.atttypid) FILTER (WHERE t.type_ref IS NOT NULL), '{}')
      FROM rel
      LEFT JOIN col a ON a.attrelid = rel.relid
      LEFT JOIN typ t ON t.atttypid = a.atttypid AND t.atttypmod = a.atttypmod
      LEFT JOIN coll co ON co.attcollation = a.attcollation
      LEFT JOIN unchecked u ON u.attrelid = a.attrelid AND u.attnum = a.attnum
     GROUP BY rel.relid;
END
$$;

-- One table's columns: capture_columns_of for it alone.
CREATE OR REPLACE FUNCTION tidemark.capture_columns(p_relid oid)
RETURNS json
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT columns FROM tidemark.capture_columns_of(ARRAY[p_relid])
$$;

CREATE OR REPLACE FUNCTION tidemark.capture_tables(p_relids oid[])
RETURNS json
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    -- the capturable tables first: a temporary table's DDL describes none
    RETURN (WITH t AS MATERIALIZED (
                SELECT r.ord, c.oid, c.relname, c.relkind, c.relreplident, c.relpersistence,
                       c.relispartition, n.nspname
                  FROM unnest(p_relids) WITH ORDINALITY AS r (relid, ord)
                  JOIN pg_class c ON c.oid = r.relid
                  JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
                   AND NOT tidemark.capture_schema_skipped(n.nspname))
            SELECT json_agg(json_build_object(
               'relid', t.oid::bigint, 'schema', t.nspname, 'name', t.relname,
               'relkind', t.relkind, 'replident', t.relreplident,
               -- 'p' permanent, 'u' unlogged (whose changes are not in the WAL)
               'persistence', t.relpersistence,
               'partition_of', (SELECT h.inhparent::bigint FROM pg_inherits h
                                 WHERE h.inhrelid = t.oid AND t.relispartition),
               'partition_root', CASE WHEN t.relispartition
                                      THEN pg_partition_root(t.oid)::bigint END,
               'columns', cc.columns,
               -- empty unless a column's type is user-defined: the closure of
               -- those types is that of all the table's column types
               'types', CASE WHEN cardinality(cc.user_types) > 0
                             THEN coalesce(tidemark.type_definitions(cc.user_types), '[]'::json)
                             ELSE '[]'::json END)
             ORDER BY t.ord)
              FROM t JOIN tidemark.capture_columns_of(ARRAY(SELECT oid FROM t)) cc
                ON cc.relid = t.oid);
END
$$;

GRANT EXECUTE ON FUNCTION tidemark.capture_columns_of(oid[]) TO PUBLIC;

-- 005's capture_truncate_install, with its pg_trigger lookup kept a
-- subquery per table (OFFSET 0), which reads the index on (tgrelid,
-- tgname), rather than an anti-join the planner made a scan of pg_trigger.
CREATE OR REPLACE FUNCTION tidemark.capture_truncate_install()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel oid;
BEGIN
    FOR rel IN
        SELECT DISTINCT t.relid
          FROM pg_event_trigger_ddl_commands() c
         CROSS JOIN LATERAL pg_partition_tree(c.objid) t
         WHERE c.classid = 'pg_class'::regclass AND c.objsubid = 0
           AND NOT EXISTS (SELECT FROM pg_trigger g
                            WHERE g.tgrelid = t.relid AND g.tgname = 'tidemark_truncate'
                           OFFSET 0)
    LOOP
        BEGIN
            IF tidemark.capture_truncate_wanted(rel) THEN
                PERFORM tidemark.capture_truncate_add(rel);
            END IF;
        EXCEPTION WHEN OTHERS THEN
            NULL; -- never fail the application's DDL
        END;
    END LOOP;
EXCEPTION WHEN OTHERS THEN
    NULL;
END
$$;

-- 004's capture_message, which gave the envelope its "types" by converting
-- the whole message to jsonb and back (for 500 tables, half of the
-- capture's time). The message is the same JSON object; only the order of
-- its keys and its white space differ.
CREATE OR REPLACE FUNCTION tidemark.capture_message(p_kind text, p_tag text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    relids oid[];
    type_oids oid[];
    commands json;
    tables json;
    types json;
    dropped json;
    rewrite json;
BEGIN
    IF p_kind = 'ddl' THEN
        relids := tidemark.capture_touched();
        type_oids := tidemark.capture_types();
        IF cardinality(relids) = 0 AND cardinality(type_oids) = 0 THEN
            RETURN NULL;
        END IF;
        SELECT json_agg(json_build_object(
                   'command_tag', c.command_tag, 'object_type', c.object_type,
                   'schema', c.schema_name, 'identity', c.object_identity,
                   'objid', c.objid::bigint, 'objsubid', c.objsubid, 'in_extension', c.in_extension))
          INTO commands
          FROM pg_event_trigger_ddl_commands() c;
        tables := tidemark.capture_tables(relids);
        IF cardinality(type_oids) > 0 THEN
            types := tidemark.type_definitions(type_oids);
        END IF;
        IF tables IS NULL AND types IS NULL THEN
            RETURN NULL;
        END IF;
    ELSIF p_kind = 'drop' THEN
        SELECT json_agg(json_build_object(
                   'object_type', d.object_type, 'schema', d.schema_name,
                   'name', d.object_name, 'identity', d.object_identity,
                   'objid', d.objid::bigint, 'objsubid', d.objsubid,
                   'address_names', d.address_names, 'address_args', d.address_args))
          INTO dropped
          FROM pg_event_trigger_dropped_objects() d
         WHERE d.object_type IN ('table', 'table column') AND NOT d.is_temporary
           AND NOT tidemark.capture_schema_skipped(d.schema_name);
        IF dropped IS NULL THEN
            RETURN NULL;
        END IF;
    ELSE
        SELECT json_build_object('relid', c.oid::bigint, 'schema', n.nspname, 'name', c.relname,
                                 'reason', pg_event_trigger_table_rewrite_reason())
          INTO rewrite
          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE c.oid = pg_event_trigger_table_rewrite_oid()
           AND c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
           AND NOT tidemark.capture_schema_skipped(n.nspname);
        IF rewrite IS NULL THEN
            RETURN NULL;
        END IF;
    END IF;
    -- the envelope is a JSON object (json_build_object's text): "types" is
    -- added to its text, not by reading it back, which a message of many
    -- tables makes costly
    RETURN left(tidemark.capture_envelope(p_kind, p_tag, commands, tables, dropped, rewrite,
                                          NULL), -1)
           || ', "types" : ' || coalesce(types, '[]'::json)::text || '}';
EXCEPTION WHEN OTHERS THEN
    RETURN tidemark.capture_envelope(p_kind, p_tag, commands, tables, dropped, rewrite,
                                     format('%s (SQLSTATE %s)', SQLERRM, SQLSTATE));
END
$$;

-- 009's capture_emit, reading the message once (as jsonb) instead of six
-- times (a cast to json and a ->> for each of three fields). The bytes
-- emitted are the same.
CREATE OR REPLACE FUNCTION tidemark.capture_emit(p_msg text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k bytea;
    head text;
    msg jsonb;
    stmt text;
    said text;
    enc text := 'UTF8';
    body bytea;
BEGIN
    BEGIN
        msg := p_msg::jsonb;
        stmt := msg ->> 'statement';
        said := tidemark.capture_statement(stmt);
    EXCEPTION WHEN OTHERS THEN
        said := '/* UNREADABLE TEXT: left out by the capture */';
    END;
    IF msg IS NULL THEN
        RETURN; -- not JSON: nothing the target could follow, and the text stays here
    END IF;
    IF said IS DISTINCT FROM stmt THEN
        BEGIN
            p_msg := jsonb_set(msg, '{statement}', to_jsonb(said))::text;
        EXCEPTION WHEN OTHERS THEN
            RETURN;
        END;
    END IF;
    BEGIN
        body := convert_to(p_msg, enc);
    EXCEPTION WHEN OTHERS THEN
        enc := current_setting('server_encoding');
        body := convert_to(p_msg, enc);
    END;
    BEGIN
        SELECT key INTO k FROM tidemark.capture_key;
        head := format('v2 %s %s ', (msg ->> 'xid')::bigint, (msg ->> 'seq')::integer);
    EXCEPTION WHEN OTHERS THEN
        k := NULL;
    END;
    IF k IS NOT NULL AND head IS NOT NULL THEN
        -- head and the MAC are ASCII: the same bytes in every encoding
        body := convert_to(head, enc)
                || convert_to(encode(sha256(k || sha256(convert_to(head, enc) || body)), 'hex')
                              || ' ', enc)
                || body;
    END IF;
    -- outside any exception block: see the top of 001
    PERFORM pg_logical_emit_message(true, 'tidemark.ddl', body);
END
$$;

REVOKE ALL ON FUNCTION tidemark.capture_emit(text) FROM PUBLIC;
