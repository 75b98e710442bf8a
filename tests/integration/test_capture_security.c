/*
 * What a role that is not tidemark's capture can do through capture
 * messages, and what the capture gives away, against real servers:
 *   - a genuine capture message emitted again in another transaction (read
 *     from a slot of one's own) is ignored, with a warning, the target
 *     unchanged (migrations/source/008_capture_hardening.sql, ddl_auth.h);
 *   - messages signed the old way are followed only from before the bound
 *     form was installed: a backlog the old capture wrote still applies;
 *   - a secret in a DO block, a procedure's argument or beside an ALTER
 *     TABLE in one string appears nowhere: not in the capture message as a
 *     second slot decodes it, not in tidemark.ddl_log, `ddl-log` or the run
 *     log; the columns those statements add are still added.
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

#include "ddl_auth.h"
#include "tm_fixture.h"

/* A logical decoding slot of the test's own (test_decoding), made now: it
 * sees what is committed from here on. */
static void
peek_slot(tm_env *e, const char *plugin)
{
	pgtest_exec(e->s, "SELECT pg_create_logical_replication_slot('peek_%s', '%s')", e->slot,
	            plugin);
}

static void
drop_peek_slot(tm_env *e)
{
	pgtest_exec(e->s, "SELECT pg_drop_replication_slot('peek_%s')", e->slot);
}

/* The content of the n-th (0-based) tidemark.ddl message the peek slot has
 * decoded (test_decoding prints it after "content:"). */
static char *
peeked_message(tm_env *e, int n)
{
	char *line = pgtest_query_value(e->s,
	                                "SELECT data FROM pg_logical_slot_peek_changes('peek_%s', NULL,"
	                                " NULL) WHERE data LIKE 'message: transactional: 1 prefix:"
	                                " tidemark.ddl, %%' OFFSET %d LIMIT 1", e->slot, n);
	char *content = line != NULL ? strstr(line, " content:") : NULL, *out;

	if (content == NULL)
		fail_msg("the peek slot has no capture message %d: %s", n, line ? line : "(none)");
	out = strdup(content + strlen(" content:"));
	free(line);
	return out;
}

/* Emits content as a tidemark.ddl message in a transaction of its own, as
 * any role may. */
static void
emit(tm_env *e, const char *content)
{
	const char *p[] = {content};
	PGresult *r = PQexecParams(e->s, "SELECT pg_logical_emit_message(true, 'tidemark.ddl', $1)", 1,
	                           NULL, p, NULL, NULL, 0);

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("emitting a message: %s", PQerrorMessage(e->s));
	PQclear(r);
}

static char *
target_columns(tm_env *e, const char *table)
{
	return pgtest_query_value(e->t, "SELECT string_agg(attname, ',' ORDER BY attnum) FROM"
	                                " pg_attribute WHERE attrelid = '%s'::regclass AND attnum > 0"
	                                " AND NOT attisdropped", table);
}

static void
assert_target_columns(tm_env *e, const char *table, const char *expected)
{
	char *cols = target_columns(e, table);

	if (cols == NULL || strcmp(cols, expected) != 0)
		fail_msg("target %s has columns %s, expected %s", table, cols ? cols : "(none)", expected);
	free(cols);
}

/* A rename captured, then undone; the first rename's message emitted again
 * in other transactions (alone, and twice in one) must not rename the
 * target's column again. */
static void
test_replayed_message_ignored(void **state)
{
	tm_env *e = tm_env_new("replay");
	pgtest_proc *run;
	char *rename;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE f (id int PRIMARY KEY, v text); INSERT INTO f VALUES (1, 'a')");
	tm_setup_table(e, "f");
	peek_slot(e, "test_decoding");
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER TABLE f RENAME v TO w");
	pgtest_exec(e->s, "ALTER TABLE f RENAME w TO v; INSERT INTO f VALUES (2, 'b')");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM f", "2", 60));
	rename = peeked_message(e, 0);
	assert_non_null(strstr(rename, "\"w\""));
	emit(e, rename);
	pgtest_exec(e->s, "BEGIN; SELECT pg_logical_emit_message(true, 'tidemark.ddl', $m$%s$m$);"
	                  " SELECT pg_logical_emit_message(true, 'tidemark.ddl', $m$%s$m$);"
	                  " INSERT INTO f VALUES (3, 'c'); COMMIT", rename, rename);
	pgtest_exec(e->s, "INSERT INTO f VALUES (4, 'd')");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM f", "4", 60));
	pgtest_proc_kill(run, SIGTERM);
	assert_int_equal(pgtest_proc_wait(run, 60), 0);
	assert_target_columns(e, "f", "id,v");
	tm_assert_equal(e, "f", "id");
	assert_non_null(strstr(pgtest_proc_output(run), "but arrives in transaction"));
	assert_non_null(strstr(pgtest_proc_output(run), "is a copy of a captured message emitted again"));
	pgtest_proc_free(run);
	/* the two genuine renames only */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log"), 2);
	free(rename);
	drop_peek_slot(e);
	tm_env_free(e);
}

