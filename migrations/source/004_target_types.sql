-- The source's types, collations and generated columns, for the target.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- So that the target can keep the source's types and ordering, a table's
-- definition (and the capture's messages) now describe, from the catalog:
--
--   - per column (tidemark.capture_columns), besides 001_capture.sql's keys:
--       "type_ref": the oid of the user-defined type the column's type names
--           (its element type for an array), null for a pg_catalog type;
--       "collation": the column's collation (tidemark.collation_definition),
--           null when its type is not collatable;
--       "generated": for a stored generated column, its expression as
--           pg_get_expr() writes it (only pg_catalog on the search path, so
--           other names come qualified), else null. Generated columns are
--           now listed (pgoutput does not send them: tidemark never writes
--           them, the target computes them); their "default" is false;
--     and "target_type" (tidemark.column_target_type) is the source's own
--     type for the types the target can be given (enums, composite types,
--     domains, types of extensions, arrays of these), text / text[] for the
--     others (range types, base types defined outside an extension, the row
--     type of a table). The target decides in the end: see README.md;
--   - per table (tidemark.capture_tables): "types", the definitions
--     (tidemark.type_definition) of every user-defined type its columns
--     need, with the types those need in turn (a composite's attribute
--     types, a domain's base type), in no particular order: each says
--     which others it "depends" on;
--   - per message: "types", the definitions of the types the command
--     created or altered (CREATE / ALTER TYPE, CREATE / ALTER DOMAIN, a
--     composite type's attributes), with the types they need. A command
--     on a type sends a message even when no table uses the type (then
--     "tables" is []), so that the target can follow every type it has.
--     The tables with a column of an altered type are in "tables" as
--     before (now also for a composite type altered by ALTER TYPE ...
--     ATTRIBUTE, which the event trigger reports as a relation).
--
-- A type definition:
--   {"oid", "schema", "name",
--    "kind": "enum" | "composite" | "domain" | "extension" (a member of an
--        extension, whatever its kind) | "range" | "multirange" | "row" (a
--        table's row type) | "base" | "pseudo",
--    "extension", "extension_schema", "extension_version": its extension's
--        name, schema and version, or null,
--    "labels": [{"oid", "label"}] in sort order (enum), else null,
--    "attributes": [{"attnum", "name", "type", "type_oid", "type_ref",
--        "collation"}] by attnum (composite), else null,
--    "base_type", "base_type_oid", "base_type_ref" (domain), else null,
--    "collation": the domain's collation, else null,
--    "not_null": the domain's NOT NULL, "constraints": [names of its CHECK
--        constraints] (the target does not carry either, see README.md),
--    "depends": [oids of the user-defined types this one needs first]}
--
-- A collation definition (the effective one: for "default", the database's):
--   {"schema", "name", "default": true for the database default,
--    "builtin": created by initdb (in pg_catalog), "provider": "c" | "i"
--        (libc, icu; "d" never appears: the default is resolved),
--    "collate", "ctype": libc's locales, "locale": ICU's locale, "rules":
--    ICU tailoring rules (PostgreSQL 16) or null, "deterministic",
--    "version": pg_collation_actual_version() (or
--        pg_database_collation_actual_version() for the default), or null}
--
-- Replaces tidemark.column_target_type, tidemark.capture_columns,
-- tidemark.capture_tables, tidemark.capture_touched and
-- tidemark.capture_message; adds the functions below.

-- The user-defined type a type names: its element type for an array, the
-- type itself otherwise; null for a type of pg_catalog.
CREATE OR REPLACE FUNCTION tidemark.type_ref(p_type oid)
RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN x.typnamespace = 'pg_catalog'::regnamespace THEN NULL ELSE x.oid END
      FROM pg_type t
      JOIN pg_type x ON x.oid = CASE WHEN t.typelem <> 0
                                      AND t.typsubscript = 'array_subscript_handler'::regproc
                                     THEN t.typelem ELSE t.oid END
     WHERE t.oid = p_type
$$;

-- The effective collation p_coll stands for (see the format above); null
-- for 0 (not collatable).
CREATE OR REPLACE FUNCTION tidemark.collation_definition(p_coll oid)
RETURNS json
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN p_coll = 0 THEN NULL
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
      LEFT JOIN pg_namespace n ON n.oid = c.collnamespace
$$;

-- Is the type a member of an extension?
CREATE OR REPLACE FUNCTION tidemark.type_extension(p_type oid)
RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT d.refobjid FROM pg_depend d
     WHERE d.classid = 'pg_type'::regclass AND d.objid = p_type
       AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     LIMIT 1
$$;

-- One type's definition (see the format above).
CREATE OR REPLACE FUNCTION tidemark.type_definition(p_type oid)
RETURNS json
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT json_build_object(
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
     WHERE t.oid = p_type
$$;

-- The user-defined types p_types name, and the types those need (a
-- domain's base type, a composite type's attributes), transitively.
CREATE OR REPLACE FUNCTION tidemark.type_closure(p_types oid[])
RETURNS oid[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE c (oid) AS (
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
    SELECT coalesce(array_agg(oid), '{}') FROM c
$$;

-- The definitions of the types p_types name and of the types they need;
-- null when there is none.
CREATE OR REPLACE FUNCTION tidemark.type_definitions(p_types oid[])
RETURNS json
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT json_agg(tidemark.type_definition(x) ORDER BY x)
      FROM unnest(tidemark.type_closure(p_types)) AS x
$$;

-- The type a new target column of this source type gets, as the source
-- sees it (the target falls back to text when it cannot have the type):
-- the type itself for built-in types, enums, composite types, domains,
-- types of extensions and arrays of these; text (or text[]) for the others.
CREATE OR REPLACE FUNCTION tidemark.column_target_type(p_type oid, p_typmod integer)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN x.typnamespace = 'pg_catalog'::regnamespace
                  OR tidemark.type_extension(x.oid) IS NOT NULL
                  OR x.typtype IN ('e', 'd') OR (x.typtype = 'c' AND r.relkind = 'c')
                THEN format_type(p_type, p_typmod)
                WHEN x.oid <> t.oid THEN 'text[]'
                ELSE 'text' END
      FROM pg_type t
      JOIN pg_type x ON x.oid = coalesce(tidemark.type_ref(t.oid), t.oid)
      LEFT JOIN pg_class r ON r.oid = x.typrelid
     WHERE t.oid = p_type
$$;

-- The "columns" of one table, by attnum: those of 003 ("key_position"
-- included), generated columns too, with "type_ref", "collation" and
-- "generated".
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
               'type_ref', tidemark.type_ref(a.atttypid)::bigint,
               'collation', tidemark.collation_definition(a.attcollation),
               'not_null', a.attnotnull,
               'key', coalesce(a.attnum = ANY (k.keycols), false),
               -- its place in the key (1, 2, ...), null for other columns
               'key_position', array_position(k.keycols, a.attnum),
               'has_missing', a.atthasmissing,
               -- attmissingval is a one-element array of the column's type
               'missing', CASE WHEN a.atthasmissing
                               THEN (a.attmissingval::text::text[])[1] END,
               'default', a.atthasdef AND a.attgenerated = '',
               'generated', CASE WHEN a.attgenerated = 's'
                                 THEN pg_get_expr(d.adbin, d.adrelid) END)
             ORDER BY a.attnum), '[]'::json)
      FROM pg_attribute a
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     CROSS JOIN (SELECT tidemark.table_keycols(p_relid) AS keycols) k
     WHERE a.attrelid = p_relid AND a.attnum > 0 AND NOT a.attisdropped
$$;

-- The definitions of the capturable tables among p_relids (in that order),
-- as the "tables" of a message, each with the "types" its columns need;
-- null when there is none.
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

-- The types a ddl_command_end's commands created or altered: types and
-- domains, and composite types whose attributes ALTER TYPE changed (the
-- event trigger reports those as relations); never those of skipped
-- schemas.
CREATE OR REPLACE FUNCTION tidemark.capture_types()
RETURNS oid[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(DISTINCT t.oid), '{}')
      FROM pg_event_trigger_ddl_commands() c
      LEFT JOIN pg_class r ON c.classid = 'pg_class'::regclass AND r.oid = c.objid
                          AND r.relkind = 'c'
      JOIN pg_type t ON t.oid = CASE WHEN c.classid = 'pg_type'::regclass THEN c.objid
                                     ELSE r.reltype END
      JOIN pg_namespace n ON n.oid = t.typnamespace
     WHERE c.command_tag NOT IN ('COMMENT', 'SECURITY LABEL') AND NOT c.in_extension
       AND NOT tidemark.capture_schema_skipped(n.nspname)
$$;

-- The tables a ddl_command_end's commands touched (see 001_capture.sql),
-- now also those with a column of a composite type whose attributes
-- changed.
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
    -- a relation, one of its columns (objsubid > 0), or an index: its table;
    -- a composite type's relation: the type
    IF rels IS NOT NULL THEN
        level := (SELECT array_agg(coalesce(i.indrelid, r.oid))
                    FROM unnest(rels) AS r (oid) LEFT JOIN pg_index i ON i.indexrelid = r.oid);
        types := types || (SELECT array_agg(c.reltype) FROM pg_class c
                            WHERE c.oid = ANY (rels) AND c.relkind = 'c');
    END IF;
    -- a type or domain (renamed, moved, altered): the tables with a column of it
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

-- The message for one event, as in 001_capture.sql; a ddl message now also
-- carries "types", and is sent for a command on a type that no table uses.
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
    RETURN (tidemark.capture_envelope(p_kind, p_tag, commands, tables, dropped, rewrite, NULL)::jsonb
            || jsonb_build_object('types', coalesce(types, '[]'::json)))::text;
EXCEPTION WHEN OTHERS THEN
    RETURN tidemark.capture_envelope(p_kind, p_tag, commands, tables, dropped, rewrite,
                                     format('%s (SQLSTATE %s)', SQLERRM, SQLSTATE));
END
$$;

REVOKE ALL ON FUNCTION tidemark.capture_types(), tidemark.capture_touched(),
    tidemark.capture_message(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tidemark.type_ref(oid), tidemark.collation_definition(oid),
    tidemark.type_extension(oid), tidemark.type_definition(oid), tidemark.type_closure(oid[]),
    tidemark.type_definitions(oid[]), tidemark.column_target_type(oid, integer),
    tidemark.capture_columns(oid), tidemark.capture_tables(oid[]) TO PUBLIC;
