-- Makes the capture's event triggers whole again: each one missing is
-- created as the earlier migrations made it, and each one not enabled
-- ALWAYS (disabled by hand, or enabled again without ALWAYS) is enabled
-- ALWAYS. Called by every `tidemark setup` (a superuser's, as event
-- triggers need); returns what it mended, for setup to say.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
CREATE OR REPLACE FUNCTION tidemark.capture_repair()
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    mended text[] := '{}';
    t record;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_event_trigger WHERE evtname = 'tidemark_ddl_end') THEN
        CREATE EVENT TRIGGER tidemark_ddl_end ON ddl_command_end
            EXECUTE FUNCTION tidemark.capture_ddl_end();
        mended := mended || 'tidemark_ddl_end made again'::text;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_event_trigger WHERE evtname = 'tidemark_sql_drop') THEN
        CREATE EVENT TRIGGER tidemark_sql_drop ON sql_drop
            EXECUTE FUNCTION tidemark.capture_sql_drop();
        mended := mended || 'tidemark_sql_drop made again'::text;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_event_trigger WHERE evtname = 'tidemark_table_rewrite') THEN
        CREATE EVENT TRIGGER tidemark_table_rewrite ON table_rewrite
            EXECUTE FUNCTION tidemark.capture_rewrite();
        mended := mended || 'tidemark_table_rewrite made again'::text;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_event_trigger
                    WHERE evtname = 'tidemark_partition_truncate') THEN
        CREATE EVENT TRIGGER tidemark_partition_truncate ON ddl_command_end
            WHEN TAG IN ('CREATE TABLE', 'ALTER TABLE')
            EXECUTE FUNCTION tidemark.capture_truncate_install();
        mended := mended || 'tidemark_partition_truncate made again'::text;
    END IF;
    FOR t IN SELECT evtname, evtenabled FROM pg_event_trigger
              WHERE evtname IN ('tidemark_ddl_end', 'tidemark_sql_drop',
                                'tidemark_table_rewrite', 'tidemark_partition_truncate')
                AND evtenabled <> 'A' ORDER BY evtname LOOP
        EXECUTE format('ALTER EVENT TRIGGER %I ENABLE ALWAYS', t.evtname);
        IF NOT t.evtname = ANY (SELECT split_part(m, ' ', 1) FROM unnest(mended) m) THEN
            mended := mended || (t.evtname || CASE t.evtenabled WHEN 'D' THEN ' was disabled'
                                 ELSE ' fired in sessions of one replication role only' END
                                 || ': enabled ALWAYS');
        END IF;
    END LOOP;
    RETURN mended;
END
$$;
REVOKE ALL ON FUNCTION tidemark.capture_repair() FROM PUBLIC;
