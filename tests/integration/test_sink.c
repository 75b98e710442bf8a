/*
 * The target connection (sink.h) against a real target: statements sent in
 * rounds without waiting for the ones before, their results read as they
 * come, a COMMIT not waited for.
 *
 *   - thousands of statements in flight all arrive, each row once, and the
 *     commit's WAL position is read;
 *   - a statement refused in the last round before a COMMIT that was not
 *     waited for: the next transaction's COMMIT is never sent (its rows
 *     never show), and the failure names the statement;
 *   - a failure read first by another call still fails the commit;
 *   - the statement cache deallocates and forgets statements while their
 *     executions are still in unread rounds (a tiny budget): every
 *     execution's result is still counted against its own statement;
 *   - refusals that an order of rows can cause are retries when asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exitcode.h"
#include "pgconn.h"
#include "sink.h"
#include "tm_fixture.h"

static sink *
open_sink(tm_env *e)
{
	sink *s = NULL;

	assert_int_equal(sink_open(e->dst, "test", &s), TM_OK);
	return s;
}

/* n single-row inserts of ids from first, one prepared statement. */
static int
insert_rows(sink *s, const char *table, int first, int n)
{
	char sql[128], id[16];
	const char *values[1] = {id};
	int rc = TM_OK;

	snprintf(sql, sizeof sql, "INSERT INTO %s VALUES ($1::int)", table);
	for (int i = 0; rc == TM_OK && i < n; i++) {
		snprintf(id, sizeof id, "%d", first + i);
		rc = sink_send(s, sink_stmt_get(s, sql, 1), values, NULL);
	}
	return rc;
}

static void
test_rounds_in_flight(void **state)
{
	tm_env *e = tm_env_new("sinkrounds");
	sink *s;
	tm_lsn before = LSN_INVALID, wal_end = LSN_INVALID;
	bool done = false;

	(void) state;
	pgtest_exec(e->t, "CREATE TABLE a (id int PRIMARY KEY)");
	s = open_sink(e);
	assert_int_equal(sink_flushed(s, &before), TM_OK);
	assert_int_equal(sink_begin(s), TM_OK);
	assert_int_equal(insert_rows(s, "a", 1, 5000), TM_OK); /* 10 rounds */
	assert_int_equal(sink_commit_send(s), TM_OK);
	assert_int_equal(sink_commit_wait(s, true, &done, &wal_end), TM_OK);
	assert_true(done);
	assert_true(wal_end > before);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a"), 5000);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(DISTINCT id) FROM a"), 5000);
	/* a second transaction on the same connection, after one not waited for */
	assert_int_equal(sink_begin(s), TM_OK);
	assert_int_equal(insert_rows(s, "a", 5001, 10), TM_OK);
	assert_int_equal(sink_commit_send(s), TM_OK);
	assert_int_equal(sink_sync(s), TM_OK);
	assert_int_equal(sink_commit_wait(s, false, &done, NULL), TM_OK);
	assert_true(done);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a"), 5010);
	sink_close(s);
	tm_env_free(e);
}

static void
test_failure_holds_back_the_next_commit(void **state)
{
	tm_env *e = tm_env_new("sinkfail");
	sink *s;
	int rc;

	(void) state;
	pgtest_exec(e->t, "CREATE TABLE a (id int PRIMARY KEY CHECK (id <> 1200));"
	                  "CREATE TABLE b (id int)");
	s = open_sink(e);
	assert_int_equal(sink_begin(s), TM_OK);
	/* the refused row last: its result is not read when COMMIT goes */
	rc = insert_rows(s, "a", 1, 1200);
	if (rc == TM_OK)
		rc = sink_commit_send(s);
	if (rc == TM_OK) {
		/* the next transaction, sent at once */
		assert_int_equal(sink_begin(s), TM_OK);
		rc = insert_rows(s, "b", 1, 3);
		if (rc == TM_OK)
			rc = sink_commit_send(s);
	}
	assert_int_equal(rc, TM_EXIT_TARGET);
	sink_rollback(s);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a"), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM b"), 0);
	/* the connection goes on */
	assert_int_equal(sink_begin(s), TM_OK);
	assert_int_equal(insert_rows(s, "b", 1, 3), TM_OK);
	assert_int_equal(sink_commit(s, NULL), TM_OK);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM b"), 3);
	sink_close(s);
	tm_env_free(e);
}

/* One row inserted into table and committed: sink_commit's status; a
 * failed transaction is rolled back. */
static int
insert_and_commit(sink *s, const char *table, int id)
{
	int rc;

	assert_int_equal(sink_begin(s), TM_OK);
	assert_int_equal(insert_rows(s, table, id, 1), TM_OK);
	rc = sink_commit(s, NULL);
	if (rc != TM_OK)
		sink_rollback(s);
	return rc;
}

