/*
 * Unit tests of keyless_sql.c: the statements that change one row of a
 * table without a key, matched by its whole old row, by each column's kind
 * of match; names quoted, values parameters only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "keyless_sql.h"

static const char *const cols[] = {"id", "amount", "doc", "x\"y"};
static const keyless_match match[] = {KEYLESS_MATCH_IMAGE, KEYLESS_MATCH_EQUAL,
                                      KEYLESS_MATCH_TEXT, KEYLESS_MATCH_TEXT};
static const char *const types[] = {"integer", "numeric", "json", NULL};
static const keyless_sql_table table = {"public", "Log Lines", 4, cols, match, types};

static void
test_match_parse(void **state)
{
	(void) state;
	assert_int_equal(keyless_sql_match_parse("image"), KEYLESS_MATCH_IMAGE);
	assert_int_equal(keyless_sql_match_parse("equal"), KEYLESS_MATCH_EQUAL);
	assert_int_equal(keyless_sql_match_parse("text"), KEYLESS_MATCH_TEXT);
	assert_int_equal(keyless_sql_match_parse("something else"), KEYLESS_MATCH_TEXT);
	assert_int_equal(keyless_sql_match_parse(NULL), KEYLESS_MATCH_TEXT);
}

static void
test_insert(void **state)
{
	strbuf sql = STRBUF_INIT;
	keyless_sql_table none = {"s", "t", 0, NULL, NULL, NULL};

	(void) state;
	keyless_sql_insert(&sql, &table);
	assert_string_equal(sql.data, "INSERT INTO \"public\".\"Log Lines\" (\"id\", \"amount\", \"doc\", \"x\"\"y\")"
	                              " VALUES ($1, $2, $3, $4)");
	strbuf_reset(&sql);
	keyless_sql_insert(&sql, &none);
	assert_string_equal(sql.data, "INSERT INTO \"s\".\"t\" DEFAULT VALUES");
	strbuf_free(&sql);
}

/* One row, by ctid: image equality alone, equality and text, text as the
 * target's type, text as is (no type); NULLs as IS NULL, no parameter. */
static void
test_delete(void **state)
{
	strbuf sql = STRBUF_INIT;
	const char *none_null = "vvvv", *some_null = "vnvn", *unsent = "v-v-";
	int n = 0;

	(void) state;
	keyless_sql_delete(&sql, &table, none_null, &n);
	assert_string_equal(sql.data,
	                    "DELETE FROM \"public\".\"Log Lines\" WHERE ctid = (SELECT ctid FROM"
	                    " \"public\".\"Log Lines\" WHERE \"id\" = $1 AND \"amount\" = $2 AND"
	                    " concat(\"amount\") = concat($2) AND concat(\"doc\") = concat($3::json) AND"
	                    " concat(\"x\"\"y\") ="
	                    " $4::text LIMIT 1)");
	assert_int_equal(n, 4);
	strbuf_reset(&sql);
	keyless_sql_delete(&sql, &table, some_null, &n);
	assert_string_equal(sql.data,
	                    "DELETE FROM \"public\".\"Log Lines\" WHERE ctid = (SELECT ctid FROM"
	                    " \"public\".\"Log Lines\" WHERE \"id\" = $1 AND \"amount\" IS NULL AND concat(\"doc\") ="
	                    " concat($2::json) AND \"x\"\"y\" IS NULL LIMIT 1)");
	assert_int_equal(n, 2);
	/* columns not sent are not compared */
	strbuf_reset(&sql);
	keyless_sql_delete(&sql, &table, unsent, &n);
	assert_string_equal(sql.data,
	                    "DELETE FROM \"public\".\"Log Lines\" WHERE ctid = (SELECT ctid FROM"
	                    " \"public\".\"Log Lines\" WHERE \"id\" = $1 AND concat(\"doc\") ="
	                    " concat($2::json) LIMIT 1)");
	assert_int_equal(n, 2);
	strbuf_reset(&sql);
	keyless_sql_delete(&sql, &table, "----", &n);
	assert_non_null(strstr(sql.data, "WHERE true LIMIT 1)"));
	assert_int_equal(n, 0);
	strbuf_free(&sql);
}

/* The columns set first, then the old row's; an update of unchanged
 * values only keeps the row. */
