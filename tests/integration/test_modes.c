/*
 * Integration tests of table modes (README: Table modes) against real
 * source and target clusters: a history of every row version keyed by log
 * position, soft deletes and metadata columns. Each test ends by comparing
 * what the source did with what the target holds in plain SQL.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tm_fixture.h"

/* `setup --table T` with extra arguments (NULL-terminated), expecting exit 0. */
static void
setup_with(tm_env *e, const char *table, const char *arg1, const char *arg2, const char *arg3)
{
	char *out = NULL;
	int rc = tm_run(e, 60, &out, "setup", "--table", table, arg1, arg2, arg3, NULL);

	if (rc != 0)
		fail_msg("setup exited %d:\n%s", rc, out);
	free(out);
}

/* The target's mode of every table, set in the catalog (as `setup
 * --table-mode` stores it) and its objects made. */
static void
set_mode(tm_env *e, const char *mode, bool metadata)
{
	pgtest_exec(e->t,
	            "UPDATE tidemark.tables SET mode = '%s', metadata_columns = %s;"
	            "SELECT tidemark.shape_sync(table_id) FROM tidemark.tables",
	            mode, metadata ? "true" : "false");
}

/* A history through a copy and every kind of change: copy entries, then
 * one entry per change in order, a key change as delete and update, a
 * TRUNCATE as a delete of each row, an unchanged TOAST value whole in the
 * entry, the versions view's intervals. */
static void
test_history_smoke(void **state)
{
	tm_env *e = tm_env_new("hist_smoke");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE w (id int PRIMARY KEY, bal int, big text);"
	                  "ALTER TABLE w ALTER big SET STORAGE EXTERNAL;"
	                  "INSERT INTO w SELECT g, 100, NULL FROM generate_series(1, 5) g");
	setup_with(e, "public.w", NULL, NULL, NULL);
	set_mode(e, "history", true);
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w_history WHERE tidemark_op"
	                                         " = 'copy'"), 5);
	/* only appended, by position: the primary key is its one index; one of
	 * the user's own by key stays through a schema change */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_index WHERE indrelid ="
	                                         " 'w_history'::regclass"), 1);
	pgtest_exec(e->t, "CREATE INDEX w_history_by_id ON w_history (id, tidemark_lsn)");
	pgtest_exec(e->s, "ALTER TABLE w ADD COLUMN note text");
	pgtest_exec(e->s, "UPDATE w SET big = repeat('x', 10000) WHERE id = 1;"
	                  "UPDATE w SET bal = bal - 10 WHERE id = 1;" /* big unchanged TOAST */
	                  "BEGIN; UPDATE w SET bal = bal + 10 WHERE id = 2;"
	                  "UPDATE w SET bal = bal - 10 WHERE id = 3; COMMIT;"
	                  "UPDATE w SET id = 50 WHERE id = 4;"
	                  "DELETE FROM w WHERE id = 5;"
	                  "INSERT INTO w VALUES (6, 1, 'new')");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "public.w", e->t, "public.w", "id, bal, big, note");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w_history"), 5 + 8);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_index WHERE indrelid ="
	                                         " 'w_history'::regclass"), 2);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM information_schema.columns"
	                                         " WHERE table_name = 'w_history' AND"
	                                         " column_name = 'note'"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT length(big) FROM w_history WHERE id = 1"
	                                         " ORDER BY tidemark_lsn DESC, tidemark_seq DESC"
	                                         " LIMIT 1"), 10000);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w_versions WHERE"
	                                         " tidemark_is_current"), 5);
	/* a copy again writes nothing new: the values are the history's */
	{
		char *out = NULL;
		int rc = tm_run(e, 60, &out, "snapshot", "public.w", NULL);

		assert_int_equal(rc, 0);
		free(out);
	}
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w_history"), 5 + 8);
	/* values the source computed (USING): copied again, a copy entry for
	 * each row, of its new value */
	pgtest_exec(e->s, "ALTER TABLE w ALTER bal TYPE bigint USING bal * 2");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "public.w", e->t, "public.w", "id, bal, big, note");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w_history"), 5 + 8 + 5);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w_versions v JOIN w USING (id)"
	                                         " WHERE v.tidemark_is_current AND"
	                                         " v.tidemark_op = 'copy' AND v.bal = w.bal"), 5);
	pgtest_exec(e->s, "TRUNCATE w");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w_history WHERE"
	                                         " tidemark_op = 'delete'"), 2 + 5);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w_versions WHERE"
	                                         " tidemark_is_current"), 0);
	tm_env_free(e);
}

/* Soft deletes: a delete marks the row with the source's commit time, an
 * insert of the key again clears it, TRUNCATE marks every row. */
static void
test_soft_delete_smoke(void **state)
{
	tm_env *e = tm_env_new("soft_smoke");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE o (id int PRIMARY KEY, s text);"
	                  "INSERT INTO o SELECT g, 'a' FROM generate_series(1, 4) g");
	setup_with(e, "public.o", NULL, NULL, NULL);
	set_mode(e, "soft-delete", true);
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "DELETE FROM o WHERE id IN (1, 2); INSERT INTO o VALUES (2, 'again')");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM o"), 4);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM o WHERE tidemark_deleted_at"
	                                         " IS NOT NULL"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM o WHERE tidemark_lsn IS NULL"
	                                         " OR tidemark_synced_at IS NULL"), 0);
	pgtest_exec(e->s, "TRUNCATE o");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM o WHERE tidemark_deleted_at"
	                                         " IS NULL"), 0);
	tm_env_free(e);
}

/* ---- what the source did, and comparing it with the history ---- */

/*
 * changes_log on the source (not replicated): one line per row change of
 * table, written by a trigger in the changing transaction, with the row
 * as it is after the change (before it, for a delete) as jsonb. A key
 * change is logged as a delete of the old key and an update of the new
 * one, and a TRUNCATE as a delete of every row: how a history records
 * them. Per key, serial order is commit order (the row lock orders them).
 */
