/*
 * Integration tests of parallel apply (--apply-workers, apply.h): groups
 * applied by several target connections at once, committed in source
 * order.
 *
 * The workload: one client, each transaction moving an amount between two
 * of ACCOUNTS accounts and appending a row to a ledger (bigserial: with one
 * client, the ledger's ids are the commit order). A reader on the target
 * checks, in one snapshot each time, that the sum of the balances never
 * changes (every source transaction whole) and that the ledger is always
 * ids 1..n without a gap (no transaction visible before an earlier one).
 * Exactly once: a trigger on the target logs every write the apply makes
 * to a ledger row; under repeated kill -9 each source row is written once.
 * Rows whose keys no group in flight touched go beside those groups; what
 * must not (keys equal under other spellings, constraints and triggers of
 * the target's own) waits, and the target ends as the source.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tm_fixture.h"

#define ACCOUNTS 20000
#define BALANCE 1000

static void
bank_schema(tm_env *e)
{
	pgtest_exec(e->s, "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);"
	                  "INSERT INTO accounts SELECT g, %d FROM generate_series(1, %d) g;"
	                  "CREATE TABLE ledger (id bigserial PRIMARY KEY, src int, dst int,"
	                  " amount int)",
	            BALANCE, ACCOUNTS);
	assert_int_equal(tm_run(e, 60, NULL, "setup", "--table", "public.accounts", "--table",
	                        "public.ledger", NULL),
	                 0);
}

static unsigned accounts = ACCOUNTS; /* tm_bank_step's */

typedef struct checker {
	const char *conninfo;
	volatile bool stop;
	long reads, torn, gaps;
	long bad_sum, bad_count, bad_max;
} checker;

static void *
checker_main(void *arg)
{
	checker *c = arg;
	PGconn *conn = PQconnectdb(c->conninfo);

	while (!c->stop) {
		PGresult *r = PQexec(conn, "SELECT (SELECT sum(balance) FROM accounts),"
		                           " (SELECT count(*) FROM ledger),"
		                           " (SELECT coalesce(max(id), 0) FROM ledger)");

		if (PQresultStatus(r) == PGRES_TUPLES_OK) {
			long sum = atol(PQgetvalue(r, 0, 0)), n = atol(PQgetvalue(r, 0, 1)),
			     max = atol(PQgetvalue(r, 0, 2));

			__atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
			if (sum != (long) ACCOUNTS * BALANCE) {
				c->torn++;
				c->bad_sum = sum;
			}
			if (n != max) {
				c->gaps++;
				c->bad_count = n;
				c->bad_max = max;
			}
		}
		PQclear(r);
		tm_sleep_ms(2);
	}
	PQfinish(conn);
	return NULL;
}

static void
assert_checked(const checker *c)
{
	print_message("%ld target reads\n", c->reads);
	if (c->torn > 0)
		fail_msg("%ld of %ld reads of the target saw a torn sum (e.g. %ld)", c->torn, c->reads,
		         c->bad_sum);
	if (c->gaps > 0)
		fail_msg("%ld of %ld reads saw the ledger out of commit order (e.g. %ld rows, the "
		         "highest id %ld)", c->gaps, c->reads, c->bad_count, c->bad_max);
	assert_true(c->reads >= 200);
}

/* The number before words in a run's last words (0 if not there): the
 * groups the workers applied ("groups applied by the workers"), those of
 * them with rows held back ("of them with rows held"). */
static long
count_before(const char *out, const char *words)
{
	const char *p = strstr(out, words);
	const char *q = p;

	if (p == NULL)
		return 0;
	if (q > out && q[-1] == ' ')
		q--;
	while (q > out && q[-1] >= '0' && q[-1] <= '9')
		q--;
	return q < p - 1 ? atol(q) : 0;
}

static long
worker_groups(const char *out)
{
	return count_before(out, "groups applied by the workers");
}

/* `run` with n apply workers, once they are connected. */
static pgtest_proc *
run_with_workers(tm_env *e, const char *n)
{
	pgtest_proc *run = tm_spawn(e, "run", "--apply-workers", n, NULL);

	assert_true(pgtest_proc_wait_output(run, "worker connections apply groups", 60));
	return run;
}

