-- Schema evolution: the source table's identity, the DDL audit log and the
-- quarantine. Applied once by `tidemark setup`, recorded in tidemark.migrations.

-- The source's oid of each table: DDL capture messages and the stream name
-- tables by oid, which survives renames.
ALTER TABLE tidemark.tables ADD COLUMN source_relid oid;
CREATE INDEX ON tidemark.tables (slot_name, source_relid);

-- Every captured DDL command, with what was done about it on the target.
CREATE TABLE tidemark.ddl_log (
    ddl_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slot_name       text NOT NULL,
    position        pg_lsn NOT NULL,       -- the capture message's LSN on the source
    xid             bigint,
    commit_time     timestamptz,           -- the source transaction's commit time, when known
    ddl_time        timestamptz,           -- when the DDL ran on the source
    source_user     text,
    command_tag     text,
    statement       text,                  -- the whole text the client sent
    fingerprint     text,                  -- libpg_query fingerprint of the statement(s)
    classification  text NOT NULL,         -- e.g. "alter column type", "rename column", "unclassified"
    tables          text[],                -- source tables concerned
    schema_version  integer,               -- the version it produced, if any
    target_action   text NOT NULL,         -- what was done on the target
    logged_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON tidemark.ddl_log (slot_name, position);

-- Row changes holding a value the target column cannot represent under the
-- quarantine policy: kept here instead of being applied.
CREATE TABLE tidemark.quarantine (
    quarantine_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slot_name       text NOT NULL,
    table_id        integer REFERENCES tidemark.tables ON DELETE SET NULL,
    source_table    text NOT NULL,
    position        pg_lsn NOT NULL,       -- end of the source transaction
    change          text NOT NULL,         -- insert, update, delete
    key             jsonb NOT NULL,        -- {"column": "value", ...}
    row_data        jsonb NOT NULL,        -- the row as the source sent it (text values)
    reason          text NOT NULL,
    quarantined_at  timestamptz NOT NULL DEFAULT now()
);
