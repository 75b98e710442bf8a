/*
 * bench_verify: `tidemark verify` on a 1,000,000-row table copied by
 * tidemark: equal, side by side with its peer (the same row hashes summed
 * by one statement per side over the whole table, both sides at once: what
 * a comparison in one long transaction costs), then with 10 planted
 * differences, and for several page sizes (how the default was chosen).
 *
 *   cmake --build build --target bench_verify && build/tests/bench_verify [ROWS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "verify_sql.h"

#define ROUNDS 3

static pgtest_cluster *src, *dst;
static char *dst_db;

/* So that autovacuum does not run in the middle of a measurement. */
static void
vacuum_target(void)
{
	PGconn *t = pgtest_connect_str(dst_db);

	pgtest_exec(t, "VACUUM ANALYZE orders");
	PQfinish(t);
}

static void
load(long rows)
{
	PGconn *s = pgtest_connect(src);
	PGconn *a = pgtest_connect(dst);
	const char *setup[] = {"setup", "--source", src->conninfo, "--target", NULL, "--table",
	                       "orders", "--quiet", NULL};
	const char *run[] = {"run", "--source", src->conninfo, "--target", NULL,
	                     "--until-caught-up", "--quiet", NULL};

	bench_load_orders(s, rows);
	pgtest_exec(a, "CREATE DATABASE bench");
	dst_db = pgtest_conninfo_db(dst, "bench");
	setup[4] = run[4] = dst_db;
	if (pgtest_run_tidemark(setup, 120, NULL) != 0 || pgtest_run_tidemark(run, 3600, NULL) != 0)
		exit(1);
	vacuum_target();
	printf("table: %ld rows, %s, copied to the target by tidemark\n", rows,
	       pgtest_query_value(s, "SELECT pg_size_pretty(pg_total_relation_size('orders'))"));
	PQfinish(s);
	PQfinish(a);
}

/* The peer: the whole table's sum of row hashes, one statement per side. */
static double
peer(void)
{
	static const char *const keys[] = {"id"};
	static const int key_idx[] = {0};
	static const char *const names[] = {"id", "customer", "status", "amount", "note", "created"};
	verify_sql_column cols[6];
	verify_sql_table t = {"public", "orders", 1, keys, key_idx, 6, cols, false, NULL, NULL};
	strbuf sql = STRBUF_INIT;
	PGconn *c[2] = {pgtest_connect(src), pgtest_connect_str(dst_db)};
	double start;

	for (int i = 0; i < 6; i++)
		verify_sql_column_init(&cols[i], names[i], "x", "x");
	verify_sql_range_sum(&sql, &t, 0);
	for (int i = 0; i < 2; i++)
		pgtest_exec(c[i], "SET jit = off");   /* as verify's sessions */
	start = bench_now();
	for (int i = 0; i < 2; i++)
		if (PQsendQuery(c[i], sql.data) != 1)
			exit(1);
	for (int i = 0; i < 2; i++) {
		PGresult *r;

		while ((r = PQgetResult(c[i])) != NULL) {
			if (PQresultStatus(r) != PGRES_TUPLES_OK) {
				fprintf(stderr, "peer: %s", PQerrorMessage(c[i]));
				exit(1);
			}
			PQclear(r);
		}
	}
	start = bench_now() - start;
	for (int i = 0; i < 6; i++)
		verify_sql_column_clear(&cols[i]);
	strbuf_free(&sql);
	PQfinish(c[0]);
	PQfinish(c[1]);
	return start;
}

/* verify with a page size; its exit code, output (caller frees) and time. */
static int
verify(const char *chunk, double *secs, long *peak_kb, char **output)
{
	const char *argv[] = {"verify", "--source", src->conninfo, "--target", dst_db,
	                      "--chunk-rows", chunk, "--quiet", NULL};
	double start = bench_now();
	pgtest_proc *p;
	int rc;

	if (output == NULL)
		return bench_run_measured(argv, 3600, secs, peak_kb);
	p = pgtest_spawn(argv, NULL);
	rc = pgtest_proc_wait(p, 3600);
	*secs = bench_now() - start;
	*output = strdup(pgtest_proc_output(p));
	pgtest_proc_free(p);
	return rc;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static void
equal_rounds(long rows)
{
	double v[ROUNDS], p[ROUNDS];
	long kb;

	printf("equal tables, side by side, %d rounds:\n", ROUNDS);
	for (int r = 0; r < ROUNDS; r++) {
		p[r] = peer();
		printf("  peer (one statement per side): %.2f s, %.0f rows/s\n", p[r], rows / p[r]);
		if (verify("10000", &v[r], &kb, NULL) != 0)
			exit(1);
		printf("  tidemark verify: %.2f s, %.0f rows/s, peak RSS %.0f MB\n", v[r], rows / v[r],
		       kb / 1024.0);
	}
	qsort(v, ROUNDS, sizeof(double), cmp_double);
	qsort(p, ROUNDS, sizeof(double), cmp_double);
	printf("verify speed / peer speed (medians): %.2f\n", p[ROUNDS / 2] / v[ROUNDS / 2]);
}

/* 10 differences: 4 changed rows, 3 deleted, 3 extra. */
static void
planted(long rows)
{
	PGconn *t = pgtest_connect_str(dst_db);
	char *out = NULL;
	double secs;
	int n = 0;

	pgtest_exec(t, "UPDATE orders SET status = 'lost' WHERE id IN (7, 250000, 500001, %ld)",
	            rows - 3);
	pgtest_exec(t, "DELETE FROM orders WHERE id IN (1, 333333, %ld)", rows);
	pgtest_exec(t, "INSERT INTO orders SELECT id + %ld, customer, status, amount, note, created"
	               " FROM orders WHERE id IN (10, 20, 30)", rows);
	PQfinish(t);
	vacuum_target();
	if (verify("10000", &secs, NULL, &out) != 1) {
		fprintf(stderr, "verify did not find the differences:\n%s\n", out);
		exit(1);
	}
	for (const char *p = out; (p = strstr(p, " key (")) != NULL; p++)
		n++;
	printf("10 planted differences: %d found, %.2f s, %.0f rows/s\n", n, secs, rows / secs);
	free(out);
}

int
main(int argc, char **argv)
{
	long rows = argc > 1 ? atol(argv[1]) : 1000000;
	const char *chunks[] = {"2000", "10000", "50000"};

	src = pgtest_cluster_start_with("src", "max_wal_senders=20", "max_replication_slots=20",
	                                "shared_buffers=512MB", "max_wal_size=8GB");
	dst = pgtest_cluster_start_with("dst", "shared_buffers=512MB", "max_wal_size=8GB");
	load(rows);
	equal_rounds(rows);
	printf("page sizes:\n");
	for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
		double secs;
		long kb;

		if (verify(chunks[i], &secs, &kb, NULL) != 0)
			exit(1);
		printf("  --chunk-rows %6s: %.2f s, %.0f rows/s, peak RSS %.0f MB\n", chunks[i], secs,
		       rows / secs, kb / 1024.0);
	}
	planted(rows);
	free(dst_db);
	pgtest_cluster_stop(src);
	pgtest_cluster_stop(dst);
	return 0;
}
