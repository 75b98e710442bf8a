/*
 * Table modes set from the command line (src/sink/mode.h), against real
 * servers: `setup --table-mode --metadata-columns` (stored, idempotent,
 * refused for a table that cannot keep the mode), `tidemark mode` on
 * tables already streaming (soft deletes on and off, a history on and
 * off, also under a running `run`), and the modes shown by status, schema
 * and `tidemark mode --json`. What the target holds is checked in plain SQL.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tm_fixture.h"

/* status --json says the table's mode and metadata columns. */
static void
assert_status_mode(tm_env *e, const char *table, const char *mode, bool metadata)
{
	char *out = tm_expect(e, 0, "status", "--json");
	json_t *doc = tm_json_of(out), *t = tm_json_table(doc, table);

	assert_string_equal(json_string_value(json_object_get(t, "mode")), mode);
	assert_int_equal(json_is_true(json_object_get(t, "metadata_columns")), metadata);
	json_decref(doc);
	free(out);
}

static bool
target_has_column(tm_env *e, const char *table, const char *column)
{
	return pgtest_query_long(e->t, "SELECT count(*) FROM pg_attribute WHERE attrelid = '%s'"
	                               "::regclass AND attname = '%s' AND NOT attisdropped",
	                         table, column) == 1;
}

/* setup --table-mode history and --metadata-columns on two tables: the
 * history starts with a 'copy' entry of every row, both mirrors have the
 * metadata columns filled; setup again with the same options changes
 * nothing; status and schema show the modes. */
static void
test_setup_modes(void **state)
{
	tm_env *e = tm_env_new("mode_setup");
	char *out;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE a (id int PRIMARY KEY, v text);"
	                  "CREATE TABLE b (id int PRIMARY KEY, n int);"
	                  "INSERT INTO a SELECT g, 'v' || g FROM generate_series(1, 10) g;"
	                  "INSERT INTO b SELECT g, g FROM generate_series(1, 5) g");
	free(tm_expect(e, 0, "setup", "--table", "public.a", "--table", "public.b", "--table-mode",
	               "public.a=history", "--metadata-columns"));
	out = tm_expect(e, 0, "setup", "--table", "public.a", "--table", "public.b", "--table-mode",
	                "public.a=history", "--metadata-columns");
	if (strstr(out, "was mirror") != NULL || strstr(out, "copied again") != NULL)
		fail_msg("setup again changed a mode:\n%s", out);
	free(out);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables WHERE"
	                                         " state = 'snapshot_pending'"
	                                         " AND snapshot_requested_at IS NULL"), 2);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.progress WHERE"
	                                         " metadata_columns"), 1);
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a_history WHERE"
	                                         " tidemark_op = 'copy'"), 10);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a_history h JOIN a USING (id)"
	                                         " WHERE h.v = a.v"), 10);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a_versions WHERE"
	                                         " tidemark_is_current"), 10);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM b WHERE tidemark_lsn IS NULL"
	                                         " OR tidemark_synced_at IS NULL"), 0);
	assert_true(target_has_column(e, "a", "tidemark_lsn"));
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_class WHERE relname ="
	                                         " 'b_history'"), 0);
	tm_assert_rows_equal(e->s, "public.a", e->t, "public.a", "id, v");
	tm_assert_rows_equal(e->s, "public.b", e->t, "public.b", "id, n");
	assert_status_mode(e, "public.a", "history", true);
	assert_status_mode(e, "public.b", "mirror", true);
	out = tm_expect(e, 0, "schema", "public.a");
	tm_assert_has(out, "mode: history, metadata columns");
	free(out);
	/* a setup without the options keeps the modes */
	tm_setup_table(e, "a");
	assert_status_mode(e, "public.a", "history", true);
	tm_env_free(e);
}

/* A pipeline with metadata columns: a table joining later with a column
 * named like one of them is a plain mirror, its column the source's, said
 * in the log; one without such a column gets them. */
static void
test_join_reserved_column(void **state)
{
	tm_env *e = tm_env_new("mode_join_res");
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE a (id int PRIMARY KEY, v text)");
	free(tm_expect(e, 0, "setup", "--schema", "public", "--metadata-columns"));
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "CREATE TABLE c (id int PRIMARY KEY, tidemark_lsn text, n int);"
	                  "INSERT INTO c SELECT g, 'mine ' || g, g FROM generate_series(1, 10) g;"
	                  "CREATE TABLE d (id int PRIMARY KEY, n int);"
	                  "INSERT INTO d SELECT g, g FROM generate_series(1, 5) g");
	pgtest_exec(e->s, "UPDATE c SET n = n + 1 WHERE id <= 3");
	rc = tm_run(e, 120, &out, "run", "--until-caught-up", NULL);
	assert_int_equal(rc, 0);
	tm_assert_has(out, "has a column named tidemark_lsn, which the metadata columns use");
	free(out);
	tm_assert_rows_equal(e->s, "public.c", e->t, "public.c", "id, tidemark_lsn, n");
	assert_false(target_has_column(e, "c", "tidemark_synced_at"));
	assert_true(target_has_column(e, "d", "tidemark_synced_at"));
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM d WHERE tidemark_lsn IS NULL"),
	                 0);
	assert_status_mode(e, "public.c", "mirror", false);
	tm_env_free(e);
}

