#include "source_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"
#include "pgconn.h"
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
	               " current_user",
	               0, NULL, &r);

	if (rc != TM_OK)
		return rc;
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
 * One row per replicated column. The key: the replica identity index when
 * the table uses one, else the primary key. Generated columns are left out
 * (pgoutput does not send them).
 */
static const char *const table_def_sql =
	"WITH rel AS ("
	"  SELECT c.oid, c.relreplident,"
	"    coalesce((SELECT i.indkey::int2[] FROM pg_index i"
	"              WHERE i.indrelid = c.oid AND i.indisreplident AND c.relreplident = 'i'),"
	"             (SELECT i.indkey::int2[] FROM pg_index i"
	"              WHERE i.indrelid = c.oid AND i.indisprimary)) AS keycols"
	"  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	"  WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p'))"
	" SELECT rel.oid, rel.relreplident, rel.keycols IS NOT NULL,"
	"  a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.atttypid, a.atttypmod,"
	"  a.attnotnull, coalesce(a.attnum = ANY (rel.keycols), false),"
	"  CASE WHEN t.typnamespace = 'pg_catalog'::regnamespace"
	"        OR e.typnamespace = 'pg_catalog'::regnamespace"
	"       THEN format_type(a.atttypid, a.atttypmod)"
	"       WHEN t.typtype = 'd' AND b.typnamespace = 'pg_catalog'::regnamespace"
	"       THEN format_type(t.typbasetype, t.typtypmod)"
	"       WHEN t.typcategory = 'A' THEN 'text[]'"
	"       ELSE 'text' END"
	" FROM rel LEFT JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum > 0"
	"  AND NOT a.attisdropped AND a.attgenerated = ''"
	" LEFT JOIN pg_type t ON t.oid = a.atttypid"
	" LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'"
	" LEFT JOIN pg_type b ON b.oid = t.typbasetype"
	" ORDER BY a.attnum";

static int
table_def_errors(PGresult *r, const char *schema, const char *name)
{
	strbuf q = STRBUF_INIT;
	int rc = TM_OK;

	strbuf_append_qualified(&q, schema, name);
	if (PQntuples(r) == 0) {
		log_error("source: table %s does not exist (or is not an ordinary or partitioned "
		          "table)", q.data);
		rc = TM_EXIT_CONFIG;
	} else if (strcmp(PQgetvalue(r, 0, 2), "t") != 0) {
		log_error("source: table %s has no primary key and no replica identity index, so its "
		          "rows cannot be matched on the target. Fix: ALTER TABLE %s ADD PRIMARY KEY "
		          "(...); or create a unique index on NOT NULL columns and ALTER TABLE %s "
		          "REPLICA IDENTITY USING INDEX that_index;", q.data, q.data, q.data);
		rc = TM_EXIT_CONFIG;
	} else if (strcmp(PQgetvalue(r, 0, 1), "n") == 0) {
		log_error("source: table %s has REPLICA IDENTITY NOTHING, so the source cannot publish "
		          "its updates and deletes. Fix: ALTER TABLE %s REPLICA IDENTITY DEFAULT;",
		          q.data, q.data);
		rc = TM_EXIT_CONFIG;
	}
	strbuf_free(&q);
	return rc;
}

int
source_query_table_def(PGconn *conn, const char *schema, const char *name, tabledef **out)
{
	const char *params[] = {schema, name};
	tabledef *t;
	PGresult *r;
	int rc = query(conn, "reading a table definition", table_def_sql, 2, params, &r);

	if (rc != TM_OK)
		return rc;
	rc = table_def_errors(r, schema, name);
	if (rc != TM_OK) {
		PQclear(r);
		return rc;
	}
	t = tabledef_new(schema, name, (uint32_t) strtoul(PQgetvalue(r, 0, 0), NULL, 10));
	for (int i = 0; i < PQntuples(r); i++) {
		if (PQgetisnull(r, i, 3))
			continue; /* a table with no columns */
		tabledef_column *c = tabledef_add_column(
			t, atoi(PQgetvalue(r, i, 3)), PQgetvalue(r, i, 4), PQgetvalue(r, i, 5),
			(uint32_t) strtoul(PQgetvalue(r, i, 6), NULL, 10), atoi(PQgetvalue(r, i, 7)),
			strcmp(PQgetvalue(r, i, 8), "t") == 0, strcmp(PQgetvalue(r, i, 9), "t") == 0);

		tabledef_set_target_type(c, PQgetvalue(r, i, 10));
	}
	PQclear(r);
	*out = t;
	return TM_OK;
}

