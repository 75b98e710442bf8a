/*
 * Integration tests of transactions the source streams while they are in
 * progress (apply.h: apply_received): with logical_decoding_work_mem at its
 * least (64kB, set on the source database), any transaction of more than a
 * few hundred rows is streamed in blocks before its commit.
 *
 * The large transactions: each sets n of every row of big to the next
 * round and records the round in rounds. A reader on the target checks,
 * in one snapshot each time, that big never holds two rounds at once and
 * that its round is the last one recorded (every large transaction whole);
 * beside them, one client moves amounts between accounts and appends to a
 * ledger (the ledger's ids are its commit order: the reader checks that
 * the sum never changes and the ledger has no gap). Every test ends by
 * comparing source and target with plain SQL.
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

#define BIG 20000
#define ACCOUNTS 100
#define BALANCE 1000

/* A fresh pair of databases whose source streams every transaction of
 * more than 64kB of changes. */
static tm_env *
streaming_env(const char *name)
{
	tm_env *e = tm_env_new(name);

	pgtest_exec(e->s, "ALTER DATABASE \"src_%s\" SET logical_decoding_work_mem = '64kB'", name);
	return e;
}

static void
schema(tm_env *e)
{
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, n int NOT NULL, pad text);"
	                  "INSERT INTO big SELECT g, 0, repeat('p', 40) FROM generate_series(1, %d) g;"
	                  "CREATE TABLE rounds (n int PRIMARY KEY);"
	                  "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);"
	                  "INSERT INTO accounts SELECT g, %d FROM generate_series(1, %d) g;"
	                  "CREATE TABLE ledger (id bigserial PRIMARY KEY, src int, dst int,"
	                  " amount int)",
	            BIG, BALANCE, ACCOUNTS);
	assert_int_equal(tm_run(e, 60, NULL, "setup", "--table", "public.big", "--table",
	                        "public.rounds", "--table", "public.accounts", "--table",
	                        "public.ledger", NULL),
	                 0);
	tm_catch_up(e, 120);
}

/* One large transaction: the next round, on every row of big. */
static void
big_round(PGconn *conn)
{
	pgtest_exec(conn, "BEGIN; UPDATE big SET n = n + 1;"
	                  " INSERT INTO rounds SELECT max(n) FROM big; COMMIT");
}

static void
big_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	(void) i;
	big_round(conn);
}

/* A large transaction on a tenth of big's rows (the copy's chunks meet
 * some of its rows, not all). */
static void
tenth_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	pgtest_exec(conn, "UPDATE big SET pad = md5(random()::text) WHERE id %% 10 = %u", i % 10);
}

static unsigned accounts = ACCOUNTS; /* tm_bank_step's */

/* ---- the reader on the target ---- */

typedef struct checker {
	const char *conninfo;
	volatile bool stop;
	long reads, torn_big, torn_sum, gaps;
	char example[160];
	pthread_t thread;
} checker;

static void
check_once(checker *c, PGconn *conn)
{
	PGresult *r = PQexec(conn, "SELECT (SELECT count(DISTINCT n) FROM big),"
	                           " (SELECT min(n) FROM big), (SELECT coalesce(max(n), 0) FROM"
	                           " rounds), (SELECT count(*) FROM rounds), (SELECT sum(balance)"
	                           " FROM accounts), (SELECT count(*) = coalesce(max(id), 0) FROM"
	                           " ledger)");

	if (PQresultStatus(r) == PGRES_TUPLES_OK) {
		long distinct = atol(PQgetvalue(r, 0, 0)), n = atol(PQgetvalue(r, 0, 1));
		long last = atol(PQgetvalue(r, 0, 2)), count = atol(PQgetvalue(r, 0, 3));

		c->reads++;
		if (distinct != 1 || n != last || n != count) {
			c->torn_big++;
			snprintf(c->example, sizeof c->example, "%ld rounds in big, the least %ld; rounds"
			         " recorded: %ld, the last %ld", distinct, n, count, last);
		}
		c->torn_sum += atol(PQgetvalue(r, 0, 4)) != (long) ACCOUNTS * BALANCE;
		c->gaps += strcmp(PQgetvalue(r, 0, 5), "t") != 0;
	}
	PQclear(r);
}

