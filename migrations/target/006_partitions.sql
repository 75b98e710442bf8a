-- The partitions of each replicated partitioned table.
-- Applied once by `tidemark setup` (or by `run` on an older catalog),
-- recorded in tidemark.migrations.
--
-- A partitioned table is replicated as one target table, its root
-- (tidemark.tables); its partitions, at every level, are never tables of
-- their own there. This lists them by source oid with their parent, as
-- tidemark last knew them (from setup, then from each captured change), so
-- that a change to the hierarchy is recognised: a table attached, or a
-- partition detached or dropped, changes the root's rows with no row change
-- in the stream, and the root is copied again (ddl/ddl_partition.h).
CREATE TABLE IF NOT EXISTS tidemark.partitions (
    table_id      integer NOT NULL REFERENCES tidemark.tables ON DELETE CASCADE,  -- the root
    relid         oid NOT NULL,       -- the partition's oid on the source
    parent_relid  oid NOT NULL,       -- its parent's: the root's or another partition's
    source_schema text NOT NULL,
    source_table  text NOT NULL,
    PRIMARY KEY (table_id, relid)
);
CREATE INDEX IF NOT EXISTS partitions_relid_idx ON tidemark.partitions (relid);
