-- Rows to read again from the source. An update that changes a row's key
-- and does not send an unchanged TOASTed column can only move the row the
-- target already holds; while a table is being copied the target may not
-- hold it yet (its old key was not copied), and no later chunk reads the
-- new key when that lies in the range already copied. The apply asks for
-- such a row here, in the same target transaction as the update; `run`
-- reads the key from the source between watermarks of its own and deletes
-- the request in the transaction that loads the row.
CREATE TABLE tidemark.snapshot_rereads (
    table_id      integer NOT NULL REFERENCES tidemark.tables ON DELETE CASCADE,
    key           text[] NOT NULL,      -- the new key's values, as text
    requested_lsn pg_lsn NOT NULL,      -- the source commit of the newest request
    PRIMARY KEY (table_id, key)
);
