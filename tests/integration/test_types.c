/*
 * Integration tests of the source's types, collations and generated
 * columns on the target: enum keys (with arrays of the enum, a composite
 * type holding it and a domain over it) copied in several chunks, ICU,
 * libc and citext keys, ALTER TYPE / ALTER DOMAIN followed (with rows
 * using a value added by ALTER TYPE ... ADD VALUE in the very next source
 * transaction), generated columns (at setup, added later, their expression
 * changed, DROP EXPRESSION, one the target refuses), and the fallback to
 * text when the target cannot have a type, visible in `tidemark schema`
 * and in the key order flag; the reg* types and aclitem kept as their
 * names; settings of the databases (array_nulls, xmloption, the default
 * isolation, idle_session_timeout) that do not apply to tidemark's
 * sessions; databases in other encodings than UTF8 (a
 * LATIN1 source with accented names, an SQL_ASCII source holding bytes
 * that are not UTF-8, a LATIN1 target under a UTF8 source).
 *
 * Rows are compared by plain SQL on both sides: every row's text, sorted
 * byte-wise, so that neither side's ordering decides what is compared.
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

#include "tm_fixture.h"

/* ---- comparing ---- */

/* Every row of table (or of the given columns) as text, sorted byte-wise. */
static char *
rows_text(PGconn *c, const char *table, const char *cols)
{
	return pgtest_query_value(c,
	                          "SELECT coalesce(string_agg(r::text, E'\\n' ORDER BY r::text COLLATE \"C\"),"
	                          " '(none)') FROM (SELECT %s FROM %s) r", cols ? cols : "*", table);
}

static void
assert_same_rows(tm_env *e, const char *table, const char *cols)
{
	char *src = rows_text(e->s, table, cols), *dst = rows_text(e->t, table, cols);

	if (strcmp(src, dst) != 0)
		fail_msg("%s differs:\n--- source\n%s\n--- target\n%s", table, src, dst);
	free(src);
	free(dst);
}

/* The same query gives the same single value on both sides. */
static void
assert_same_value(tm_env *e, const char *sql)
{
	char *src = pgtest_query_value(e->s, "%s", sql), *dst = pgtest_query_value(e->t, "%s", sql);

	if ((src == NULL) != (dst == NULL) || (src != NULL && strcmp(src, dst) != 0))
		fail_msg("%s: source %s, target %s", sql, src ? src : "NULL", dst ? dst : "NULL");
	free(src);
	free(dst);
}

/* Every column of table has the same format_type() on both sides. */
static void
assert_same_types(tm_env *e, const char *table)
{
	char sql[512];

	snprintf(sql, sizeof sql,
	         "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', '"
	         " ORDER BY attname) FROM pg_attribute WHERE attrelid = '%s'::regclass"
	         " AND attnum > 0 AND NOT attisdropped", table);
	assert_same_value(e, sql);
}

static void
assert_key_order(tm_env *e, const char *table, const char *same)
{
	char sql[256];

	snprintf(sql, sizeof sql, "SELECT key_order_same::text FROM tidemark.tables"
	                          " WHERE source_table = '%s'", table);
	tm_assert_value(e->t, sql, same);
}

/* The target column's format_type() (unqualified where visible). */
static void
assert_target_type(tm_env *e, const char *table, const char *column, const char *expected)
{
	char sql[256];

	snprintf(sql, sizeof sql, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                          " WHERE attrelid = '%s'::regclass AND attname = '%s'", table, column);
	tm_assert_value(e->t, sql, expected);
}

static char *
column_collation(PGconn *c, const char *table, const char *column)
{
	return pgtest_query_value(c, "SELECT co.collname FROM pg_attribute a JOIN pg_collation co"
	                             " ON co.oid = a.attcollation WHERE a.attrelid = '%s'::regclass"
	                             " AND a.attname = '%s'", table, column);
}

static void
setup_tables(tm_env *e, ...)
{
	const char *argv[16];
	char *out = NULL;
	int n = 0, rc;
	va_list ap;

	va_start(ap, e);
	for (const char *t; n < 14 && (t = va_arg(ap, const char *)) != NULL;) {
		argv[n++] = "--table";
		argv[n++] = t;
	}
	va_end(ap);
	argv[n] = NULL;
	rc = tm_run(e, 60, &out, "setup", argv[0], argv[1], argv[2], argv[3], argv[4], argv[5],
	            argv[6], argv[7], NULL);
	if (rc != 0)
		fail_msg("setup exited %d:\n%s", rc, out);
	free(out);
}

static void
catch_up_chunked(tm_env *e)
{
	char *out = NULL;
	int rc = tm_run(e, 120, &out, "run", "--until-caught-up", "--chunk-rows", "7", NULL);

	if (rc != 0)
		fail_msg("run --until-caught-up exited %d:\n%s", rc, out ? out : "");
	free(out);
}

/* ---- enum keys ---- */

