#include "source_query.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"
#include "pgconn.h"
#include "source_wait.h"
#include "strbuf.h"

#define SRC PGCONN_SOURCE

static int
query(PGconn *conn, const char *what, const char *sql, int n, const char *const *p, PGresult **r)
{
	return pgconn_exec(conn, SRC, what, sql, n, p, r);
}

int
source_query_check_server(PGconn *conn)
{
	PGresult *r;
	int rc = query(conn, "checking the server",
	               "SELECT current_setting('server_version_num')::int,"
	               " current_setting('wal_level'),"
	               " (SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user),"
	               " current_user, current_setting('server_encoding')",
	               0, NULL, &r);

	if (rc != TM_OK)
		return rc;
	/* every session of tidemark reads the source in UTF8 (pgconn.c) */
	if (strcmp(PQgetvalue(r, 0, 4), "SQL_ASCII") == 0)
		log_warn("source: the database's encoding is SQL_ASCII, which stores any bytes: tidemark "
		         "reads text as UTF-8, and a value that is not valid UTF-8 stops the copy or the "
		         "stream with an error (SQLSTATE 22021)");
	if (atoi(PQgetvalue(r, 0, 0)) < 150000) {
		log_error("source: PostgreSQL %s is too old: tidemark needs PostgreSQL 15 or later",
		          PQgetvalue(r, 0, 0));
		rc = TM_EXIT_CONFIG;
	} else if (strcmp(PQgetvalue(r, 0, 1), "logical") != 0) {
		log_error("source: wal_level is \"%s\"; logical replication needs wal_level = logical. "
		          "Fix: ALTER SYSTEM SET wal_level = logical; then restart the source server",
		          PQgetvalue(r, 0, 1));
		rc = TM_EXIT_CONFIG;
	} else if (strcmp(PQgetvalue(r, 0, 2), "t") != 0) {
		log_error("source: role \"%s\" may not use replication. Fix: ALTER ROLE \"%s\" "
		          "REPLICATION (and allow it in pg_hba.conf)",
		          PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 3));
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

int
source_query_is_superuser(PGconn *conn, bool *out)
{
	PGresult *r;
	int rc = query(conn, "checking privileges",
	               "SELECT rolsuper FROM pg_roles WHERE rolname = current_user", 0, NULL, &r);

	if (rc == TM_OK) {
		*out = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		PQclear(r);
	}
	return rc;
}

/*
 * The table's definition as the capture describes it
 * (migrations/source/003_table_definition.sql): one description of a table
 * for the capture and for setup, run and verify. Columns 1-4 tell what
 * stops the table from being replicated: REPLICA IDENTITY NOTHING, no key
 * at all without REPLICA IDENTITY FULL (with FULL, a table without a key is
 * replicated by whole rows: keyless.h), for a partition, its root (a
 * partitioned table is replicated as its root), and UNLOGGED (its changes
 * are not in the WAL); column 5, a DEFERRABLE primary key (no replica identity,
 * and not a key: migrations/source/013_deferrable_key.sql).
 */
#define TABLE_DEF_SQL(where)                                                                  \
	"SELECT tidemark.capture_tables(ARRAY[c.oid])::text, c.relreplident,"                     \
	" tidemark.table_keycols(c.oid) IS NOT NULL,"                                             \
	" CASE WHEN c.relispartition THEN (SELECT format('%I.%I', rn.nspname, rc.relname)"      \
	"   FROM pg_class rc JOIN pg_namespace rn ON rn.oid = rc.relnamespace"                    \
	"   WHERE rc.oid = pg_partition_root(c.oid)) END"                                         \
	", c.relpersistence = 'u'"                                                               \
	", EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary"            \
	"   AND NOT i.indimmediate)"                                                              \
	" FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"                          \
	" WHERE " where " AND c.relkind IN ('r', 'p')"

static const char *const table_def_sql = TABLE_DEF_SQL("n.nspname = $1 AND c.relname = $2");
static const char *const table_def_oid_sql = TABLE_DEF_SQL("c.oid = $1::oid");

/* What keeps the table from being replicated, said at level (an error
 * where the user named it; a warning where it came by itself, as a
 * partition detached into a replicated schema): TM_EXIT_CONFIG. */
static int
table_def_errors(PGresult *r, const char *schema, const char *name, log_level level)
{
	strbuf q = STRBUF_INIT;
	int rc = TM_EXIT_CONFIG;

	strbuf_append_qualified(&q, schema, name);
	if (PQntuples(r) == 0)
		log_msg(level, "source: table %s does not exist (or is not an ordinary or partitioned "
		        "table)", q.data);
	else if (!PQgetisnull(r, 0, 3))
		log_msg(level, "source: table %s is a partition of %s: a partitioned table is "
		        "replicated as one table, its root, whose copy and changes include every "
		        "partition. Fix: replicate the root (tidemark setup --table '%s') instead of %s",
		        q.data, PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 3), q.data);
	else if (strcmp(PQgetvalue(r, 0, 4), "t") == 0)
		log_msg(level, "source: table %s is UNLOGGED: its changes are not written to the WAL, "
		        "so the source cannot publish them. Fix: ALTER TABLE %s SET LOGGED; (a table of "
		        "a replicated schema then joins on its own), or leave the table out (setup "
		        "--exclude-table %s)", q.data, q.data, q.data);
	else if (strcmp(PQgetvalue(r, 0, 1), "n") == 0)
		log_msg(level, "source: table %s has REPLICA IDENTITY NOTHING, so the source cannot "
		        "publish its updates and deletes. Fix: ALTER TABLE %s REPLICA IDENTITY DEFAULT;",
		        q.data, q.data);
	else if (strcmp(PQgetvalue(r, 0, 2), "t") != 0 && strcmp(PQgetvalue(r, 0, 1), "f") != 0 &&
	         strcmp(PQgetvalue(r, 0, 5), "t") == 0)
		log_msg(level, "source: table %s has a DEFERRABLE primary key, which PostgreSQL cannot "
		        "use as a replica identity: once published, its updates and deletes would be "
		        "refused on the source. Nor can tidemark match rows by it: inside a transaction "
		        "two rows may hold one key. Fix: ALTER TABLE %s REPLICA IDENTITY FULL; "
		        "(replicated by whole rows, or by a unique index on NOT NULL columns that is not "
		        "deferrable), or leave the table out (setup --exclude-table %s)",
		        q.data, q.data, q.data);
	else if (strcmp(PQgetvalue(r, 0, 2), "t") != 0 && strcmp(PQgetvalue(r, 0, 1), "f") != 0)
		log_msg(level, "source: table %s has no primary key and no unique index on NOT NULL "
		        "columns to match its rows by on the target (one over a generated column does "
		        "not count: logical decoding does not send generated columns), and its REPLICA "
		        "IDENTITY is not FULL, so its updates and deletes would not say which row they "
		        "change. Fix: ALTER TABLE %s REPLICA IDENTITY FULL; (replicated without a key: "
		        "rows are matched by all their columns), or ALTER TABLE %s ADD PRIMARY KEY "
		        "(...); or leave the table out (setup --exclude-table %s)", q.data, q.data,
		        q.data, q.data);
	else
		rc = TM_OK;
	strbuf_free(&q);
	return rc;
}