/* step(conn, arg, i) on the source, from a workload, until it has run
 * steps times; the transactions it committed. */
static unsigned
steps_on_source(tm_env *e, pgtest_step_fn step, void *arg, unsigned steps)
{
	pgtest_workload *w = pgtest_workload_start(e->src, step, arg);

	while (pgtest_workload_iterations(w) < steps)
		tm_sleep_ms(20);
	return pgtest_workload_stop(w, NULL);
}

static void
test_order_and_atomicity(void **state)
{
	tm_env *e = tm_env_new("parorder");
	checker c = {0};
	pthread_t th;
	pgtest_workload *w;
	pgtest_proc *run;
	char *out;
	unsigned txs;
	long groups;

	(void) state;
	bank_schema(e);
	tm_catch_up(e, 120);
	c.conninfo = e->dst;
	pthread_create(&th, NULL, checker_main, &c);
	run = run_with_workers(e, "3");
	w = pgtest_workload_start(e->src, tm_bank_step, &accounts);
	tm_wait_steps_and_reads(w, 2500, &c.reads, 200);
	txs = pgtest_workload_stop(w, NULL);
	/* the backlog of a stopped run, caught up by the workers too */
	pgtest_proc_kill(run, SIGTERM);
	assert_int_equal(pgtest_proc_wait(run, 60), 0);
	out = strdup(pgtest_proc_output(run));
	pgtest_proc_free(run);
	txs += steps_on_source(e, tm_bank_step, &accounts, 1500);
	run = tm_spawn(e, "run", "--until-caught-up", "--apply-workers", "2", NULL);
	assert_int_equal(pgtest_proc_wait(run, 180), 0);
	groups = worker_groups(out) + worker_groups(pgtest_proc_output(run));
	if (groups <= 10)
		fail_msg("the workers applied %ld groups:\n%s\n%s", groups, out,
		         pgtest_proc_output(run));
	pgtest_proc_free(run);
	free(out);
	c.stop = true;
	pthread_join(th, NULL);
	print_message("%u transactions, %ld groups applied by the workers\n", txs, groups);
	assert_checked(&c);
	assert_true(groups > 10);
	tm_assert_equal(e, "accounts", "id");
	tm_assert_equal(e, "ledger", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM ledger"), (long) txs);
	tm_env_free(e);
}

static void
test_exactly_once_through_kill9(void **state)
{
	tm_env *e = tm_env_new("parkill");
	pgtest_workload *w;
	unsigned txs;
	long rows, writes, distinct;

	(void) state;
	bank_schema(e);
	tm_catch_up(e, 120);
	/* every write of the apply to a ledger row, logged on the target */
	pgtest_exec(e->t, "CREATE TABLE ledger_writes (id bigint NOT NULL);"
	                  "CREATE FUNCTION log_write() RETURNS trigger LANGUAGE plpgsql AS"
	                  " $$BEGIN INSERT INTO ledger_writes VALUES (NEW.id); RETURN NULL; END$$;"
	                  "CREATE TRIGGER log_write AFTER INSERT OR UPDATE ON ledger"
	                  " FOR EACH ROW EXECUTE FUNCTION log_write();"
	                  "ALTER TABLE ledger ENABLE ALWAYS TRIGGER log_write");
	w = pgtest_workload_start(e->src, tm_bank_step, &accounts);
	tm_kill9_runs(e, 6, 500, "--apply-workers", "3", NULL);
	txs = pgtest_workload_stop(w, NULL);
	assert_int_equal(tm_run(e, 180, NULL, "run", "--until-caught-up", "--apply-workers", "3",
	                        NULL),
	                 0);
	tm_assert_equal(e, "accounts", "id");
	tm_assert_equal(e, "ledger", "id");
	rows = pgtest_query_long(e->s, "SELECT count(*) FROM ledger");
	writes = pgtest_query_long(e->t, "SELECT count(*) FROM ledger_writes");
	distinct = pgtest_query_long(e->t, "SELECT count(DISTINCT id) FROM ledger_writes");
	print_message("%u transactions, 6 kills: %ld ledger rows, %ld writes on the target\n", txs,
	              rows, writes);
	assert_true(rows > 500);
	if (writes != rows || distinct != rows)
		fail_msg("the source has %ld ledger rows; the target wrote %ld times (%ld rows): a "
		         "group was applied twice or lost", rows, writes, distinct);
	tm_env_free(e);
}

/* ---- TPC-B: every group meets the last one on the branches ---- */

#define BRANCHES 5
#define TELLERS 50
#define TPCB_ACCOUNTS 10000

static void
tpcb_step(PGconn *conn, void *arg, unsigned i)
{
	unsigned salt = (unsigned) (uintptr_t) arg * 2654435761u;
	unsigned aid = (i * 7919u + salt) % TPCB_ACCOUNTS + 1;
	unsigned tid = (i * 31u + salt) % TELLERS + 1, bid = (tid - 1) % BRANCHES + 1;
	int delta = (int) ((i * 104729u + salt) % 10001) - 5000;

	pgtest_exec(conn, "BEGIN; UPDATE pgbench_accounts SET abalance = abalance + %d WHERE aid = %u;"
	                  " UPDATE pgbench_tellers SET tbalance = tbalance + %d WHERE tid = %u;"
	                  " UPDATE pgbench_branches SET bbalance = bbalance + %d WHERE bid = %u;"
	                  " INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (%u, %u, %u, %d);"
	                  " COMMIT",
	            delta, aid, delta, tid, delta, bid, tid, bid, aid, delta);
}

typedef struct tpcb_checker {
	const char *conninfo;
	volatile bool stop;
	long reads, unequal;
	char seen[128];
} tpcb_checker;

static void *
tpcb_checker_main(void *arg)
{
	tpcb_checker *c = arg;
	PGconn *conn = PQconnectdb(c->conninfo);

	while (!c->stop) {
		PGresult *r = PQexec(conn, "SELECT (SELECT sum(abalance) FROM pgbench_accounts),"
		                           " (SELECT sum(tbalance) FROM pgbench_tellers),"
		                           " (SELECT sum(bbalance) FROM pgbench_branches),"
		                           " (SELECT coalesce(sum(delta), 0) FROM pgbench_history)");

		if (PQresultStatus(r) == PGRES_TUPLES_OK) {
			__atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
			for (int k = 1; k < 4; k++)
				if (strcmp(PQgetvalue(r, 0, 0), PQgetvalue(r, 0, k)) != 0) {
					c->unequal++;
					snprintf(c->seen, sizeof c->seen, "%s %s %s %s", PQgetvalue(r, 0, 0),
					         PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3));
					break;
				}
		}
		PQclear(r);
		tm_sleep_ms(2);
	}
	PQfinish(conn);
	return NULL;
}

