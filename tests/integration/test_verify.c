/*
 * Integration tests of `tidemark verify` against real clusters: a copied
 * table verifies equal; planted differences (a changed, a deleted and an
 * extra row in a table with a composite key of quoted names) are found,
 * exactly those; a healthy pair verifies equal while `run` streams a write
 * workload; a column widened on the target compares by value and a column
 * the source dropped is not compared; values and keys that do not convert;
 * names that are not replicated, and tables whose copy is not finished;
 * the JSON report.
 */
#include <jansson.h>
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

/* Lines of the output that name a differing key. */
static int
count_differences(const char *out)
{
	int n = 0;

	for (const char *p = out; (p = strstr(p, " key (")) != NULL; p++)
		n++;
	return n;
}

static void
assert_contains(const char *out, const char *needle)
{
	if (strstr(out, needle) == NULL)
		fail_msg("expected \"%s\" in the output:\n%s", needle, out);
}

/* ---- (1) a copied table is equal ---- */

static void
test_copied_table_is_equal(void **state)
{
	tm_env *e = tm_env_new("vequal");
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL,"
	                  " amount numeric(12,2), note text, created timestamptz, tags text[]);"
	                  "INSERT INTO orders SELECT g, (ARRAY['new','paid'])[1 + g %% 2], g / 7.0,"
	                  " CASE WHEN g %% 10 = 0 THEN NULL ELSE 'n' || g END,"
	                  " '2024-01-01'::timestamptz + g * interval '1 minute', ARRAY['a', g::text]"
	                  " FROM generate_series(1, 25000) g");
	tm_setup_table(e, "orders");
	tm_catch_up(e, 120);
	rc = tm_run(e, 120, &out, "verify", "--chunk-rows", "3000", NULL);
	if (rc != 0)
		fail_msg("verify exited %d:\n%s", rc, out);
	assert_contains(out, "public.orders: equal, 0 differences; 25000 rows on the source");
	assert_contains(out, "equal: 1 table compared");
	assert_int_equal(count_differences(out), 0);
	free(out);
	tm_env_free(e);
}

/* ---- (2) planted differences, composite key with quoted names ---- */

static tm_env *
line_items(const char *name)
{
	tm_env *e = tm_env_new(name);

	pgtest_exec(e->s, "CREATE TABLE \"Line Items\" (\"Order Id\" int, \"Line No\" int,"
	                  " qty int NOT NULL, \"Unit Price\" numeric(10,2), PRIMARY KEY (\"Order Id\","
	                  " \"Line No\"));"
	                  "INSERT INTO \"Line Items\" SELECT g / 4, g %% 4, g %% 13, (g %% 1000) / 10.0"
	                  " FROM generate_series(0, 19999) g");
	tm_setup_table(e, "public.\"Line Items\"");
	tm_catch_up(e, 120);
	/* on the target: one row changed, one deleted, one extra */
	pgtest_exec(e->t, "UPDATE \"Line Items\" SET qty = 99, \"Unit Price\" = NULL"
	                  " WHERE \"Order Id\" = 1234 AND \"Line No\" = 2;"
	                  "DELETE FROM \"Line Items\" WHERE \"Order Id\" = 3000 AND \"Line No\" = 0;"
	                  "INSERT INTO \"Line Items\" VALUES (2500, 7, 1, 1.00)");
	return e;
}

static void
test_planted_differences(void **state)
{
	tm_env *e = line_items("vplanted");
	char *out = NULL;
	int rc;

	(void) state;
	rc = tm_run(e, 120, &out, "verify", NULL);
	if (rc != 1)
		fail_msg("verify exited %d, expected 1:\n%s", rc, out);
	assert_contains(out, "public.\"Line Items\" key (\"Order Id\", \"Line No\")=(1234, 2): values "
	                     "differ: qty source '11' target '99', \"Unit Price\" source '93.80' "
	                     "target NULL\n");
	assert_contains(out, "public.\"Line Items\" key (\"Order Id\", \"Line No\")=(2500, 7): extra "
	                     "on the target\n");
	assert_contains(out, "public.\"Line Items\" key (\"Order Id\", \"Line No\")=(3000, 0): missing "
	                     "on the target\n");
	assert_int_equal(count_differences(out), 3);
	assert_contains(out, "different: 3 differences");
	free(out);
	/* --table names the table the SQL way; small pages find the same three */
	out = NULL;
	rc = tm_run(e, 120, &out, "verify", "--table", "public.\"Line Items\"", "--chunk-rows", "500",
	            NULL);
	assert_int_equal(rc, 1);
	assert_int_equal(count_differences(out), 3);
	free(out);
	tm_env_free(e);
}

/* ---- (3) a healthy pair under a write workload ---- */

/* Each step changes a few hundred rows spread over the table, so that
 * verify's ranges keep meeting changes the target has not applied yet. */
