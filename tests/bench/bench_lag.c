/*
 * bench_lag: the lag under sustained load. pgbench's TPC-B (scale 10,
 * CLIENTS clients (default 8: on two cores, as fast as the source goes;
 * two are held back by the source's commit flushes)) for SECONDS (default 60) while
 * `tidemark run` streams it into its target; then the same with
 * PostgreSQL's own subscription into a target of its own instead (one
 * after the other in the same run, each consumer caught up before its load
 * starts, the other one stopped).
 *
 *   cmake --build build --target bench_lag && build/tests/bench_lag [SECONDS [CLIENTS]]
 *
 * Every 0.5 s, the lag in bytes: the source's pg_current_wal_lsn() minus
 * the consumer's applied position on its target (tidemark.progress for
 * tidemark, the subscription's replication origin for PostgreSQL). And the
 * lag in seconds: a heartbeat row on the source is set to the time each
 * 0.1 s (its own transactions, replicated like the rest); the target's
 * clock minus the heartbeat it has applied is how old the newest state the
 * target shows is (both servers on one machine, one clock; at most 0.1 s
 * more than the true lag). Printed per consumer: the source's rate, the
 * lag at the end of the load and its maximum during it, the seconds after
 * the end until the lag is under 1 s and until everything written before
 * the end is applied.
 *
 * The subscription's slot is moved past tidemark's part of the WAL before
 * its turn (pg_replication_slot_advance): its target then misses those
 * changes, which the benchmark does not compare.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchlib.h"

static bench_pair pair;
static char clients[16] = "8";

typedef struct consumer {
	const char *name;
	pgtest_cluster *target;
	const char *position_sql; /* its applied position, $1: name */
	const char *position_name;
	/* measured */
	double tps;
	double end_bytes, end_secs, max_bytes, max_secs;
	double under_1s, all_applied; /* seconds after the end of the load */
} consumer;

static consumer tm = {"tidemark", NULL, NULL, "bench", 0, 0, 0, 0, 0, -1, -1};
static consumer native = {"native", NULL, NULL, "pgsub", 0, 0, 0, 0, 0, -1, -1};

static const char *const heartbeat_ddl =
	"CREATE TABLE heartbeat (id int PRIMARY KEY, at timestamptz NOT NULL);";

static void
prepare(void)
{
	static const char *const tables[] = {"public.pgbench_accounts", "public.pgbench_branches",
	                                     "public.pgbench_tellers", "public.pgbench_history",
	                                     "public.heartbeat", NULL};
	PGconn *s;

	bench_pair_start(&pair);
	s = pgtest_connect(pair.src);
	pgtest_exec(s, "%s %s", bench_tpcb_ddl, heartbeat_ddl);
	bench_tpcb_load(pair.src->conninfo, 10);
	pgtest_exec(s, "INSERT INTO heartbeat VALUES (1, clock_timestamp());"
	               "CREATE PUBLICATION pgpub FOR TABLE pgbench_accounts, pgbench_branches,"
	               " pgbench_tellers, pgbench_history, heartbeat");
	PQfinish(s);
	bench_pair_tidemark_setup(&pair, tables);
	bench_pair_subscribe(&pair, (const char *const[]) {bench_tpcb_ddl, heartbeat_ddl, NULL});
	tm.target = pair.tm;
	tm.position_sql = bench_tidemark_lsn_sql;
	native.target = pair.pg;
	native.position_sql = bench_subscription_lsn_sql;
}

static uint64_t
lsn_of(const char *text)
{
	unsigned hi, lo;

	return text != NULL && sscanf(text, "%X/%X", &hi, &lo) == 2 ? ((uint64_t) hi << 32) | lo : 0;
}