static void
test_tpcb_sums_stay_equal(void **state)
{
	tm_env *e = tm_env_new("partpcb");
	tpcb_checker c = {0};
	pgtest_workload *w[3];
	pthread_t th;
	pgtest_proc *run;
	unsigned txs = 0;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE pgbench_branches (bid int PRIMARY KEY, bbalance int NOT NULL);"
	                  "CREATE TABLE pgbench_tellers (tid int PRIMARY KEY, bid int, tbalance int NOT NULL);"
	                  "CREATE TABLE pgbench_accounts (aid int PRIMARY KEY, bid int,"
	                  " abalance int NOT NULL, filler char(84));"
	                  "CREATE TABLE pgbench_history (hid bigserial PRIMARY KEY, tid int, bid int,"
	                  " aid int, delta int, mtime timestamptz DEFAULT now());"
	                  "INSERT INTO pgbench_branches SELECT g, 0 FROM generate_series(1, %d) g;"
	                  "INSERT INTO pgbench_tellers SELECT g, (g - 1) %% %d + 1, 0"
	                  " FROM generate_series(1, %d) g;"
	                  "INSERT INTO pgbench_accounts SELECT g, (g - 1) %% %d + 1, 0, ''"
	                  " FROM generate_series(1, %d) g",
	            BRANCHES, BRANCHES, TELLERS, BRANCHES, TPCB_ACCOUNTS);
	assert_int_equal(tm_run(e, 60, NULL, "setup", "--schema", "public", NULL), 0);
	tm_catch_up(e, 120);
	c.conninfo = e->dst;
	pthread_create(&th, NULL, tpcb_checker_main, &c);
	run = run_with_workers(e, "3");
	for (int k = 0; k < 3; k++)
		w[k] = pgtest_workload_start(e->src, tpcb_step, (void *) (uintptr_t) (k + 1));
	tm_wait_steps_and_reads(w[0], 1000, &c.reads, 200);
	for (int k = 0; k < 3; k++)
		txs += pgtest_workload_stop(w[k], NULL);
	tm_stop_and_catch_up(e, run, 120);
	c.stop = true;
	pthread_join(th, NULL);
	print_message("%u transactions, %ld target reads\n", txs, c.reads);
	if (c.unequal > 0)
		fail_msg("%ld of %ld reads of the target saw the sums differ (accounts, tellers, "
		         "branches, history: %s)", c.unequal, c.reads, c.seen);
	assert_true(c.reads >= 200);
	tm_assert_equal(e, "pgbench_accounts", "aid");
	tm_assert_equal(e, "pgbench_tellers", "tid");
	tm_assert_equal(e, "pgbench_branches", "bid");
	tm_assert_equal(e, "pgbench_history", "hid");
	tm_env_free(e);
}

