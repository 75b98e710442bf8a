/*
 * Integration tests of type changes that change values on the source:
 * ALTER COLUMN ... TYPE ... USING an expression (also to the same type),
 * conversions that depend on the DDL session's TimeZone, DateStyle,
 * IntervalStyle and extra_float_digits, widen following a rewrite to a type
 * the common one would hold only as text (json -> jsonb, text -> an enum,
 * text -> integer computed by CASE), and migrations that rewrite hundreds
 * of tables in one transaction or rename a schema of many tables. Each
 * ends with the target equal to the source, compared with SQL written
 * here (types and texts exact), and `tidemark verify` exiting 0. Also: the
 * target's prepared-statement cache stays within its budget of bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sink.h"
#include "strbuf.h"
#include "tm_fixture.h"

static void
assert_target_type(tm_env *e, const char *table, const char *column, const char *expected)
{
	char *t = pgtest_query_value(e->t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                                   " WHERE attrelid = '%s'::regclass AND attname = '%s'"
	                                   " AND NOT attisdropped", table, column);

	if (t == NULL || strcmp(t, expected) != 0)
		fail_msg("target %s.%s has type %s, expected %s", table, column, t ? t : "(none)",
		         expected);
	free(t);
}

/* The same SQL gives the same text on both sides. */
static void
assert_same(tm_env *e, const char *sql)
{
	char *src = pgtest_query_value(e->s, "%s", sql);
	char *dst = pgtest_query_value(e->t, "%s", sql);

	assert_non_null(src);
	assert_non_null(dst);
	if (strcmp(src, dst) != 0)
		fail_msg("%s\n  source: %.600s\n  target: %.600s", sql, src, dst);
	free(src);
	free(dst);
}

static void
assert_verify(tm_env *e, const char *table)
{
	char *out = NULL;
	int rc = table ? tm_run(e, 120, &out, "verify", "--table", table, NULL)
	               : tm_run(e, 300, &out, "verify", NULL);

	if (rc != 0)
		fail_msg("verify exited %d:\n%s", rc, out ? out : "");
	free(out);
}

/* The audit log has an entry whose target action holds text. */
static void
assert_logged(tm_env *e, const char *text)
{
	long n = pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log"
	                                 " WHERE strpos(target_action, $$%s$$) > 0", text);

	if (n == 0) {
		char *all = pgtest_query_value(e->t, "SELECT string_agg(target_action, E'\\n')"
		                                     " FROM tidemark.ddl_log");

		fail_msg("no audit log entry says \"%s\"; they say:\n%s", text, all ? all : "");
	}
}

/* A copied table, then the DDL (on a connection of its own, so that its
 * session settings stay there) with a row written after it, caught up. */
static void
change_and_catch_up(tm_env *e, const char *table, const char *ddl, const char *after)
{
	pgtest_proc *run;
	PGconn *app;

	tm_setup_table(e, table);
	tm_catch_up(e, 60); /* copied before the change */
	run = tm_start_run(e, NULL);
	app = pgtest_connect_str(e->src);
	pgtest_exec(app, "%s", ddl);
	if (after != NULL)
		pgtest_exec(app, "%s", after);
	PQfinish(app);
	tm_stop_and_catch_up(e, run, 120);
}

/* ---- USING ---- */

static void
test_using_on_a_widening(void **state)
{
	tm_env *e = tm_env_new("using_widen");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, amount integer);"
	                  "INSERT INTO t SELECT g, g FROM generate_series(1, 300) g");
	change_and_catch_up(e, "t", "ALTER TABLE t ALTER amount TYPE bigint USING amount * 100",
	                    "INSERT INTO t VALUES (1001, 7); UPDATE t SET amount = -1 WHERE id = 5");
	assert_target_type(e, "t", "amount", "bigint");
	assert_same(e, "SELECT string_agg(id || ':' || amount, ',' ORDER BY id) FROM t");
	assert_logged(e, "copied again: the source converted the values of amount with "
	                 "USING amount * 100");
	assert_verify(e, "public.t");
	tm_env_free(e);
}

static void
test_using_to_the_same_type(void **state)
{
	tm_env *e = tm_env_new("using_same");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, amount bigint, note text);"
	                  "INSERT INTO t SELECT g, g, 'n' || g FROM generate_series(1, 300) g");
	change_and_catch_up(e, "t",
	                    "ALTER TABLE t ALTER amount TYPE bigint USING amount * 100,"
	                    " ALTER note TYPE text USING upper(note)",
	                    "INSERT INTO t VALUES (1001, 7, 'x')");
	assert_target_type(e, "t", "amount", "bigint");
	assert_same(e, "SELECT string_agg(id || ':' || amount || ':' || note, ',' ORDER BY id) FROM t");
	assert_verify(e, "public.t");
	tm_env_free(e);
}

