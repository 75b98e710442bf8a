/*
 * test_verify_sql.c: how verify compares each column (the same type, a
 * widening on the target, a narrower target type, unrelated or unparsable
 * types) and the statements it builds: quoted names, parameters in order,
 * ORDER BY on the table's own columns, a soft-delete mirror's live rows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verify_sql.h"

static void
assert_mode(const char *source_type, const char *target_type, verify_sql_mode mode,
            const char *type)
{
	verify_sql_column c;

	verify_sql_column_init(&c, "c", source_type, target_type);
	assert_int_equal(c.mode, mode);
	if (type == NULL)
		assert_null(c.type);
	else
		assert_string_equal(c.type, type);
	verify_sql_column_clear(&c);
}

static void
test_column_modes(void **state)
{
	(void) state;
	assert_mode("integer", "integer", VERIFY_SQL_TEXT, NULL);
	assert_mode("\"My Type\"", "\"My Type\"", VERIFY_SQL_TEXT, NULL);
	/* widenings: the source value in the target's type */
	assert_mode("integer", "numeric(12,2)", VERIFY_SQL_TARGET, "numeric(12,2)");
	assert_mode("integer", "bigint", VERIFY_SQL_TARGET, "bigint");
	assert_mode("character varying(10)", "text", VERIFY_SQL_TARGET, "text");
	assert_mode("real", "double precision", VERIFY_SQL_TARGET, "double precision");
	assert_mode("integer[]", "bigint[]", VERIFY_SQL_TARGET, "bigint[]");
	assert_mode("timestamp without time zone", "timestamp with time zone", VERIFY_SQL_TARGET,
	            "timestamp with time zone");
	/* the target kept a narrower type: both sides in a type holding both */
	assert_mode("numeric(20,0)", "numeric(12,2)", VERIFY_SQL_COMMON, "numeric(22,2)");
	assert_mode("bigint", "integer", VERIFY_SQL_COMMON, "bigint");
	/* types whose only common type is text, unknown and malformed types */
	assert_mode("text", "integer", VERIFY_SQL_TEXT, NULL);
	assert_mode("mood", "text", VERIFY_SQL_TEXT, NULL);
	assert_mode("uuid", "integer", VERIFY_SQL_TEXT, NULL);
	assert_mode("integer)); DROP TABLE x; --", "numeric", VERIFY_SQL_TEXT, NULL);
}

/* A table "Line Items" keyed by ("Order Id", line); amount widened. */
typedef struct fixture {
	verify_sql_column cols[3];
	verify_sql_table t;
	strbuf sql;
} fixture;

static const char *const two_keys[] = {"Order Id", "line"};
static const int two_key_idx[] = {0, 1};
static const int first_col[] = {0};

static int
fixture_setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);

	verify_sql_column_init(&f->cols[0], "Order Id", "integer", "integer");
	verify_sql_column_init(&f->cols[1], "line", "smallint", "smallint");
	verify_sql_column_init(&f->cols[2], "amount", "integer", "numeric(12,2)");
	f->t = (verify_sql_table) {"public", "Line Items", 2, two_keys, two_key_idx, 3, f->cols, false, NULL, NULL};
	*state = f;
	return 0;
}

static int
fixture_teardown(void **state)
{
	fixture *f = *state;

	for (int i = 0; i < 3; i++)
		verify_sql_column_clear(&f->cols[i]);
	strbuf_free(&f->sql);
	free(f);
	return 0;
}

/* A value's text as codec.h spells it, NULL kept NULL */
#define V(e) "CASE WHEN (" e ") IS NULL THEN NULL ELSE concat(" e ") END"

#define HASH_SOURCE                                                                        \
	"coalesce(hashtextextended(" V("\"Order Id\"") ", 1), -1) # coalesce(hashtextextended("  \
	V("\"line\"") ", 2), -2) # coalesce(hashtextextended(" V("\"amount\"::numeric(12,2)") ", 3), -3)"
#define HASH_TARGET                                                                        \
	"coalesce(hashtextextended(" V("\"Order Id\"") ", 1), -1) # coalesce(hashtextextended("  \
	V("\"line\"") ", 2), -2) # coalesce(hashtextextended(" V("\"amount\"") ", 3), -3)"

