/*
 * bench_apply: catching up on four kinds of backlog, each consumed in the
 * same run by the floor (pg_recvlogical decoding the slot with pgoutput,
 * protocol 1, into /dev/null: what any consumer pays before it applies
 * anything), by `tidemark run --until-caught-up` and by PostgreSQL's own
 * subscription (CREATE SUBSCRIPTION, timed from ENABLE until its applied
 * position passes the backlog's end), each on a slot of its own; tidemark
 * and the subscription each into a target cluster of its own.
 *
 *   cmake --build build --target bench_apply && build/tests/bench_apply [ROUNDS [PERCENT]]
 *
 * The backlogs, written with the consumers stopped, afresh each round:
 *   transfer  40,000 transactions of two updates over 1,000 rows;
 *   tpcb      20,000 pgbench TPC-B transactions at scale 10 (1,000,000
 *             accounts; three updates and an insert each), two clients;
 *   hotkey    40,000 one-row updates of a 100,000-row table, 90% of them
 *             on 300 rows;
 *   wide      20,000 updates of a 20,000-row table of 1.9 kB text values
 *             kept in line, a fifth of the rows with a 6 kB incompressible
 *             value stored out of line: 60% change neither text, 20% the
 *             in-line text, 20% the out-of-line one.
 * Each round the floor goes first, then tidemark and the subscription in
 * turn first. Before each backlog is written, every slot is made to
 * restart at its end (a checkpoint, then each consumer caught up, not
 * timed), so that no consumer decodes the rounds before again. Then the
 * same again into target tables that carry six secondary indexes each (on
 * both targets; the updated columns are indexed, so no update is HOT
 * there). Printed per backlog: the medians over ROUNDS (default 3),
 * tidemark / floor and native / tidemark, and the source transactions per
 * group (target transaction) of tidemark's runs: the target's xact_commit
 * over a run, less that of a run with nothing to apply (its reads and
 * writes of its catalog at the start); and the CPU seconds each consumer
 * cost on the source, on its target and in its own process
 * (benchlib.h: bench_cluster_cpu_s; autovacuum is off on the source, whose
 * runs after a backlog would land in the floor's, the first).
 * PERCENT (default 100) scales the backlogs, not the tables. Last, every
 * table on both targets is compared with the source row for row.
 *
 * BENCH_ONLY=wide,tpcb runs those backlogs alone; BENCH_INDEXED=0 (or 1)
 * only without (or with) the secondary indexes. TIDEMARK_BENCH_ARGS adds
 * options to `tidemark run` (benchlib.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchlib.h"

#define MAX_ROUNDS 32
#define FLOOR 0
#define TIDEMARK 1
#define NATIVE 2
/* where a consumer's CPU seconds went */
#define SOURCE 0
#define TARGET 1
#define PROCESS 2

typedef struct backlog {
	const char *name;
	int transactions;    /* at 100% */
	const char *script;  /* pgbench script; NULL: pgbench's TPC-B */
	const char *indexes; /* six secondary indexes per table it writes */
	double secs[2][3][MAX_ROUNDS]; /* [indexed][FLOOR..NATIVE][round] */
	double groups[2][MAX_ROUNDS]; /* target transactions of tidemark's run */
	double cpu[2][3][3][MAX_ROUNDS]; /* [indexed][FLOOR..NATIVE][SOURCE..PROCESS][round] */
	long peak_kb;        /* tidemark's largest peak RSS */
} backlog;