/* The one table of capture_tables' JSON into a new tabledef. */
static int
table_def_parse(const char *text, tabledef **out)
{
	json_t *arr = json_loads(text, 0, NULL);
	tm_error err = {{0}};
	int rc = TM_OK;

	if (tabledef_from_json(json_array_get(arr, 0), out, &err) != 0) {
		log_error("source: tidemark.capture_tables returned a definition tidemark cannot read: "
		          "%s", err.msg);
		rc = TM_EXIT_INTERNAL;
	}
	json_decref(arr);
	return rc;
}

/* After a failed read of a definition: are tidemark's functions missing
 * on the source (installed by an older tidemark)? Says so, with the fix. */
static bool
definitions_missing(PGconn *conn)
{
	PGresult *r = PQexec(conn, "SELECT to_regprocedure('tidemark.table_keycols(oid)') IS NULL");
	bool missing = PQresultStatus(r) == PGRES_TUPLES_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;

	PQclear(r);
	if (missing)
		log_error("source: tidemark's functions on the source are older than this tidemark. "
		          "Fix: run `tidemark setup` once with a superuser --source (it installs what "
		          "is missing and changes nothing else)");
	return missing;
}

int
source_query_table_def(PGconn *conn, const char *schema, const char *name, tabledef **out)
{
	const char *params[] = {schema, name};
	PGresult *r;
	int rc = query(conn, "reading a table definition", table_def_sql, 2, params, &r);

	if (rc != TM_OK)
		return definitions_missing(conn) ? TM_EXIT_CONFIG : rc;
	rc = table_def_errors(r, schema, name, LOG_ERROR);
	if (rc == TM_OK)
		rc = table_def_parse(PQgetvalue(r, 0, 0), out);
	PQclear(r);
	return rc;
}

