-- The DDL session's settings in every capture message.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- ALTER COLUMN ... TYPE converts the existing values on the source under the
-- settings of the session that ran it: timestamp -> timestamptz reads each
-- local time in the session's TimeZone, a date, a time or an interval
-- written as text follows DateStyle and IntervalStyle, a float as text
-- extra_float_digits, a bytea as text bytea_output. The target converts its
-- copy of the values under the source session's settings (SET LOCAL around
-- its ALTER), or copies the table again where it cannot (see the README's
-- schema changes), so every message now says what they were. Four keys
-- join the message of 001 (the contract there holds otherwise):
--
--   "datestyle": "<DateStyle>", "intervalstyle": "<IntervalStyle>",
--   "extra_float_digits": "<extra_float_digits>", "bytea_output": "<bytea_output>"
--
-- each current_setting() of the session, as text. A message of a capture
-- from before this migration has none of them (and "timezone" only): the
-- conversions that need them copy the table again.
--
-- Only tidemark.capture_envelope changes: a later migration that replaces
-- it keeps these keys.

CREATE OR REPLACE FUNCTION tidemark.capture_envelope(
    p_kind text, p_tag text, p_commands json, p_tables json, p_dropped json,
    p_rewrite json, p_error text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- "<xid> <seq> <client string key> <seq of its text>", local to the
    -- transaction; a value from elsewhere (another transaction, a manual SET)
    -- restarts the count
    state text[] := string_to_array(current_setting('tidemark.capture_seq', true), ' ');
    cur_xid bigint := txid_current();
    seq integer := 1;
    -- the client string: statement_timestamp() is taken per client message
    stmt_key text := extract(epoch FROM statement_timestamp())::text;
    stmt_seq integer;
    stmt text;
BEGIN
    IF cardinality(state) = 4 AND state[1] = cur_xid::text AND state[2] ~ '^[0-9]{1,9}$'
       AND state[4] ~ '^[0-9]{1,9}$' THEN
        seq := state[2]::integer + 1;
        IF state[3] = stmt_key THEN
            stmt_seq := state[4]::integer;
        END IF;
    END IF;
    IF stmt_seq IS NULL THEN
        stmt := current_query();
        stmt_seq := seq;
        IF octet_length(stmt) <= 4096 THEN
            stmt_key := '-';
        END IF;
    ELSE
        stmt_key := state[3];
    END IF;
    PERFORM set_config('tidemark.capture_seq', concat_ws(' ', cur_xid, seq, stmt_key, stmt_seq), true);
    RETURN json_build_object(
        'version', 1, 'kind', p_kind, 'command_tag', p_tag,
        'statement', stmt, 'statement_seq', stmt_seq,
        'user', session_user,
        'role', CASE current_setting('role') WHEN 'none' THEN session_user
                ELSE current_setting('role') END,
        'time', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
        'timezone', current_setting('TimeZone'),
        'datestyle', current_setting('DateStyle'),
        'intervalstyle', current_setting('IntervalStyle'),
        'extra_float_digits', current_setting('extra_float_digits'),
        'bytea_output', current_setting('bytea_output'),
        'xid', cur_xid, 'seq', seq,
        'commands', coalesce(p_commands, '[]'), 'tables', coalesce(p_tables, '[]'),
        'dropped', coalesce(p_dropped, '[]'), 'rewrite', p_rewrite,
        'error', p_error)::text;
END
$$;

REVOKE ALL ON FUNCTION tidemark.capture_envelope(text, text, json, json, json, json, text)
    FROM PUBLIC;