static backlog backlogs[] = {
	{"transfer", 40000,
	 "\\set a random(1, 1000)\n\\set b random(1, 1000)\nBEGIN;\n"
	 "UPDATE accounts SET balance = balance - 1 WHERE id = :a;\n"
	 "UPDATE accounts SET balance = balance + 1 WHERE id = :b;\nCOMMIT;\n",
	 "CREATE INDEX ON accounts (balance); CREATE INDEX ON accounts (balance, id);"
	 "CREATE INDEX ON accounts (id, balance); CREATE INDEX ON accounts ((balance % 100));"
	 "CREATE INDEX ON accounts ((balance::text)); CREATE INDEX ON accounts (balance DESC);",
	 {{{0}}}, {{0}}, {{{{0}}}}, 0},
	{"tpcb", 20000, NULL,
	 "CREATE INDEX ON pgbench_accounts (abalance); CREATE INDEX ON pgbench_accounts (bid, abalance);"
	 "CREATE INDEX ON pgbench_accounts (abalance, aid); CREATE INDEX ON pgbench_accounts (aid, abalance);"
	 "CREATE INDEX ON pgbench_accounts ((abalance % 1000)); CREATE INDEX ON pgbench_accounts (bid);"
	 "CREATE INDEX ON pgbench_branches (bbalance); CREATE INDEX ON pgbench_branches (bbalance, bid);"
	 "CREATE INDEX ON pgbench_branches (bid, bbalance); CREATE INDEX ON pgbench_branches ((bbalance % 1000));"
	 "CREATE INDEX ON pgbench_branches (bbalance DESC); CREATE INDEX ON pgbench_branches ((bbalance::text));"
	 "CREATE INDEX ON pgbench_tellers (tbalance); CREATE INDEX ON pgbench_tellers (bid);"
	 "CREATE INDEX ON pgbench_tellers (bid, tbalance); CREATE INDEX ON pgbench_tellers (tbalance, tid);"
	 "CREATE INDEX ON pgbench_tellers ((tbalance % 1000)); CREATE INDEX ON pgbench_tellers (tbalance DESC);"
	 "CREATE INDEX ON pgbench_history (tid); CREATE INDEX ON pgbench_history (bid);"
	 "CREATE INDEX ON pgbench_history (aid); CREATE INDEX ON pgbench_history (mtime);"
	 "CREATE INDEX ON pgbench_history (delta); CREATE INDEX ON pgbench_history (aid, mtime);",
	 {{{0}}}, {{0}}, {{{{0}}}}, 0},
	{"hotkey", 40000,
	 "\\set r random(1, 100)\n\\if :r <= 90\n\\set id random(1, 300)\n\\else\n"
	 "\\set id random(301, 100000)\n\\endif\nUPDATE hot SET v = v + 1 WHERE id = :id;\n",
	 "CREATE INDEX ON hot (v); CREATE INDEX ON hot (v, id); CREATE INDEX ON hot (id, v);"
	 "CREATE INDEX ON hot (note); CREATE INDEX ON hot ((v % 1000)); CREATE INDEX ON hot (note, v);",
	 {{{0}}}, {{0}}, {{{{0}}}}, 0},
	{"wide", 20000,
	 "\\set id random(1, 20000)\n\\set r random(1, 100)\n\\if :r <= 60\n"
	 "UPDATE wide SET n = n + 1 WHERE id = :id;\n\\elif :r <= 80\n"
	 "UPDATE wide SET n = n + 1, body = (SELECT string_agg(md5(random()::text), '')"
	 " FROM generate_series(1, 59)) WHERE id = :id;\n\\else\n\\set b 5 * random(1, 4000)\n"
	 "UPDATE wide SET blob = (SELECT string_agg(chr(33 + (random() * 93)::int), '')"
	 " FROM generate_series(1, 6000)) WHERE id = :b;\n\\endif\n",
	 "CREATE INDEX ON wide (n); CREATE INDEX ON wide (n, id); CREATE INDEX ON wide (id, n);"
	 "CREATE INDEX ON wide (left(body, 16)); CREATE INDEX ON wide (md5(body));"
	 "CREATE INDEX ON wide ((blob IS NULL));",
	 {{{0}}}, {{0}}, {{{{0}}}}, 0},
};
#define NBACKLOGS ((int) (sizeof backlogs / sizeof backlogs[0]))

