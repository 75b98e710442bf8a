-- Partitions truncated by themselves.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- tidemark replicates a partitioned table as one table, its root: the
-- publication sends the changes of every partition as changes of the root
-- (publish_via_partition_root). For a TRUNCATE of a partition by itself it
-- then sends nothing at all (a TRUNCATE of the root it sends), and TRUNCATE
-- fires no event trigger, so the root's rows would differ on the target.
-- Every partitioned table and every partition therefore gets a statement
-- trigger, tidemark_truncate (AFTER TRUNCATE), that writes a signed capture
-- message of kind "truncate" (the format of 001_capture.sql: "tables" holds
-- the truncated table with its "partition_of" and "partition_root",
-- "commands" and "dropped" are [], "rewrite" null); tidemark then copies
-- the root again. A TRUNCATE of a root fires the trigger of each of its
-- partitions too: the message of the root comes first, and tells tidemark
-- that the rest needs nothing.
--
-- The trigger is created here on the tables that exist, and by the event
-- trigger tidemark_partition_truncate on every partitioned table or
-- partition created or attached later. They are objects on the
-- application's tables (pg_dump shows them); `tidemark teardown` drops
-- them with the tidemark schema. Like the capture, they never make the
-- application's command fail, and write the message outside any exception
-- block.
--
-- New functions only: nothing of the earlier migrations is replaced.

-- The trigger function: one message per truncated table.
CREATE OR REPLACE FUNCTION tidemark.capture_truncate()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tables json;
    msg text;
BEGIN
    BEGIN
        tables := tidemark.capture_tables(ARRAY[TG_RELID]);
        IF tables IS NOT NULL THEN
            msg := tidemark.capture_envelope('truncate', 'TRUNCATE TABLE', NULL, tables, NULL,
                                             NULL, NULL);
        END IF;
    EXCEPTION WHEN OTHERS THEN
        msg := NULL;
    END;
    IF msg IS NOT NULL THEN
        PERFORM tidemark.capture_emit(msg);
    END IF;
    RETURN NULL;
END
$$;

-- Gives a partitioned table or a partition its trigger, if it lacks it.
CREATE OR REPLACE FUNCTION tidemark.capture_truncate_add(p_relid oid)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_trigger
                    WHERE tgrelid = p_relid AND tgname = 'tidemark_truncate') THEN
        EXECUTE format('CREATE TRIGGER tidemark_truncate AFTER TRUNCATE ON %s'
                       ' FOR EACH STATEMENT EXECUTE FUNCTION tidemark.capture_truncate()',
                       p_relid::regclass);
    END IF;
END
$$;

-- The tables that need the trigger: partitioned tables and partitions, out
-- of the schemas the capture skips.
CREATE OR REPLACE FUNCTION tidemark.capture_truncate_wanted(p_relid oid)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE c.oid = p_relid AND c.relpersistence <> 't'
                      AND (c.relkind = 'p' OR (c.relkind = 'r' AND c.relispartition))
                      AND NOT tidemark.capture_schema_skipped(n.nspname))
$$;

-- ddl_command_end of CREATE TABLE and ALTER TABLE: the tables of the
-- command and all their partitions (an attached table brings its own).
CREATE OR REPLACE FUNCTION tidemark.capture_truncate_install()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel oid;
BEGIN
    FOR rel IN
        SELECT DISTINCT t.relid
          FROM pg_event_trigger_ddl_commands() c
         CROSS JOIN LATERAL pg_partition_tree(c.objid) t
         WHERE c.classid = 'pg_class'::regclass AND c.objsubid = 0
           AND NOT EXISTS (SELECT FROM pg_trigger g
                            WHERE g.tgrelid = t.relid AND g.tgname = 'tidemark_truncate')
    LOOP
        BEGIN
            IF tidemark.capture_truncate_wanted(rel) THEN
                PERFORM tidemark.capture_truncate_add(rel);
            END IF;
        EXCEPTION WHEN OTHERS THEN
            NULL; -- never fail the application's DDL
        END;
    END LOOP;
EXCEPTION WHEN OTHERS THEN
    NULL;
END
$$;

REVOKE ALL ON FUNCTION tidemark.capture_truncate(), tidemark.capture_truncate_add(oid),
    tidemark.capture_truncate_install() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tidemark.capture_truncate_wanted(oid) TO PUBLIC;

-- The tables that exist.
DO $$
DECLARE
    rel oid;
BEGIN
    FOR rel IN SELECT c.oid FROM pg_class c WHERE c.relkind IN ('r', 'p') LOOP
        IF tidemark.capture_truncate_wanted(rel) THEN
            PERFORM tidemark.capture_truncate_add(rel);
        END IF;
    END LOOP;
END
$$;

DROP EVENT TRIGGER IF EXISTS tidemark_partition_truncate;
CREATE EVENT TRIGGER tidemark_partition_truncate ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE')
    EXECUTE FUNCTION tidemark.capture_truncate_install();
