#include "source_wait.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "lock_holders.h"
#include "log.h"
#include "pgconn.h"
#include "xalloc.h"

#define SRC PGCONN_SOURCE
#define LOOK_EVERY_S 5.0
#define REPEAT_S 60.0
#define TICK_EVERY_S 1.0

/* Every row: waiting, pid (0: a prepared transaction), gid, role,
 * application_name, state, since. Times print in UTC (SESSION_OPTIONS). */
static const char blockers_sql[] =
	"SELECT false, a.pid, NULL, a.usename, a.application_name, a.state,"
	" date_trunc('second', a.xact_start)::text"
	" FROM pg_stat_activity a WHERE a.pid = ANY (pg_blocking_pids($1::int))"
	" UNION ALL"
	" SELECT false, 0, p.gid, p.owner::text, NULL, NULL, date_trunc('second', p.prepared)::text"
	" FROM pg_prepared_xacts p WHERE p.transaction IN ("
	"  SELECT x.transactionid FROM pg_locks w"
	"  JOIN pg_locks h ON h.locktype = w.locktype AND h.granted AND h.pid IS NULL"
	"   AND h.database IS NOT DISTINCT FROM w.database"
	"   AND h.relation IS NOT DISTINCT FROM w.relation"
	"   AND h.transactionid IS NOT DISTINCT FROM w.transactionid"
	"  JOIN pg_locks x ON x.locktype = 'transactionid'"
	"   AND x.virtualtransaction = h.virtualtransaction"
	"  WHERE w.pid = $1::int AND NOT w.granted)"
	" ORDER BY 2, 3";

/* The ACCESS EXCLUSIVE locks on a table and its partitions, held or
 * asked for: what a read of it waits behind. */
static const char holders_sql[] =
	"WITH t AS (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	"  WHERE n.nspname = $1 AND c.relname = $2),"
	" rel AS (SELECT oid AS relid FROM t"
	"  UNION SELECT p.relid FROM t, pg_partition_tree(t.oid) p),"
	" l AS (SELECT l.granted, l.pid, l.virtualtransaction FROM pg_locks l"
	"  WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock'"
	"   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
	"   AND l.relation IN (SELECT relid FROM rel)"
	"   AND l.pid IS DISTINCT FROM pg_backend_pid())"
	" SELECT DISTINCT NOT l.granted, coalesce(l.pid, 0), p.gid,"
	"  coalesce(a.usename::text, p.owner::text), a.application_name, a.state,"
	"  date_trunc('second', coalesce(p.prepared, a.xact_start))::text"
	" FROM l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
	" LEFT JOIN pg_locks x ON l.pid IS NULL AND x.locktype = 'transactionid'"
	"  AND x.virtualtransaction = l.virtualtransaction"
	" LEFT JOIN pg_prepared_xacts p ON p.transaction = x.transactionid"
	" WHERE l.pid IS NOT NULL OR p.gid IS NOT NULL"
	" ORDER BY 1, 2, 3";

static const char *
field(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* The rows of blockers_sql or holders_sql, described. */
static void
describe(const PGresult *r, strbuf *out)
{
	int n = PQntuples(r);
	lock_holder *h = xcalloc((size_t) n + 1, sizeof *h);

	for (int i = 0; i < n; i++) {
		h[i].waiting = strcmp(PQgetvalue(r, i, 0), "t") == 0;
		h[i].pid = atoi(PQgetvalue(r, i, 1));
		h[i].gid = field(r, i, 2);
		h[i].role = field(r, i, 3);
		h[i].application = field(r, i, 4);
		h[i].state = field(r, i, 5);
		h[i].since = field(r, i, 6);
	}
	lock_holders_describe(h, n, out);
	free(h);
}

int
source_wait_lock_holders(PGconn *conn, const char *schema, const char *name, strbuf *out)
{
	const char *params[] = {schema, name};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, SRC, "reading who holds a table's lock", holders_sql, 2, params,
	                     &r);

	if (rc == TM_OK)
		describe(r, out);
	PQclear(r);
	return rc;
}