/* every replicated table and its key, for the comparison at the end */
static const char *const tables[] = {"public.accounts", "public.marker",
                                     "public.pgbench_accounts", "public.pgbench_branches",
                                     "public.pgbench_tellers", "public.pgbench_history",
                                     "public.hot", "public.wide", NULL};
static const char *const keys[] = {"id", "id", "aid", "bid", "tid", "hid", "id", "id"};

static const char *const ddl =
	"CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);"
	"CREATE TABLE marker (id int PRIMARY KEY, v int NOT NULL);"
	"CREATE TABLE hot (id bigint PRIMARY KEY, v bigint NOT NULL, note text NOT NULL);"
	"CREATE TABLE wide (id bigint PRIMARY KEY, n int NOT NULL, body text NOT NULL, blob text);";

static bench_pair pair;

static void
load_source(void)
{
	PGconn *s = pgtest_connect(pair.src);

	pgtest_exec(s, "%s %s", ddl, bench_tpcb_ddl);
	bench_tpcb_load(pair.src->conninfo, 10);
	pgtest_exec(s, "INSERT INTO accounts SELECT g, 1000 FROM generate_series(1, 1000) g;"
	               "INSERT INTO marker VALUES (1, 0);"
	               "INSERT INTO hot SELECT g, 0, 'hot row ' || md5(g::text)"
	               " FROM generate_series(1, 100000) g");
	/* the out-of-line value's subquery refers to g, so that each row's is its own */
	pgtest_exec(s, "INSERT INTO wide SELECT g, 0,"
	               " (SELECT string_agg(md5(g::text || i), '') FROM generate_series(1, 59) i),"
	               " CASE WHEN g %% 5 = 0 THEN (SELECT string_agg(chr(33 + (random() * 93)::int),"
	               " '') FROM generate_series(1, 6000) WHERE g > 0) END"
	               " FROM generate_series(1, 20000) g");
	pgtest_exec(s, "VACUUM ANALYZE");
	printf("wide: %s in line, %s out of line (TOAST)\n",
	       pgtest_query_value(s, "SELECT pg_size_pretty(pg_relation_size('wide'))"),
	       pgtest_query_value(s, "SELECT pg_size_pretty(pg_relation_size(reltoastrelid))"
	                             " FROM pg_class WHERE relname = 'wide'"));
	pgtest_exec(s, "CREATE PUBLICATION pgpub FOR TABLE accounts, marker, pgbench_accounts,"
	               " pgbench_branches, pgbench_tellers, pgbench_history, hot, wide");
	pgtest_exec(s, "SELECT pg_create_logical_replication_slot('floor', 'pgoutput')");
	PQfinish(s);
}

/* The backlog's transactions, then a marker transaction: the position
 * returned (the caller's) is inside it, past every backlog commit. */
static char *
write_backlog(const backlog *b, int percent)
{
	int n = (int) ((long) b->transactions * percent / 100);
	PGconn *s = pgtest_connect(pair.src);
	char *end;

	if (b->script == NULL) {
		char per_client[16];
		const char *args[] = {"-n", "-c", "2", "-t", per_client, NULL};

		snprintf(per_client, sizeof per_client, "%d", n / 2);
		free(bench_pgbench(pair.src->conninfo, args));
	} else {
		char *script = pgtest_write_file("backlog.sql", "%s", b->script);

		bench_pgbench_script(pair.src->conninfo, script, 2, n);
		free(script);
	}
	end = bench_mark(s, "UPDATE marker SET v = v + 1");
	PQfinish(s);
	return end;
}

static double
floor_catch_up(void)
{
	static const char *const opts[] = {"proto_version=1", "publication_names=pgpub", NULL};

	return bench_floor(pair.src->conninfo, "floor", opts);
}

/* Sessions that find each cluster's processes for bench_cluster_cpu_s
 * (main). */
static PGconn *cpu_src, *cpu_tm, *cpu_pg;

/* Transactions committed in the tidemark target's database so far (its
 * own statistics). A run's sessions report theirs as they end, after the
 * run has exited: the count is read once no other session is left and
 * two reads 50 ms apart agree (within 10 s). */
