/*
 * bench_ddl: what tidemark's DDL capture adds to the application's DDL. The
 * capture runs inside each DDL statement, while it holds its locks, so its
 * time is lock time. The same statements run in two databases of one
 * source server, one with the capture (`tidemark setup`), one without (the
 * peer, the floor), in alternating rounds, each round on new tables (the
 * catalog grows as in an application's life):
 *
 *   - small: 200 tables created, each then given a column (400 statements,
 *     one session);
 *   - partitions: PARTS partitions created (default 500), then on their
 *     parent an ALTER TABLE ... ADD COLUMN and a CREATE INDEX (each touches
 *     every partition).
 *
 * Prints the medians and their ratio (captured / plain).
 *
 *   cmake --build build --target bench_ddl && build/tests/bench_ddl [PARTS] [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"

#define MAX_ROUNDS 15
#define SMALL_TABLES 200

enum { SMALL, CREATE_PARTS, ADD_COLUMN, CREATE_INDEX, NSTEPS };

static const char *const step_names[NSTEPS] = {
	"400 small CREATE / ALTER TABLE", "CREATE TABLE ... PARTITION OF, each",
	"ALTER TABLE parent ADD COLUMN", "CREATE INDEX ON parent"};

/* One statement, timed. */
static double
timed(PGconn *c, const char *sql)
{
	double start = bench_now();

	pgtest_exec(c, "%s", sql);
	return bench_now() - start;
}

/* One round of every step in database c; t[step] out, in seconds. */
static void
round_in(PGconn *c, int round, int parts, double t[NSTEPS])
{
	char sql[512];

	memset(t, 0, sizeof(double) * NSTEPS);
	for (int i = 0; i < SMALL_TABLES; i++) {
		snprintf(sql, sizeof sql,
		         "CREATE TABLE small_%d_%d (id bigint PRIMARY KEY, v text, n numeric(10,2),"
		         " t timestamptz DEFAULT now())", round, i);
		t[SMALL] += timed(c, sql);
		snprintf(sql, sizeof sql, "ALTER TABLE small_%d_%d ADD COLUMN w int", round, i);
		t[SMALL] += timed(c, sql);
	}
	snprintf(sql, sizeof sql,
	         "CREATE TABLE parted_%d (id bigint, k int, v text, PRIMARY KEY (id, k))"
	         " PARTITION BY LIST (k)", round);
	timed(c, sql);
	for (int i = 0; i < parts; i++) {
		snprintf(sql, sizeof sql, "CREATE TABLE parted_%d_%d PARTITION OF parted_%d"
		         " FOR VALUES IN (%d)", round, i, round, i);
		t[CREATE_PARTS] += timed(c, sql);
	}
	t[CREATE_PARTS] /= parts;
	snprintf(sql, sizeof sql, "ALTER TABLE parted_%d ADD COLUMN w int", round);
	t[ADD_COLUMN] = timed(c, sql);
	snprintf(sql, sizeof sql, "CREATE INDEX ON parted_%d (v)", round);
	t[CREATE_INDEX] = timed(c, sql);
}

static void
print_ms(const char *what, double s)
{
	printf(" %s %8.1f ms", what, s * 1000);
}

int
main(int argc, char **argv)
{
	int parts = argc > 1 ? atoi(argv[1]) : 500;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	pgtest_cluster *src, *dst;
	double plain[NSTEPS][MAX_ROUNDS], captured[NSTEPS][MAX_ROUNDS];
	const char *setup[] = {"setup", "--source", NULL, "--target", NULL, "--table", "seed",
	                       "--quiet", NULL};
	char *plain_db, *captured_db;
	PGconn *s, *p, *c;

	if (parts < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench_ddl [PARTS >= 1] [ROUNDS 1..%d]\n", MAX_ROUNDS);
		return 2;
	}
	src = pgtest_cluster_start_with("src", "max_wal_senders=20", "max_replication_slots=20",
	                                "max_locks_per_transaction=1024");
	dst = pgtest_cluster_start("dst");
	s = pgtest_connect(src);
	pgtest_exec(s, "CREATE DATABASE plain");
	pgtest_exec(s, "CREATE DATABASE captured");
	plain_db = pgtest_conninfo_db(src, "plain");
	captured_db = pgtest_conninfo_db(src, "captured");
	p = pgtest_connect_str(plain_db);
	c = pgtest_connect_str(captured_db);
	pgtest_exec(c, "CREATE TABLE seed (id int PRIMARY KEY)");
	setup[2] = captured_db;
	setup[4] = dst->conninfo;
	if (pgtest_run_tidemark(setup, 120, NULL) != 0)
		return 1;
	printf("%d partitions, %d rounds, alternating (plain: no capture)\n", parts, rounds);
	for (int r = 0; r < rounds; r++) {
		double tp[NSTEPS], tc[NSTEPS];

		round_in(p, r, parts, tp);
		round_in(c, r, parts, tc);
		for (int i = 0; i < NSTEPS; i++) {
			plain[i][r] = tp[i];
			captured[i][r] = tc[i];
		}
		printf("round %d:", r + 1);
		for (int i = 0; i < NSTEPS; i++)
			printf(" %.1f/%.1f ms", tp[i] * 1000, tc[i] * 1000);
		printf("\n");
	}
	printf("medians (plain, captured, captured / plain):\n");
	for (int i = 0; i < NSTEPS; i++) {
		double mp = bench_median(plain[i], rounds), mc = bench_median(captured[i], rounds);

		printf("  %-36s", step_names[i]);
		print_ms("plain", mp);
		print_ms("captured", mc);
		printf("  ratio %.2f\n", mc / mp);
	}
	PQfinish(p);
	PQfinish(c);
	PQfinish(s);
	free(plain_db);
	free(captured_db);
	pgtest_cluster_stop(src);
	pgtest_cluster_stop(dst);
	return 0;
}
