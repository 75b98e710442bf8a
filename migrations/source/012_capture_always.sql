-- The capture's event triggers fire in every session.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- An event trigger created plainly fires only while session_replication_role
-- is "origin" (the default). A session that sets it to "replica" (a data
-- load that skips foreign keys and triggers, a migration tool doing the
-- same) ran its DDL uncaptured: `run` then met rows with columns it did not
-- know and stopped. ENABLE ALWAYS makes the capture fire in any session.
ALTER EVENT TRIGGER tidemark_ddl_end ENABLE ALWAYS;
ALTER EVENT TRIGGER tidemark_sql_drop ENABLE ALWAYS;
ALTER EVENT TRIGGER tidemark_table_rewrite ENABLE ALWAYS;
ALTER EVENT TRIGGER tidemark_partition_truncate ENABLE ALWAYS;
