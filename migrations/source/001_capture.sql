-- DDL capture on the source.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- Three event triggers write one transactional logical message per DDL event
-- into the WAL:
--
--     pg_logical_emit_message(true, 'tidemark.ddl', <json>)
--
-- so that the change reaches the replication stream at its commit position,
-- in order with the data, and vanishes with a transaction (or subtransaction)
-- that rolls back. The catalog definition in a message is the authority on
-- the resulting schema; the statement text is only a hint.
--
-- The message content (the contract with the DDL tracker). Every key is
-- always present; key order is not significant.
--
--   {"version": 1,
--    "kind": "ddl" | "drop" | "rewrite",
--        ddl:     ddl_command_end, after a command that created or altered a table
--        drop:    sql_drop, when tables or table columns were dropped
--        rewrite: table_rewrite, just before the source rewrites a table: the
--                 source may have changed existing values in ways no row change
--                 will show (a volatile default, a type change with USING)
--    "command_tag": "ALTER TABLE",      the tag of the command that fired
--    "statement": "<current_query()>" | null,
--        the whole string the client sent: it may hold several statements
--        (DML too), or only "SELECT f()" / "DO ..." / "CALL p()" when the DDL
--        ran inside a function. null when an earlier message of the same
--        transaction already carries the same client string and it is longer
--        than 4096 bytes (a script sent as one string would otherwise be
--        written to the WAL once per DDL command it holds)
--    "statement_seq": n,                the seq of the message of this
--        transaction whose "statement" holds the text (this one's own seq
--        when "statement" is not null)
--    "user": "<session_user>",
--    "role": "<role>",                  the role set with SET ROLE, else the
--        session user (DDL run inside a SECURITY DEFINER function still shows
--        the caller's role, not the function's owner)
--    "time": "2024-05-01T12:00:00.123456Z",   clock_timestamp(), UTC
--    "timezone": "<TimeZone setting of the session>",
--    "xid": 1234,                       txid_current() (64-bit, with epoch)
--    "seq": 1,                          1, 2, 3... per transaction: the order of
--        the capture messages of a transaction; messages of a rolled-back
--        subtransaction disappear and their numbers are used again
--    "commands": [{"command_tag", "object_type", "schema", "identity", "objid",
--                  "objsubid", "in_extension"}],
--        pg_event_trigger_ddl_commands(): every base command of the top-level
--        command (ddl); [] otherwise
--    "tables": [{"relid", "schema", "name", "relkind" ("r" | "p"),
--                "replident" ("d" | "n" | "f" | "i"), "columns": [
--        {"attnum", "name",
--         "type": format_type(), "target_type": the type the target uses
--             (the mapping of table_def_sql in src/source_query.c),
--         "type_oid", "typmod", "not_null",
--         "key": part of the replica identity index, else of the primary key,
--         "has_missing": pg_attribute.atthasmissing,
--         "missing": the value rows written before the column was added read
--             (attmissingval as text) or null,
--         "default": the column has a default}]}],
--        ddl only, else []: each ordinary or partitioned table the commands
--        touched, read from the catalog after the command, columns by attnum
--        (dropped and generated columns left out, as pgoutput leaves them
--        out). Touched: the table of a command on the table, one of its
--        columns or one of its indexes; the tables with a column of a type
--        or domain that is altered; the tables of a schema that is altered
--        (renamed) or of an extension that is altered; and every inheritance
--        child and partition of these (ALTER TABLE on a parent reports only
--        the parent, but changes them all). Tables in pg_catalog,
--        information_schema, pg_toast and tidemark, and temporary tables,
--        are never listed; a command that touches no other table, and
--        COMMENT and SECURITY LABEL, send no message.
--    "dropped": [{"object_type" ("table" | "table column"), "schema", "name",
--                 "identity", "objid", "objsubid", "address_names",
--                 "address_args"}],
--        drop only, else []: pg_event_trigger_dropped_objects(), the tables and
--        table columns (objid: the table, objsubid: the column's attnum) with
--        the same exclusions
--    "rewrite": {"relid", "schema", "name", "reason"} | null,
--        rewrite only: pg_event_trigger_table_rewrite_oid() and _reason(); the
--        reason is a bit mask: 1 persistence changed, 2 a default needs
--        evaluating per row, 4 a column's values are converted, 8 access method.
--        A partitioned table has no storage: each of its partitions that is
--        rewritten sends a rewrite message of its own
--    "error": null | "<message> (SQLSTATE xxxxx)"}
--        a capture that failed still sends what it gathered, with the error
--
-- Oids (relid, objid, type_oid) are JSON numbers. "type" is format_type()
-- with only pg_catalog on the search path: types of other schemas come
-- schema-qualified ("public.mood"). Values ("missing") are written as
-- tidemark's own sessions read them: DateStyle ISO, IntervalStyle postgres,
-- TimeZone UTC, full float precision, hex bytea, lc_monetary C.
--
-- Within one command the order is: rewrite messages (while the command
-- runs), drop messages, then the ddl message (at its end). A drop made by
-- ALTER TABLE is followed by the ddl message of the table; other drops
-- (DROP TABLE, DROP TYPE ... CASCADE) send only their drop message.
--
-- The capture never makes the application's DDL fail: everything is read in
-- an exception block, and if even the error message cannot be built, no
-- message is sent. The message itself is written outside any exception
-- block: inside one it would get a subtransaction id of its own, and a
-- transaction of more than 64 DDL commands would overflow the subtransaction
-- cache, slowing every snapshot on the server.

CREATE SCHEMA IF NOT EXISTS tidemark;

-- Schemas whose tables are never captured.
CREATE OR REPLACE FUNCTION tidemark.capture_schema_skipped(p_schema text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT p_schema IS NULL
        OR p_schema OPERATOR(pg_catalog.=) ANY
           ('{pg_catalog,information_schema,pg_toast,pg_temp,tidemark}'::pg_catalog.text[])
        OR p_schema OPERATOR(pg_catalog.~) '^pg_(toast_)?temp_[0-9]+$'
$$;

-- The definitions of the capturable tables among p_relids (in that order),
-- as the "tables" of a message.
CREATE OR REPLACE FUNCTION tidemark.capture_tables(p_relids oid[])
RETURNS json
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET datestyle = 'ISO, YMD'
SET intervalstyle = 'postgres'
SET extra_float_digits = 3
SET bytea_output = 'hex'
SET lc_monetary = 'C'
SET timezone = 'UTC'
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT json_agg(json_build_object(
               'relid', c.oid::bigint, 'schema', n.nspname, 'name', c.relname,
               'relkind', c.relkind, 'replident', c.relreplident,
               'columns', coalesce(cols.list, '[]'::json))
             ORDER BY r.ord)
      FROM unnest(p_relids) WITH ORDINALITY AS r (relid, ord)
      JOIN pg_class c ON c.oid = r.relid
      JOIN pg_namespace n ON n.oid = c.relnamespace
      CROSS JOIN LATERAL (
          SELECT coalesce((SELECT i.indkey::int2[] FROM pg_index i
                            WHERE i.indrelid = c.oid AND i.indisreplident AND c.relreplident = 'i'),
                          (SELECT i.indkey::int2[] FROM pg_index i
                            WHERE i.indrelid = c.oid AND i.indisprimary)) AS keycols) k
      CROSS JOIN LATERAL (
          SELECT json_agg(json_build_object(
                     'attnum', a.attnum, 'name', a.attname,
                     'type', format_type(a.atttypid, a.atttypmod),
                     -- keep in step with table_def_sql in src/source_query.c
                     'target_type',
                     CASE WHEN t.typnamespace = 'pg_catalog'::regnamespace
                            OR e.typnamespace = 'pg_catalog'::regnamespace
                          THEN format_type(a.atttypid, a.atttypmod)
                          WHEN t.typtype = 'd' AND b.typnamespace = 'pg_catalog'::regnamespace
                          THEN format_type(t.typbasetype, t.typtypmod)
                          WHEN t.typcategory = 'A' THEN 'text[]'
                          ELSE 'text' END,
                     'type_oid', a.atttypid::bigint, 'typmod', a.atttypmod,
                     'not_null', a.attnotnull,
                     'key', coalesce(a.attnum = ANY (k.keycols), false),
                     'has_missing', a.atthasmissing,
                     -- attmissingval is a one-element array of the column's type
                     'missing', CASE WHEN a.atthasmissing
                                     THEN (a.attmissingval::text::text[])[1] END,
                     'default', a.atthasdef)
                   ORDER BY a.attnum) AS list
            FROM pg_attribute a
            JOIN pg_type t ON t.oid = a.atttypid
            LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
            LEFT JOIN pg_type b ON b.oid = t.typbasetype
           WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
             AND a.attgenerated = '') cols
     WHERE c.relkind IN ('r', 'p') AND c.relpersistence <> 't'
       AND NOT tidemark.capture_schema_skipped(n.nspname));
END
$$;

-- The tables a ddl_command_end's commands touched (see "tables" above),
-- parents before their children; empty for commands on other objects. Step
-- by step, so that each catalog is read through an index and only when a
-- command asks for it: this runs after every DDL command.
CREATE OR REPLACE FUNCTION tidemark.capture_touched()
RETURNS oid[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    rels oid[];
    types oid[];
    schemas oid[];
    extensions oid[];
    level oid[];
    touched oid[] := '{}';
BEGIN
    SELECT array_agg(c.objid) FILTER (WHERE c.classid = 'pg_class'::regclass),
           array_agg(c.objid) FILTER (WHERE c.classid = 'pg_type'::regclass),
           array_agg(c.objid) FILTER (WHERE c.classid = 'pg_namespace'::regclass
                                        AND c.command_tag = 'ALTER SCHEMA'),
           array_agg(c.objid) FILTER (WHERE c.classid = 'pg_extension'::regclass
                                        AND c.command_tag = 'ALTER EXTENSION')
      INTO rels, types, schemas, extensions
      FROM pg_event_trigger_ddl_commands() c
     WHERE c.command_tag NOT IN ('COMMENT', 'SECURITY LABEL');
    -- a relation, one of its columns (objsubid > 0), or an index: its table
    IF rels IS NOT NULL THEN
        level := (SELECT array_agg(coalesce(i.indrelid, r.oid))
                    FROM unnest(rels) AS r (oid) LEFT JOIN pg_index i ON i.indexrelid = r.oid);
    END IF;
    -- a type or domain (renamed, moved): the tables with a column of it
    IF types IS NOT NULL THEN
        level := level || (SELECT array_agg(d.objid)
                             FROM pg_type t
                             JOIN pg_depend d ON d.refclassid = 'pg_type'::regclass
                                             AND d.refobjid IN (t.oid, t.typarray)
                            WHERE t.oid = ANY (types)
                              AND d.classid = 'pg_class'::regclass AND d.objsubid > 0);
    END IF;
    -- a schema (renamed): its tables
    IF schemas IS NOT NULL THEN
        level := level || (SELECT array_agg(r.oid) FROM pg_class r
                            WHERE r.relnamespace = ANY (schemas));
    END IF;
    -- an extension (moved to another schema): its tables
    IF extensions IS NOT NULL THEN
        level := level || (SELECT array_agg(d.objid) FROM pg_depend d
                            WHERE d.refclassid = 'pg_extension'::regclass
                              AND d.refobjid = ANY (extensions)
                              AND d.classid = 'pg_class'::regclass AND d.deptype = 'e');
    END IF;
    -- then their inheritance children and partitions, level by level
    WHILE cardinality(level) > 0 LOOP
        level := (SELECT array_agg(DISTINCT x) FROM unnest(level) AS x WHERE x <> ALL (touched));
        touched := touched || level;
        level := (SELECT array_agg(h.inhrelid) FROM pg_inherits h WHERE h.inhparent = ANY (level));
    END LOOP;
    RETURN touched;
END
$$;

-- Wraps what one event gathered into a message (see the format above) and
-- advances the transaction's message count.
CREATE OR REPLACE FUNCTION tidemark.capture_envelope(
    p_kind text, p_tag text, p_commands json, p_tables json, p_dropped json,
    p_rewrite json, p_error text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- "<xid> <seq> <client string key> <seq of its text>", local to the
    -- transaction; a value from elsewhere (another transaction, a manual SET)
    -- restarts the count
    state text[] := string_to_array(current_setting('tidemark.capture_seq', true), ' ');
    cur_xid bigint := txid_current();
    seq integer := 1;
    -- the client string: statement_timestamp() is taken per client message
    stmt_key text := extract(epoch FROM statement_timestamp())::text;
    stmt_seq integer;
    stmt text;
BEGIN
    IF cardinality(state) = 4 AND state[1] = cur_xid::text AND state[2] ~ '^[0-9]{1,9}$'
       AND state[4] ~ '^[0-9]{1,9}$' THEN
        seq := state[2]::integer + 1;
        IF state[3] = stmt_key THEN
            stmt_seq := state[4]::integer;
        END IF;
    END IF;
    IF stmt_seq IS NULL THEN
        stmt := current_query();
        stmt_seq := seq;
        IF octet_length(stmt) <= 4096 THEN
            stmt_key := '-';
        END IF;
    ELSE
        stmt_key := state[3];
    END IF;
    PERFORM set_config('tidemark.capture_seq', concat_ws(' ', cur_xid, seq, stmt_key, stmt_seq), true);
    RETURN json_build_object(
        'version', 1, 'kind', p_kind, 'command_tag', p_tag,
        'statement', stmt, 'statement_seq', stmt_seq,
        'user', session_user,
        'role', CASE current_setting('role') WHEN 'none' THEN session_user
                ELSE current_setting('role') END,
        'time', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'timezone', current_setting('TimeZone'),
        'xid', cur_xid, 'seq', seq,
        'commands', coalesce(p_commands, '[]'), 'tables', coalesce(p_tables, '[]'),
        'dropped', coalesce(p_dropped, '[]'), 'rewrite', p_rewrite,
        'error', p_error)::text;
END
$$;

-- The message for one event (p_kind: ddl, drop, rewrite), or null when it
-- concerns no capturable table. Never raises for an error in gathering: the
-- message then carries what was gathered and the error.
CREATE OR REPLACE FUNCTION tidemark.capture_message(p_kind text, p_tag text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    relids oid[];
    commands json;
    tables json;
    dropped json;
    rewrite json;
BEGIN
    IF p_kind = 'ddl' THEN
        relids := tidemark.capture_touched();
        IF cardinality(relids) = 0 THEN
            RETURN NULL;
        END IF;
        SELECT json_agg(json_build_object(
                   'command_tag', c.command_tag, 'object_type', c.object_type,
                   'schema', c.schema_name, 'identity', c.object_identity,
                   'objid', c.objid::bigint, 'objsubid', c.objsubid, 'in_extension', c.in_extension))
          INTO commands
          FROM pg_event_trigger_ddl_commands() c;
        tables := tidemark.capture_tables(relids);
        IF tables IS NULL THEN
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
    RETURN tidemark.capture_envelope(p_kind, p_tag, commands, tables, dropped, rewrite, NULL);
EXCEPTION WHEN OTHERS THEN
    RETURN tidemark.capture_envelope(p_kind, p_tag, commands, tables, dropped, rewrite,
                                     format('%s (SQLSTATE %s)', SQLERRM, SQLSTATE));
END
$$;

-- The event trigger functions, capture_ddl_end(), capture_sql_drop() and
-- capture_rewrite(): alike but for the kind they pass on. They run as their
-- owner (a superuser, who may read attmissingval and emit messages)
-- whoever issues the DDL; an error of the capture is swallowed, and the
-- message is written outside the exception block (see the top of this
-- file).
DO $do$
DECLARE
    fn text[];
BEGIN
    FOREACH fn SLICE 1 IN ARRAY
        '{{capture_ddl_end,ddl},{capture_sql_drop,drop},{capture_rewrite,rewrite}}'::text[]
    LOOP
        EXECUTE format($fn$
CREATE OR REPLACE FUNCTION tidemark.%I()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    msg text;
BEGIN
    BEGIN
        msg := tidemark.capture_message(%L, tg_tag);
    EXCEPTION WHEN OTHERS THEN
        msg := NULL;
    END;
    IF msg IS NOT NULL THEN
        PERFORM pg_logical_emit_message(true, 'tidemark.ddl', msg);
    END IF;
END
$$$fn$, fn[1], fn[2]);
    END LOOP;
END
$do$;

REVOKE ALL ON FUNCTION tidemark.capture_schema_skipped(text), tidemark.capture_tables(oid[]),
    tidemark.capture_touched(), tidemark.capture_envelope(text, text, json, json, json, json, text),
    tidemark.capture_message(text, text), tidemark.capture_ddl_end(), tidemark.capture_sql_drop(),
    tidemark.capture_rewrite() FROM PUBLIC;

DROP EVENT TRIGGER IF EXISTS tidemark_ddl_end;
DROP EVENT TRIGGER IF EXISTS tidemark_sql_drop;
DROP EVENT TRIGGER IF EXISTS tidemark_table_rewrite;
CREATE EVENT TRIGGER tidemark_ddl_end ON ddl_command_end
    EXECUTE FUNCTION tidemark.capture_ddl_end();
CREATE EVENT TRIGGER tidemark_sql_drop ON sql_drop
    EXECUTE FUNCTION tidemark.capture_sql_drop();
CREATE EVENT TRIGGER tidemark_table_rewrite ON table_rewrite
    EXECUTE FUNCTION tidemark.capture_rewrite();
