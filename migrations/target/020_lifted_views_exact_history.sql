-- Views and materialized views of a data team over a replicated table or
-- a history stay through the table's schema changes, and a history keeps
-- what was written then.
--
-- Materialized views: tidemark.views_lift (migration 019) refused them,
-- and a change the target refused because of one set the table aside:
-- the materialized view went on reading the kept table, no longer
-- written. It now saves them too, with their indexes and whether they
-- were populated, and views_restore makes them again WITH DATA (computed
-- again from the table as it is now, in the change's transaction), their
-- indexes, owner, privileges and comments with them. A rule of the user's
-- on the table still cannot be lifted.
--
-- Histories: `<table>_versions` is made again at every schema change of
-- its table. A view of the user's over it (the current rows, say) made
-- the DROP VIEW fail, and with it the whole change: the table left
-- replication. A view over the history itself made the ALTER of a
-- history column's type fail, so the column kept its old type and new
-- entries were rounded to it. shape_sync now lifts every view over the
-- history once the history and its view of versions are renamed and
-- moved, makes its changes, makes the view of versions again with the
-- privileges and comments it had, and the other views again as they were,
-- in the change's transaction.
--
-- Types: a history column takes the mirror's new type only if every entry
-- converts to it and back to the same text (the type's output). Else it
-- becomes text, which holds the old entries and the new ones as written,
-- where a narrower type would have rounded or respelled them (numeric to
-- integer, text to jsonb). A history column of text becomes typed again
-- once every entry converts exactly.

CREATE OR REPLACE FUNCTION tidemark.views_lift(p_table regclass)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    saved jsonb;
    v jsonb;
BEGIN
    WITH RECURSIVE deps(oid, depth) AS (
        SELECT DISTINCT r.ev_class, 1
          FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
         WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
           AND d.refobjid = p_table AND r.ev_class <> p_table
        UNION
        SELECT DISTINCT r.ev_class, deps.depth + 1
          FROM deps JOIN pg_depend d ON d.refobjid = deps.oid
           AND d.refclassid = 'pg_class'::regclass AND d.classid = 'pg_rewrite'::regclass
          JOIN pg_rewrite r ON r.oid = d.objid
         WHERE r.ev_class <> deps.oid AND deps.depth < 100),
    lifted AS (SELECT oid, max(depth) AS depth FROM deps GROUP BY oid)
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'schema', n.nspname, 'name', c.relname, 'kind', c.relkind,
               'def', regexp_replace(pg_get_viewdef(c.oid), ';\s*$', ''),
               'options', to_jsonb(c.reloptions),
               'owner', pg_get_userbyid(c.relowner),
               'acl', to_jsonb(c.relacl::text[]),
               'comment', obj_description(c.oid, 'pg_class'),
               'columns', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                  'name', a.attname,
                                  'comment', col_description(c.oid, a.attnum))), '[]')
                             FROM pg_attribute a
                            WHERE a.attrelid = c.oid AND a.attnum > 0
                              AND col_description(c.oid, a.attnum) IS NOT NULL),
               'populated', c.relispopulated,
               'tablespace', (SELECT spcname FROM pg_tablespace WHERE oid = c.reltablespace),
               'indexes', (SELECT coalesce(jsonb_agg(pg_get_indexdef(i.indexrelid)
                                                     ORDER BY i.indexrelid), '[]')
                             FROM pg_index i WHERE i.indrelid = c.oid),
               'depth', l.depth) ORDER BY l.depth, c.oid), '[]')
      INTO saved
      FROM lifted l JOIN pg_class c ON c.oid = l.oid
      JOIN pg_namespace n ON n.oid = c.relnamespace;
    IF EXISTS (SELECT FROM jsonb_array_elements(saved) e WHERE e ->> 'kind' NOT IN ('v', 'm')) THEN
        RAISE EXCEPTION 'a rule depends on %', p_table;
    END IF;
    FOR v IN SELECT e FROM jsonb_array_elements(saved) WITH ORDINALITY AS x (e, i)
              ORDER BY i DESC LOOP
        EXECUTE format('DROP %s %I.%I', CASE v ->> 'kind' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                        ELSE 'VIEW' END, v ->> 'schema', v ->> 'name');
    END LOOP;
    RETURN saved;