static void
log_changes(tm_env *e, const char *table)
{
	pgtest_exec(e->s,
	            "CREATE TABLE IF NOT EXISTS changes_log (serial bigserial PRIMARY KEY,"
	            " id int NOT NULL, op text NOT NULL, r jsonb NOT NULL);"
	            "CREATE OR REPLACE FUNCTION log_change() RETURNS trigger LANGUAGE plpgsql AS $$"
	            "BEGIN"
	            "  IF TG_OP = 'TRUNCATE' THEN"
	            "    EXECUTE format('INSERT INTO changes_log (id, op, r) SELECT t.id, ''delete'',"
	            " to_jsonb(t) FROM %%s t ORDER BY t.id', TG_RELID::regclass);"
	            "  ELSIF TG_OP = 'DELETE' THEN"
	            "    INSERT INTO changes_log (id, op, r) VALUES (OLD.id, 'delete', to_jsonb(OLD));"
	            "  ELSIF TG_OP = 'INSERT' THEN"
	            "    INSERT INTO changes_log (id, op, r) VALUES (NEW.id, 'insert', to_jsonb(NEW));"
	            "  ELSE"
	            "    IF OLD.id <> NEW.id THEN"
	            "      INSERT INTO changes_log (id, op, r) VALUES (OLD.id, 'delete', to_jsonb(OLD));"
	            "    END IF;"
	            "    INSERT INTO changes_log (id, op, r) VALUES (NEW.id, 'update', to_jsonb(NEW));"
	            "  END IF;"
	            "  RETURN NULL;"
	            "END$$;"
	            "CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON %s"
	            " FOR EACH ROW EXECUTE FUNCTION log_change();"
	            "CREATE TRIGGER log_truncate BEFORE TRUNCATE ON %s"
	            " FOR EACH STATEMENT EXECUTE FUNCTION log_change()",
	            table, table);
}

/* Asserts two queries (one per server) return the same rows in the same
 * order, every value compared by its text; what names the comparison. */
static void
assert_same_result(PGconn *a, const char *sql_a, PGconn *b, const char *sql_b, const char *what)
{
	PGresult *ra = PQexec(a, sql_a);
	PGresult *rb = PQexec(b, sql_b);
	int n;

	if (PQresultStatus(ra) != PGRES_TUPLES_OK)
		fail_msg("%s: %s: %s", what, sql_a, PQerrorMessage(a));
	if (PQresultStatus(rb) != PGRES_TUPLES_OK)
		fail_msg("%s: %s: %s", what, sql_b, PQerrorMessage(b));
	assert_int_equal(PQnfields(ra), PQnfields(rb));
	n = PQntuples(ra) > PQntuples(rb) ? PQntuples(ra) : PQntuples(rb);
	for (int i = 0; i < n; i++) {
		for (int c = 0; c < PQnfields(ra); c++) {
			const char *va = i >= PQntuples(ra) ? "(no row)"
			                 : PQgetisnull(ra, i, c) ? "NULL" : PQgetvalue(ra, i, c);
			const char *vb = i >= PQntuples(rb) ? "(no row)"
			                 : PQgetisnull(rb, i, c) ? "NULL" : PQgetvalue(rb, i, c);

			if (strcmp(va, vb) != 0)
				fail_msg("%s: row %d (of %d and %d), column %d differs:\n  source: %.400s\n"
				         "  target: %.400s", what, i + 1, PQntuples(ra), PQntuples(rb), c + 1,
				         va, vb);
		}
	}
	PQclear(ra);
	PQclear(rb);
}

/*
 * Per key, the history's non-copy entries in log order are the source's
 * logged changes in serial order: the op and the values, hist_expr (SQL
 * over the history's columns) and log_expr (SQL over changes_log's r)
 * written to give the same text.
 */
static void
assert_history_is_log(tm_env *e, const char *history, const char *hist_expr, const char *log_expr)
{
	char src[1024], dst[1024];

	snprintf(src, sizeof src,
	         "SELECT id, count(*), string_agg(op || ':' || coalesce(%s, 'NULL'), ','"
	         " ORDER BY serial) FROM changes_log GROUP BY id ORDER BY id", log_expr);
	snprintf(dst, sizeof dst,
	         "SELECT id, count(*), string_agg(tidemark_op || ':' || coalesce(%s, 'NULL'), ','"
	         " ORDER BY tidemark_lsn, tidemark_seq) FROM %s WHERE tidemark_op <> 'copy'"
	         " GROUP BY id ORDER BY id", hist_expr, history);
	assert_same_result(e->s, src, e->t, dst, "the history's entries per key");
	/* and as many of each kind */
	snprintf(src, sizeof src, "SELECT op, count(*) FROM changes_log GROUP BY 1 ORDER BY 1");
	snprintf(dst, sizeof dst, "SELECT tidemark_op, count(*) FROM %s WHERE tidemark_op <> 'copy'"
	                          " GROUP BY 1 ORDER BY 1", history);
	assert_same_result(e->s, src, e->t, dst, "the history's entries per op");
}

/* No key's history has a copy entry right after an entry of the same
 * values (row_expr: SQL of the data columns as one text) unless that
 * entry is a delete: a copy writes only what the history lacks. */
static void
assert_no_redundant_copy(tm_env *e, const char *history, const char *row_expr)
{
	assert_int_equal(pgtest_query_long(e->t,
	                 "SELECT count(*) FROM (SELECT tidemark_op, %s AS r,"
	                 " lag(tidemark_op) OVER w AS prev_op, lag(%s) OVER w AS prev_r FROM %s"
	                 " WINDOW w AS (PARTITION BY id ORDER BY tidemark_lsn, tidemark_seq)) x"
	                 " WHERE tidemark_op = 'copy' AND prev_op <> 'delete' AND r = prev_r",
	                 row_expr, row_expr, history), 0);
}

/* Waits until the workload has done at least n more steps than now. */
static void
wait_steps(pgtest_workload *w, unsigned n)
{
	unsigned target = pgtest_workload_iterations(w) + n;

	for (int i = 0; i < 1500 && pgtest_workload_iterations(w) < target; i++)
		tm_sleep_ms(20);
	assert_true(pgtest_workload_iterations(w) >= target);
}

/* ---- exactly once: transfers through kill -9 ---- */

#define WALLETS 40
#define START_BAL 1000

/* Source functions of the bank, each one transaction of the workload: a
 * transfer between two random wallets; churn: a new wallet, and a random
 * one emptied into another and deleted. */
