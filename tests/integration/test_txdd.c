/*
 * Integration tests of DDL and rows mixed within source transactions, and
 * of tables that join a running replication.
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

/* `run --until-caught-up` must end 0; its output is shown when not. */
static void
catch_up(tm_env *e)
{
	tm_catch_up(e, 120);
}

static void
setup_schema(tm_env *e, const char *schema)
{
	char *out = NULL;
	int rc = tm_run(e, 60, &out, "setup", "--schema", schema, NULL);

	if (rc != 0)
		fail_msg("setup --schema %s exited %d:\n%s", schema, rc, out ? out : "");
	free(out);
}

/* CREATE TABLE AS with rows, then its key, in one transaction. */
static void
test_ctas_then_key(void **state)
{
	tm_env *e = tm_env_new("ctaskey");

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.a (id int PRIMARY KEY)");
	setup_schema(e, "app");
	catch_up(e);
	pgtest_exec(e->s, "BEGIN; CREATE TABLE app.t AS SELECT g AS id, g * 2 AS v"
	                  " FROM generate_series(1, 100) g;"
	                  " ALTER TABLE app.t ADD PRIMARY KEY (id); COMMIT;"
	                  "UPDATE app.t SET v = 0 WHERE id < 10; DELETE FROM app.t WHERE id > 90");
	catch_up(e);
	tm_assert_equal(e, "app.t", "id");
	tm_env_free(e);
}

/* The rows a table had when the source dropped it, kept on the target
 * (also when it was dropped before any copy could read it): a table
 * created in the transaction that made it join has all its rows in the
 * stream. */
static void
test_ctas_dropped_later(void **state)
{
	tm_env *e = tm_env_new("ctasdrop");
	int ns, nt;
	char **src, **dst;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.a (id int PRIMARY KEY)");
	setup_schema(e, "app");
	catch_up(e);
	pgtest_exec(e->s, "BEGIN; CREATE TABLE app.c AS SELECT g AS id, g * 2 AS v"
	                  " FROM generate_series(1, 100) g;"
	                  " ALTER TABLE app.c ADD PRIMARY KEY (id); UPDATE app.c SET v = -1 WHERE id = 1;"
	                  " COMMIT;"
	                  "UPDATE app.c SET v = 0 WHERE id < 10; DELETE FROM app.c WHERE id > 95;"
	                  "CREATE TABLE public.c_then AS SELECT * FROM app.c; DROP TABLE app.c");
	catch_up(e);
	src = tm_sorted_rows(e->s, "public.c_then", "id, v", &ns);
	dst = tm_sorted_rows(e->t, "app.c", "id, v", &nt);
	assert_int_equal(ns, 95);
	assert_int_equal(nt, ns);
	for (int i = 0; i < ns; i++)
		assert_string_equal(src[i], dst[i]);
	tm_rows_free(src, ns);
	tm_rows_free(dst, nt);
	tm_env_free(e);
}

/* A replicated table dropped and created again under its name without a
 * key, rows written, the key added later. */
static void
test_recreated_keyless_then_key(void **state)
{
	tm_env *e = tm_env_new("recrkey");

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY, v int);"
	                  "INSERT INTO app.t VALUES (1, 1), (2, 2)");
	setup_schema(e, "app");
	catch_up(e);
	pgtest_exec(e->s, "DROP TABLE app.t; CREATE TABLE app.t (id int, a int, b int);"
	                  "INSERT INTO app.t SELECT g, g, g FROM generate_series(1, 50) g");
	catch_up(e);
	pgtest_exec(e->s, "ALTER TABLE app.t ADD PRIMARY KEY (id); UPDATE app.t SET a = 0 WHERE id < 5");
	catch_up(e);
	tm_assert_equal(e, "app.t", "id");
	/* a keyless re-creation that is dropped later */
	pgtest_exec(e->s, "DROP TABLE app.t; CREATE TABLE app.t (x int, y int);"
	                  "INSERT INTO app.t VALUES (1, 1); DROP TABLE app.t;"
	                  "CREATE TABLE app.t (id int PRIMARY KEY, z text); INSERT INTO app.t VALUES (7, 'z')");
	catch_up(e);
	tm_assert_equal(e, "app.t", "id");
	tm_env_free(e);
}

