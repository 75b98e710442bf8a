/*
 * Unit tests of the split of a large table into key ranges
 * (src/merge/snap_split.c): when a table is split, into how many ranges, and
 * which candidates become bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "snap_split.h"

#define MB (1024LL * 1024)

static void
test_small_or_one_reader_is_whole(void **state)
{
	(void) state;
	/* one reader: never split, however large */
	assert_int_equal(snap_split_count(10000000, 1000 * MB, 20000, 32 * MB, 1), 1);
	/* under SNAP_SPLIT_MIN_CHUNKS chunks by rows and by bytes */
	assert_int_equal(snap_split_count(100000, 7 * 32 * MB, 20000, 32 * MB, 4), 1);
	/* nothing known: not split */
	assert_int_equal(snap_split_count(-1, 0, 20000, 32 * MB, 4), 1);
}

static void
test_large_split_by_readers(void **state)
{
	(void) state;
	/* 10,000,000 rows of 20,000-row chunks: 500 chunks, capped per reader */
	assert_int_equal(snap_split_count(10000000, 700 * MB, 20000, 32 * MB, 2), 4);
	assert_int_equal(snap_split_count(10000000, 700 * MB, 20000, 32 * MB, 4), 8);
	assert_int_equal(snap_split_count(10000000, 700 * MB, 20000, 32 * MB, 16), 32);
	/* 12 chunks by bytes (rows unknown): 3 ranges of 4 chunks */
	assert_int_equal(snap_split_count(-1, 12 * 32 * MB, 20000, 32 * MB, 4), 3);
	/* the larger of the two estimates counts */
	assert_int_equal(snap_split_count(200000, 1 * MB, 10000, 32 * MB, 3), 5);
}

static void
test_pick_evenly(void **state)
{
	int idx[8];

	(void) state;
	/* 101 histogram bounds, 4 ranges: the quartiles */
	assert_int_equal(snap_split_pick(101, 4, idx), 3);
	assert_int_equal(idx[0], 25);
	assert_int_equal(idx[1], 50);
	assert_int_equal(idx[2], 75);
	/* one range: no bound */
	assert_int_equal(snap_split_pick(101, 1, idx), 0);
	assert_int_equal(snap_split_pick(0, 4, idx), 0);
}

static void
test_pick_few_candidates(void **state)
{
	int idx[8];
	int n;

	(void) state;
	/* two distinct values (a first key column of few values) for 8 ranges:
	 * each candidate at most once, increasing */
	n = snap_split_pick(2, 8, idx);
	assert_int_equal(n, 2);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[1], 1);
	n = snap_split_pick(5, 8, idx);
	for (int i = 1; i < n; i++)
		assert_true(idx[i] > idx[i - 1]);
	assert_true(n <= 5);
	assert_true(idx[n - 1] < 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_or_one_reader_is_whole),
		cmocka_unit_test(test_large_split_by_readers),
		cmocka_unit_test(test_pick_evenly),
		cmocka_unit_test(test_pick_few_candidates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
