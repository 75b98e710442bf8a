-- Typed tables follow their type: ALTER TYPE ... ADD / DROP / ALTER /
-- RENAME ATTRIBUTE ... CASCADE changes the columns of every table made OF
-- the type, but the command names the type alone, so the capture described
-- none of those tables and run met their rows with columns it did not
-- know (it then set the table aside and copied it again). The tables made
-- OF a type the command touched are now described too: the target follows
-- them as it follows an ALTER TABLE (an attribute added is a column added,
-- renamed a rename; a type changed rewrites the table, which is copied
-- again).
-- Applied once by `tidemark setup` (as a superuser), recorded in tidemark.migrations.
--
-- capture_touched as in 004_target_types.sql, with the typed tables added.
CREATE OR REPLACE FUNCTION tidemark.capture_touched()
RETURNS oid[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    rels oid[];
    types oid[];
    schemas oid[];
    extensions oid[];
    level oid[];
    touched oid[] := '{}';
BEGIN
    SELECT array_agg(c.objid) FILTER (WHERE c.classid = 'pg_class'::regclass),
           array_agg(c.objid) FILTER (WHERE c.classid = 'pg_type'::regclass),
           array_agg(c.objid) FILTER (WHERE c.classid = 'pg_namespace'::regclass
                                        AND c.command_tag = 'ALTER SCHEMA'),
           array_agg(c.objid) FILTER (WHERE c.classid = 'pg_extension'::regclass
                                        AND c.command_tag = 'ALTER EXTENSION')
      INTO rels, types, schemas, extensions
      FROM pg_event_trigger_ddl_commands() c
     WHERE c.command_tag NOT IN ('COMMENT', 'SECURITY LABEL');
    -- a relation, one of its columns (objsubid > 0), or an index: its table;
    -- a composite type's relation: the type
    IF rels IS NOT NULL THEN
        level := (SELECT array_agg(coalesce(i.indrelid, r.oid))
                    FROM unnest(rels) AS r (oid) LEFT JOIN pg_index i ON i.indexrelid = r.oid);
        types := types || (SELECT array_agg(c.reltype) FROM pg_class c
                            WHERE c.oid = ANY (rels) AND c.relkind = 'c');
    END IF;
    -- a type or domain (renamed, moved, altered): the tables with a column of it
    IF types IS NOT NULL THEN
        level := level || (SELECT array_agg(d.objid)
                             FROM pg_type t
                             JOIN pg_depend d ON d.refclassid = 'pg_type'::regclass
                                             AND d.refobjid IN (t.oid, t.typarray)
                            WHERE t.oid = ANY (types)
                              AND d.classid = 'pg_class'::regclass AND d.objsubid > 0);
    END IF;
    -- a composite type of typed tables (CREATE TABLE t OF type): ALTER
    -- TYPE ... CASCADE changes their columns
    IF types IS NOT NULL THEN
        level := level || (SELECT array_agg(r.oid) FROM pg_class r
                            WHERE r.reloftype = ANY (types));
    END IF;
    -- a schema (renamed): its tables
    IF schemas IS NOT NULL THEN
        level := level || (SELECT array_agg(r.oid) FROM pg_class r
                            WHERE r.relnamespace = ANY (schemas));
    END IF;
    -- an extension (moved to another schema): its tables
    IF extensions IS NOT NULL THEN
        level := level || (SELECT array_agg(d.objid) FROM pg_depend d
                            WHERE d.refclassid = 'pg_extension'::regclass
                              AND d.refobjid = ANY (extensions)
                              AND d.classid = 'pg_class'::regclass AND d.deptype = 'e');
    END IF;
    -- then their inheritance children and partitions, level by level
    WHILE cardinality(level) > 0 LOOP
        level := (SELECT array_agg(DISTINCT x) FROM unnest(level) AS x WHERE x <> ALL (touched));
        touched := touched || level;
        level := (SELECT array_agg(h.inhrelid) FROM pg_inherits h WHERE h.inhparent = ANY (level));
    END LOOP;
    RETURN touched;
END
$$;
