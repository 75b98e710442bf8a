/*
 * bench_history: what history mode costs the apply. The same backlog of
 * two-row update transactions, caught up by two pipelines on the same
 * source, each into its own target database: one keeps the table as a
 * mirror, the other in history mode (every version also appended to
 * accounts_history, in the same statement; appended by position only,
 * no index by key). Beside them the floor: the
 * same WAL decoded by pg_recvlogical into /dev/null, what any consumer of
 * the slot pays before it applies anything.
 *
 *   cmake --build build --target bench_history && build/tests/bench_history [TRANSACTIONS [ROUNDS]]
 *
 * Each round makes every slot restart at its end (benchlib.h:
 * bench_source_restart_point), writes a fresh backlog (default 40,000
 * transactions), then the floor, the mirror and the history catch up on
 * it, the mirror and the history in turn first; the medians over the
 * rounds (default 5) and the ratio history / mirror (goal: at most 1.5).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "tm_fixture.h"

#define MAX_ROUNDS 64
#define ACCOUNTS 1000

static pgtest_cluster *src, *dst;

/* One tidemark pipeline: its own slot, publication and target database. */
typedef struct pipeline {
	const char *name; /* slot, publication and target database */
	const char *mode;
	bool each;        /* run --no-net-changes */
	char *target;
	double secs[MAX_ROUNDS];
} pipeline;

/* a mirror with net changes (the default), one applying each change as
 * it came (what a history must do), and a history */
static pipeline mirror = {"tm_mirror", "mirror", false, NULL, {0}};
static pipeline each = {"tm_each", "mirror", true, NULL, {0}};
static pipeline history = {"tm_history", "history", false, NULL, {0}};

static void
prepare(void)
{
	PGconn *s, *a;

	src = pgtest_cluster_start_with("src", "max_wal_senders=20", "max_replication_slots=20",
	                                "max_wal_size=4GB", "shared_buffers=256MB");
	dst = pgtest_cluster_start_with("dst", "max_wal_size=4GB", "shared_buffers=256MB");
	a = pgtest_connect(dst);
	pgtest_exec(a, "CREATE DATABASE tm_mirror");
	pgtest_exec(a, "CREATE DATABASE tm_each");
	pgtest_exec(a, "CREATE DATABASE tm_history");
	PQfinish(a);
	mirror.target = pgtest_conninfo_db(dst, mirror.name);
	each.target = pgtest_conninfo_db(dst, each.name);
	history.target = pgtest_conninfo_db(dst, history.name);
	s = pgtest_connect(src);
	pgtest_exec(s, "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);"
	               "INSERT INTO accounts SELECT g, 1000 FROM generate_series(1, %d) g;"
	               "CREATE PUBLICATION floorpub FOR TABLE accounts", ACCOUNTS);
	pgtest_exec(s, "SELECT pg_create_logical_replication_slot('floor', 'pgoutput')");
	PQfinish(s);
}

static int
tidemark(const pipeline *p, const char *cmd, double *secs)
{
	const char *setup_argv[] = {"setup", "--source", src->conninfo, "--target", p->target,
	                            "--slot", p->name, "--publication", p->name, "--table",
	                            "public.accounts", "--quiet", NULL};
	const char *run_argv[] = {"run", "--source", src->conninfo, "--target", p->target,
	                          "--slot", p->name, "--publication", p->name, "--until-caught-up",
	                          "--quiet", p->each ? "--no-net-changes" : NULL, NULL};
	double s;
	long kb;

	return bench_run_measured(strcmp(cmd, "setup") == 0 ? setup_argv : run_argv, 3600,
	                          secs ? secs : &s, &kb);
}

/* Set up, the mode set through the catalog (as `tidemark mode` would),
 * and the table copied: the rounds measure streaming alone. */
static int
prepare_pipeline(const pipeline *p)
{
	PGconn *t;

	if (tidemark(p, "setup", NULL) != 0)
		return 1;
	t = pgtest_connect_str(p->target);
	pgtest_exec(t, "UPDATE tidemark.tables SET mode = '%s';"
	               "SELECT tidemark.shape_sync(table_id) FROM tidemark.tables", p->mode);
	PQfinish(t);
	return tidemark(p, "run", NULL);
}

/* n two-row update transactions, two clients. */
static void
backlog(int n)
{
	bench_transfers(src->conninfo, ACCOUNTS, n);
}

/* The floor: the slot's changes since the last round decoded with
 * tidemark's options and thrown away, up to the source's position now. */
static double
floor_catch_up(void)
{
	static const char *const opts[] = {"proto_version=2", "publication_names=floorpub",
	                                   "messages=true", NULL};

	return bench_floor(src->conninfo, "floor", opts);
}

static void
catch_up(pipeline *p, int round)
{
	if (tidemark(p, "run", &p->secs[round]) != 0)
		exit(1);
}