static void
test_enum_keys_in_chunks(void **state)
{
	tm_env *e = tm_env_new("enumkeys");
	pgtest_proc *run;

	(void) state;
	/* labels out of alphabetical order: the target must sort as the source */
	pgtest_exec(e->s, "CREATE TYPE mood AS ENUM ('zeta', 'alpha', 'mid');"
	                  "CREATE TYPE pair AS (m mood, n int);"
	                  "CREATE DOMAIN dmood AS mood CHECK (VALUE <> 'mid');"
	                  /* a name and labels that need quoting */
	                  "CREATE TYPE \"Odd \"\"Mood\"\"\" AS ENUM ('it''s', 'x\"y');"
	                  "CREATE TABLE ek (m mood, n int, moods mood[], p pair, d dmood,"
	                  "  odd \"Odd \"\"Mood\"\"\", PRIMARY KEY (m, n));"
	                  "INSERT INTO ek SELECT (enum_range(NULL::mood))[1 + g %% 3], g,"
	                  "  ARRAY[(enum_range(NULL::mood))[1 + (g + 1) %% 3], 'mid']::mood[],"
	                  "  ROW((enum_range(NULL::mood))[1 + g %% 3], g)::pair,"
	                  "  CASE WHEN g %% 2 = 0 THEN 'zeta' ELSE 'alpha' END::dmood,"
	                  "  (CASE WHEN g %% 2 = 0 THEN 'it''s' ELSE 'x\"y' END)::\"Odd \"\"Mood\"\"\""
	                  "  FROM generate_series(1, 60) g");
	tm_setup_table(e, "ek");
	catch_up_chunked(e);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM ek"), 60);
	assert_same_rows(e, "ek", NULL);
	assert_same_types(e, "ek");
	assert_same_value(e, "SELECT enum_range(NULL::mood)::text");
	assert_same_value(e, "SELECT enum_range(NULL::\"Odd \"\"Mood\"\"\")::text");
	assert_same_value(e, "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod),"
	                     " ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid ="
	                     " (SELECT typrelid FROM pg_type WHERE oid = 'pair'::regtype)");
	assert_same_value(e, "SELECT format_type(typbasetype, typtypmod) FROM pg_type"
	                     " WHERE oid = 'dmood'::regtype");
	/* the domain's CHECK stays on the source: the target takes what the source took */
	tm_assert_value(e->t, "SELECT count(*) FROM pg_constraint WHERE contypid = 'dmood'::regtype", "0");
	assert_key_order(e, "ek", "true");
	/* the target sorts the key as the source does */
	assert_same_value(e, "SELECT string_agg(m || ':' || n, ',' ORDER BY m, n) FROM ek");

	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "UPDATE ek SET n = n + 100, d = 'zeta' WHERE m = 'alpha';"
	                  "DELETE FROM ek WHERE m = 'zeta' AND n < 30;"
	                  "INSERT INTO ek VALUES ('mid', 1000, '{zeta}', ROW('mid', 1)::pair, NULL)");
	tm_stop_and_catch_up(e, run, 120);
	assert_same_rows(e, "ek", NULL);
	assert_int_equal(tm_run(e, 60, NULL, "verify", NULL), 0);
	tm_env_free(e);
}

/* ---- collated keys ---- */

static void
test_collated_keys_in_chunks(void **state)
{
	tm_env *e = tm_env_new("collkeys");
	char *err, *coll;
	bool libc;

	(void) state;
	pgtest_exec(e->s, "CREATE EXTENSION citext;"
	                  "CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2');"
	                  "CREATE DOMAIN ci_text AS text COLLATE ci;"
	                  "CREATE TABLE icu_k (k text COLLATE ci PRIMARY KEY, v int, dc ci_text,"
	                  "  c text COLLATE \"C\");"
	                  "CREATE TABLE cit_k (k citext PRIMARY KEY, v int);"
	                  "INSERT INTO icu_k SELECT CASE WHEN g %% 2 = 0 THEN upper(s) ELSE s END, g, s, s"
	                  "  FROM generate_series(1, 60) g, LATERAL (SELECT chr(97 + g %% 26) || g AS s) x;"
	                  "INSERT INTO cit_k SELECT CASE WHEN g %% 3 = 0 THEN upper(s) ELSE s END, g"
	                  "  FROM generate_series(1, 60) g, LATERAL (SELECT chr(97 + g %% 26) || g AS s) x");
	/* a user's libc collation, when the machine has a UTF-8 locale besides C */
	err = pgtest_exec_error(e->s, "CREATE COLLATION lc (provider = libc, locale = 'C.utf8');"
	                              "CREATE TABLE libc_k (k text COLLATE lc PRIMARY KEY, v int);"
	                              "INSERT INTO libc_k SELECT chr(65 + g %% 58) || g, g"
	                              "  FROM generate_series(1, 60) g");
	libc = err == NULL;
	if (!libc)
		print_message("libc collation part skipped: this machine has no C.utf8 locale (%s)\n", err);
	free(err);
	if (libc)
		setup_tables(e, "icu_k", "cit_k", "libc_k", NULL);
	else
		setup_tables(e, "icu_k", "cit_k", NULL);
	catch_up_chunked(e);
	for (int i = 0; i < (libc ? 3 : 2); i++) {
		const char *t = (const char *[]) {"icu_k", "cit_k", "libc_k"}[i];
		char sql[128];

		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", t);
		assert_same_value(e, sql);
		assert_same_rows(e, t, NULL);
		assert_same_types(e, t);
		assert_key_order(e, t, "true");
		snprintf(sql, sizeof sql, "SELECT string_agg(k, ',' ORDER BY k) FROM %s", t);
		assert_same_value(e, sql);
	}
	coll = column_collation(e->t, "icu_k", "k");
	assert_string_equal(coll, "ci");
	free(coll);
	/* colliculocale until PostgreSQL 16, colllocale from 17 */
	tm_assert_value(e->t, "SELECT coalesce(to_jsonb(c) ->> 'colliculocale',"
	                " to_jsonb(c) ->> 'colllocale') FROM pg_collation c"
	                " WHERE collname = 'ci'", "und-u-ks-level2");
	coll = column_collation(e->t, "icu_k", "dc");
	assert_string_equal(coll, "ci");
	free(coll);
	coll = column_collation(e->t, "icu_k", "c");
	assert_string_equal(coll, "C");
	free(coll);
	assert_same_value(e, "SELECT string_agg(dc, ',' ORDER BY dc) FROM icu_k");
	tm_assert_value(e->t, "SELECT extnamespace::regnamespace::text FROM pg_extension"
	                " WHERE extname = 'citext'", "public");
	if (libc) {
		coll = column_collation(e->t, "libc_k", "k");
		assert_string_equal(coll, "lc");
		free(coll);
	}
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM icu_k"), 60);
	assert_int_equal(tm_run(e, 60, NULL, "verify", NULL), 0);
	tm_env_free(e);
}