static void
test_page(void **state)
{
	fixture *f = *state;

	verify_sql_page(&f->sql, &f->t, VERIFY_SQL_SOURCE | VERIFY_SQL_LOWER);
	assert_string_equal(
		f->sql.data,
		"SELECT a.n, a.h, l.* FROM (SELECT count(*) AS n, coalesce(sum(h), 0)::text AS h"
		" FROM (SELECT " HASH_SOURCE " AS h"
		" FROM \"public\".\"Line Items\" t WHERE (\"Order Id\", \"line\") > ($1, $2)"
		" ORDER BY t.\"Order Id\", t.\"line\" LIMIT $3) p) a"
		" LEFT JOIN (SELECT concat(\"Order Id\"), concat(\"line\")"
		" FROM \"public\".\"Line Items\" t WHERE (\"Order Id\", \"line\") > ($1, $2)"
		" ORDER BY t.\"Order Id\", t.\"line\" OFFSET $4 LIMIT 1) l ON true");
	strbuf_reset(&f->sql);
	/* the first page: no bound, the limit is $1 and the offset $2 */
	verify_sql_page(&f->sql, &f->t, VERIFY_SQL_SOURCE | VERIFY_SQL_UPPER);
	assert_non_null(strstr(f->sql.data, "\"Line Items\" t ORDER BY t.\"Order Id\", t.\"line\""
	                                    " LIMIT $1) p) a"));
	assert_non_null(strstr(f->sql.data, "OFFSET $2 LIMIT 1) l ON true"));
}

static void
test_range_sum_both_sides(void **state)
{
	fixture *f = *state;

	verify_sql_range_sum(&f->sql, &f->t, VERIFY_SQL_LOWER | VERIFY_SQL_UPPER);
	assert_string_equal(f->sql.data,
	                    "SELECT count(*), coalesce(sum(" HASH_TARGET "), 0)::text"
	                    " FROM \"public\".\"Line Items\" t WHERE (\"Order Id\", \"line\") > ($1, $2)"
	                    " AND (\"Order Id\", \"line\") <= ($3, $4)");
	strbuf_reset(&f->sql);
	verify_sql_range_sum(&f->sql, &f->t, VERIFY_SQL_SOURCE | VERIFY_SQL_UPPER);
	assert_string_equal(f->sql.data,
	                    "SELECT count(*), coalesce(sum(" HASH_SOURCE "), 0)::text"
	                    " FROM \"public\".\"Line Items\" t WHERE (\"Order Id\", \"line\") <= ($1, $2)");
	strbuf_reset(&f->sql);
	/* plain: every column by its own text, on the source too */
	verify_sql_range_sum(&f->sql, &f->t, VERIFY_SQL_SOURCE | VERIFY_SQL_PLAIN);
	assert_string_equal(f->sql.data, "SELECT count(*), coalesce(sum(" HASH_TARGET "), 0)::text"
	                                 " FROM \"public\".\"Line Items\" t");
}

static void
test_split_rows_lookup(void **state)
{
	fixture *f = *state;

	verify_sql_split(&f->sql, &f->t, VERIFY_SQL_LOWER | VERIFY_SQL_UPPER);
	assert_string_equal(f->sql.data,
	                    "SELECT concat(x.k1), concat(x.k2) FROM (SELECT \"Order Id\" AS k1, \"line\" AS k2,"
	                    " row_number() OVER (ORDER BY t.\"Order Id\", t.\"line\") AS rn"
	                    " FROM \"public\".\"Line Items\" t"
	                    " WHERE (\"Order Id\", \"line\") > ($1, $2) AND (\"Order Id\", \"line\") <= ($3, $4))"
	                    " x WHERE x.rn % $5 = 0 AND x.rn < $6 ORDER BY x.rn");
	strbuf_reset(&f->sql);
	verify_sql_rows(&f->sql, &f->t, VERIFY_SQL_SOURCE | VERIFY_SQL_LOWER);
	assert_string_equal(f->sql.data,
	                    "SELECT concat(\"Order Id\"), concat(\"line\"), " V("\"Order Id\"") ", "
	                    V("\"line\"") ", " V("\"amount\"::numeric(12,2)") " FROM \"public\".\"Line Items\" t"
	                    " WHERE (\"Order Id\", \"line\") > ($1, $2) ORDER BY t.\"Order Id\", t.\"line\"");
	strbuf_reset(&f->sql);
	verify_sql_lookup(&f->sql, &f->t, 0, 2);
	assert_string_equal(f->sql.data,
	                    "SELECT concat(\"Order Id\"), concat(\"line\"), " V("\"Order Id\"") ", "
	                    V("\"line\"") ", " V("\"amount\"") " FROM \"public\".\"Line Items\" t"
	                    " WHERE (\"Order Id\", \"line\") IN (($1, $2), ($3, $4))"
	                    " ORDER BY t.\"Order Id\", t.\"line\"");
}