/* widen follows integer (text would hold the values only as text); the
 * target's cast refuses the old texts, so its table is emptied and copied. */
static void
test_using_case_to_integer(void **state)
{
	tm_env *e = tm_env_new("using_case");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, status text NOT NULL);"
	                  "INSERT INTO t SELECT g, CASE WHEN g %% 3 = 0 THEN 'active' ELSE 'gone' END"
	                  " FROM generate_series(1, 300) g");
	change_and_catch_up(e, "t",
	                    "ALTER TABLE t ALTER status TYPE integer"
	                    " USING CASE status WHEN 'active' THEN 1 ELSE 0 END",
	                    "INSERT INTO t VALUES (1001, 5)");
	assert_target_type(e, "t", "status", "integer");
	assert_same(e, "SELECT string_agg(id || ':' || status, ',' ORDER BY id) FROM t");
	assert_verify(e, "public.t");
	tm_env_free(e);
}

/* ---- the DDL session's settings ---- */

static void
test_timestamp_to_timestamptz_in_new_york(void **state)
{
	tm_env *e = tm_env_new("tz_newyork");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, ts timestamp);"
	                  "INSERT INTO t SELECT g, timestamp '2024-01-01 12:00' + g * interval '1 day'"
	                  " FROM generate_series(1, 300) g");
	change_and_catch_up(e, "t",
	                    "SET TimeZone = 'America/New_York';"
	                    "ALTER TABLE t ALTER ts TYPE timestamptz",
	                    "INSERT INTO t VALUES (1001, '2024-07-01 08:00:00+00')");
	assert_target_type(e, "t", "ts", "timestamp with time zone");
	assert_same(e, "SELECT string_agg(id || '=' || extract(epoch FROM ts), ',' ORDER BY id) FROM t");
	assert_logged(e, "converted under the source session's TimeZone America/New_York");
	assert_verify(e, "public.t");
	tm_env_free(e);
}

static void
test_values_to_text_in_paris(void **state)
{
	tm_env *e = tm_env_new("text_paris");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, ts timestamptz, d date, i interval,"
	                  " f double precision);"
	                  "INSERT INTO t SELECT g, timestamptz '2024-03-30 12:00:00+00'"
	                  " + g * interval '7 hours', date '2024-01-01' + g,"
	                  " g * interval '-1 day 3 hours 4 minutes', g / 7.0"
	                  " FROM generate_series(1, 300) g");
	change_and_catch_up(e, "t",
	                    "SET TimeZone = 'Europe/Paris'; SET DateStyle = 'SQL, DMY';"
	                    "SET IntervalStyle = 'sql_standard'; SET extra_float_digits = 0;"
	                    "ALTER TABLE t ALTER ts TYPE text, ALTER d TYPE text, ALTER i TYPE text,"
	                    " ALTER f TYPE text",
	                    "INSERT INTO t VALUES (1001, 'x', 'y', 'z', 'w')");
	assert_target_type(e, "t", "ts", "text");
	assert_target_type(e, "t", "f", "text");
	assert_same(e, "SELECT string_agg(concat_ws('|', id, ts, d, i, f), ',' ORDER BY id) FROM t");
	/* the source's own texts, not the target session's */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM t WHERE ts LIKE '%% CET'"
	                                         " OR ts LIKE '%% CEST'"), 300);
	assert_verify(e, "public.t");
	tm_env_free(e);
}

/* ---- widen follows ---- */

static void
test_json_to_jsonb_under_widen(void **state)
{
	tm_env *e = tm_env_new("jsonb");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, doc json);"
	                  "INSERT INTO t SELECT g, format('{\"b\": %%s,  \"a\": {\"k\": %%s}, \"b\": 0}',"
	                  " g, g %% 5)::json FROM generate_series(1, 300) g");
	change_and_catch_up(e, "t", "ALTER TABLE t ALTER doc TYPE jsonb",
	                    "INSERT INTO t VALUES (1001, '{\"a\": {\"k\": 3}}')");
	assert_target_type(e, "t", "doc", "jsonb");
	assert_same(e, "SELECT string_agg(id || '=' || doc, ',' ORDER BY id) FROM t");
	/* jsonb's operators and indexes on the target */
	pgtest_exec(e->t, "CREATE INDEX t_doc ON t USING gin (doc jsonb_path_ops)");
	assert_same(e, "SELECT count(*) FROM t WHERE doc @> '{\"a\": {\"k\": 3}}'");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM t"
	                                         " WHERE doc @> '{\"a\": {\"k\": 3}}'"), 61);
	assert_verify(e, "public.t");
	tm_env_free(e);
}

