-- A copy into a table in history mode writes a 'copy' entry for each row
-- whose values differ from its key's latest entry. Every change writes the
-- mirror and its entry in one statement, so the mirror's row before a chunk
-- is loaded is that latest entry (no row: a delete, or none), and a chunk
-- compares with the mirror instead of looking the history up by key: the
-- history needs no index by key, and its entries are only appended, by
-- position (its primary key). The one exception: a history made for a table
-- whose mirror already has rows, or turned on again after a time off, lacks
-- what the mirror holds. history_behind says so: until the table's copy
-- ends, the history has an index by key and its chunks look the latest
-- entries up there (tidemark.history_caught_up drops it at the end).
ALTER TABLE tidemark.tables ADD COLUMN IF NOT EXISTS history_behind boolean NOT NULL
    DEFAULT false;

-- Drops the index by key tidemark made on a history (made again while the
-- history is behind its mirror); true when there was one.
CREATE OR REPLACE FUNCTION tidemark.history_unindex(p_hist regclass)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    idx   record;
    found boolean := false;
BEGIN
    FOR idx IN SELECT i.indexrelid::regclass AS r FROM pg_index i
                WHERE i.indrelid = p_hist
                  AND obj_description(i.indexrelid, 'pg_class') = 'tidemark: history by key' LOOP
        EXECUTE format('DROP INDEX %s', idx.r);
        found := true;
    END LOOP;
    RETURN found;
END
$$;

-- A table's copy ended: its history, if behind, now has every row and is
-- written in step with the mirror; its index by key goes. Returns false,
-- the new history_behind, for the UPDATE that stores the copy's end.
CREATE OR REPLACE FUNCTION tidemark.history_caught_up(p_history_relid oid)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF tidemark.relation_if_any(p_history_relid) IS NOT NULL THEN
        PERFORM tidemark.history_unindex(tidemark.relation_if_any(p_history_relid));
    END IF;
    RETURN false;
END
$$;