/* ---- ALTER TYPE, ALTER DOMAIN ---- */

static void
test_alter_type_followed(void **state)
{
	tm_env *e = tm_env_new("altertype");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TYPE mood AS ENUM ('a', 'c');"
	                  "CREATE TYPE addr AS (street text, zip int);"
	                  "CREATE DOMAIN code AS text CHECK (length(VALUE) < 10);"
	                  "CREATE TABLE t (id int PRIMARY KEY, m mood, ad addr, c code);"
	                  "INSERT INTO t SELECT g, 'a', ROW('s' || g, g)::addr, 'k' || g"
	                  "  FROM generate_series(1, 10) g");
	tm_setup_table(e, "t");
	tm_catch_up(e, 60);
	/* a backlog read in one go: many source transactions per target one */
	pgtest_exec(e->s, "INSERT INTO t VALUES (100, 'c', NULL, NULL)");
	pgtest_exec(e->s, "ALTER TYPE mood ADD VALUE 'b' BEFORE 'c'");
	pgtest_exec(e->s, "INSERT INTO t VALUES (101, 'b', NULL, 'new')");
	pgtest_exec(e->s, "UPDATE t SET m = 'b' WHERE id <= 3");
	pgtest_exec(e->s, "ALTER TYPE mood RENAME VALUE 'a' TO 'aa'");
	pgtest_exec(e->s, "ALTER TYPE addr ADD ATTRIBUTE city text");
	pgtest_exec(e->s, "UPDATE t SET ad = ROW('main', 1, 'paris')::addr WHERE id = 1");
	pgtest_exec(e->s, "ALTER TYPE addr RENAME ATTRIBUTE street TO road");
	pgtest_exec(e->s, "ALTER TYPE addr DROP ATTRIBUTE zip");
	pgtest_exec(e->s, "UPDATE t SET ad = ROW('side', 'rome')::addr WHERE id = 2");
	pgtest_exec(e->s, "ALTER DOMAIN code ADD CONSTRAINT no_x CHECK (VALUE <> 'x')");
	pgtest_exec(e->s, "ALTER TYPE mood RENAME TO feeling");
	pgtest_exec(e->s, "CREATE SCHEMA other; ALTER TYPE feeling SET SCHEMA other");
	pgtest_exec(e->s, "CREATE TYPE size AS ENUM ('s', 'm', 'l'); ALTER TABLE t ADD COLUMN sz size");
	pgtest_exec(e->s, "UPDATE t SET sz = 'm' WHERE id < 5");
	tm_catch_up(e, 60);
	assert_same_rows(e, "t", NULL);
	assert_same_types(e, "t");
	assert_same_value(e, "SELECT enum_range(NULL::other.feeling)::text");
	tm_assert_value(e->t, "SELECT to_regtype('public.mood')::text", NULL);
	assert_same_value(e, "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod),"
	                     " ', ' ORDER BY attnum) FROM pg_attribute WHERE attrelid ="
	                     " (SELECT typrelid FROM pg_type WHERE oid = 'addr'::regtype)"
	                     " AND NOT attisdropped");
	assert_same_value(e, "SELECT enum_range(NULL::size)::text");
	tm_assert_value(e->t, "SELECT count(*) FROM pg_constraint WHERE contypid = 'code'::regtype", "0");
	assert_true(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log"
	                                    " WHERE command_tag = 'ALTER TYPE'") >= 7);
	assert_true(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log"
	                                    " WHERE command_tag = 'ALTER DOMAIN'") == 1);
	assert_true(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log"
	                                    " WHERE target_action LIKE '%%added value ''b''%%'") == 1);

	/* live: the value added, then used by the very next transaction */
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "BEGIN; ALTER TYPE other.feeling ADD VALUE 'd'; COMMIT;"
	                  "BEGIN; INSERT INTO t VALUES (102, 'd', NULL, 'live', 'l'); COMMIT;"
	                  "BEGIN; ALTER TYPE size ADD VALUE 'xl' AFTER 'l'; COMMIT;"
	                  "BEGIN; UPDATE t SET sz = 'xl' WHERE id = 102; COMMIT");
	assert_true(pgtest_wait_value(e->t, "SELECT sz::text FROM t WHERE id = 102", "xl", 60));
	tm_stop_and_catch_up(e, run, 60);
	assert_same_rows(e, "t", NULL);
	assert_same_value(e, "SELECT enum_range(NULL::other.feeling)::text");
	assert_same_value(e, "SELECT enum_range(NULL::size)::text");
	tm_env_free(e);
}

/* A key's order is compared on the source as it is now. While run applies
 * a backlog of changes of the key's enum, the source already has all of
 * them: a difference is not judged then, only once caught up. */
static void
test_key_order_judged_when_caught_up(void **state)
{
	tm_env *e = tm_env_new("keybehind");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TYPE st AS ENUM ('new', 'paid', 'shipped');"
	                  "CREATE TABLE o (s st, id int, note text, PRIMARY KEY (s, id));"
	                  "INSERT INTO o VALUES ('new', 1, 'a'), ('paid', 1, 'b'), ('shipped', 2, 'c')");
	/* a type of the target's own, under the name a later key column's type takes */
	pgtest_exec(e->t, "CREATE TYPE grade AS ENUM ('x', 'y')");
	tm_setup_table(e, "o");
	tm_catch_up(e, 60);
	pgtest_exec(e->s, "ALTER TYPE st RENAME VALUE 'paid' TO 'settled'");
	pgtest_exec(e->s, "UPDATE o SET note = 'b2' WHERE s = 'settled'");
	pgtest_exec(e->s, "ALTER TYPE st ADD VALUE 'returned' BEFORE 'new'");
	pgtest_exec(e->s, "INSERT INTO o VALUES ('returned', 9, 'r')");
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 0);
	if (strstr(out, "does not sort its key") != NULL)
		fail_msg("a key's order was judged against the source's later changes:\n%s", out);
	free(out);
	assert_key_order(e, "o", "true");
	assert_same_value(e, "SELECT enum_range(NULL::st)::text");
	assert_same_rows(e, "o", NULL);

	/* a difference that stays, made while run streams: a key column whose
	 * type the target keeps as text; judged once caught up */
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "CREATE TYPE grade AS ENUM ('low', 'high');"
	                  "ALTER TABLE o ADD COLUMN g grade NOT NULL DEFAULT 'high';"
	                  "ALTER TABLE o DROP CONSTRAINT o_pkey, ADD PRIMARY KEY (g, s, id);"
	                  "INSERT INTO o VALUES ('new', 2, 'n2', 'low')");
	assert_true(pgtest_wait_value(e->t, "SELECT key_order_reason LIKE 'key column \"g\" %'"
	                                    " FROM tidemark.tables WHERE source_table = 'o'",
	                              "t", 60));
	tm_stop_and_catch_up(e, run, 60);
	assert_key_order(e, "o", "false");
	assert_target_type(e, "o", "g", "text");
	assert_same_rows(e, "o", "s, id, note, g::text");
	tm_env_free(e);
}