static void
test_text_to_enum_under_widen(void **state)
{
	tm_env *e = tm_env_new("enum");

	(void) state;
	pgtest_exec(e->s, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');"
	                  "CREATE TABLE t (id int PRIMARY KEY, m text);"
	                  "INSERT INTO t SELECT g, (ARRAY['happy', 'sad', 'ok'])[g %% 3 + 1]"
	                  " FROM generate_series(1, 300) g");
	change_and_catch_up(e, "t", "ALTER TABLE t ALTER m TYPE mood USING m::mood",
	                    "INSERT INTO t VALUES (1001, 'ok')");
	assert_target_type(e, "t", "m", "mood");
	/* sorted by the enum's order on both sides */
	assert_same(e, "SELECT string_agg(id || '=' || m, ',' ORDER BY m, id) FROM t");
	assert_verify(e, "public.t");
	tm_env_free(e);
}

/* ---- hundreds of tables in one transaction ---- */

/* Schema `schema` with n tables, each made by table_fmt (with %1$d, the
 * table's number), replicated with `setup --schema`. */
static void
many_tables(tm_env *e, const char *schema, int n, const char *table_fmt)
{
	strbuf sql = STRBUF_INIT;
	char *out = NULL;

	strbuf_appendf(&sql, "CREATE SCHEMA %s;", schema);
	for (int i = 1; i <= n; i++)
		strbuf_appendf(&sql, table_fmt, i);
	pgtest_exec(e->s, "%s", strbuf_str(&sql));
	assert_int_equal(tm_run(e, 120, &out, "setup", "--schema", schema, NULL), 0);
	free(out);
	strbuf_free(&sql);
}

/* The same text on both sides for each of n tables: query_fmt with %1$d.
 * Fails naming every table that differs (the first one's texts shown). */
static void
assert_each_same(tm_env *e, int n, const char *query_fmt)
{
	strbuf sql = STRBUF_INIT, differ = STRBUF_INIT, first = STRBUF_INIT;
	int ndiffer = 0;

	for (int i = 1; i <= n; i++) {
		char *src, *dst;

		strbuf_reset(&sql);
		strbuf_appendf(&sql, query_fmt, i);
		src = pgtest_query_value(e->s, "%s", strbuf_str(&sql));
		dst = pgtest_query_value(e->t, "%s", strbuf_str(&sql));
		if (src == NULL || dst == NULL || strcmp(src, dst) != 0) {
			if (ndiffer++ == 0)
				strbuf_appendf(&first, "%s\n  source: %.300s\n  target: %.300s",
				               strbuf_str(&sql), src ? src : "(null)", dst ? dst : "(null)");
			strbuf_appendf(&differ, " %d", i);
		}
		free(src);
		free(dst);
	}
	if (ndiffer > 0)
		fail_msg("%d of %d tables differ (numbers:%s); the first:\n%s", ndiffer, n,
		         strbuf_str(&differ), strbuf_str(&first));
	strbuf_free(&sql);
	strbuf_free(&differ);
	strbuf_free(&first);
}

#define WIDE_TABLES 300

/*
 * 300 tables rewritten in one transaction sent as one string: the odd
 * ones with USING (found in the text), the even ones by a rounding
 * numeric(12,2) -> integer without USING (found by the source's rewrite
 * of each table): every one is copied again.
 */
static void
test_three_hundred_tables_in_one_transaction(void **state)
{
	tm_env *e = tm_env_new("wide");
	strbuf sql = STRBUF_INIT;
	pgtest_proc *run;

	(void) state;
	many_tables(e, "w", WIDE_TABLES,
	            "CREATE TABLE w.r%1$d (id int PRIMARY KEY, a integer, b numeric(12,2));"
	            "INSERT INTO w.r%1$d VALUES (1, 1, 1.5), (2, 2, 2.25), (3, %1$d, 0.5);");
	tm_catch_up(e, 300);
	run = tm_start_run(e, NULL);
	strbuf_append(&sql, "BEGIN;");
	for (int i = 1; i <= WIDE_TABLES; i++)
		if (i % 2)
			strbuf_appendf(&sql, "ALTER TABLE w.r%d ALTER a TYPE bigint USING a * 100;", i);
		else
			strbuf_appendf(&sql, "ALTER TABLE w.r%d ALTER b TYPE integer;", i);
	strbuf_append(&sql, "COMMIT;");
	pgtest_exec(e->s, "%s", strbuf_str(&sql));
	pgtest_exec(e->s, "INSERT INTO w.r%d VALUES (4, 4, 4)", WIDE_TABLES);
	/* the run stops after the target transaction that applies the migration */
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM tidemark.schema_versions"
	                                    " WHERE version = 2", "300", 300));
	tm_stop_and_catch_up(e, run, 300);
	assert_target_type(e, "w.r1", "a", "bigint");
	assert_target_type(e, "w.r2", "b", "numeric(12,2)");
	/* widen keeps numeric(12,2) for an integer: compared as numbers */
	assert_each_same(e, WIDE_TABLES, "SELECT string_agg(concat_ws(':', id, a,"
	                                 " trim_scale(b::numeric)), ',' ORDER BY id) FROM w.r%1$d");
	assert_verify(e, NULL);
	strbuf_free(&sql);
	tm_env_free(e);
}