/* A column named like one of tidemark's own, added on the source to a
 * table in history mode with metadata columns: run stops before the change
 * with the fix; after it (the table a plain mirror), the change and the rows
 * come through. */
static void
test_reserved_column_added(void **state)
{
	tm_env *e = tm_env_new("mode_res_added");
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE a (id int PRIMARY KEY, v text);"
	                  "INSERT INTO a VALUES (1, 'x')");
	free(tm_expect(e, 0, "setup", "--table", "public.a", "--metadata-columns", "--table-mode",
	               "public.a=history"));
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "ALTER TABLE a ADD COLUMN tidemark_synced_at text;"
	                  "INSERT INTO a VALUES (2, 'y', 'mine')");
	rc = tm_run(e, 120, &out, "run", "--until-caught-up", NULL);
	assert_int_equal(rc, 5);
	tm_assert_has(out, "now has a column named tidemark_synced_at on the source");
	tm_assert_has(out, "tidemark mode 'public.a=mirror' --no-metadata-columns");
	free(out);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM a"), 1);
	free(tm_expect(e, 0, "mode", "public.a=mirror", "--no-metadata-columns"));
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "public.a", e->t, "public.a", "id, v, tidemark_synced_at");
	tm_env_free(e);
}

/* `tidemark mode` on a streaming table: soft deletes on, a delete marks
 * the row; off again, the marked rows and their column go. */
static void
test_mode_soft_delete(void **state)
{
	tm_env *e = tm_env_new("mode_soft");
	json_t *doc;
	char *out;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v text);"
	                  "INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 5) g");
	tm_setup_table(e, "t");
	tm_catch_up(e, 120);
	out = tm_expect(e, 0, "mode", "public.t=soft-delete");
	tm_assert_has(out, "public.t: soft-delete (was mirror)");
	free(out);
	assert_true(target_has_column(e, "t", "tidemark_deleted_at"));
	/* soft deletes need no copy: the table streams on */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables WHERE"
	                                         " state = 'streaming'"), 1);
	pgtest_exec(e->s, "DELETE FROM t WHERE id IN (1, 2); UPDATE t SET v = 'w' WHERE id = 3");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM t"), 5);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM t WHERE tidemark_deleted_at"
	                                         " IS NOT NULL AND id IN (1, 2)"), 2);
	assert_status_mode(e, "public.t", "soft-delete", false);

	out = tm_expect(e, 0, "mode", "public.t=mirror", "--json");
	doc = tm_json_of(out);
	assert_string_equal(json_string_value(json_object_get(tm_json_table(doc, "public.t"), "mode")),
	                    "mirror");
	tm_assert_has(json_string_value(json_array_get(json_object_get(json_array_get(
	               json_object_get(doc, "changes"), 0), "done"), 0)),
	           "removed the 2 row(s) kept as deleted");
	json_decref(doc);
	free(out);
	assert_false(target_has_column(e, "t", "tidemark_deleted_at"));
	tm_assert_equal(e, "t", "id");
	pgtest_exec(e->s, "DELETE FROM t WHERE id = 4");
	tm_catch_up(e, 120);
	tm_assert_equal(e, "t", "id");
	/* the same mode again changes nothing */
	out = tm_expect(e, 0, "mode", "public.t=mirror");
	if (strstr(out, "(was ") != NULL)
		fail_msg("the same mode again changed something:\n%s", out);
	free(out);
	tm_env_free(e);
}

/* History on for a table copied already: copied again under a running
 * run, which writes the history from then on; off: kept, no longer
 * written; metadata columns on and off. */