/* ---- generated columns ---- */

static void
test_generated_columns(void **state)
{
	tm_env *e = tm_env_new("generated");
	const char *cols = "id, qty, name, total, tag, big";
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE FUNCTION dbl(int) RETURNS int IMMUTABLE LANGUAGE sql"
	                  "  AS 'SELECT $1 * 2';"
	                  "CREATE TABLE g (id int PRIMARY KEY, qty int, name text,"
	                  "  total int GENERATED ALWAYS AS (qty * 3) STORED,"
	                  "  tag text GENERATED ALWAYS AS (lower(name) || '!') STORED,"
	                  "  d int GENERATED ALWAYS AS (dbl(qty)) STORED);"
	                  "INSERT INTO g (id, qty, name) SELECT g, g, 'N' || g FROM generate_series(1, 50) g");
	tm_setup_table(e, "g");
	catch_up_chunked(e);
	tm_assert_value(e->t, "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute"
	                " WHERE attrelid = 'g'::regclass AND attgenerated = 's'", "total,tag");
	assert_same_value(e, "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef"
	                     " WHERE adrelid = 'g'::regclass AND adnum = 4");
	/* the target has no dbl(): that column is left out, and says why */
	tm_assert_value(e->t, "SELECT count(*) FROM pg_attribute WHERE attrelid = 'g'::regclass"
	                " AND attname = 'd'", "0");
	assert_int_equal(tm_run(e, 60, &out, "schema", "public.g", NULL), 0);
	assert_non_null(strstr(out, "generated column left out: the target refused it"));
	free(out);
	assert_same_rows(e, "g", "id, qty, name, total, tag");

	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER TABLE g ADD COLUMN big bigint GENERATED ALWAYS AS (qty * 1000) STORED");
	pgtest_exec(e->s, "UPDATE g SET qty = qty + 1 WHERE id %% 2 = 0;"
	                  "INSERT INTO g (id, qty, name) VALUES (100, 7, 'Hundred')");
	/* an expression changed (PostgreSQL 15: dropped and added again) */
	pgtest_exec(e->s, "ALTER TABLE g DROP COLUMN total,"
	                  "  ADD COLUMN total int GENERATED ALWAYS AS (qty * 4) STORED");
	pgtest_exec(e->s, "UPDATE g SET name = 'Renamed' WHERE id = 3");
	pgtest_exec(e->s, "ALTER TABLE g ALTER COLUMN tag DROP EXPRESSION");
	pgtest_exec(e->s, "UPDATE g SET tag = 'manual' WHERE id = 1");
	tm_stop_and_catch_up(e, run, 120);
	assert_same_rows(e, "g", cols);
	tm_assert_value(e->t, "SELECT string_agg(attname, ',' ORDER BY attname) FROM pg_attribute"
	                " WHERE attrelid = 'g'::regclass AND attgenerated = 's'", "big,total");
	tm_assert_value(e->t, "SELECT total FROM g WHERE id = 100", "28");
	assert_int_equal(tm_run(e, 60, &out, "verify", NULL), 0);
	free(out);
	if (PQserverVersion(e->s) >= 180000) { /* PGBIN of a newer server */
		/* virtual generated columns (the default kind from PostgreSQL 18),
		 * at setup and added later: computed on the target too */
		pgtest_exec(e->s, "CREATE TABLE gv (id int PRIMARY KEY, qty int,"
		                  "  v int GENERATED ALWAYS AS (qty * 5) VIRTUAL);"
		                  "INSERT INTO gv (id, qty) SELECT g, g FROM generate_series(1, 20) g");
		tm_setup_table(e, "gv");
		run = tm_start_run(e, NULL);
		pgtest_exec(e->s, "ALTER TABLE gv ADD COLUMN w text GENERATED ALWAYS AS ('w' || qty);"
		                  "UPDATE gv SET qty = qty + 1 WHERE id %% 3 = 0;"
		                  "INSERT INTO gv (id, qty) VALUES (100, 7)");
		tm_stop_and_catch_up(e, run, 120);
		assert_same_rows(e, "gv", "id, qty, v, w");
		tm_assert_value(e->t, "SELECT v || w FROM gv WHERE id = 100", "35w7");
		assert_int_equal(tm_run(e, 60, &out, "verify", NULL), 0);
		free(out);
		/* a publication that sends generated columns: refused at the start */
		pgtest_exec(e->s, "ALTER PUBLICATION \"%s\" SET (publish_generated_columns = stored)",
		            e->slot);
		assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 3);
		tm_assert_has(out, "SET (publish_generated_columns = none)");
		free(out);
	}
	tm_env_free(e);
}

/* ---- NOT NULL NOT VALID (PostgreSQL 18) ---- */

