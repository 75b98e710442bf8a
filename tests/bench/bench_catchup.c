/*
 * bench_catchup: catching up on a backlog, tidemark against PostgreSQL's
 * own logical replication (CREATE SUBSCRIPTION), side by side on the same
 * WAL; and tidemark's peak memory while one 500,000-row transaction
 * streams through.
 *
 *   cmake --build build --target bench_catchup && build/tests/bench_catchup [TRANSACTIONS]
 *
 * Before each backlog every slot is made to restart at its end (not
 * timed: benchlib.h, bench_source_restart_point), so that a catch-up
 * decodes its own backlog only.
 *
 * The cost of the metrics: rounds of the same backlog caught up alternately
 * without and with `--metrics-listen` (scraped each second meanwhile), and
 * the median time of each:
 *
 *   build/tests/bench_catchup --metrics [TRANSACTIONS [ROUNDS]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchlib.h"

static pgtest_cluster *src, *dst;
static char *src_db, *tm_db, *pg_db;

static void
prepare(void)
{
	PGconn *s, *a;

	src = pgtest_cluster_start_with("src", "max_wal_senders=20", "max_replication_slots=20",
	                                "max_wal_size=4GB", "shared_buffers=256MB");
	/* the launcher starts an apply worker at most once per
	 * wal_retrieve_retry_interval (5 s by default): an ENABLE soon after
	 * the last start (settle_slots) would wait for it */
	dst = pgtest_cluster_start_with("dst", "max_wal_size=4GB", "shared_buffers=256MB",
	                                "wal_retrieve_retry_interval=50ms");
	a = pgtest_connect(dst);
	pgtest_exec(a, "CREATE DATABASE tm");
	pgtest_exec(a, "CREATE DATABASE pg");
	PQfinish(a);
	src_db = src->conninfo;
	tm_db = pgtest_conninfo_db(dst, "tm");
	pg_db = pgtest_conninfo_db(dst, "pg");
	s = pgtest_connect(src);
	pgtest_exec(s, "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);"
	               "INSERT INTO accounts SELECT g, 1000 FROM generate_series(1, 1000) g;"
	               "CREATE TABLE marker (id int PRIMARY KEY, v int NOT NULL);"
	               "INSERT INTO marker VALUES (1, 0);"
	               "CREATE TABLE big (id bigint PRIMARY KEY, payload text);"
	               "CREATE PUBLICATION pgpub FOR TABLE accounts, marker, big");
	PQfinish(s);
}

/* metrics: a --metrics-listen address, or NULL */
static int
tidemark(const char *cmd, const char *metrics, double *secs, long *peak_kb)
{
	const char *argv[] = {cmd, "--source", src_db, "--target", tm_db, "--table", "accounts",
	                      "--table", "marker", "--table", "big", NULL, NULL};
	const char *run_argv[] = {"run", "--source", src_db, "--target", tm_db, "--until-caught-up",
	                          "--quiet", metrics ? "--metrics-listen" : NULL, metrics, NULL};
	double s;
	long kb;

	return bench_run_measured(strcmp(cmd, "setup") == 0 ? argv : run_argv, 3600,
	                          secs ? secs : &s, peak_kb ? peak_kb : &kb);
}

static void
prepare_subscription(void)
{
	PGconn *p = pgtest_connect_str(pg_db);

	pgtest_exec(p, "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);"
	               "CREATE TABLE marker (id int PRIMARY KEY, v int NOT NULL);"
	               "CREATE TABLE big (id bigint PRIMARY KEY, payload text)");
	pgtest_exec(p, "CREATE SUBSCRIPTION pgsub CONNECTION '%s' PUBLICATION pgpub", src_db);
	bench_subscription_wait_ready(p, 120);
	bench_subscription_enable(p, "pgsub", false);
	PQfinish(p);
}

/* n two-row update transactions, then the marker. */
static void
backlog(int n, int round)
{
	PGconn *s = pgtest_connect(src);

	bench_transfers(src_db, 1000, n);
	pgtest_exec(s, "UPDATE marker SET v = %d", round);
	PQfinish(s);
}

static double
subscription_catch_up(int round)
{
	PGconn *p = pgtest_connect_str(pg_db);
	char expected[16];
	double start = bench_now(), waited;

	snprintf(expected, sizeof expected, "%d", round);
	bench_subscription_enable(p, "pgsub", true);
	waited = bench_wait_value(p, "SELECT v FROM marker", expected, 3600);
	bench_subscription_enable(p, "pgsub", false);
	PQfinish(p);
	return waited < 0 ? -1 : bench_now() - start;
}

static void
tidemark_settle(void *ctx)
{
	(void) ctx;
	if (tidemark("run", NULL, NULL, NULL) != 0)
		exit(1);
}

/* Every slot made to restart at its end before a round's backlog, so
 * that each catch-up decodes that backlog only (benchlib.h:
 * bench_source_restart_point); the subscription's too when it takes part.
 * Not measured. */