static void *
checker_main(void *arg)
{
	checker *c = arg;
	PGconn *conn = PQconnectdb(c->conninfo);

	while (!c->stop) {
		PQclear(PQexec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ"));
		check_once(c, conn);
		PQclear(PQexec(conn, "COMMIT"));
		tm_sleep_ms(5);
	}
	PQfinish(conn);
	return NULL;
}

static void
checker_start(checker *c, tm_env *e)
{
	memset(c, 0, sizeof *c);
	c->conninfo = e->dst;
	pthread_create(&c->thread, NULL, checker_main, c);
}

static void
checker_stop(checker *c)
{
	c->stop = true;
	pthread_join(c->thread, NULL);
	print_message("%ld target reads\n", c->reads);
	if (c->torn_big > 0)
		fail_msg("%ld of %ld reads saw a large transaction in part: %s", c->torn_big, c->reads,
		         c->example);
	if (c->torn_sum > 0 || c->gaps > 0)
		fail_msg("%ld of %ld reads saw a torn sum, %ld the ledger out of commit order",
		         c->torn_sum, c->reads, c->gaps);
	assert_true(c->reads > 20);
}

/* ---- comparing ---- */

static void
assert_all_equal(tm_env *e)
{
	tm_assert_equal(e, "public.big", "id");
	tm_assert_equal(e, "public.rounds", "n");
	tm_assert_equal(e, "public.accounts", "id");
	tm_assert_equal(e, "public.ledger", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(DISTINCT n) FROM big"), 1);
}

/* SIGTERM to a run; its output (new string). */
static char *
stop_run(pgtest_proc *run)
{
	char *out;

	pgtest_proc_kill(run, SIGTERM);
	if (pgtest_proc_wait(run, 60) != 0)
		fail_msg("tidemark run did not stop cleanly:\n%s", pgtest_proc_output(run));
	out = strdup(pgtest_proc_output(run));
	pgtest_proc_free(run);
	return out;
}

/* ---- tests ---- */

/* Large transactions under a stream of small ones, applied as they come:
 * each reaches the target whole and in commit order with the small ones. */
static void
test_direct_under_load(void **state)
{
	tm_env *e = streaming_env("stream_direct");
	pgtest_workload *bank;
	pgtest_proc *run;
	checker c;
	char *out;

	(void) state;
	schema(e);
	checker_start(&c, e);
	run = tm_start_run(e, NULL);
	bank = pgtest_workload_start(e->src, tm_bank_step, &accounts);
	for (int i = 0; i < 6; i++)
		big_round(e->s);
	pgtest_workload_stop(bank, NULL);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM rounds", "6", 120));
	out = stop_run(run);
	checker_stop(&c);
	tm_assert_has(out, "streamed while in progress, committed");
	tm_assert_has(out, "applied as they came");
	if (strstr(out, "applied at its commit") != NULL)
		fail_msg("a large transaction went to its spool:\n%s", out);
	free(out);
	tm_catch_up(e, 120);
	assert_all_equal(e);
	tm_env_free(e);
}

/* Subtransactions: savepoints rolled back (one with another inside it),
 * released, and the whole rolled back, each after its rows were streamed
 * (a subtransaction rolled back before the source decodes its rows is
 * never sent); applied as they come, and from the spool when a table in
 * another mode joins the transaction halfway. */
static void
subtransactions(tm_env *e, bool spooled, int round)
{
	int from = spooled ? BIG + 10001 : BIG + 1; /* new keys each time */
	pgtest_proc *run = tm_start_run(e, NULL);
	char want[16], *out;

	pgtest_exec(e->s,
	            "BEGIN;"
	            "INSERT INTO big SELECT g, (SELECT min(n) FROM big), 'new'"
	            " FROM generate_series(%d, %d) g;"
	            "SAVEPOINT a; UPDATE big SET n = 99; SELECT pg_sleep(1); ROLLBACK TO a;"
	            "SAVEPOINT b; INSERT INTO big SELECT g, (SELECT min(n) FROM big), 'b'"
	            " FROM generate_series(%d, %d) g;"
	            "RELEASE b;"
	            "%s"
	            "SAVEPOINT c; DELETE FROM big WHERE id %% 7 = 0;"
	            "SAVEPOINT d; UPDATE big SET pad = 'd'; SELECT pg_sleep(1); ROLLBACK TO c;"
	            "UPDATE big SET pad = 'kept' WHERE id %% 3 = 0;"
	            "SAVEPOINT e; UPDATE big SET pad = 'e' WHERE id %% 5 = 0; RELEASE e;"
	            "COMMIT",
	            from, from + 2999, from + 3000, from + 5999,
	            spooled ? "INSERT INTO hist SELECT g FROM generate_series(1, 10) g;" : "");
	pgtest_exec(e->s, "BEGIN; UPDATE big SET pad = 'gone'; SAVEPOINT x; DELETE FROM big;"
	                  " SELECT pg_sleep(1); ROLLBACK");
	big_round(e->s);
	snprintf(want, sizeof want, "%d", round);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM rounds", want, 120));
	out = stop_run(run);
	tm_assert_has(out, "streamed rows of a subtransaction rolled back are dropped");
	tm_assert_has(out, spooled ? "applied at its commit" : "applied as they came");
	if (spooled)
		tm_assert_has(out, "a change of a table kept in another mode than mirror");
	free(out);
	assert_all_equal(e);
}

static void
test_subtransactions(void **state)
{
	tm_env *e = streaming_env("stream_subs");

	(void) state;
	schema(e);
	pgtest_exec(e->s, "CREATE TABLE hist (id int PRIMARY KEY)");
	assert_int_equal(tm_run(e, 60, NULL, "setup", "--table", "public.hist", "--table-mode",
	                        "public.hist=history", NULL),
	                 0);
	tm_catch_up(e, 120);
	subtransactions(e, false, 1);
	subtransactions(e, true, 2);
	tm_assert_equal(e, "public.hist", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM hist_history WHERE"
	                                         " tidemark_op = 'insert'"), 10);
	tm_env_free(e);
}

/* Three large transactions at once, their blocks interleaved in the
 * stream: one is applied as it comes (one at a time), the others go to
 * their spools; they commit in another order than they began, and one
 * rolls back. */
static void
test_interleaved(void **state)
{
	tm_env *e = streaming_env("stream_mix");
	PGconn *c[3];
	pgtest_proc *run;
	char *out;

	(void) state;
	schema(e);
	pgtest_exec(e->s, "CREATE TABLE other (id int PRIMARY KEY, v text)");
	assert_int_equal(tm_run(e, 60, NULL, "setup", "--table", "public.other", NULL), 0);
	run = tm_start_run(e, NULL);
	for (int i = 0; i < 3; i++)
		c[i] = pgtest_connect_str(e->src);
	for (int i = 0; i < 3; i++)
		pgtest_exec(c[i], "BEGIN");
	/* rows of each in turn, so that their blocks alternate */
	for (int step = 0; step < 4; step++)
		for (int i = 0; i < 3; i++) {
			pgtest_exec(c[i], "INSERT INTO other SELECT g, 'c%d s%d' FROM generate_series(%d, %d) g",
			            i, step, i * 100000 + step * 2000 + 1, i * 100000 + step * 2000 + 2000);
			tm_sleep_ms(200);
		}
	pgtest_exec(c[2], "COMMIT");
	pgtest_exec(c[1], "ROLLBACK");
	pgtest_exec(c[0], "COMMIT");
	big_round(e->s);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM rounds", "1", 120));
	out = stop_run(run);
	tm_assert_has(out, "applied as they came");
	tm_assert_has(out, "applied at its commit");
	free(out);
	for (int i = 0; i < 3; i++)
		PQfinish(c[i]);
	tm_assert_equal(e, "public.other", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM other"), 16000);
	assert_all_equal(e);
	tm_env_free(e);
}

/* A schema change inside a large transaction: applied at its commit, at
 * its place among the rows (the column added, then filled). */
static void
test_schema_change_inside(void **state)
{
	tm_env *e = streaming_env("stream_ddl");
	char *out = NULL;

	(void) state;
	schema(e);
	pgtest_exec(e->s, "BEGIN; UPDATE big SET n = n + 1;"
	                  " ALTER TABLE big ADD COLUMN note text DEFAULT 'x';"
	                  " UPDATE big SET note = 'note ' || id WHERE id %% 2 = 0;"
	                  " INSERT INTO rounds VALUES (1); COMMIT");
	assert_int_equal(tm_run(e, 180, &out, "run", "--until-caught-up", NULL), 0);
	tm_assert_has(out, "a schema change or another message of tidemark's");
	free(out);
	assert_all_equal(e);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM big WHERE note = 'x'"),
	                 BIG / 2);
	tm_env_free(e);
}

/* A DDL in a savepoint rolled back inside a large transaction, after the
 * savepoint's rows were streamed: the stream's messages cannot say which
 * subtransaction wrote the capture message, so the session starts again
 * without streaming until that transaction is applied, then with
 * streaming again; the column the savepoint added never reaches the
 * target. */
static void
test_schema_change_rolled_back(void **state)
{
	tm_env *e = streaming_env("stream_ddl_sp");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	schema(e);
	/* the savepoint's rows are streamed while it lives (a subtransaction
	 * rolled back before the source decodes its rows is never sent) */
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "BEGIN; UPDATE big SET n = n + 1;"
	                  " SAVEPOINT s; ALTER TABLE big ADD COLUMN bad int;"
	                  " UPDATE big SET bad = 1; SELECT pg_sleep(2); ROLLBACK TO s;"
	                  " UPDATE big SET pad = 'after' WHERE id %% 2 = 0;"
	                  " INSERT INTO rounds VALUES (1); COMMIT");
	big_round(e->s);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM rounds", "2", 120));
	if (!pgtest_proc_wait_output(run, "the stream starts again with streaming", 60))
		fail_msg("the stream did not start again with streaming:\n%s", pgtest_proc_output(run));
	out = stop_run(run);
	tm_assert_has(out, "the stream starts again without streaming");
	tm_assert_has(out, "the stream starts again with streaming");
	free(out);
	assert_all_equal(e);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM information_schema.columns"
	                                         " WHERE table_name = 'big' AND column_name ="
	                                         " 'bad'"), 0);
	tm_env_free(e);
}