/* Split keys read on the target bound ranges on the source too: a key of
 * another type on the target is read in the source's. */
static void
test_split_keys_in_source_type(void **state)
{
	static const char *const key[] = {"id"};
	verify_sql_column col;
	verify_sql_table t = {"public", "t", 1, key, first_col, 1, &col, false, NULL, NULL};
	strbuf sql = STRBUF_INIT;

	(void) state;
	verify_sql_column_init(&col, "id", "integer", "numeric(12,2)");
	assert_string_equal(col.source_type, "integer");
	verify_sql_split(&sql, &t, VERIFY_SQL_LOWER);
	assert_string_equal(sql.data, "SELECT concat(x.k1::integer) FROM (SELECT \"id\" AS k1,"
	                              " row_number() OVER (ORDER BY t.\"id\") AS rn FROM \"public\".\"t\" t"
	                              " WHERE \"id\" > $1) x WHERE x.rn % $2 = 0 AND x.rn < $3 ORDER BY x.rn");
	strbuf_reset(&sql);
	verify_sql_split(&sql, &t, VERIFY_SQL_SOURCE | VERIFY_SQL_LOWER);
	assert_non_null(strstr(sql.data, "SELECT concat(x.k1) FROM"));
	/* a key of a type compared in its base type (codec.h): a domain over an
	 * enum, a composite */
	{
		static const char *const types[] = {"\"public\".\"mood\""};

		strbuf_reset(&sql);
		t.key_types = types;
		verify_sql_range_sum(&sql, &t, VERIFY_SQL_SOURCE | VERIFY_SQL_LOWER);
		assert_non_null(strstr(sql.data, "WHERE \"id\"::\"public\".\"mood\" >"
		                                 " $1::\"public\".\"mood\""));
		strbuf_reset(&sql);
		verify_sql_lookup(&sql, &t, 0, 2);
		assert_non_null(strstr(sql.data, "WHERE (\"id\"::\"public\".\"mood\") IN"
		                                 " (($1::\"public\".\"mood\"), ($2::\"public\".\"mood\"))"));
		t.key_types = NULL;
	}
	/* an inheritance parent: its own rows only */
	strbuf_reset(&sql);
	t.only = true;
	verify_sql_split(&sql, &t, VERIFY_SQL_SOURCE | VERIFY_SQL_LOWER);
	assert_non_null(strstr(sql.data, " FROM ONLY \"public\".\"t\" t WHERE"));
	strbuf_free(&sql);
	verify_sql_column_clear(&col);
}

/* Parts ending at two keys after the lower bound: three parts, summed in
 * one scan; their keys are the parameters after the bound. */
static void
test_part_sums(void **state)
{
	fixture *f = *state;

	verify_sql_part_sums(&f->sql, &f->t, VERIFY_SQL_SOURCE | VERIFY_SQL_LOWER, 2);
	assert_string_equal(f->sql.data,
	                    "SELECT count(*) FILTER (WHERE p.b = 0), coalesce(sum(p.h) FILTER (WHERE p.b = 0), 0)::text,"
	                    " count(*) FILTER (WHERE p.b = 1), coalesce(sum(p.h) FILTER (WHERE p.b = 1), 0)::text,"
	                    " count(*) FILTER (WHERE p.b = 2), coalesce(sum(p.h) FILTER (WHERE p.b = 2), 0)::text"
	                    " FROM (SELECT CASE WHEN (\"Order Id\", \"line\") <= ($3, $4) THEN 0"
	                    " WHEN (\"Order Id\", \"line\") <= ($5, $6) THEN 1 ELSE 2 END AS b, "
	                    HASH_SOURCE " AS h FROM \"public\".\"Line Items\" t"
	                    " WHERE (\"Order Id\", \"line\") > ($1, $2)) p");
}

/* One key: no row constructors; names that need quoting stay names. */
static void
test_one_key_awkward_names(void **state)
{
	static const char *const key[] = {"x\"; DROP TABLE y; --"};
	verify_sql_column col;
	verify_sql_table t = {"we\"ird", "t", 1, key, first_col, 1, &col, false, NULL, NULL};
	strbuf sql = STRBUF_INIT;

	(void) state;
	verify_sql_column_init(&col, key[0], "bigint", "numeric");
	verify_sql_range_sum(&sql, &t, VERIFY_SQL_SOURCE | VERIFY_SQL_LOWER);
	assert_string_equal(sql.data,
	                    "SELECT count(*), coalesce(sum(coalesce(hashtextextended("
	                    V("\"x\"\"; DROP TABLE y; --\"::numeric") ", 1), -1)), 0)::text"
	                    " FROM \"we\"\"ird\".\"t\" t WHERE \"x\"\"; DROP TABLE y; --\" > $1");
	strbuf_free(&sql);
	verify_sql_column_clear(&col);
}