/* ---- schema changes between parallel groups ---- */

static void
items_step(PGconn *conn, void *arg, unsigned i)
{
	const bool *text = arg;

	/* rows of 1.5 kB: upserted one statement each (apply_int.h), on the
	 * workers, prepared with the column's type of the time */
	if (*text)
		pgtest_exec(conn, "UPDATE items SET code = 'c' || %u WHERE id = %u", i, i % 300 + 1);
	else
		pgtest_exec(conn, "UPDATE items SET code = %u WHERE id = %u", i, i % 300 + 1);
}

static void
test_schema_change_between_groups(void **state)
{
	tm_env *e = tm_env_new("parddl");
	pgtest_proc *run;
	bool text = false;
	char *type;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE items (id int PRIMARY KEY, code int, note text);"
	                  "INSERT INTO items SELECT g, g, repeat('n', 1500) FROM generate_series(1, 300) g");
	tm_setup_table(e, "items");
	tm_catch_up(e, 120);
	run = run_with_workers(e, "2");
	steps_on_source(e, items_step, &text, 1000);
	/* the same statements' text after the change: their parameter's type is not */
	pgtest_exec(e->s, "ALTER TABLE items ALTER COLUMN code TYPE text USING code::text");
	text = true;
	steps_on_source(e, items_step, &text, 1000);
	pgtest_exec(e->s, "ALTER TABLE items ADD COLUMN extra int DEFAULT 7");
	steps_on_source(e, items_step, &text, 500);
	tm_stop_and_catch_up(e, run, 120);
	type = pgtest_query_value(e->t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                                " WHERE attrelid = 'items'::regclass AND attname = 'code'");
	assert_string_equal(type, "text");
	free(type);
	tm_assert_equal(e, "items", "id");
	tm_env_free(e);
}

/* ---- keys that the groups in flight hold ---- */

#define HOT_SLOTS 8

/*
 * One transaction on row g of the five tables: an update of n (a partial
 * in "spelled" and "plain": their TOASTed b unsent), the key changed (in
 * "cased" and "spelled" respelled: a delete and an insert of a key the
 * target's unique index takes for the same, 'Ab' and 'aB' in a
 * case-insensitive collation, 1.5 and 1.50; in "plain", "tied" and
 * "tied_part" a new one), a delete, the row inserted again (in the other
 * spelling, under a new key). "tied" only on odd rows, "tied_part" on
 * rows 2 and 6 (so that its groups go whole by its own index, not by
 * tied's): a group with one of them goes whole after the ones before it,
 * the others apart. The workload's steps do the four
 * in a row on each of HOT_SLOTS rows in turn; the groups of a live run are
 * a transaction or a few, so that most meet one still in flight.
 */
