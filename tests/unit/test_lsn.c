/*
 * test_lsn.c: parsing and formatting log sequence numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lsn.h"

static void
assert_parses(const char *text, tm_lsn expected)
{
	tm_lsn lsn = 12345;

	if (!lsn_parse(text, &lsn))
		fail_msg("lsn_parse rejected \"%s\"", text);
	assert_int_equal(lsn, expected);
}

static void
test_parse_valid(void **state)
{
	(void) state;
	assert_parses("0/0", 0);
	assert_parses("0/1", 1);
	assert_parses("1/0", UINT64_C(1) << 32);
	assert_parses("16/B374D848", UINT64_C(0x16B374D848));
	assert_parses("16/b374d848", UINT64_C(0x16B374D848));
	assert_parses("FFFFFFFF/FFFFFFFF", UINT64_MAX);
	assert_parses("00000001/00000002", UINT64_C(0x100000002));
}

static void
test_parse_invalid(void **state)
{
	static const char *const bad[] = {
		"", "/", "0", "0/", "/0", "0//0", "0/0/0", " 0/0", "0/0 ", "0 /0",
		"-1/0", "+1/0", "0x1/0", "G/0", "0/G", "100000000/0", "0/100000000",
		"000000001/0", "1/2\n", "1\0/2",
	};
	tm_lsn lsn = 777;

	(void) state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (lsn_parse(bad[i], &lsn))
			fail_msg("lsn_parse accepted \"%s\"", bad[i]);
		assert_int_equal(lsn, 777);    /* left alone */
	}
	assert_false(lsn_parse(NULL, &lsn));
	assert_int_equal(lsn, 777);
}

static void
test_format(void **state)
{
	char buf[LSN_TEXT_MAX];

	(void) state;
	assert_string_equal(lsn_format(0, buf), "0/0");
	assert_string_equal(lsn_format(UINT64_C(0x16B374D848), buf), "16/B374D848");
	assert_string_equal(lsn_format(UINT64_MAX, buf), "FFFFFFFF/FFFFFFFF");
	assert_ptr_equal(lsn_format(1, buf), buf);
}

static void
test_round_trip(void **state)
{
	static const tm_lsn samples[] = {
		0, 1, 0xFFFFFFFF, UINT64_C(0x100000000), UINT64_C(0xDEADBEEF00C0FFEE), UINT64_MAX,
	};
	char buf[LSN_TEXT_MAX];
	tm_lsn back;

	(void) state;
	for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
		assert_true(lsn_parse(lsn_format(samples[i], buf), &back));
		assert_int_equal(back, samples[i]);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
