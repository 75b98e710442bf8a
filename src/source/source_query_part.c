/*
 * source_query_part.c: the source's partitioned tables (source_query.h):
 * a root's partitions, partitions whose root is left out, and the
 * publication's publish_via_partition_root.
 */
#include "source_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "part_tree_sql.h"
#include "pgconn.h"
#include "strbuf.h"
#include "xalloc.h"

#define SRC PGCONN_SOURCE

/* A query with the table's oid as its one parameter. */
static int
oid_query(PGconn *conn, const char *what, const char *sql, uint32_t relid, PGresult **r)
{
	char oid[16];
	const char *p[] = {oid};

	snprintf(oid, sizeof oid, "%u", relid);
	return pgconn_exec(conn, SRC, what, sql, 1, p, r);
}

int
source_query_partitions(PGconn *conn, uint32_t relid, ddl_part_root *out)
{
	PGresult *r = NULL;
	int rc = oid_query(conn, "listing the partitions of a partitioned table",
	                   "SELECT t.relid::oid, t.parentrelid::oid, n.nspname, c.relname"
	                   " FROM " PART_TREE_SQL("$1::oid") " t JOIN pg_class c ON c.oid = t.relid"
	                   " JOIN pg_namespace n ON n.oid = c.relnamespace"
	                   " WHERE t.level > 0 ORDER BY t.level, t.relid", relid, &r);

	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++)
		ddl_part_root_add(out, (uint32_t) strtoul(PQgetvalue(r, i, 0), NULL, 10),
		                  (uint32_t) strtoul(PQgetvalue(r, i, 1), NULL, 10), PQgetvalue(r, i, 2),
		                  PQgetvalue(r, i, 3));
	PQclear(r);
	return rc;
}

int
source_query_table_name(PGconn *conn, uint32_t relid, char **out)
{
	PGresult *r = NULL;
	int rc = oid_query(conn, "reading a table's name",
	                   "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c"
	                   " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::oid",
	                   relid, &r);

	*out = rc == TM_OK && PQntuples(r) == 1 ? xstrdup(PQgetvalue(r, 0, 0)) : NULL;
	PQclear(r);
	return rc;
}

int
source_query_has_rows(PGconn *conn, uint32_t relid, bool *has)
{
	char *name = NULL;
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	int rc = source_query_table_name(conn, relid, &name);

	*has = false;
	if (rc != TM_OK || name == NULL)
		return rc;
	strbuf_appendf(&sql, "SELECT EXISTS (SELECT 1 FROM %s)", name);
	rc = pgconn_exec(conn, PGCONN_SOURCE, "reading whether a table has rows", strbuf_str(&sql), 0,
	                 NULL, &r);
	*has = rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	strbuf_free(&sql);
	free(name);
	return rc;
}

int
source_query_partitioned(PGconn *conn, uint32_t relid, bool *partitioned)
{
	PGresult *r = NULL;
	int rc = oid_query(conn, "reading a table's kind",
	                   "SELECT relkind = 'p' FROM pg_class WHERE oid = $1::oid", relid, &r);

	*partitioned = rc == TM_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return rc;
}

/* Runs sql; *out: its rows' ncols columns, as a new NULL-terminated array
 * of new strings (NULL on failure). */
static int
query_strings(PGconn *conn, const char *what, const char *sql, const char *param, int ncols,
              char ***out)
{
	const char *p[] = {param};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, SRC, what, sql, 1, p, &r);

	*out = NULL;
	if (rc != TM_OK)
		return rc;
	*out = xcalloc((size_t) PQntuples(r) * (size_t) ncols + 1, sizeof(char *));
	for (int i = 0; i < PQntuples(r) * ncols; i++)
		(*out)[i] = xstrdup(PQgetvalue(r, i / ncols, i % ncols));
	PQclear(r);
	return TM_OK;
}

int
source_query_foreign_partitions(PGconn *conn, const char *schema, char ***out)
{
	return query_strings(conn, "listing the partitions of a schema",
	                     "SELECT format('%I.%I', n.nspname, c.relname), rn.nspname, rc.relname"
	                     " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	                     " JOIN pg_class rc ON rc.oid = pg_partition_root(c.oid)"
	                     " JOIN pg_namespace rn ON rn.oid = rc.relnamespace"
	                     " WHERE n.nspname = $1 AND c.relispartition AND rn.nspname <> $1"
	                     " ORDER BY 1", schema, 3, out);
}