static void
bank_functions(tm_env *e)
{
	pgtest_exec(e->s,
	            "CREATE SEQUENCE wallet_ids START %d;"
	            "CREATE FUNCTION transfer(amt bigint) RETURNS void LANGUAGE plpgsql AS $$"
	            "DECLARE a int; b int;"
	            "BEGIN"
	            "  SELECT id INTO a FROM wallets ORDER BY random() LIMIT 1;"
	            "  SELECT id INTO b FROM wallets WHERE id <> a ORDER BY random() LIMIT 1;"
	            "  UPDATE wallets SET bal = bal - amt WHERE id = a;"
	            "  UPDATE wallets SET bal = bal + amt WHERE id = b;"
	            "END$$;"
	            "CREATE FUNCTION churn() RETURNS void LANGUAGE plpgsql AS $$"
	            "DECLARE a int; b int;"
	            "BEGIN"
	            "  INSERT INTO wallets VALUES (nextval('wallet_ids'), 0);"
	            "  SELECT id INTO a FROM wallets ORDER BY random() LIMIT 1;"
	            "  SELECT id INTO b FROM wallets WHERE id <> a ORDER BY random() LIMIT 1;"
	            "  UPDATE wallets SET bal = bal + (SELECT bal FROM wallets WHERE id = a)"
	            "   WHERE id = b;"
	            "  UPDATE wallets SET bal = 0 WHERE id = a;"
	            "  DELETE FROM wallets WHERE id = a;"
	            "END$$",
	            WALLETS + 1);
}

static void
bank_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	if (i % 9 == 8)
		pgtest_exec(conn, "SELECT churn()");
	else
		pgtest_exec(conn, "SELECT transfer(%u)", i % 50 + 1);
}

/* Runs tidemark and kills it with SIGKILL at random moments, rounds times. */
static void
kill9_rounds(tm_env *e, int rounds, unsigned seed)
{
	for (int k = 0; k < rounds; k++) {
		pgtest_proc *run = tm_start_run(e, NULL);

		tm_sleep_ms(1000 + (int) (rand_r(&seed) % 2000));
		if (!pgtest_proc_running(run))
			fail_msg("tidemark run ended before the kill:\n%s", pgtest_proc_output(run));
		pgtest_proc_kill(run, SIGKILL);
		assert_int_equal(pgtest_proc_wait(run, 30), 128 + SIGKILL);
		pgtest_proc_free(run);
	}
}

/*
 * Each wallet's balance moved by the changes its history holds (from its
 * copy or insert entry on) is what the source moved it by: the history
 * starts from the right balance and ends at the mirror's.
 */
static void
assert_bank_sums(tm_env *e)
{
	char src[512], dst[1024];

	snprintf(src, sizeof src, "SELECT id, bal - CASE WHEN id <= %d THEN %d ELSE 0 END"
	                          " FROM wallets ORDER BY id", WALLETS, START_BAL);
	snprintf(dst, sizeof dst,
	         "SELECT id, sum(d) FILTER (WHERE tidemark_op <> 'delete') FROM"
	         " (SELECT id, tidemark_op, coalesce(bal - lag(bal) OVER w, 0) AS d,"
	         "   last_value(tidemark_op) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND"
	         "   UNBOUNDED FOLLOWING) AS last_op FROM wallets_history"
	         "  WINDOW w AS (PARTITION BY id ORDER BY tidemark_lsn, tidemark_seq)) x"
	         " WHERE last_op <> 'delete' GROUP BY id ORDER BY id");
	assert_same_result(e->s, src, e->t, dst, "each wallet's sum of changes");
	/* the first entry of each starting wallet is its copy at the start */
	assert_int_equal(pgtest_query_long(e->t,
	                 "SELECT count(*) FROM (SELECT DISTINCT ON (id) id, tidemark_op, bal"
	                 " FROM wallets_history ORDER BY id, tidemark_lsn, tidemark_seq) f"
	                 " WHERE (id <= %d) <> (tidemark_op = 'copy' AND bal = %d)",
	                 WALLETS, START_BAL), 0);
}

/*
 * Transfers between wallets with a history, tidemark killed with SIGKILL
 * six times while they run: every change the source made is in the
 * history exactly once, in order, with the right balances.
 */
static void
test_bank_history_through_kill9(void **state)
{
	tm_env *e = tm_env_new("hist_bank");
	pgtest_workload *w;
	unsigned seed = (unsigned) time(NULL), steps;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE wallets (id int PRIMARY KEY, bal bigint NOT NULL);"
	                  "INSERT INTO wallets SELECT g, %d FROM generate_series(1, %d) g",
	            START_BAL, WALLETS);
	setup_with(e, "public.wallets", NULL, NULL, NULL);
	set_mode(e, "history", false);
	tm_catch_up(e, 120);
	log_changes(e, "wallets");
	bank_functions(e);
	w = pgtest_workload_start(e->src, bank_step, NULL);
	kill9_rounds(e, 6, seed);
	steps = pgtest_workload_stop(w, NULL);
	tm_catch_up(e, 180);
	print_message("%u transfers, 6 kills (seed %u)\n", steps, seed);
	assert_true(steps > 100);
	tm_assert_rows_equal(e->s, "public.wallets", e->t, "public.wallets", "id, bal");
	assert_int_equal(pgtest_query_long(e->s, "SELECT sum(bal) FROM wallets"),
	                 (long) WALLETS * START_BAL);
	assert_history_is_log(e, "wallets_history", "bal::text", "r->>'bal'");
	assert_bank_sums(e);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) - count(DISTINCT (tidemark_lsn,"
	                                         " tidemark_seq)) FROM wallets_history"), 0);
	assert_no_redundant_copy(e, "wallets_history", "bal::text");
	tm_env_free(e);
}

/* ---- a copy while the source writes ---- */

#define COPY_ROWS 20000

static void
copy_step(PGconn *conn, void *arg, unsigned i)
{
	unsigned a = (i * 7919u + 13) % COPY_ROWS + 1;
	unsigned b = (i * 104729u + 7) % COPY_ROWS + 1;

	(void) arg;
	pgtest_exec(conn, "UPDATE items SET n = n + 1, note = md5(random()::text)"
	                  " WHERE id IN (%u, %u)", a, b);
}

