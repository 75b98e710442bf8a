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
	/* the names are parameters: schemas, then names */
	dml_sql_empty_tables(&sql, 2);
	assert_sql(&sql, "SELECT tidemark.empty_tables(ARRAY[$1, $2]::text[], ARRAY[$3, $4]::text[])");
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

/* A shaped table (dml_sql_shape): s.t (id, v) keyed by id, with metadata
 * columns, soft deletes and a history; each statement writes the history
 * from the mirror's row as the change left it. */
static const char *const s_cols[] = {"id", "v"};
static const int s_keys[] = {0};
static const dml_sql_shape s_all = {true, true, "t_history", 2, s_cols, NULL};
static const dml_sql_shape s_hist = {false, false, "t_history", 2, s_cols, NULL};
static const dml_sql_table shaped = {"s", "t", 2, s_cols, 1, s_keys, NULL, &s_all};
static const dml_sql_table hist_only = {"s", "t", 2, s_cols, 1, s_keys, NULL, &s_hist};

static void
test_shaped_changes(void **state)
{
	strbuf sql = STRBUF_INIT;
	static const bool present[] = {false, true};
	int n;

	(void) state;
	dml_sql_upsert(&sql, &shaped);
	assert_sql(&sql, "WITH m AS (INSERT INTO \"s\".\"t\" (\"id\", \"v\") VALUES ($1, $2) ON"
	                 " CONFLICT (\"id\") DO UPDATE SET \"v\" = EXCLUDED.\"v\", tidemark_lsn ="
	                 " EXCLUDED.tidemark_lsn, tidemark_synced_at = EXCLUDED.tidemark_synced_at,"
	                 " tidemark_deleted_at = NULL RETURNING \"id\", \"v\") INSERT INTO"
	                 " \"s\".\"t_history\" (tidemark_op, tidemark_seq, tidemark_lsn,"
	                 " tidemark_commit_time, \"id\", \"v\") SELECT $3::text, $4::bigint,"
	                 " $5::pg_lsn, $6::timestamptz, m.\"id\", m.\"v\" FROM m");
	dml_sql_delete(&sql, &shaped);
	assert_sql(&sql, "WITH m AS (UPDATE \"s\".\"t\" SET tidemark_deleted_at ="
	                 " current_setting('tidemark.commit_time')::timestamptz, tidemark_lsn ="
	                 " DEFAULT, tidemark_synced_at = DEFAULT WHERE \"id\" = $1 AND"
	                 " tidemark_deleted_at IS NULL RETURNING \"id\", \"v\") INSERT INTO"
	                 " \"s\".\"t_history\" (tidemark_op, tidemark_seq, tidemark_lsn,"
	                 " tidemark_commit_time, \"id\", \"v\") SELECT $2::text, $3::bigint,"
	                 " $4::pg_lsn, $5::timestamptz, m.\"id\", m.\"v\" FROM m");
	dml_sql_update_present(&sql, &shaped, present, &n);
	assert_int_equal(n, 2 + DML_SQL_HISTORY_PARAMS);
	assert_sql(&sql, "WITH m AS (UPDATE \"s\".\"t\" SET \"v\" = $1, tidemark_lsn = DEFAULT,"
	                 " tidemark_synced_at = DEFAULT WHERE \"id\" = $2 RETURNING \"id\", \"v\")"
	                 " INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, tidemark_lsn,"
	                 " tidemark_commit_time, \"id\", \"v\") SELECT $3::text, $4::bigint,"
	                 " $5::pg_lsn, $6::timestamptz, m.\"id\", m.\"v\" FROM m");
	/* the history's statement beside the update, its entry's values last */
	dml_sql_update_moved(&sql, &hist_only, present, &n);
	assert_int_equal(n, 5 + DML_SQL_HISTORY_PARAMS);
	assert_sql(&sql, "WITH moved AS (UPDATE \"s\".\"t\" SET \"v\" = $1 WHERE \"id\" = $2 RETURNING"
	                 " \"id\", \"v\"), h AS (INSERT INTO \"s\".\"t_history\" (tidemark_op,"
	                 " tidemark_seq, tidemark_lsn, tidemark_commit_time, \"id\", \"v\") SELECT"
	                 " $6::text, $7::bigint, $8::pg_lsn, $9::timestamptz, moved.\"id\", moved.\"v\""
	                 " FROM moved RETURNING 1) INSERT INTO tidemark.snapshot_rereads (table_id,"
	                 " key, requested_lsn) SELECT $3::integer, ARRAY[$4::text], $5::pg_lsn WHERE"
	                 " NOT EXISTS (SELECT FROM moved) ON CONFLICT (table_id, key) DO UPDATE SET"
	                 " requested_lsn = greatest(snapshot_rereads.requested_lsn,"
	                 " EXCLUDED.requested_lsn)");
	dml_sql_history_of_key(&sql, &hist_only);
	assert_sql(&sql, "INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, tidemark_lsn,"
	                 " tidemark_commit_time, \"id\", \"v\") SELECT $2::text, $3::bigint,"
	                 " $4::pg_lsn, $5::timestamptz, \"id\", \"v\" FROM \"s\".\"t\" WHERE \"id\" = $1");
}