/* kill -9 at any instant while large transactions stream (some applied
 * as they come, open on the target when killed): nothing lost, none in
 * part. */
static void
test_kill9(void **state)
{
	tm_env *e = streaming_env("stream_kill9");
	pgtest_workload *big, *bank;
	checker c;

	(void) state;
	schema(e);
	checker_start(&c, e);
	big = pgtest_workload_start(e->src, big_step, NULL);
	bank = pgtest_workload_start(e->src, tm_bank_step, &accounts);
	tm_kill9_runs(e, 3, 500, NULL);
	pgtest_workload_stop(big, NULL);
	pgtest_workload_stop(bank, NULL);
	tm_catch_up(e, 180);
	checker_stop(&c);
	assert_all_equal(e);
	tm_env_free(e);
}

/* Large transactions writing a table while it is copied (again), in
 * chunks between watermarks: one open when a chunk's window opens goes to
 * its spool (its rows meet the copy's windows at its commit), and the copy
 * ends equal. */
static void
test_during_copy(void **state)
{
	tm_env *e = streaming_env("stream_copy");
	pgtest_workload *big;
	pgtest_proc *run;
	char *out;

	(void) state;
	schema(e);
	run = tm_start_run(e, "--chunk-rows", "4000", NULL);
	big = pgtest_workload_start(e->src, tenth_step, NULL);
	assert_int_equal(tm_run(e, 60, NULL, "snapshot", "public.big", NULL), 0);
	assert_true(pgtest_wait_value(e->t, "SELECT state = 'streaming' AND snapshot_finished_at >"
	                                    " snapshot_requested_at FROM tidemark.tables WHERE"
	                                    " source_table = 'big'", "t", 120));
	pgtest_workload_stop(big, NULL);
	out = stop_run(run);
	if (getenv("TEST_VERBOSE") != NULL)
		fprintf(stderr, "%s\n", out);
	tm_assert_has(out, "streamed while in progress, committed");
	free(out);
	tm_catch_up(e, 120);
	assert_all_equal(e);
	tm_env_free(e);
}