/*
 * The first copy of a history table in small chunks, in key ranges by two
 * readers, while random rows are updated: after catch-up every key's latest entry is its mirror row, and
 * no copy entry repeats the entry before it.
 */
static void
test_copy_under_writes(void **state)
{
	tm_env *e = tm_env_new("hist_copy");
	pgtest_workload *w;
	pgtest_proc *run;
	unsigned steps;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE items (id int PRIMARY KEY, n int NOT NULL, note text);"
	                  "INSERT INTO items SELECT g, 0, 'note ' || g FROM generate_series(1, %d) g;"
	                  "ANALYZE items", COPY_ROWS);
	setup_with(e, "public.items", NULL, NULL, NULL);
	set_mode(e, "history", false);
	w = pgtest_workload_start(e->src, copy_step, NULL);
	wait_steps(w, 20);
	/* two readers: the table is copied in key ranges, side by side */
	run = tm_spawn(e, "run", "--chunk-rows", "400", "--snapshot-readers", "2", NULL);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM tidemark.tables"
	                                    " WHERE state <> 'streaming'", "0", 120));
	wait_steps(w, 50);
	steps = pgtest_workload_stop(w, NULL);
	tm_stop_and_catch_up(e, run, 120);
	print_message("%u update steps around the copy\n", steps);
	tm_assert_rows_equal(e->s, "public.items", e->t, "public.items", "id, n, note");
	/* every key's latest entry is its mirror row, and every key has one */
	assert_int_equal(pgtest_query_long(e->t,
	                 "SELECT count(*) FROM items m FULL JOIN (SELECT DISTINCT ON (id) *"
	                 "  FROM items_history ORDER BY id, tidemark_lsn DESC, tidemark_seq DESC) h"
	                 " USING (id)"
	                 " WHERE h.tidemark_op IS NULL OR h.tidemark_op = 'delete'"
	                 "    OR m.n IS NULL OR m.n::text <> h.n::text"
	                 "    OR m.note::text IS DISTINCT FROM h.note::text"), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(DISTINCT id) FROM items_history"),
	                 COPY_ROWS);
	assert_no_redundant_copy(e, "items_history", "(n, note)::text");
	assert_true(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.snapshot_ranges") > 1);
	tm_env_free(e);
}

/* ---- the history through schema changes ---- */

#define ACCTS 30

/* Updates, inserts and deletes of acct, touching only columns every
 * schema change keeps (id; n, which turns bigint). */
static void
acct_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	switch (i % 6) {
	case 0:
		pgtest_exec(conn, "INSERT INTO acct (id, n) VALUES (nextval('acct_ids'), %u)", i);
		break;
	case 1:
		pgtest_exec(conn, "DELETE FROM acct WHERE id = (SELECT id FROM acct ORDER BY random()"
		                  " LIMIT 1)");
		break;
	default:
		pgtest_exec(conn, "UPDATE acct SET n = n + 1 WHERE id = (SELECT id FROM acct"
		                  " ORDER BY random() LIMIT 1)");
	}
}

/* Runs one schema change on the source and returns a position between the
 * commits before it and those after (taken under its lock). */
static char *
schema_change(tm_env *e, const char *ddl)
{
	char *lsn;

	pgtest_exec(e->s, "BEGIN; %s", ddl);
	lsn = pgtest_query_value(e->s, "SELECT pg_current_wal_insert_lsn()");
	pgtest_exec(e->s, "COMMIT");
	return lsn;
}

/*
 * ADD COLUMN, RENAME COLUMN, a type change of int to bigint and DROP
 * COLUMN while a workload writes a table with a history: every change is
 * in the history once, with the columns as they were at its time: c NULL
 * before it was added, old_name's values under its new name, gone's
 * values kept after it was dropped.
 */
static void
test_history_through_schema_changes(void **state)
{
	tm_env *e = tm_env_new("hist_ddl");
	pgtest_workload *w;
	pgtest_proc *run;
	char *at_add, *at_drop;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE acct (id int PRIMARY KEY, n int NOT NULL,"
	                  " old_name text DEFAULT 'd', gone text NOT NULL DEFAULT 'g');"
	                  "CREATE SEQUENCE acct_ids START %d;"
	                  "INSERT INTO acct SELECT g, 0, 'name' || g, 'gone' || g"
	                  " FROM generate_series(1, %d) g", ACCTS + 1, ACCTS);
	setup_with(e, "public.acct", NULL, NULL, NULL);
	set_mode(e, "history", false);
	tm_catch_up(e, 120);
	log_changes(e, "acct");
	run = tm_start_run(e, NULL);
	w = pgtest_workload_start(e->src, acct_step, NULL);
	wait_steps(w, 60);
	at_add = schema_change(e, "ALTER TABLE acct ADD COLUMN c text DEFAULT 'x'");
	pgtest_exec(e->s, "UPDATE acct SET c = 'c' || id WHERE id %% 3 = 0");
	wait_steps(w, 60);
	free(schema_change(e, "ALTER TABLE acct RENAME COLUMN old_name TO new_name"));
	wait_steps(w, 60);
	free(schema_change(e, "ALTER TABLE acct ALTER COLUMN n TYPE bigint"));
	wait_steps(w, 60);
	at_drop = schema_change(e, "ALTER TABLE acct DROP COLUMN gone");
	wait_steps(w, 60);
	pgtest_workload_stop(w, NULL);
	tm_stop_and_catch_up(e, run, 180);
	tm_assert_rows_equal(e->s, "public.acct", e->t, "public.acct", "id, n, c, new_name");
	assert_history_is_log(e, "acct_history", "concat_ws('/', n, c, new_name, gone)",
	                      "concat_ws('/', r->>'n', r->>'c', coalesce(r->>'new_name',"
	                      " r->>'old_name'), r->>'gone')");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM acct_history WHERE"
	                                         " (tidemark_lsn < '%s') <> (c IS NULL)", at_add), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM acct_history WHERE new_name"
	                                         " IS DISTINCT FROM CASE WHEN id <= %d THEN 'name'"
	                                         " || id ELSE 'd' END", ACCTS), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM acct_history WHERE"
	                                         " (tidemark_lsn < '%s') <> (gone IS NOT NULL)",
	                                   at_drop), 0);
	tm_assert_value(e->t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                " WHERE attrelid = 'acct_history'::regclass AND attname = 'n'", "bigint");
	assert_no_redundant_copy(e, "acct_history", "concat_ws('/', n, c, new_name, gone)");
	free(at_add);
	free(at_drop);
	tm_env_free(e);
}