/* Runs the read of a definition and of the WAL position inside the open
 * transaction, after the lock. */
static int
def_and_position(PGconn *conn, const source_wait_watch *watch, const char *schema,
                 const char *name, tabledef **out, tm_lsn *at)
{
	const char *params[] = {schema, name};
	strbuf lock = STRBUF_INIT;
	PGresult *r = NULL;
	int rc = query(conn, "looking for a table", "SELECT to_regclass(format('%I.%I', $1::text,"
	               " $2::text)) IS NOT NULL", 2, params, &r);

	if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0) {
		char what[2 * 64 + 48];
		PGresult *l;

		strbuf_append(&lock, "LOCK TABLE ");
		strbuf_append_qualified(&lock, schema, name);
		strbuf_append(&lock, " IN ACCESS SHARE MODE");
		snprintf(what, sizeof what, "locking %s.%s to read its definition", schema, name);
		l = source_wait_run(conn, watch, what, lock.data, 0, NULL);
		if (PQresultStatus(l) == PGRES_FATAL_ERROR &&
		    strcmp(PQresultErrorField(l, PG_DIAG_SQLSTATE) ?: "", "42P01") == 0) {
			log_info("source: table %s.%s was dropped while its definition was read",
			         schema, name);
			rc = TM_EXIT_CONFIG;
		} else if (PQresultStatus(l) != PGRES_COMMAND_OK)
			rc = pgconn_fail(conn, SRC, "locking a table to read its definition", l);
		PQclear(l);
	}
	PQclear(r);
	strbuf_free(&lock);
	if (rc == TM_OK)
		rc = source_query_table_def(conn, schema, name, out);
	if (rc == TM_OK && (rc = query(conn, "reading the current WAL position",
	                               "SELECT pg_current_wal_insert_lsn()", 0, NULL, &r)) == TM_OK) {
		lsn_parse(PQgetvalue(r, 0, 0), at);
		PQclear(r);
	}
	return rc;
}

int
source_query_table_def_at(PGconn *conn, const source_wait_watch *watch, const char *schema,
                          const char *name, tabledef **out, tm_lsn *at)
{
	int rc = pgconn_command(conn, SRC, "starting a read of a definition", "BEGIN", 0, NULL);

	*out = NULL;
	if (rc == TM_OK)
		rc = def_and_position(conn, watch, schema, name, out, at);
	if (rc == TM_OK)
		rc = pgconn_command(conn, SRC, "ending a read of a definition", "COMMIT", 0, NULL);
	if (rc != TM_OK) {
		PQclear(PQexec(conn, "ROLLBACK"));
		tabledef_free(*out);
		*out = NULL;
	}
	return rc;
}

int
source_query_replica_identity(PGconn *conn, const char *schema, const char *name,
                              char *replident, bool *has_key)
{
	const char *params[] = {schema, name};
	PGresult *r;
	int rc = query(conn, "reading a table's replica identity",
	               "SELECT c.relreplident, tidemark.table_keycols(c.oid) IS NOT NULL"
	               " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	               " WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')",
	               2, params, &r);

	if (rc != TM_OK)
		return definitions_missing(conn) ? TM_EXIT_CONFIG : rc;
	*replident = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0)[0] : '\0';
	*has_key = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	PQclear(r);
	return TM_OK;
}