static double
target_commits(void)
{
	PGconn *t = pgtest_connect(pair.tm);
	double n = -1, last = -2;

	for (int i = 0; i < 200 && n != last; i++) {
		/* (the session that reads the target's CPU left out) */
		char *others = pgtest_query_value(t, "SELECT count(*) FROM pg_stat_activity"
		                                     " WHERE backend_type = 'client backend'"
		                                     " AND pid <> pg_backend_pid() AND pid <> %d",
		                                  cpu_tm != NULL ? PQbackendPID(cpu_tm) : 0);
		char *v = pgtest_query_value(t, "SELECT xact_commit FROM pg_stat_database"
		                                " WHERE datname = current_database()");

		last = atoi(others) == 0 ? n : -2;
		n = atof(v);
		free(others);
		free(v);
		if (n != last)
			usleep(50 * 1000);
	}
	PQfinish(t);
	return n;
}

/* The target transactions of a run with nothing to apply: its own reads
 * and writes of the catalog, each committed alone (main). */
static double run_own_commits;

/* The run's seconds; *groups: the target transactions it committed, less
 * a run's own (and the count's session's). */
static double
tidemark_catch_up(backlog *b, double *groups)
{
	double before = target_commits();
	double secs;
	long kb;

	if (bench_pair_tidemark_catch_up(&pair, &secs, &kb) != 0)
		exit(1);
	*groups = target_commits() - before - 1 - run_own_commits;
	if (kb > b->peak_kb)
		b->peak_kb = kb;
	return secs;
}

/* From ENABLE until the subscription's applied position passes end
 * (polled on cpu_pg, whose CPU is not the subscription's). */
static double
native_catch_up(const char *end)
{
	PGconn *p = cpu_pg;
	double start = bench_now(), waited;

	bench_subscription_enable(p, "pgsub", true);
	waited = bench_wait_passed(p, bench_subscription_lsn_sql, "pgsub", end, 3600);
	if (waited < 0) {
		fprintf(stderr, "the subscription did not reach %s within an hour\n", end);
		exit(1);
	}
	waited = bench_now() - start;
	bench_subscription_enable(p, "pgsub", false);
	return waited;
}

static void
floor_settle(void *ctx)
{
	(void) ctx;
	floor_catch_up();
}

static void
tidemark_settle(void *ctx)
{
	double secs;
	long kb;

	(void) ctx;
	if (bench_pair_tidemark_catch_up(&pair, &secs, &kb) != 0)
		exit(1);
}

/* Every consumer caught up past a running-transactions record, so that
 * its slot restarts there and the next round decodes its own backlog
 * only (benchlib.h: bench_source_restart_point). Not measured. */
static void
settle_slots(void)
{
	PGconn *s = pgtest_connect(pair.src);
	PGconn *p = pgtest_connect(pair.pg);
	char *restart = bench_source_restart_point(s);

	pgtest_exec(s, "UPDATE marker SET v = v + 1"); /* a transaction past the record */
	bench_settle_slot(s, "floor", restart, floor_settle, NULL);
	bench_settle_slot(s, "bench", restart, tidemark_settle, NULL);
	bench_settle_subscription(s, p, "pgsub", restart);
	free(restart);
	PQfinish(p);
	PQfinish(s);
}

/* The CPU seconds spent so far by the source, by the consumer's target
 * (NULL: none) and by this process's children that ended (pg_recvlogical,
 * tidemark). */
static void
cpu_now(PGconn *target, double out[3])
{
	out[SOURCE] = bench_cluster_cpu_s(cpu_src);
	out[TARGET] = target != NULL ? bench_cluster_cpu_s(target) : 0;
	out[PROCESS] = bench_children_cpu_s();
}

/* One consumer's catch-up: its seconds, and its CPU seconds per place
 * into cpu[..][round]. */