/*
 * A data team's views over a history and its view of versions (with a
 * grant and a comment), then schema changes of the table under the
 * `follow` policy: a column added, one renamed, a type widened (int to
 * bigint, which a view over the history column held back), a type
 * narrowed by the source (numeric to integer: 2.5 became 3), text to
 * jsonb, and the table renamed. The views stay (a materialized one
 * computed again), with their grant and comment; the history keeps each
 * entry as it was written (2.5, and the JSON text as the source spelled
 * it), its column text where no type holds both; and the row the conversion
 * changed gets an entry of its new value, so that its current version is
 * the mirror's.
 */
static void
test_history_views_and_inexact_types(void **state)
{
	tm_env *e = tm_env_new("hist_views");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE b (id int PRIMARY KEY, n numeric, c int, j text);"
	                  "INSERT INTO b VALUES (1, 2.5, 1, '{\"b\": 1,  \"a\": 2}'),"
	                  " (2, 7, 2, '[1,2]')");
	setup_with(e, "public.b", "--table-policy", "public.b=follow", NULL);
	set_mode(e, "history", false);
	tm_catch_up(e, 120);
	pgtest_exec(e->t, "CREATE ROLE hist_reader;"
	                  "CREATE VIEW by_c AS SELECT id, c FROM b_history;"
	                  "CREATE MATERIALIZED VIEW by_n AS SELECT id, n FROM b_history;"
	                  "CREATE INDEX by_n_id ON by_n (id);"
	                  "CREATE VIEW cur AS SELECT id, n, c FROM b_versions WHERE tidemark_is_current;"
	                  "GRANT SELECT ON b_versions, cur TO hist_reader;"
	                  "COMMENT ON VIEW b_versions IS 'every version of b'");
	pgtest_exec(e->s, "ALTER TABLE b ADD COLUMN z int");
	pgtest_exec(e->s, "UPDATE b SET z = id");
	pgtest_exec(e->s, "ALTER TABLE b RENAME COLUMN c TO c2");
	pgtest_exec(e->s, "ALTER TABLE b ALTER c2 TYPE bigint");
	pgtest_exec(e->s, "UPDATE b SET c2 = 10000000000 WHERE id = 2");
	pgtest_exec(e->s, "ALTER TABLE b ALTER n TYPE integer");
	pgtest_exec(e->s, "UPDATE b SET n = 4 WHERE id = 2");
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "ALTER TABLE b ALTER j TYPE jsonb USING j::jsonb");
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "ALTER TABLE b RENAME TO bb");
	tm_catch_up(e, 120);

	tm_assert_rows_equal(e->s, "public.bb", e->t, "public.bb", "id, n, c2, j, z");
	tm_assert_value(e->t, "SELECT string_agg(concat_ws('/', id, n, c), ' ' ORDER BY id) FROM cur",
	                "1/3/1 2/4/10000000000");
	tm_assert_value(e->t, "SELECT has_table_privilege('hist_reader', 'bb_versions', 'SELECT')"
	                " AND has_table_privilege('hist_reader', 'cur', 'SELECT')", "t");
	tm_assert_value(e->t, "SELECT (SELECT count(*) FROM by_c) = (SELECT count(*) FROM bb_history)",
	                "t");
	/* computed again at the last change (the rename), with its index */
	tm_assert_value(e->t, "SELECT (SELECT count(*) FROM by_n) = (SELECT count(*) FROM bb_history)"
	                " AND to_regclass('by_n_id') IS NOT NULL", "t");
	tm_assert_value(e->t, "SELECT obj_description('bb_versions'::regclass, 'pg_class')",
	                "every version of b");
	tm_assert_value(e->t, "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod),"
	                " ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid ="
	                " 'bb_history'::regclass AND attnum > 4 AND NOT attisdropped",
	                "id integer, n text, c2 bigint, j text, z integer");
	/* each entry as written, and after them the row's new values: its
	 * rounded n, then its JSON as jsonb spells it */
	tm_assert_value(e->t, "SELECT string_agg(n, ' ' ORDER BY tidemark_lsn, tidemark_seq)"
	                " FROM bb_history WHERE id = 1", "2.5 2.5 3 3");
	tm_assert_value(e->t, "SELECT string_agg(DISTINCT j, ' ') FROM bb_history WHERE id = 1",
	                "{\"a\": 2, \"b\": 1} {\"b\": 1,  \"a\": 2}");
	tm_assert_value(e->t, "SELECT string_agg(tidemark_op, ' ' ORDER BY tidemark_lsn,"
	                " tidemark_seq) FROM bb_history WHERE id = 1", "copy update copy copy");
	assert_no_redundant_copy(e, "bb_history", "concat_ws('/', n, c2, j, z)");
	tm_env_free(e);
}

/*
 * History columns that stay text after a type change the history cannot
 * take exactly (text to boolean, inet, char(4)): every entry written after
 * it holds the value as the stream sends it (the type's output: t, not
 * true; 10.0.0.1, not 10.0.0.1/32; char's padding kept), whichever path
 * wrote it: the entries of the rows the conversion changed, a few changes
 * (arrays), many (COPY), a key change, deletes and a TRUNCATE.
 */
