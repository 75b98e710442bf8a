-- Tables without any key (REPLICA IDENTITY FULL, no primary key, no
-- replica identity index, no unique index on NOT NULL columns): their
-- tidemark.tables row has key_columns = '{}', the target table has no
-- primary key, and it may hold exact duplicate rows, as the source does.
-- Applied once by `tidemark setup` (or `run`), recorded in tidemark.migrations.

-- The changes of a keyless table that the stream delivers while the table
-- is being read in one piece (between the low and the high watermark of
-- its copy, see src/snap_keyless.h). They are not applied when they arrive:
-- they are kept here, in the target transaction that holds them, and at
-- the high watermark those of the source transactions the copy could not
-- see are applied over the copy, in seq order (stream order), in the same
-- target transaction as the copy itself. Rows of an earlier attempt at the
-- copy are deleted when the next attempt's low watermark is met.
CREATE TABLE tidemark.keyless_pending (
    table_id   integer NOT NULL REFERENCES tidemark.tables ON DELETE CASCADE,
    seq        bigint GENERATED ALWAYS AS IDENTITY,
    lsn        pg_lsn NOT NULL,        -- the source transaction's commit record
    xid        bigint NOT NULL,        -- its transaction id as the stream gives it (32 bits)
    op         "char" NOT NULL CHECK (op IN ('i', 'u', 'd', 't')),
    old        text[],                 -- update, delete: the whole old row, by column
    new        text[],                 -- insert, update: the new row, by column
    unchanged  int2[],                 -- update: columns not sent (unchanged TOAST), from 1
    PRIMARY KEY (table_id, seq)
);

-- How a column of this type and collation is matched against a row the
-- stream describes (the old row of an update or delete):
--   'image'  equality implies identical values (the type's default btree
--            operator class says so through its equalimage support
--            function, as B-tree deduplication asks): c = $n, which any
--            index on c can serve;
--   'equal'  an equality exists but equal values may differ (numeric 1.0
--            and 1.00, intervals, floats -0 and 0, citext, jsonb, arrays):
--            c = $n and the output texts are equal too;
--   'text'   no equality tidemark can use (json, xml, point, composite and
--            range types): the output texts are equal.
-- Domains are matched as their base type, arrays by their element type.
CREATE FUNCTION tidemark.column_match(p_type oid, p_collation oid)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_type oid := p_type;
    v_kind "char";
    v_base oid;
    v_elem oid;
    v_subscript regproc;
    v_family oid;
    v_input oid;
    v_proc regproc;
    v_image boolean;
BEGIN
    LOOP
        SELECT typtype, typbasetype, typelem, typsubscript
          INTO v_kind, v_base, v_elem, v_subscript FROM pg_type WHERE oid = v_type;
        IF NOT FOUND THEN
            RETURN 'text';
        END IF;
        EXIT WHEN v_kind <> 'd';
        v_type := v_base;
    END LOOP;
    IF v_kind = 'e' THEN
        RETURN 'image';
    END IF;
    IF v_elem <> 0 AND v_subscript = 'array_subscript_handler'::regproc THEN
        RETURN CASE WHEN tidemark.column_match(v_elem, p_collation) = 'text' THEN 'text'
                    ELSE 'equal' END;
    END IF;
    IF v_kind <> 'b' THEN
        RETURN 'text';
    END IF;
    SELECT oc.opcfamily, oc.opcintype INTO v_family, v_input
      FROM pg_opclass oc JOIN pg_am am ON am.oid = oc.opcmethod
     WHERE am.amname = 'btree' AND oc.opcdefault
       AND (oc.opcintype = v_type
            OR EXISTS (SELECT FROM pg_cast c WHERE c.castsource = v_type
                         AND c.casttarget = oc.opcintype AND c.castmethod = 'b'
                         AND c.castcontext = 'i'))
     ORDER BY oc.opcintype = v_type DESC, oc.oid LIMIT 1;
    IF NOT FOUND THEN
        RETURN 'text';
    END IF;
    SELECT amproc INTO v_proc FROM pg_amproc
     WHERE amprocfamily = v_family AND amproclefttype = v_input
       AND amprocrighttype = v_input AND amprocnum = 4;
    IF NOT FOUND THEN
        RETURN 'equal';
    END IF;
    -- the two equalimage functions of PostgreSQL itself; another (an
    -- extension's) is not called: 'equal' is always right, only slower
    IF v_proc = 'btequalimage'::regproc THEN
        RETURN 'image';
    END IF;
    IF v_proc = 'btvarstrequalimage'::regproc THEN
        SELECT collisdeterministic INTO v_image FROM pg_collation WHERE oid = p_collation;
        RETURN CASE WHEN v_image THEN 'image' ELSE 'equal' END;
    END IF;
    RETURN 'equal';
END
$$;