static void
orders_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	pgtest_exec(conn, "UPDATE orders SET status = 'paid', amount = amount + 1"
	                  " WHERE id %% 97 = %u", i % 97);
	pgtest_exec(conn, "INSERT INTO orders (status, amount) SELECT 'new', g + 0.25"
	                  " FROM generate_series(1, 20) g");
	pgtest_exec(conn, "DELETE FROM orders WHERE id %% 1009 = %u", i % 1009);
}

static json_t *parse_report(const char *out);

/* verify --json while the workload writes: equal; returns the number of
 * keys the pass found different (changes in flight, re-checked). */
static long
verify_under_load(tm_env *e, pgtest_workload *w)
{
	unsigned before = pgtest_workload_iterations(w);
	char *out = NULL;
	int rc = tm_run(e, 120, &out, "verify", "--json", "--chunk-rows", "1000", NULL);
	json_t *doc, *stats;
	long rechecked;

	if (rc != 0)
		fail_msg("verify under load exited %d:\n%s", rc, out);
	doc = parse_report(out);
	assert_true(json_is_true(json_object_get(doc, "equal")));
	stats = json_object_get(json_array_get(json_object_get(doc, "tables"), 0), "stats");
	rechecked = (long) json_integer_value(json_object_get(stats, "rechecked"));
	/* the workload did write while verify ran */
	assert_true(pgtest_workload_iterations(w) > before);
	json_decref(doc);
	free(out);
	return rechecked;
}

static void
test_equal_while_streaming(void **state)
{
	tm_env *e = tm_env_new("vlive");
	pgtest_workload *w;
	pgtest_proc *run;
	long rechecked = 0;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE orders (id bigserial PRIMARY KEY, status text NOT NULL,"
	                  " amount numeric(12,2));"
	                  "INSERT INTO orders (status, amount) SELECT 'new', g FROM generate_series(1, 20000) g");
	tm_setup_table(e, "orders");
	tm_catch_up(e, 120);
	run = tm_start_run(e, NULL);
	w = pgtest_workload_start(e->src, orders_step, NULL);
	tm_sleep_ms(500);
	/* equal every time; until a pass meets changes in flight, which its
	 * re-checks clear (how often one does depends on the machine's pace) */
	for (int round = 0; round < 2 || (rechecked == 0 && round < 8); round++)
		rechecked += verify_under_load(e, w);
	assert_true(rechecked > 0);
	pgtest_workload_stop(w, NULL);
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "orders", "id");
	tm_env_free(e);
}

/* ---- (4) a widened column, a column the source dropped ---- */

static void
test_widened_and_dropped_columns(void **state)
{
	tm_env *e = tm_env_new("vwiden");
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE w (id int PRIMARY KEY, price integer, legacy text,"
	                  " label varchar(10));"
	                  "INSERT INTO w SELECT g, g, 'old', 'l' || g FROM generate_series(1, 3000) g");
	tm_setup_table(e, "w");
	tm_catch_up(e, 120);
	/* the target holds wider types (as after a narrowing the widen policy kept) */
	pgtest_exec(e->t, "ALTER TABLE w ALTER COLUMN price TYPE numeric(12,2),"
	                  " ALTER COLUMN label TYPE text");
	/* the source drops a column; the target keeps it, no longer filled */
	pgtest_exec(e->s, "ALTER TABLE w DROP COLUMN legacy; INSERT INTO w VALUES (3001, 5, 'new')");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM w WHERE legacy IS NULL"), 1);
	rc = tm_run(e, 120, &out, "verify", NULL);
	if (rc != 0)
		fail_msg("verify exited %d:\n%s", rc, out);
	assert_contains(out, "compared: id, price as numeric(12,2), label as text;"
	                     " not compared: legacy (target only)");
	free(out);
	/* a value that differs only in the target's type is still found */
	pgtest_exec(e->t, "UPDATE w SET price = 7.50 WHERE id = 7");
	out = NULL;
	assert_int_equal(tm_run(e, 120, &out, "verify", NULL), 1);
	assert_contains(out, "public.w key (id)=(7): values differ: price source '7.00' target '7.50'\n");
	assert_int_equal(count_differences(out), 1);
	free(out);
	tm_env_free(e);
}

/* Target types a source value cannot always convert to, and a key of
 * another type on the target that holds values the source's type cannot:
 * ranges with such values are compared as plain text, keys again one by
 * one; exactly the planted differences remain. */
