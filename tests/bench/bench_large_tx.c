/*
 * bench_large_tx: how long after its commit a large transaction shows on
 * the target. One transaction inserts ROWS rows (default 500,000, about
 * 160 bytes each: more than the source's logical_decoding_work_mem of
 * 64MB, so the source may stream it while it runs), as a batch job does:
 * in 10 statements half a second apart; then it sets a marker. The delay
 * is from the source's COMMIT returning until the target shows the
 * marker. Three consumers, one after the other in each round, each caught
 * up before its transaction:
 *   - tidemark run (the default: streamed while in progress, applied as
 *     it comes, committed at the source's commit);
 *   - tidemark run --no-streaming (decoded and sent whole after the
 *     commit, applied then);
 *   - PostgreSQL's own subscription with streaming = on (streamed to the
 *     subscriber, kept in files, applied at the commit).
 * Also tidemark's peak RSS over its turn (catching up included).
 *
 *   cmake --build build --target bench_large_tx && build/tests/bench_large_tx [ROWS [ROUNDS [MEM]]]
 *
 * MEM: the source's logical_decoding_work_mem for the run (e.g. 8MB;
 * default: the server's, 64MB): how much of the transaction is still to
 * decode and send when it commits.
 *
 * Prints each turn, then per consumer the median delay over ROUNDS
 * (default 3) and the ratios.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchlib.h"
#include "strbuf.h"

#define MAX_ROUNDS 16
#define BATCHES 10

typedef enum { TM_STREAMING, TM_WHOLE, NATIVE } consumer_kind;

typedef struct consumer {
	const char *name;
	consumer_kind kind;
	double delay[MAX_ROUNDS];
	double txn[MAX_ROUNDS];   /* the transaction's own time on the source */
	long peak_kb;
} consumer;

static bench_pair pair;
static PGconn *src;
static int marker;

static void
prepare(const char *mem)
{
	static const char *const tables[] = {"public.big", "public.marker", NULL};
	static const char *const ddl[] = {"CREATE TABLE big (id bigint PRIMARY KEY, payload text)",
	                                  "CREATE TABLE marker (id int PRIMARY KEY, v int)", NULL};
	PGconn *pg;

	bench_pair_start(&pair);
	src = pgtest_connect(pair.src);
	if (mem != NULL) {
		pgtest_exec(src, "ALTER SYSTEM SET logical_decoding_work_mem = '%s'", mem);
		pgtest_exec(src, "SELECT pg_reload_conf()");
	}
	pgtest_exec(src, "%s; %s; INSERT INTO marker VALUES (1, 0);"
	                 "CREATE PUBLICATION pgpub FOR TABLE big, marker", ddl[0], ddl[1]);
	bench_pair_tidemark_setup(&pair, tables);
	bench_pair_subscribe(&pair, ddl);
	pg = pgtest_connect(pair.pg);
	pgtest_exec(pg, "ALTER SUBSCRIPTION pgsub SET (streaming = on)");
	PQfinish(pg);
}

/* The consumer's turn starts: tidemark runs, or the subscription is on. */
static pgtest_proc *
start(const consumer *c)
{
	const char *argv[24];
	const char *const *base = bench_pair_run_argv(&pair, NULL);
	PGconn *pg;
	int n = 0;

	if (c->kind == NATIVE) {
		pg = pgtest_connect(pair.pg);
		bench_subscription_enable(pg, "pgsub", true);
		PQfinish(pg);
		return NULL;
	}
	while (base[n] != NULL && n < 20) {
		argv[n] = base[n];
		n++;
	}
	if (c->kind == TM_WHOLE)
		argv[n++] = "--no-streaming";
	argv[n] = NULL;
	return pgtest_spawn(argv, NULL);
}

