/*
 * test_ddl_audit.c: ddl_parse_audit_text, what the DDL audit log records of
 * a captured statement text: table DDL as written, anything that may hold a
 * secret by its kind, the capture's own placeholders kept, no fingerprint
 * of what is not recorded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "ddl_parse.h"
#include "strbuf.h"

/* The audit text of sql; *fps gets the fingerprints (caller frees both). */
static char *
audit(const char *sql, strbuf *fps)
{
	ddl_parse_result pr;
	strbuf text = STRBUF_INIT;
	tm_error err;

	assert_int_equal(ddl_parse_text(sql, &pr, &err), 0);
	ddl_parse_audit_text(sql, &pr, &text, fps);
	ddl_parse_result_free(&pr);
	return strbuf_steal(&text);
}

static void
expect(const char *sql, const char *want)
{
	strbuf fps = STRBUF_INIT;
	char *got = audit(sql, &fps);

	if (strcmp(got, want) != 0)
		fail_msg("audit text of\n  %s\nis\n  %s\nnot\n  %s", sql, got, want);
	assert_null(strstr(got, "hunter2"));
	free(got);
	strbuf_free(&fps);
}

static void
test_ddl_kept(void **state)
{
	(void) state;
	expect("ALTER TABLE t ADD COLUMN c int", "ALTER TABLE t ADD COLUMN c int");
	expect("ALTER TABLE t ADD c int;ALTER TABLE t ADD d int;", "ALTER TABLE t ADD c int;ALTER TABLE t ADD d int;");
	expect("BEGIN; CREATE TABLE a (id int PRIMARY KEY, v text DEFAULT 'd'); COMMIT",
	       "BEGIN; CREATE TABLE a (id int PRIMARY KEY, v text DEFAULT 'd'); COMMIT");
	expect("CREATE UNIQUE INDEX i ON t (c) WHERE c <> 'x'; DROP TABLE u; COMMENT ON TABLE t IS 'c'",
	       "CREATE UNIQUE INDEX i ON t (c) WHERE c <> 'x'; DROP TABLE u; COMMENT ON TABLE t IS 'c'");
	/* comments go: they are not DDL, and may say anything */
	expect("/* hunter2 */ ALTER TABLE t ADD c int -- hunter2\n", "ALTER TABLE t ADD c int\n");
	expect("ALTER TABLE t /* hunter2 */ ADD c int", "ALTER TABLE t   ADD c int");
}

static void
test_opaque_by_kind(void **state)
{
	(void) state;
	expect("DO $$ BEGIN EXECUTE 'ALTER TABLE t ADD COLUMN note text'; "
	       "EXECUTE 'ALTER ROLE app PASSWORD ''hunter2'''; END $$",
	       "/* DO: not recorded (it may hold a secret) */");
	expect("CALL add_note('hunter2')", "/* CALL: not recorded (it may hold a secret) */");
	expect("SELECT add_note('hunter2')", "/* SELECT: not recorded (it may hold a secret) */");
	expect("ALTER TABLE t ADD c int; ALTER ROLE app PASSWORD 'hunter2'; UPDATE t SET c = 1",
	       "ALTER TABLE t ADD c int; /* ALTER ROLE: not recorded (it may hold a secret) */; "
	       "/* UPDATE: not recorded (it may hold a secret) */");
	expect("PREPARE s AS SELECT 'hunter2'; EXECUTE s; SET my.key = 'hunter2'",
	       "/* PREPARE: not recorded (it may hold a secret) */; /* EXECUTE: not recorded (it may "
	       "hold a secret) */; /* SET: not recorded (it may hold a secret) */");
	expect("CREATE USER MAPPING FOR app SERVER s OPTIONS (password 'hunter2')",
	       "/* CREATE USER MAPPING: not recorded (it may hold a secret) */");
	expect("CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $f$ SELECT 'hunter2' $f$",
	       "/* CREATE FUNCTION: not recorded (it may hold a secret) */");
	expect("ALTER SYSTEM SET primary_conninfo = 'password=hunter2'",
	       "/* ALTER SYSTEM: not recorded (it may hold a secret) */");
	expect("INSERT INTO api_keys VALUES ('hunter2')",
	       "/* INSERT: not recorded (it may hold a secret) */");
}

/* A USING expression and a query are not in the catalog: their constants
 * are not recorded. */
static void
test_constants_masked(void **state)
{
	(void) state;
	expect("ALTER TABLE t ALTER c TYPE text USING pgp_sym_decrypt(c, 'hunter2')",
	       "ALTER TABLE t ALTER c TYPE text USING pgp_sym_decrypt(c, '?')");
	expect("ALTER TABLE t ALTER c TYPE text USING f(c, $k$hunter2$k$, E'\\'hunter2')",
	       "ALTER TABLE t ALTER c TYPE text USING f(c, '?', '?')");
	expect("CREATE TABLE a AS SELECT * FROM dblink('password=hunter2', 'SELECT 1') AS x (i int)",
	       "CREATE TABLE a AS SELECT * FROM dblink('?', '?') AS x (i int)");
	expect("ALTER TABLE t ALTER c TYPE bigint", "ALTER TABLE t ALTER c TYPE bigint");
}

/* What the capture left out stays said, whatever else is in the gaps. */
static void
test_capture_placeholders(void **state)
{
	(void) state;
	expect("/* DO: left out by the capture */", "/* DO: left out by the capture */");
	expect("ALTER TABLE t ADD c int; /* ALTER ROLE: left out by the capture */; "
	       "/* UPDATE: left out by the capture */",
	       "ALTER TABLE t ADD c int; /* ALTER ROLE: left out by the capture */; "
	       "/* UPDATE: left out by the capture */");
	/* not quite the form: a comment like any other */
	expect("/* hunter2: left out by the capture */; ALTER TABLE t ADD c int",
	       "; ALTER TABLE t ADD c int");
	expect("/* DO hunter2 */ ALTER TABLE t ADD c int", "ALTER TABLE t ADD c int");
	expect("-- DO: left out by the capture */\nALTER TABLE t ADD c int", "ALTER TABLE t ADD c int");
}

static void
test_unparsable(void **state)
{
	(void) state;
	expect("ALTER TABLE t ADD c int; ALTER ROLE app PASSWORD 'hunter2' garbage",
	       "/* statement not recorded: it could not be parsed */");
}

/* Fingerprints only of what is recorded: ALTER ROLE's hashes the password. */
static void
test_fingerprints(void **state)
{
	strbuf a = STRBUF_INIT, b = STRBUF_INIT, c = STRBUF_INIT;
	char *t1 = audit("ALTER TABLE t ADD c int; ALTER ROLE app PASSWORD 'hunter2'", &a);
	char *t2 = audit("ALTER TABLE t ADD c int; ALTER ROLE app PASSWORD 'hunter3'", &b);
	char *t3 = audit("DO $$BEGIN PERFORM 1; END$$", &c);

	(void) state;
	assert_int_equal(a.len, 16);
	assert_string_equal(strbuf_str(&a), strbuf_str(&b));
	assert_int_equal(c.len, 0);
	free(t1);
	free(t2);
	free(t3);
	strbuf_free(&a);
	strbuf_free(&b);
	strbuf_free(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ddl_kept),
		cmocka_unit_test(test_opaque_by_kind),
		cmocka_unit_test(test_constants_masked),
		cmocka_unit_test(test_capture_placeholders),
		cmocka_unit_test(test_unparsable),
		cmocka_unit_test(test_fingerprints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