int
source_query_inheritance_children(PGconn *conn, uint32_t relid, char ***out)
{
	char id[16];

	snprintf(id, sizeof id, "%u", relid);
	return query_strings(conn, "listing a table's inheritance children",
	                     "SELECT n.nspname, c.relname FROM pg_inherits i"
	                     " JOIN pg_class c ON c.oid = i.inhrelid"
	                     " JOIN pg_namespace n ON n.oid = c.relnamespace"
	                     " JOIN pg_class pc ON pc.oid = i.inhparent"
	                     " WHERE i.inhparent = $1::oid AND pc.relkind = 'r' ORDER BY 1, 2",
	                     id, 2, out);
}

int
source_query_fix_via_root(PGconn *conn, const char *publication)
{
	const char *p[] = {publication};
	PGresult *r = NULL;
	strbuf sql = STRBUF_INIT;
	int rc = pgconn_exec(conn, SRC, "reading the publication's options",
	                     "SELECT pubviaroot FROM pg_publication WHERE pubname = $1", 1, p, &r);

	if (rc != TM_OK || PQntuples(r) == 0 || strcmp(PQgetvalue(r, 0, 0), "t") == 0) {
		PQclear(r);
		return rc;
	}
	PQclear(r);
	strbuf_append(&sql, "ALTER PUBLICATION ");
	strbuf_append_ident(&sql, publication);
	strbuf_append(&sql, " SET (publish_via_partition_root = true)");
	rc = pgconn_command(conn, SRC, "setting publish_via_partition_root", sql.data, 0, NULL);
	if (rc == TM_OK)
		log_info("source: publication \"%s\" now sends the changes of partitions as changes of "
		         "their root (publish_via_partition_root = true): tidemark replicates a "
		         "partitioned table as one table", publication);
	strbuf_free(&sql);
	return rc;
}

void
source_query_publication_missing(const char *publication)
{
	log_error("source: publication \"%s\" does not exist (dropped by someone?). Fix: run "
	          "`tidemark setup` again with the same tables; `run` then copies them again, the "
	          "changes made meanwhile not having been published (PostgreSQL before 18 cannot "
	          "read those changes once it exists again: there, drop the slot and `tidemark resync`)",
	          publication);
}

int
source_query_publication_exists(PGconn *conn, const char *publication, bool *exists)
{
	const char *p[] = {publication};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, SRC, "looking for the publication",
	                     "SELECT FROM pg_publication WHERE pubname = $1", 1, p, &r);

	*exists = rc == TM_OK && PQntuples(r) == 1;
	PQclear(r);
	return rc;
}

