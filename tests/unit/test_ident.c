/*
 * test_ident.c: names that move something aside on the target.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ident.h"

static void
test_aside_names(void **state)
{
	char out[IDENT_NAME_BYTES + 1];

	(void) state;
	ident_aside_name("orders", 1, out);
	assert_string_equal(out, "orders (dropped)");
	ident_aside_name("orders", 3, out);
	assert_string_equal(out, "orders (dropped 3)");
	ident_aside_label("orders", "set aside", 1, out);
	assert_string_equal(out, "orders (set aside)");
	ident_aside_label("orders", "set aside", 2, out);
	assert_string_equal(out, "orders (set aside 2)");
}

/* A long name is cut so that the whole fits PostgreSQL's 63 bytes, at a
 * character boundary. */
static void
test_aside_long_names(void **state)
{
	char name[80], out[IDENT_NAME_BYTES + 1];

	(void) state;
	memset(name, 'x', 70);
	name[70] = '\0';
	ident_aside_label(name, "set aside", 12, out);
	assert_int_equal(strlen(out), IDENT_NAME_BYTES);
	assert_string_equal(out + IDENT_NAME_BYTES - strlen(" (set aside 12)"), " (set aside 12)");
	/* "é" is two bytes: never cut in the middle */
	for (int i = 0; i < 35; i++)
		memcpy(name + 2 * i, "\xc3\xa9", 2);
	name[70] = '\0';
	ident_aside_label(name, "set aside", 1, out);
	assert_true(strlen(out) <= IDENT_NAME_BYTES);
	assert_int_equal((strlen(out) - strlen(" (set aside)")) % 2, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aside_names),
		cmocka_unit_test(test_aside_long_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
