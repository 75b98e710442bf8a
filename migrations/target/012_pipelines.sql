-- Pipelines: each replication into this target database (a row of
-- tidemark.progress, named by its slot) belongs to one source database,
-- recorded at setup and checked by every command that meets the source, so
-- that a second source is never streamed from the first one's position.
-- Several pipelines share the target side by side; each one's tables go to
-- the target schema its mapping says.

-- source_system_id: pg_control_system().system_identifier of the source
-- server (a physical standby promoted in its place has the same);
-- source_database: its database name; source_address: host, port and
-- database as setup saw them, for messages only (never a password).
-- target_schema: setup --target-schema, every source schema of the
-- pipeline into this one; NULL: the source's schema names.
ALTER TABLE tidemark.progress
    ADD COLUMN source_system_id text,
    ADD COLUMN source_database  text,
    ADD COLUMN source_address   text,
    ADD COLUMN target_schema    text,
    ADD COLUMN created_at       timestamptz DEFAULT now();

-- setup --map-schema SRC=DST: one source schema into another target schema
-- (before --target-schema).
CREATE TABLE tidemark.schema_map (
    slot_name     text NOT NULL REFERENCES tidemark.progress ON DELETE CASCADE,
    source_schema text NOT NULL,
    target_schema text NOT NULL,
    PRIMARY KEY (slot_name, source_schema)
);

-- The target schema of a pipeline's source schema: the one place the
-- mapping is decided (tables, renames, SET SCHEMA, types).
CREATE FUNCTION tidemark.map_schema(p_slot text, p_schema text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(
        (SELECT m.target_schema FROM tidemark.schema_map m
          WHERE m.slot_name = p_slot AND m.source_schema = p_schema),
        (SELECT p.target_schema FROM tidemark.progress p WHERE p.slot_name = p_slot),
        p_schema)
$$;

CREATE INDEX tables_target_idx ON tidemark.tables (target_schema, target_table);