static void
floor_settle(void *ctx)
{
	(void) ctx;
	floor_catch_up();
}

static void
pipeline_settle(void *ctx)
{
	if (tidemark(ctx, "run", NULL) != 0)
		exit(1);
}

/* Every slot made to restart at its end before a round's backlog, so
 * that each run decodes that backlog only (benchlib.h). Not measured. */
static void
settle_slots(void)
{
	PGconn *s = pgtest_connect(src);
	char *restart = bench_source_restart_point(s);
	pipeline *all[] = {&mirror, &each, &history};

	/* a transaction past the record (a message: no row changes, which the
	 * history's count of entries at the end would see) */
	pgtest_exec(s, "SELECT pg_logical_emit_message(true, 'bench.settle', '')");
	bench_settle_slot(s, "floor", restart, floor_settle, NULL);
	for (int i = 0; i < 3; i++)
		bench_settle_slot(s, all[i]->name, restart, pipeline_settle, all[i]);
	free(restart);
	PQfinish(s);
}

/* Both targets equal to the source, and the history one entry per row
 * version: the copy's, then two per transaction. */
static void
check(int n, int rounds)
{
	PGconn *s = pgtest_connect(src);
	PGconn *m = pgtest_connect_str(mirror.target);
	PGconn *h = pgtest_connect_str(history.target);
	long want = (long) ACCOUNTS + 2L * (n / 2 * 2) * rounds;
	PGconn *e = pgtest_connect_str(each.target);
	long entries = pgtest_query_long(h, "SELECT count(*) FROM accounts_history");

	tm_assert_rows_equal(s, "public.accounts", m, "public.accounts", "id, balance");
	tm_assert_rows_equal(s, "public.accounts", e, "public.accounts", "id, balance");
	tm_assert_rows_equal(s, "public.accounts", h, "public.accounts", "id, balance");
	if (entries != want) {
		fprintf(stderr, "accounts_history holds %ld entries, expected %ld\n", entries, want);
		exit(1);
	}
	printf("targets equal to the source; accounts_history: %ld entries\n", entries);
	PQfinish(s);
	PQfinish(m);
	PQfinish(e);
	PQfinish(h);
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 40000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	double floor_s[MAX_ROUNDS], ratio[MAX_ROUNDS], ratio_each[MAX_ROUNDS], m, e, h;

	if (n < 2 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench_history [TRANSACTIONS (>= 2) [ROUNDS (1..%d)]]\n",
		        MAX_ROUNDS);
		return 2;
	}
	prepare();
	if (prepare_pipeline(&mirror) != 0 || prepare_pipeline(&each) != 0 ||
	    prepare_pipeline(&history) != 0)
		return 1;
	floor_catch_up(); /* the copies' and setups' changes */
	for (int round = 0; round < rounds; round++) {
		pipeline *first = round % 2 == 0 ? &mirror : &history;
		pipeline *second = first == &mirror ? &history : &mirror;

		settle_slots();
		backlog(n);
		floor_s[round] = floor_catch_up();
		catch_up(first, round);
		catch_up(&each, round);
		catch_up(second, round);
		printf("round %d: %d two-row transactions: floor %.2f s, mirror %.2f s (%.0f tx/s),"
		       " mirror applying each change %.2f s, history %.2f s (%.0f tx/s): history /"
		       " mirror %.2f, history / each change %.2f\n", round + 1, n, floor_s[round],
		       mirror.secs[round], n / mirror.secs[round], each.secs[round],
		       history.secs[round], n / history.secs[round],
		       history.secs[round] / mirror.secs[round], history.secs[round] / each.secs[round]);
		ratio[round] = history.secs[round] / mirror.secs[round];
		ratio_each[round] = history.secs[round] / each.secs[round];
		fflush(stdout);
	}
	check(n, rounds);
	m = bench_median(mirror.secs, rounds);
	e = bench_median(each.secs, rounds);
	h = bench_median(history.secs, rounds);
	printf("median of %d rounds: floor (pg_recvlogical to /dev/null) %.2f s, mirror %.2f s,"
	       " mirror applying each change %.2f s, history %.2f s\n", rounds,
	       bench_median(floor_s, rounds), m, e, h);
	/* the rounds' own ratios too: the two runs of a round share the machine's
	 * load of the moment, so they vary less from round to round */
	printf("history / mirror (medians): %.2f, median of the rounds' ratios %.2f"
	       " (goal: at most 1.5)\n", h / m, bench_median(ratio, rounds));
	printf("history / mirror applying each change (medians): %.2f, median of the rounds'"
	       " ratios %.2f\n", h / e, bench_median(ratio_each, rounds));
	pgtest_cluster_stop(src);
	pgtest_cluster_stop(dst);
	return 0;
}
