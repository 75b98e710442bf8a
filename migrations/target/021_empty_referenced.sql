-- A TRUNCATE of the source applied to tables that keys of the target's
-- own reference (an annotations table with a foreign key to a replicated
-- orders table, say).
--
-- TRUNCATE refuses a table that a foreign key of a table outside the
-- statement references (0A000), whatever the key's ON DELETE action, and
-- the stream stopped at it at every try. tidemark.empty_tables empties
-- the tables with one TRUNCATE when no such key exists, and otherwise with
-- one DELETE of every row of each, all in one statement: the keys' ON
-- DELETE actions then apply (CASCADE, SET NULL, SET DEFAULT), and a key
-- that forbids the delete (NO ACTION, RESTRICT) fails it with 23503, as it
-- does for a row the source deleted. The tables are named by schema and
-- name, two arrays of the same length; the result is the list of the
-- referencing tables when the DELETE was used, else NULL.

-- The tables outside rels (and their partitions) whose foreign keys
-- reference one of rels, as a ", " list; NULL: none. Also what a table to
-- be emptied for its copy is checked with (catalog_referencing_tables).
CREATE OR REPLACE FUNCTION tidemark.referencing_tables(rels regclass[])
RETURNS text
LANGUAGE sql STABLE AS $fn$
	SELECT string_agg(DISTINCT c.conrelid::regclass::text, ', ')
	  FROM pg_constraint c
	 WHERE c.contype = 'f' AND c.confrelid = ANY (rels) AND c.conrelid <> ALL (rels)
	   AND NOT EXISTS (SELECT 1 FROM pg_partition_ancestors(c.conrelid) a
	                    WHERE a.relid = ANY (rels))
$fn$;

CREATE OR REPLACE FUNCTION tidemark.empty_tables(schemas text[], names text[])
RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
	rels regclass[];
	referencing text;
	statement text;
BEGIN
	SELECT array_agg(format('%I.%I', s, n)::regclass ORDER BY o) INTO rels
	  FROM unnest(schemas, names) WITH ORDINALITY AS u(s, n, o);
	referencing := tidemark.referencing_tables(rels);
	IF referencing IS NULL THEN
		SELECT 'TRUNCATE ' || string_agg(r::text, ', ') INTO statement FROM unnest(rels) r;
	ELSE
		-- one statement: the keys between the listed tables are checked once
		-- every row of each is gone
		SELECT 'WITH ' || string_agg(format('d%s AS (DELETE FROM %s)', o, r), ', ') || ' SELECT'
		  INTO statement FROM unnest(rels) WITH ORDINALITY AS u(r, o);
	END IF;
	EXECUTE statement;
	RETURN referencing;
END
$fn$;
