-- A NOT NULL constraint that is NOT VALID is not NOT NULL on the target.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- PostgreSQL 18 lets ALTER TABLE ... ADD CONSTRAINT ... NOT NULL ... NOT VALID
-- mark a column NOT NULL (pg_attribute.attnotnull) without checking the
-- rows already there, which may hold NULLs. The target column was made NOT
-- NULL and the copy of such a row failed. A column is now described NOT
-- NULL only when its constraint is validated; VALIDATE CONSTRAINT is a
-- captured change, after which the target column becomes NOT NULL. Such a
-- column is no key either (013's table_keycols, with
-- tidemark.not_null_unchecked).

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
               -- NOT NULL that holds: a NOT VALID one (PostgreSQL 18) may
               -- still have NULLs in the rows it has not checked
               'not_null', a.attnotnull AND NOT tidemark.not_null_unchecked(a.attrelid, a.attnum),
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