static void
test_shaped_truncate_and_copy(void **state)
{
	strbuf sql = STRBUF_INIT;
	dml_sql_table plain = hist_only;

	(void) state;
	plain.shape = NULL;
	assert_false(dml_sql_truncate_shaped(&sql, &plain));
	assert_true(dml_sql_truncate_shaped(&sql, &hist_only));
	assert_sql(&sql, "INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, \"id\", \"v\")"
	                 " SELECT 'delete', $1::bigint + row_number() OVER (), \"id\", \"v\" FROM"
	                 " \"s\".\"t\"");
	assert_true(dml_sql_truncate_shaped(&sql, &shaped));
	assert_sql(&sql, "WITH m AS (UPDATE \"s\".\"t\" SET tidemark_deleted_at ="
	                 " current_setting('tidemark.commit_time')::timestamptz, tidemark_lsn ="
	                 " DEFAULT, tidemark_synced_at = DEFAULT WHERE tidemark_deleted_at IS NULL"
	                 " RETURNING \"id\", \"v\") INSERT INTO \"s\".\"t_history\" (tidemark_op,"
	                 " tidemark_seq, \"id\", \"v\") SELECT 'delete', $1::bigint + row_number() OVER"
	                 " (), m.\"id\", m.\"v\" FROM m");
	/* only rows whose values are not those the mirror held before the load */
	dml_sql_history_copy(&sql, &shaped, " AND (m.\"id\") > ($1)", DML_SQL_COPY_BEFORE,
	                     "pg_temp.\"b\"");
	assert_sql(&sql, "INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, \"id\", \"v\")"
	                 " SELECT 'copy', (SELECT coalesce(max(tidemark_seq), 0) FROM"
	                 " \"s\".\"t_history\" WHERE tidemark_lsn ="
	                 " current_setting('tidemark.lsn')::pg_lsn) + row_number() OVER (), m.\"id\","
	                 " m.\"v\" FROM \"s\".\"t\" m WHERE true AND (m.\"id\") > ($1) AND"
	                 " m.tidemark_deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM pg_temp.\"b\" b"
	                 " WHERE b.r = ROW(m.\"id\", m.\"v\")::text)");
	/* every row: the mirror held none of them */
	dml_sql_history_copy(&sql, &shaped, "", DML_SQL_COPY_ALL, NULL);
	assert_sql(&sql, "INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, \"id\", \"v\")"
	                 " SELECT 'copy', (SELECT coalesce(max(tidemark_seq), 0) FROM"
	                 " \"s\".\"t_history\" WHERE tidemark_lsn ="
	                 " current_setting('tidemark.lsn')::pg_lsn) + row_number() OVER (), m.\"id\","
	                 " m.\"v\" FROM \"s\".\"t\" m WHERE true AND m.tidemark_deleted_at IS NULL");
	/* a history behind its mirror: each key's latest entry looked up */
	dml_sql_history_copy(&sql, &shaped, " AND (m.\"id\") > ($1)", DML_SQL_COPY_LATEST, NULL);
	assert_sql(&sql, "INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, \"id\", \"v\")"
	                 " SELECT 'copy', (SELECT coalesce(max(tidemark_seq), 0) FROM"
	                 " \"s\".\"t_history\" WHERE tidemark_lsn ="
	                 " current_setting('tidemark.lsn')::pg_lsn) + row_number() OVER (), m.\"id\","
	                 " m.\"v\" FROM \"s\".\"t\" m WHERE true AND (m.\"id\") > ($1) AND"
	                 " m.tidemark_deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM (SELECT"
	                 " h.tidemark_op, h.\"id\", h.\"v\" FROM \"s\".\"t_history\" h WHERE h.\"id\" ="
	                 " m.\"id\" ORDER BY h.tidemark_lsn DESC, h.tidemark_seq DESC LIMIT 1) l WHERE"
	                 " l.tidemark_op <> 'delete' AND l.\"id\"::text IS NOT DISTINCT FROM"
	                 " m.\"id\"::text AND l.\"v\"::text IS NOT DISTINCT FROM m.\"v\"::text)");
	dml_sql_history_row_text(&sql, &shaped, "x");
	assert_sql(&sql, "ROW(x.\"id\", x.\"v\")::text");
}