static void
test_update(void **state)
{
	strbuf sql = STRBUF_INIT;
	bool set[] = {false, true, false, true};
	bool nothing[] = {false, false, false, false};
	const char *some_null = "nvvv";
	int n = 0;

	(void) state;
	keyless_sql_update(&sql, &table, set, some_null, &n);
	assert_string_equal(sql.data,
	                    "UPDATE \"public\".\"Log Lines\" SET \"amount\" = $1, \"x\"\"y\" = $2 WHERE ctid ="
	                    " (SELECT ctid FROM \"public\".\"Log Lines\" WHERE \"id\" IS NULL AND \"amount\""
	                    " = $3 AND concat(\"amount\") = concat($3) AND concat(\"doc\") = concat($4::json) AND"
	                    " concat(\"x\"\"y\") = $5::text LIMIT 1)");
	assert_int_equal(n, 5);
	strbuf_reset(&sql);
	keyless_sql_update(&sql, &table, nothing, "vvvv", &n);
	assert_true(strncmp(sql.data, "UPDATE \"public\".\"Log Lines\" SET \"id\" = \"id\" WHERE ctid =", 56) == 0);
	assert_int_equal(n, 4);
	strbuf_free(&sql);
}

static void
test_stage_and_load(void **state)
{
	strbuf sql = STRBUF_INIT;

	(void) state;
	keyless_sql_stage_name(&sql, 42);
	assert_string_equal(sql.data, "\"tidemark\".\"keyless 42\"");
	strbuf_reset(&sql);
	keyless_sql_load(&sql, "public", "Log Lines", 2, cols, 7);
	assert_string_equal(sql.data, "INSERT INTO \"public\".\"Log Lines\" (\"id\", \"amount\") SELECT \"id\","
	                              " \"amount\" FROM \"tidemark\".\"keyless 7\"");
	/* a table whose every column was dropped: rows alike, counted */
	strbuf_reset(&sql);
	keyless_sql_load(&sql, "public", "Log Lines", 0, cols, 7);
	assert_string_equal(sql.data, "INSERT INTO \"public\".\"Log Lines\" SELECT  FROM"
	                              " \"tidemark\".\"keyless 7\"");
	strbuf_free(&sql);
}

/* Kept changes: the old row for updates and deletes, the new one for
 * inserts and updates, the unchanged columns for updates. */
/* The has-columns check's parameters: the quoted table, the names as JSON. */
static void
test_has_columns_params(void **state)
{
	char *name = NULL, *names = NULL;

	(void) state;
	keyless_sql_has_columns_params("public", "Log Lines", 4, cols, &name, &names);
	assert_string_equal(name, "\"public\".\"Log Lines\"");
	assert_string_equal(names, "[\"id\",\"amount\",\"doc\",\"x\\\"y\"]");
	free(name);
	free(names);
	keyless_sql_has_columns_params("s", "t", 0, NULL, &name, &names);
	assert_string_equal(names, "[]");
	free(name);
	free(names);
}

static void
test_record(void **state)
{
	strbuf sql = STRBUF_INIT;
	int n = 0;

	(void) state;
	keyless_sql_record(&sql, 2, 'u', &n);
	assert_string_equal(sql.data,
	                    "INSERT INTO tidemark.keyless_pending (table_id, lsn, xid, op, old, new,"
	                    " unchanged) VALUES ($1::integer, $2::pg_lsn, $3::bigint, $4::\"char\","
	                    " ARRAY[$5::text, $6::text]::text[], ARRAY[$7::text, $8::text]::text[],"
	                    " $9::int2[])");
	assert_int_equal(n, 9);
	strbuf_reset(&sql);
	keyless_sql_record(&sql, 2, 'i', &n);
	assert_non_null(strstr(sql.data, "NULL, ARRAY[$5::text, $6::text]::text[], NULL)"));
	assert_int_equal(n, 6);
	strbuf_reset(&sql);
	keyless_sql_record(&sql, 2, 'd', &n);
	assert_non_null(strstr(sql.data, "ARRAY[$5::text, $6::text]::text[], NULL, NULL)"));
	assert_int_equal(n, 6);
	strbuf_reset(&sql);
	keyless_sql_record(&sql, 2, 't', &n);
	assert_non_null(strstr(sql.data, "$4::\"char\", NULL, NULL, NULL)"));
	assert_int_equal(n, 4);
	strbuf_free(&sql);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_parse), cmocka_unit_test(test_insert),
		cmocka_unit_test(test_delete),      cmocka_unit_test(test_update),
		cmocka_unit_test(test_stage_and_load), cmocka_unit_test(test_record),
		cmocka_unit_test(test_has_columns_params),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
