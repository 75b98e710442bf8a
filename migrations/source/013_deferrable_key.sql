-- A DEFERRABLE primary key is not a key to match rows by.
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- A deferrable key is checked at commit, so inside a transaction two rows
-- may hold the same key: `UPDATE t SET id = 4 - id` swaps keys 1 and 3,
-- and between its two row changes both rows have key 3. Applied by key,
-- the second change (old key 3) then took the row the first had just
-- written, and the target lost a row. PostgreSQL itself never takes such a
-- key as a replica identity: with REPLICA IDENTITY DEFAULT the table has
-- none (its updates and deletes are refused once published), and with FULL
-- the whole old row tells the rows apart. The key is now taken only from
-- an immediate index, as the unique-index branch already did; a table with
-- FULL and no other key is replicated by whole rows (keyless.h).
--
-- Nor is a unique index on a column whose NOT NULL is NOT VALID
-- (PostgreSQL 18): rows it has not checked may hold NULLs there.

-- Is the column's NOT NULL constraint there but not validated yet?
-- (Always false before PostgreSQL 18, which has no such constraint.)
CREATE OR REPLACE FUNCTION tidemark.not_null_unchecked(p_relid oid, p_attnum int2)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT FROM pg_constraint c
                    WHERE c.conrelid = p_relid AND c.contype = 'n' AND NOT c.convalidated
                      AND c.conkey = ARRAY[p_attnum])
$$;
GRANT EXECUTE ON FUNCTION tidemark.not_null_unchecked(oid, int2) TO PUBLIC;

CREATE OR REPLACE FUNCTION tidemark.table_keycols(p_relid oid)
RETURNS int2[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
          WHERE i.indrelid = p_relid AND i.indisreplident AND c.relreplident = 'i'),
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i WHERE i.indrelid = p_relid AND i.indisprimary AND i.indimmediate),
        (SELECT (i.indkey::int2[])[0:i.indnkeyatts - 1]
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
          WHERE i.indrelid = p_relid AND c.relreplident = 'f'
            AND i.indisunique AND i.indimmediate AND i.indisvalid
            AND i.indpred IS NULL AND i.indexprs IS NULL
            AND NOT EXISTS (SELECT FROM pg_attribute a
                             WHERE a.attrelid = p_relid
                               AND (NOT a.attnotnull
                                    OR tidemark.not_null_unchecked(p_relid, a.attnum))
                               AND a.attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1]))
          ORDER BY i.indnkeyatts, i.indexrelid LIMIT 1))
$$;