/* Many rows in one statement: an array of text per column, cast. */
static void
test_many_rows(void **state)
{
	static const char *const types[] = {"integer", "\"public\".\"mood\""};
	strbuf sql = STRBUF_INIT;

	(void) state;
	dml_sql_upsert_rows(&sql, &((dml_sql_table){"s", "t", 2, s_cols, 1, s_keys, NULL, NULL}),
	                    types);
	assert_sql(&sql, "INSERT INTO \"s\".\"t\" (\"id\", \"v\") SELECT u.c1::integer,"
	                 " u.c2::\"public\".\"mood\" FROM unnest($1::text[], $2::text[]) AS u (c1, c2)"
	                 " ON CONFLICT (\"id\") DO UPDATE SET \"v\" = EXCLUDED.\"v\"");
	dml_sql_history_rows(&sql, &hist_only, types);
	assert_sql(&sql, "INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, tidemark_lsn,"
	                 " tidemark_commit_time, \"id\", \"v\") SELECT u.c1::text, u.c2::bigint,"
	                 " u.c3::pg_lsn, u.c4::timestamptz, u.c5::integer, u.c6::\"public\".\"mood\""
	                 " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],"
	                 " $6::text[]) AS u (c1, c2, c3, c4, c5, c6)");
	/* a text[] in binary format: the header, then each element's length
	 * and bytes as they are (-1: NULL) */
	dml_sql_array_element(&sql, "a\"b\\c", 5);
	dml_sql_array_element(&sql, NULL, 0);
	dml_sql_array_element(&sql, "NULL", 4);
	dml_sql_array_element(&sql, "", 0);
	assert_int_equal(dml_sql_array_end(&sql), 4);
	{
		static const char want[] = "\0\0\0\1" "\0\0\0\0" "\0\0\0\x19" "\0\0\0\4"
		                           "\0\0\0\1" "\0\0\0\5" "a\"b\\c" "\xff\xff\xff\xff"
		                           "\0\0\0\4" "NULL" "\0\0\0\0";

		assert_int_equal(sql.len, sizeof want - 1);
		assert_memory_equal(sql.data, want, sizeof want - 1);
	}
	strbuf_reset(&sql);
	/* empty: no dimension */
	assert_int_equal(dml_sql_array_end(&sql), 0);
	assert_int_equal(sql.len, 12);
	assert_memory_equal(sql.data, "\0\0\0\0\0\0\0\0\0\0\0\x19", 12);
	strbuf_reset(&sql);
	/* a value of 300 bytes: its length over two bytes */
	{
		char big[300];

		memset(big, 'x', sizeof big);
		dml_sql_array_element(&sql, big, sizeof big);
		assert_int_equal(dml_sql_array_end(&sql), 1);
		assert_memory_equal(sql.data + 20, "\0\0\x01\x2c", 4);
		assert_int_equal(sql.len, 24 + sizeof big);
	}
	strbuf_reset(&sql);
	/* the same entries as COPY text: fields by tab, NULL as \N, the
	 * characters COPY reads specially escaped, a value "\N" not NULL */
	dml_sql_history_copy_in(&sql, &hist_only);
	assert_sql(&sql, "COPY \"s\".\"t_history\" (tidemark_op, tidemark_seq, tidemark_lsn,"
	                 " tidemark_commit_time, \"id\", \"v\") FROM STDIN");
	dml_sql_copy_field(&sql, false, "a\tb\nc\rd\\e", 9);
	dml_sql_copy_field(&sql, false, NULL, 0);
	dml_sql_copy_field(&sql, false, "\\N", 2);
	dml_sql_copy_field(&sql, false, "", 0);
	dml_sql_copy_field(&sql, true, "x\"y", 3);
	assert_sql(&sql, "a\\tb\\nc\\rd\\\\e\t\\N\t\\\\N\t\tx\"y\n");
}