static void
stop(consumer *c, pgtest_proc *run)
{
	PGconn *pg;

	if (run == NULL) {
		pg = pgtest_connect(pair.pg);
		bench_subscription_enable(pg, "pgsub", false);
		PQfinish(pg);
		return;
	}
	long kb = bench_peak_kb(pgtest_proc_pid(run));

	if (kb > c->peak_kb)
		c->peak_kb = kb;
	pgtest_proc_kill(run, SIGTERM);
	if (pgtest_proc_wait(run, 120) != 0) {
		fprintf(stderr, "tidemark run failed:\n%s\n", pgtest_proc_output(run));
		exit(1);
	}
	pgtest_proc_free(run);
}

/* The marker's next value, set on the source by sql's transaction (%d:
 * the value), and the seconds until target shows it (the transaction's
 * own in *txn). */
static double
marked(PGconn *target, const char *sql, double *txn)
{
	char want[16];
	double t0 = bench_now(), secs;

	snprintf(want, sizeof want, "%d", ++marker);
	pgtest_exec(src, sql, marker);
	*txn = bench_now() - t0;
	secs = bench_wait_value(target, "SELECT v::text FROM marker", want, 1800);
	if (secs < 0) {
		fprintf(stderr, "the target did not show marker %d\n", marker);
		exit(1);
	}
	return secs;
}

static void
turn(consumer *c, int round, long rows)
{
	pgtest_proc *run = start(c);
	PGconn *t = pgtest_connect(c->kind == NATIVE ? pair.pg : pair.tm);
	double ignored;

	strbuf sql = STRBUF_INIT;

	/* caught up with what came before (the other consumers' turns) */
	marked(t, "BEGIN; TRUNCATE big; UPDATE marker SET v = %d; COMMIT", &ignored);
	strbuf_append(&sql, "BEGIN;");
	for (long b = 0; b < BATCHES; b++)
		strbuf_appendf(&sql, "%s INSERT INTO big SELECT g, repeat(md5(g::text), 4) FROM"
		               " generate_series(%ld, %ld) g;", b > 0 ? " SELECT pg_sleep(0.5);" : "",
		               b * rows / BATCHES + 1, (b + 1) * rows / BATCHES);
	strbuf_append(&sql, " UPDATE marker SET v = %d; COMMIT");
	c->delay[round] = marked(t, sql.data, &c->txn[round]);
	strbuf_free(&sql);
	printf("round %d, %s: the transaction took %.2f s on the source; on the target %.2f s"
	       " after its commit\n", round + 1, c->name, c->txn[round], c->delay[round]);
	fflush(stdout);
	PQfinish(t);
	stop(c, run);
}

int
main(int argc, char **argv)
{
	long rows = argc > 1 ? atol(argv[1]) : 500000;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	consumer cs[] = {{"tidemark (streaming)", TM_STREAMING, {0}, {0}, 0},
	                 {"tidemark --no-streaming", TM_WHOLE, {0}, {0}, 0},
	                 {"subscription (streaming = on)", NATIVE, {0}, {0}, 0}};
	double med[3];

	if (rows < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench_large_tx [ROWS [ROUNDS (1..%d) [MEM]]]\n", MAX_ROUNDS);
		return 2;
	}
	prepare(argc > 3 ? argv[3] : NULL);
	for (int round = 0; round < rounds; round++)
		for (int i = 0; i < 3; i++)
			turn(&cs[(i + round) % 3], round, rows);
	for (int i = 0; i < 3; i++) {
		med[i] = bench_median(cs[i].delay, rounds);
		printf("%s: median delay after the commit %.2f s (transaction %.2f s on the source)%s",
		       cs[i].name, med[i], bench_median(cs[i].txn, rounds),
		       cs[i].kind == NATIVE ? "\n" : "");
		if (cs[i].kind != NATIVE)
			printf(", peak RSS %.1f MB\n", cs[i].peak_kb / 1024.0);
	}
	printf("delay ratios: --no-streaming / streaming %.1f, subscription / streaming %.1f\n",
	       med[1] / (med[0] > 0.001 ? med[0] : 0.001), med[2] / (med[0] > 0.001 ? med[0] : 0.001));
	PQfinish(src);
	bench_pair_stop(&pair);
	return 0;
}
