-- Tables of a replicated schema that are left out (setup --exclude-table):
-- never registered, neither by setup nor when run meets them later (in the
-- stream or in a captured CREATE TABLE), also after they are dropped and
-- created again under the same name.
CREATE TABLE tidemark.excluded_tables (
    slot_name     text NOT NULL REFERENCES tidemark.progress ON DELETE CASCADE,
    source_schema text NOT NULL,
    source_table  text NOT NULL,
    excluded_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (slot_name, source_schema, source_table)
);
