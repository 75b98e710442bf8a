/*
 * Unit tests of an existing target table against the source's definition
 * (src/sink/target_fit.c): what keeps it from taking the rows (a column the
 * stream writes missing, a NOT NULL column of its own without a default,
 * no unique index on the key, an identity column GENERATED ALWAYS, a
 * unique index besides the key, a foreign key), what does not (extra
 * nullable columns, a generated source column, a keyless table without an
 * index), and the built-in columns declared with another type.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "target_fit.h"

/* id integer key, v text, g integer generated, m a user type */
static tabledef *
source_table(bool keyed)
{
	tabledef *d = tabledef_new("public", "t", 16384);
	tabledef_column *g, *m;

	tabledef_add_column(d, 1, "id", "integer", 23, -1, true, keyed);
	if (keyed)
		d->cols[0].key_pos = 1;
	tabledef_add_column(d, 2, "v", "text", 25, -1, false, false);
	g = tabledef_add_column(d, 3, "g", "integer", 23, -1, false, false);
	g->generated = strdup("(id * 2)");
	m = tabledef_add_column(d, 4, "m", "public.mood", 16400, -1, false, false);
	m->type_ref = 16400;
	return d;
}

static bool
check(const tabledef *d, const target_fit_column *cols, int n, bool key_index, strbuf *why,
      strbuf *differ)
{
	target_fit_table t = {cols, n, key_index, "", NULL};

	strbuf_reset(why);
	strbuf_reset(differ);
	return target_fit_check(d, &t, why, differ);
}

static void
test_fits(void **state)
{
	tabledef *d = source_table(true);
	/* no g (generated: not streamed), m of another spelling (a user type:
	 * not compared), an extra nullable column and an extra one with a
	 * default */
	const target_fit_column cols[] = {
		{"id", "integer", true, false}, {"v", "text", false, false}, {"m", "mood", false, false},
		{"note", "text", false, false}, {"at", "timestamp with time zone", false, false},
	};
	strbuf why = STRBUF_INIT, differ = STRBUF_INIT;

	(void) state;
	assert_true(check(d, cols, 5, true, &why, &differ));
	assert_int_equal(why.len, 0);
	assert_int_equal(differ.len, 0);
	strbuf_free(&why);
	strbuf_free(&differ);
	tabledef_free(d);
}

static void
test_does_not_fit(void **state)
{
	tabledef *d = source_table(true);
	const target_fit_column cols[] = {
		{"id", "integer", true, false}, {"extra", "integer", true, false}, {"more", "text", true, false},
	};
	strbuf why = STRBUF_INIT, differ = STRBUF_INIT;

	(void) state;
	assert_false(check(d, cols, 3, false, &why, &differ));
	assert_string_equal(why.data,
	                    "It lacks the source's column(s) v, m, which tidemark writes. "
	                    "Its own column(s) extra, more are NOT NULL without a default, so it "
	                    "refuses the source's rows. It has no primary key or unique index on "
	                    "(id), the source's key, which tidemark matches rows by.");
	/* each problem alone */
	assert_false(check(d, (const target_fit_column[]) {{"id", "integer", true, false},
	                                                   {"v", "text", false, false}}, 2, true,
	                   &why, &differ));
	assert_string_equal(why.data, "It lacks the source's column(s) m, which tidemark writes.");
	assert_false(check(d, (const target_fit_column[]) {{"id", "integer", true, false},
	                                                   {"v", "text", false, false},
	                                                   {"m", "mood", false, false}}, 3, false,
	                   &why, &differ));
	assert_non_null(strstr(why.data, "no primary key or unique index on (id)"));
	strbuf_free(&why);
	strbuf_free(&differ);
	tabledef_free(d);
}

static void
test_keyless_needs_no_index(void **state)
{
	tabledef *d = source_table(false);
	const target_fit_column cols[] = {
		{"id", "integer", false, false}, {"v", "text", false, false}, {"m", "mood", false, false},
	};
	strbuf why = STRBUF_INIT, differ = STRBUF_INIT;

	(void) state;
	assert_true(check(d, cols, 3, false, &why, &differ));
	strbuf_free(&why);
	strbuf_free(&differ);
	tabledef_free(d);
}

static void
test_other_types_said(void **state)
{
	tabledef *d = source_table(true);
	const target_fit_column cols[] = {
		{"id", "bigint", true, false}, {"v", "character varying(20)", false, false}, {"m", "text", false, false},
	};
	strbuf why = STRBUF_INIT, differ = STRBUF_INIT;

	(void) state;
	tabledef_set_target_type(&d->cols[1], "text");
	assert_true(check(d, cols, 3, true, &why, &differ));
	assert_string_equal(differ.data, "id (integer on the source, bigint here), "
	                                 "v (text on the source, character varying(20) here)");
	strbuf_free(&why);
	strbuf_free(&differ);
	tabledef_free(d);
}

/* What a schema copied with pg_dump --schema-only brings along. */
static void
test_refuses_orders_the_source_allows(void **state)
{
	tabledef *d = source_table(true);
	const target_fit_column cols[] = {
		{"id", "integer", false, true}, {"v", "text", false, false}, {"m", "mood", false, false},
	};
	target_fit_table t = {cols, 3, true, "t_v_key, t_lower_idx", "t_m_fkey"};
	strbuf why = STRBUF_INIT, differ = STRBUF_INIT;

	(void) state;
	assert_false(target_fit_check(d, &t, &why, &differ));
	assert_string_equal(why.data,
	                    "Its column(s) id are GENERATED ALWAYS AS IDENTITY, which refuses the "
	                    "source's values (ALTER TABLE ... ALTER COLUMN ... SET GENERATED BY "
	                    "DEFAULT takes them). Its unique index(es) t_v_key, t_lower_idx besides "
	                    "the key would refuse rows applied in another order than the source "
	                    "wrote them (values swapped between rows, a copy beside the stream): "
	                    "drop them (the source enforces them). Its "
	                    "foreign key(s) t_m_fkey would refuse rows that are copied and changed "
	                    "table by table: drop them (the source enforces them).");
	strbuf_free(&why);
	strbuf_free(&differ);
	tabledef_free(d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fits),
		cmocka_unit_test(test_does_not_fit),
		cmocka_unit_test(test_keyless_needs_no_index),
		cmocka_unit_test(test_other_types_said),
		cmocka_unit_test(test_refuses_orders_the_source_allows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
