-- DDL capture messages in UTF-8, whatever the source database's encoding.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- A logical message leaves the source as bytes: the walsender converts the
-- rows it decodes to the client's encoding (tidemark asks for UTF8), not a
-- message's content. 008 emitted the message in the database's encoding, so
-- in a LATIN1 (or WIN1252, EUC_JP, ...) database a DDL naming an accented
-- column was not valid UTF-8 JSON to `run`, which skipped it with a warning
-- and stopped at the first row with the new column. capture_emit now
-- converts the message to UTF-8 and signs those bytes:
--
--     'v2 ' xid ' ' seq ' ' MAC ' ' <json, UTF-8>
--     MAC: encode(sha256(key || sha256(UTF-8 of 'v2 ' xid ' ' seq ' ' json)), 'hex')
--
-- In a UTF8 database the bytes are those 008 wrote. A text without a UTF-8
-- form (an SQL_ASCII database holding bytes that are not UTF-8) is emitted
-- in the database's bytes as before; `run` then says the message is not
-- readable, naming its position. Everything else is 008's capture_emit.
CREATE OR REPLACE FUNCTION tidemark.capture_emit(p_msg text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k bytea;
    head text;
    stmt text;
    said text;
    enc text := 'UTF8';
    body bytea;
BEGIN
    BEGIN
        stmt := p_msg::json ->> 'statement';
        said := tidemark.capture_statement(stmt);
    EXCEPTION WHEN OTHERS THEN
        said := '/* UNREADABLE TEXT: left out by the capture */';
    END;
    IF said IS DISTINCT FROM stmt THEN
        BEGIN
            p_msg := jsonb_set(p_msg::jsonb, '{statement}', to_jsonb(said))::text;
        EXCEPTION WHEN OTHERS THEN
            RETURN; -- not JSON: nothing the target could follow, and the text stays here
        END;
    END IF;
    BEGIN
        body := convert_to(p_msg, enc);
    EXCEPTION WHEN OTHERS THEN
        enc := current_setting('server_encoding');
        body := convert_to(p_msg, enc);
    END;
    BEGIN
        SELECT key INTO k FROM tidemark.capture_key;
        head := format('v2 %s %s ', (p_msg::json ->> 'xid')::bigint,
                       (p_msg::json ->> 'seq')::integer);
    EXCEPTION WHEN OTHERS THEN
        k := NULL;
    END;
    IF k IS NOT NULL AND head IS NOT NULL THEN
        -- head and the MAC are ASCII: the same bytes in every encoding
        body := convert_to(head, enc)
                || convert_to(encode(sha256(k || sha256(convert_to(head, enc) || body)), 'hex')
                              || ' ', enc)
                || body;
    END IF;
    -- outside any exception block: see the top of 001
    PERFORM pg_logical_emit_message(true, 'tidemark.ddl', body);
END
$$;

REVOKE ALL ON FUNCTION tidemark.capture_emit(text) FROM PUBLIC;
