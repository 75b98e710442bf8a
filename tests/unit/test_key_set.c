/*
 * test_key_set.c: the parallel apply's key sets: membership after growth,
 * the meeting of two sets either way round, clearing, and generated sets
 * checked against a sorted array.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "key_set.h"

static uint64_t
h(int table, const char *key)
{
	return key_set_hash(table, key, strlen(key));
}

static void
test_hash_separates_tables_and_keys(void **state)
{
	(void) state;
	assert_true(h(1, "42") != h(2, "42"));
	assert_true(h(1, "42") != h(1, "43"));
	assert_true(h(1, "") != 0);
	assert_true(h(1, "42") == h(1, "42"));
	/* the length counts: a key with an embedded NUL is another key */
	assert_true(key_set_hash(1, "a\0b", 3) != key_set_hash(1, "a", 1));
}

static void
test_membership_through_growth(void **state)
{
	key_set ks = KEY_SET_INIT;
	char key[32];

	(void) state;
	assert_false(key_set_has(&ks, h(1, "x")));
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof key, "%d", i);
		key_set_add(&ks, h(1, key));
		key_set_add(&ks, h(1, key)); /* twice: once in the set */
	}
	assert_int_equal(ks.n, 5000);
	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof key, "%d", i);
		assert_int_equal(key_set_has(&ks, h(1, key)), i < 5000);
	}
	key_set_clear(&ks);
	assert_int_equal(ks.n, 0);
	assert_false(key_set_has(&ks, h(1, "1")));
	key_set_free(&ks);
}

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *) x, b = *(const uint64_t *) y;

	return a < b ? -1 : a > b;
}

/* Random sets against a sorted array of what was added. */
static void
test_generated_against_a_model(void **state)
{
	uint32_t seed = 12345;

	(void) state;
	for (int round = 0; round < 50; round++) {
		key_set a = KEY_SET_INIT;
		uint64_t model[400];
		int n = 0;

		for (int i = 0; i < 200; i++) {
			seed = seed * 1103515245u + 12345u;
			uint64_t k = key_set_hash(round % 3, (const char *) &seed, 2); /* collisions likely */

			key_set_add(&a, k);
			model[n++] = k;
		}
		qsort(model, (size_t) n, sizeof *model, cmp_u64);
		for (int i = 0; i < 50; i++) {
			seed = seed * 1103515245u + 12345u;
			uint64_t k = key_set_hash(round % 3, (const char *) &seed, 2);

			assert_int_equal(key_set_has(&a, k),
			                 bsearch(&k, model, (size_t) n, sizeof *model, cmp_u64) != NULL);
		}
		key_set_free(&a);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_separates_tables_and_keys),
		cmocka_unit_test(test_membership_through_growth),
		cmocka_unit_test(test_generated_against_a_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