static double
consumer_round(backlog *b, int indexed, int which, int round, const char *end)
{
	PGconn *target = which == TIDEMARK ? cpu_tm : which == NATIVE ? cpu_pg : NULL;
	double before[3], after[3], secs;

	cpu_now(target, before);
	if (which == FLOOR)
		secs = floor_catch_up();
	else if (which == TIDEMARK)
		secs = tidemark_catch_up(b, &b->groups[indexed][round]);
	else
		secs = native_catch_up(end);
	cpu_now(target, after);
	for (int k = 0; k < 3; k++)
		b->cpu[indexed][which][k][round] = after[k] - before[k];
	return secs;
}

static void
round_of(backlog *b, int indexed, int round, int percent)
{
	double *s[3] = {&b->secs[indexed][FLOOR][round], &b->secs[indexed][TIDEMARK][round],
	                &b->secs[indexed][NATIVE][round]};
	double *groups = &b->groups[indexed][round];
	char *end;

	settle_slots();
	end = write_backlog(b, percent);

	*s[FLOOR] = consumer_round(b, indexed, FLOOR, round, end);
	if (round % 2 == 0) {
		*s[TIDEMARK] = consumer_round(b, indexed, TIDEMARK, round, end);
		*s[NATIVE] = consumer_round(b, indexed, NATIVE, round, end);
	} else {
		*s[NATIVE] = consumer_round(b, indexed, NATIVE, round, end);
		*s[TIDEMARK] = consumer_round(b, indexed, TIDEMARK, round, end);
	}
	printf("round %d, %-8s%s: floor %6.2f s, tidemark %6.2f s (%.0f groups),"
	       " native %6.2f s\n", round + 1, b->name, indexed ? " (6 indexes)" : "", *s[FLOOR],
	       *s[TIDEMARK], *groups, *s[NATIVE]);
	fflush(stdout);
	free(end);
}

static void
add_indexes(void)
{
	pgtest_cluster *targets[] = {pair.tm, pair.pg};

	for (int t = 0; t < 2; t++) {
		PGconn *c = pgtest_connect(targets[t]);

		for (int i = 0; i < NBACKLOGS; i++)
			pgtest_exec(c, "%s", backlogs[i].indexes);
		pgtest_exec(c, "VACUUM ANALYZE");
		PQfinish(c);
	}
}

/* Every table on both targets equal to the source, row for row. */
static void
check(void)
{
	PGconn *s = pgtest_connect(pair.src);
	PGconn *t[2] = {pgtest_connect(pair.tm), pgtest_connect(pair.pg)};
	char *diff = NULL;
	int i;

	for (i = 0; tables[i] != NULL; i++)
		for (int k = 0; k < 2; k++)
			if (!pgtest_tables_equal(s, t[k], tables[i], keys[i], &diff)) {
				fprintf(stderr, "%s differs on the %s target: %s\n", tables[i],
				        k == 0 ? "tidemark" : "native", diff);
				exit(1);
			}
	printf("both targets equal to the source, row for row (%d tables)\n", i);
	PQfinish(s);
	PQfinish(t[0]);
	PQfinish(t[1]);
}