static void
spelled_op(PGconn *conn, unsigned g, unsigned op, unsigned i)
{
	if (op == 0)
		pgtest_exec(conn, "BEGIN; UPDATE cased SET n = n + 1 WHERE g = %u;"
		                  " UPDATE spelled SET n = n + 1 WHERE g = %u;"
		                  " UPDATE plain SET n = n + 1 WHERE g = %u;"
		                  " UPDATE tied SET n = n + 1 WHERE g = %u AND g %% 2 = 1;"
		                  " UPDATE tied_part SET n = n + 1 WHERE g = %u AND g %% 4 = 2; COMMIT",
		            g, g, g, g, g);
	else if (op == 1)
		pgtest_exec(conn, "BEGIN; UPDATE cased SET k = CASE WHEN k = upper(k) COLLATE \"C\""
		                  " THEN lower(k) ELSE upper(k) END, n = n + 1 WHERE g = %u;"
		                  " UPDATE spelled SET k = CASE WHEN scale(k) = 1 THEN round(k, 2)"
		                  " ELSE round(k, 1) END, b = repeat(md5(n::text), 100) WHERE g = %u;"
		                  " UPDATE plain SET k = k + 1000000, b = repeat(md5(n::text), 100)"
		                  " WHERE g = %u; UPDATE tied SET k = k + 1000000 WHERE g = %u AND g %% 2 = 1;"
		                  " UPDATE tied_part SET k = k + 1000000 WHERE g = %u AND g %% 4 = 2; COMMIT",
		            g, g, g, g, g);
	else if (op == 2)
		pgtest_exec(conn, "BEGIN; DELETE FROM cased WHERE g = %u; DELETE FROM spelled WHERE g = %u;"
		                  " DELETE FROM plain WHERE g = %u; DELETE FROM tied WHERE g = %u AND g %% 2 = 1;"
		                  " DELETE FROM tied_part WHERE g = %u AND g %% 4 = 2; COMMIT",
		            g, g, g, g, g);
	else
		pgtest_exec(conn, "BEGIN; INSERT INTO cased VALUES (%s('key %u'), %u, %u);"
		                  " INSERT INTO spelled VALUES (round(%u.5, %u), %u, %u,"
		                  " repeat(md5('%u'), 100));"
		                  " INSERT INTO plain VALUES (10000000000 + %u, %u, %u, repeat(md5('%u'), 100));"
		                  " INSERT INTO tied SELECT 10000000000 + %u, %u, %u WHERE %u %% 2 = 1;"
		                  " INSERT INTO tied_part SELECT 10000000000 + %u, %u, %u WHERE %u %% 4 = 2;"
		                  " COMMIT",
		            i % 2 ? "upper" : "lower", g, g, i, g, 1 + i % 2, g, i, i, i, g, i, i, i, g, i, g,
		            i, g, i, g);
}

static void
spelled_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	spelled_op(conn, (i / 4) % HOT_SLOTS + 1, i % 4, i);
}

/* Rows whose keys a group in flight touched wait for its commit, the
 * others go at once: whatever goes first, the target ends as the source. */
