-- A key over a generated column cannot match rows: logical decoding does
-- not send generated columns (PostgreSQL 18 sends stored ones only when the
-- publication asks, and refuses UPDATE and DELETE of a table whose replica
-- identity has one it does not publish). Before this migration such a key
-- was taken, and the target table could not be made with it (its column is
-- not among those the stream sends), which stopped `run`. Now the key is
-- not taken: the table is one without a key, replicated under REPLICA
-- IDENTITY FULL by its other columns (or by another unique index on NOT
-- NULL columns that are not generated), and refused with the fix otherwise.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.

-- table_keycols: as in 015_capture_cost.sql, but never over a generated column
CREATE OR REPLACE FUNCTION tidemark.table_keycols(p_relid oid)
RETURNS int2[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    k int2[];
BEGIN
    k := (SELECT coalesce(
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
          WHERE i.indrelid = p_relid AND i.indisreplident AND c.relreplident = 'i'),
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
          WHERE i.indrelid = p_relid AND i.indisprimary AND i.indimmediate
            AND c.relreplident <> 'f')));
    IF k IS NOT NULL AND NOT EXISTS (SELECT FROM pg_attribute a
                                      WHERE a.attrelid = p_relid AND a.attgenerated <> ''
                                        AND a.attnum = ANY (k)) THEN
        RETURN k;
    END IF;
    IF k IS NOT NULL THEN
        -- the replica identity (the key, or its index) has a generated
        -- column: updates and deletes arrive without their row's key
        RETURN NULL;
    END IF;
    -- REPLICA IDENTITY FULL: the old rows come whole, so any unique index
    -- on NOT NULL columns, none of them generated, matches them (the
    -- primary key first, as PostgreSQL orders its indexes by their oid)
    RETURN (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
              FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
             WHERE i.indrelid = p_relid AND c.relreplident = 'f'
               AND i.indisunique AND i.indimmediate AND i.indisvalid
               AND i.indpred IS NULL AND i.indexprs IS NULL
               AND NOT EXISTS (SELECT FROM pg_attribute a
                                WHERE a.attrelid = p_relid
                                  AND (NOT a.attnotnull OR a.attgenerated <> ''
                                       OR tidemark.not_null_unchecked(p_relid, a.attnum))
                                  AND a.attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1]))
             ORDER BY NOT i.indisprimary, i.indnkeyatts, i.indexrelid LIMIT 1);
END
$$;