/* One value of sql ($1: param) on conn, or NULL; the caller frees. */
static char *
value_of(PGconn *conn, const char *sql, const char *param)
{
	PGresult *r = PQexecParams(conn, sql, param ? 1 : 0, NULL, &param, NULL, NULL, 0);
	char *v = NULL;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
		v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

/* The lag now: *bytes behind the source's WAL, *secs behind its heartbeat. */
static void
sample(PGconn *s, PGconn *t, const consumer *c, double *bytes, double *secs)
{
	char *src = value_of(s, "SELECT pg_current_wal_lsn()", NULL);
	char *applied = value_of(t, c->position_sql, c->position_name);
	char *age = value_of(t, "SELECT extract(epoch FROM clock_timestamp() - at)"
	                        " FROM heartbeat WHERE id = 1", NULL);
	uint64_t a = lsn_of(src), b = lsn_of(applied);

	*bytes = a > b ? (double) (a - b) : 0;
	*secs = age != NULL ? atof(age) : -1;
	free(src);
	free(applied);
	free(age);
}

static double
tps_of(const char *output)
{
	const char *p = strstr(output, "tps = ");

	return p != NULL ? atof(p + 6) : 0;
}

/* The load for seconds, sampled, then until caught up (within an hour). */
static void
measure(consumer *c, int seconds)
{
	PGconn *s = pgtest_connect(pair.src), *t = pgtest_connect(c->target);
	char secs_arg[16];
	const char *args[] = {"-n", "-c", clients, "-j", "2", "-T", secs_arg, pair.src->conninfo,
	                      NULL};
	pgtest_proc *load;
	double bytes, lag, ended = 0, now, deadline = bench_now() + seconds + 3600;
	char *end = NULL;

	snprintf(secs_arg, sizeof secs_arg, "%d", seconds);
	load = pgtest_spawn_program(BENCH_PGBIN "/pgbench", args, NULL);
	for (int tick = 0; bench_now() < deadline; tick++) {
		pgtest_exec(s, "UPDATE heartbeat SET at = clock_timestamp() WHERE id = 1");
		if (end == NULL && !pgtest_proc_running(load)) {
			if (pgtest_proc_wait(load, 10) != 0) {
				fprintf(stderr, "pgbench failed:\n%s\n", pgtest_proc_output(load));
				exit(1);
			}
			c->tps = tps_of(pgtest_proc_output(load));
			end = bench_mark(s, "UPDATE heartbeat SET at = clock_timestamp() WHERE id = 1");
			ended = bench_now();
			sample(s, t, c, &c->end_bytes, &c->end_secs);
			tick = 0;
		}
		now = bench_now();
		if (tick % 5 == 0) {
			sample(s, t, c, &bytes, &lag);
			if (end == NULL) {
				c->max_bytes = bytes > c->max_bytes ? bytes : c->max_bytes;
				c->max_secs = lag > c->max_secs ? lag : c->max_secs;
			} else if (c->under_1s < 0 && lag >= 0 && lag < 1) {
				c->under_1s = now - ended;
			}
		}
		if (end != NULL && c->all_applied < 0 &&
		    bench_wait_passed(t, c->position_sql, c->position_name, end, 0) >= 0)
			c->all_applied = now - ended;
		if (end != NULL && c->all_applied >= 0 && c->under_1s >= 0)
			break;
		usleep(100000);
	}
	pgtest_proc_free(load);
	free(end);
	PQfinish(s);
	PQfinish(t);
}

/* Blocks until the consumer has applied all the source has written. */
static void
caught_up(const consumer *c)
{
	PGconn *s = pgtest_connect(pair.src), *t = pgtest_connect(c->target);
	char *end = bench_mark(s, "UPDATE heartbeat SET at = clock_timestamp() WHERE id = 1");

	if (bench_wait_passed(t, c->position_sql, c->position_name, end, 3600) < 0) {
		fprintf(stderr, "%s did not catch up within an hour\n", c->name);
		exit(1);
	}
	free(end);
	PQfinish(s);
	PQfinish(t);
}

static void
print(const consumer *c, int seconds)
{
	printf("%-8s TPC-B %d s, %s clients at %.0f tps: lag at the end %.2f MB / %.3f s,"
	       " max %.2f MB / %.3f s; after the end: lag < 1 s in %.3f s, all applied in %.3f s\n",
	       c->name, seconds, clients, c->tps, c->end_bytes / 1048576, c->end_secs, c->max_bytes / 1048576,
	       c->max_secs, c->under_1s, c->all_applied);
}

int
main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 60;
	int nclients = argc > 2 ? atoi(argv[2]) : 8;
	PGconn *s, *p;
	pgtest_proc *run;

	if (seconds < 1 || seconds > 3600 || nclients < 2 || nclients > 64) {
		fprintf(stderr, "usage: bench_lag [SECONDS (1..3600) [CLIENTS (2..64)]]\n");
		return 2;
	}
	snprintf(clients, sizeof clients, "%d", nclients);
	prepare();
	run = pgtest_spawn(bench_pair_run_argv(&pair, NULL), NULL);
	caught_up(&tm);
	measure(&tm, seconds);
	pgtest_proc_kill(run, SIGTERM);
	if (pgtest_proc_wait(run, 120) != 0) {
		fprintf(stderr, "tidemark run exited with an error:\n%s\n", pgtest_proc_output(run));
		return 1;
	}
	pgtest_proc_free(run);
	print(&tm, seconds);
	fflush(stdout);

	s = pgtest_connect(pair.src);
	pgtest_exec(s, "SELECT pg_replication_slot_advance('pgsub', pg_current_wal_lsn())");
	PQfinish(s);
	p = pgtest_connect(pair.pg);
	bench_subscription_enable(p, "pgsub", true);
	caught_up(&native);
	measure(&native, seconds);
	bench_subscription_enable(p, "pgsub", false);
	PQfinish(p);
	print(&native, seconds);
	bench_pair_stop(&pair);
	return 0;
}