static void
test_history_text_spelled_as_sent(void **state)
{
	tm_env *e = tm_env_new("hist_spelled");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE f (id int PRIMARY KEY, flag text, addr text, code text);"
	                  "INSERT INTO f VALUES (1, 'yes', '10.0.0.1', 'ab'),"
	                  " (2, 'no', '10.0.0.2/32', 'cd')");
	setup_with(e, "public.f", "--table-policy", "public.f=follow", NULL);
	set_mode(e, "history", false);
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "ALTER TABLE f ALTER flag TYPE boolean USING flag::boolean,"
	                  " ALTER addr TYPE inet USING addr::inet, ALTER code TYPE char(4)");
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "UPDATE f SET flag = NOT flag");
	pgtest_exec(e->s, "INSERT INTO f SELECT g, g %% 2 = 0, ('10.2.0.' || g %% 250)::inet, 'z'"
	                  " FROM generate_series(10, 400) g");
	pgtest_exec(e->s, "UPDATE f SET id = id + 1000 WHERE id IN (1, 10)");
	pgtest_exec(e->s, "DELETE FROM f WHERE id BETWEEN 11 AND 20");
	tm_catch_up(e, 120);
	/* the latest entry of each row is the source's row as it prints it */
	tm_assert_rows_equal(e->s, "(SELECT id, format('%s|%s|%s', flag, addr, code) AS r FROM f) s",
	                     e->t, "(SELECT DISTINCT ON (id) id, tidemark_op,"
	                     " concat_ws('|', flag, addr, code) AS r FROM f_history"
	                     " ORDER BY id, tidemark_lsn DESC, tidemark_seq DESC) h"
	                     " WHERE tidemark_op <> 'delete'", "id, r");
	pgtest_exec(e->s, "TRUNCATE f");
	tm_catch_up(e, 120);
	/* every entry after the change, by every path, in the output's spelling */
	tm_assert_value(e->t, "SELECT string_agg(DISTINCT tidemark_op || ':' || flag, ' ') FROM"
	                " f_history WHERE tidemark_lsn > (SELECT min(tidemark_lsn) FROM f_history)",
	                "copy:f copy:t delete:f delete:t insert:f insert:t update:f update:t");
	tm_assert_value(e->t, "SELECT count(*) FILTER (WHERE addr LIKE '%/%' OR length(code) <> 4)"
	                " || ' of ' || count(*) FROM f_history"
	                " WHERE tidemark_lsn > (SELECT min(tidemark_lsn) FROM f_history)", "0 of 792");
	tm_env_free(e);
}

/*
 * A trigger of the target's own whose WHEN reads a column makes the
 * target refuse its type change: the table is set aside and made again,
 * empty, and copied. Its history goes on, with no second 'copy' entry of
 * the rows it has already: the copy compares with the history's latest
 * entries, not with the empty table.
 */
static void
test_history_of_a_table_set_aside(void **state)
{
	tm_env *e = tm_env_new("hist_aside");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE s (id int PRIMARY KEY, n int, t text);"
	                  "INSERT INTO s SELECT g, g, 't' || g FROM generate_series(1, 20) g");
	setup_with(e, "public.s", NULL, NULL, NULL);
	set_mode(e, "history", false);
	tm_catch_up(e, 120);
	pgtest_exec(e->t, "CREATE FUNCTION s_audit() RETURNS trigger LANGUAGE plpgsql AS"
	                  " $f$ BEGIN RETURN NEW; END $f$;"
	                  "CREATE TRIGGER s_audit BEFORE UPDATE ON s FOR EACH ROW"
	                  " WHEN (OLD.n IS DISTINCT FROM NEW.n) EXECUTE FUNCTION s_audit()");
	pgtest_exec(e->s, "ALTER TABLE s ALTER n TYPE bigint");
	pgtest_exec(e->s, "UPDATE s SET n = n * 10000000000 WHERE id <= 5");
	tm_catch_up(e, 120);
	tm_catch_up(e, 120);
	tm_assert_equal(e, "s", "id");
	tm_assert_value(e->t, "SELECT to_regclass('\"s (set aside)\"') IS NOT NULL", "t");
	tm_assert_value(e->t, "SELECT count(*) FROM s_history WHERE tidemark_op = 'copy'", "20");
	tm_assert_value(e->t, "SELECT count(*) FROM s_history WHERE tidemark_op = 'update'", "5");
	tm_assert_value(e->t, "SELECT count(*) FROM s_history", "25");
	tm_env_free(e);
}

/* ---- deletes, key changes, TRUNCATE and unchanged TOAST values ---- */

#define DOCS 20
#define DOC_LEN 10000

/*
 * docs with a 10 kB body stored out of line and uncompressed, copied in
 * mode; then updates of n only (the body unchanged TOAST, not sent), key
 * changes, deletes, a key inserted again after its delete. Live rows
 * left: DOCS - 1.
 */
static void
docs_changes(tm_env *e, const char *mode)
{
	pgtest_exec(e->s, "CREATE TABLE docs (id int PRIMARY KEY, n int NOT NULL, body text);"
	                  "ALTER TABLE docs ALTER body SET STORAGE EXTERNAL;"
	                  "INSERT INTO docs SELECT g, 0, left(repeat(md5(g::text), 320), %d)"
	                  " FROM generate_series(1, %d) g", DOC_LEN, DOCS);
	setup_with(e, "public.docs", NULL, NULL, NULL);
	set_mode(e, mode, false);
	tm_catch_up(e, 120);
	log_changes(e, "docs");
	/* one transaction each (one string would be one transaction) */
	pgtest_exec(e->s, "UPDATE docs SET n = n + 1");
	pgtest_exec(e->s, "UPDATE docs SET id = id + 1000 WHERE id <= 5");
	pgtest_exec(e->s, "DELETE FROM docs WHERE id IN (6, 7)");
	pgtest_exec(e->s, "INSERT INTO docs VALUES (6, 0, left(repeat('y', %d), %d))", DOC_LEN,
	            DOC_LEN);
	pgtest_exec(e->s, "BEGIN; UPDATE docs SET n = n + 1 WHERE id IN (6, 1001);"
	                  "UPDATE docs SET id = 2000 WHERE id = 1002; COMMIT");
	tm_catch_up(e, 120);
}

/* Every entry holds the whole row; a key change is a delete of the old key
 * and an update of the new one, in one transaction. */
static void
assert_docs_entries(tm_env *e)
{
	assert_history_is_log(e, "docs_history", "concat_ws('/', n, length(body), md5(body))",
	                      "concat_ws('/', r->>'n', length(r->>'body'), md5(r->>'body'))");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM docs_history WHERE body IS"
	                                         " NULL OR length(body) <> %d", DOC_LEN), 0);
	assert_int_equal(pgtest_query_long(e->t,
	                 "SELECT count(*) FROM docs_history d JOIN docs_history u"
	                 " ON u.id = d.id + 1000 AND u.tidemark_lsn = d.tidemark_lsn"
	                 " WHERE d.id <= 5 AND d.tidemark_op = 'delete' AND u.tidemark_op = 'update'"),
	                 5);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM docs_history WHERE id > 1000"
	                                         " AND tidemark_op = 'insert'"), 0);
}

