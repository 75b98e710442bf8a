-- tidemark's catalog on the target (the warehouse).
-- Applied once by `tidemark setup`, recorded in tidemark.migrations.

-- One row per replication (named after its slot): the end position of the
-- last source commit applied here. It is written in the same target
-- transaction as the rows of that commit, so it is never ahead of or behind
-- the data.
CREATE TABLE tidemark.progress (
    slot_name          text PRIMARY KEY,
    applied_lsn        pg_lsn,
    source_commit_time timestamptz,
    applied_at         timestamptz NOT NULL DEFAULT now()
);

-- Replicated tables, their key and their snapshot state.
CREATE TABLE tidemark.tables (
    table_id              integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slot_name             text NOT NULL REFERENCES tidemark.progress ON DELETE CASCADE,
    source_schema         text NOT NULL,
    source_table          text NOT NULL,
    target_schema         text NOT NULL,
    target_table          text NOT NULL,
    key_columns           text[] NOT NULL,
    state                 text NOT NULL DEFAULT 'snapshot_pending'
                          CHECK (state IN ('snapshot_pending', 'snapshotting', 'streaming', 'dropped')),
    -- snapshot progress, written with each chunk's rows
    snapshot_last_key     text[],
    snapshot_rows         bigint NOT NULL DEFAULT 0,
    snapshot_chunks       integer NOT NULL DEFAULT 0,
    snapshot_estimate     bigint,
    snapshot_started_at   timestamptz,
    snapshot_finished_at  timestamptz,
    snapshot_requested_at timestamptz,
    added_at              timestamptz NOT NULL DEFAULT now(),
    UNIQUE (slot_name, source_schema, source_table)
);

-- Schemas whose tables, present and future, are replicated (setup --schema).
CREATE TABLE tidemark.schemas (
    slot_name     text NOT NULL REFERENCES tidemark.progress ON DELETE CASCADE,
    source_schema text NOT NULL,
    PRIMARY KEY (slot_name, source_schema)
);

-- Each table's column set, versioned by the log position where it took
-- effect. columns: [{"attnum":1,"name":"id","type":"integer","typmod":-1,
-- "type_oid":23,"not_null":true,"key":true}, ...]
CREATE TABLE tidemark.schema_versions (
    table_id       integer NOT NULL REFERENCES tidemark.tables ON DELETE CASCADE,
    version        integer NOT NULL,
    valid_from_lsn pg_lsn NOT NULL,
    columns        jsonb NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (table_id, version)
);
