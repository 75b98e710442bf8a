-- Views of the target's own over a replicated table (a report, a BI
-- layer) make PostgreSQL refuse some of the table's changes: a column's
-- type changed, a column dropped. Rather than set the table aside (the
-- views would go on reading the kept table, no longer written), the change
-- is made again with the views lifted: saved and dropped, the change made,
-- and created again from their saved definitions, with their owner,
-- options, privileges and comments, all in the change's transaction, so
-- that no reader sees them missing. A view that cannot be made again (it
-- uses the dropped column, its column's type no longer fits what it does)
-- fails the whole, and the table is set aside as before.
--
-- tidemark.views_lift(table) saves and drops every view over the table,
-- through other views too, and returns them as a JSON array in the order to
-- create them again ([] when there are none):
--   [{"schema", "name", "def": pg_get_viewdef(), "options": reloptions,
--     "owner": role name, "acl": relacl as text[], "comment",
--     "columns": [{"name", "comment"}], "depth": 1 for a view of the table}]
-- A materialized view (its rows would have to be computed again) or
-- anything else depending on the table through a rule raises an error,
-- which the caller takes as "cannot lift".
-- tidemark.views_restore(saved) creates them again.
--
-- A table set aside (a change the target refuses otherwise: a materialized
-- view, a constraint or an index of the target's own) is kept under
-- "name (set aside)" and made again: tidemark.privileges_carry(kept, made)
-- gives the new table the kept one's privileges (of the table and of each
-- column of the same name) and comments, so that the readers granted them
-- keep reading it.
--
-- Each runs with search_path pg_catalog, so that the saved definitions name
-- every other object with its schema and read back the same.

-- Grants acl's privileges on p_object (qualified, quoted), or on its
-- column p_column, except those of the roles named in p_skip (an owner,
-- who has them already).
CREATE OR REPLACE FUNCTION tidemark.acl_grant(p_object text, p_column name, p_acl aclitem[],
                                              p_skip name[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT a.privilege_type, a.is_grantable, a.grantee FROM aclexplode(p_acl) a
              WHERE a.grantee = 0 OR pg_get_userbyid(a.grantee) <> ALL (p_skip) LOOP
        EXECUTE format('GRANT %s%s ON %s TO %s%s', g.privilege_type,
                       CASE WHEN p_column IS NULL THEN '' ELSE format(' (%I)', p_column) END,
                       p_object,
                       CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                            ELSE quote_ident(pg_get_userbyid(g.grantee)) END,
                       CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;

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
               'def', pg_get_viewdef(c.oid),
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
               'depth', l.depth) ORDER BY l.depth, c.oid), '[]')
      INTO saved
      FROM lifted l JOIN pg_class c ON c.oid = l.oid
      JOIN pg_namespace n ON n.oid = c.relnamespace;
    IF EXISTS (SELECT FROM jsonb_array_elements(saved) e WHERE e ->> 'kind' <> 'v') THEN
        RAISE EXCEPTION 'a materialized view or a rule depends on %', p_table;
    END IF;
    FOR v IN SELECT e FROM jsonb_array_elements(saved) WITH ORDINALITY AS x (e, i)
              ORDER BY i DESC LOOP
        EXECUTE format('DROP VIEW %I.%I', v ->> 'schema', v ->> 'name');
    END LOOP;
    RETURN saved;
END
$$;

CREATE OR REPLACE FUNCTION tidemark.views_restore(p_saved jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v jsonb;
    col jsonb;
    target text;
BEGIN
    FOR v IN SELECT e FROM jsonb_array_elements(p_saved) WITH ORDINALITY AS x (e, i)
              ORDER BY i LOOP
        target := format('%I.%I', v ->> 'schema', v ->> 'name');
        EXECUTE format('CREATE VIEW %s%s AS %s', target,
                       CASE WHEN jsonb_typeof(v -> 'options') = 'array' THEN
                           ' WITH (' || (SELECT string_agg(format('%I = %L',
                                                 split_part(o, '=', 1),
                                                 substr(o, strpos(o, '=') + 1)), ', ')
                                           FROM jsonb_array_elements_text(v -> 'options') o)
                           || ')' ELSE '' END,
                       v ->> 'def');
        IF v ->> 'owner' <> current_user THEN
            EXECUTE format('ALTER VIEW %s OWNER TO %I', target, v ->> 'owner');
        END IF;
        IF jsonb_typeof(v -> 'acl') = 'array' THEN
            PERFORM tidemark.acl_grant(target, NULL,
                ARRAY(SELECT jsonb_array_elements_text(v -> 'acl'))::aclitem[],
                ARRAY[v ->> 'owner']);
        END IF;
        IF v ->> 'comment' IS NOT NULL THEN
            EXECUTE format('COMMENT ON VIEW %s IS %L', target, v ->> 'comment');
        END IF;
        FOR col IN SELECT c FROM jsonb_array_elements(v -> 'columns') c LOOP
            EXECUTE format('COMMENT ON COLUMN %s.%I IS %L', target, col ->> 'name',
                           col ->> 'comment');
        END LOOP;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION tidemark.privileges_carry(p_kept regclass, p_made regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    kept record;
    made record;
    col record;
BEGIN
    SELECT c.relacl, pg_get_userbyid(c.relowner) AS owner INTO kept
      FROM pg_class c WHERE c.oid = p_kept;
    SELECT pg_get_userbyid(c.relowner) AS owner INTO made FROM pg_class c WHERE c.oid = p_made;
    IF kept.relacl IS NOT NULL THEN
        PERFORM tidemark.acl_grant(p_made::text, NULL, kept.relacl,
                                   ARRAY[kept.owner, made.owner]::name[]);
    END IF;
    FOR col IN SELECT k.attname, k.attacl, col_description(p_kept, k.attnum) AS comment
                 FROM pg_attribute k JOIN pg_attribute m ON m.attrelid = p_made
                  AND m.attname = k.attname AND m.attnum > 0 AND NOT m.attisdropped
                WHERE k.attrelid = p_kept AND k.attnum > 0 AND NOT k.attisdropped LOOP
        IF col.attacl IS NOT NULL THEN
            PERFORM tidemark.acl_grant(p_made::text, col.attname, col.attacl,
                                       ARRAY[kept.owner, made.owner]::name[]);
        END IF;
        IF col.comment IS NOT NULL THEN
            EXECUTE format('COMMENT ON COLUMN %s.%I IS %L', p_made, col.attname, col.comment);
        END IF;
    END LOOP;
    IF obj_description(p_kept, 'pg_class') IS NOT NULL THEN
        EXECUTE format('COMMENT ON TABLE %s IS %L', p_made, obj_description(p_kept, 'pg_class'));
    END IF;
END
$$;
