-- Start-up consistency and resync (src/consistency.h, src/resync.h).
-- Applied once by `tidemark setup` (or `run`), recorded in tidemark.migrations;
-- idempotent (a catalog whose record of it was lost takes it again).

-- The source timeline the stored position was streamed from, written by
-- `run` when a session starts streaming. When the source's timeline
-- changes (a standby promoted, a point-in-time recovery), the target's
-- position must not lie beyond the point where the source's history left
-- this timeline: the source never had what the target applied after it.
CREATE TABLE IF NOT EXISTS tidemark.source_timeline (
    slot_name text PRIMARY KEY REFERENCES tidemark.progress ON DELETE CASCADE,
    timeline  bigint NOT NULL,
    seen_at   timestamptz NOT NULL DEFAULT now()
);

-- A resync of a replication (`tidemark resync`): every table, or those
-- named, copied again in place while the stream goes on, after the target
-- was found behind the slot, the slot lost, or the source's history
-- diverged from the target's. One row per replication: the latest resync.
-- Its preparation (the new slot's position stored in tidemark.progress,
-- the tables' copies requested with requested_at) is one target
-- transaction; `run` finishes it after a crash, and sets finished_at once
-- every table requested is copied and swept.
CREATE TABLE IF NOT EXISTS tidemark.resyncs (
    slot_name    text PRIMARY KEY REFERENCES tidemark.progress ON DELETE CASCADE,
    reason       text NOT NULL,        -- target_behind, slot_missing, slot_invalidated,
                                       -- source_forked, source_behind, requested
    started_at   timestamptz NOT NULL DEFAULT now(),
    requested_at timestamptz NOT NULL, -- the snapshot_requested_at of its tables
    from_lsn     pg_lsn,               -- the target's position when it started
    resume_lsn   pg_lsn NOT NULL,      -- where the stream resumed: the slot's
                                       -- confirmed position, or a new slot's start
    new_slot     boolean NOT NULL,     -- the slot was created again
    tables       integer NOT NULL,     -- tables requested
    finished_at  timestamptz
);

-- Rows a copy cannot remove by key range: where the target does not order
-- a table's key as the source does, a chunk's range on the target covers
-- other rows than on the source, so a copy again (resync, `tidemark
-- snapshot`) ends with a sweep instead: the target's keys, page by page in
-- the target's order, are looked up on the source between watermarks, and
-- those the source does not have (and the stream did not touch meanwhile)
-- are deleted. The row is written in the transaction of the copy's last
-- chunk, advanced with each page, and deleted with the last one.
CREATE TABLE IF NOT EXISTS tidemark.snapshot_sweeps (
    table_id     integer PRIMARY KEY REFERENCES tidemark.tables ON DELETE CASCADE,
    last_key     text[],               -- the last target key looked up; NULL: none yet
    keys_checked bigint NOT NULL DEFAULT 0,
    rows_removed bigint NOT NULL DEFAULT 0,
    requested_at timestamptz NOT NULL DEFAULT now()
);
