#include "keyless_stage.h"
#include "xalloc.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyless_sql.h"
#include "log.h"
#include "pgconn.h"
#include "sink.h"
#include "strbuf.h"

#define TGT PGCONN_TARGET

struct keyless_stage {
	char *conninfo;      /* owned */
	PGconn *conn;        /* owned; NULL until the first begin (or after a broken one) */
	bool in_copy;
	bool in_tx;
};

int
keyless_stage_open(const char *conninfo, keyless_stage **out)
{
	keyless_stage *st = xcalloc(1, sizeof *st);

	st->conninfo = xstrdup(conninfo);
	*out = st;
	return TM_OK;
}

void
keyless_stage_close(keyless_stage *st)
{
	if (st == NULL)
		return;
	PQfinish(st->conn);
	free(st->conninfo);
	free(st);
}

static int
connect_target(keyless_stage *st)
{
	int rc;

	if (st->conn != NULL && PQstatus(st->conn) == CONNECTION_OK)
		return TM_OK;
	PQfinish(st->conn);
	st->conn = NULL;
	rc = pgconn_open(st->conninfo, TGT, "snapshot", false, &st->conn);
	if (rc == TM_OK)
		rc = pgconn_command(st->conn, TGT, "configuring the staging session",
		                    "SELECT set_config('synchronous_commit', 'off', false),"
		                    " set_config('lock_timeout', '" SINK_LOCK_WAIT "', false)", 0, NULL);
	return rc;
}

/* Does the target table have every column read? It may not have them
 * yet: the source's columns changed (ALTER TABLE ... ADD COLUMN) and the
 * stream has not brought the change to the target. */
static int
target_has_columns(keyless_stage *st, const char *schema, const char *table, int ncols,
                   const char *const *cols, bool *has)
{
	char *name, *names;
	PGresult *r = NULL;
	int rc;

	keyless_sql_has_columns_params(schema, table, ncols, cols, &name, &names);
	rc = pgconn_exec(st->conn, TGT, "reading the columns of a target table",
	                 KEYLESS_SQL_HAS_COLUMNS, 2, (const char *const[]) {name, names}, &r);
	*has = rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	free(name);
	free(names);
	return rc;
}

/* The staging table anew, with the target table's types of the columns. */
static int
create_stage(keyless_stage *st, int table_id, const char *schema, const char *table, int ncols,
             const char *const *cols)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	strbuf_append(&sql, "DROP TABLE IF EXISTS ");
	keyless_sql_stage_name(&sql, table_id);
	rc = pgconn_command(st->conn, TGT, "dropping a staging table", sql.data, 0, NULL);
	strbuf_reset(&sql);
	strbuf_append(&sql, "CREATE UNLOGGED TABLE ");
	keyless_sql_stage_name(&sql, table_id);
	strbuf_append(&sql, " AS SELECT ");
	keyless_sql_columns(&sql, ncols, cols);
	strbuf_append(&sql, " FROM ");
	strbuf_append_qualified(&sql, schema, table);
	strbuf_append(&sql, " WITH NO DATA");
	if (rc == TM_OK)
		rc = pgconn_command(st->conn, TGT, "creating a staging table", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
}

static int
start_copy(keyless_stage *st, int table_id, int ncols, const char *const *cols, bool binary)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r;
	int rc = TM_OK;

	strbuf_append(&sql, "COPY ");
	keyless_sql_stage_name(&sql, table_id);
	keyless_sql_column_list(&sql, ncols, cols);
	strbuf_append(&sql, binary ? " FROM STDIN (FORMAT binary)" : " FROM STDIN");
	r = PQexec(st->conn, sql.data);
	if (PQresultStatus(r) != PGRES_COPY_IN)
		rc = pgconn_fail(st->conn, TGT, "starting the COPY into a staging table", r);
	else
		st->in_copy = true;
	PQclear(r);
	strbuf_free(&sql);
	return rc;
}

/* *gone: the target table has no longer the name the read was given (the
 * stream renamed, moved or dropped it meanwhile): nothing logged. */