int
source_query_table_def_oid(PGconn *conn, uint32_t relid, tabledef **out)
{
	char oid[16];
	const char *params[] = {oid};
	PGresult *r;
	int rc;

	snprintf(oid, sizeof oid, "%u", relid);
	*out = NULL;
	rc = query(conn, "reading a table definition", table_def_oid_sql, 1, params, &r);
	if (rc != TM_OK)
		return definitions_missing(conn) ? TM_EXIT_CONFIG : rc;
	if (PQntuples(r) == 0 || !PQgetisnull(r, 0, 3)) {
		PQclear(r);
		return TM_OK; /* gone, or a partition */
	}
	rc = table_def_parse(PQgetvalue(r, 0, 0), out);
	if (rc == TM_OK && table_def_errors(r, (*out)->schema, (*out)->name, LOG_WARN) != TM_OK) {
		tabledef_free(*out);
		*out = NULL;
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

int
source_query_schema_tables(PGconn *conn, const char *schema, char ***names, char ***unlogged,
                           char ***no_columns)
{
	const char *params[] = {schema};
	PGresult *r;
	char **arr, **left = NULL, **empty = NULL;
	int n = 0, nleft = 0, nempty = 0;
	/* column 3: no column the stream carries (none but generated ones, or
	 * none at all: CREATE TABLE t (), or every column dropped;
	 * tabledef_nstored) */
	int rc = query(conn, "listing the tables of a schema",
	               "SELECT c.relname, c.relpersistence = 'u',"
	               " NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid"
	               "   AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '')"
	               " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	               " WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
	               " ORDER BY 1",
	               1, params, &r);

	if (rc != TM_OK)
		return rc;
	arr = xcalloc((size_t) PQntuples(r) + 1, sizeof(char *));
	if (unlogged != NULL)
		left = xcalloc((size_t) PQntuples(r) + 1, sizeof(char *));
	if (no_columns != NULL)
		empty = xcalloc((size_t) PQntuples(r) + 1, sizeof(char *));
	for (int i = 0; i < PQntuples(r); i++) {
		if (strcmp(PQgetvalue(r, i, 1), "t") == 0) {
			if (left != NULL)
				left[nleft++] = xstrdup(PQgetvalue(r, i, 0));
		} else if (strcmp(PQgetvalue(r, i, 2), "t") == 0) {
			if (empty != NULL)
				empty[nempty++] = xstrdup(PQgetvalue(r, i, 0));
		} else
			arr[n++] = xstrdup(PQgetvalue(r, i, 0));
	}
	PQclear(r);
	*names = arr;
	if (unlogged != NULL)
		*unlogged = left;
	if (no_columns != NULL)
		*no_columns = empty;
	return TM_OK;
}

static int
publication_exists(PGconn *conn, const char *publication, bool *exists)
{
	const char *params[] = {publication};
	PGresult *r;
	int rc = query(conn, "looking up the publication",
	               "SELECT 1 FROM pg_publication WHERE pubname = $1", 1, params, &r);

	if (rc == TM_OK) {
		*exists = PQntuples(r) > 0;
		PQclear(r);
	}
	return rc;
}

/* Does the publication publish the table (name) or the schema (name NULL)
 * already? A FOR ALL TABLES publication publishes all (but those in its
 * EXCEPT list, which cannot be added to it: check_published says so). */
static int
publication_has(PGconn *conn, const char *publication, const char *schema, const char *name,
                bool *has)
{
	const char *params[] = {publication, schema, name};
	PGresult *r;
	int rc = name != NULL
		? query(conn, "reading the publication's tables",
		        "SELECT p.puballtables OR " SOURCE_QUERY_PUBLISHES("p", "c")
		        " FROM pg_publication p, pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
		        " WHERE p.pubname = $1 AND n.nspname = $2 AND c.relname = $3", 3, params, &r)
		: query(conn, "reading the publication's schemas",
		        "SELECT p.puballtables OR EXISTS (SELECT FROM pg_publication_namespace pn"
		        "   JOIN pg_namespace n ON n.oid = pn.pnnspid"
		        "   WHERE pn.pnpubid = p.oid AND n.nspname = $2)"
		        " FROM pg_publication p WHERE p.pubname = $1", 2, params, &r);

	if (rc == TM_OK) {
		*has = PQntuples(r) > 0 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		PQclear(r);
	}
	return rc;
}

static int
publication_add(PGconn *conn, const char *publication, const char *schema, const char *name)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	strbuf_append(&sql, "ALTER PUBLICATION ");
	strbuf_append_ident(&sql, publication);
	if (name != NULL) {
		/* ONLY: an inheritance child is a table of its own (a partitioned
		 * table's partitions are published through it all the same) */
		strbuf_append(&sql, " ADD TABLE ONLY ");
		strbuf_append_qualified(&sql, schema, name);
	} else {
		strbuf_append(&sql, " ADD TABLES IN SCHEMA ");
		strbuf_append_ident(&sql, schema);
	}
	rc = pgconn_command(conn, SRC, "adding to the publication", sql.data, 0, NULL);
	if (rc == TM_OK)
		log_info("source: publication \"%s\" now includes %s%s%s%s", publication,
		         name ? "table " : "schema ", schema, name ? "." : "", name ? name : "");
	strbuf_free(&sql);
	return rc;
}

static int
publication_add_missing(PGconn *conn, const char *publication, const char *schema,
                        const char *name)
{
	bool has = false;
	int rc = publication_has(conn, publication, schema, name, &has);

	if (rc == TM_OK && !has)
		rc = publication_add(conn, publication, schema, name);
	return rc;
}

int
source_query_ensure_publication(PGconn *conn, const char *publication, tabledef *const *tables,
                                int ntables, const char *const *schemas, int nschemas)
{
	bool exists = false;
	int rc = publication_exists(conn, publication, &exists);

	if (rc == TM_OK && !exists) {
		strbuf sql = STRBUF_INIT;

		strbuf_append(&sql, "CREATE PUBLICATION ");
		strbuf_append_ident(&sql, publication);
		strbuf_append(&sql, " WITH (publish_via_partition_root = true)");
		rc = pgconn_command(conn, SRC, "creating the publication", sql.data, 0, NULL);
		if (rc == TM_OK)
			log_info("source: created publication \"%s\"", publication);
		strbuf_free(&sql);
	} else if (rc == TM_OK)
		rc = source_query_fix_via_root(conn, publication);
	for (int i = 0; rc == TM_OK && i < nschemas; i++)
		rc = publication_add_missing(conn, publication, schemas[i], NULL);
	for (int i = 0; rc == TM_OK && i < ntables; i++) {
		bool in_schema = false;

		for (int j = 0; j < nschemas; j++)
			in_schema |= strcmp(schemas[j], tables[i]->schema) == 0;
		if (!in_schema)
			rc = publication_add_missing(conn, publication, tables[i]->schema, tables[i]->name);
	}
	return rc;
}

static int create_slot(PGconn *conn, const char *conninfo, const char *slot, bool *created,
                       tm_lsn *lsn);
/* Who may add the table: the owner of the publication who also owns the
 * table (PostgreSQL's rule for ALTER PUBLICATION ... ADD TABLE). */
static void
explain_publish_privilege(const PGresult *r, const char *publication, const char *why)
{
	strbuf fix = STRBUF_INIT;

	strbuf_append(&fix, "ALTER PUBLICATION ");
	strbuf_append_ident(&fix, publication);
	strbuf_append(&fix, " ADD TABLE ONLY ");
	strbuf_append_qualified(&fix, PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3));
	log_error("source: table %s.%s %s the publication \"%s\" and must be added to it by name "
	          "to be replicated, but role \"%s\" may not: adding a table "
	          "to a publication takes the publication's owner (\"%s\") who also owns the table "
	          "(\"%s\"). Fix: as a superuser, run `%s;` (or make this role a member of both "
	          "owners: GRANT \"%s\" TO \"%s\"; GRANT \"%s\" TO \"%s\";), then start "
	          "tidemark run again: the table is then copied again in place, nothing is lost",
	          PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3), why, publication, PQgetvalue(r, 0, 8),
	          PQgetvalue(r, 0, 6), PQgetvalue(r, 0, 7), strbuf_str(&fix), PQgetvalue(r, 0, 6),
	          PQgetvalue(r, 0, 8), PQgetvalue(r, 0, 7), PQgetvalue(r, 0, 8));
	strbuf_free(&fix);
}