static void
test_keys_held_by_groups_in_flight(void **state)
{
	tm_env *e = tm_env_new("parheld");
	pgtest_proc *run;
	long held, groups;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2',"
	                  "  deterministic = false);"
	                  "CREATE TABLE cased (k text COLLATE ci PRIMARY KEY, g int NOT NULL, n int);"
	                  "CREATE TABLE spelled (k numeric PRIMARY KEY, g int NOT NULL, n int, b text);"
	                  "ALTER TABLE spelled ALTER b SET STORAGE EXTERNAL;"
	                  "CREATE TABLE plain (k bigint PRIMARY KEY, g int NOT NULL, n int, b text);"
	                  "ALTER TABLE plain ALTER b SET STORAGE EXTERNAL;"
	                  "INSERT INTO plain SELECT g, g, 0, repeat(md5(g::text), 100)"
	                  "  FROM generate_series(1, 500) g;"
	                  "CREATE TABLE tied (k bigint PRIMARY KEY, g int NOT NULL, n int);"
	                  "INSERT INTO tied SELECT g, g, 0 FROM generate_series(1, 500) g;"
	                  "CREATE TABLE tied_part (LIKE tied INCLUDING ALL);"
	                  "INSERT INTO tied_part SELECT * FROM tied;"
	                  "INSERT INTO cased SELECT 'Key ' || g, g, 0 FROM generate_series(1, 500) g;"
	                  "INSERT INTO spelled SELECT g + 0.5, g, 0, repeat(md5(g::text), 100)"
	                  "  FROM generate_series(1, 500) g");
	tm_setup_table(e, "cased");
	tm_setup_table(e, "spelled");
	tm_setup_table(e, "plain");
	tm_setup_table(e, "tied");
	/* the same, partitioned on the target by hand, with the index on the
	 * partition that takes every row (none for the root) */
	pgtest_exec(e->t, "CREATE TABLE tied_part (k bigint PRIMARY KEY, g int NOT NULL, n int)"
	                  "  PARTITION BY RANGE (k);"
	                  "CREATE TABLE tied_all PARTITION OF tied_part FOR VALUES FROM (0) TO (1e12);"
	                  "CREATE TABLE tied_none PARTITION OF tied_part FOR VALUES FROM (1e12) TO (1e13)");
	tm_setup_table(e, "tied_part");
	tm_catch_up(e, 120);
	/* a unique index of the target's own: a key moved keeps its g, so the
	 * row under the new key may only go after the old one's delete */
	pgtest_exec(e->t, "CREATE UNIQUE INDEX ON tied (g); CREATE UNIQUE INDEX ON tied_all (g)");
	run = run_with_workers(e, "3");
	steps_on_source(e, spelled_step, NULL, 4000);
	/* last, rows updated, each then respelled: a row the respelling lost
	 * on the target stays lost (a later insert or upsert would bring it
	 * back); and rows moved, each then deleted: a delete that missed the
	 * row under its new key leaves it on the target */
	for (unsigned g = 1; g <= 200; g++)
		for (unsigned op = 0; op < 2; op++)
			spelled_op(e->s, g, op, 0);
	for (unsigned g = 201; g <= 400; g++)
		for (unsigned op = 1; op < 3; op++)
			spelled_op(e->s, g, op, 0);
	pgtest_proc_kill(run, SIGTERM);
	rc = pgtest_proc_wait(run, 60);
	if (rc != 0)
		fail_msg("run exited %d:\n%s", rc, pgtest_proc_output(run));
	/* the case was met: rows held back until an earlier group committed */
	held = count_before(pgtest_proc_output(run), "of them with rows held");
	groups = worker_groups(pgtest_proc_output(run));
	/* and none of them failed on the target (a deadlock, a row's lock
	 * waited for until the timeout) */
	if (groups < 100 || strstr(pgtest_proc_output(run), " error: ") != NULL)
		fail_msg("the workers applied %ld groups:\n%s", groups, pgtest_proc_output(run));
	pgtest_proc_free(run);
	tm_catch_up(e, 120);
	print_message("%ld groups applied by the workers, %ld with rows held\n", groups, held);
	tm_assert_rows_equal(e->s, "public.cased", e->t, "public.cased", "k, g, n");
	tm_assert_rows_equal(e->s, "public.spelled", e->t, "public.spelled", "k, g, n, md5(b)");
	tm_assert_rows_equal(e->s, "public.plain", e->t, "public.plain", "k, g, n, md5(b)");
	tm_assert_rows_equal(e->s, "public.tied", e->t, "public.tied", "k, g, n");
	tm_assert_rows_equal(e->s, "public.tied_part", e->t, "public.tied_part", "k, g, n");
	assert_true(held > 0);
	tm_env_free(e);
}

