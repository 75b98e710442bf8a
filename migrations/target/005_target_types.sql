-- The source's types on the target, and whether a table's key sorts alike
-- on both sides. Applied once by `tidemark setup` (or `run`), recorded in
-- tidemark.migrations.

-- Each source type tidemark has given the target (an enum, a composite
-- type, a domain, a type of an extension), or could not (target_name null,
-- reason set: its columns are kept as text). Keyed by the source's oid,
-- which survives ALTER TYPE ... RENAME TO and SET SCHEMA: the target's type
-- of that oid is renamed and moved in step. definition: the source's
-- definition last followed (migrations/source/004_target_types.sql).
CREATE TABLE tidemark.types (
    slot_name     text NOT NULL REFERENCES tidemark.progress ON DELETE CASCADE,
    source_oid    oid NOT NULL,
    source_schema text NOT NULL,
    source_name   text NOT NULL,
    kind          text NOT NULL,
    target_schema text,
    target_name   text,
    definition    jsonb NOT NULL,
    reason        text,            -- why the target has no such type
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (slot_name, source_oid)
);

-- Does the target order the table's key as the source does? True when
-- every key column has on the target the source's very type and the same
-- collation (same provider, locale and collation version; C and POSIX are
-- always the same). False with the reason otherwise; null until known
-- (tables registered before this migration: `run` works it out at start).
-- Where it is not true, which rows a key range holds must not be judged by
-- the target's ordering.
ALTER TABLE tidemark.tables ADD COLUMN key_order_same boolean;
ALTER TABLE tidemark.tables ADD COLUMN key_order_reason text;

-- format_type() as the source's capture writes it (only pg_catalog on the
-- search path): types of other schemas come schema-qualified whatever the
-- session's search_path, so that source and target spellings compare.
CREATE FUNCTION tidemark.format_type(p_type oid, p_typmod integer)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.format_type(p_type, p_typmod) $$;

-- A collation as the source's capture describes one
-- (migrations/source/004_target_types.sql: tidemark.collation_definition):
-- the same function on both sides, so that the two can be compared.
CREATE FUNCTION tidemark.collation_definition(p_coll oid)
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
