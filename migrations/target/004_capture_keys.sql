-- The key that signs each replication's DDL capture messages (see
-- migrations/source/002_capture_key.sql), copied from the source by
-- `tidemark setup`. Messages from signed_from on must carry its signature;
-- earlier ones were written before the source had a key.
CREATE TABLE tidemark.capture_keys (
    slot_name   text PRIMARY KEY REFERENCES tidemark.progress ON DELETE CASCADE,
    key         bytea NOT NULL,
    signed_from pg_lsn NOT NULL
);
REVOKE ALL ON tidemark.capture_keys FROM PUBLIC;