#define RENAMED_TABLES 70

/* One message that changes 70 tables (their schema renamed) while they are
 * being copied: each one's statements are built again under its new name,
 * and each one's chunk in flight is read again. */
static void
test_schema_of_seventy_tables_renamed(void **state)
{
	tm_env *e = tm_env_new("schema_rename");
	strbuf sql = STRBUF_INIT;
	pgtest_proc *run;

	(void) state;
	many_tables(e, "s", RENAMED_TABLES,
	            "CREATE TABLE s.t%1$d (id int PRIMARY KEY, v int);"
	            "INSERT INTO s.t%1$d SELECT g, g FROM generate_series(1, 2000) g;");
	run = tm_spawn(e, "run", "--chunk-rows", "50", "--snapshot-readers", "2", NULL);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) > 0 FROM tidemark.tables"
	                                    " WHERE snapshot_rows > 0", "t", 60));
	strbuf_reset(&sql);
	for (int i = 1; i <= RENAMED_TABLES; i++)
		strbuf_appendf(&sql, "UPDATE s.t%d SET v = -v WHERE id %% 100 = 1;", i);
	pgtest_exec(e->s, "%s", strbuf_str(&sql));
	pgtest_exec(e->s, "ALTER SCHEMA s RENAME TO s2");
	strbuf_reset(&sql);
	for (int i = 1; i <= RENAMED_TABLES; i++)
		strbuf_appendf(&sql, "UPDATE s2.t%d SET v = 3 WHERE id %% 100 = 2;"
		               "INSERT INTO s2.t%d VALUES (5000, 2);", i, i);
	pgtest_exec(e->s, "%s", strbuf_str(&sql));
	tm_stop_and_catch_up(e, run, 300);
	assert_each_same(e, RENAMED_TABLES, "SELECT count(*) || ':' || sum(id::bigint * v)"
	                                    " FROM s2.t%1$d");
	assert_verify(e, NULL);
	strbuf_free(&sql);
	tm_env_free(e);
}

/* ---- the prepared-statement cache ---- */

/* Many distinct statements through a small budget: the least recently
 * used are deallocated on the target (the server holds what the cache
 * counts), a held one survives and is prepared again when used. */
static void
test_statement_cache_within_its_budget(void **state)
{
	tm_env *e = tm_env_new("stmt_cache");
	const char *one[] = {"1"};
	sink *s = NULL;
	sink_stmt *held;
	PGresult *r = NULL;
	size_t bytes = 0;
	char sql[64];
	int n;

	(void) state;
	assert_int_equal(sink_open(e->dst, "test", &s), 0);
	sink_set_statement_budget(s, 8192);
	held = sink_stmt_hold(s, "SELECT $1::int + 1000000", 1);
	assert_int_equal(sink_begin(s), 0);
	for (int i = 0; i < 500; i++) {
		snprintf(sql, sizeof sql, "SELECT $1::int + %d", i);
		assert_int_equal(sink_send(s, sink_stmt_get(s, sql, 1), one, NULL), 0);
		if (i % 50 == 0)
			assert_int_equal(sink_send(s, held, one, NULL), 0);
	}
	assert_int_equal(sink_sync(s), 0);
	n = sink_prepared_statements(s, &bytes);
	assert_true(bytes <= 8192);
	assert_true(n > 10 && n < 100);
	assert_int_equal(sink_query(s, "counting prepared statements",
	                            "SELECT count(*) FROM pg_prepared_statements", 0, NULL, &r), 0);
	assert_int_equal(atoi(PQgetvalue(r, 0, 0)), n);
	PQclear(r);
	assert_int_equal(sink_send(s, held, one, NULL), 0);
	assert_int_equal(sink_commit(s, NULL), 0);
	sink_stmt_release(s, held);
	sink_close(s);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_using_on_a_widening),
		cmocka_unit_test(test_using_to_the_same_type),
		cmocka_unit_test(test_using_case_to_integer),
		cmocka_unit_test(test_timestamp_to_timestamptz_in_new_york),
		cmocka_unit_test(test_values_to_text_in_paris),
		cmocka_unit_test(test_json_to_jsonb_under_widen),
		cmocka_unit_test(test_text_to_enum_under_widen),
		cmocka_unit_test(test_three_hundred_tables_in_one_transaction),
		cmocka_unit_test(test_schema_of_seventy_tables_renamed),
		cmocka_unit_test(test_statement_cache_within_its_budget),
	};

	/* TEST_FILTER=test_json* runs only the tests whose names match */
	if (getenv("TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
