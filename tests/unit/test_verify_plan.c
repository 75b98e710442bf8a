/*
 * test_verify_plan.c: the range splitting: equal sums end a range, small
 * ranges and one-sided ranges are read, others are split into parts of the
 * side with more rows, and a live source cannot make it split forever.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verify_plan.h"

static verify_plan_sum
sum(long long rows, const char *hash)
{
	verify_plan_sum s;
	char n[32];

	snprintf(n, sizeof n, "%lld", rows);
	assert_true(verify_plan_sum_read(&s, n, hash));
	return s;
}

static verify_plan_step
next(long long srows, const char *shash, long long trows, const char *thash, int depth)
{
	verify_plan_sum s = sum(srows, shash), t = sum(trows, thash);

	return verify_plan_next(&s, &t, depth, &verify_plan_default_limits);
}

static void
test_sum_read(void **state)
{
	verify_plan_sum s;

	(void) state;
	assert_true(verify_plan_sum_read(&s, "10000", "-22485263909910180479"));
	assert_int_equal(s.rows, 10000);
	assert_string_equal(s.hash, "-22485263909910180479");
	assert_false(verify_plan_sum_read(&s, "-1", "0"));
	assert_false(verify_plan_sum_read(&s, "1", "1.5"));
	assert_false(verify_plan_sum_read(&s, "", "0"));
	assert_false(verify_plan_sum_read(&s, "1", NULL));
	assert_false(verify_plan_sum_read(&s, "1", "-"));
	assert_false(verify_plan_sum_read(&s, "1", "123456789012345678901234567890123456789012345678901"));
}

static void
test_equal_and_fetch(void **state)
{
	verify_plan_step st;

	(void) state;
	assert_int_equal(next(10000, "42", 10000, "42", 0).action, VERIFY_PLAN_EQUAL);
	assert_int_equal(next(0, "0", 0, "0", 0).action, VERIFY_PLAN_EQUAL);
	/* same count, other hash: a changed row */
	assert_int_equal(next(32, "1", 32, "2", 3).action, VERIFY_PLAN_FETCH);
	assert_int_equal(next(31, "1", 32, "2", 3).action, VERIFY_PLAN_FETCH);
	/* one side empty: every row differs, read up to one_sided_rows at once */
	assert_int_equal(next(10000, "5", 0, "0", 0).action, VERIFY_PLAN_FETCH);
	assert_int_equal(next(0, "0", 7000, "5", 0).action, VERIFY_PLAN_FETCH);
	st = next(0, "0", 10001, "5", 0);
	assert_int_equal(st.action, VERIFY_PLAN_SPLIT);
	assert_true(st.split_on_target);
	assert_int_equal(st.part_rows, 626);
	/* too deep: read, whatever the counts */
	assert_int_equal(next(5000, "1", 5000, "2", 64).action, VERIFY_PLAN_FETCH);
}

static void
test_split_side_and_parts(void **state)
{
	verify_plan_limits halves = verify_plan_default_limits;
	verify_plan_sum a = sum(33, "1"), b = sum(40, "2");
	verify_plan_step st;

	(void) state;
	st = next(10000, "1", 10000, "2", 0);
	assert_int_equal(st.action, VERIFY_PLAN_SPLIT);
	assert_false(st.split_on_target);
	assert_int_equal(st.part_rows, 625);   /* 16 parts of 625 */
	st = next(33, "1", 40, "2", 1);
	assert_true(st.split_on_target);
	assert_int_equal(st.part_rows, 3);     /* 14 parts: 13 of 3 target rows, then 1 */
	st = next(33, "1", 30, "2", 1);
	assert_false(st.split_on_target);
	assert_int_equal(st.part_rows, 3);
	/* a fanout of 2: halves */
	halves.fanout = 2;
	st = verify_plan_next(&a, &b, 0, &halves);
	assert_int_equal(st.part_rows, 20);
	a = sum(33, "1");
	b = sum(2, "2");
	halves.leaf_rows = 1;
	st = verify_plan_next(&b, &b, 0, &halves);
	assert_int_equal(st.action, VERIFY_PLAN_EQUAL);
	st = verify_plan_next(&b, &a, 0, &halves);
	assert_int_equal(st.part_rows, 17);
}

/* A page with one changed row: every level cuts the range 16-fold; the
 * rows summed on each side are about 1.07 pages in all. */
static void
test_depth_of_one_difference(void **state)
{
	long long rows = 10000, summed = 0;
	int depth = 0;
	verify_plan_step st;

	(void) state;
	for (;;) {
		st = next(rows, "1", rows, "2", depth);
		if (st.action != VERIFY_PLAN_SPLIT)
			break;
		summed += rows;
		rows = st.part_rows;
		depth++;
	}
	assert_int_equal(st.action, VERIFY_PLAN_FETCH);
	assert_int_equal(rows, 3);
	assert_int_equal(depth, 3);
	assert_int_equal(summed, 10000 + 625 + 40);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sum_read),
		cmocka_unit_test(test_equal_and_fetch),
		cmocka_unit_test(test_split_side_and_parts),
		cmocka_unit_test(test_depth_of_one_difference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
