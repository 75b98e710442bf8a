#include "source_wait.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "lock_watch.h"
#include "log.h"
#include "pgconn.h"
#include "xalloc.h"

#define SRC PGCONN_SOURCE
#define LOOK_EVERY_S 5.0
#define REPEAT_S 60.0
#define TICK_EVERY_S 1.0

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
	strbuf sb = STRBUF_INIT;
	int n = 0;

	if ((w->other != NULL ||
	     pgconn_open(w->conninfo, SRC, "wait report", false, &w->other) == TM_OK) &&
	    lock_watch_blockers(w->other, SRC, pid, &sb, &n) == TM_OK) {
		if (n == 0) /* not a wait for a transaction (or no longer) */
			strbuf_reset(&w->said);
		else if (strcmp(strbuf_str(&sb), strbuf_str(&w->said)) != 0 || now >= w->next_repeat) {
			log_warn("source: %s has waited %.0f s for: %s", w->what, now - w->start,
			         strbuf_str(&sb));
			strbuf_reset(&w->said);
			strbuf_append(&w->said, strbuf_str(&sb));
			w->next_repeat = now + REPEAT_S;
		}
	}
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