/* A surrogate key replaced by a natural one in one statement. */
static void
surrogate_to_natural(const char *name, const char *option)
{
	tm_env *e = tm_env_new(name);
	char *out = NULL;
	int rc;

	pgtest_exec(e->s, "CREATE TABLE t (id serial PRIMARY KEY, a int NOT NULL, b int NOT NULL, c text);"
	                  "INSERT INTO t (a, b, c) SELECT g, g %% 7, 'c' FROM generate_series(1, 100) g");
	tm_setup_table(e, "t");
	catch_up(e);
	pgtest_exec(e->s, "ALTER TABLE t DROP COLUMN id, ADD PRIMARY KEY (a, b);"
	                  "UPDATE t SET c = 'd' WHERE a < 10; INSERT INTO t VALUES (1000, 1, 'n')");
	rc = tm_run(e, 120, &out, "run", "--until-caught-up", option, NULL);
	if (rc != 0)
		fail_msg("run exited %d:\n%s", rc, out ? out : "");
	free(out);
	tm_assert_multiset_equal(e, "t", "a, b, c");
	tm_env_free(e);
}

static void
test_surrogate_to_natural_key(void **state)
{
	(void) state;
	surrogate_to_natural("surrogate", NULL);
	surrogate_to_natural("surrogatedrop", "--drop-columns");
}

/* A keyless table with rows gets its key by ADD COLUMN ... PRIMARY KEY
 * in the transaction that created it. */
static void
test_keyless_gets_added_key(void **state)
{
	tm_env *e = tm_env_new("addedkey");

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.a (id int PRIMARY KEY)");
	setup_schema(e, "app");
	catch_up(e);
	pgtest_exec(e->s, "BEGIN; CREATE TABLE app.k (a int, b text);"
	                  " INSERT INTO app.k SELECT g, 'b' || g FROM generate_series(1, 30) g;"
	                  " ALTER TABLE app.k ADD COLUMN id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY;"
	                  " INSERT INTO app.k (a, b) VALUES (100, 'x'); COMMIT;"
	                  "BEGIN; CREATE TABLE app.s (a int);"
	                  " INSERT INTO app.s SELECT g FROM generate_series(1, 30) g;"
	                  " ALTER TABLE app.s ADD COLUMN id serial PRIMARY KEY; COMMIT;"
	                  "UPDATE app.k SET b = 'u' WHERE id < 5; UPDATE app.s SET a = 0 WHERE id < 5");
	catch_up(e);
	tm_assert_equal(e, "app.k", "id");
	tm_assert_equal(e, "app.s", "id");
	tm_env_free(e);
}

/* A table's history starts when it joins: DDL captured before it was set
 * up is never replayed onto it. */
static void
test_setup_after_ctas_and_key(void **state)
{
	tm_env *e = tm_env_new("joinctas");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE first (id int PRIMARY KEY)");
	tm_setup_table(e, "first");
	catch_up(e);
	pgtest_exec(e->s, "CREATE TABLE a AS SELECT g AS id, g AS v FROM generate_series(1, 100) g;"
	                  "ALTER TABLE a ADD PRIMARY KEY (id);"
	                  "CREATE TABLE b (id int PRIMARY KEY, v int); INSERT INTO b VALUES (1, 1);"
	                  "ALTER TABLE b ADD COLUMN w text DEFAULT 'w'");
	tm_setup_table(e, "public.a");
	tm_setup_table(e, "public.b");
	pgtest_exec(e->s, "UPDATE a SET v = 0 WHERE id < 10; INSERT INTO b VALUES (2, 2, 'x')");
	catch_up(e);
	tm_assert_equal(e, "a", "id");
	tm_assert_equal(e, "b", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_attribute WHERE attrelid"
	                                         " = 'b'::regclass AND attnum > 0 AND NOT attisdropped"),
	                 3);
	tm_env_free(e);
}

/* A table set up again after teardown starts again: the source changed
 * while nothing was captured, its rows and its definition. */
static void
test_setup_again_after_teardown(void **state)
{
	tm_env *e = tm_env_new("readded");
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v int);"
	                  "INSERT INTO t SELECT g, g FROM generate_series(1, 50) g;"
	                  "CREATE TABLE u (id int PRIMARY KEY, v int);"
	                  "INSERT INTO u SELECT g, g FROM generate_series(1, 50) g");
	tm_setup_table(e, "t");
	tm_setup_table(e, "u");
	catch_up(e);
	assert_int_equal(tm_run(e, 60, &out, "teardown", NULL), 0);
	free(out);
	/* not captured: a column, updates, deletes, inserts */
	pgtest_exec(e->s, "ALTER TABLE t ADD COLUMN w text DEFAULT 'w'; UPDATE t SET v = 0 WHERE id < 10;"
	                  "DELETE FROM t WHERE id > 40; INSERT INTO t VALUES (100, 100, 'x');"
	                  "UPDATE u SET v = -v WHERE id < 5; DELETE FROM u WHERE id > 45");
	tm_setup_table(e, "t");
	tm_setup_table(e, "u");
	pgtest_exec(e->s, "UPDATE t SET w = 'y' WHERE id = 1; INSERT INTO u VALUES (200, 200)");
	catch_up(e);
	tm_assert_equal(e, "t", "id");
	tm_assert_equal(e, "u", "id");
	/* t's target table of the old definition is kept aside; u's was kept */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM \"t (set aside)\""), 50);
	assert_null(pgtest_query_value(e->t, "SELECT to_regclass('\"u (set aside)\"')"));
	tm_env_free(e);
}

