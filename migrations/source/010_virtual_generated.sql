-- Virtual generated columns (PostgreSQL 18 and later) described as generated.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- PostgreSQL 18 added virtual generated columns (attgenerated 'v'), computed
-- when read, and made them the default of GENERATED ALWAYS AS (...). pgoutput
-- never sends them, and the copy does not read them, like stored ones; but
-- 004's capture_columns gave an expression for stored ones only, so a
-- virtual column became an ordinary column on the target that nothing
-- filled (NULL in every row). capture_columns now gives the expression of
-- both kinds: the target computes the column (a stored generated column,
-- the kind every target version has), and `verify` compares it.
CREATE OR REPLACE FUNCTION tidemark.capture_columns(p_relid oid)
RETURNS json
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET datestyle = 'ISO, YMD'
SET intervalstyle = 'postgres'
SET extra_float_digits = 3
SET bytea_output = 'hex'
SET lc_monetary = 'C'
SET timezone = 'UTC'
AS $$
    SELECT coalesce(json_agg(json_build_object(
               'attnum', a.attnum, 'name', a.attname,
               'type', format_type(a.atttypid, a.atttypmod),
               'target_type', tidemark.column_target_type(a.atttypid, a.atttypmod),
               'type_oid', a.atttypid::bigint, 'typmod', a.atttypmod,
               'type_ref', tidemark.type_ref(a.atttypid)::bigint,
               'collation', tidemark.collation_definition(a.attcollation),
               'not_null', a.attnotnull,
               'key', coalesce(a.attnum = ANY (k.keycols), false),
               -- its place in the key (1, 2, ...), null for other columns
               'key_position', array_position(k.keycols, a.attnum),
               'has_missing', a.atthasmissing,
               -- attmissingval is a one-element array of the column's type
               'missing', CASE WHEN a.atthasmissing
                               THEN (a.attmissingval::text::text[])[1] END,
               'default', a.atthasdef AND a.attgenerated = '',
               -- stored ('s') and, from PostgreSQL 18, virtual ('v')
               'generated', CASE WHEN a.attgenerated IN ('s', 'v')
                                 THEN pg_get_expr(d.adbin, d.adrelid) END)
             ORDER BY a.attnum), '[]'::json)
      FROM pg_attribute a
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     CROSS JOIN (SELECT tidemark.table_keycols(p_relid) AS keycols) k
     WHERE a.attrelid = p_relid AND a.attnum > 0 AND NOT a.attisdropped
$$;
