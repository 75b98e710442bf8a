-- The source database's oid, beside its name: a database renamed on the
-- source (ALTER DATABASE ... RENAME TO) is the same database, and its
-- pipeline goes on; one created under the old name is another (its slot is
-- not there either). NULL until the next run or setup records it.
ALTER TABLE tidemark.progress ADD COLUMN IF NOT EXISTS source_database_oid oid;