/*
 * A NOT NULL constraint added NOT VALID leaves the rows already there
 * unchecked, NULLs among them: the target column is not NOT NULL (the copy
 * of such a row went in), nor a key, until VALIDATE CONSTRAINT, after which
 * it is.
 */
static void
test_not_null_not_valid(void **state)
{
	tm_env *e;
	pgtest_proc *run;

	(void) state;
	e = tm_env_new("nnnotvalid");
	if (PQserverVersion(e->s) < 180000) { /* PGBIN of a newer server only */
		tm_env_free(e);
		return;
	}
	pgtest_exec(e->s, "CREATE TABLE nv (id int PRIMARY KEY, v text, code int);"
	                  "INSERT INTO nv SELECT g, CASE WHEN g %% 3 = 0 THEN NULL ELSE 'v' END,"
	                  " CASE WHEN g %% 5 = 0 THEN NULL ELSE g END FROM generate_series(1, 30) g;"
	                  "ALTER TABLE nv ADD CONSTRAINT v_nn NOT NULL v NOT VALID;"
	                  "CREATE TABLE nk (code int, v text); CREATE UNIQUE INDEX ON nk (code);"
	                  "ALTER TABLE nk REPLICA IDENTITY FULL;"
	                  "INSERT INTO nk VALUES (1, 'a'), (NULL, 'b'), (NULL, 'c');"
	                  "ALTER TABLE nk ADD CONSTRAINT code_nn NOT NULL code NOT VALID");
	tm_setup_table(e, "nv");
	tm_setup_table(e, "nk");
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "UPDATE nv SET code = NULL WHERE id = 1; UPDATE nk SET v = 'a2' WHERE code = 1;"
	                  " DELETE FROM nk WHERE v = 'c'");
	tm_stop_and_catch_up(e, run, 120);
	assert_same_rows(e, "nv", "id, v, code");
	assert_same_rows(e, "nk", "code, v");
	tm_assert_value(e->t, "SELECT attnotnull FROM pg_attribute WHERE attrelid = 'nv'::regclass"
	                " AND attname = 'v'", "f");
	tm_assert_value(e->t, "SELECT key_columns::text FROM tidemark.tables WHERE source_table = 'nk'",
	                "{}");
	pgtest_exec(e->s, "UPDATE nv SET v = 'filled' WHERE v IS NULL;"
	                  "ALTER TABLE nv VALIDATE CONSTRAINT v_nn; INSERT INTO nv VALUES (100, 'x', 1)");
	tm_catch_up(e, 120);
	assert_same_rows(e, "nv", "id, v, code");
	tm_assert_value(e->t, "SELECT attnotnull FROM pg_attribute WHERE attrelid = 'nv'::regclass"
	                " AND attname = 'v'", "t");
	tm_env_free(e);
}

/* ---- a long target DDL ---- */

/* The target DDL of a schema change waits (here for a lock, 4 s; a rewrite
 * of a large table takes longer): the stream is answered meanwhile, so the
 * source does not end it (wal_sender_timeout) and run goes on without a
 * reconnection. */
static void
test_long_target_ddl_keeps_the_stream(void **state)
{
	tm_env *e = tm_env_new("longddl");
	PGconn *lock = pgtest_connect_str(e->dst);
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "ALTER SYSTEM SET wal_sender_timeout = '2s'");
	pgtest_exec(e->s, "SELECT pg_reload_conf();"
	                  "CREATE TABLE w (id int PRIMARY KEY, v int); INSERT INTO w VALUES (1, 1)");
	tm_setup_table(e, "w");
	run = tm_start_run(e, NULL);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM w", "1", 60));
	pgtest_exec(lock, "BEGIN; LOCK TABLE w IN ACCESS EXCLUSIVE MODE");
	pgtest_exec(e->s, "ALTER TABLE w ADD COLUMN g int GENERATED ALWAYS AS (v * 2) STORED;"
	                  "INSERT INTO w VALUES (2, 2)");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) > 0 FROM pg_stat_activity WHERE"
	                                    " application_name = 'tidemark apply' AND wait_event_type = 'Lock'",
	                              "t", 30));
	/* held for twice the source's timeout, within the wait a schema
	 * change gives a lock before it retries (SINK_DDL_LOCK_WAIT_MS) */
	tm_sleep_ms(4000);
	pgtest_exec(lock, "COMMIT");
	assert_true(pgtest_wait_value(e->t, "SELECT g FROM w WHERE id = 2", "4", 60));
	/* a later change comes through the same stream */
	pgtest_exec(e->s, "INSERT INTO w VALUES (3, 3)");
	assert_true(pgtest_wait_value(e->t, "SELECT g FROM w WHERE id = 3", "6", 60));
	tm_assert_no_restart(run, "the target DDL waited");
	tm_stop_and_catch_up(e, run, 60);
	pgtest_exec(e->s, "ALTER SYSTEM RESET wal_sender_timeout");
	pgtest_exec(e->s, "SELECT pg_reload_conf()");
	assert_same_rows(e, "w", NULL);
	PQfinish(lock);
	tm_env_free(e);
}

/* ---- what the target cannot have ---- */

