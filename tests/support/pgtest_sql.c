/*
 * pgtest_sql.c: connecting, running SQL and waiting for query results.
 */
#include "pgtest_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Shows warnings and errors the server sends; drops its notices. */
static void
notice_receiver(void *arg, const PGresult *res)
{
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);

	(void) arg;
	if (severity != NULL && strcmp(severity, "NOTICE") != 0 && strcmp(severity, "INFO") != 0
		&& strcmp(severity, "LOG") != 0 && strncmp(severity, "DEBUG", 5) != 0)
		fprintf(stderr, "pgtest: server %s", PQresultErrorMessage(res));
}

PGconn *
pgtest_connect_at(const char *file, int line, const char *conninfo)
{
	PGconn *conn = PQconnectdb(conninfo);

	if (conn == NULL)
		abort();
	if (PQstatus(conn) != CONNECTION_OK) {
		char *msg = pgt_strdup(PQerrorMessage(conn));

		PQfinish(conn);
		pgt_fail_soft(file, line, "cannot connect to %s: %s", conninfo, msg);
		free(msg);
		return NULL;
	}
	PQsetNoticeReceiver(conn, notice_receiver, NULL);
	return conn;
}

/* The harness runs no COPY: ends one that a statement started. */
static void
abandon_copy(PGconn *conn, ExecStatusType st)
{
	PGresult *res;
	char *buf;

	if (st == PGRES_COPY_IN)
		PQputCopyEnd(conn, "COPY is not supported by the test harness");
	else if (st == PGRES_COPY_OUT)
		while (PQgetCopyData(conn, &buf, 0) > 0)
			PQfreemem(buf);
	else
		return;
	while ((res = PQgetResult(conn)) != NULL)
		PQclear(res);
}

PGresult *
pgt_run_sql(PGconn *conn, const char *sql, char **err)
{
	PGresult *res = PQexec(conn, sql);
	ExecStatusType st = PQresultStatus(res);

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		return res;
	if (err != NULL) {
		const char *msg = res ? PQresultErrorMessage(res) : PQerrorMessage(conn);

		*err = pgt_strdup(msg[0] ? msg : "COPY is not supported by the test harness\n");
	}
	PQclear(res);
	abandon_copy(conn, st);
	if (pgt_in_workload())
		pgt_workload_count_error();
	return NULL;
}

/* Formats and runs SQL; on failure reports it (softly on a workload thread)
 * and returns NULL. */
static PGresult *
vexec(const char *file, int line, PGconn *conn, const char *fmt, va_list ap)
{
	char *sql = pgt_vformat(fmt, ap);
	char *err = NULL;
	PGresult *res = pgt_run_sql(conn, sql, &err);

	if (res == NULL && !pgt_in_workload()) {
		char *msg = pgt_format("%s    in: %s", err, sql);

		free(err);
		free(sql);
		pgt_fail(file, line, "%s", msg);
	}
	free(err);
	free(sql);
	return res;
}

void
pgtest_exec_at(const char *file, int line, PGconn *conn, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	PQclear(vexec(file, line, conn, fmt, ap));
	va_end(ap);
}

char *
pgtest_exec_error(PGconn *conn, const char *fmt, ...)
{
	va_list ap;
	char *sql, *err = NULL;

	va_start(ap, fmt);
	sql = pgt_vformat(fmt, ap);
	va_end(ap);
	PQclear(pgt_run_sql(conn, sql, &err));
	free(sql);
	return err;
}

/* The single value of res (the caller's), or NULL; reports a result of
 * another shape. Clears res. */
static char *
single_value(const char *file, int line, PGresult *res)
{
	char *v = NULL;

	if (res == NULL)
		return NULL;
	if (PQnfields(res) != 1 || PQntuples(res) > 1) {
		int rows = PQntuples(res), cols = PQnfields(res);

		PQclear(res);
		pgt_fail_soft(file, line, "expected one value, got %d rows of %d columns", rows, cols);
		return NULL;
	}
	if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		v = pgt_strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

char *
pgtest_query_value_at(const char *file, int line, PGconn *conn, const char *fmt, ...)
{
	va_list ap;
	PGresult *res;

	va_start(ap, fmt);
	res = vexec(file, line, conn, fmt, ap);
	va_end(ap);
	return single_value(file, line, res);
}

long
pgtest_query_long_at(const char *file, int line, PGconn *conn, const char *fmt, ...)
{
	va_list ap;
	PGresult *res;
	char *v, *end;
	long n;

	va_start(ap, fmt);
	res = vexec(file, line, conn, fmt, ap);
	va_end(ap);
	if (res == NULL)
		return 0;
	v = single_value(file, line, res);
	if (v == NULL) {
		pgt_fail_soft(file, line, "expected an integer, got no value");
		return 0;
	}
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0') {
		char *msg = pgt_format("expected an integer, got '%s'", v);

		free(v);
		pgt_fail_soft(file, line, "%s", msg);
		free(msg);
		return 0;
	}
	free(v);
	return n;
}

/* ---- waiting for a value -------------------------------------------------- */

typedef struct value_wait {
	PGconn *conn;
	const char *sql;
	const char *expected;
	char *last;                 /* owned: what the query last gave, described */
} value_wait;

static bool
value_matches(void *arg)
{
	value_wait *w = arg;
	char *err = NULL;
	const char *got = NULL;
	PGresult *res;
	bool match;

	if (PQstatus(w->conn) == CONNECTION_BAD)
		PQreset(w->conn);
	res = pgt_run_sql(w->conn, w->sql, &err);
	free(w->last);
	if (res == NULL) {
		w->last = pgt_format("an error: %s", err);
		free(err);
		return false;
	}
	if (PQnfields(res) != 1 || PQntuples(res) > 1) {
		w->last = pgt_format("%d rows of %d columns", PQntuples(res), PQnfields(res));
		PQclear(res);
		return false;
	}
	if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
		got = PQgetvalue(res, 0, 0);
	w->last = got ? pgt_format("'%s'", got) : pgt_strdup("NULL");
	match = got ? (w->expected && strcmp(got, w->expected) == 0) : w->expected == NULL;
	PQclear(res);
	return match;
}

bool
pgtest_wait_value(PGconn *conn, const char *sql, const char *expected, double timeout_s)
{
	value_wait w = {conn, sql, expected, NULL};
	bool ok = pgtest_wait_for(value_matches, &w, timeout_s);

	if (!ok)
		fprintf(stderr, "pgtest_wait_value: after %.1f s, %s\n  gave %s, expected %s%s%s\n",
				timeout_s, sql, w.last ? w.last : "nothing", expected ? "'" : "",
				expected ? expected : "NULL", expected ? "'" : "");
	free(w.last);
	return ok;
}
