-- Schema-change policies kept in the catalog, and the position from which
-- capture messages must be bound to their transaction.
-- Applied once by `tidemark setup` (or `run`), recorded in tidemark.migrations.
-- Written so that it can run again over its own objects.

-- Capture messages written from bound_from on must be signed in the bound
-- form, which covers their transaction id and seq (migrations/source/
-- 008_capture_hardening.sql, ddl/ddl_auth.h); a message signed the old way
-- is accepted only from before it. NULL: the source's capture may still be
-- the old one (setup has not run since this migration): both forms pass.
ALTER TABLE tidemark.capture_keys ADD COLUMN IF NOT EXISTS bound_from pg_lsn;

-- The policy for a type change that cannot widen (README: Schema changes):
-- per table (NULL: the replication's default), set by `setup
-- --table-policy` and `tidemark policy SCHEMA.TABLE=P`. It stays with the
-- table through renames.
ALTER TABLE tidemark.tables ADD COLUMN IF NOT EXISTS policy text
    CHECK (policy IN ('widen', 'follow', 'quarantine', 'stop'));

-- The replication's default policy (setup --policy, tidemark policy
-- --default P). No row: widen.
CREATE TABLE IF NOT EXISTS tidemark.policy_defaults (
    slot_name  text PRIMARY KEY REFERENCES tidemark.progress ON DELETE CASCADE,
    policy     text NOT NULL CHECK (policy IN ('widen', 'follow', 'quarantine', 'stop')),
    set_at     timestamptz NOT NULL DEFAULT now()
);

-- What a `run` was told on its command line (--policy: source_schema and
-- source_table NULL; --table-policy: the table as named), for that run
-- only: each session of `run` writes them with its apply connection's
-- backend, and they are in force while that backend lives (the same pid
-- and start time in pg_stat_activity). Rows of an ended run are ignored,
-- and replaced by the next one.
CREATE TABLE IF NOT EXISTS tidemark.run_policies (
    slot_name      text NOT NULL REFERENCES tidemark.progress ON DELETE CASCADE,
    source_schema  text,
    source_table   text,
    policy         text NOT NULL CHECK (policy IN ('widen', 'follow', 'quarantine', 'stop')),
    backend_pid    integer NOT NULL,
    backend_start  timestamptz NOT NULL,
    CHECK ((source_schema IS NULL) = (source_table IS NULL))
);

-- The policy in force for a table, and what set it, first found of:
--   'run --table-policy'  a live run's --table-policy for the table
--   'table'               the table's stored policy
--   'run --policy'        a live run's --policy
--   'default'             the replication's stored default
--   'built-in'            widen
-- The one rule: run, status and schema all ask it.
CREATE OR REPLACE FUNCTION tidemark.policy_in_force(p_slot text, p_table_id integer,
                                                    OUT policy text, OUT set_by text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH t AS (
        SELECT source_schema, source_table, tables.policy
          FROM tidemark.tables WHERE table_id = p_table_id AND slot_name = p_slot),
    live AS (
        SELECT r.source_schema, r.source_table, r.policy
          FROM tidemark.run_policies r
          JOIN pg_stat_activity a ON a.pid = r.backend_pid AND a.backend_start = r.backend_start
         WHERE r.slot_name = p_slot)
    SELECT c.policy, c.set_by FROM (
        SELECT 1, l.policy, 'run --table-policy' FROM live l JOIN t USING (source_schema, source_table)
        UNION ALL
        SELECT 2, t.policy, 'table' FROM t WHERE t.policy IS NOT NULL
        UNION ALL
        SELECT 3, l.policy, 'run --policy' FROM live l WHERE l.source_schema IS NULL
        UNION ALL
        SELECT 4, d.policy, 'default' FROM tidemark.policy_defaults d WHERE d.slot_name = p_slot
        UNION ALL
        SELECT 5, 'widen', 'built-in') AS c (rank, policy, set_by)
     ORDER BY c.rank LIMIT 1
$$;