static int
lock_target(keyless_stage *st, const char *schema, const char *table, bool *gone)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r;
	int rc = TM_OK;

	*gone = false;
	strbuf_append(&sql, "LOCK TABLE ");
	strbuf_append_qualified(&sql, schema, table);
	strbuf_append(&sql, " IN ACCESS SHARE MODE");
	r = PQexec(st->conn, sql.data);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

		*gone = state != NULL && strcmp(state, "42P01") == 0;
		if (!*gone)
			rc = pgconn_fail(st->conn, TGT, "locking a target table to stage its rows", r);
	}
	PQclear(r);
	strbuf_free(&sql);
	return rc;
}

int
keyless_stage_begin(keyless_stage *st, int table_id, const char *target_schema,
                    const char *target_table, int ncols, const char *const *cols, bool binary,
                    bool *behind)
{
	bool has = false, gone = false;
	int rc = connect_target(st);

	*behind = false;
	if (rc == TM_OK)
		rc = pgconn_command(st->conn, TGT, "starting a staging transaction", "BEGIN", 0, NULL);
	st->in_tx = rc == TM_OK;
	/* the staging table's CREATE ... AS SELECT holds this lock anyway: the
	 * target's columns stay as looked at until the staging commits */
	if (rc == TM_OK)
		rc = lock_target(st, target_schema, target_table, &gone);
	if (rc == TM_OK && !gone)
		rc = target_has_columns(st, target_schema, target_table, ncols, cols, &has);
	if (rc == TM_OK && !has) {
		keyless_stage_abort(st);
		*behind = true;
		return TM_OK;
	}
	if (rc == TM_OK)
		rc = create_stage(st, table_id, target_schema, target_table, ncols, cols);
	if (rc == TM_OK)
		rc = start_copy(st, table_id, ncols, cols, binary);
	if (rc != TM_OK)
		keyless_stage_abort(st);
	return rc;
}

int
keyless_stage_data(keyless_stage *st, const char *buf, int len)
{
	if (PQputCopyData(st->conn, buf, len) != 1)
		return pgconn_fail(st->conn, TGT, "sending rows to a staging table", NULL);
	return TM_OK;
}

/* A value the staging table's type does not take (its text or binary
 * form refused, out of range, too long, not a date): the COPY's error,
 * kept for the caller instead of logged. Other data exceptions (a value
 * not valid in the encoding, say) are failures of their own. */
static bool
value_refused(const PGresult *r)
{
	static const char *const states[] = {"22P02", "22P03", "22003", "22001", "22007", "22008"};
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

	for (size_t i = 0; state != NULL && i < sizeof states / sizeof states[0]; i++)
		if (strcmp(state, states[i]) == 0)
			return true;
	return false;
}

int
keyless_stage_commit(keyless_stage *st, long long *rows, char **refused)
{
	PGresult *r;
	int rc = TM_OK;

	*rows = 0;
	*refused = NULL;
	if (PQputCopyEnd(st->conn, NULL) != 1)
		rc = pgconn_fail(st->conn, TGT, "ending the COPY into a staging table", NULL);
	st->in_copy = false;
	while ((r = PQgetResult(st->conn)) != NULL) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == TM_OK && *refused == NULL &&
		    value_refused(r))
			*refused = xstrdup(PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
			                       ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
			                       : PQresultErrorMessage(r));
		else if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == TM_OK && *refused == NULL)
			rc = pgconn_fail(st->conn, TGT, "loading rows into a staging table", r);
		else if (rc == TM_OK && *refused == NULL)
			*rows = atoll(PQcmdTuples(r));
		PQclear(r);
	}
	if (*refused != NULL) {
		keyless_stage_abort(st);
		return TM_OK;
	}
	if (rc == TM_OK)
		rc = pgconn_command(st->conn, TGT, "committing a staging table", "COMMIT", 0, NULL);
	st->in_tx = false;
	if (rc != TM_OK)
		keyless_stage_abort(st);
	return rc;
}

void
keyless_stage_abort(keyless_stage *st)
{
	PGresult *r;

	if (st->conn == NULL)
		return;
	if (st->in_copy && PQputCopyEnd(st->conn, "the source read failed") == 1)
		while ((r = PQgetResult(st->conn)) != NULL)
			PQclear(r);
	st->in_copy = false;
	if (st->in_tx && PQstatus(st->conn) == CONNECTION_OK)
		PQclear(PQexec(st->conn, "ROLLBACK"));
	st->in_tx = false;
	if (PQstatus(st->conn) != CONNECTION_OK) {
		PQfinish(st->conn);
		st->conn = NULL;
	}
}
