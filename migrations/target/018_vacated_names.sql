-- Names a replicated table left by a rename (ALTER TABLE ... RENAME TO,
-- SET SCHEMA): a table that takes such a name later (the swap of a rebuilt
-- table: ALTER TABLE t RENAME TO t_old; ALTER TABLE t_new RENAME TO t)
-- joins the pipeline as one created under the name of a dropped table
-- does, for a table given by --table too. A name is held again, and
-- forgotten here, once a table of the pipeline has it.
CREATE TABLE IF NOT EXISTS tidemark.vacated_names (
    slot_name     text NOT NULL REFERENCES tidemark.progress ON DELETE CASCADE,
    source_schema text NOT NULL,
    source_table  text NOT NULL,
    PRIMARY KEY (slot_name, source_schema, source_table)
);
