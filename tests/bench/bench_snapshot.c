/*
 * bench_snapshot: copying a table (1,000,000 rows, or ROWS), tidemark's
 * incremental snapshot with 1, 2 and 4 readers (a table this large is
 * copied in key ranges with two readers or more: snap_range.h) against one
 * plain COPY pipe (source COPY TO STDOUT relayed to target COPY FROM STDIN
 * into an empty keyed table), side by side, medians of 3 rounds; and with
 * --chunk-sizes the snapshot's speed for several chunk sizes (how the
 * default was chosen).
 *
 *   cmake --build build --target bench_snapshot
 *   build/tests/bench_snapshot [ROWS] [--chunk-sizes]     # e.g. 10000000
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"

static pgtest_cluster *src, *dst;

/* A fresh target database; the previous run's is dropped and both servers
 * checkpointed, so that no run pays for another's dirty buffers. */
static char *
target_db(const char *name)
{
	PGconn *a = pgtest_connect(dst);
	PGconn *s = pgtest_connect(src);
	char *db = pgtest_query_value(a, "SELECT string_agg(datname, ',') FROM pg_database"
	                                 " WHERE datname LIKE 'bench%%'");

	for (char *tok = db ? strtok(db, ",") : NULL; tok != NULL; tok = strtok(NULL, ","))
		pgtest_exec(a, "DROP DATABASE %s", tok);
	free(db);
	pgtest_exec(a, "CREATE DATABASE bench_%s", name);
	pgtest_exec(a, "CHECKPOINT");
	pgtest_exec(s, "CHECKPOINT");
	PQfinish(a);
	PQfinish(s);
	{
		char full[64];

		snprintf(full, sizeof full, "bench_%s", name);
		return pgtest_conninfo_db(dst, full);
	}
}

static double
copy_pipe(long rows, int round)
{
	char name[16];
	char *db;
	PGconn *s, *t;
	PGresult *r;
	double start;
	char *buf;
	int n;

	snprintf(name, sizeof name, "pipe%d", round);
	db = target_db(name);
	s = pgtest_connect(src);
	t = pgtest_connect_str(db);

	pgtest_exec(t, "%s", bench_orders_sql);
	start = bench_now();
	PQclear(PQexec(s, "COPY orders TO STDOUT"));
	PQclear(PQexec(t, "COPY orders FROM STDIN"));
	while ((n = PQgetCopyData(s, &buf, 0)) > 0) {
		PQputCopyData(t, buf, n);
		PQfreemem(buf);
	}
	PQclear(PQgetResult(s));
	PQputCopyEnd(t, NULL);
	r = PQgetResult(t);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		fprintf(stderr, "COPY pipe failed: %s\n", PQerrorMessage(t));
		exit(1);
	}
	PQclear(r);
	start = bench_now() - start;
	if (pgtest_query_long(t, "SELECT count(*) FROM orders") != rows)
		exit(1);
	PQfinish(s);
	PQfinish(t);
	free(db);
	return start;
}

static double
snapshot(long rows, const char *chunk, const char *readers, int round)
{
	char name[32], *db;
	double secs;
	long kb;
	PGconn *t;

	snprintf(name, sizeof name, "tm_%s_%s_%d", chunk, readers, round);
	db = target_db(name);
	{
		const char *setup[] = {"setup", "--source", src->conninfo, "--target", db, "--slot", name,
		                       "--publication", "bench", "--table", "orders", "--quiet", NULL};
		const char *run[] = {"run", "--source", src->conninfo, "--target", db, "--slot", name,
		                     "--publication", "bench", "--until-caught-up", "--chunk-rows", chunk,
		                     "--snapshot-readers", readers, "--quiet", NULL};

		PGconn *s = pgtest_connect(src);

		if (pgtest_run_tidemark(setup, 120, NULL) != 0 ||
		    bench_run_measured(run, 3600, &secs, &kb) != 0)
			exit(1);
		bench_wait_value(s, "SELECT count(*) FROM pg_replication_slots WHERE active", "0", 30);
		pgtest_exec(s, "SELECT pg_drop_replication_slot('%s')", name);
		PQfinish(s);
	}
	t = pgtest_connect_str(db);
	if (pgtest_query_long(t, "SELECT count(*) FROM orders") != rows)
		exit(1);
	PQfinish(t);
	free(db);
	printf("  tidemark snapshot, chunks of %6s rows, %s reader(s): %.2f s, %.0f rows/s, peak RSS "
	       "%.0f MB\n", chunk, readers, secs, rows / secs, kb / 1024.0);
	return secs;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

#define ROUNDS 3

static double
median(double *v)
{
	qsort(v, ROUNDS, sizeof(double), cmp_double);
	return v[ROUNDS / 2];
}

int
main(int argc, char **argv)
{
	long rows = argc > 1 ? atol(argv[1]) : 1000000;
	const char *chunks[] = {"5000", "20000", "50000", "100000"};
	const char *readers[] = {"1", "2", "4"};
	enum { NREADERS = sizeof readers / sizeof readers[0] };
	double pipe_s[ROUNDS], tm_s[NREADERS][ROUNDS], pipe_med;
	PGconn *s;

	src = pgtest_cluster_start_with("src", "max_wal_senders=20", "max_replication_slots=20",
	                                "shared_buffers=512MB", "max_wal_size=8GB");
	dst = pgtest_cluster_start_with("dst", "shared_buffers=512MB", "max_wal_size=8GB");
	s = pgtest_connect(src);
	bench_load_orders(s, rows);
	pgtest_exec(s, "ANALYZE orders");
	pgtest_exec(s, "CREATE PUBLICATION bench");
	printf("table: %ld rows, %s\n", rows,
	       pgtest_query_value(s, "SELECT pg_size_pretty(pg_total_relation_size('orders'))"));
	PQfinish(s);
	printf("side by side, %d rounds, alternating (default chunks of 20000 rows):\n", ROUNDS);
	for (int r = 0; r < ROUNDS; r++) {
		pipe_s[r] = copy_pipe(rows, r);
		printf("  plain COPY pipe: %.2f s, %.0f rows/s\n", pipe_s[r], rows / pipe_s[r]);
		for (int i = 0; i < NREADERS; i++)
			tm_s[i][r] = snapshot(rows, "20000", readers[i], r);
	}
	pipe_med = median(pipe_s);
	printf("medians: plain COPY pipe %.2f s\n", pipe_med);
	for (int i = 0; i < NREADERS; i++) {
		double m = median(tm_s[i]);

		printf("  %s reader(s): %.2f s; snapshot speed / COPY pipe speed %.2f (goal with the "
		       "default readers: at least 1.0)\n", readers[i], m, pipe_med / m);
	}
	if (argc > 2 && strcmp(argv[2], "--chunk-sizes") == 0) {
		printf("chunk sizes:\n");
		for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
			snapshot(rows, chunks[i], "1", 100 + (int) i);
	}
	pgtest_cluster_stop(src);
	pgtest_cluster_stop(dst);
	return 0;
}