/* A soft-delete mirror on the target: every statement reads its live rows
 * only, before the bounds; the rows it leaves out are counted apart. */
static void
test_live_rows(void **state)
{
	fixture *f = *state;

	f->t.live_column = "tidemark_deleted_at";
	verify_sql_range_sum(&f->sql, &f->t, VERIFY_SQL_LOWER | VERIFY_SQL_UPPER);
	assert_string_equal(f->sql.data,
	                    "SELECT count(*), coalesce(sum(" HASH_TARGET "), 0)::text"
	                    " FROM \"public\".\"Line Items\" t WHERE t.\"tidemark_deleted_at\" IS NULL"
	                    " AND (\"Order Id\", \"line\") > ($1, $2) AND (\"Order Id\", \"line\") <= ($3, $4)");
	strbuf_reset(&f->sql);
	/* unbounded: the filter alone */
	verify_sql_range_sum(&f->sql, &f->t, 0);
	assert_non_null(strstr(f->sql.data, " FROM \"public\".\"Line Items\" t"
	                                    " WHERE t.\"tidemark_deleted_at\" IS NULL"));
	assert_null(strstr(f->sql.data, " AND "));
	strbuf_reset(&f->sql);
	/* both scans of a page */
	verify_sql_page(&f->sql, &f->t, VERIFY_SQL_UPPER);
	assert_non_null(strstr(f->sql.data, " t WHERE t.\"tidemark_deleted_at\" IS NULL ORDER BY"
	                                    " t.\"Order Id\", t.\"line\" LIMIT $1) p) a"));
	assert_non_null(strstr(f->sql.data, " t WHERE t.\"tidemark_deleted_at\" IS NULL ORDER BY"
	                                    " t.\"Order Id\", t.\"line\" OFFSET $2 LIMIT 1) l ON true"));
	strbuf_reset(&f->sql);
	verify_sql_split(&f->sql, &f->t, VERIFY_SQL_UPPER);
	assert_non_null(strstr(f->sql.data, " t WHERE t.\"tidemark_deleted_at\" IS NULL"
	                                    " AND (\"Order Id\", \"line\") <= ($1, $2)) x WHERE"
	                                    " x.rn % $3 = 0 AND x.rn < $4"));
	strbuf_reset(&f->sql);
	verify_sql_part_sums(&f->sql, &f->t, VERIFY_SQL_LOWER, 1);
	assert_non_null(strstr(f->sql.data, " t WHERE t.\"tidemark_deleted_at\" IS NULL"
	                                    " AND (\"Order Id\", \"line\") > ($1, $2)) p"));
	strbuf_reset(&f->sql);
	verify_sql_rows(&f->sql, &f->t, VERIFY_SQL_LOWER);
	assert_non_null(strstr(f->sql.data, " t WHERE t.\"tidemark_deleted_at\" IS NULL"
	                                    " AND (\"Order Id\", \"line\") > ($1, $2) ORDER BY"));
	strbuf_reset(&f->sql);
	verify_sql_lookup(&f->sql, &f->t, 0, 1);
	assert_non_null(strstr(f->sql.data, " t WHERE t.\"tidemark_deleted_at\" IS NULL"
	                                    " AND (\"Order Id\", \"line\") IN (($1, $2))"
	                                    " ORDER BY t.\"Order Id\", t.\"line\""));
	strbuf_reset(&f->sql);
	verify_sql_marked_count(&f->sql, &f->t);
	assert_string_equal(f->sql.data, "SELECT count(*) FROM \"public\".\"Line Items\" t"
	                                 " WHERE t.\"tidemark_deleted_at\" IS NOT NULL");
	strbuf_reset(&f->sql);
	/* a name that needs quoting stays a name */
	f->t.live_column = "x\" IS NULL OR true; --";
	verify_sql_range_sum(&f->sql, &f->t, 0);
	assert_non_null(strstr(f->sql.data, " WHERE t.\"x\"\" IS NULL OR true; --\" IS NULL"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_column_modes),
		cmocka_unit_test_setup_teardown(test_page, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_range_sum_both_sides, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_split_rows_lookup, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_part_sums, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_live_rows, fixture_setup, fixture_teardown),
		cmocka_unit_test(test_split_keys_in_source_type),
		cmocka_unit_test(test_one_key_awkward_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
