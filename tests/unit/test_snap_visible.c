/*
 * Unit tests of snap_visible.c: reading pg_current_snapshot()'s text, and
 * which committed transactions of the stream (32-bit xids) a snapshot saw,
 * across an epoch boundary too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snap_visible.h"

static void
test_parse(void **state)
{
	snap_visible s;

	(void) state;
	assert_true(snap_visible_parse("740:745:740,742", &s));
	assert_int_equal(s.xmin, 740);
	assert_int_equal(s.xmax, 745);
	assert_int_equal(s.nxip, 2);
	assert_int_equal(s.xip[1], 742);
	snap_visible_clear(&s);
	assert_true(snap_visible_parse("800:800:", &s));
	assert_int_equal(s.nxip, 0);
	snap_visible_clear(&s);
	assert_true(snap_visible_parse("4294967300:4294967310:4294967305", &s));
	assert_int_equal(s.xip[0], 4294967305ULL);
	snap_visible_clear(&s);
	assert_false(snap_visible_parse("800:799:", &s));
	assert_false(snap_visible_parse("800", &s));
	assert_false(snap_visible_parse("1:2:3,x", &s));
	assert_false(snap_visible_parse("1:2:3,", &s));
	assert_false(snap_visible_parse("99999999999999999999:1:", &s));
	assert_false(snap_visible_parse(NULL, &s));
	assert_null(s.xip);
}

/* Below xmin: seen. From xmax on: not. Between: seen unless in progress. */
static void
test_rule(void **state)
{
	snap_visible s;

	(void) state;
	assert_true(snap_visible_parse("740:745:740,742", &s));
	assert_true(snap_visible_committed(&s, 739));
	assert_false(snap_visible_committed(&s, 740));
	assert_true(snap_visible_committed(&s, 741));
	assert_false(snap_visible_committed(&s, 742));
	assert_true(snap_visible_committed(&s, 744));
	assert_false(snap_visible_committed(&s, 745));
	assert_false(snap_visible_committed(&s, 900));
	snap_visible_clear(&s);
}

/* The stream's 32 bits against a snapshot in epoch 1, on both sides of
 * the wrap: 0xFFFFFFF0 is just before epoch 1's start, 3 just after. */
static void
test_epochs(void **state)
{
	uint64_t epoch1 = (uint64_t) 1 << 32;
	snap_visible s;

	(void) state;
	assert_int_equal(snap_visible_widen(5, epoch1 + 10), epoch1 + 5);
	assert_int_equal(snap_visible_widen(0xFFFFFFF0u, epoch1 + 10), epoch1 - 16);
	assert_int_equal(snap_visible_widen(3, epoch1 - 5), epoch1 + 3);
	assert_int_equal(snap_visible_widen(7, 10), 7);
	assert_int_equal(snap_visible_widen(0xFFFFFFF0u, 10), 0xFFFFFFF0u);
	/* xmin and xmax straddle the wrap: 0xFFFFFFFA (epoch 0) in progress */
	assert_true(snap_visible_parse("4294967290:4294967302:4294967290,4294967298", &s));
	assert_false(snap_visible_committed(&s, 0xFFFFFFFAu));
	assert_true(snap_visible_committed(&s, 0xFFFFFFFBu));
	assert_true(snap_visible_committed(&s, 0xFFFFFFF0u));
	assert_true(snap_visible_committed(&s, 1));
	assert_false(snap_visible_committed(&s, 2));   /* 2^32 + 2 in progress */
	assert_false(snap_visible_committed(&s, 6));   /* = xmax */
	assert_false(snap_visible_committed(&s, 100)); /* after xmax */
	snap_visible_clear(&s);
}

static void
test_copy(void **state)
{
	snap_visible s, c;

	(void) state;
	assert_true(snap_visible_parse("10:20:11,12,13", &s));
	snap_visible_copy(&c, &s);
	snap_visible_clear(&s);
	assert_int_equal(c.nxip, 3);
	assert_false(snap_visible_committed(&c, 13));
	assert_true(snap_visible_committed(&c, 14));
	snap_visible_clear(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_epochs),
		cmocka_unit_test(test_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