/* A live run stopped (it must exit 0: no refusal stopped it), saying
 * whether it met a refusal and applied the rows again; then caught up. */
static void
stop_after_retries(tm_env *e, pgtest_proc *run)
{
	int rc;

	pgtest_proc_kill(run, SIGTERM);
	rc = pgtest_proc_wait(run, 60);
	if (rc != 0)
		fail_msg("run exited %d:\n%s", rc, pgtest_proc_output(run));
	print_message("refused rows applied again: %s\n",
	              strstr(pgtest_proc_output(run), "applies them again") ? "yes" : "no (not met)");
	pgtest_proc_free(run);
	tm_catch_up(e, 60);
}

/* Row g of "moved" (a unique index on g on the target only): n updated,
 * the row moved to a new key keeping its g, deleted, inserted again under
 * another new key with the same g. */
static void
moved_op(PGconn *conn, unsigned g, unsigned op, unsigned i)
{
	if (op == 0)
		pgtest_exec(conn, "UPDATE moved SET n = n + 1 WHERE g = %u", g);
	else if (op == 1)
		pgtest_exec(conn, "UPDATE moved SET k = k + 1000000 WHERE g = %u", g);
	else if (op == 2)
		pgtest_exec(conn, "DELETE FROM moved WHERE g = %u", g);
	else
		pgtest_exec(conn, "INSERT INTO moved VALUES (10000000000 + %u, %u, %u)", i, g, i);
}

static void
moved_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	moved_op(conn, (i / 4) % HOT_SLOTS + 1, i % 4, i);
}

/* A unique index of the target's own created while run runs, after run
 * read the table's constraints: until run reads them again (within a
 * minute), it splits the table's groups by key, and a row can reach the
 * index before the held delete that freed its value. The refused group is
 * applied again in the source's order, instead of a stop with exit 5. */
static void
test_unique_index_added_while_running(void **state)
{
	tm_env *e = tm_env_new("paruniq");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE moved (k bigint PRIMARY KEY, g int NOT NULL, n int);"
	                  "INSERT INTO moved SELECT g, g, 0 FROM generate_series(1, 500) g");
	tm_setup_table(e, "moved");
	tm_catch_up(e, 60);
	run = run_with_workers(e, "3");
	/* the table's constraints read: none of the target's own */
	pgtest_exec(e->s, "UPDATE moved SET n = 7 WHERE g = 500");
	assert_true(pgtest_wait_value(e->t, "SELECT n FROM moved WHERE g = 500", "7", 60));
	pgtest_exec(e->t, "CREATE UNIQUE INDEX ON moved (g)");
	steps_on_source(e, moved_step, NULL, 3000);
	/* rows moved, each then deleted */
	for (unsigned g = 201; g <= 400; g++)
		for (unsigned op = 1; op < 3; op++)
			moved_op(e->s, g, op, 0);
	stop_after_retries(e, run);
	tm_assert_rows_equal(e->s, "public.moved", e->t, "public.moved", "k, g, n");
	tm_env_free(e);
}

/* Step i: a parent row, then (its own transaction) a child row that
 * references it. */
static void
family_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	pgtest_exec(conn, "INSERT INTO parent VALUES (%u)", i + 1);
	pgtest_exec(conn, "INSERT INTO child VALUES (%u, %u)", i + 1, i + 1);
}

/* The same with a foreign key of the target's own added while run runs:
 * a child row sent apart can reach the key before its parent's group has
 * committed. Applied again in the source's order, not a stop. */
