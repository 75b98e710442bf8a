-- Where each table's history starts. Applied once by `tidemark setup` (or
-- `run`), recorded in tidemark.migrations.
--
-- registered_lsn: the position from which the table's catalog row and its
-- first schema version apply. A source transaction that committed before
-- it (its commit record's position is lower) never changes the table on
-- the target, neither its rows nor its definition: the copy that follows
-- the registration reads its rows, and its definition was read when it
-- joined. For a table `setup` registers it is the source's WAL position
-- read while the table's definition was read under a lock that DDL on the
-- table waits for; for a table created in a replicated schema, the end of
-- the source transaction that created it (its rows of that transaction
-- come from the stream, or are copied); for a table whose history starts
-- again (set up again after `teardown`, or set aside when a change could
-- not be followed) the position it started again from.
--
-- Tables registered before this migration start at their first schema
-- version, which was recorded at their registration.
ALTER TABLE tidemark.tables ADD COLUMN IF NOT EXISTS registered_lsn pg_lsn;
UPDATE tidemark.tables t SET registered_lsn = v.valid_from_lsn
  FROM tidemark.schema_versions v
 WHERE v.table_id = t.table_id AND t.registered_lsn IS NULL
   AND v.version = (SELECT min(version) FROM tidemark.schema_versions w
                     WHERE w.table_id = t.table_id);

-- The slot's generation: 1, and one more each time `setup` makes the slot
-- again (after `teardown`, or when it was dropped). A table registered in
-- an earlier generation missed the source's changes between the old
-- slot's end and the new one's start: the next `setup` that names it
-- registers it again (a new registered_lsn and schema version) and copies
-- it again.
ALTER TABLE tidemark.progress ADD COLUMN IF NOT EXISTS slot_generation integer NOT NULL DEFAULT 1;
ALTER TABLE tidemark.tables ADD COLUMN IF NOT EXISTS slot_generation integer NOT NULL DEFAULT 1;
