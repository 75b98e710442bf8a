/*
 * Integration tests of table modes (README: Table modes) against real
 * source and target clusters: a history of every row version keyed by log
 * position, soft deletes and metadata columns. Each test ends by comparing
 * what the source did with what the target holds in plain SQL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	pgtest_exec(e->s, "UPDATE w SET big = repeat('x', 10000) WHERE id = 1;"
	                  "UPDATE w SET bal = bal - 10 WHERE id = 1;" /* big unchanged TOAST */
	                  "BEGIN; UPDATE w SET bal = bal + 10 WHERE id = 2;"
	                  "UPDATE w SET bal = bal - 10 WHERE id = 3; COMMIT;"
	                  "UPDATE w SET id = 50 WHERE id = 4;"
	                  "DELETE FROM w WHERE id = 5;"
	                  "INSERT INTO w VALUES (6, 1, 'new')");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "public.w", e->t, "public.w", "id, bal, big");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w_history"), 5 + 8);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_history_smoke),
		cmocka_unit_test(test_soft_delete_smoke),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
