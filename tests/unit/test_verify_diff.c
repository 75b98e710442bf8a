/*
 * test_verify_diff.c: rows of both sides compared row by row (missing,
 * extra, different values, NULLs, keys spelled differently on each side),
 * differences kept in key order and made unique, and their text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verify_diff.h"

/* Rows of (raw key id, compared id, compared status, compared amount). */
static const int key_idx[] = {0};
static const char *const key_names[] = {"id"};
static const char *const col_names[] = {"id", "status", "amount"};

static void
add(verify_rows *r, const char *raw, const char *id, const char *status, const char *amount)
{
	const char *cells[] = {raw, id, status, amount};

	verify_rows_add(r, cells);
}

static char *
line(const verify_diff *d)
{
	strbuf sb = STRBUF_INIT;

	verify_diff_format(&sb, d, 1, "public.orders", key_names, col_names);
	return strbuf_steal(&sb);
}

static void
assert_line(const verify_diff *d, const char *expected)
{
	char *l = line(d);

	assert_string_equal(l, expected);
	free(l);
}

/* Source rows, target rows and the differences found: one key, three
 * compared columns. */
typedef struct fixture {
	verify_rows s;
	verify_rows t;
	verify_diffs d;
} fixture;

static int
fixture_setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);

	verify_rows_init(&f->s, 1, 3);
	verify_rows_init(&f->t, 1, 3);
	verify_diffs_init(&f->d, 1);
	*state = f;
	return 0;
}

static int
fixture_teardown(void **state)
{
	fixture *f = *state;

	verify_diffs_clear(&f->d);
	verify_rows_clear(&f->s);
	verify_rows_clear(&f->t);
	free(f);
	return 0;
}

static void
test_missing_extra_values(void **state)
{
	fixture *f = *state;
	verify_diffs *d = &f->d;

	add(&f->s, "1", "1", "paid", "5.00");
	add(&f->s, "2", "2", "new", "1.00");    /* missing */
	add(&f->s, "4", "4", "paid", NULL);
	add(&f->s, "5", "5", "new", "2.00");
	add(&f->t, "1", "1", "paid", "5.00");
	add(&f->t, "3", "3", "new", "1.00");    /* extra, before 4 */
	add(&f->t, "4", "4", "new", "0.00");    /* both columns differ, one is NULL */
	add(&f->t, "5", "5", "new", "2.00");
	add(&f->t, "6", "6", "x", "1.00");      /* extra, at the end */
	verify_diff_rows(&f->s, &f->t, key_idx, d);
	assert_int_equal(d->n, 4);
	assert_line(&d->items[0], "public.orders key (id)=(2): missing on the target");
	assert_line(&d->items[1], "public.orders key (id)=(3): extra on the target");
	assert_line(&d->items[2], "public.orders key (id)=(4): values differ: status source 'paid'"
	                          " target 'new', amount source NULL target '0.00'");
	assert_line(&d->items[3], "public.orders key (id)=(6): extra on the target");
	assert_int_equal(d->items[2].nvalues, 2);
	assert_int_equal(d->items[2].values[1].col, 2);
	assert_null(d->items[2].values[1].source);
}

/* Rows match by the compared key text: the source's raw key "5" and the
 * target's "5.00" are the same row when both compare as 5.00. */
static void
test_match_by_compared_key(void **state)
{
	fixture *f = *state;
	verify_diffs *d = &f->d;

	add(&f->s, "5", "5.00", "a", "1");
	add(&f->t, "5.00", "5.00", "a", "1");
	add(&f->t, "7.50", "7.50", "a", "1");
	verify_diff_rows(&f->s, &f->t, key_idx, d);
	assert_int_equal(d->n, 1);
	assert_int_equal(d->items[0].kind, VERIFY_DIFF_EXTRA);
	assert_string_equal(d->items[0].key[0], "7.50");
	verify_diffs_clear(d);
	/* no rows at all, or equal rows: nothing */
	verify_diff_rows(&f->s, &f->s, key_idx, d);
	assert_int_equal(d->n, 0);
	verify_rows_clear(&f->s);
	verify_rows_clear(&f->t);
	verify_diff_rows(&f->s, &f->t, key_idx, d);
	assert_int_equal(d->n, 0);
}

/* Many rows on one side only: all of them, in order. */
static void
test_one_sided(void **state)
{
	fixture *f = *state;
	char k[16];

	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof k, "%d", i);
		add(&f->t, k, k, "s", "1");
	}
	verify_diff_rows(&f->s, &f->t, key_idx, &f->d);
	assert_int_equal(f->d.n, 5000);
	assert_string_equal(f->d.items[4999].key[0], "4999");
	assert_int_equal(f->d.items[4999].kind, VERIFY_DIFF_EXTRA);
}

static void
test_unique(void **state)
{
	fixture *f = *state;
	verify_diffs *d = &f->d;

	add(&f->s, "9", "9", "a", "1");
	add(&f->s, "1", "1", "a", "1");
	verify_diff_rows(&f->s, &f->t, key_idx, d);   /* 9, 1 missing */
	verify_diff_rows(&f->t, &f->s, key_idx, d);   /* 9, 1 extra */
	add(&f->t, "2", "2", "a", "1");
	verify_diff_rows(&f->t, &f->s, key_idx, d);   /* 2 missing, 9, 1 extra */
	assert_int_equal(d->n, 7);
	verify_diffs_unique(d);
	assert_int_equal(d->n, 3);
	assert_string_equal(d->items[0].key[0], "9");
	assert_int_equal(d->items[0].kind, VERIFY_DIFF_MISSING);
	assert_string_equal(d->items[1].key[0], "1");
	assert_string_equal(d->items[2].key[0], "2");
}

static void
test_format_values(void **state)
{
	static const char *const keys2[] = {"\"Order Id\"", "line"};
	char *key[] = {"it's\n7", "3"};
	char long_value[300];
	verify_diff_value v[2] = {{1, "a'b\tc", NULL}, {2, long_value, "x"}};
	verify_diff d = {VERIFY_DIFF_VALUES, key, 2, v};
	strbuf sb = STRBUF_INIT;

	(void) state;
	/* 99 ASCII bytes, then a 2-byte character across the 100-byte limit */
	memset(long_value, 'z', 99);
	strcpy(long_value + 99, "\xc3\xa9tail");
	verify_diff_format(&sb, &d, 2, "public.\"Line Items\"", keys2, col_names);
	assert_string_equal(sb.data, "public.\"Line Items\" key (\"Order Id\", line)=(it's\\n7, 3):"
	                             " values differ: status source 'a''b\\tc' target NULL, amount"
	                             " source 'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
	                             "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz'... target 'x'");
	strbuf_free(&sb);
	assert_string_equal(verify_diff_kind_name(VERIFY_DIFF_MISSING), "missing on the target");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_missing_extra_values, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_match_by_compared_key, fixture_setup,
		                                fixture_teardown),
		cmocka_unit_test_setup_teardown(test_one_sided, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_unique, fixture_setup, fixture_teardown),
		cmocka_unit_test(test_format_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
