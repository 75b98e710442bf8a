/*
 * Integration tests of `tidemark verify` on tables in other modes than the
 * plain mirror (README: Table modes): a soft-delete table verifies equal
 * with rows deleted on the source kept marked on the target, counted apart
 * in the text and the JSON report, and a live row missing on the target is
 * still found; tidemark's own columns are not listed as not compared,
 * while a plain mirror's source column of such a name is compared.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tm_fixture.h"

static void
assert_contains(const char *out, const char *needle)
{
	if (strstr(out, needle) == NULL)
		fail_msg("expected \"%s\" in the output:\n%s", needle, out);
}

static void
assert_not_contains(const char *out, const char *needle)
{
	if (strstr(out, needle) != NULL)
		fail_msg("did not expect \"%s\" in the output:\n%s", needle, out);
}

/* `verify` with extra arguments (NULL-terminated), expecting exit code
 * want; returns the output (caller frees). */
static char *
verify_expect(tm_env *e, int want, const char *arg1, const char *arg2, const char *arg3)
{
	char *out = NULL;
	int rc = tm_run(e, 120, &out, "verify", arg1, arg2, arg3, NULL);

	if (rc != want)
		fail_msg("verify exited %d, expected %d:\n%s", rc, want, out);
	return out;
}

static json_t *
parse_report(const char *out)
{
	const char *start = strstr(out, "{\n");
	json_error_t err;
	json_t *doc;

	if (start == NULL)
		fail_msg("no JSON document in the output:\n%s", out);
	doc = json_loads(start, JSON_DISABLE_EOF_CHECK, &err);
	if (doc == NULL)
		fail_msg("the JSON does not parse (%s):\n%s", err.text, out);
	return doc;
}

/* The JSON report of the one table compared. */
static json_t *
only_table(json_t *doc)
{
	json_t *tables = json_object_get(doc, "tables");

	assert_int_equal(json_array_size(tables), 1);
	return json_array_get(tables, 0);
}

/* ---- (1) soft deletes ---- */

/* A soft-delete table with metadata columns, 30 of its 3000 rows deleted
 * on the source and kept marked on the target. */
static tm_env *
soft_deleted(const char *name)
{
	tm_env *e = tm_env_new(name);

	pgtest_exec(e->s, "CREATE TABLE o (id int PRIMARY KEY, s text, n int);"
	                  "INSERT INTO o SELECT g, 's' || g, g %% 7 FROM generate_series(1, 3000) g");
	tm_setup_table(e, "public.o");
	/* the mode as `setup --table-mode` stores it, before the first run */
	pgtest_exec(e->t, "UPDATE tidemark.tables SET mode = 'soft-delete', metadata_columns = true;"
	                  "SELECT tidemark.shape_sync(table_id) FROM tidemark.tables");
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "DELETE FROM o WHERE id %% 100 = 0");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM o WHERE tidemark_deleted_at"
	                                         " IS NOT NULL"), 30);
	return e;
}

static void
test_soft_delete_equal(void **state)
{
	tm_env *e = soft_deleted("vsoft_equal");
	char *out;
	json_t *doc, *table, *stats;

	(void) state;
	/* small pages: marked rows in every page, first and last too */
	out = verify_expect(e, 0, "--chunk-rows", "250", NULL);
	assert_contains(out, "public.o: equal, 0 differences; 2970 rows on the source, 2970 on the "
	                     "target");
	assert_contains(out, "  30 rows kept as deleted (soft-delete): not compared\n");
	assert_contains(out, "  compared: id, s, n\n");
	assert_not_contains(out, "not compared: ");
	assert_contains(out, "equal: 1 table compared");
	free(out);
	/* a marked row changed on the target is not the source's either */
	pgtest_exec(e->t, "UPDATE o SET s = 'changed' WHERE id = 100");
	out = verify_expect(e, 0, "--json", "-q", NULL);
	doc = parse_report(out);
	table = only_table(doc);
	assert_true(json_is_true(json_object_get(doc, "equal")));
	assert_string_equal(json_string_value(json_object_get(table, "mode")), "soft-delete");
	assert_int_equal(json_integer_value(json_object_get(table, "kept_as_deleted")), 30);
	assert_int_equal(json_array_size(json_object_get(table, "not_compared")), 0);
	assert_int_equal(json_array_size(json_object_get(table, "columns")), 3);
	stats = json_object_get(table, "stats");
	assert_int_equal(json_integer_value(json_object_get(stats, "target_rows")), 2970);
	json_decref(doc);
	free(out);
	tm_env_free(e);
}

