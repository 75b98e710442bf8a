/*
 * test_sha256.c: SHA-256 against the FIPS 180-4 examples and long inputs
 * fed in uneven pieces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sha256.h"

static void
assert_digest(const uint8_t d[SHA256_LEN], const char *hex)
{
	char got[2 * SHA256_LEN + 1];

	for (int i = 0; i < SHA256_LEN; i++)
		snprintf(got + 2 * i, 3, "%02x", d[i]);
	assert_string_equal(got, hex);
}

static void
test_known_digests(void **state)
{
	uint8_t d[SHA256_LEN];

	(void) state;
	sha256("", 0, d);
	assert_digest(d, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256("abc", 3, d);
	assert_digest(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
	assert_digest(d, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* A million 'a' in pieces of 1 to 97 bytes: block boundaries everywhere. */
static void
test_pieces(void **state)
{
	char *a = malloc(1000000);
	uint8_t all[768], d[SHA256_LEN];
	sha256_ctx c;
	size_t off = 0, step = 1;

	(void) state;
	memset(a, 'a', 1000000);
	sha256_init(&c);
	while (off < 1000000) {
		size_t n = 1000000 - off < step ? 1000000 - off : step;

		sha256_update(&c, a + off, n);
		off += n;
		step = step % 97 + 1;
	}
	sha256_final(&c, d);
	assert_digest(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
	for (int i = 0; i < 768; i++)
		all[i] = (uint8_t) i;
	sha256(all, sizeof all, d);
	assert_digest(d, "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_digests),
		cmocka_unit_test(test_pieces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