/* Deletes and partial updates of many rows: each key compared as the
 * single-row statement compares it with its parameter (the same operand,
 * the element cast to the parameter's type), hostile names quoted. */
static void
test_many_rows_by_key(void **state)
{
	static const char *const types[] = {"\"pg_catalog\".\"int4\"", "\"pg_catalog\".\"text\"",
	                                    "\"public\".\"doc\""};
	static const char *const key_types[] = {"\"pg_catalog\".\"int4\"", NULL};
	const bool note_only[] = {false, false, true}, all[] = {true, true, true};
	const bool none[] = {false, false, false};
	dml_sql_table typed = table;
	strbuf sql = STRBUF_INIT;
	int n = 0;

	(void) state;
	typed.key_types = key_types;
	/* a key type known for the first column; the second without one: its
	 * parameter would be untyped, typed by the column, as the element is */
	dml_sql_delete_rows(&sql, &typed, types);
	assert_sql(&sql, "DELETE FROM " QT " AS t USING unnest($1::text[], $2::text[]) AS u (c1, c2)"
	                 " WHERE t." K1 "::\"pg_catalog\".\"int4\" = u.c1::\"pg_catalog\".\"int4\""
	                 " AND t." K2 " = u.c2::\"pg_catalog\".\"text\"");
	dml_sql_update_rows(&sql, &typed, note_only, types, &n);
	assert_sql(&sql, "UPDATE " QT " AS t SET \"note\" = u.c1::\"public\".\"doc\" FROM"
	                 " unnest($1::text[], $2::text[], $3::text[]) AS u (c1, c2, c3) WHERE t." K1
	                 "::\"pg_catalog\".\"int4\" = u.c2::\"pg_catalog\".\"int4\" AND t." K2
	                 " = u.c3::\"pg_catalog\".\"text\"");
	assert_int_equal(n, 3);
	/* the keys set too (sent), then matched by their own arrays */
	dml_sql_update_rows(&sql, &table, all, types, &n);
	assert_sql(&sql, "UPDATE " QT " AS t SET " K1 " = u.c1::\"pg_catalog\".\"int4\", " K2
	                 " = u.c2::\"pg_catalog\".\"text\", \"note\" = u.c3::\"public\".\"doc\""
	                 " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u"
	                 " (c1, c2, c3, c4, c5) WHERE t." K1 " = u.c4::\"pg_catalog\".\"int4\" AND t." K2
	                 " = u.c5::\"pg_catalog\".\"text\"");
	assert_int_equal(n, 5);
	/* nothing sent but unchanged values: the rows are matched and kept */
	dml_sql_update_rows(&sql, &table, none, types, &n);
	assert_sql(&sql, "UPDATE " QT " AS t SET " K1 " = t." K1 " FROM unnest($1::text[], $2::text[])"
	                 " AS u (c1, c2) WHERE t." K1 " = u.c1::\"pg_catalog\".\"int4\" AND t." K2
	                 " = u.c2::\"pg_catalog\".\"text\"");
	assert_int_equal(n, 2);
}