/* A change the target refuses because views of its own depend on the
 * column (a type changed): the views are dropped and made again around it,
 * with their options, privileges and comments, a view over them too, and
 * show the new rows; a materialized view is computed again, its index with
 * it. A trigger's WHEN cannot be lifted: its table is set aside (kept
 * aside and made again, with the kept one's privileges, of the table and
 * of a column, comments, triggers, indexes and policies); the other
 * tables go on. */
static void
test_refused_change_lifts_views_or_sets_aside(void **state)
{
	tm_env *e = tm_env_new("setaside");
	char *out = NULL, *want, *got;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v int);"
	                  "INSERT INTO t SELECT g, g FROM generate_series(1, 50) g;"
	                  "CREATE TABLE m (id int PRIMARY KEY, v int);"
	                  "INSERT INTO m SELECT g, g FROM generate_series(1, 50) g;"
	                  "CREATE TABLE u (id int PRIMARY KEY, v int)");
	tm_setup_table(e, "t");
	tm_setup_table(e, "m");
	tm_setup_table(e, "u");
	catch_up(e);
	pgtest_exec(e->t, "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles"
	                  " WHERE rolname = 'tm_view_reader') THEN CREATE ROLE tm_view_reader; END IF;"
	                  " END $$;"
	                  "CREATE VIEW tv WITH (security_barrier) AS SELECT id, v * 2 AS v2 FROM t"
	                  " WHERE v > 0;"
	                  "CREATE VIEW tv_sum AS SELECT sum(v2) AS total FROM tv;"
	                  "GRANT SELECT ON tv TO tm_view_reader WITH GRANT OPTION;"
	                  "COMMENT ON VIEW tv IS 'the report'; COMMENT ON COLUMN tv.v2 IS 'twice v';"
	                  "CREATE MATERIALIZED VIEW tmv AS SELECT id, v FROM t;"
	                  "CREATE UNIQUE INDEX tmv_id ON tmv (id);"
	                  "COMMENT ON MATERIALIZED VIEW tmv IS 'copied'; GRANT SELECT ON tmv TO tm_view_reader;"
	                  "CREATE FUNCTION m_audit() RETURNS trigger LANGUAGE plpgsql AS"
	                  " $f$ BEGIN RETURN NEW; END $f$;"
	                  "CREATE TRIGGER m_audit BEFORE UPDATE ON m FOR EACH ROW"
	                  " WHEN (OLD.v IS DISTINCT FROM NEW.v) EXECUTE FUNCTION m_audit();"
	                  "CREATE TRIGGER m_off AFTER INSERT ON m FOR EACH ROW EXECUTE FUNCTION m_audit();"
	                  "ALTER TABLE m DISABLE TRIGGER m_off;"
	                  "CREATE INDEX m_v ON m (v) WHERE v > 0;"
	                  "CREATE FUNCTION m_half(int) RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT $1 / 2';"
	                  "CREATE INDEX m_v_half ON m (m_half(v));"
	                  "CREATE POLICY m_read ON m FOR SELECT TO tm_view_reader USING (v > 0);"
	                  "ALTER TABLE m ENABLE ROW LEVEL SECURITY;"
	                  "GRANT SELECT, INSERT ON m TO tm_view_reader;"
	                  "GRANT UPDATE (v) ON m TO tm_view_reader WITH GRANT OPTION;"
	                  "COMMENT ON TABLE m IS 'measures'; COMMENT ON COLUMN m.v IS 'the value'");
	pgtest_exec(e->s, "BEGIN; INSERT INTO u VALUES (1, 1); ALTER TABLE t ALTER COLUMN v TYPE bigint;"
	                  " UPDATE t SET v = v * 10000000000 WHERE id < 5; INSERT INTO u VALUES (2, 2);"
	                  " ALTER TABLE m ALTER COLUMN v TYPE bigint; COMMIT; INSERT INTO t VALUES (51, 51);"
	                  " INSERT INTO m VALUES (51, 51)");
	catch_up(e);
	tm_assert_equal(e, "t", "id");
	tm_assert_equal(e, "m", "id");
	tm_assert_equal(e, "u", "id");
	/* the views show the table as it is now */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tv"), 51);
	want = pgtest_query_value(e->s, "SELECT sum(v * 2) FROM t WHERE v > 0");
	got = pgtest_query_value(e->t, "SELECT total FROM tv_sum");
	assert_string_equal(got, want);
	free(want);
	free(got);
	assert_null(pgtest_query_value(e->t, "SELECT to_regclass('\"t (set aside)\"')"));
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_class WHERE relname = 'tv'"
	                                         " AND reloptions = '{security_barrier=true}'"
	                                         " AND relacl::text LIKE '%%tm_view_reader=r*/%%'"
	                                         " AND obj_description(oid) = 'the report'"
	                                         " AND col_description(oid, 2) = 'twice v'"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_attribute WHERE attrelid ="
	                                         " 'tv'::regclass AND attname = 'v2'"
	                                         " AND atttypid = 'bigint'::regtype"), 1);
	/* the materialized view computed again at the change, with its index,
	 * comment and grant */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tmv"), 50);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_class WHERE relname = 'tmv'"
	                                         " AND relkind = 'm' AND relispopulated"
	                                         " AND relacl::text LIKE '%%tm_view_reader=r/%%'"
	                                         " AND obj_description(oid) = 'copied'"
	                                         " AND EXISTS (SELECT FROM pg_index WHERE indrelid ="
	                                         " oid AND indisunique)"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_attribute WHERE attrelid ="
	                                         " 'tmv'::regclass AND attname = 'v'"
	                                         " AND atttypid = 'bigint'::regtype"), 1);
	/* a trigger of the target's own on a column holds its type back: the
	 * table is set aside, the trigger stays with the kept one */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM \"m (set aside)\""), 50);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_trigger WHERE tgname ="
	                                         " 'm_audit' AND tgrelid = '\"m (set aside)\"'::regclass"),
	                 1);
	/* the table made again has the kept one's triggers (as they fire),
	 * indexes and policies; an index it cannot take stays on the kept one */
	tm_assert_value(e->t, "SELECT string_agg(tgname || ' ' || tgenabled::text, ', ' ORDER BY tgname)"
	                " FROM pg_trigger WHERE tgrelid = 'm'::regclass AND NOT tgisinternal",
	                "m_audit O, m_off D");
	tm_assert_value(e->t, "SELECT string_agg(indexrelid::regclass::text, ', ' ORDER BY 1)"
	                " FROM pg_index WHERE indrelid = 'm'::regclass AND indpred IS NOT NULL", "m_v");
	tm_assert_value(e->t, "SELECT string_agg(indexrelid::regclass::text, ', ' ORDER BY 1)"
	                " FROM pg_index WHERE indrelid = '\"m (set aside)\"'::regclass"
	                " AND NOT indisprimary", "\"m_v (set aside)\", m_v_half");
	tm_assert_value(e->t, "SELECT relrowsecurity AND EXISTS (SELECT FROM pg_policy WHERE polrelid"
	                " = c.oid AND polname = 'm_read') FROM pg_class c WHERE c.oid = 'm'::regclass",
	                "t");
	/* the table made again has the kept one's privileges and comments */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_class WHERE oid = 'm'::regclass"
	                                         " AND relacl::text LIKE '%%tm_view_reader=ar/%%'"
	                                         " AND obj_description(oid) = 'measures'"
	                                         " AND col_description(oid, 2) = 'the value'"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_attribute WHERE attrelid ="
	                                         " 'm'::regclass AND attname = 'v'"
	                                         " AND attacl::text LIKE '%%tm_view_reader=w*/%%'"), 1);
	assert_int_equal(tm_run(e, 60, &out, "ddl-log", NULL), 0);
	tm_assert_has(out, "views over the table were dropped and made again");
	tm_assert_has(out, "set aside");
	free(out);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ctas_then_key),
		cmocka_unit_test(test_ctas_dropped_later),
		cmocka_unit_test(test_recreated_keyless_then_key),
		cmocka_unit_test(test_surrogate_to_natural_key),
		cmocka_unit_test(test_keyless_gets_added_key),
		cmocka_unit_test(test_setup_after_ctas_and_key),
		cmocka_unit_test(test_setup_again_after_teardown),
		cmocka_unit_test(test_refused_change_lifts_views_or_sets_aside),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