-- Brings a table's target shape in line with its mode, inside the caller's
-- transaction: the mirror's added columns, and for a history: the history
-- table (made when missing; renamed and moved with the mirror; each of the
-- mirror's columns added or converted, none ever dropped), and the view of
-- versions made again. A history made here is marked history_behind (the
-- mirror may hold rows it lacks); one behind has its index by key (made
-- when missing), one not behind none (an earlier version's is dropped).
-- An index of the user's own is left alone. p_renames: the
-- column renames of a schema change, old and new name in turn, applied to
-- the history first. Returns what it did ('; ' between), '' for nothing.
-- Never removes anything: turning a mode off is `tidemark mode`'s.
CREATE OR REPLACE FUNCTION tidemark.shape_sync(p_table_id integer, p_renames text[] DEFAULT '{}')
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t       tidemark.tables;
    mirror  regclass;
    hist    regclass;
    hname   text;
    vname   text;
    done    text[] := '{}';
    c       record;
    htype   text;
    mtype   text;
    keys    text;
    made    boolean := false;
BEGIN
    SELECT * INTO STRICT t FROM tidemark.tables WHERE table_id = p_table_id;
    mirror := format('%I.%I', t.target_schema, t.target_table)::regclass;
    IF t.metadata_columns THEN
        EXECUTE format('ALTER TABLE %s'
                       ' ADD COLUMN IF NOT EXISTS tidemark_lsn pg_lsn'
                       '   DEFAULT nullif(current_setting(''tidemark.lsn'', true), '''')::pg_lsn,'
                       ' ADD COLUMN IF NOT EXISTS tidemark_synced_at timestamptz DEFAULT now()',
                       mirror);
    END IF;
    IF t.mode LIKE '%soft-delete' THEN
        EXECUTE format('ALTER TABLE %s ADD COLUMN IF NOT EXISTS tidemark_deleted_at timestamptz',
                       mirror);
    END IF;
    IF t.mode NOT LIKE 'history%' THEN
        RETURN array_to_string(done, '; ');
    END IF;
    IF coalesce(cardinality(t.key_columns), 0) = 0 THEN
        -- setup refuses such a table; one whose key went later keeps its
        -- history as it is, unwritten until it has a key again
        RETURN format('%I.%I has no key: its history is not written until it has one',
                      t.target_schema, t.target_table);
    END IF;

    hname := t.target_table || '_history';
    vname := t.target_table || '_versions';
    IF octet_length(vname) > 63 THEN
        RAISE EXCEPTION 'the name of table %.% is too long for its history (%)', t.target_schema,
            t.target_table, vname USING HINT = 'rename the table on the source, or replicate it as a mirror';
    END IF;

    hist := tidemark.relation_if_any(t.history_relid);
    IF hist IS NULL THEN
        -- tidemark_op: insert, update, delete or copy, tidemark's own values
        -- (no CHECK: it would cost every entry)
        EXECUTE format('CREATE TABLE %I.%I ('
                       ' tidemark_lsn pg_lsn NOT NULL'
                       '   DEFAULT current_setting(''tidemark.lsn'')::pg_lsn,'
                       ' tidemark_seq bigint NOT NULL,'
                       ' tidemark_op text NOT NULL,'
                       ' tidemark_commit_time timestamptz NOT NULL'
                       '   DEFAULT current_setting(''tidemark.commit_time'')::timestamptz,'
                       ' PRIMARY KEY (tidemark_lsn, tidemark_seq))', t.target_schema, hname);
        hist := format('%I.%I', t.target_schema, hname)::regclass;
        UPDATE tidemark.tables SET history_behind = true WHERE table_id = p_table_id;
        made := true;
        done := done || format('made the history %s', hist);
    END IF;

    IF tidemark.relation_if_any(t.versions_relid) IS NOT NULL THEN
        EXECUTE format('DROP VIEW %s', t.versions_relid::regclass);
    END IF;
    IF (SELECT relname FROM pg_class WHERE oid = hist) <> hname THEN
        EXECUTE format('ALTER TABLE %s RENAME TO %I', hist, hname);
        done := done || format('renamed the history to %I', hname);
    END IF;
    IF (SELECT n.nspname FROM pg_class r JOIN pg_namespace n ON n.oid = r.relnamespace
         WHERE r.oid = hist) <> t.target_schema THEN
        EXECUTE format('ALTER TABLE %s SET SCHEMA %I', hist, t.target_schema);
        done := done || format('moved the history to schema %I', t.target_schema);
    END IF;

    FOR i IN 1 .. coalesce(cardinality(p_renames), 0) / 2 LOOP
        IF tidemark.column_type_sql(hist, p_renames[2 * i - 1]) IS NOT NULL
           AND tidemark.column_type_sql(hist, p_renames[2 * i]) IS NULL THEN
            EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', hist, p_renames[2 * i - 1],
                           p_renames[2 * i]);
            done := done || format('renamed history column %I to %I', p_renames[2 * i - 1],
                                   p_renames[2 * i]);
        END IF;
    END LOOP;

    FOR c IN SELECT a.attname FROM pg_attribute a
              WHERE a.attrelid = mirror AND a.attnum > 0 AND NOT a.attisdropped
                AND a.attname <> ALL (tidemark.shape_columns()) ORDER BY a.attnum LOOP
        mtype := tidemark.column_type_sql(mirror, c.attname);
        htype := tidemark.column_type_sql(hist, c.attname);
        IF htype IS NULL THEN
            EXECUTE format('ALTER TABLE %s ADD COLUMN %I %s', hist, c.attname, mtype);
            done := done || format('added history column %I', c.attname);
        ELSIF htype <> mtype THEN
            BEGIN
                EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE %s USING %I::%s', hist,
                               c.attname, mtype, c.attname,
                               (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
                                 WHERE attrelid = mirror AND attname = c.attname));
                done := done || format('history column %I is now %s', c.attname, mtype);
            EXCEPTION WHEN OTHERS THEN
                BEGIN
                    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE %s USING %I::text::%s',
                                   hist, c.attname, mtype, c.attname,
                                   (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
                                     WHERE attrelid = mirror AND attname = c.attname));
                    done := done || format('history column %I is now %s', c.attname, mtype);
                EXCEPTION WHEN OTHERS THEN
                    done := done || format('history column %I stays %s: its entries do not'
                                           ' convert to %s (%s)', c.attname, htype, mtype,
                                           SQLERRM);
                END;
            END;
        END IF;
    END LOOP;

    SELECT string_agg(format('%I', k), ', ' ORDER BY o) INTO keys
      FROM unnest(t.key_columns) WITH ORDINALITY AS u (k, o);
    IF t.history_behind OR made THEN
        IF NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = hist
                          AND obj_description(i.indexrelid, 'pg_class')
                              = 'tidemark: history by key') THEN
            EXECUTE format('CREATE INDEX ON %s (%s, tidemark_lsn, tidemark_seq)', hist, keys);
            EXECUTE format('COMMENT ON INDEX %s IS ''tidemark: history by key''',
                           (SELECT max(indexrelid)::regclass FROM pg_index WHERE indrelid = hist
                               AND obj_description(indexrelid, 'pg_class') IS NULL
                               AND NOT indisprimary));
            done := done || 'indexed the history by key until the table''s copy ends'::text;
        END IF;
    ELSIF tidemark.history_unindex(hist) THEN
        done := done || 'dropped the history''s index by key (an index of your own is left alone)'::text;
    END IF;

    EXECUTE format('CREATE VIEW %I.%I AS SELECT %s, tidemark_op,'
                   ' tidemark_lsn AS tidemark_valid_from_lsn,'
                   ' tidemark_commit_time AS tidemark_valid_from,'
                   ' tidemark_valid_to_lsn, tidemark_valid_to,'
                   ' tidemark_valid_to_lsn IS NULL AS tidemark_is_current'
                   ' FROM (SELECT h.*, lead(h.tidemark_lsn) OVER w AS tidemark_valid_to_lsn,'
                   '   lead(h.tidemark_commit_time) OVER w AS tidemark_valid_to FROM %s h'
                   '   WINDOW w AS (PARTITION BY %s ORDER BY h.tidemark_lsn, h.tidemark_seq)) v'
                   ' WHERE tidemark_op <> ''delete''', t.target_schema, vname,
                   (SELECT string_agg(format('%I', x), ', ')
                      FROM unnest(tidemark.history_data_columns(hist)) AS x),
                   hist, keys);
    UPDATE tidemark.tables
       SET history_relid = hist,
           versions_relid = format('%I.%I', t.target_schema, vname)::regclass
     WHERE table_id = p_table_id;
    RETURN array_to_string(done, '; ');
END
$$;

-- Histories of an earlier version whose copy has not ended yet are behind
-- their mirror as far as a chunk can tell.
UPDATE tidemark.tables SET history_behind = true
 WHERE mode LIKE 'history%' AND state IN ('snapshot_pending', 'snapshotting');
