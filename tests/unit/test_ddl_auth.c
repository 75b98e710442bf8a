/*
 * test_ddl_auth.c: signed, unsigned and forged DDL capture messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ddl_auth.h"

static const char body[] = "{\"version\": 1, \"kind\": \"ddl\"}";
/* sha256(key || sha256(body)) with key = bytes 0..31, computed elsewhere */
static const char mac[] = "c1022b8072eef9d983e10b62f36d5eec5023f0718310df8d1d600d1a4b928acc";

static void
key_0_31(uint8_t key[32])
{
	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t) i;
}

static void
test_mac(void **state)
{
	uint8_t key[32];
	char out[DDL_AUTH_MAC_HEX + 1];

	(void) state;
	key_0_31(key);
	ddl_auth_mac(key, sizeof key, body, strlen(body), out);
	assert_string_equal(out, mac);
}

static ddl_auth_status
check(const uint8_t *key, const char *content, const char **b, size_t *bl)
{
	return ddl_auth_check(key, 32, content, strlen(content), b, bl);
}

static void
test_check(void **state)
{
	uint8_t key[32], other[32];
	char msg[200];
	const char *b;
	size_t bl;

	(void) state;
	key_0_31(key);
	memset(other, 7, sizeof other);
	snprintf(msg, sizeof msg, "%s %s", mac, body);
	assert_int_equal(check(key, msg, &b, &bl), DDL_AUTH_SIGNED);
	assert_int_equal(bl, strlen(body));
	assert_memory_equal(b, body, bl);
	/* another key, a changed body, a changed MAC */
	assert_int_equal(check(other, msg, &b, &bl), DDL_AUTH_FORGED);
	msg[strlen(msg) - 2] = '2';
	assert_int_equal(check(key, msg, &b, &bl), DDL_AUTH_FORGED);
	snprintf(msg, sizeof msg, "%s %s", mac, body);
	msg[0] = msg[0] == '0' ? '1' : '0';
	assert_int_equal(check(key, msg, &b, &bl), DDL_AUTH_FORGED);
	/* no MAC: the whole content is the body */
	assert_int_equal(check(key, body, &b, &bl), DDL_AUTH_UNSIGNED);
	assert_ptr_equal(b, body);
	assert_int_equal(bl, strlen(body));
	/* not quite the form: too short, upper case, no space, nothing after */
	snprintf(msg, sizeof msg, "%.63s %s", mac, body);
	assert_int_equal(check(key, msg, &b, &bl), DDL_AUTH_UNSIGNED);
	snprintf(msg, sizeof msg, "C%s %s", mac + 1, body);
	assert_int_equal(check(key, msg, &b, &bl), DDL_AUTH_UNSIGNED);
	snprintf(msg, sizeof msg, "%s{}", mac);
	assert_int_equal(check(key, msg, &b, &bl), DDL_AUTH_UNSIGNED);
	snprintf(msg, sizeof msg, "%s", mac);
	assert_int_equal(check(key, msg, &b, &bl), DDL_AUTH_UNSIGNED);
	snprintf(msg, sizeof msg, "%s ", mac);
	assert_int_equal(check(key, msg, &b, &bl), DDL_AUTH_FORGED);
	assert_int_equal(bl, 0);
}

static void
test_key_parse(void **state)
{
	uint8_t key[DDL_AUTH_KEY_MAX];
	char hex[2 * DDL_AUTH_KEY_MAX + 3];

	(void) state;
	assert_int_equal(ddl_auth_key_parse("00ff7Fa0", key, sizeof key), 4);
	assert_int_equal(key[1], 0xff);
	assert_int_equal(key[2], 0x7f);
	assert_int_equal(ddl_auth_key_parse("", key, sizeof key), 0);
	assert_int_equal(ddl_auth_key_parse("abc", key, sizeof key), -1);
	assert_int_equal(ddl_auth_key_parse("zz", key, sizeof key), -1);
	memset(hex, 'a', sizeof hex - 1);
	hex[sizeof hex - 1] = '\0';
	assert_int_equal(ddl_auth_key_parse(hex, key, sizeof key), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mac),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_key_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