static void
test_foreign_key_added_under_workers(void **state)
{
	tm_env *e = tm_env_new("parfk");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE parent (id int PRIMARY KEY);"
	                  "CREATE TABLE child (id int PRIMARY KEY, pid int NOT NULL);"
	                  "INSERT INTO parent VALUES (0); INSERT INTO child VALUES (0, 0)");
	tm_setup_table(e, "parent");
	tm_setup_table(e, "child");
	tm_catch_up(e, 60);
	run = run_with_workers(e, "3");
	/* both tables' constraints read: none of the target's own */
	pgtest_exec(e->s, "DELETE FROM child; DELETE FROM parent");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM parent", "0", 60));
	pgtest_exec(e->t, "ALTER TABLE child ADD FOREIGN KEY (pid) REFERENCES parent");
	steps_on_source(e, family_step, NULL, 1500);
	stop_after_retries(e, run);
	tm_assert_rows_equal(e->s, "public.parent", e->t, "public.parent", "id");
	tm_assert_rows_equal(e->s, "public.child", e->t, "public.child", "id, pid");
	tm_env_free(e);
}

/* Rows the target's own unique index refuses whatever their order (two
 * source rows with one value): applied again in the source's order once,
 * then the target's error and exit 5, as with one connection. */
static void
test_unique_refusal_still_stops(void **state)
{
	tm_env *e = tm_env_new("paruniq2");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE twice (k int PRIMARY KEY, g int NOT NULL);"
	                  "INSERT INTO twice VALUES (0, 0)");
	tm_setup_table(e, "twice");
	tm_catch_up(e, 60);
	pgtest_exec(e->t, "CREATE UNIQUE INDEX ON twice (g)");
	run = tm_spawn(e, "run", NULL);
	/* the table's definition read (on the apply's own connection): the
	 * rows after it go to a worker */
	pgtest_exec(e->s, "UPDATE twice SET g = 5 WHERE k = 0");
	assert_true(pgtest_wait_value(e->t, "SELECT g FROM twice WHERE k = 0", "5", 60));
	pgtest_exec(e->s, "INSERT INTO twice VALUES (1, 1); INSERT INTO twice VALUES (2, 1)");
	assert_int_equal(pgtest_proc_wait(run, 60), 5);
	tm_assert_has(pgtest_proc_output(run), "applies them again in the source's order");
	tm_assert_has(pgtest_proc_output(run), "a unique index added by hand on the target refuses "
	                                       "the source's rows");
	pgtest_proc_free(run);
	tm_env_free(e);
}

/* A trigger of the target's own that reads other rows sees them as after
 * every earlier group, as with one connection: a table with such a trigger
 * has its groups go whole once every earlier group is committed, also
 * while an earlier group waits on a lock of another session. */
static void
test_trigger_sees_earlier_groups(void **state)
{
	tm_env *e = tm_env_new("partrig");
	pgtest_proc *run;

	(void) state;
	tm_trigger_tables(e);
	tm_catch_up(e, 60);
	tm_trigger_look(e);
	run = run_with_workers(e, "2");
	/* both tables' target definitions read (on the apply's own connection,
	 * which would wait for every earlier group) */
	pgtest_exec(e->s, "UPDATE a SET v = 5 WHERE k = 5; UPDATE b SET v = 5 WHERE k = 5");
	assert_true(pgtest_wait_value(e->t, "SELECT v FROM b WHERE k = 5", "5", 60));
	tm_trigger_held_groups(e);
	tm_stop_and_catch_up(e, run, 60);
	/* as on the source, where b's update came after a's commit */
	tm_assert_value(e->t, "SELECT string_agg(b_k || ':' || b_v || ':' || a_v, ','"
	                      " ORDER BY b_k) FROM seen", "2:1:1,5:5:0");
	tm_assert_equal(e, "a", "k");
	tm_assert_equal(e, "b", "k");
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_atomicity),
		cmocka_unit_test(test_exactly_once_through_kill9),
		cmocka_unit_test(test_tpcb_sums_stay_equal),
		cmocka_unit_test(test_schema_change_between_groups),
		cmocka_unit_test(test_keys_held_by_groups_in_flight),
		cmocka_unit_test(test_trigger_sees_earlier_groups),
		cmocka_unit_test(test_unique_index_added_while_running),
		cmocka_unit_test(test_foreign_key_added_under_workers),
		cmocka_unit_test(test_unique_refusal_still_stops),
	};

	/* TEST_FILTER=test_trigger* runs only the tests whose names match */
	if (getenv("TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