int
source_query_publish_table(PGconn *conn, const char *publication, uint32_t relid,
                           const char *why, source_publish *out)
{
	char oid[16];
	const char *params[] = {publication, oid};
	PGresult *r = NULL;
	int rc;

	snprintf(oid, sizeof oid, "%u", relid);
	*out = SOURCE_PUBLISH_GONE;
	rc = query(conn, "reading the publication and the table",
	           "SELECT p.puballtables, EXISTS (SELECT FROM pg_publication_rel pr"
	           "   WHERE pr.prpubid = p.oid AND pr.prrelid = c.oid), n.nspname, c.relname,"
	           " pg_has_role(p.pubowner, 'USAGE'), pg_has_role(c.relowner, 'USAGE'),"
	           " pg_get_userbyid(p.pubowner), pg_get_userbyid(c.relowner), current_user"
	           " FROM pg_publication p, pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	           " WHERE p.pubname = $1 AND c.oid = $2::oid", 2, params, &r);
	if (rc != TM_OK || PQntuples(r) == 0) {
		PQclear(r);
		return rc;
	}
	if (strcmp(PQgetvalue(r, 0, 0), "t") == 0)
		*out = SOURCE_PUBLISH_ALL_TABLES;
	else if (strcmp(PQgetvalue(r, 0, 1), "t") == 0)
		*out = SOURCE_PUBLISH_MEMBER;
	else if (strcmp(PQgetvalue(r, 0, 4), "t") != 0 || strcmp(PQgetvalue(r, 0, 5), "t") != 0) {
		explain_publish_privilege(r, publication, why);
		rc = TM_EXIT_CONFIG;
	} else if ((rc = publication_add(conn, publication, PQgetvalue(r, 0, 2),
	                                 PQgetvalue(r, 0, 3))) == TM_OK)
		*out = SOURCE_PUBLISH_ADDED;
	PQclear(r);
	return rc;
}

int
source_query_keep_published(PGconn *conn, const char *publication, uint32_t relid, bool *recopy)
{
	source_publish found = SOURCE_PUBLISH_GONE;
	int rc = source_query_publish_table(conn, publication, relid,
	                                    "left the schemas covered by", &found);

	*recopy = rc == TM_OK && (found == SOURCE_PUBLISH_MEMBER || found == SOURCE_PUBLISH_ADDED);
	return rc;
}

int
source_query_publish_joining(PGconn *conn, const char *publication, const tabledef *def,
                             bool by_schema, bool *added)
{
	char oid[16];
	const char *params[] = {publication, oid, by_schema ? def->schema : NULL};
	PGresult *r = NULL;
	int rc;

	/* read now, by oid: the stream may be far behind, and since the table
	 * joined it may have been dropped, attached as a partition (published
	 * through its root) or moved out of the schema (SET SCHEMA then says
	 * what becomes of it) */
	snprintf(oid, sizeof oid, "%u", def->relid);
	rc = query(conn, "reading whether the publication publishes the table",
	           "SELECT c.oid IS NULL OR c.relispartition"
	           "  OR ($3::text IS NOT NULL AND c.relnamespace IS DISTINCT FROM"
	           "   to_regnamespace(quote_ident($3::text)))"
	           "  OR " SOURCE_QUERY_PUBLISHES("p", "c") ","
	           " (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
	           " FROM pg_publication p LEFT JOIN pg_class c ON c.oid = $2::oid"
	           " WHERE p.pubname = $1", 3, params, &r);
	bool published = rc != TM_OK || PQntuples(r) == 0 || strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	bool super = rc == TM_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	source_publish found = SOURCE_PUBLISH_GONE;
	strbuf fix = STRBUF_INIT;

	PQclear(r);
	*added = false;
	if (published)
		return rc;
	if (!by_schema) {
		rc = source_query_publish_table(conn, publication, def->relid, "took the name of a "
		                                "replicated table (dropped, or renamed away); it is not in",
		                                &found);
		*added = rc == TM_OK && found == SOURCE_PUBLISH_ADDED;
		return rc;
	}
	strbuf_append(&fix, "ALTER PUBLICATION ");
	strbuf_append_ident(&fix, publication);
	strbuf_append(&fix, " ADD TABLES IN SCHEMA ");
	strbuf_append_ident(&fix, def->schema);
	if (!super) {
		log_error("source: new table %s.%s of replicated schema %s is not published: the "
		          "schema is no longer in publication \"%s\" (DROP SCHEMA takes a schema out "
		          "of its publications, and one created again under the name is in none), and "
		          "only a superuser may add a schema to a publication. Fix: as a superuser, run "
		          "`%s;`, then start tidemark run again: nothing is lost, the table is copied",
		          def->schema, def->name, def->schema, publication, strbuf_str(&fix));
		rc = TM_EXIT_CONFIG;
	} else if ((rc = publication_add(conn, publication, def->schema, NULL)) == TM_OK)
		*added = true;
	strbuf_free(&fix);
	return rc;
}

int
source_query_ensure_slot(PGconn *conn, const char *conninfo, const char *slot, bool *created,
                         tm_lsn *lsn)
{
	const char *params[] = {slot};
	PGresult *r;
	int rc = query(conn, "looking up the replication slot",
	               "SELECT plugin, confirmed_flush_lsn, wal_status, database = current_database()"
	               " FROM pg_replication_slots WHERE slot_name = $1", 1, params, &r);

	if (rc != TM_OK)
		return rc;
	if (PQntuples(r) == 1) {
		if (strcmp(PQgetvalue(r, 0, 0), "pgoutput") != 0 || strcmp(PQgetvalue(r, 0, 3), "t") != 0) {
			log_error("source: replication slot \"%s\" exists but is not a pgoutput slot of this "
			          "database. Fix: choose another name with --slot", slot);
			rc = TM_EXIT_CONFIG;
		} else if (strcmp(PQgetvalue(r, 0, 2), "lost") == 0) {
			source_query_explain_slot(conn, slot);
			rc = TM_EXIT_SOURCE;
		} else {
			*created = false;
			lsn_parse(PQgetvalue(r, 0, 1), lsn);
		}
		PQclear(r);
		return rc;
	}
	PQclear(r);
	return create_slot(conn, conninfo, slot, created, lsn);
}

/* A new pgoutput slot; on PostgreSQL 17 and later a failover slot. */
static int
create_slot(PGconn *conn, const char *conninfo, const char *slot, bool *created, tm_lsn *lsn)
{
	const char *params[] = {slot};
	bool failover = PQserverVersion(conn) >= 170000;
	source_wait_watch watch = {conninfo, NULL, NULL};
	PGresult *r;
	int rc;

	log_info("source: creating replication slot \"%s\"%s (waits for running transactions to "
	         "finish)", slot, failover ? " as a failover slot" : "");
	rc = source_wait_exec(conn, &watch, "creating the replication slot",
	                      failover ? "SELECT lsn FROM pg_create_logical_replication_slot($1,"
	                                 " 'pgoutput', failover => true)"
	                               : "SELECT lsn FROM pg_create_logical_replication_slot($1,"
	                                 " 'pgoutput')",
	                      1, params, &r);
	if (rc != TM_OK)
		return rc;
	lsn_parse(PQgetvalue(r, 0, 0), lsn);
	*created = true;
	PQclear(r);
	return TM_OK;
}

int
source_query_slot_state(PGconn *conn, const char *slot, source_slot_state *out)
{
	const char *params[] = {slot};
	PGresult *r;
	/* columns of 17 and later read through to_jsonb: absent before */
	int rc = query(conn, "reading the replication slot",
	               "SELECT current_setting('server_version_num')::int, pg_is_in_recovery(),"
	               " CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()"
	               "   ELSE pg_current_wal_lsn() END,"
	               " s.slot_name IS NOT NULL,"
	               " s.plugin = 'pgoutput' AND s.database = current_database(),"
	               " coalesce(to_jsonb(s) ->> 'invalidation_reason',"
	               "   CASE WHEN s.wal_status = 'lost' THEN 'wal_removed' END),"
	               " s.confirmed_flush_lsn, s.active_pid,"
	               " coalesce(to_jsonb(s) ->> 'failover', ''), coalesce(to_jsonb(s) ->> 'synced', '')"
	               " FROM (SELECT 1) one LEFT JOIN pg_replication_slots s ON s.slot_name = $1",
	               1, params, &r);

	memset(out, 0, sizeof *out);
	if (rc != TM_OK)
		return rc;
	out->server_version = atoi(PQgetvalue(r, 0, 0));
	out->in_recovery = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	lsn_parse(PQgetvalue(r, 0, 2), &out->wal_end);
	out->exists = strcmp(PQgetvalue(r, 0, 3), "t") == 0;
	out->ours = strcmp(PQgetvalue(r, 0, 4), "t") == 0;
	out->invalidated = !PQgetisnull(r, 0, 5);
	snprintf(out->reason, sizeof out->reason, "%s", PQgetvalue(r, 0, 5));
	lsn_parse(PQgetvalue(r, 0, 6), &out->confirmed);
	out->active_pid = atoi(PQgetvalue(r, 0, 7));
	out->failover = strcmp(PQgetvalue(r, 0, 8), "true") == 0;
	out->synced = strcmp(PQgetvalue(r, 0, 9), "true") == 0;
	PQclear(r);
	return TM_OK;
}

static long long
bytes_or_none(const PGresult *r, int col)
{
	return PQgetisnull(r, 0, col) ? -1 : strtoll(PQgetvalue(r, 0, col), NULL, 10);
}

int
source_query_slot_wal(PGconn *conn, const char *slot, slot_wal *out)
{
	const char *params[] = {slot};
	PGresult *r;
	int rc = query(conn, "reading what the replication slot keeps of the WAL",
	               "SELECT s.slot_name IS NOT NULL,"
	               " pg_wal_lsn_diff(pg_current_wal_lsn(), s.restart_lsn)::bigint,"
	               " coalesce(s.wal_status, ''), s.safe_wal_size,"
	               " nullif(pg_size_bytes(current_setting('max_slot_wal_keep_size')), -1)"
	               " FROM (SELECT 1) one LEFT JOIN pg_replication_slots s ON s.slot_name = $1",
	               1, params, &r);

	memset(out, 0, sizeof *out);
	if (rc != TM_OK)
		return rc;
	out->exists = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	out->retained = bytes_or_none(r, 1);
	snprintf(out->status, sizeof out->status, "%s", PQgetvalue(r, 0, 2));
	out->safe = bytes_or_none(r, 3);
	out->keep = bytes_or_none(r, 4);
	PQclear(r);
	return TM_OK;
}

const char *
source_query_invalidation_text(const char *reason)
{
	static const struct {
		const char *reason, *text;
	} known[] = {
		{"wal_removed", "the source removed WAL the slot still needed (max_slot_wal_keep_size)"},
		{"rows_removed", "catalog rows the slot needed were removed (a conflict on a standby)"},
		{"wal_level_insufficient", "wal_level on the source was set below logical"},
		{"idle_timeout", "the slot was idle longer than idle_replication_slot_timeout"},
	};

	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (strcmp(reason, known[i].reason) == 0)
			return known[i].text;
	return "the source says so";
}

int
source_query_drop_slot(PGconn *conn, const char *slot)
{
	const char *params[] = {slot};

	return pgconn_command(conn, SRC, "dropping the invalidated replication slot",
	                      "SELECT pg_drop_replication_slot($1)", 1, params);
}

int
source_query_capture_key(PGconn *conn, char **hex)
{
	PGresult *r;
	int rc = query(conn, "reading the capture key",
	               "SELECT encode(key, 'hex') FROM tidemark.capture_key", 0, NULL, &r);

	*hex = NULL;
	if (rc == TM_OK) {
		if (PQntuples(r) == 1)
			*hex = xstrdup(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	return rc;
}

int
source_query_slot_exists(PGconn *conn, const char *slot, bool *exists)
{
	const char *params[] = {slot};
	PGresult *r;
	int rc = query(conn, "looking up the replication slot",
	               "SELECT FROM pg_replication_slots WHERE slot_name = $1", 1, params, &r);

	if (rc == TM_OK) {
		*exists = PQntuples(r) > 0;
		PQclear(r);
	}
	return rc;
}

int
source_query_current_lsn(PGconn *conn, tm_lsn *out)
{
	PGresult *r;
	int rc = query(conn, "reading the current WAL position", "SELECT pg_current_wal_lsn()", 0,
	               NULL, &r);

	if (rc == TM_OK) {
		lsn_parse(PQgetvalue(r, 0, 0), out);
		PQclear(r);
	}
	return rc;
}

int
source_query_next_xid(PGconn *conn, uint64_t *out)
{
	PGresult *r;
	int rc = query(conn, "reading the next transaction id",
	               "SELECT pg_snapshot_xmax(pg_current_snapshot())::text", 0, NULL, &r);

	if (rc == TM_OK) {
		*out = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
		PQclear(r);
	}
	return rc;
}

int
source_query_xact_status(PGconn *conn, uint64_t xid, char *out, size_t outlen)
{
	char text[24];
	const char *params[] = {text};
	PGresult *r;
	int rc;

	snprintf(text, sizeof text, "%llu", (unsigned long long) xid);
	rc = query(conn, "reading a transaction's status",
	           "SELECT coalesce(pg_xact_status($1::text::xid8), 'unknown')", 1, params, &r);
	if (rc == TM_OK) {
		snprintf(out, outlen, "%s", PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	return rc;
}

int
source_query_emit(PGconn *conn, const char *prefix, const char *content, tm_lsn *lsn)
{
	const char *params[] = {prefix, content};
	PGresult *r;
	int rc = query(conn, "writing a message into the WAL",
	               "SELECT pg_logical_emit_message(true, $1, $2)", 2, params, &r);

	if (rc == TM_OK) {
		if (lsn != NULL)
			lsn_parse(PQgetvalue(r, 0, 0), lsn);
		PQclear(r);
	}
	return rc;
}

void
source_query_explain_slot(PGconn *conn, const char *slot)
{
	source_slot_state st;

	if (source_query_slot_state(conn, slot, &st) != TM_OK)
		return;
	if (!st.exists)
		log_error("source: replication slot \"%s\" does not exist on this server: a failover to "
		          "a standby that did not have it (PostgreSQL before 17 keeps no logical slot on "
		          "a standby; from 17 only a failover slot synced to the standby survives), or "
		          "it was dropped. The changes since the target's position cannot be streamed. "
		          "Fix: `tidemark resync` (creates the slot again and copies every table again "
		          "in place, while the target stays queryable)", slot);
	else if (st.invalidated)
		log_error("source: replication slot \"%s\" is invalidated (%s: %s): the source no "
		          "longer keeps the changes the target still needs. Fix: `tidemark resync` "
		          "(creates the slot again and copies every table again in place, while the "
		          "target stays queryable)", slot, st.reason,
		          source_query_invalidation_text(st.reason));
	else if (st.active_pid != 0)
		log_error("source: replication slot \"%s\" is in use by the process with pid %d "
		          "(another tidemark run?). Fix: stop that process, or use another --slot", slot,
		          st.active_pid);
}
