-- Capture messages bound to their transaction, and no secret in them.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- 1. Bound signatures. The signature of 002 covers a message's body, not
--    where it was written: a role that can read a captured message (with
--    pg_logical_slot_peek_changes on a slot of its own, or from the WAL)
--    could emit it again, in a transaction of its own, and make the target
--    rename or drop columns. capture_emit now signs the transaction id and
--    the message's number in its transaction with the body:
--
--        'v2 ' xid ' ' seq ' ' MAC ' ' <json>
--        MAC: encode(sha256(key || sha256('v2 ' xid ' ' seq ' ' json bytes)), 'hex')
--
--    (xid and seq: the message's own "xid" and "seq", see 001; see
--    ddl/ddl_auth.h). `run` ignores a message whose xid is not the
--    transaction's it arrives in, or whose seq repeats or goes back in it;
--    a message signed the old way only from before this migration (the
--    position `setup` keeps in tidemark.capture_keys.bound_from).
--
-- 2. No secret in the statement text. The message's "statement" is written
--    into the source's WAL, where anyone who can decode it reads it, and
--    into the target's audit log. The client string may hold more than the
--    DDL: DO $$ ... EXECUTE 'ALTER ROLE app PASSWORD ''...''' $$, CALL
--    p('...'), SELECT f('...'), INSERT of a row of secrets, ALTER ROLE in
--    the same string as an ALTER TABLE. capture_emit now writes
--    capture_statement(statement) instead, before it signs: the string
--    statement by statement (split at the semicolons outside quotes,
--    comments and brackets), where
--      - a statement of table or type DDL (ALTER / CREATE of a TABLE, INDEX,
--        TYPE, DOMAIN, SCHEMA, EXTENSION, SEQUENCE, VIEW, MATERIALIZED VIEW,
--        COLLATION, STATISTICS, TRIGGER, PUBLICATION, POLICY or RULE; any
--        DROP; COMMENT, TRUNCATE, GRANT, REVOKE, LOCK, VACUUM, ANALYZE,
--        CLUSTER, REINDEX, REFRESH; transaction control) is kept as written
--        (what it says the catalog shows any role anyway), except that
--        - string constants of an ALTER with a USING clause, or of a
--          CREATE TABLE ... AS, are written '?' (a USING expression and a
--          query are not kept in the catalog: pgp_sym_decrypt(c, 'key'),
--          dblink('password=...'));
--      - any other statement (DO, CALL, SELECT, WITH, DML, COPY, PREPARE,
--        EXECUTE, SET, CREATE FUNCTION, ALTER ROLE, user mappings, servers,
--        subscriptions, ALTER SYSTEM, ...) is replaced by
--            /* <KIND>: left out by the capture */
--        KIND being its leading keywords from a fixed list ("DO", "CALL",
--        "ALTER ROLE", "CREATE FUNCTION"), else STATEMENT;
--      - comments are left out (each becomes one space);
--      - a text that cannot be read (an unterminated quote or comment) or is
--        longer than 1 MB is /* UNREADABLE TEXT: left out by the capture */.
--    A text with nothing to leave out comes out byte for byte as sent. The
--    rest of the message is the catalog's, as before: what a DO block or a
--    function did is in "tables", "dropped" and "rewrite", whatever the text.
--
-- Only capture_emit is replaced (and two helpers added): every message goes
-- through it, whatever builds the message; the event trigger functions call
-- it as before. The statement's place in the message is unchanged: a
-- client string over 4096 bytes is still carried once per transaction
-- ("statement_seq", 001), now in its checked form.

-- What a statement whose leading keywords are p_words (upper case, at most
-- eight) is, for its text: NULL, kept as written; '', kept with its string
-- constants written '?' (p_using, p_as: a USING, an AS at bracket depth 0);
-- else the kind that replaces it.
CREATE OR REPLACE FUNCTION tidemark.capture_statement_kind(p_words text[], p_using boolean,
                                                           p_as boolean)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    w1 text := p_words[1];
    obj text := p_words[2];
