-- Signed DDL capture messages.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- Any role may call pg_logical_emit_message, so a message with the prefix
-- 'tidemark.ddl' proves nothing by itself: a role able to run SQL on the
-- source could make the target rename, retype or drop columns. The capture
-- functions therefore sign each message with a key that only their owner
-- (and superusers) can read; `setup` keeps a copy of the key on the target
-- (tidemark.capture_keys) and `run` ignores, with a warning, a message
-- whose signature is missing or wrong. The content becomes
--
--     <MAC> ' ' <json>      MAC: encode(sha256(key || sha256(json bytes)), 'hex')
--
-- (json bytes: the text in the server encoding, as the message carries it;
-- see ddl/ddl_auth.h).

CREATE TABLE tidemark.capture_key (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    key      bytea NOT NULL
);
REVOKE ALL ON tidemark.capture_key FROM PUBLIC;
-- 32 bytes from the server's strong random source (gen_random_uuid)
INSERT INTO tidemark.capture_key (key)
VALUES (decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

-- Signs and writes one message. A key that cannot be read (the table
-- dropped by hand) leaves the message unsigned rather than fail the DDL.
CREATE OR REPLACE FUNCTION tidemark.capture_emit(p_msg text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k bytea;
BEGIN
    BEGIN
        SELECT key INTO k FROM tidemark.capture_key;
    EXCEPTION WHEN OTHERS THEN
        k := NULL;
    END;
    IF k IS NOT NULL THEN
        p_msg := encode(sha256(k || sha256(convert_to(p_msg, current_setting('server_encoding')))),
                        'hex') || ' ' || p_msg;
    END IF;
    PERFORM pg_logical_emit_message(true, 'tidemark.ddl', p_msg);
END
$$;
-- signing is for the event trigger functions only
REVOKE ALL ON FUNCTION tidemark.capture_emit(text) FROM PUBLIC;

-- The event trigger functions of 001, now writing through capture_emit.
DO $do$
DECLARE
    fn text[];
BEGIN
    FOREACH fn SLICE 1 IN ARRAY
        '{{capture_ddl_end,ddl},{capture_sql_drop,drop},{capture_rewrite,rewrite}}'::text[]
    LOOP
        EXECUTE format($fn$
CREATE OR REPLACE FUNCTION tidemark.%I()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    msg text;
BEGIN
    BEGIN
        msg := tidemark.capture_message(%L, tg_tag);
    EXCEPTION WHEN OTHERS THEN
        msg := NULL;
    END;
    IF msg IS NOT NULL THEN
        PERFORM tidemark.capture_emit(msg);
    END IF;
END
$$$fn$, fn[1], fn[2]);
    END LOOP;
END
$do$;
