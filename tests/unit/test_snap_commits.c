/*
 * Unit tests of the commit ring (src/merge/snap_commits.c): the race of a
 * commit written before the low watermark yet invisible to the read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "snap_commits.h"

static void
test_missed_before_low(void **state)
{
	snap_commits *c = calloc(1, sizeof *c);
	uint64_t running[] = {1000, ((uint64_t) 1 << 32) + 777};

	(void) state;
	snap_commits_add(c, 500, 0x100);
	snap_commits_add(c, 777, 0x200);      /* committed before the window */
	assert_true(snap_commits_missed(c, running, 2, 0x300));
	/* committed inside the window: the window rule already covers it */
	assert_false(snap_commits_missed(c, running, 2, 0x150));
	/* never committed (still running, or aborted) */
	assert_false(snap_commits_missed(c, running, 1, 0x300));
	assert_false(snap_commits_missed(c, running, 0, 0x300));
	free(c);
}

static void
test_ring_wraps(void **state)
{
	snap_commits *c = calloc(1, sizeof *c);
	uint64_t old[] = {1}, recent[] = {SNAP_COMMITS_SIZE + 5};

	(void) state;
	for (uint32_t x = 1; x <= SNAP_COMMITS_SIZE + 10; x++)
		snap_commits_add(c, x, x);
	assert_int_equal(c->used, SNAP_COMMITS_SIZE);
	assert_false(snap_commits_missed(c, old, 1, (tm_lsn) 1 << 40)); /* forgotten */
	assert_true(snap_commits_missed(c, recent, 1, (tm_lsn) 1 << 40));
	free(c);
}

/* What snapshot.c does: the ring as the low watermark met it is kept with
 * the window, so that any number of commits before the high watermark (a
 * long chunk read under a busy source) leaves the racing one found. */
static void
test_copy_at_low_outlasts_the_ring(void **state)
{
	snap_commits *live = calloc(1, sizeof *live), *at_low = calloc(1, sizeof *at_low);
	uint64_t racing[] = {777};

	(void) state;
	snap_commits_add(live, 777, 0x200); /* committed just before the low watermark */
	*at_low = *live;                    /* the low watermark, at 0x300 */
	for (uint32_t x = 1000; x < 1000 + 2 * SNAP_COMMITS_SIZE; x++)
		snap_commits_add(live, x, 0x400 + x);
	assert_false(snap_commits_missed(live, racing, 1, 0x300)); /* the ring alone forgot it */
	assert_true(snap_commits_missed(at_low, racing, 1, 0x300));
	free(live);
	free(at_low);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missed_before_low),
		cmocka_unit_test(test_ring_wraps),
		cmocka_unit_test(test_copy_at_low_outlasts_the_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