int
source_query_schema_tables(PGconn *conn, const char *schema, char ***names)
{
	const char *params[] = {schema};
	PGresult *r;
	char **arr;
	int rc = query(conn, "listing the tables of a schema",
	               "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	               " WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition"
	               " ORDER BY 1",
	               1, params, &r);

	if (rc != TM_OK)
		return rc;
	arr = calloc((size_t) PQntuples(r) + 1, sizeof(char *));
	if (arr == NULL)
		abort();
	for (int i = 0; i < PQntuples(r); i++)
		arr[i] = strdup(PQgetvalue(r, i, 0));
	PQclear(r);
	*names = arr;
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

static int
publication_has(PGconn *conn, const char *publication, const char *schema, const char *name,
                bool *has)
{
	const char *params[] = {publication, schema, name};
	PGresult *r;
	int rc = name != NULL
		? query(conn, "reading the publication's tables",
		        "SELECT 1 FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid"
		        " JOIN pg_class c ON c.oid = pr.prrelid"
		        " JOIN pg_namespace n ON n.oid = c.relnamespace"
		        " WHERE p.pubname = $1 AND n.nspname = $2 AND c.relname = $3", 3, params, &r)
		: query(conn, "reading the publication's schemas",
		        "SELECT 1 FROM pg_publication_namespace pn"
		        " JOIN pg_publication p ON p.oid = pn.pnpubid"
		        " JOIN pg_namespace n ON n.oid = pn.pnnspid"
		        " WHERE p.pubname = $1 AND n.nspname = $2", 2, params, &r);

	if (rc == TM_OK) {
		*has = PQntuples(r) > 0;
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
		strbuf_append(&sql, " ADD TABLE ");
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
	}
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

int
source_query_ensure_slot(PGconn *conn, const char *slot, bool *created, tm_lsn *lsn)
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
	log_info("source: creating replication slot \"%s\" (waits for running transactions to "
	         "finish)", slot);
	rc = query(conn, "creating the replication slot",
	           "SELECT lsn FROM pg_create_logical_replication_slot($1, 'pgoutput')", 1, params, &r);
	if (rc != TM_OK)
		return rc;
	lsn_parse(PQgetvalue(r, 0, 0), lsn);
	*created = true;
	PQclear(r);
	return TM_OK;
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
	const char *params[] = {slot};
	PGresult *r = PQexecParams(conn,
	                           "SELECT active_pid, wal_status FROM pg_replication_slots"
	                           " WHERE slot_name = $1", 1, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) == 0)
		log_error("source: replication slot \"%s\" does not exist (dropped?). Fix: run "
		          "`tidemark setup` again; it creates the slot, and the tables are copied again",
		          slot);
	else if (strcmp(PQgetvalue(r, 0, 1), "lost") == 0)
		log_error("source: replication slot \"%s\" is invalidated: the source removed WAL it "
		          "still needed (max_slot_wal_keep_size). Changes were lost, so the target "
		          "must be copied again. Fix: `tidemark teardown`, then `tidemark setup` with "
		          "the same tables, then `tidemark run` (every table is re-snapshotted)", slot);
	else if (!PQgetisnull(r, 0, 0))
		log_error("source: replication slot \"%s\" is in use by the process with pid %s (another "
		          "tidemark run?). Fix: stop that process, or use another --slot", slot,
		          PQgetvalue(r, 0, 0));
	PQclear(r);
}