/* A lock the transaction applied as it comes holds on the target that
 * the apply's own connection waits for (a unique index the target alone
 * has: only the source decides what is unique there, and it allowed a
 * later transaction to take the value): after a few seconds that
 * transaction goes back to its spool, the wait ends, and it is applied at
 * its commit without the value it gave up. Without this the apply would
 * wait for its own open transaction until the lock timeout, then again
 * after every retry. */
static void
test_lock_of_its_own(void **state)
{
	tm_env *e = streaming_env("stream_stall");
	pgtest_proc *run;
	PGconn *other;
	char *out;

	(void) state;
	schema(e);
	pgtest_exec(e->t, "CREATE UNIQUE INDEX big_pad_u ON big (pad) WHERE pad LIKE 'u%%'");
	run = tm_start_run(e, NULL);
	other = pgtest_connect_str(e->src);
	pgtest_exec(e->s, "BEGIN; UPDATE big SET pad = 'u1' WHERE id = 1;"
	                  " UPDATE big SET pad = 'big' WHERE id > 2");
	/* its rows are streamed and applied as they come, u1 with them */
	tm_sleep_ms(1500);
	pgtest_exec(other, "UPDATE big SET pad = 'u1' WHERE id = 2");
	pgtest_exec(e->s, "UPDATE big SET pad = 'x' WHERE id = 1; INSERT INTO rounds VALUES (1);"
	                  " COMMIT");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM rounds", "1", 120));
	out = stop_run(run);
	/* (a machine slow to stream it gets the other transaction's u1 first:
	 * then the target refuses its own, test_refused_statement's case) */
	if (strstr(out, "waits for a lock it may hold") == NULL)
		tm_assert_has(out, "the target refused a statement of it");
	tm_assert_has(out, "applied at its commit");
	free(out);
	PQfinish(other);
	assert_all_equal(e);
	tm_env_free(e);
}

