/*
 * Unit tests of the target's type, collation and extension statements
 * (src/sink/type_ddl.c): every name a quoted identifier, every value a
 * quoted literal, every type re-rendered from its parse, and a type that
 * does not parse writes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "type_ddl.h"

static void
test_create_enum(void **state)
{
	srctype_label labels[] = {{1, "sad"}, {2, "it's ok"}, {3, "x\"; DROP TABLE t; --"}};
	strbuf sql = STRBUF_INIT;

	(void) state;
	type_ddl_create_enum(&sql, "My Schema", "mood", labels, 3);
	assert_string_equal(strbuf_str(&sql), "CREATE TYPE \"My Schema\".\"mood\" AS ENUM ('sad',"
	                                      " 'it''s ok', 'x\"; DROP TABLE t; --')");
	strbuf_free(&sql);
}

static void
test_create_composite_and_domain(void **state)
{
	type_ddl_attr attrs[] = {{"m", "public.mood[]", NULL, NULL},
	                         {"note", "character varying(20)", "public", "ci"}};
	type_ddl_attr bad[] = {{"m", "integer; DROP TABLE t", NULL, NULL}};
	strbuf sql = STRBUF_INIT;
	tm_error err;

	(void) state;
	assert_int_equal(type_ddl_create_composite(&sql, "public", "pair", attrs, 2, &err), 0);
	assert_string_equal(strbuf_str(&sql), "CREATE TYPE \"public\".\"pair\" AS (\"m\" public.mood[],"
	                                      " \"note\" character varying(20) COLLATE \"public\".\"ci\")");
	strbuf_reset(&sql);
	assert_int_equal(type_ddl_create_composite(&sql, "public", "pair", bad, 1, &err), -1);
	assert_int_equal(sql.len, 0);
	assert_int_equal(type_ddl_create_domain(&sql, "public", "code", "text", "pg_catalog", "C",
	                                        &err), 0);
	assert_string_equal(strbuf_str(&sql),
	                    "CREATE DOMAIN \"public\".\"code\" AS text COLLATE \"pg_catalog\".\"C\"");
	strbuf_reset(&sql);
	assert_int_equal(type_ddl_create_domain(&sql, "public", "d", "numeric(12,2)", NULL, NULL, &err),
	                 0);
	assert_string_equal(strbuf_str(&sql), "CREATE DOMAIN \"public\".\"d\" AS numeric(12,2)");
	strbuf_reset(&sql);
	assert_int_equal(type_ddl_create_domain(&sql, "public", "d", "numeric(", NULL, NULL, &err), -1);
	assert_int_equal(sql.len, 0);
	strbuf_free(&sql);
}

static void
test_extension_and_collation(void **state)
{
	srctype_collation icu = {"public", "ci", false, false, 'i', NULL, NULL, "und-u-ks-level2",
	                         NULL, false, "153.120"};
	srctype_collation libc = {"s", "fr", false, false, 'c', "fr_FR.utf8", "fr_FR.utf8", NULL,
	                          NULL, true, NULL};
	srctype_collation evil = {"s", "e", false, false, 'i', NULL, NULL, "de') ; DROP", NULL, true,
	                          NULL};
	strbuf sql = STRBUF_INIT;
	tm_error err;

	(void) state;
	type_ddl_create_extension(&sql, "citext", "public");
	assert_string_equal(strbuf_str(&sql), "CREATE EXTENSION IF NOT EXISTS \"citext\" SCHEMA \"public\"");
	strbuf_reset(&sql);
	assert_int_equal(type_ddl_create_collation(&sql, &icu, &err), 0);
	assert_string_equal(strbuf_str(&sql), "CREATE COLLATION IF NOT EXISTS \"public\".\"ci\""
	                                      " (provider = icu, locale = 'und-u-ks-level2',"
	                                      " deterministic = false)");
	strbuf_reset(&sql);
	assert_int_equal(type_ddl_create_collation(&sql, &libc, &err), 0);
	assert_string_equal(strbuf_str(&sql), "CREATE COLLATION IF NOT EXISTS \"s\".\"fr\""
	                                      " (provider = libc, lc_collate = 'fr_FR.utf8',"
	                                      " lc_ctype = 'fr_FR.utf8', deterministic = true)");
	strbuf_reset(&sql);
	assert_int_equal(type_ddl_create_collation(&sql, &evil, &err), -1);
	assert_int_equal(sql.len, 0);
	strbuf_free(&sql);
}

static void
test_rename_and_steps(void **state)
{
	type_ddl_attr city = {"city", "text", NULL, NULL};
	srctype_attr src_city = {4, "city", "text", 25, 0, NULL};
	srctype_step steps[] = {
		{SRCTYPE_RENAME_VALUE, "a", "a'a", false, NULL},
		{SRCTYPE_ADD_VALUE, "c", "b", true, NULL},
		{SRCTYPE_ADD_VALUE, NULL, "z", false, NULL},
		{SRCTYPE_RENAME_ATTR, "street", "road", false, NULL},
		{SRCTYPE_DROP_ATTR, "zip", NULL, false, NULL},
		{SRCTYPE_ADD_ATTR, NULL, "city", false, &src_city},
		{SRCTYPE_ALTER_ATTR, "city", NULL, false, &src_city},
	};
	const char *expected[] = {
		"ALTER TYPE \"s\".\"t\" RENAME VALUE 'a' TO 'a''a'",
		"ALTER TYPE \"s\".\"t\" ADD VALUE IF NOT EXISTS 'b' BEFORE 'c'",
		"ALTER TYPE \"s\".\"t\" ADD VALUE IF NOT EXISTS 'z'",
		"ALTER TYPE \"s\".\"t\" RENAME ATTRIBUTE \"street\" TO \"road\"",
		"ALTER TYPE \"s\".\"t\" DROP ATTRIBUTE \"zip\"",
		"ALTER TYPE \"s\".\"t\" ADD ATTRIBUTE \"city\" text",
		"ALTER TYPE \"s\".\"t\" ALTER ATTRIBUTE \"city\" TYPE text",
	};
	strbuf sql = STRBUF_INIT;
	tm_error err;

	(void) state;
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		strbuf_reset(&sql);
		assert_int_equal(type_ddl_step(&sql, "s", "t", &steps[i], steps[i].attr ? &city : NULL,
		                               &err), 0);
		assert_string_equal(strbuf_str(&sql), expected[i]);
	}
	strbuf_reset(&sql);
	assert_int_equal(type_ddl_step(&sql, "s", "t", &steps[5], NULL, &err), -1);
	assert_int_equal(sql.len, 0);
	type_ddl_rename(&sql, false, "s", "mood", "feeling");
	assert_string_equal(strbuf_str(&sql), "ALTER TYPE \"s\".\"mood\" RENAME TO \"feeling\"");
	strbuf_reset(&sql);
	type_ddl_set_schema(&sql, true, "s", "code", "other");
	assert_string_equal(strbuf_str(&sql), "ALTER DOMAIN \"s\".\"code\" SET SCHEMA \"other\"");
	strbuf_free(&sql);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_enum),
		cmocka_unit_test(test_create_composite_and_domain),
		cmocka_unit_test(test_extension_and_collation),
		cmocka_unit_test(test_rename_and_steps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