END
$$;

-- A view's privileges and comments, as tidemark.views_lift saved them,
-- given to p_view (qualified, quoted), whose owner is p_owner: on the
-- columns it still has.
CREATE OR REPLACE FUNCTION tidemark.view_dress(p_view text, p_owner name, p_saved jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col jsonb;
    kind text := CASE p_saved ->> 'kind' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END;
BEGIN
    IF jsonb_typeof(p_saved -> 'acl') = 'array' THEN
        PERFORM tidemark.acl_grant(p_view, NULL,
            ARRAY(SELECT jsonb_array_elements_text(p_saved -> 'acl'))::aclitem[],
            ARRAY[p_saved ->> 'owner', p_owner]::name[]);
    END IF;
    IF p_saved ->> 'comment' IS NOT NULL THEN
        EXECUTE format('COMMENT ON %s %s IS %L', kind, p_view, p_saved ->> 'comment');
    END IF;
    FOR col IN SELECT c FROM jsonb_array_elements(p_saved -> 'columns') c
                WHERE EXISTS (SELECT FROM pg_attribute a
                               WHERE a.attrelid = p_view::regclass AND a.attnum > 0
                                 AND NOT a.attisdropped AND a.attname = c ->> 'name') LOOP
        EXECUTE format('COMMENT ON COLUMN %s.%I IS %L', p_view, col ->> 'name',
                       col ->> 'comment');
    END LOOP;
END
$$;

-- Makes the views views_lift saved again, in its order: a materialized
-- view computed again (WITH DATA, unless it was not populated) and its
-- indexes made again.
CREATE OR REPLACE FUNCTION tidemark.views_restore(p_saved jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v jsonb;
    target text;
    matview boolean;
    idx text;
BEGIN
    FOR v IN SELECT e FROM jsonb_array_elements(p_saved) WITH ORDINALITY AS x (e, i)
              ORDER BY i LOOP
        target := format('%I.%I', v ->> 'schema', v ->> 'name');
        matview := v ->> 'kind' = 'm';
        EXECUTE format('CREATE %s %s%s%s AS %s%s',
                       CASE WHEN matview THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, target,
                       CASE WHEN jsonb_typeof(v -> 'options') = 'array' THEN
                           ' WITH (' || (SELECT string_agg(format('%I = %L',
                                                 split_part(o, '=', 1),
                                                 substr(o, strpos(o, '=') + 1)), ', ')
                                           FROM jsonb_array_elements_text(v -> 'options') o)
                           || ')' ELSE '' END,
                       CASE WHEN matview AND v ->> 'tablespace' IS NOT NULL
                            THEN format(' TABLESPACE %I', v ->> 'tablespace') ELSE '' END,
                       regexp_replace(v ->> 'def', ';\s*$', ''),
                       CASE WHEN NOT matview THEN ''
                            WHEN (v ->> 'populated')::boolean IS FALSE THEN ' WITH NO DATA'
                            ELSE ' WITH DATA' END);
        FOR idx IN SELECT jsonb_array_elements_text(coalesce(v -> 'indexes', '[]')) LOOP
            EXECUTE idx;
        END LOOP;
        IF v ->> 'owner' <> current_user THEN
            EXECUTE format('ALTER %s %s OWNER TO %I',
                           CASE WHEN matview THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, target,
                           v ->> 'owner');
        END IF;
        PERFORM tidemark.view_dress(target, (v ->> 'owner')::name, v);
    END LOOP;
END
$$;

-- The output text of a value (NULL for NULL): the spelling the source
-- sends and verify compares. A cast to text is not always it (boolean
-- gives 'true', char(n) drops its padding, inet its mask's spelling).
CREATE OR REPLACE FUNCTION tidemark.output_text(anyelement)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT CASE WHEN $1 IS NULL THEN NULL ELSE format('%s', $1) END $$;

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
    -- when every entry comes back from it with the same text
    FOREACH conv IN ARRAY ARRAY[format('%I::%s', p_column, mbare),
                                format('%I::text::%s', p_column, mbare)] LOOP
        BEGIN
            EXECUTE format('SELECT NOT EXISTS (SELECT FROM %s WHERE %I IS NOT NULL AND'
                           ' tidemark.output_text((%s)::text::%s)'
                           ' IS DISTINCT FROM tidemark.output_text(%I))',
                           p_hist, p_column, conv, hbare, p_column) INTO exact;
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

-- Brings a table's target shape in line with its mode, inside the caller's
-- transaction: the mirror's added columns, and for a history: the history
-- table (made when missing; renamed and moved with the mirror; each of the
-- mirror's columns added or converted as above, none ever dropped), and
-- the view of versions made again. A history made here is marked
-- history_behind (the mirror may hold rows it lacks); one behind has its
-- index by key (made when missing), one not behind none (an earlier
-- version's is dropped). An index of the user's own is left alone; views
-- over the history are lifted and made again. p_renames: the column
-- renames of a schema change, old and new name in turn, applied to the
-- history first. Returns what it did ('; ' between), '' for nothing.
-- Never removes anything: turning a mode off is `tidemark mode`'s.
CREATE OR REPLACE FUNCTION tidemark.shape_sync(p_table_id integer, p_renames text[] DEFAULT '{}')
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t        tidemark.tables;
    mirror   regclass;
    hist     regclass;
    versions regclass;
    hname    text;
    vname    text;
    done     text[] := '{}';
    c        record;
    keys     text;
    made     boolean := false;
    saved    jsonb;
    mine     jsonb;
    others   jsonb;
    step     record;
    stale    boolean := false;
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

    -- renamed and moved before the views are lifted: a view of the user's
    -- over them then reads the new names when it is made again
    IF (SELECT relname FROM pg_class WHERE oid = hist) <> hname THEN
        EXECUTE format('ALTER TABLE %s RENAME TO %I', hist, hname);
        done := done || format('renamed the history to %I', hname);
    END IF;
    IF (SELECT n.nspname FROM pg_class r JOIN pg_namespace n ON n.oid = r.relnamespace
         WHERE r.oid = hist) <> t.target_schema THEN
        EXECUTE format('ALTER TABLE %s SET SCHEMA %I', hist, t.target_schema);
        done := done || format('moved the history to schema %I', t.target_schema);
    END IF;
    versions := tidemark.relation_if_any(t.versions_relid);
    IF versions IS NOT NULL AND (SELECT relname FROM pg_class WHERE oid = versions) <> vname THEN
        EXECUTE format('ALTER VIEW %s RENAME TO %I', versions, vname);
    END IF;
    IF versions IS NOT NULL AND (SELECT n.nspname FROM pg_class r JOIN pg_namespace n
                                    ON n.oid = r.relnamespace WHERE r.oid = versions)
                                <> t.target_schema THEN
        EXECUTE format('ALTER VIEW %s SET SCHEMA %I', versions, t.target_schema);
    END IF;

    FOR i IN 1 .. coalesce(cardinality(p_renames), 0) / 2 LOOP
        IF tidemark.column_type_sql(hist, p_renames[2 * i - 1]) IS NOT NULL
           AND tidemark.column_type_sql(hist, p_renames[2 * i]) IS NULL THEN
            EXECUTE format('ALTER TABLE %s RENAME COLUMN %I TO %I', hist, p_renames[2 * i - 1],
                           p_renames[2 * i]);
            done := done || format('renamed history column %I to %I', p_renames[2 * i - 1],
                                   p_renames[2 * i]);
        END IF;
        -- the view of versions too: a view over it then names the column
        -- it is made again with
        IF versions IS NOT NULL
           AND tidemark.column_type_sql(versions, p_renames[2 * i - 1]) IS NOT NULL
           AND tidemark.column_type_sql(versions, p_renames[2 * i]) IS NULL THEN
            EXECUTE format('ALTER VIEW %s RENAME COLUMN %I TO %I', versions,
                           p_renames[2 * i - 1], p_renames[2 * i]);
        END IF;
    END LOOP;

    -- every view over the history out of the way of its changes (a
    -- materialized view or a rule cannot be lifted: the view of versions
    -- alone is then dropped, as before)
    BEGIN
        saved := tidemark.views_lift(hist);
    EXCEPTION WHEN OTHERS THEN
        saved := NULL;
    END;
    IF saved IS NULL AND versions IS NOT NULL THEN
        EXECUTE format('DROP VIEW %s', versions);
    END IF;
    SELECT e INTO mine FROM jsonb_array_elements(saved) e
     WHERE e ->> 'schema' = t.target_schema AND e ->> 'name' = vname;
    SELECT coalesce(jsonb_agg(e ORDER BY i), '[]') INTO others
      FROM jsonb_array_elements(saved) WITH ORDINALITY AS x (e, i)
     WHERE NOT (e ->> 'schema' = t.target_schema AND e ->> 'name' = vname);

    FOR c IN SELECT a.attname FROM pg_attribute a
              WHERE a.attrelid = mirror AND a.attnum > 0 AND NOT a.attisdropped
                AND a.attname <> ALL (tidemark.shape_columns()) ORDER BY a.attnum LOOP
        IF tidemark.column_type_sql(hist, c.attname) IS NULL THEN
            EXECUTE format('ALTER TABLE %s ADD COLUMN %I %s', hist, c.attname,
                           tidemark.column_type_sql(mirror, c.attname));
            done := done || format('added history column %I', c.attname);
        ELSE
            SELECT * INTO step FROM tidemark.history_column_follow(hist, mirror, c.attname);
            IF step.done <> '' THEN
                done := done || step.done;
            END IF;
            stale := stale OR NOT step.kept;
        END IF;
    END LOOP;
    IF stale AND NOT t.history_behind THEN
        -- the copy that follows the change compares its rows with the
        -- history's latest entries, not with the converted mirror
        UPDATE tidemark.tables SET history_behind = true WHERE table_id = p_table_id;
        t.history_behind := true;
    END IF;

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
    IF mine IS NOT NULL THEN
        PERFORM tidemark.view_dress(format('%I.%I', t.target_schema, vname), current_user, mine);
    END IF;
    IF jsonb_array_length(others) > 0 THEN
        PERFORM tidemark.views_restore(others);
        done := done || format('made again the views over the history: %s',
                               (SELECT string_agg(format('%I.%I', e ->> 'schema', e ->> 'name'),
                                                  ', ')
                                  FROM jsonb_array_elements(others) e));
    END IF;
    UPDATE tidemark.tables
       SET history_relid = hist,
           versions_relid = format('%I.%I', t.target_schema, vname)::regclass
     WHERE table_id = p_table_id;
    RETURN array_to_string(done, '; ');
END
$$;

-- A table set aside (a change the target refuses) is made again in its
-- place: tidemark.objects_carry(kept, made) gives the new table what the
-- data team made on the kept one: its privileges and comments
-- (privileges_carry), its indexes (not those of constraints), its
-- triggers, with the same firing (disabled, replica, always), and its
-- row-level security policies with their ENABLE / FORCE. An index keeps
-- its name, the kept one's index taking "name (set aside)". Each under a
-- savepoint: what the new table does not take (an index or a trigger
-- reading the changed column) is returned, "what: why", for the caller
-- to warn of, and stays on the kept table.
CREATE OR REPLACE FUNCTION tidemark.objects_carry(p_kept regclass, p_made regclass)
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    failed text[] := '{}';
    o record;
    schema_name name := (SELECT n.nspname FROM pg_class c
                           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = p_kept);
    aside text;
BEGIN
    BEGIN
        PERFORM tidemark.privileges_carry(p_kept, p_made);
    EXCEPTION WHEN OTHERS THEN
        failed := failed || format('privileges and comments (%s). Fix: GRANT them on it as on'
                                   ' the kept table', SQLERRM);
    END;
    FOR o IN SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def, i.indisunique
               FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
              WHERE i.indrelid = p_kept
                AND NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conindid = i.indexrelid)
              ORDER BY i.indexrelid LOOP
        BEGIN
            aside := left(o.name, 50) || ' (set aside)';
            EXECUTE format('ALTER INDEX %I.%I RENAME TO %I', schema_name, o.name, aside);
            EXECUTE format('CREATE %sINDEX %I ON %s %s',
                           CASE WHEN o.indisunique THEN 'UNIQUE ' ELSE '' END, o.name, p_made,
                           substr(o.def, strpos(o.def, ' USING ') + 1));
        EXCEPTION WHEN OTHERS THEN
            failed := failed || format('index %I: %s', o.name, SQLERRM);
        END;
    END LOOP;
    FOR o IN SELECT t.tgname, t.tgenabled, pg_get_triggerdef(t.oid) AS def
               FROM pg_trigger t WHERE t.tgrelid = p_kept AND NOT t.tgisinternal
              ORDER BY t.oid LOOP
        BEGIN
            EXECUTE replace(o.def, format(' ON %s ', p_kept), format(' ON %s ', p_made));
            IF o.tgenabled <> 'O' THEN
                EXECUTE format('ALTER TABLE %s %s TRIGGER %I', p_made,
                               CASE o.tgenabled WHEN 'D' THEN 'DISABLE' WHEN 'R' THEN
                                    'ENABLE REPLICA' ELSE 'ENABLE ALWAYS' END, o.tgname);
            END IF;
        EXCEPTION WHEN OTHERS THEN
            failed := failed || format('trigger %I: %s', o.tgname, SQLERRM);
        END;
    END LOOP;
    FOR o IN SELECT p.polname, p.polcmd, p.polpermissive, p.polroles,
                    pg_get_expr(p.polqual, p.polrelid) AS qual,
                    pg_get_expr(p.polwithcheck, p.polrelid) AS withcheck
               FROM pg_policy p WHERE p.polrelid = p_kept ORDER BY p.oid LOOP
        BEGIN
            EXECUTE format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', o.polname, p_made,
                           CASE WHEN o.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
                           CASE o.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT'
                                WHEN 'w' THEN 'UPDATE' WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
                           (SELECT string_agg(CASE WHEN r = 0 THEN 'PUBLIC'
                                                   ELSE quote_ident(pg_get_userbyid(r)) END, ', ')
                              FROM unnest(o.polroles) r),
                           CASE WHEN o.qual IS NULL THEN '' ELSE format(' USING (%s)', o.qual) END,
                           CASE WHEN o.withcheck IS NULL THEN ''
                                ELSE format(' WITH CHECK (%s)', o.withcheck) END);
        EXCEPTION WHEN OTHERS THEN
            failed := failed || format('policy %I: %s', o.polname, SQLERRM);
        END;
    END LOOP;
    IF (SELECT relrowsecurity FROM pg_class WHERE oid = p_kept) THEN
        EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', p_made);
    END IF;
    IF (SELECT relforcerowsecurity FROM pg_class WHERE oid = p_kept) THEN
        EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', p_made);
    END IF;
    RETURN failed;
END
$$;