/* A statement's wait, watched through a connection of its own (the
 * waiting one is busy), opened at the first look. */
typedef struct watch {
	const char *conninfo;   /* borrowed */
	const char *what;       /* borrowed */
	double start, next_look, next_repeat;
	PGconn *other;          /* owned */
	strbuf said;            /* the holders last reported */
} watch;

/* Reports who the statement waits for when that changed, or every
 * REPEAT_S while it stays the same; nothing while it waits for no
 * transaction (a slot's creation may also take a while on a busy server).
 * A failed look is only logged. */
static void
look(watch *w, int pid, double now)
{
	char pidtext[16];
	const char *params[] = {pidtext};
	PGresult *r = NULL;
	strbuf sb = STRBUF_INIT;

	snprintf(pidtext, sizeof pidtext, "%d", pid);
	if ((w->other != NULL ||
	     pgconn_open(w->conninfo, SRC, "wait report", false, &w->other) == TM_OK) &&
	    pgconn_exec(w->other, SRC, "reading what a statement waits for", blockers_sql, 1, params,
	                &r) == TM_OK) {
		describe(r, &sb);
		if (PQntuples(r) == 0) /* not a wait for a transaction (or no longer) */
			strbuf_reset(&w->said);
		else if (strcmp(strbuf_str(&sb), strbuf_str(&w->said)) != 0 || now >= w->next_repeat) {
			log_warn("source: %s has waited %.0f s for: %s", w->what, now - w->start,
			         strbuf_str(&sb));
			strbuf_reset(&w->said);
			strbuf_append(&w->said, strbuf_str(&sb));
			w->next_repeat = now + REPEAT_S;
		}
	}
	PQclear(r);
	strbuf_free(&sb);
	w->next_look = now + LOOK_EVERY_S;
}

/* The first moment something is due while the statement waits (a look,
 * a tick), as clock_now_s(); 0: nothing. */
static double
due_at(const watch *w, const source_wait_watch *how, double next_tick)
{
	double due = how->conninfo != NULL ? w->next_look : 0;

	if (how->tick != NULL && (due == 0 || next_tick < due))
		due = next_tick;
	return due;
}

/* Waits for the statement's result, looking at what it waits for from
 * LOOK_EVERY_S on and ticking every TICK_EVERY_S; false when the
 * connection failed. */
static bool
await(PGconn *conn, const source_wait_watch *how, const char *what)
{
	double now = clock_now_s(), next_tick = now + TICK_EVERY_S;
	watch w = {how->conninfo, what, now, now + LOOK_EVERY_S, 0, NULL, STRBUF_INIT};
	bool ok = true;

	while (ok && PQisBusy(conn)) {
		struct pollfd p = {PQsocket(conn), POLLIN, 0};
		double due = due_at(&w, how, next_tick);

		now = clock_now_s();
		if (how->conninfo != NULL && now >= w.next_look)
			look(&w, PQbackendPID(conn), now);
		else if (how->tick != NULL && now >= next_tick) {
			how->tick(how->tick_ctx);
			next_tick = now + TICK_EVERY_S;
		} else if (poll(&p, 1, due == 0 ? -1 : (int) ((due - now) * 1000) + 1) < 0)
			ok = errno == EINTR; /* a signal: run's stop waits for the statement */
		else if (p.revents != 0 && !PQconsumeInput(conn))
			ok = false;
	}
	PQfinish(w.other);
	strbuf_free(&w.said);
	return ok;
}

PGresult *
source_wait_run(PGconn *conn, const source_wait_watch *how, const char *what,
                const char *sql, int nparams, const char *const *params)
{
	PGresult *r = NULL, *next;

	if (!PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0) ||
	    !await(conn, how, what))
		return NULL;
	while ((next = PQgetResult(conn)) != NULL) {
		PQclear(r);
		r = next;
	}
	return r;
}

int
source_wait_exec(PGconn *conn, const source_wait_watch *how, const char *what,
                 const char *sql, int nparams, const char *const *params, PGresult **res)
{
	return pgconn_result(conn, SRC, what, source_wait_run(conn, how, what, sql, nparams, params),
	                     res);
}