static void
test_unconvertible_values_and_keys(void **state)
{
	tm_env *e = tm_env_new("vconvert");
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE kt (id int PRIMARY KEY, v int, d date);"
	                  "INSERT INTO kt SELECT g, g, '2024-01-01'::date + g FROM generate_series(1, 300) g;"
	                  "INSERT INTO kt VALUES (500, 1, '300000-01-01')");
	tm_setup_table(e, "kt");
	tm_catch_up(e, 120);
	pgtest_exec(e->t, "ALTER TABLE kt ALTER COLUMN id TYPE numeric(12,2), ALTER COLUMN v TYPE bigint,"
	                  " ALTER COLUMN d TYPE timestamp USING CASE WHEN d > '100000-01-01' THEN"
	                  " '2000-01-01' ELSE d END;"
	                  "INSERT INTO kt VALUES (5.5, 1, now()), (9999999999, 2, now()), (150.25, 3, now());"
	                  "UPDATE kt SET v = 77 WHERE id = 100");
	rc = tm_run(e, 120, &out, "verify", NULL);
	if (rc != 1)
		fail_msg("verify exited %d, expected 1:\n%s", rc, out);
	assert_contains(out, "public.kt key (id)=(5.50): extra on the target\n");
	assert_contains(out, "public.kt key (id)=(100): values differ: v source '100' target '77'\n");
	assert_contains(out, "public.kt key (id)=(150.25): extra on the target\n");
	assert_contains(out, "public.kt key (id)=(500): values differ: d source '300000-01-01' target"
	                     " '2000-01-01 00:00:00'\n");
	assert_contains(out, "public.kt key (id)=(9999999999.00): extra on the target\n");
	assert_int_equal(count_differences(out), 5);
	free(out);
	tm_env_free(e);
}

/* ---- (5) names that are not replicated, copies not finished ---- */

static void
test_not_replicated_and_unfinished(void **state)
{
	tm_env *e = tm_env_new("vnames");
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY);"
	                  "INSERT INTO a VALUES (1); INSERT INTO b VALUES (1)");
	tm_setup_table(e, "a");
	rc = tm_run(e, 60, &out, "verify", "--table", "public.b", NULL);
	assert_int_equal(rc, 3);
	assert_contains(out, "table public.b is not replicated through slot \"tm_vnames\"");
	free(out);
	out = NULL;
	assert_int_equal(tm_run(e, 60, &out, "verify", "--table", "nope", NULL), 3);
	free(out);
	/* a is replicated but not copied yet: skipped, said so */
	out = NULL;
	rc = tm_run(e, 60, &out, "verify", NULL);
	assert_int_equal(rc, 0);
	assert_contains(out, "public.a: skipped: its snapshot is not finished (state snapshot_pending)");
	free(out);
	out = NULL;
	assert_int_equal(tm_run(e, 60, &out, "verify", "--table", "public.\"unterminated", NULL), 2);
	free(out);
	tm_env_free(e);
}

/* ---- (6) the JSON report ---- */

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

static json_t *
difference_of_kind(json_t *diffs, const char *kind)
{
	size_t i;
	json_t *d;

	json_array_foreach(diffs, i, d)
		if (strcmp(json_string_value(json_object_get(d, "kind")), kind) == 0)
			return d;
	fail_msg("no difference of kind %s", kind);
	return NULL;
}

static void
test_json_report(void **state)
{
	tm_env *e = line_items("vjson");
	char *out = NULL;
	json_t *doc, *table, *diffs, *d, *col;

	(void) state;
	assert_int_equal(tm_run(e, 120, &out, "verify", "--json", "-q", NULL), 1);
	doc = parse_report(out);
	assert_true(json_is_false(json_object_get(doc, "equal")));
	assert_int_equal(json_integer_value(json_object_get(doc, "differences")), 3);
	table = json_array_get(json_object_get(doc, "tables"), 0);
	assert_string_equal(json_string_value(json_object_get(table, "name")), "Line Items");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(table, "stats"),
	                                                    "source_rows")), 20000);
	diffs = json_object_get(table, "differences");
	assert_int_equal(json_array_size(diffs), 3);
	d = difference_of_kind(diffs, "values differ");
	assert_string_equal(json_string_value(json_object_get(json_object_get(d, "key"), "Order Id")),
	                    "1234");
	col = json_array_get(json_object_get(d, "columns"), 1);
	assert_string_equal(json_string_value(json_object_get(col, "column")), "Unit Price");
	assert_string_equal(json_string_value(json_object_get(col, "source")), "93.80");
	assert_true(json_is_null(json_object_get(col, "target")));
	d = difference_of_kind(diffs, "missing on the target");
	assert_string_equal(json_string_value(json_object_get(json_object_get(d, "key"), "Line No")),
	                    "0");
	difference_of_kind(diffs, "extra on the target");
	json_decref(doc);
	free(out);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copied_table_is_equal),
		cmocka_unit_test(test_planted_differences),
		cmocka_unit_test(test_equal_while_streaming),
		cmocka_unit_test(test_widened_and_dropped_columns),
		cmocka_unit_test(test_unconvertible_values_and_keys),
		cmocka_unit_test(test_not_replicated_and_unfinished),
		cmocka_unit_test(test_json_report),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