static void
test_fallback_to_text_is_visible(void **state)
{
	tm_env *e = tm_env_new("fallback");
	char *out = NULL;
	int rc;

	(void) state;
	/* the target has a type of the name with other values */
	pgtest_exec(e->t, "CREATE TYPE mood AS ENUM ('x', 'y')");
	pgtest_exec(e->s, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');"
	                  "CREATE TYPE floatrange AS RANGE (subtype = float8);"
	                  "CREATE TABLE f (m mood, n int, r floatrange, PRIMARY KEY (m, n));"
	                  "INSERT INTO f SELECT (enum_range(NULL::mood))[1 + g %% 3], g,"
	                  "  floatrange(g, g + 0.5) FROM generate_series(1, 30) g");
	rc = tm_run(e, 60, &out, "setup", "--table", "f", NULL);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "column m (source type public.mood): kept as text"));
	assert_non_null(strstr(out, "column r (source type public.floatrange): kept as text"));
	assert_non_null(strstr(out, "does not sort its key as the source does"));
	free(out);
	tm_catch_up(e, 60);
	assert_target_type(e, "f", "m", "text");
	assert_target_type(e, "f", "r", "text");
	assert_key_order(e, "f", "false");
	assert_true(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables WHERE"
	                                    " key_order_reason LIKE 'key column \"m\" orders by enum %%'") == 1);
	assert_same_rows(e, "f", "m::text, n, r::text");
	assert_int_equal(tm_run(e, 60, &out, "schema", "public.f", NULL), 0);
	assert_non_null(strstr(out, "on the target: text; kept as text: the target has a type public.mood"));
	assert_non_null(strstr(out, "key order on the target: differs"));
	free(out);
	/* the target could have the type now; the column it made stays text, and says so */
	pgtest_exec(e->t, "DROP TYPE mood");
	pgtest_exec(e->s, "ALTER TABLE f ADD COLUMN extra mood");
	tm_catch_up(e, 60);
	assert_target_type(e, "f", "extra", "mood");
	tm_assert_value(e->t, "SELECT v.columns -> 0 ->> 'target_type' FROM tidemark.schema_versions v"
	                " ORDER BY version DESC LIMIT 1", "text");
	assert_key_order(e, "f", "false");
	tm_env_free(e);
}

/* ---- values that name objects ---- */

/* Columns of the reg* types and aclitem hold oids of the source's objects:
 * on the target they are text, the names the source prints (a binary copy
 * carried the source's oids, which name other objects or none there, and
 * the stream's names were looked up on the target, where a table not
 * replicated, a role or a function of the source's alone stopped it). In
 * columns, arrays, a composite type, a domain and a key; copied, streamed,
 * a column added later. */
static void
test_object_names_kept_as_text(void **state)
{
	tm_env *e = tm_env_new("objnames");
	const char *cols = "id, c::text, ty::text, fp::text, ro::text, cfg::text, arr::text,"
	                   " p::text, d::text, acl::text";
	char *out;

	(void) state;
	pgtest_exec(e->s, "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles"
	                  " WHERE rolname = 'tm_names_src_only') THEN CREATE ROLE tm_names_src_only;"
	                  " END IF; END $$;"
	                  "CREATE TABLE only_here (x int); CREATE TABLE only_here_too (x int);"
	                  "CREATE FUNCTION only_here_f(int) RETURNS int LANGUAGE sql AS 'SELECT $1';"
	                  "CREATE TYPE pair AS (t regtype, n int);"
	                  "CREATE DOMAIN rel AS regclass;"
	                  "CREATE TABLE r (id int PRIMARY KEY, c regclass, ty regtype, fp regprocedure,"
	                  "  ro regrole, cfg regconfig, arr regclass[], p pair, d rel, acl aclitem[]);"
	                  "CREATE TABLE k (c regclass PRIMARY KEY, v text);"
	                  "INSERT INTO r VALUES (1, 'only_here', 'pair', 'only_here_f(int)',"
	                  "  'tm_names_src_only', 'english', '{only_here,pg_class}', '(pair,1)',"
	                  "  'only_here', '{tm_names_src_only=r/postgres}'),"
	                  " (2, 'pg_class', 'int4', 'lower(text)', 'pg_signal_backend', 'simple',"
	                  "  '{}', '(int8,2)', 'pg_type', NULL), (3, NULL, NULL, NULL, NULL, NULL,"
	                  "  NULL, NULL, NULL, NULL);"
	                  "INSERT INTO k VALUES ('only_here', 'a'), ('pg_class', 'b'), ('r', 'c')");
	out = tm_expect(e, 0, "setup", "--table", "r", "--table", "k");
	tm_assert_has(out, "column c (source type regclass): kept as text: its values name objects"
	                   " of the source database");
	tm_assert_has(out, "column acl (source type aclitem[]): kept as text[]");
	free(out);
	tm_catch_up(e, 60);
	pgtest_exec(e->s, "INSERT INTO r SELECT id + 10, c, ty, fp, ro, cfg, arr, p, d, acl FROM r;"
	                  "UPDATE r SET c = 'k', arr = arr || 'only_here'::regclass WHERE id = 2;"
	                  "UPDATE k SET v = 'a2' WHERE c = 'only_here'::regclass;"
	                  "UPDATE k SET c = 'only_here_too' WHERE c = 'r'::regclass;"
	                  "DELETE FROM k WHERE c = 'pg_class'::regclass;"
	                  "INSERT INTO k VALUES ('pg_roles', 'd');"
	                  "ALTER TABLE r ADD COLUMN c2 regclass DEFAULT 'only_here';"
	                  "INSERT INTO r (id, c2) VALUES (20, 'k')");
	tm_catch_up(e, 60);
	assert_target_type(e, "r", "c", "text");
	assert_target_type(e, "r", "ty", "text");
	assert_target_type(e, "r", "arr", "text[]");
	assert_target_type(e, "r", "acl", "text[]");
	assert_target_type(e, "r", "c2", "text");
	assert_target_type(e, "k", "c", "text");
	tm_assert_value(e->t, "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
	                " WHERE a.attrelid = 'pair'::regclass AND a.attname = 't'", "text");
	tm_assert_value(e->t, "SELECT format_type(typbasetype, typtypmod) FROM pg_type"
	                " WHERE typname = 'rel'", "text");
	assert_same_rows(e, "r", cols);
	assert_same_rows(e, "r", "id, c2::text");
	assert_same_rows(e, "k", "c::text, v");
	tm_assert_value(e->t, "SELECT c FROM r WHERE id = 1", "only_here");
	tm_assert_value(e->t, "SELECT string_agg(c, ',' ORDER BY c) FROM k",
	                "only_here,only_here_too,pg_roles");
	free(tm_expect(e, 0, "verify"));
	tm_env_free(e);
}

