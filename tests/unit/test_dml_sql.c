/*
 * test_dml_sql.c: the statements that apply row changes, exactly as sent,
 * with hostile identifiers that stay identifiers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dml_sql.h"

/* public."Line Items" ("order id", "x""; DROP TABLE y; --", note), keyed
 * by ("order id", "x""; DROP TABLE y; --") */
static const char *const cols[] = {"order id", "x\"; DROP TABLE y; --", "note"};
static const int keys[] = {0, 1};
static const dml_sql_table table = {"public", "Line Items", 3, cols, 2, keys, NULL, NULL};

#define QT "\"public\".\"Line Items\""
#define K1 "\"order id\""
#define K2 "\"x\"\"; DROP TABLE y; --\""

static void
assert_sql(strbuf *sql, const char *expected)
{
	if (strcmp(strbuf_str(sql), expected) != 0)
		fail_msg("got      %s\nexpected %s", strbuf_str(sql), expected);
	strbuf_free(sql);
}

static void
test_upsert(void **state)
{
	strbuf sql = STRBUF_INIT;
	static const int all[] = {0, 1, 2};
	dml_sql_table keys_only = {"s", "t", 3, cols, 3, all, NULL, NULL};

	(void) state;
	dml_sql_upsert(&sql, &table);
	assert_sql(&sql, "INSERT INTO " QT " (" K1 ", " K2 ", \"note\") VALUES ($1, $2, $3)"
	                 " ON CONFLICT (" K1 ", " K2 ") DO UPDATE SET \"note\" = EXCLUDED.\"note\"");
	dml_sql_upsert(&sql, &keys_only);
	assert_sql(&sql, "INSERT INTO \"s\".\"t\" (" K1 ", " K2 ", \"note\") VALUES ($1, $2, $3)"
	                 " ON CONFLICT (" K1 ", " K2 ", \"note\") DO NOTHING");
}

static void
test_delete_and_truncate(void **state)
{
	strbuf sql = STRBUF_INIT;
	const char *schemas[] = {"public", "a\"b"}, *names[] = {"Line Items", "c"};

	(void) state;
	dml_sql_delete(&sql, &table);
	assert_sql(&sql, "DELETE FROM " QT " WHERE " K1 " = $1 AND " K2 " = $2");
	/* typed keys: a composite key, a domain over an enum */
	{
		static const char *const types[] = {"\"public\".\"pair\"", NULL};
		dml_sql_table typed = table;

		typed.key_types = types;
		dml_sql_delete(&sql, &typed);
		assert_sql(&sql, "DELETE FROM " QT " WHERE " K1 "::\"public\".\"pair\" = $1::\"public\".\"pair\" AND " K2
		                 " = $2");
	}
	dml_sql_truncate(&sql, 2, schemas, names);
	assert_sql(&sql, "TRUNCATE " QT ", \"a\"\"b\".\"c\"");
}

static void
test_update_present(void **state)
{
	strbuf sql = STRBUF_INIT;
	const bool note_only[] = {false, false, true}, none[] = {false, false, false};
	int n = 0;

	(void) state;
	dml_sql_update_present(&sql, &table, note_only, &n);
	assert_sql(&sql, "UPDATE " QT " SET \"note\" = $1 WHERE " K1 " = $2 AND " K2 " = $3");
	assert_int_equal(n, 3);
	/* nothing sent but unchanged values: the row is matched and kept */
	dml_sql_update_present(&sql, &table, none, &n);
	assert_sql(&sql, "UPDATE " QT " SET " K1 " = " K1 " WHERE " K1 " = $1 AND " K2 " = $2");
	assert_int_equal(n, 2);
}

/* A key change that did not send every column asks for a reread when no
 * row moved: the new key's values and the position follow the update's. */
static void
test_update_moved(void **state)
{
	strbuf sql = STRBUF_INIT;
	const bool keys_sent[] = {true, true, false};
	int n = 0;

	(void) state;
	dml_sql_update_moved(&sql, &table, keys_sent, &n);
	assert_sql(&sql, "WITH moved AS (UPDATE " QT " SET " K1 " = $1, " K2 " = $2"
	                 " WHERE " K1 " = $3 AND " K2 " = $4 RETURNING 1)"
	                 " INSERT INTO tidemark.snapshot_rereads (table_id, key, requested_lsn)"
	                 " SELECT $5::integer, ARRAY[$6::text, $7::text], $8::pg_lsn"
	                 " WHERE NOT EXISTS (SELECT FROM moved)"
	                 " ON CONFLICT (table_id, key) DO UPDATE SET requested_lsn ="
	                 " greatest(snapshot_rereads.requested_lsn, EXCLUDED.requested_lsn)");
	assert_int_equal(n, 8);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upsert),
		cmocka_unit_test(test_delete_and_truncate),
		cmocka_unit_test(test_update_present),
		cmocka_unit_test(test_update_moved),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