BEGIN
    IF w1 = 'CREATE' THEN
        -- the object after CREATE's modifiers
        obj := (SELECT x FROM unnest(p_words[2:]) WITH ORDINALITY AS u (x, o)
                 WHERE x <> ALL ('{OR,REPLACE,GLOBAL,LOCAL,TEMP,TEMPORARY,UNLOGGED,UNIQUE,'
                                 'RECURSIVE,CONSTRAINT,TRUSTED,PROCEDURAL}'::text[])
                 ORDER BY o LIMIT 1);
    END IF;
    IF w1 = ANY ('{DROP,COMMENT,TRUNCATE,CLUSTER,REINDEX,VACUUM,ANALYZE,ANALYSE,LOCK,REFRESH,'
                 'GRANT,REVOKE,BEGIN,START,COMMIT,END,ROLLBACK,ABORT,SAVEPOINT,RELEASE,'
                 'CHECKPOINT}'::text[]) THEN
        RETURN NULL;
    END IF;
    IF w1 IN ('ALTER', 'CREATE')
       AND obj = ANY ('{TABLE,INDEX,TYPE,DOMAIN,SCHEMA,EXTENSION,SEQUENCE,VIEW,MATERIALIZED,'
                      'COLLATION,STATISTICS,TRIGGER,PUBLICATION,POLICY,RULE}'::text[]) THEN
        RETURN CASE WHEN (w1 = 'ALTER' AND p_using) OR (obj = 'TABLE' AND p_as) THEN '' END;
    END IF;
    IF w1 IN ('ALTER', 'CREATE', 'IMPORT')
       AND obj = ANY ('{ROLE,USER,GROUP,SERVER,SUBSCRIPTION,FUNCTION,PROCEDURE,ROUTINE,'
                      'AGGREGATE,SYSTEM,DATABASE,FOREIGN,LANGUAGE,OPERATOR,EVENT,TEXT,DEFAULT,'
                      'LARGE,TABLESPACE,CAST,CONVERSION,ACCESS,TRANSFORM}'::text[]) THEN
        RETURN w1 || ' ' || obj;
    END IF;
    IF w1 = ANY ('{ALTER,CALL,CLOSE,COPY,CREATE,DEALLOCATE,DECLARE,DELETE,DISCARD,DO,EXECUTE,'
                 'EXPLAIN,FETCH,IMPORT,INSERT,LISTEN,LOAD,MERGE,MOVE,NOTIFY,PREPARE,REASSIGN,'
                 'RESET,SECURITY,SELECT,SET,SHOW,TABLE,UNLISTEN,UPDATE,VALUES,WITH}'::text[]) THEN
        RETURN w1;
    END IF;
    RETURN 'STATEMENT';
END
$$;