/* A history column of text beside a mirror column of another type: every
 * path writes the value's output text, as the stream sends it. */
static void
test_history_text_columns(void **state)
{
	static const bool v_text[] = {false, true};
	static const dml_sql_shape s_text = {false, false, "t_history", 2, s_cols, v_text};
	static const dml_sql_table hist_text = {"s", "t", 2, s_cols, 1, s_keys, NULL, &s_text};
	static const char *const types[] = {"integer", "boolean"};
	strbuf sql = STRBUF_INIT;

	(void) state;
	assert_true(dml_sql_truncate_shaped(&sql, &hist_text));
	assert_sql(&sql, "INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, \"id\", \"v\")"
	                 " SELECT 'delete', $1::bigint + row_number() OVER (), \"id\","
	                 " tidemark.output_text(\"v\") FROM \"s\".\"t\"");
	dml_sql_history_copy(&sql, &hist_text, NULL, DML_SQL_COPY_LATEST, NULL);
	assert_sql(&sql, "INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, \"id\", \"v\")"
	                 " SELECT 'copy', (SELECT coalesce(max(tidemark_seq), 0) FROM"
	                 " \"s\".\"t_history\" WHERE tidemark_lsn ="
	                 " current_setting('tidemark.lsn')::pg_lsn) + row_number() OVER (), m.\"id\","
	                 " tidemark.output_text(m.\"v\") FROM \"s\".\"t\" m WHERE true AND NOT EXISTS"
	                 " (SELECT 1 FROM (SELECT h.tidemark_op, h.\"id\", h.\"v\" FROM"
	                 " \"s\".\"t_history\" h WHERE h.\"id\" = m.\"id\" ORDER BY h.tidemark_lsn"
	                 " DESC, h.tidemark_seq DESC LIMIT 1) l WHERE l.tidemark_op <> 'delete' AND"
	                 " l.\"id\"::text IS NOT DISTINCT FROM m.\"id\"::text AND l.\"v\"::text IS NOT"
	                 " DISTINCT FROM tidemark.output_text(m.\"v\")::text)");
	/* many entries: the stream's text as it came, not cast to the mirror's type */
	dml_sql_history_rows(&sql, &hist_text, types);
	assert_sql(&sql, "INSERT INTO \"s\".\"t_history\" (tidemark_op, tidemark_seq, tidemark_lsn,"
	                 " tidemark_commit_time, \"id\", \"v\") SELECT u.c1::text, u.c2::bigint,"
	                 " u.c3::pg_lsn, u.c4::timestamptz, u.c5::integer, u.c6::pg_catalog.text"
	                 " FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],"
	                 " $6::text[]) AS u (c1, c2, c3, c4, c5, c6)");
	dml_sql_history_of_key(&sql, &hist_text);
	assert_true(strstr(sql.data, ", \"id\", tidemark.output_text(\"v\") FROM") != NULL);
	strbuf_free(&sql);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upsert),
		cmocka_unit_test(test_delete_and_truncate),
		cmocka_unit_test(test_update_present),
		cmocka_unit_test(test_update_moved),
		cmocka_unit_test(test_shaped_changes),
		cmocka_unit_test(test_shaped_truncate_and_copy),
		cmocka_unit_test(test_many_rows),
		cmocka_unit_test(test_many_rows_by_key),
		cmocka_unit_test(test_history_text_columns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
