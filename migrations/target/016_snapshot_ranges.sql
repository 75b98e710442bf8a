-- Parallel copy of one table (src/snap_range.h): a large table is split
-- into key ranges, on the source's order of the key's first column, each
-- copied chunk by chunk with its own watermarks, several at once. One row
-- per range, written when the copy starts (all ranges, in one target
-- transaction) and advanced in the target transaction of each of its
-- chunks' rows, so that a restart resumes every range at its next chunk.
-- The ranges belong to the copy requested at requested_at (the table's
-- snapshot_requested_at then; NULL: the first copy): a copy asked for
-- again (`tidemark snapshot`, resync, a key change) makes new ones.
-- A table copied whole keeps its progress in tidemark.tables alone.
-- Applied once by `tidemark setup` (or `run`); idempotent.
CREATE TABLE IF NOT EXISTS tidemark.snapshot_ranges (
    table_id     integer NOT NULL REFERENCES tidemark.tables ON DELETE CASCADE,
    range_no     integer NOT NULL,
    requested_at timestamptz,          -- the copy's request stamp
    key_columns  text[] NOT NULL,      -- the key the ranges were made for
    lower_bound  text,                 -- first key column, exclusive; NULL: from the first row
    upper_bound  text,                 -- inclusive; NULL: to the last row
    last_key     text[],               -- the last key copied in the range; NULL: none yet
    rows_copied  bigint NOT NULL DEFAULT 0,
    chunks       integer NOT NULL DEFAULT 0,
    done         boolean NOT NULL DEFAULT false,
    PRIMARY KEY (table_id, range_no)
);