/* Whether BENCH_ONLY (a comma-separated list of names) leaves b in. */
static bool
chosen(const backlog *b)
{
	const char *only = getenv("BENCH_ONLY");
	size_t n = strlen(b->name);

	if (only == NULL || *only == '\0')
		return true;
	for (const char *p = only; p != NULL; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (strncmp(p, b->name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

static void
summary(int indexed, int rounds, int percent)
{
	printf("median of %d rounds%s (2 clients wrote each backlog):\n", rounds,
	       indexed ? ", targets with 6 secondary indexes per table" : "");
	printf("  %-8s %7s %9s %9s %9s %15s %16s %9s\n", "backlog", "tx", "floor s", "tidemark",
	       "native", "tidemark/floor", "native/tidemark", "tx/group");
	for (int i = 0; i < NBACKLOGS; i++) {
		backlog *b = &backlogs[i];
		double f = bench_median(b->secs[indexed][FLOOR], rounds);
		double t = bench_median(b->secs[indexed][TIDEMARK], rounds);
		double n = bench_median(b->secs[indexed][NATIVE], rounds);
		double c = bench_median(b->groups[indexed], rounds);
		long tx = (long) b->transactions * percent / 100;

		if (!chosen(b))
			continue;
		printf("  %-8s %7ld %9.2f %9.2f %9.2f %15.2f %16.2f %9.1f\n", b->name, tx, f, t, n,
		       t / f, n / t, c > 0 ? tx / c : 0.0);
	}
	printf("  CPU seconds (medians; source, target, the consumer's own process):\n"
	       "  %-8s %18s %24s %18s\n", "backlog", "floor", "tidemark", "native");
	for (int i = 0; i < NBACKLOGS; i++) {
		backlog *b = &backlogs[i];
		double m[3][3];

		if (!chosen(b))
			continue;
		for (int w = 0; w < 3; w++)
			for (int k = 0; k < 3; k++)
				m[w][k] = bench_median(b->cpu[indexed][w][k], rounds);
		printf("  %-8s %8.2f + %7.2f %7.2f + %5.2f + %6.2f %8.2f + %7.2f\n", b->name,
		       m[FLOOR][SOURCE], m[FLOOR][PROCESS], m[TIDEMARK][SOURCE], m[TIDEMARK][TARGET],
		       m[TIDEMARK][PROCESS], m[NATIVE][SOURCE], m[NATIVE][TARGET]);
	}
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	int percent = argc > 2 ? atoi(argv[2]) : 100;

	if (rounds < 1 || rounds > MAX_ROUNDS || percent < 1 || percent > 1000) {
		fprintf(stderr, "usage: bench_apply [ROUNDS (1..%d) [PERCENT (1..1000)]]\n", MAX_ROUNDS);
		return 2;
	}
	bench_pair_start(&pair);
	load_source();
	bench_pair_tidemark_setup(&pair, tables);
	bench_pair_subscribe(&pair, (const char *const[]) {ddl, bench_tpcb_ddl, NULL});
	floor_catch_up(); /* the copies' and setups' changes */
	tidemark_settle(NULL); /* then a run with nothing to apply: its own commits */
	run_own_commits = target_commits();
	tidemark_settle(NULL);
	run_own_commits = target_commits() - run_own_commits - 1;
	printf("a run's own target transactions (nothing to apply): %.0f\n", run_own_commits);
	cpu_src = pgtest_connect(pair.src);
	/* autovacuum of the source's tables after a backlog would run during
	 * the floor's catch-up, the first one, and count as its CPU */
	pgtest_exec(cpu_src, "ALTER SYSTEM SET autovacuum = off");
	pgtest_exec(cpu_src, "SELECT pg_reload_conf()");
	cpu_tm = pgtest_connect(pair.tm);
	cpu_pg = pgtest_connect(pair.pg);
	for (int indexed = 0; indexed < 2; indexed++) {
		const char *want = getenv("BENCH_INDEXED");

		if (want != NULL && *want != '\0' && atoi(want) != indexed)
			continue;
		if (indexed)
			add_indexes();
		for (int i = 0; i < NBACKLOGS; i++)
			for (int round = 0; round < rounds && chosen(&backlogs[i]); round++)
				round_of(&backlogs[i], indexed, round, percent);
		summary(indexed, rounds, percent);
	}
	printf("tidemark's peak RSS:");
	for (int i = 0; i < NBACKLOGS; i++)
		printf(" %s %.1f MB%s", backlogs[i].name, backlogs[i].peak_kb / 1024.0,
		       i + 1 < NBACKLOGS ? "," : "\n");
	check();
	PQfinish(cpu_src);
	PQfinish(cpu_tm);
	PQfinish(cpu_pg);
	bench_pair_stop(&pair);
	return 0;
}
