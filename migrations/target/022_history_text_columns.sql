-- A history column of text beside a mirror column of another type (the
-- history could not take a type change exactly: migration 020) holds each
-- value as the stream sends it, the type's output. Entries were written
-- there along two paths: the stream's text as it came (COPY of many
-- entries), and the mirror's value cast to text (single statements, the
-- copy's entries), which for some types is not the output: boolean gives
-- true for t, inet 10.0.0.1/32 for 10.0.0.1, char(n) loses its padding.
-- tidemark.history_text_columns names those columns, and every path now
-- writes them with tidemark.output_text (or the stream's text).

CREATE OR REPLACE FUNCTION tidemark.history_text_columns(p_table_id integer)
RETURNS name[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ARRAY(SELECT h.attname
                   FROM pg_attribute h
                   JOIN pg_attribute m
                     ON m.attrelid = format('%I.%I', t.target_schema, t.target_table)::regclass
                    AND m.attname = h.attname AND m.attnum > 0 AND NOT m.attisdropped
                  WHERE h.attrelid = r.r AND h.attnum > 0 AND NOT h.attisdropped
                    AND h.atttypid = 'text'::regtype AND m.atttypid <> 'text'::regtype
                  ORDER BY h.attnum)
      FROM tidemark.tables t,
           LATERAL (SELECT tidemark.relation_if_any(t.history_relid) AS r) r
     WHERE t.table_id = p_table_id AND t.mode LIKE 'history%' AND r.r IS NOT NULL
$$;

-- Exact, for a history column's type change (migration 020), now means
-- that every entry, converted, prints the same text (the output
-- function's) as before. It meant that the converted value cast back to
-- text gave the old text, and a cast to text is not the output for every
-- type: char(n) loses its padding, so a text history column took char(4)
-- and its entries ab read ab with two spaces after; boolean gives true
-- for t and inet 10.0.0.1/32 for 10.0.0.1, so entries written as the
-- stream spells them never counted as exact.

-- Brings history column p_column of p_hist to the type the mirror's
-- column has now (views over the history lifted by the caller). done:
-- what it did, '' for nothing; kept: false when some entries keep a value
-- the mirror's rows no longer have (the mirror's conversion changed it),
-- so that the copy that follows writes the rows' new values as entries.
CREATE OR REPLACE FUNCTION tidemark.history_column_follow(p_hist regclass, p_mirror regclass,
                                                          p_column name, OUT done text,
                                                          OUT kept boolean)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    htype text := tidemark.column_type_sql(p_hist, p_column);
    mtype text := tidemark.column_type_sql(p_mirror, p_column);
    hbare text := (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
                    WHERE attrelid = p_hist AND attname = p_column);
    mbare text := (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
                    WHERE attrelid = p_mirror AND attname = p_column);
    conv  text;
    exact boolean := false;
    why   text;
BEGIN
    done := '';
    kept := true;
    IF htype = mtype THEN
        RETURN;
    END IF;
    -- the conversion ALTER TABLE will make, directly or through text; exact
    -- when every entry converted prints the same text as before
    FOREACH conv IN ARRAY ARRAY[format('%I::%s', p_column, mbare),
                                format('%I::text::%s', p_column, mbare)] LOOP
        BEGIN
            EXECUTE format('SELECT NOT EXISTS (SELECT FROM %s WHERE %I IS NOT NULL AND'
                           ' tidemark.output_text(%s) IS DISTINCT FROM tidemark.output_text(%I))',
                           p_hist, p_column, conv, p_column) INTO exact;
            why := CASE WHEN exact THEN NULL ELSE 'some would change' END;
            EXIT;
        EXCEPTION WHEN OTHERS THEN
            why := SQLERRM;
        END;
    END LOOP;
    kept := exact;
    IF NOT exact THEN
        IF hbare = 'text' THEN
            done := format('history column %I stays text: its entries do not all convert to %s'
                          ' exactly (%s)', p_column, mtype, why);
            RETURN;
        END IF;
        mtype := 'text';
        conv := format('tidemark.output_text(%I)', p_column);
    END IF;
    BEGIN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE %s USING %s', p_hist, p_column,
                       mtype, conv);
    EXCEPTION WHEN OTHERS THEN
        done := format('history column %I stays %s: it cannot be made %s (%s); new entries'
                       ' are converted to %s', p_column, htype, mtype, SQLERRM, htype);
        kept := false;
        RETURN;
    END;
    IF exact THEN
        done := format('history column %I is now %s', p_column, mtype);
        RETURN;
    END IF;
    done := format('history column %I is now text, as written: its entries (%s) do not all'
                  ' convert to %s exactly (%s)', p_column, htype,
                  tidemark.column_type_sql(p_mirror, p_column), why);
END
$$;