static void
settle_slots(bool subscription, int round)
{
	PGconn *s = pgtest_connect(src);
	char *restart = bench_source_restart_point(s);

	pgtest_exec(s, "UPDATE marker SET v = %d", -round);
	bench_settle_slot(s, "tidemark", restart, tidemark_settle, NULL);
	if (subscription) {
		PGconn *p = pgtest_connect_str(pg_db);

		bench_settle_subscription(s, p, "pgsub", restart);
		PQfinish(p);
	}
	free(restart);
	PQfinish(s);
}

static void
big_transaction(int rows)
{
	PGconn *s = pgtest_connect(src);
	double secs;
	long kb;

	pgtest_exec(s, "INSERT INTO big SELECT g, md5(g::text) || md5((g + 1)::text) || md5((g + 2)::text)"
	               " FROM generate_series(1, %d) g", rows);
	PQfinish(s);
	if (tidemark("run", NULL, &secs, &kb) != 0)
		exit(1);
	printf("one transaction of %d rows: applied in %.1f s (%.0f rows/s), tidemark peak RSS "
	       "%.1f MB (goal: under 64 MB)\n", rows, secs, rows / secs, kb / 1024.0);
}

/* ---- the cost of the metrics ---- */

static volatile int scraping;

/* A scrape each second, as a Prometheus server would (more often than most). */
static void *
scraper(void *arg)
{
	int port = *(int *) arg;

	while (scraping) {
		(void) pgtest_http_get(port, "GET", "/metrics", 5, NULL, NULL);
		usleep(1000 * 1000);
	}
	return NULL;
}

static int
metrics_overhead(int n, int rounds)
{
	double off[64], on[64];
	int noff = 0, non = 0, port = pgtest_free_port();
	char addr[32];
	long kb;

	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	prepare();
	if (tidemark("setup", NULL, NULL, NULL) != 0 || tidemark("run", NULL, NULL, NULL) != 0)
		return 1;
	for (int round = 1; round <= rounds && round <= 64; round++) {
		bool with = round % 2 == 0;
		pthread_t t;
		double secs;

		settle_slots(false, round);
		backlog(n, round);
		scraping = with;
		if (with)
			pthread_create(&t, NULL, scraper, &port);
		if (tidemark("run", with ? addr : NULL, &secs, &kb) != 0)
			return 1;
		scraping = 0;
		if (with)
			pthread_join(t, NULL);
		if (with)
			on[non++] = secs;
		else
			off[noff++] = secs;
		printf("round %d: %d two-row transactions, %s metrics: %.2f s (%.0f tx/s)\n", round, n,
		       with ? "with" : "without", secs, n / secs);
	}
	printf("median catch-up: without metrics %.2f s, with metrics %.2f s (%+.1f%%)\n",
	       bench_median(off, noff), bench_median(on, non),
	       100.0 * (bench_median(on, non) - bench_median(off, noff)) / bench_median(off, noff));
	pgtest_cluster_stop(src);
	pgtest_cluster_stop(dst);
	return 0;
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 40000;
	double tm_s[2], pg_s[2];
	long kb;

	if (argc > 1 && strcmp(argv[1], "--metrics") == 0)
		return metrics_overhead(argc > 2 ? atoi(argv[2]) : 40000, argc > 3 ? atoi(argv[3]) : 8);

	prepare();
	if (tidemark("setup", NULL, NULL, NULL) != 0 || tidemark("run", NULL, NULL, NULL) != 0)
		return 1;
	prepare_subscription();
	/* two rounds, alternating who goes first, each on a fresh backlog */
	for (int round = 1; round <= 2; round++) {
		settle_slots(true, round);
		backlog(n, round);
		if (round == 1) {
			pg_s[0] = subscription_catch_up(round);
			if (tidemark("run", NULL, &tm_s[0], &kb) != 0)
				return 1;
		} else {
			if (tidemark("run", NULL, &tm_s[1], &kb) != 0)
				return 1;
			pg_s[1] = subscription_catch_up(round);
		}
		printf("round %d: %d two-row transactions: tidemark %.2f s (%.0f tx/s, peak RSS %.1f MB),"
		       " PostgreSQL subscription %.2f s (%.0f tx/s): tidemark is %.2fx as fast\n",
		       round, n, tm_s[round - 1], n / tm_s[round - 1], kb / 1024.0, pg_s[round - 1],
		       n / pg_s[round - 1], pg_s[round - 1] / tm_s[round - 1]);
	}
	printf("catch-up ratio (PostgreSQL time / tidemark time, both rounds): %.2f (goal: at least 1)\n",
	       (pg_s[0] + pg_s[1]) / (tm_s[0] + tm_s[1]));
	big_transaction(500000);
	pgtest_cluster_stop(src);
	pgtest_cluster_stop(dst);
	return 0;
}
