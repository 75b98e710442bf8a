/*
 * Unit tests of src/ddl/ddl_using.c: what a statement text says of how the
 * columns of a table were converted, on texts parsed by ddl_parse (the
 * USING clause's kind and its text, cut from the statement).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ddl_using.h"

static void
using_of(const char *sql, const char *schema, const char *name, const char *old_schema,
         const char *old_name, ddl_using_list *out)
{
	ddl_parse_result pr;
	tm_error err;

	assert_int_equal(ddl_parse_text(sql, &pr, &err), 0);
	ddl_using_for_table(&pr, schema, name, old_schema, old_name, out);
	ddl_parse_result_free(&pr);
}

static void
assert_column(const ddl_using_list *l, const char *column, ddl_using_kind kind, const char *text)
{
	const ddl_using_column *c = ddl_using_find(l, column, NULL);

	if (kind == DDL_USING_UNKNOWN) {
		assert_null(c);
		return;
	}
	if (c == NULL)
		fail_msg("column %s: not found", column);
	if (c->kind != kind)
		fail_msg("column %s: %s, expected %s", column, ddl_using_kind_name(c->kind),
		         ddl_using_kind_name(kind));
	if (text == NULL)
		assert_null(c->text);
	else {
		assert_non_null(c->text);
		assert_string_equal(c->text, text);
	}
}

/* The kinds, and the expression's text as written, cut at its end. */
static void
test_kinds_and_texts(void **state)
{
	ddl_using_list l;

	(void) state;
	using_of("ALTER TABLE public.orders ALTER amount TYPE bigint USING (amount * 100),"
	         " ALTER code TYPE integer USING coalesce(nullif(code, 'x,y'), '0')::int,"
	         " ALTER cents TYPE bigint USING cents::bigint, ALTER plain TYPE text,"
	         " ALTER note TYPE text USING note || $q$;,$q$ /* a, b */ -- c\n;"
	         "ALTER TABLE orders ALTER qty TYPE bigint USING qty", "public", "orders", NULL,
	         NULL, &l);
	assert_int_equal(l.n, 6);
	assert_column(&l, "amount", DDL_USING_EXPR, "amount * 100");
	assert_column(&l, "code", DDL_USING_EXPR, "coalesce(nullif(code, 'x,y'), '0')::int");
	assert_column(&l, "cents", DDL_USING_PLAIN, "cents::bigint");
	assert_column(&l, "plain", DDL_USING_NONE, NULL);
	assert_column(&l, "note", DDL_USING_EXPR, "note || $q$;,$q$");
	assert_column(&l, "qty", DDL_USING_PLAIN, "qty");
	assert_column(&l, "other", DDL_USING_UNKNOWN, NULL);
	ddl_using_list_free(&l);
}

/* The table by its name after the command or before it; an unqualified
 * name matches any schema, a qualified one only its own. */
static void
test_table_matching(void **state)
{
	const char *sql = "ALTER TABLE other.orders ALTER a TYPE bigint USING a * 2;"
	                  "ALTER TABLE old_name ALTER b TYPE bigint USING b * 3;"
	                  "ALTER TABLE old_name RENAME TO orders;"
	                  "ALTER TABLE orders ALTER c TYPE bigint";
	ddl_using_list l;

	(void) state;
	using_of(sql, "public", "orders", "public", "old_name", &l);
	assert_int_equal(l.n, 2);
	assert_column(&l, "a", DDL_USING_UNKNOWN, NULL);
	assert_column(&l, "b", DDL_USING_EXPR, "b * 3");
	assert_column(&l, "c", DDL_USING_NONE, NULL);
	ddl_using_list_free(&l);
	using_of(sql, "other", "orders", NULL, NULL, &l);
	assert_column(&l, "a", DDL_USING_EXPR, "a * 2");
	assert_column(&l, "c", DDL_USING_NONE, NULL);
	ddl_using_list_free(&l);
}

/* A column altered twice keeps the strongest kind; a DO block says
 * nothing; either of a column's names finds it. */
static void
test_strongest_and_opaque(void **state)
{
	ddl_using_list l;

	(void) state;
	using_of("ALTER TABLE t ALTER a TYPE bigint; ALTER TABLE t ALTER a TYPE numeric USING a / 3;"
	         " ALTER TABLE t ALTER a TYPE numeric(20,2) USING a::numeric",
	         "public", "t", NULL, NULL, &l);
	assert_int_equal(l.n, 1);
	assert_column(&l, "a", DDL_USING_EXPR, "a / 3");
	assert_non_null(ddl_using_find(&l, "renamed", "a"));
	assert_null(ddl_using_find(NULL, "a", NULL));
	ddl_using_list_free(&l);
	using_of("DO $$BEGIN EXECUTE 'ALTER TABLE t ALTER a TYPE bigint USING a * 100'; END$$",
	         "public", "t", NULL, NULL, &l);
	assert_int_equal(l.n, 0);
	assert_column(&l, "a", DDL_USING_UNKNOWN, NULL);
	ddl_using_list_free(&l);
	assert_string_equal(ddl_using_kind_name(DDL_USING_PLAIN), "plain");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_and_texts),
		cmocka_unit_test(test_table_matching),
		cmocka_unit_test(test_strongest_and_opaque),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