/* TRUNCATE: a 'delete' entry, whole, of every live row at its position. */
static void
truncate_docs(tm_env *e)
{
	pgtest_exec(e->s, "TRUNCATE docs");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t,
	                 "SELECT count(*) FROM docs_history WHERE tidemark_op = 'delete' AND"
	                 " length(body) = %d AND tidemark_lsn = (SELECT max(tidemark_lsn)"
	                 " FROM docs_history)", DOC_LEN), DOCS - 1);
	assert_docs_entries(e);
}

static void
test_history_keys_truncate_toast(void **state)
{
	tm_env *e = tm_env_new("hist_keys");

	(void) state;
	docs_changes(e, "history");
	tm_assert_rows_equal(e->s, "public.docs", e->t, "public.docs", "id, n, md5(body)");
	assert_docs_entries(e);
	truncate_docs(e);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM docs"), 0);
	tm_env_free(e);
}

/* history,soft-delete: the same history, and the mirror keeps every key
 * deleted (an old key of a key change too), marked. */
static void
test_history_soft_delete(void **state)
{
	tm_env *e = tm_env_new("hist_soft");

	(void) state;
	docs_changes(e, "history,soft-delete");
	tm_assert_rows_equal(e->s, "public.docs", e->t,
	                     "(SELECT * FROM docs WHERE tidemark_deleted_at IS NULL) live",
	                     "id, n, md5(body)");
	/* marked: 7 deleted (6 came back); a key change moves the row, as on the
	 * source (the old key's end is in the history) */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM docs WHERE"
	                                         " tidemark_deleted_at IS NOT NULL"), 1);
	assert_docs_entries(e);
	truncate_docs(e);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM docs WHERE"
	                                         " tidemark_deleted_at IS NULL"), 0);
	tm_env_free(e);
}

/* A key change onto a key the soft-delete mirror holds marked (deleted on
 * the source before): the moved row takes the key, live. */
static void
test_soft_delete_key_onto_marked(void **state)
{
	tm_env *e = tm_env_new("soft_onto");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE o (id int PRIMARY KEY, s text);"
	                  "INSERT INTO o SELECT g, 'v' || g FROM generate_series(1, 4) g");
	setup_with(e, "public.o", NULL, NULL, NULL);
	set_mode(e, "history,soft-delete", false);
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "DELETE FROM o WHERE id = 1");
	pgtest_exec(e->s, "UPDATE o SET id = 1 WHERE id = 2");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "public.o", e->t,
	                     "(SELECT * FROM o WHERE tidemark_deleted_at IS NULL) live", "id, s");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM o_versions WHERE"
	                                         " tidemark_is_current"), 3);
	tm_env_free(e);
}

/* The quarantine policy and a history: a narrowing the target does not
 * follow keeps the mirror's and the history's type; a value that does not
 * fit is quarantined, and its change leaves no entry in the history (the
 * same statement writes both). */
static void
test_history_quarantine(void **state)
{
	tm_env *e = tm_env_new("hist_quarantine");
	pgtest_proc *run;
	char *type;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE q (id int PRIMARY KEY, amount numeric(12,2));"
	                  "INSERT INTO q SELECT g, g + 0.5 FROM generate_series(1, 10) g");
	setup_with(e, "public.q", NULL, NULL, NULL);
	set_mode(e, "history", false);
	tm_catch_up(e, 120);
	run = tm_start_run(e, "--table-policy", "public.q=quarantine", NULL);
	pgtest_exec(e->s, "ALTER TABLE q ALTER COLUMN amount TYPE numeric(20,0)");
	pgtest_exec(e->s, "INSERT INTO q VALUES (100, 77), (101, 123456789012345);"
	                  "UPDATE q SET amount = 99999999999999 WHERE id = 5");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM tidemark.quarantine", "2", 60));
	tm_stop_and_catch_up(e, run, 120);
	type = pgtest_query_value(e->t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                                " WHERE attrelid = 'q_history'::regclass AND attname = 'amount'");
	assert_string_equal(type, "numeric(12,2)");
	free(type);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM q_history WHERE id = 100"
	                                         " AND tidemark_op = 'insert' AND amount = 77"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM q_history WHERE id = 101"), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM q_history WHERE id = 5"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM q_history"), 10 + 1);
	tm_env_free(e);
}

/* A history's entries hold each value exactly as the source wrote it,
 * whether a flush writes them with COPY (a group of 600 entries) or in
 * one statement of arrays (10): text with tabs, newlines, carriage returns,
 * backslashes, quotes and braces, the two characters \N, NULLs, arrays,
 * jsonb, bytea, numeric, timestamptz, char(n) and boolean. A trigger on the
 * source logs every row version into a table tidemark does not replicate:
 * the history's entries but the copy's are that log, row for row. */
static void
test_history_values(void **state)
{
	static const char *const cols = "id, t, a, j, b, n, ts, c, flag";
	tm_env *e = tm_env_new("hist_values");

	(void) state;
	pgtest_exec(e->s,
	            "CREATE TABLE v (id int PRIMARY KEY, t text, a int[], j jsonb, b bytea,"
	            " n numeric, ts timestamptz, c char(3), flag boolean);"
	            "CREATE TABLE v_log (LIKE v);"
	            "CREATE FUNCTION v_log() RETURNS trigger LANGUAGE plpgsql AS"
	            " $$BEGIN INSERT INTO v_log SELECT NEW.*; RETURN NULL; END$$;"
	            "CREATE TABLE odd (k int PRIMARY KEY, s text);"
	            "INSERT INTO odd VALUES (0, E'tab\there'), (1, E'new\nline'),"
	            " (2, E'cr\rreturn'), (3, E'back\\slash'), (4, '\\N'), (5, ''),"
	            " (6, NULL), (7, '\"quoted\" {braces}, comma'), (8, 'NULL'),"
	            " (9, U&'\\00fcn\\00ef\\00a9\\00f8d\\00e9 \\2603')");
	setup_with(e, "public.v", NULL, NULL, NULL);
	set_mode(e, "history", false);
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "CREATE TRIGGER v_log AFTER INSERT OR UPDATE ON v FOR EACH ROW"
	                  " EXECUTE FUNCTION v_log()");
	/* 600 entries in one transaction, then 10 */
	pgtest_exec(e->s,
	            "INSERT INTO v SELECT g, o.s, ARRAY[g, NULL, -g], jsonb_build_object('k', o.s,"
	            " 'n', g), convert_to(coalesce(o.s, ''), 'UTF8'), g / 7.0,"
	            " '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 minute 1.5 s',"
	            " 'ab', g %% 2 = 0 FROM generate_series(1, 600) g JOIN odd o ON o.k = g %% 10");
	pgtest_exec(e->s, "UPDATE v SET t = t || E'\t' || id, flag = NOT flag WHERE id <= 10");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "public.v", e->t, "public.v", cols);
	tm_assert_rows_equal(e->s, "public.v_log", e->t,
	                     "(SELECT * FROM v_history WHERE tidemark_op <> 'copy') h", cols);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(DISTINCT tidemark_lsn) FROM"
	                                         " v_history"), 2);
	tm_env_free(e);
}

