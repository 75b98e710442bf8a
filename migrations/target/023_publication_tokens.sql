-- How the publication published each replicated table when `run` last read
-- it (pub_state.h: the publication's oid, FOR ALL TABLES, whether it
-- published the table, the row naming the table and the row naming its
-- schema). The walsender leaves out, saying nothing in the stream, the
-- changes of a table its publication does not publish, so a table taken
-- out and put back (ALTER PUBLICATION ... DROP TABLE, then ADD TABLE), or
-- a publication dropped and created again, lost the changes in between.
-- `run` compares each reading with the one before, in memory, and at its
-- start with this one, which outlives it: a table published again, or
-- published by a row made again since, is copied again.

ALTER TABLE tidemark.tables ADD COLUMN IF NOT EXISTS publication_token text;