/* What a database or role sets for its sessions does not change how
 * tidemark reads and writes values: an array's NULL element stays NULL
 * under array_nulls = off (an int[]'s stopped the stream; a text[] would
 * read it as the string "NULL"), an XML fragment is taken under
 * xmloption = document, serializable as the default isolation changes
 * nothing, and idle_session_timeout does not close a quiet stream's
 * sessions (each was closed and the run resumed, over and over). */
static void
test_database_settings_do_not_apply(void **state)
{
	tm_env *e = tm_env_new("dbsettings");
	pgtest_proc *run;
	/* a server built without libxml (the newer one of the suite) has no xml */
	char *no_xml = pgtest_exec_error(e->t, "SELECT '<a/>'::xml");
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE a (id int PRIMARY KEY, ta text[], ia int[], x %s);"
	                  "INSERT INTO a VALUES (1, '{a,NULL,c}', '{1,NULL}', '<a/><b/>'),"
	                  " (2, '{NULL}', '{NULL,NULL}', 'only text')", no_xml ? "text" : "xml");
	free(no_xml);
	for (int side = 0; side < 2; side++)
		pgtest_exec(side ? e->t : e->s,
		            "ALTER DATABASE %s SET array_nulls = off;"
		            "ALTER DATABASE %s SET xmloption = document;"
		            "ALTER DATABASE %s SET default_transaction_isolation = serializable;"
		            "ALTER DATABASE %s SET idle_session_timeout = '1s'",
		            side ? "dst_dbsettings" : "src_dbsettings",
		            side ? "dst_dbsettings" : "src_dbsettings",
		            side ? "dst_dbsettings" : "src_dbsettings",
		            side ? "dst_dbsettings" : "src_dbsettings");
	tm_setup_table(e, "a");
	run = tm_start_run(e, NULL);
	if (!pgtest_proc_wait_output(run, "streaming from slot", 60))
		fail_msg("run did not stream:\n%s", pgtest_proc_output(run));
	tm_sleep_ms(2500); /* quiet for longer than idle_session_timeout */
	pgtest_exec(e->s, "INSERT INTO a VALUES (3, '{x,NULL}', '{NULL,3}', '<c/>text<d/>');"
	                  "UPDATE a SET ta = ta || NULL::text WHERE id = 1");
	for (int i = 0; i < 600 && pgtest_query_long(e->t, "SELECT count(*) FROM a WHERE id = 3"
	                                                  " AND ia[1] IS NULL") == 0; i++)
		tm_sleep_ms(100);
	if (strstr(pgtest_proc_output(run), "idle-session timeout") != NULL)
		fail_msg("a session was closed as idle:\n%s", pgtest_proc_output(run));
	tm_stop_and_catch_up(e, run, 60);
	for (int side = 0; side < 2; side++)
		pgtest_exec(side ? e->t : e->s, "ALTER DATABASE %s RESET ALL",
		            side ? "dst_dbsettings" : "src_dbsettings");
	assert_same_rows(e, "a", "id, ta, ia, x::text");
	tm_assert_value(e->t, "SELECT count(*) FROM a, unnest(ta) u WHERE u IS NULL", "4");
	tm_assert_value(e->t, "SELECT count(*) FROM a, unnest(ia) u WHERE u IS NULL", "4");
	rc = pgtest_query_long(e->t, "SELECT count(*) FROM a");
	assert_int_equal(rc, 3);
	tm_env_free(e);
}

/* ---- a source database not in UTF8 ---- */

/* A source database in LATIN1: every connection of tidemark asks for UTF8,
 * so the copy, the stream (pgoutput converts to the walsender's client
 * encoding), the captured DDL's text and verify all see the source's
 * characters; accented names of schema, table and columns, accented keys
 * and values, a column added with an accented name and default. */
static void
test_latin1_source(void **state)
{
	tm_env *e = tm_env_new("latin1src");
	pgtest_proc *run;

	(void) state;
	tm_env_encoding(e, true, "LATIN1");
	pgtest_exec(e->s, "CREATE SCHEMA \"café\";"
	                  "CREATE TABLE \"café\".\"crème\" (k text PRIMARY KEY, \"naïve\" text, n int);"
	                  "INSERT INTO \"café\".\"crème\" SELECT w || g, repeat(w, g %% 5), g"
	                  "  FROM generate_series(1, 60) g, unnest(ARRAY['é', 'ü', 'Ø', 'ß', 'ñ',"
	                  "  'plain']) w WHERE g %% 6 = array_position(ARRAY['é', 'ü', 'Ø', 'ß', 'ñ',"
	                  "  'plain'], w) - 1");
	tm_assert_value(e->s, "SELECT count(*) FROM \"café\".\"crème\"", "60");
	setup_tables(e, "café.crème", NULL);
	catch_up_chunked(e);
	tm_assert_rows_equal(e->s, "\"café\".\"crème\"", e->t, "\"café\".\"crème\"", "*");
	assert_same_types(e, "\"café\".\"crème\"");

	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "UPDATE \"café\".\"crème\" SET \"naïve\" = \"naïve\" || 'à', n = -n"
	                  " WHERE n %% 2 = 0;"
	                  "DELETE FROM \"café\".\"crème\" WHERE n %% 7 = 0;"
	                  "UPDATE \"café\".\"crème\" SET k = k || 'ÿ' WHERE n %% 5 = 1;"
	                  "INSERT INTO \"café\".\"crème\" VALUES ('Ææ', 'Þorn', 1000)");
	pgtest_exec(e->s, "ALTER TABLE \"café\".\"crème\" ADD COLUMN \"über\" text DEFAULT 'ça va';"
	                  "INSERT INTO \"café\".\"crème\" VALUES ('après', 'déjà', 1001, 'voilà');"
	                  "UPDATE \"café\".\"crème\" SET \"über\" = 'où' WHERE n = 1000");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_rows_equal(e->s, "\"café\".\"crème\"", e->t, "\"café\".\"crème\"", "*");
	assert_same_types(e, "\"café\".\"crème\"");
	tm_assert_value(e->t, "SELECT \"naïve\" FROM \"café\".\"crème\" WHERE k = 'Ææ'", "Þorn");
	tm_assert_value(e->t, "SELECT count(*) FROM tidemark.ddl_log"
	                " WHERE statement LIKE '%über%ça va%'", "1");
	assert_int_equal(tm_run(e, 60, NULL, "verify", "--chunk-rows", "7", NULL), 0);
	tm_env_free(e);
}