/* The capture key, as setup read it. */
static int
capture_key(tm_env *e, uint8_t key[DDL_AUTH_KEY_MAX])
{
	char *hex = pgtest_query_value(e->s, "SELECT encode(key, 'hex') FROM tidemark.capture_key");
	int n = hex ? ddl_auth_key_parse(hex, key, DDL_AUTH_KEY_MAX) : -1;

	free(hex);
	assert_int_equal(n, 32);
	return n;
}

/* The old capture's signing function (migrations/source/002_capture_key.sql). */
static const char old_emit[] =
	"CREATE OR REPLACE FUNCTION tidemark.capture_emit(p_msg text) RETURNS void"
	" LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$"
	" DECLARE k bytea; BEGIN"
	" SELECT key INTO k FROM tidemark.capture_key;"
	" p_msg := encode(sha256(k || sha256(convert_to(p_msg, current_setting('server_encoding')))),"
	" 'hex') || ' ' || p_msg;"
	" PERFORM pg_logical_emit_message(true, 'tidemark.ddl', p_msg); END $f$";

/*
 * A source whose capture was the old one until setup ran again: what it
 * wrote before (signed without its transaction) still applies; the same
 * message emitted again after it does not, nor does the old capture's
 * signature once the new capture is in.
 */
static void
test_old_form_only_before_binding(void **state)
{
	tm_env *e = tm_env_new("oldform");
	char *new_emit, *old_msg;
	uint8_t key[DDL_AUTH_KEY_MAX];
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE f (id int PRIMARY KEY, v text); INSERT INTO f VALUES (1, 'a')");
	tm_setup_table(e, "f");
	tm_catch_up(e, 60);
	capture_key(e, key);
	/* the old capture, and a catalog that does not know the new one */
	new_emit = pgtest_query_value(e->s, "SELECT pg_get_functiondef('tidemark.capture_emit(text)'"
	                                    "::regprocedure)");
	pgtest_exec(e->s, "%s", old_emit);
	pgtest_exec(e->t, "UPDATE tidemark.capture_keys SET bound_from = NULL");
	peek_slot(e, "test_decoding");
	pgtest_exec(e->s, "ALTER TABLE f ADD COLUMN a int; INSERT INTO f VALUES (2, 'b', 2)");
	old_msg = peeked_message(e, 0);
	assert_true(strncmp(old_msg, "v2 ", 3) != 0);
	/* the upgrade: setup again, the new capture in */
	tm_setup_table(e, "f");
	pgtest_exec(e->s, "%s", new_emit);
	run = tm_start_run(e, NULL);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM f WHERE a = 2", "1", 60));
	pgtest_exec(e->s, "ALTER TABLE f DROP COLUMN a; ALTER TABLE f ADD COLUMN b text;"
	                  " INSERT INTO f VALUES (3, 'c', 'c')");
	/* the backlog's message again, now: it would give the table a again */
	emit(e, old_msg);
	pgtest_exec(e->s, "INSERT INTO f VALUES (4, 'd', 'd')");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM f WHERE b = 'd'", "1", 60));
	pgtest_proc_kill(run, SIGTERM);
	assert_int_equal(pgtest_proc_wait(run, 60), 0);
	/* a kept, unfilled since its drop on the source: the replay did not add it again */
	assert_target_columns(e, "f", "id,v,a,b");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM f WHERE a IS NOT NULL"), 1);
	pgtest_exec(e->t, "ALTER TABLE f DROP COLUMN a");
	tm_assert_equal(e, "f", "id");
	assert_non_null(strstr(pgtest_proc_output(run), "is signed without its transaction"));
	pgtest_proc_free(run);
	free(old_msg);
	free(new_emit);
	drop_peek_slot(e);
	tm_env_free(e);
}

/* No line of text has "hunter" in it. */
static void
assert_no_secret(const char *what, const char *text)
{
	const char *at = text ? strstr(text, "hunter") : NULL;

	if (at != NULL)
		fail_msg("%s holds the password: ...%.120s", what, at > text + 60 ? at - 60 : text);
}

