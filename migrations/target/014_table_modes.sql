-- Table modes (README: Table modes): what the target keeps of a table.
--   mirror               the source's rows as they are now (the default)
--   history              the mirror, and every version of every row in an
--                        append-only table <table>_history beside it, keyed
--                        by the position of the change in the source's log
--   soft-delete          the mirror, but a row deleted on the source stays,
--                        marked with tidemark_deleted_at
--   history,soft-delete  both
-- Set by `setup --table-mode SCHEMA.TABLE=MODE` and `tidemark mode`.
ALTER TABLE tidemark.tables ADD COLUMN IF NOT EXISTS mode text NOT NULL DEFAULT 'mirror'
    CHECK (mode IN ('mirror', 'history', 'soft-delete', 'history,soft-delete'));

-- The mirror carries tidemark_lsn (the source commit that last wrote the
-- row) and tidemark_synced_at (when the target applied it).
ALTER TABLE tidemark.tables ADD COLUMN IF NOT EXISTS metadata_columns boolean NOT NULL
    DEFAULT false;

-- The history table and its view once made (they follow the mirror's
-- renames and moves: <target_table>_history, <target_table>_versions).
ALTER TABLE tidemark.tables ADD COLUMN IF NOT EXISTS history_relid oid;
ALTER TABLE tidemark.tables ADD COLUMN IF NOT EXISTS versions_relid oid;

-- setup --metadata-columns: every table of the pipeline gets them, also the
-- tables that join it later.
ALTER TABLE tidemark.progress ADD COLUMN IF NOT EXISTS metadata_columns boolean NOT NULL
    DEFAULT false;

-- The names of the columns tidemark adds to a mirror or a history: a
-- source column of a table in another mode than plain mirror may not have
-- one of them.
CREATE OR REPLACE FUNCTION tidemark.shape_columns()
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT ARRAY['tidemark_lsn', 'tidemark_synced_at', 'tidemark_deleted_at', 'tidemark_op',
                 'tidemark_seq', 'tidemark_commit_time']
$$;

-- A relation by oid, or NULL when it no longer exists.
CREATE OR REPLACE FUNCTION tidemark.relation_if_any(p_relid oid)
RETURNS regclass
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT oid::regclass FROM pg_class WHERE oid = p_relid
$$;

-- Column c of relation r: its type as format_type writes it and its
-- collation clause ('' for the type's default).
CREATE OR REPLACE FUNCTION tidemark.column_type_sql(r regclass, c name)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format_type(a.atttypid, a.atttypmod)
           || CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
                   THEN (SELECT format(' COLLATE %I.%I', n.nspname, co.collname)
                           FROM pg_collation co JOIN pg_namespace n ON n.oid = co.collnamespace
                          WHERE co.oid = a.attcollation)
                   ELSE '' END
      FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
     WHERE a.attrelid = r AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped
$$;

-- The data columns of a history (not tidemark's own), in its order.
CREATE OR REPLACE FUNCTION tidemark.history_data_columns(h regclass)
RETURNS name[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(a.attname ORDER BY a.attnum), '{}')
      FROM pg_attribute a
     WHERE a.attrelid = h AND a.attnum > 0 AND NOT a.attisdropped
       AND a.attname <> ALL (tidemark.shape_columns())
$$;

-- The history's data columns that its mirror has and the source's table
-- has now, by its latest schema version (what a change writes into it; a
-- column dropped on the source keeps its old entries and is NULL in new
-- ones, also while the mirror keeps it, no longer filled). NULL when the
-- table has no history.
CREATE OR REPLACE FUNCTION tidemark.history_columns(p_table_id integer)
RETURNS name[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ARRAY(SELECT c FROM unnest(tidemark.history_data_columns(h.r)) WITH ORDINALITY AS u (c, o)
                  WHERE EXISTS (SELECT 1 FROM pg_attribute a
                                 WHERE a.attrelid = format('%I.%I', t.target_schema,
                                                           t.target_table)::regclass
                                   AND a.attname = u.c AND NOT a.attisdropped)
                    AND (sv.columns IS NULL
                         OR sv.columns @> jsonb_build_array(jsonb_build_object('name', u.c)))
                  ORDER BY u.o)
      FROM tidemark.tables t,
           LATERAL (SELECT tidemark.relation_if_any(t.history_relid) AS r) h,
           LATERAL (SELECT (SELECT v.columns FROM tidemark.schema_versions v
                             WHERE v.table_id = t.table_id
                             ORDER BY v.version DESC LIMIT 1) AS columns) sv
     WHERE t.table_id = p_table_id AND t.mode LIKE 'history%' AND h.r IS NOT NULL
$$;

-- Brings a table's target shape in line with its mode, inside the caller's
-- transaction: the mirror's added columns, and for a history: the history
-- table (made when missing; renamed and moved with the mirror; each of the
-- mirror's columns added or converted, none ever dropped), its index by
-- key and position, and the view of versions made again. p_renames: the
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
    want    text;
    idx     record;
    found_idx boolean := false;
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
    want := keys || ', tidemark_lsn, tidemark_seq';
    FOR idx IN SELECT i.indexrelid::regclass AS r,
                      (SELECT string_agg(format('%I', a.attname), ', ' ORDER BY u.o)
                         FROM unnest(i.indkey) WITH ORDINALITY AS u (n, o)
                         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.n) AS cols
                 FROM pg_index i
                WHERE i.indrelid = hist
                  AND obj_description(i.indexrelid, 'pg_class') = 'tidemark: history by key' LOOP
        IF idx.cols = want AND NOT found_idx THEN
            found_idx := true;
        ELSE
            EXECUTE format('DROP INDEX %s', idx.r);
        END IF;
    END LOOP;
    IF NOT found_idx THEN
        EXECUTE format('CREATE INDEX ON %s (%s)', hist, want);
        EXECUTE format('COMMENT ON INDEX %s IS ''tidemark: history by key''',
                       (SELECT max(indexrelid)::regclass FROM pg_index WHERE indrelid = hist
                           AND obj_description(indexrelid, 'pg_class') IS NULL
                           AND NOT indisprimary));
        done := done || format('indexed the history by (%s)', want);
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
