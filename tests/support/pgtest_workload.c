/*
 * pgtest_workload.c: SQL workloads on background threads.
 */
#include "pgtest_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define RECONNECT_PAUSE 0.05    /* seconds between reconnection attempts */

struct pgtest_workload {
	pthread_t thread;
	PGconn *conn;               /* owned; used by the thread only */
	pgtest_step_fn step;
	void *arg;                  /* the caller's */
	atomic_bool stop;
	atomic_uint iterations;
	atomic_uint errors;
};

static pgt_registry workloads;      /* the running ones */
static _Thread_local pgtest_workload *current;

bool
pgt_in_workload(void)
{
	return current != NULL;
}

void
pgt_workload_count_error(void)
{
	if (current != NULL)
		atomic_fetch_add(&current->errors, 1);
}

/* Leaves the connection usable for the next step: no failed transaction,
 * no broken connection (a restarted server is reconnected to). */
static void
recover_connection(pgtest_workload *w)
{
	if (PQstatus(w->conn) == CONNECTION_OK
		&& PQtransactionStatus(w->conn) == PQTRANS_INERROR) {
		PQclear(PQexec(w->conn, "ROLLBACK"));
		return;
	}
	while (PQstatus(w->conn) != CONNECTION_OK && !atomic_load(&w->stop)) {
		PQreset(w->conn);
		if (PQstatus(w->conn) == CONNECTION_OK)
			break;
		atomic_fetch_add(&w->errors, 1);
		pgt_sleep(RECONNECT_PAUSE);
	}
}

static void *
workload_thread(void *arg)
{
	pgtest_workload *w = arg;

	current = w;
	while (!atomic_load(&w->stop)) {
		w->step(w->conn, w->arg, atomic_load(&w->iterations));
		atomic_fetch_add(&w->iterations, 1);
		recover_connection(w);
	}
	current = NULL;
	return NULL;
}

pgtest_workload *
pgtest_workload_start(const char *conninfo, pgtest_step_fn step, void *arg)
{
	pgtest_workload *w = calloc(1, sizeof *w);

	if (w == NULL)
		abort();
	pgt_init();
	w->conn = pgtest_connect_str(conninfo);
	w->step = step;
	w->arg = arg;
	atomic_init(&w->stop, false);
	atomic_init(&w->iterations, 0);
	atomic_init(&w->errors, 0);
	if (pthread_create(&w->thread, NULL, workload_thread, w) != 0)
		abort();
	pgt_registry_add(&workloads, w);
	return w;
}

unsigned
pgtest_workload_iterations(const pgtest_workload *w)
{
	return atomic_load(&w->iterations);
}

unsigned
pgtest_workload_stop(pgtest_workload *w, unsigned *errors)
{
	unsigned n;

	pgt_registry_take(&workloads, w);
	atomic_store(&w->stop, true);
	pthread_join(w->thread, NULL);
	n = atomic_load(&w->iterations);
	if (errors != NULL)
		*errors = atomic_load(&w->errors);
	PQfinish(w->conn);
	free(w);
	return n;
}

void
pgt_workloads_cleanup(void)
{
	pgtest_workload *w;

	while ((w = pgt_registry_take(&workloads, NULL)) != NULL)
		pgtest_workload_stop(w, NULL);
}
