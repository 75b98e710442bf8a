/*
 * test_clock.c: the monotonic clock, precise and coarse: one timeline, the
 * coarse reading never ahead of the precise one read after it, and never
 * further behind than a few kernel ticks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"

static void
test_same_timeline(void **state)
{
	(void) state;
	for (int i = 0; i < 1000; i++) {
		double coarse = clock_coarse_s();
		double precise = clock_now_s();

		/* (a coarse reading is the last tick's time: at or before now) */
		assert_true(coarse <= precise + 1e-9);
		assert_true(precise - coarse < 0.05);
	}
}

static void
test_coarse_moves_forward(void **state)
{
	double first = clock_coarse_s(), last = first;
	struct timespec pause = {0, 2 * 1000 * 1000};

	(void) state;
	for (int i = 0; i < 50; i++) {
		double now = clock_coarse_s();

		assert_true(now >= last);
		last = now;
		nanosleep(&pause, NULL);
	}
	/* 100 ms of pauses: the coarse clock went on with them */
	assert_true(last - first > 0.05);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_timeline),
		cmocka_unit_test(test_coarse_moves_forward),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
