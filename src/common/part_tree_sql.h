/*
 * part_tree_sql.h: the rows of pg_partition_tree(rel), read from the
 * catalog, as SQL text for a query's FROM clause.
 *
 * pg_partition_tree takes an ACCESS SHARE lock on every partition it
 * lists. On a source where a migration changes a hierarchy (CREATE TABLE
 * ... PARTITION OF with a default partition, ATTACH, DETACH, DROP of a
 * partition), that lock waits behind the migration's and can deadlock
 * with it, and PostgreSQL may then cancel the application's transaction
 * rather than tidemark's. pg_inherits and pg_class are read under the
 * query's snapshot without locking any partition.
 *
 *   PART_TREE_SQL(rel): a subquery with the columns relid, parentrelid
 *   (NULL for rel itself), isleaf and level (0 for rel), like
 *   pg_partition_tree's; rel is an SQL expression of type oid (a
 *   parameter, or a column of an earlier FROM item: then write LATERAL
 *   before it). A table that is not partitioned gives itself alone, one
 *   that does not exist gives nothing.
 */
#ifndef TIDEMARK_PART_TREE_SQL_H
#define TIDEMARK_PART_TREE_SQL_H

#define PART_TREE_SQL(rel)                                                                  \
	"(WITH RECURSIVE tree (relid, parentrelid, level) AS (SELECT (" rel ")::oid, NULL::oid, 0" \
	" UNION ALL SELECT i.inhrelid, i.inhparent, tree.level + 1 FROM tree"                      \
	" JOIN pg_catalog.pg_inherits i ON i.inhparent = tree.relid"                               \
	" JOIN pg_catalog.pg_class ic ON ic.oid = i.inhrelid AND ic.relispartition)"               \
	" SELECT tree.relid, tree.parentrelid, tc.relkind <> 'p' AS isleaf, tree.level FROM tree"  \
	" JOIN pg_catalog.pg_class tc ON tc.oid = tree.relid)"

#endif