/* The secret-holding statements of the test: each also adds a column. */
static void
run_secret_statements(tm_env *e)
{
	pgtest_exec(e->s, "DO $$ BEGIN EXECUTE 'ALTER TABLE t ADD COLUMN note text';"
	                  " EXECUTE 'ALTER ROLE tm_secret_app PASSWORD ''hunter2'''; END $$");
	pgtest_exec(e->s, "CALL add_note2('hunter3')");
	pgtest_exec(e->s, "ALTER TABLE t ADD COLUMN note3 text;"
	                  " ALTER ROLE tm_secret_app PASSWORD 'hunter4';"
	                  " INSERT INTO t VALUES (1, 'hunter5', 'x', 'y')");
	pgtest_exec(e->s, "SELECT add_note4('hunter6')");
	pgtest_exec(e->s, "INSERT INTO t VALUES (2, 'a', 'b', 'c', 'd')");
}

/* Every capture message as the second slot decodes it (pgoutput, binary),
 * and whether any decoded byte holds the secret. */
static void
assert_slot_has_no_secret(tm_env *e)
{
	const char *from = "pg_logical_slot_peek_binary_changes('peek_%1$s', NULL, NULL, 'proto_version',"
	                   " '1', 'publication_names', '%1$s', 'messages', 'true')";
	char sql[512];

	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE position('tidemark.ddl'::bytea IN"
	         " data) > 0", from);
	assert_true(pgtest_query_long(e->s, sql, e->slot) >= 4);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE position('hunter'::bytea IN data) > 0"
	         " AND get_byte(data, 0) = ascii('M')", from);
	assert_int_equal(pgtest_query_long(e->s, sql, e->slot), 0);
}

static void
test_no_secret_through_opaque_statements(void **state)
{
	tm_env *e = tm_env_new("secrets");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE ROLE tm_secret_app LOGIN PASSWORD 'first';"
	                  "CREATE TABLE t (id int PRIMARY KEY, v text);"
	                  "CREATE PROCEDURE add_note2(pw text) LANGUAGE plpgsql AS $p$ BEGIN"
	                  " EXECUTE 'ALTER TABLE t ADD COLUMN note2 text';"
	                  " EXECUTE format('ALTER ROLE tm_secret_app PASSWORD %%L', pw); END $p$;"
	                  "CREATE FUNCTION add_note4(pw text) RETURNS void LANGUAGE plpgsql AS $p$ BEGIN"
	                  " EXECUTE 'ALTER TABLE t ADD COLUMN note4 text';"
	                  " EXECUTE format('ALTER ROLE tm_secret_app PASSWORD %%L', pw); END $p$");
	tm_setup_table(e, "t");
	peek_slot(e, "pgoutput");
	run = tm_start_run(e, "-v", "-v", NULL);
	run_secret_statements(e);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM t", "2", 60));
	pgtest_proc_kill(run, SIGTERM);
	assert_int_equal(pgtest_proc_wait(run, 60), 0);
	assert_no_secret("the run log", pgtest_proc_output(run));
	pgtest_proc_free(run);
	/* the columns came, the rows are equal (the INSERT's value is data, not DDL) */
	assert_target_columns(e, "t", "id,v,note,note2,note3,note4");
	tm_assert_equal(e, "t", "id");
	assert_slot_has_no_secret(e);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log WHERE"
	                                         " concat_ws(' ', statement, fingerprint, classification,"
	                                         " target_action) LIKE '%%hunter%%'"), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log"
	                                         " WHERE statement LIKE '/* DO: %%'"), 1);
	assert_int_equal(tm_run(e, 60, &out, "ddl-log", NULL), 0);
	assert_no_secret("ddl-log", out);
	assert_non_null(strstr(out, "/* CALL: left out by the capture */"));
	assert_non_null(strstr(out, "ALTER TABLE t ADD COLUMN note3 text; /* ALTER ROLE: left out by"
	                            " the capture */; /* INSERT: left out by the capture */"));
	free(out);
	out = NULL;
	assert_int_equal(tm_run(e, 60, &out, "ddl-log", "--json", NULL), 0);
	assert_no_secret("ddl-log --json", out);
	free(out);
	drop_peek_slot(e);
	pgtest_exec(e->s, "DROP PROCEDURE add_note2(text); DROP FUNCTION add_note4(text);"
	                  " DROP ROLE tm_secret_app");
	tm_env_free(e);
}

/* capture_statement, the source's own reading of a client string, on the
 * texts that are hard to split: each input and what the message carries. */