-- The client string as the capture message carries it (see 2. above).
-- Read byte by byte in the server encoding (every server encoding keeps
-- ASCII bytes for ASCII characters only), as PostgreSQL's lexer reads it:
-- '...' with '' inside (and backslash escapes for E'...' or with
-- standard_conforming_strings off), "..." identifiers, $tag$...$tag$,
-- -- and nested /* */ comments, brackets.
CREATE OR REPLACE FUNCTION tidemark.capture_statement(p_text text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    enc text := current_setting('server_encoding');
    escapes boolean := current_setting('standard_conforming_strings') <> 'on';
    unreadable constant text := '/* UNREADABLE TEXT: left out by the capture */';
    b bytea;
    n integer;
    i integer := 0;           -- the byte being read
    c integer;
    j integer;
    q integer;
    tag bytea;
    esc boolean;
    parts text[] := '{}';     -- the result, piece by piece
    -- the statement being read
    st integer := 0;          -- its first byte (white space and comments included)
    tok0 integer;             -- its first token; NULL: none yet
    depth integer := 0;       -- brackets open
    words text[] := '{}';     -- its leading keywords
    in_head boolean := true;  -- still reading them
    uses boolean := false;    -- a USING at depth 0
    uses_as boolean := false; -- an AS at depth 0
    cuts integer[] := '{}';   -- comments (kind 1) and strings (kind 2): start, end, kind
    kind text;
    pos integer;
BEGIN
    IF p_text IS NULL THEN
        RETURN NULL;
    END IF;
    IF octet_length(p_text) > 1048576 THEN
        RETURN unreadable;
    END IF;
    b := convert_to(p_text, enc);
    n := octet_length(b);
    WHILE i <= n LOOP
        c := CASE WHEN i < n THEN get_byte(b, i) ELSE 59 END; -- the end ends a statement
        IF c IN (32, 9, 10, 13, 12, 11) THEN
            i := i + 1;
            CONTINUE;
        END IF;
        -- a comment: -- to the end of the line, or /* */ nested
        IF c = 45 AND i + 1 < n AND get_byte(b, i + 1) = 45 THEN
            j := i + 2;
            WHILE j < n AND get_byte(b, j) <> 10 LOOP
                j := j + 1;
            END LOOP;
            cuts := cuts || i;
            cuts := cuts || j;
            cuts := cuts || 1;
            i := j;
            CONTINUE;
        END IF;
        IF c = 47 AND i + 1 < n AND get_byte(b, i + 1) = 42 THEN
            j := i + 2;
            q := 1;
            WHILE q > 0 LOOP
                IF j + 1 >= n THEN
                    RETURN unreadable;
                ELSIF get_byte(b, j) = 47 AND get_byte(b, j + 1) = 42 THEN
                    q := q + 1;
                    j := j + 2;
                ELSIF get_byte(b, j) = 42 AND get_byte(b, j + 1) = 47 THEN
                    q := q - 1;
                    j := j + 2;
                ELSE
                    j := j + 1;
                END IF;
            END LOOP;
            cuts := cuts || i;
            cuts := cuts || j;
            cuts := cuts || 1;
            i := j;
            CONTINUE;
        END IF;
        -- the end of a statement
        IF c = 59 AND depth <= 0 THEN
            IF tok0 IS NULL THEN
                kind := NULL;
            ELSE
                kind := tidemark.capture_statement_kind(words, uses, uses_as);
            END IF;
            IF kind IS NULL OR kind = '' THEN
                pos := st;
                FOR x IN 1 .. cardinality(cuts) / 3 LOOP
                    IF cuts[3 * x] = 1 OR kind = '' THEN
                        -- one append to parts per assignment: it is then extended in place
                        parts := parts || (convert_from(substring(b FROM pos + 1 FOR cuts[3 * x - 2] - pos), enc)
                                           || CASE cuts[3 * x] WHEN 1 THEN ' ' ELSE '''?''' END);
                        pos := cuts[3 * x - 1];
                    END IF;
                END LOOP;
                parts := parts || convert_from(substring(b FROM pos + 1 FOR least(i, n) - pos), enc);
            ELSE
                parts := parts || (CASE WHEN tok0 > st THEN ' ' ELSE '' END || '/* ' || kind
                                   || ': left out by the capture */');
            END IF;
            IF i < n THEN
                parts := parts || ';'::text;
            END IF;
            i := i + 1;
            st := i;
            tok0 := NULL;
            depth := 0;
            words := '{}';
            in_head := true;
            uses := false;
            uses_as := false;
            cuts := '{}';
            CONTINUE;
        END IF;
        IF tok0 IS NULL THEN
            tok0 := i;
        END IF;
        esc := escapes;
        -- a word: a keyword or an identifier; E'...' is a string with escapes
        IF (c BETWEEN 65 AND 90) OR (c BETWEEN 97 AND 122) OR c = 95 OR c >= 128 THEN
            j := i + 1;
            WHILE j < n AND ((get_byte(b, j) BETWEEN 65 AND 90) OR (get_byte(b, j) BETWEEN 97 AND 122)
                             OR (get_byte(b, j) BETWEEN 48 AND 57) OR get_byte(b, j) IN (95, 36)
                             OR get_byte(b, j) >= 128) LOOP
                j := j + 1;
            END LOOP;
            IF j = i + 1 AND c IN (69, 101) AND j < n AND get_byte(b, j) = 39 THEN
                esc := true;
                i := j;
                c := 39;
            ELSE
                IF in_head AND cardinality(words) < 8 THEN
                    words := words || upper(convert_from(substring(b FROM i + 1 FOR j - i), enc));
                END IF;
                IF depth = 0 AND j - i = 5 AND NOT uses THEN
                    uses := upper(convert_from(substring(b FROM i + 1 FOR 5), enc)) = 'USING';
                ELSIF depth = 0 AND j - i = 2 AND NOT uses_as THEN
                    uses_as := upper(convert_from(substring(b FROM i + 1 FOR 2), enc)) = 'AS';
                END IF;
                i := j;
                CONTINUE;
            END IF;
        END IF;
        in_head := false;
        IF c IN (39, 34) THEN
            -- a string constant, or a quoted identifier: the quote doubled inside
            j := i + 1;
            LOOP
                IF j >= n THEN
                    RETURN unreadable;
                ELSIF esc AND c = 39 AND get_byte(b, j) = 92 THEN
                    j := j + 2;
                ELSIF get_byte(b, j) = c AND j + 1 < n AND get_byte(b, j + 1) = c THEN
                    j := j + 2;
                ELSIF get_byte(b, j) = c THEN
                    EXIT;
                ELSE
                    j := j + 1;
                END IF;
            END LOOP;
            IF c = 39 THEN
                cuts := cuts || i;
                cuts := cuts || (j + 1);
                cuts := cuts || 2;
            END IF;
            i := j + 1;
        ELSIF c = 36 AND i + 1 < n AND get_byte(b, i + 1) BETWEEN 48 AND 57 THEN
            -- a parameter, $1
            i := i + 2;
        ELSIF c = 36 THEN
            -- $tag$ ... $tag$, or a lone $
            j := i + 1;
            IF j < n AND ((get_byte(b, j) BETWEEN 65 AND 90) OR (get_byte(b, j) BETWEEN 97 AND 122)
                          OR get_byte(b, j) = 95 OR get_byte(b, j) >= 128) THEN
                WHILE j < n AND ((get_byte(b, j) BETWEEN 65 AND 90) OR (get_byte(b, j) BETWEEN 97 AND 122)
                                 OR (get_byte(b, j) BETWEEN 48 AND 57) OR get_byte(b, j) = 95
                                 OR get_byte(b, j) >= 128) LOOP
                    j := j + 1;
                END LOOP;
            END IF;
            IF j < n AND get_byte(b, j) = 36 THEN
                tag := substring(b FROM i + 1 FOR j + 1 - i);
                q := j + 1;
                LOOP
                    IF q + octet_length(tag) > n THEN
                        RETURN unreadable;
                    ELSIF get_byte(b, q) = 36 AND substring(b FROM q + 1 FOR octet_length(tag)) = tag THEN
                        EXIT;
                    END IF;
                    q := q + 1;
                END LOOP;
                cuts := cuts || i;
                cuts := cuts || (q + octet_length(tag));
                cuts := cuts || 2;
                i := q + octet_length(tag);
            ELSE
                i := i + 1;
            END IF;
        ELSIF c = 40 THEN
            depth := depth + 1;
            i := i + 1;
        ELSIF c = 41 THEN
            depth := depth - 1;
            i := i + 1;
        ELSE
            i := i + 1;
        END IF;
    END LOOP;
    RETURN array_to_string(parts, '');
END
$$;

-- Writes one message: its statement as it may leave the source (2. above),
-- then signed in the bound form (1. above). A key that cannot be read, or a
-- message whose xid and seq cannot be read, leaves it unsigned rather than
-- fail the DDL (run then ignores it, with a warning); a statement that
-- cannot be checked is written as unreadable.
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
        SELECT key INTO k FROM tidemark.capture_key;
        head := format('v2 %s %s ', (p_msg::json ->> 'xid')::bigint,
                       (p_msg::json ->> 'seq')::integer);
    EXCEPTION WHEN OTHERS THEN
        k := NULL;
    END;
    IF k IS NOT NULL AND head IS NOT NULL THEN
        p_msg := head || encode(sha256(k || sha256(convert_to(head || p_msg,
                                                            current_setting('server_encoding')))),
                                'hex') || ' ' || p_msg;
    END IF;
    -- outside any exception block: see the top of 001
    PERFORM pg_logical_emit_message(true, 'tidemark.ddl', p_msg);
END
$$;

REVOKE ALL ON FUNCTION tidemark.capture_emit(text), tidemark.capture_statement(text),
    tidemark.capture_statement_kind(text[], boolean, boolean) FROM PUBLIC;