/* With sink_set_order_retry: a unique, exclusion or foreign-key refusal
 * (which rows sent out of the source's order can meet) is a retry, not the
 * target's error; a CHECK refusal (no order causes it) stays the error;
 * off, the unique refusal is the error again. The connection goes on each
 * time. */
static void
test_order_refusal_retried(void **state)
{
	tm_env *e = tm_env_new("sinkorder");
	sink *s;

	(void) state;
	pgtest_exec(e->t, "CREATE TABLE a (id int PRIMARY KEY CHECK (id <> 7));"
	                  "CREATE TABLE c (id int REFERENCES a); INSERT INTO a VALUES (1);"
	                  "CREATE TABLE x (id int, EXCLUDE USING gist (int4range(id, id + 2) WITH &&));"
	                  "INSERT INTO x VALUES (10)");
	s = open_sink(e);
	sink_set_order_retry(s, true);
	assert_int_equal(insert_and_commit(s, "a", 1), PGCONN_RETRY_TARGET);
	/* [11,13) overlaps 10's [10,12) */
	assert_int_equal(insert_and_commit(s, "x", 11), PGCONN_RETRY_TARGET);
	assert_int_equal(insert_and_commit(s, "c", 2), PGCONN_RETRY_TARGET);
	assert_int_equal(insert_and_commit(s, "a", 7), TM_EXIT_TARGET);
	sink_set_order_retry(s, false);
	assert_int_equal(insert_and_commit(s, "a", 1), TM_EXIT_TARGET);
	assert_int_equal(insert_and_commit(s, "a", 2), TM_OK);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a"), 2);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM c"), 0);
	sink_close(s);
	tm_env_free(e);
}

/* The failure of a transaction read by another call first (here a read of
 * the flushed position, whose status is set aside): its commit still
 * fails, though its COMMIT, alone in a round after the failed one, is
 * answered as a ROLLBACK without an error. */
static void
test_failure_read_elsewhere_fails_the_commit(void **state)
{
	tm_env *e = tm_env_new("sinksticky");
	sink *s;
	tm_lsn flushed;
	bool done = false;
	int rc;

	(void) state;
	pgtest_exec(e->t, "CREATE TABLE a (id int PRIMARY KEY CHECK (id <> 1000))");
	s = open_sink(e);
	assert_int_equal(sink_begin(s), TM_OK);
	/* BEGIN and 1,021 rows: two full rounds; the COMMIT starts a third */
	rc = insert_rows(s, "a", 1, 1021);
	(void) sink_flushed(s, &flushed);
	if (rc == TM_OK)
		rc = sink_commit_send(s);
	if (rc == TM_OK)
		rc = sink_commit_wait(s, true, &done, NULL);
	assert_int_equal(rc, TM_EXIT_TARGET);
	sink_rollback(s);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a"), 0);
	sink_close(s);
	tm_env_free(e);
}

#define STATEMENTS 64

static void
test_statements_forgotten_in_flight(void **state)
{
	tm_env *e = tm_env_new("sinkcache");
	sink *s;
	char sql[160], id[16];
	const char *values[1] = {id};
	bool done;
	int rc = TM_OK;

	(void) state;
	pgtest_exec(e->t, "CREATE TABLE a (id int PRIMARY KEY, v int);"
	                  "INSERT INTO a SELECT g, 0 FROM generate_series(1, 4000) g");
	s = open_sink(e);
	sink_set_statement_budget(s, 1024);
	assert_int_equal(sink_begin(s), TM_OK);
	/* 64 statement texts in turn, each execution of one row: 1 in 4
	 * matches no row, counted against its statement's label */
	for (int i = 0; rc == TM_OK && i < 4000; i++) {
		sink_stmt *st;

		snprintf(sql, sizeof sql, "UPDATE a SET v = v + %d WHERE id = $1::int",
		         i % STATEMENTS + 1);
		st = sink_stmt_get(s, sql, 1);
		sink_stmt_expect_row(s, st, "an update of a");
		snprintf(id, sizeof id, "%d", i % 4 == 0 ? 100000 + i : i + 1);
		rc = sink_send(s, st, values, NULL);
	}
	assert_int_equal(rc, TM_OK);
	assert_int_equal(sink_commit_send(s), TM_OK);
	assert_int_equal(sink_commit_wait(s, true, &done, NULL), TM_OK);
	assert_int_equal(sink_misses_of(s, "an update of a"), 1000);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a WHERE v > 0"), 3000);
	sink_close(s);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rounds_in_flight),
		cmocka_unit_test(test_failure_holds_back_the_next_commit),
		cmocka_unit_test(test_failure_read_elsewhere_fails_the_commit),
		cmocka_unit_test(test_statements_forgotten_in_flight),
		cmocka_unit_test(test_order_refusal_retried),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