int
source_query_check_via_root(PGconn *conn, const char *publication)
{
	const char *p[] = {publication};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, SRC, "checking the publication's options",
	                     "SELECT p.pubviaroot OR NOT EXISTS (SELECT FROM pg_publication_tables pt"
	                     "   JOIN pg_namespace n ON n.nspname = pt.schemaname"
	                     "   JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename"
	                     "   WHERE pt.pubname = p.pubname AND (c.relispartition OR c.relkind = 'p'))"
	                     " FROM pg_publication p WHERE p.pubname = $1", 1, p, &r);

	if (rc == TM_OK && PQntuples(r) == 0) {
		/* PostgreSQL 19beta1 (tried; maybe 18) streams without a
		 * publication that is gone (a warning on the server), where 15
		 * refuses */
		source_query_publication_missing(publication);
		rc = TM_EXIT_CONFIG;
	} else if (rc == TM_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
		log_error("source: publication \"%s\" sends the changes of partitions as changes of the "
		          "partitions themselves (publish_via_partition_root is off), but tidemark "
		          "replicates a partitioned table as one table, its root: those changes would "
		          "be lost. Fix: ALTER PUBLICATION \"%s\" SET (publish_via_partition_root = "
		          "true); (or run `tidemark setup` again, which sets it), then `tidemark "
		          "snapshot` each partitioned table to copy what was missed", publication,
		          publication);
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

/* Every action published (insert, update, delete, truncate), and no
 * generated column (publish_generated_columns, PostgreSQL 18). */
static int
check_actions(PGconn *conn, const char *publication)
{
	const char *p[] = {publication};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, SRC, "checking the publication's actions",
	                     "SELECT concat_ws(', ', CASE WHEN NOT pubinsert THEN 'insert' END,"
	                     " CASE WHEN NOT pubupdate THEN 'update' END,"
	                     " CASE WHEN NOT pubdelete THEN 'delete' END,"
	                     " CASE WHEN NOT pubtruncate THEN 'truncate' END),"
	                     /* PostgreSQL 18 and later */
	                     " coalesce(to_jsonb(p) ->> 'pubgencols', 'n') NOT IN ('n', 'false')"
	                     " FROM pg_publication p WHERE pubname = $1", 1, p, &r);

	if (rc == TM_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "t") == 0) {
		log_error("source: publication \"%s\" publishes generated columns "
		          "(publish_generated_columns), which the target computes itself. Fix: ALTER "
		          "PUBLICATION \"%s\" SET (publish_generated_columns = none)", publication,
		          publication);
		rc = TM_EXIT_CONFIG;
	} else if (rc == TM_OK && PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] != '\0') {
		log_error("source: publication \"%s\" does not publish %s: the target would keep what "
		          "the source changed that way. Fix: ALTER PUBLICATION \"%s\" SET (publish = "
		          "'insert, update, delete, truncate'); then `tidemark resync`, since changes "
		          "were not published meanwhile", publication, PQgetvalue(r, 0, 0), publication);
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

/*
 * Every change of every table of the publication published whole: an
 * action left out (publish = 'insert, update'), a row filter (WHERE) or a
 * column list would send the stream only part of what the copy reads, and
 * the target would keep rows and values the stream never changes. And no
 * generated column: the target computes those.
 */
int
source_query_check_whole(PGconn *conn, const char *publication)
{
	const char *p[] = {publication};
	PGresult *r = NULL;
	int rc = check_actions(conn, publication);

	if (rc != TM_OK)
		return rc;
	rc = pgconn_exec(conn, SRC, "checking the publication's tables",
	                 "SELECT format('%I.%I', n.nspname, c.relname),"
	                 " pr.prqual IS NOT NULL, pr.prattrs IS NOT NULL"
	                 " FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid"
	                 " JOIN pg_class c ON c.oid = pr.prrelid"
	                 " JOIN pg_namespace n ON n.oid = c.relnamespace"
	                 " WHERE p.pubname = $1 AND (pr.prqual IS NOT NULL OR pr.prattrs IS NOT NULL)"
	                 " ORDER BY 1 LIMIT 1", 1, p, &r);

	if (rc == TM_OK && PQntuples(r) == 1) {
		const char *what = strcmp(PQgetvalue(r, 0, 1), "t") == 0 ? "a row filter (WHERE)"
		                                                         : "a column list";

		log_error("source: publication \"%s\" publishes %s with %s: the stream would send only "
		          "part of what the copy reads, and the target would keep rows and values the "
		          "stream never changes. Fix: publish the table whole (ALTER PUBLICATION \"%s\" "
		          "SET TABLE ... without WHERE or a column list; or drop the table from it and "
		          "`tidemark setup` again), or give tidemark a publication of its own "
		          "(--publication)", publication, PQgetvalue(r, 0, 0), what, publication);
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

/* "{1,2,3}" of the oids */
static void
oid_array(strbuf *arr, const uint32_t *relids, int n)
{
	strbuf_appendc(arr, '{');
	for (int i = 0; i < n; i++)
		strbuf_appendf(arr, "%s%u", i > 0 ? "," : "", relids[i]);
	strbuf_appendc(arr, '}');
}

static uint32_t
oid_at(const PGresult *r, int row, int col)
{
	return (uint32_t) strtoul(PQgetvalue(r, row, col), NULL, 10);
}

int
source_query_pub_state(PGconn *conn, const char *publication, const uint32_t *relids, int n,
                       pub_state *out)
{
	strbuf arr = STRBUF_INIT;
	const char *p[2] = {publication, NULL};
	PGresult *pub = NULL, *t = NULL, *ns = NULL;
	int rc;

	oid_array(&arr, relids, n);
	p[1] = arr.data;
	memset(out, 0, sizeof *out); /* nothing to free until it is read */
	rc = pgconn_exec(conn, SRC, "reading the publication",
	                 "SELECT oid, puballtables FROM pg_publication WHERE pubname = $1", 1, p, &pub);
	if (rc == TM_OK)
		rc = pgconn_exec(conn, SRC, "reading what the publication publishes",
		                 "SELECT u.relid, c.relnamespace, " SOURCE_QUERY_PUBLISHES("p", "c") ","
		                 " coalesce((SELECT x.oid FROM pg_publication_rel x"
		                 "   WHERE x.prpubid = p.oid AND x.prrelid = c.oid"
		                 "   AND NOT coalesce((to_jsonb(x) ->> 'prexcept')::boolean, false)), 0)"
		                 " FROM pg_publication p, unnest($2::oid[]) u (relid)"
		                 " JOIN pg_class c ON c.oid = u.relid WHERE p.pubname = $1", 2, p, &t);
	if (rc == TM_OK)
		rc = pgconn_exec(conn, SRC, "reading the schemas the publication names",
		                 "SELECT x.pnnspid, x.oid FROM pg_publication_namespace x"
		                 " JOIN pg_publication p ON p.oid = x.pnpubid WHERE p.pubname = $1",
		                 1, p, &ns);
	strbuf_free(&arr);
	if (rc == TM_OK) {
		pub_state_init(out, PQntuples(t), PQntuples(ns));
		out->pub_oid = PQntuples(pub) == 1 ? oid_at(pub, 0, 0) : 0;
		out->all_tables = PQntuples(pub) == 1 && strcmp(PQgetvalue(pub, 0, 1), "t") == 0;
		for (int i = 0; i < out->n; i++) {
			out->relids[i] = oid_at(t, i, 0);
			out->relnsp[i] = oid_at(t, i, 1);
			out->published[i] = strcmp(PQgetvalue(t, i, 2), "t") == 0;
			out->rel_row[i] = oid_at(t, i, 3);
		}
		for (int i = 0; i < out->nns; i++) {
			out->nsp[i] = oid_at(ns, i, 0);
			out->nsp_row[i] = oid_at(ns, i, 1);
		}
	}
	PQclear(pub);
	PQclear(t);
	PQclear(ns);
	return rc;
}

/* A result's first column as a new NULL-terminated array of new strings;
 * r is cleared. */
static char **
first_column(PGresult *r)
{
	char **out = xcalloc((size_t) PQntuples(r) + 1, sizeof(char *));

	for (int i = 0; i < PQntuples(r); i++)
		out[i] = xstrdup(PQgetvalue(r, i, 0));
	PQclear(r);
	return out;
}

int
source_query_unpublished(PGconn *conn, const char *publication, const uint32_t *relids, int n,
                         bool excepted_only, char ***out)
{
	strbuf arr = STRBUF_INIT;
	const char *p[3] = {publication, NULL, excepted_only ? "t" : "f"};
	PGresult *r = NULL;
	int rc;

	oid_array(&arr, relids, n);
	p[1] = arr.data;
	rc = pgconn_exec(conn, SRC, "checking that the publication publishes each table",
	                 "SELECT format('%I.%I', n.nspname, c.relname)"
	                 " FROM pg_publication p, unnest($2::oid[]) u (relid)"
	                 " JOIN pg_class c ON c.oid = u.relid"
	                 " JOIN pg_namespace n ON n.oid = c.relnamespace"
	                 " WHERE p.pubname = $1 AND NOT c.relispartition"
	                 " AND (p.puballtables OR NOT $3::boolean)"
	                 " AND NOT " SOURCE_QUERY_PUBLISHES("p", "c") " ORDER BY 1", 3, p, &r);
	strbuf_free(&arr);
	*out = NULL;
	if (rc != TM_OK)
		return rc;
	*out = first_column(r);
	return TM_OK;
}

int
source_query_unlogged(PGconn *conn, const uint32_t *relids, int n, source_unlogged **out,
                      int *nout)
{
	strbuf arr = STRBUF_INIT;
	const char *p[1];
	PGresult *r = NULL;
	int rc;

	oid_array(&arr, relids, n);
	p[0] = arr.data;
	/* the tree lists a partitioned table and its partitions, and the
	 * table alone for one that is not partitioned */
	rc = pgconn_exec(conn, SRC, "checking whether the tables are logged",
	                 "SELECT u.relid, format('%I.%I', n.nspname, c.relname),"
	                 " CASE WHEN m.relid <> u.relid THEN format('%I.%I', rn.nspname, rc.relname)"
	                 "  ELSE '' END"
	                 " FROM unnest($1::oid[]) u (relid)"
	                 " JOIN pg_class rc ON rc.oid = u.relid"
	                 " JOIN pg_namespace rn ON rn.oid = rc.relnamespace"
	                 " CROSS JOIN LATERAL (SELECT u.relid UNION"
	                 "  SELECT t.relid FROM " PART_TREE_SQL("u.relid") " t) m (relid)"
	                 " JOIN pg_class c ON c.oid = m.relid"
	                 " JOIN pg_namespace n ON n.oid = c.relnamespace"
	                 " WHERE c.relpersistence = 'u' ORDER BY 2", 1, p, &r);
	strbuf_free(&arr);
	*out = NULL;
	*nout = 0;
	if (rc != TM_OK)
		return rc;
	*out = xcalloc((size_t) PQntuples(r) + 1, sizeof **out);
	for (int i = 0; i < PQntuples(r); i++) {
		source_unlogged *u = &(*out)[(*nout)++];

		u->table = (uint32_t) strtoul(PQgetvalue(r, i, 0), NULL, 10);
		u->name = xstrdup(PQgetvalue(r, i, 1));
		u->partition_of = xstrdup(PQgetvalue(r, i, 2));
	}
	PQclear(r);
	return TM_OK;
}

void
source_unlogged_free(source_unlogged *u, int n)
{
	for (int i = 0; u != NULL && i < n; i++) {
		free(u[i].name);
		free(u[i].partition_of);
	}
	free(u);
}

int
source_query_capture_gaps(PGconn *conn, char ***out)
{
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, SRC, "checking the DDL capture's event triggers",
	                     "SELECT w.name || CASE WHEN e.oid IS NULL THEN ' is missing'"
	                     "  WHEN e.evtenabled = 'D' THEN ' is disabled'"
	                     "  WHEN e.evtenabled = 'O' THEN ' fires only in sessions whose"
	                     " session_replication_role is origin (ENABLE without ALWAYS)'"
	                     "  ELSE ' fires only in sessions whose session_replication_role is"
	                     " replica (ENABLE REPLICA)' END"
	                     " FROM (VALUES ('tidemark_ddl_end'), ('tidemark_sql_drop'),"
	                     "  ('tidemark_table_rewrite'), ('tidemark_partition_truncate')) w (name)"
	                     " LEFT JOIN pg_event_trigger e ON e.evtname = w.name"
	                     " WHERE e.oid IS NULL OR e.evtenabled <> 'A' ORDER BY 1",
	                     0, NULL, &r);

	*out = NULL;
	if (rc != TM_OK)
		return rc;
	*out = first_column(r);
	return TM_OK;
}

int
source_query_capture_version(PGconn *conn, int *version)
{
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, SRC, "reading the DDL capture's version",
	                     "SELECT to_regnamespace('tidemark') IS NOT NULL,"
	                     " to_regprocedure('tidemark.capture_version()') IS NOT NULL", 0, NULL,
	                     &r);

	*version = -1;
	if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0)
		*version = 0;
	if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 1), "t") == 0) {
		PQclear(r);
		r = NULL;
		rc = pgconn_exec(conn, SRC, "reading the DDL capture's version",
		                 "SELECT tidemark.capture_version()", 0, NULL, &r);
		if (rc == TM_OK)
			*version = atoi(PQgetvalue(r, 0, 0));
	}
	PQclear(r);
	return rc;
}

const char *
source_query_capture_version_name(int version, char *buf, size_t n)
{
	if (version > 0)
		snprintf(buf, n, "migration %d", version);
	else
		snprintf(buf, n, "from before migration %d", SOURCE_CAPTURE_VERSION_SINCE);
	return buf;
}