static void
test_mode_history(void **state)
{
	tm_env *e = tm_env_new("mode_hist");
	pgtest_proc *run;
	char *out;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE h (id int PRIMARY KEY, n int);"
	                  "INSERT INTO h SELECT g, g FROM generate_series(1, 20) g");
	tm_setup_table(e, "h");
	tm_catch_up(e, 120);
	run = tm_start_run(e, NULL);
	out = tm_expect(e, 0, "mode", "public.h=history");
	tm_assert_has(out, "public.h: history (was mirror)");
	tm_assert_has(out, "made the history");
	tm_assert_has(out, "picks the change up at its next copy request");
	free(out);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM h_history WHERE tidemark_op ="
	                                    " 'copy'", "20", 60));
	/* its index by key served the copy that started it, and went with it */
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM pg_index WHERE indrelid ="
	                                    " 'h_history'::regclass", "1", 60));
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables WHERE"
	                                         " history_behind"), 0);
	pgtest_exec(e->s, "UPDATE h SET n = n + 100 WHERE id = 1");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM h_history WHERE tidemark_op ="
	                                    " 'update' AND id = 1 AND n = 101", "1", 60));
	tm_stop_and_catch_up(e, run, 120);

	out = tm_expect(e, 0, "mode", "public.h=mirror", "--metadata-columns");
	tm_assert_has(out, "kept, no longer written");
	free(out);
	pgtest_exec(e->s, "UPDATE h SET n = n + 100 WHERE id = 2");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM h_history"), 21);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM h WHERE id = 2 AND"
	                                         " tidemark_lsn IS NOT NULL"), 1);
	out = tm_expect(e, 0, "mode", "--json");
	{
		json_t *doc = tm_json_of(out), *t = tm_json_table(doc, "public.h");

		assert_string_equal(json_string_value(json_object_get(t, "mode")), "mirror");
		assert_true(json_is_true(json_object_get(t, "metadata_columns")));
		assert_string_equal(json_string_value(json_object_get(t, "history")), "h_history");
		json_decref(doc);
	}
	free(out);

	/* on again: the same history goes on, the table copied again */
	out = tm_expect(e, 0, "mode", "public.h=history", "--no-metadata-columns");
	tm_assert_has(out, "missing from it");
	tm_assert_has(out, "dropped the columns tidemark_lsn and tidemark_synced_at");
	free(out);
	assert_false(target_has_column(e, "h", "tidemark_lsn"));
	tm_catch_up(e, 120);
	/* id 2 changed while history was off: its copy entry brings it up to
	 * date; the other rows' latest entries were right: no copy of them */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM h_history WHERE id = 2 AND"
	                                         " tidemark_op = 'copy' AND n = 102"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM h_history"), 22);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_index WHERE indrelid ="
	                                         " 'h_history'::regclass"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM h_versions WHERE"
	                                         " tidemark_is_current"), 20);
	tm_assert_equal(e, "h", "id");
	assert_status_mode(e, "public.h", "history", false);
	tm_env_free(e);
}

/* A mode a table cannot keep is refused before anything changes, naming
 * the table: a history of a table without a key, metadata columns of a
 * table with a column of tidemark's name; a table of no setup, two flags. */
static void
test_mode_refused(void **state)
{
	tm_env *e = tm_env_new("mode_refused");
	char *out;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE k (a int, b text); ALTER TABLE k REPLICA IDENTITY FULL;"
	                  "CREATE TABLE r (id int PRIMARY KEY, tidemark_lsn text);"
	                  "CREATE TABLE ok (id int PRIMARY KEY)");
	out = tm_expect(e, 3, "setup", "--table", "public.k", "--table-mode", "public.k=history");
	tm_assert_has(out, "table public.k has no key, so it cannot keep a history");
	tm_assert_has(out, "Fix: give it a primary key on the source");
	free(out);
	out = tm_expect(e, 3, "setup", "--table", "public.r", "--metadata-columns");
	tm_assert_has(out, "table public.r has a column named tidemark_lsn");
	free(out);
	free(tm_expect(e, 2, "setup", "--table", "public.ok", "--table-mode", "public.k=history"));
	free(tm_expect(e, 2, "setup", "--table", "public.ok", "--table-mode", "public.ok=archive"));
	/* nothing of them was made on the target */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_class WHERE relname IN"
	                                         " ('k', 'r', 'ok')"), 0);

	free(tm_expect(e, 0, "setup", "--table", "public.k", "--table", "public.r"));
	free(tm_expect(e, 3, "mode", "public.k=soft-delete"));
	free(tm_expect(e, 3, "mode", "--metadata-columns"));
	free(tm_expect(e, 3, "mode", "public.nope=history"));
	free(tm_expect(e, 2, "mode", "--metadata-columns", "--no-metadata-columns"));
	/* all or nothing: k is still a plain mirror, and so is r */
	assert_status_mode(e, "public.k", "mirror", false);
	assert_status_mode(e, "public.r", "mirror", false);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.progress WHERE"
	                                         " metadata_columns"), 0);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserved_column_added),
		cmocka_unit_test(test_setup_modes),
		cmocka_unit_test(test_join_reserved_column),
		cmocka_unit_test(test_mode_soft_delete),
		cmocka_unit_test(test_mode_history),
		cmocka_unit_test(test_mode_refused),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
