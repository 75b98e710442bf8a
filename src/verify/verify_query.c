/*
 * verify_query.c: verify's sessions and statements: sent to both sides at
 * once, a data exception told apart from other failures. See verify_int.h.
 */
#include <string.h>
#include <time.h>

#include "log.h"
#include "shape.h"
#include "verify_int.h"
#include "xalloc.h"

/* ---- sessions and statements ---- */

int
verify_session_setup(PGconn *conn, pgconn_side side)
{
	return pgconn_command(conn, side, "configuring the session",
	                      "SELECT set_config('statement_timeout', '120s', false),"
	                      " set_config('idle_in_transaction_session_timeout', '60s', false),"
	                      " set_config('lock_timeout', '10s', false),"
	                      " set_config('default_transaction_read_only', 'on', false),"
	                      " set_config('jit', 'off', false)", 0, NULL);
}

void
verify_query_init(verify_query *q, verify_table *vt, bool source)
{
	memset(q, 0, sizeof *q);
	q->conn = source ? vt->source : vt->target;
	q->side = source ? PGCONN_SOURCE : PGCONN_TARGET;
	q->what = vt->what;
}

void
verify_query_param(verify_query *q, const char *value)
{
	if (q->nparams == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 8;
		q->params = xrealloc(q->params, sizeof(char *) * (size_t) q->cap);
	}
	q->params[q->nparams++] = value;
}

void
verify_query_key(verify_query *q, char *const *key, int nkeys)
{
	for (int i = 0; key != NULL && i < nkeys; i++)
		verify_query_param(q, key[i]);
}

verify_sql_table
verify_side_table(const verify_table *vt, bool source)
{
	verify_sql_table t = {source ? vt->source_schema : vt->target_schema,
	                      source ? vt->source_name : vt->target_name,
	                      vt->nkeys, (const char *const *) vt->keys, vt->key_idx,
	                      vt->ncols, vt->cols, source && !vt->source_partitioned,
	                      (const char *const *) (source ? vt->source_key_types
	                                                    : vt->target_key_types),
	                      !source && vt->soft_delete ? SHAPE_DELETED_AT : NULL};

	return t;
}

unsigned
verify_query_flags(verify_query *q, char *const *lo, char *const *hi, bool plain)
{
	q->plain = q->strict = plain;
	return (q->side == PGCONN_SOURCE ? VERIFY_SQL_SOURCE : 0) | (lo ? VERIFY_SQL_LOWER : 0) |
	       (hi ? VERIFY_SQL_UPPER : 0) | (plain ? VERIFY_SQL_PLAIN : 0);
}

void
verify_query_build(verify_query *q, verify_table *vt, verify_sql_builder build, char *const *lo,
                   char *const *hi, bool plain)
{
	verify_sql_table t = verify_side_table(vt, q->side == PGCONN_SOURCE);

	build(&q->sql, &t, verify_query_flags(q, lo, hi, plain));
	verify_query_key(q, lo, vt->nkeys);
	verify_query_key(q, hi, vt->nkeys);
}

void
verify_query_clear(verify_query *q)
{
	strbuf_free(&q->sql);
	free(q->params);
	PQclear(q->res);
	memset(q, 0, sizeof *q);
}

static int
query_send(verify_query *q)
{
	if (PQsendQueryParams(q->conn, strbuf_str(&q->sql), q->nparams, NULL, q->params, NULL, NULL,
	                      0) != 1)
		return pgconn_fail(q->conn, q->side, q->what, NULL);
	return TM_OK;
}

/* Reads every result of the statement; keeps its rows or notes the failure. */
static int
query_wait(verify_query *q)
{
	int rc = TM_OK;
	PGresult *r;

	while ((r = PQgetResult(q->conn)) != NULL) {
		const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

		if (PQresultStatus(r) == PGRES_TUPLES_OK && q->res == NULL && rc == TM_OK) {
			q->res = r;
			continue;
		}
		if (PQresultStatus(r) == PGRES_FATAL_ERROR && !q->strict && state != NULL &&
		    strncmp(state, "22", 2) == 0) {
			log_debug("%s: %s: %s(compared as plain text)", pgconn_side_name(q->side), q->what,
			          PQresultErrorMessage(r));
			q->data_error = true;
		} else if (rc == TM_OK)
			rc = pgconn_fail(q->conn, q->side, q->what, r);
		PQclear(r);
	}
	if (rc == TM_OK && q->res == NULL && !q->data_error)
		rc = pgconn_fail(q->conn, q->side, q->what, NULL);
	return rc;
}

int
verify_query_run(verify_query *a, verify_query *b)
{
	int rc_a = a ? query_send(a) : TM_OK;
	int rc_b = b && rc_a == TM_OK ? query_send(b) : TM_OK;
	bool b_sent = b != NULL && rc_a == TM_OK && rc_b == TM_OK;

	if (a != NULL && rc_a == TM_OK)
		rc_a = query_wait(a);
	if (b_sent)
		rc_b = query_wait(b);
	return rc_a != TM_OK ? rc_a : rc_b;
}

void
verify_rows_from_result(verify_rows *rows, const PGresult *r)
{
	int width = rows->nkeys + rows->ncols;
	const char **cells = xcalloc((size_t) width, sizeof(char *));

	for (int i = 0; i < PQntuples(r); i++) {
		for (int c = 0; c < width; c++)
			cells[c] = PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
		verify_rows_add(rows, cells);
	}
	free(cells);
}