static const char *const statement_texts[][2] = {
	{"ALTER TABLE t ADD c int", "ALTER TABLE t ADD c int"},
	{"ALTER TABLE t ADD c int;\nALTER TABLE t ADD d int;\n",
	 "ALTER TABLE t ADD c int;\nALTER TABLE t ADD d int;\n"},
	{"ALTER TABLE \"we;ird\" ADD \"c;\" text DEFAULT 'a;b'; CALL p('hunter2')",
	 "ALTER TABLE \"we;ird\" ADD \"c;\" text DEFAULT 'a;b'; /* CALL: left out by the capture */"},
	{"ALTER TABLE t ADD c text DEFAULT E'it\\'s; CALL'; SELECT 'hunter2'",
	 "ALTER TABLE t ADD c text DEFAULT E'it\\'s; CALL'; /* SELECT: left out by the capture */"},
	{"DO $x$ BEGIN PERFORM 'hunter2'; END $x$; ALTER TABLE t ADD c int",
	 "/* DO: left out by the capture */; ALTER TABLE t ADD c int"},
	{"DO $$ BEGIN PERFORM $a$ ; hunter2 $a$; END $$; ALTER TABLE t ADD c int",
	 "/* DO: left out by the capture */; ALTER TABLE t ADD c int"},
	{"/* a /* nested */ hunter2 */ ALTER TABLE t ADD c int -- hunter2",
	 "  ALTER TABLE t ADD c int  "},
	{"CREATE OR REPLACE FUNCTION f() RETURNS text LANGUAGE sql AS 'SELECT ''hunter2''';"
	 " CREATE UNIQUE INDEX i ON t (c)",
	 "/* CREATE FUNCTION: left out by the capture */; CREATE UNIQUE INDEX i ON t (c)"},
	{"ALTER TABLE t ALTER c TYPE text USING pgp_sym_decrypt(c, 'hunter2')",
	 "ALTER TABLE t ALTER c TYPE text USING pgp_sym_decrypt(c, '?')"},
	{"CREATE TEMP TABLE a AS SELECT f($q$hunter2$q$)", "CREATE TEMP TABLE a AS SELECT f('?')"},
	{"CREATE RULE r AS ON INSERT TO t DO ALSO (NOTIFY a; NOTIFY b); GRANT SELECT ON t TO u",
	 "CREATE RULE r AS ON INSERT TO t DO ALSO (NOTIFY a; NOTIFY b); GRANT SELECT ON t TO u"},
	{"ALTER TABLE t ADD c int; 'hunter2", "/* UNREADABLE TEXT: left out by the capture */"},
	{"ALTER TABLE t ADD c int; /* hunter2", "/* UNREADABLE TEXT: left out by the capture */"},
	{"COMMIT; hunter2 x; WITH a AS (SELECT 1) SELECT 1; ALTER USER u PASSWORD 'hunter2'",
	 "COMMIT; /* STATEMENT: left out by the capture */; /* WITH: left out by the capture */;"
	 " /* ALTER USER: left out by the capture */"},
};

static void
assert_statement_text(PGconn *conn, const char *in, const char *want)
{
	const char *p[] = {in};
	PGresult *r = PQexecParams(conn, "SELECT tidemark.capture_statement($1)", 1, NULL, p, NULL,
	                           NULL, 0);

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("capture_statement: %s", PQerrorMessage(conn));
	if (strcmp(PQgetvalue(r, 0, 0), want) != 0)
		fail_msg("capture_statement(%s)\n  is %s\n not %s", in, PQgetvalue(r, 0, 0), want);
	PQclear(r);
}

static void
test_capture_statement_texts(void **state)
{
	tm_env *e = tm_env_new("texts");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY)");
	tm_setup_table(e, "t");
	for (size_t i = 0; i < sizeof statement_texts / sizeof statement_texts[0]; i++)
		assert_statement_text(e->s, statement_texts[i][0], statement_texts[i][1]);
	/* with standard_conforming_strings off, a backslash escapes a quote */
	pgtest_exec(e->s, "SET standard_conforming_strings = off");
	assert_statement_text(e->s, "ALTER TABLE t ADD c text DEFAULT 'it\\'s; CALL'; CALL p('hunter2')",
	                      "ALTER TABLE t ADD c text DEFAULT 'it\\'s; CALL'; /* CALL: left out by"
	                      " the capture */");
	pgtest_exec(e->s, "RESET standard_conforming_strings");
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replayed_message_ignored),
		cmocka_unit_test(test_old_form_only_before_binding),
		cmocka_unit_test(test_no_secret_through_opaque_statements),
		cmocka_unit_test(test_capture_statement_texts),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