/* A program of the servers' own (PGBIN, as the clusters use), with its
 * arguments; fails the test unless it exits 0. */
static void
run_pg_program(const char *program, const char *const *args)
{
	const char *bin = getenv("PGBIN") != NULL ? getenv("PGBIN") : "/usr/lib/postgresql/15/bin";
	char path[512];
	pgtest_proc *p;
	int rc;

	snprintf(path, sizeof path, "%s/%s", bin, program);
	p = pgtest_spawn_program(path, args, NULL);
	rc = pgtest_proc_wait(p, 120);
	if (rc != 0)
		fail_msg("%s exited %d:\n%s", program, rc, pgtest_proc_output(p));
	pgtest_proc_free(p);
}

/*
 * A target copied to another database with pg_dump and psql (as a warehouse
 * is moved to another server) keeps the catalog but not the oids by which
 * a history and its versions view are followed: there they named nothing
 * (the run stopped: "history table is missing", and `tidemark mode`, its
 * fix, failed: the history exists), or another relation, whose view a sync
 * of the mode would have dropped. Both are found again by their names.
 */
static void
test_history_after_target_dump_restore(void **state)
{
	tm_env *e = tm_env_new("hist_restored");
	char *dump = pgtest_path("hist_restored.sql");
	char *restored = pgtest_conninfo_db(e->dst_cluster, "hist_restored_copy");
	const char *dump_args[] = {"-d", e->dst, "-f", dump, NULL};
	const char *load_args[] = {"-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", restored, "-f", dump,
	                           NULL};
	PGconn *r;
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE h (id int PRIMARY KEY, v text);"
	                  "INSERT INTO h SELECT g, 'v' || g FROM generate_series(1, 5) g");
	setup_with(e, "public.h", "--table-mode", "public.h=history", NULL);
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "UPDATE h SET v = v || '+' WHERE id <= 3");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM h_history"), 5 + 3);

	/* the copy, into a database whose oids run otherwise */
	pgtest_exec(e->t, "CREATE DATABASE hist_restored_copy");
	r = pgtest_connect_str(restored);
	pgtest_exec(r, "CREATE TABLE users_own (id int PRIMARY KEY, v text, n int);"
	               "CREATE VIEW users_view AS SELECT 1 AS x");
	run_pg_program("pg_dump", dump_args);
	run_pg_program("psql", load_args);
	assert_int_equal(pgtest_query_long(r, "SELECT count(*) FROM tidemark.tables WHERE"
	                                      " tidemark.relation_if_any(history_relid) IS NOT NULL"
	                                      " AND history_relid = 'h_history'::regclass"), 0);
	/* what an oid used again for another relation does */
	pgtest_exec(r, "UPDATE tidemark.tables SET history_relid = 'users_own'::regclass,"
	               " versions_relid = 'users_view'::regclass");

	pgtest_exec(e->s, "UPDATE h SET v = v || '!' WHERE id >= 4; DELETE FROM h WHERE id = 1;"
	                  "INSERT INTO h VALUES (9, 'nine')");
	rc = tm_run(e, 120, &out, "run", "--until-caught-up", "--target", restored, NULL);
	if (rc != 0)
		fail_msg("run into the copy exited %d:\n%s", rc, out);
	tm_assert_has(out, "the history of public.h is public.h_history again");
	free(out);
	tm_assert_rows_equal(e->s, "public.h", r, "public.h", "id, v");
	assert_int_equal(pgtest_query_long(r, "SELECT count(*) FROM h_history"), 5 + 3 + 4);
	assert_int_equal(pgtest_query_long(r, "SELECT count(*) FROM h_versions"), 5 + 3 + 3);
	assert_int_equal(pgtest_query_long(r, "SELECT count(*) FROM users_own"), 0);
	assert_int_equal(pgtest_query_long(r, "SELECT x FROM users_view"), 1);
	assert_int_equal(pgtest_query_long(r, "SELECT count(*) FROM tidemark.tables WHERE"
	                                      " history_relid = 'h_history'::regclass"
	                                      " AND versions_relid = 'h_versions'::regclass"), 1);
	/* and `mode` works there */
	rc = tm_run(e, 60, &out, "mode", "public.h=history", "--target", restored, NULL);
	if (rc != 0)
		fail_msg("mode on the copy exited %d:\n%s", rc, out);
	free(out);
	PQfinish(r);
	free(restored);
	free(dump);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_history_smoke),
		cmocka_unit_test(test_soft_delete_smoke),
		cmocka_unit_test(test_bank_history_through_kill9),
		cmocka_unit_test(test_copy_under_writes),
		cmocka_unit_test(test_history_through_schema_changes),
		cmocka_unit_test(test_history_views_and_inexact_types),
		cmocka_unit_test(test_history_text_spelled_as_sent),
		cmocka_unit_test(test_history_of_a_table_set_aside),
		cmocka_unit_test(test_history_keys_truncate_toast),
		cmocka_unit_test(test_history_soft_delete),
		cmocka_unit_test(test_soft_delete_key_onto_marked),
		cmocka_unit_test(test_history_quarantine),
		cmocka_unit_test(test_history_values),
		cmocka_unit_test(test_history_after_target_dump_restore),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