/* A source database in SQL_ASCII, which stores any bytes: text that is
 * UTF-8 is copied and streamed as such; a value that is not stops the copy
 * and the stream with the source's error and the fix, and the fix given
 * works: the value corrected, the slot dropped, `resync` brings the target
 * back equal. */
static void
test_sql_ascii_source(void **state)
{
	tm_env *e = tm_env_new("asciisrc");
	char *out = NULL;
	int rc;

	(void) state;
	tm_env_encoding(e, true, "SQL_ASCII");
	pgtest_exec(e->s, "CREATE TABLE a (k text PRIMARY KEY, v text);"
	                  "INSERT INTO a SELECT 'é' || g, repeat('ü', g) FROM generate_series(1, 20) g;"
	                  /* LATIN1's é: not UTF-8 */
	                  "INSERT INTO a VALUES ('bad', E'caf\\xe9')");
	rc = tm_run(e, 60, &out, "setup", "--table", "a", NULL);
	if (rc != 0)
		fail_msg("setup exited %d:\n%s", rc, out);
	tm_assert_has(out, "encoding is SQL_ASCII");
	free(out);
	/* in the copy: the source's error, not a COPY cut short */
	rc = tm_run(e, 60, &out, "run", "--until-caught-up", NULL);
	assert_int_equal(rc, 4);
	tm_assert_has(out, "reading a snapshot chunk");
	tm_assert_has(out, "not valid UTF-8");
	free(out);
	pgtest_exec(e->s, "UPDATE a SET v = 'fixed' WHERE k = 'bad'");
	catch_up_chunked(e);
	pgtest_exec(e->s, "UPDATE a SET v = v || 'ß' WHERE length(v) %% 2 = 0;"
	                  "INSERT INTO a VALUES ('Ø', 'ñ')");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "public.a", e->t, "public.a", "*");

	/* in the stream */
	pgtest_exec(e->s, "UPDATE a SET v = E'caf\\xe9' WHERE k = 'bad'");
	rc = tm_run(e, 60, &out, "run", "--until-caught-up", NULL);
	assert_int_equal(rc, 4);
	tm_assert_has(out, "reading the replication stream");
	tm_assert_has(out, "SQLSTATE 22021");
	tm_assert_has(out, "not valid UTF-8");
	free(out);
	/* the fix it gives */
	pgtest_exec(e->s, "UPDATE a SET v = 'café' WHERE k = 'bad'");
	pgtest_exec(e->s, "SELECT pg_drop_replication_slot('%s')", e->slot);
	rc = tm_run(e, 120, &out, "resync", "--until-caught-up", NULL);
	if (rc != 0)
		fail_msg("resync exited %d:\n%s", rc, out);
	free(out);
	tm_assert_rows_equal(e->s, "public.a", e->t, "public.a", "*");
	tm_assert_value(e->t, "SELECT v FROM a WHERE k = 'bad'", "café");
	tm_env_free(e);
}

/* A target database in LATIN1 under a UTF8 source: setup warns, and a
 * character LATIN1 has no equivalent for stops the copy, and the stream,
 * with the fix (the LATIN1 target itself is test_net's). */
static void
test_narrower_target_encoding(void **state)
{
	tm_env *e = tm_env_new("latin1dst");
	char *out = NULL;
	int rc;

	(void) state;
	tm_env_encoding(e, false, "LATIN1");
	pgtest_exec(e->s, "CREATE TABLE a (k int PRIMARY KEY, v text);"
	                  "INSERT INTO a VALUES (1, 'déjà'), (2, '€uro')");
	rc = tm_run(e, 60, &out, "setup", "--table", "a", NULL);
	if (rc != 0)
		fail_msg("setup exited %d:\n%s", rc, out);
	tm_assert_has(out, "encoding is LATIN1 and the source's UTF8");
	free(out);
	rc = tm_run(e, 60, &out, "run", "--until-caught-up", NULL);
	assert_int_equal(rc, 5);
	tm_assert_has(out, "SQLSTATE 22P05");
	tm_assert_has(out, "a target database in UTF8");
	free(out);
	pgtest_exec(e->s, "UPDATE a SET v = 'euro' WHERE k = 2");
	catch_up_chunked(e);
	pgtest_exec(e->s, "INSERT INTO a VALUES (3, '€')");
	rc = tm_run(e, 60, &out, "run", "--until-caught-up", NULL);
	assert_int_equal(rc, 5);
	tm_assert_has(out, "SQLSTATE 22P05");
	free(out);
	tm_assert_value(e->t, "SELECT v FROM a WHERE k = 1", "déjà");
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enum_keys_in_chunks),
		cmocka_unit_test(test_collated_keys_in_chunks),
		cmocka_unit_test(test_alter_type_followed),
		cmocka_unit_test(test_key_order_judged_when_caught_up),
		cmocka_unit_test(test_generated_columns),
		cmocka_unit_test(test_not_null_not_valid),
		cmocka_unit_test(test_fallback_to_text_is_visible),
		cmocka_unit_test(test_object_names_kept_as_text),
		cmocka_unit_test(test_database_settings_do_not_apply),
		cmocka_unit_test(test_long_target_ddl_keeps_the_stream),
		cmocka_unit_test(test_latin1_source),
		cmocka_unit_test(test_sql_ascii_source),
		cmocka_unit_test(test_narrower_target_encoding),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