/* A state inside the transaction that the target refuses (a unique index
 * of its own, and a value the transaction gives up before its commit):
 * applied as it came, the statement fails; the transaction goes to its
 * spool and is applied at its commit the usual way, where its net changes
 * never hold that state. */
static void
test_refused_statement(void **state)
{
	tm_env *e = streaming_env("stream_refused");
	char *out = NULL;

	(void) state;
	schema(e);
	pgtest_exec(e->t, "CREATE UNIQUE INDEX big_pad_u ON big (pad) WHERE pad LIKE 'u%%'");
	pgtest_exec(e->s, "UPDATE big SET pad = 'u1' WHERE id = 2");
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "BEGIN; UPDATE big SET pad = 'u1' WHERE id = 1;"
	                  " UPDATE big SET pad = 'big' WHERE id > 2;"
	                  " UPDATE big SET pad = 'x' WHERE id = 1; INSERT INTO rounds VALUES (1);"
	                  " COMMIT");
	assert_int_equal(tm_run(e, 120, &out, "run", "--until-caught-up", NULL), 0);
	tm_assert_has(out, "the target refused a statement of it");
	tm_assert_has(out, "applied at its commit");
	free(out);
	assert_all_equal(e);
	tm_env_free(e);
}

/* --no-streaming: the same transactions come whole at their commit. */
static void
test_no_streaming(void **state)
{
	tm_env *e = streaming_env("stream_off");
	char *out = NULL;

	(void) state;
	schema(e);
	big_round(e->s);
	pgtest_exec(e->s, "BEGIN; UPDATE big SET pad = 'x'; SAVEPOINT a; DELETE FROM big;"
	                  " ROLLBACK TO a; COMMIT");
	assert_int_equal(tm_run(e, 180, &out, "run", "--until-caught-up", "--no-streaming", NULL), 0);
	if (strstr(out, "streamed while in progress") != NULL)
		fail_msg("a transaction was streamed with --no-streaming:\n%s", out);
	free(out);
	assert_all_equal(e);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct_under_load),
		cmocka_unit_test(test_subtransactions),
		cmocka_unit_test(test_interleaved),
		cmocka_unit_test(test_schema_change_inside),
		cmocka_unit_test(test_schema_change_rolled_back),
		cmocka_unit_test(test_kill9),
		cmocka_unit_test(test_during_copy),
		cmocka_unit_test(test_lock_of_its_own),
		cmocka_unit_test(test_refused_statement),
		cmocka_unit_test(test_no_streaming),
	};

	if (getenv("TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