static void
test_soft_delete_differences(void **state)
{
	tm_env *e = soft_deleted("vsoft_diff");
	char *out;
	json_t *doc, *table;

	(void) state;
	/* by hand on the target: a live row deleted, another marked deleted
	 * (live on the source), a row deleted on the source made live again */
	pgtest_exec(e->t, "DELETE FROM o WHERE id = 7;"
	                  "UPDATE o SET tidemark_deleted_at = now() WHERE id = 1234;"
	                  "UPDATE o SET tidemark_deleted_at = NULL WHERE id = 2000");
	out = verify_expect(e, 1, "--chunk-rows", "500", NULL);
	assert_contains(out, "public.o key (id)=(7): missing on the target\n");
	assert_contains(out, "public.o key (id)=(1234): missing on the target\n");
	assert_contains(out, "public.o key (id)=(2000): extra on the target\n");
	assert_contains(out, "public.o: different, 3 differences");
	assert_contains(out, "  30 rows kept as deleted (soft-delete): not compared\n");
	free(out);
	/* the same with one page: the pass reads the rows without bisecting */
	out = verify_expect(e, 1, "--json", "-q", NULL);
	doc = parse_report(out);
	table = only_table(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "differences")), 3);
	assert_int_equal(json_integer_value(json_object_get(table, "kept_as_deleted")), 30);
	json_decref(doc);
	free(out);
	tm_env_free(e);
}

/* ---- (2) tidemark's own columns ---- */

/* A plain mirror whose source has a column named tidemark_lsn compares it;
 * a mirror with metadata columns does not list them. */
static void
test_own_columns(void **state)
{
	tm_env *e = tm_env_new("vown");
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE p (id int PRIMARY KEY, tidemark_lsn text);"
	                  "CREATE TABLE m (id int PRIMARY KEY, v int);"
	                  "INSERT INTO p SELECT g, 'a' || g FROM generate_series(1, 200) g;"
	                  "INSERT INTO m SELECT g, g FROM generate_series(1, 200) g");
	if (tm_run(e, 60, &out, "setup", "--table", "public.p", "--table", "public.m", NULL) != 0)
		fail_msg("setup failed:\n%s", out);
	free(out);
	pgtest_exec(e->t, "UPDATE tidemark.tables SET metadata_columns = true"
	                  " WHERE target_table = 'm';"
	                  "SELECT tidemark.shape_sync(table_id) FROM tidemark.tables");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM m WHERE tidemark_synced_at"
	                                         " IS NOT NULL"), 200);
	out = verify_expect(e, 0, NULL, NULL, NULL);
	assert_contains(out, "public.p: equal");
	assert_contains(out, "public.m: equal");
	assert_contains(out, "  compared: id, tidemark_lsn\n");
	assert_contains(out, "  compared: id, v\n");
	assert_not_contains(out, "not compared: ");
	assert_not_contains(out, "kept as deleted");
	free(out);
	/* the plain mirror's tidemark_lsn is the source's: a change is found */
	pgtest_exec(e->t, "UPDATE p SET tidemark_lsn = 'changed' WHERE id = 2");
	out = verify_expect(e, 1, NULL, NULL, NULL);
	assert_contains(out, "public.p key (id)=(2): values differ: tidemark_lsn source 'a2' target "
	                     "'changed'\n");
	assert_contains(out, "different: 1 difference");
	free(out);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_delete_equal),
		cmocka_unit_test(test_soft_delete_differences),
		cmocka_unit_test(test_own_columns),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
