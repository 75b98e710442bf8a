/*
 * test_ddl_auth.c: signed, unsigned and forged DDL capture messages, in the
 * old form and the bound one (transaction and seq signed), and binding a
 * message to the transaction it arrives in.
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

/* sha256(key || sha256("v2 4294967302 3 " || body)), computed by the
 * source's own sha256() */
static const char bound_mac[] = "d968ca780c928cf11b9828ff154b79043a2ad2ae421c26552befd6035a09ef71";

static ddl_auth_status
verify(const uint8_t *key, size_t key_len, const char *content, ddl_auth_msg *m)
{
	return ddl_auth_verify(key, key_len, content, strlen(content), m);
}

static void
test_bound(void **state)
{
	uint8_t key[32], other[32];
	char header[DDL_AUTH_HEADER_MAX + 1], msg[300];
	ddl_auth_msg m;
	size_t n;

	(void) state;
	key_0_31(key);
	memset(other, 7, sizeof other);
	n = ddl_auth_bound_header(key, sizeof key, 4294967302ULL, 3, body, strlen(body), header);
	snprintf(msg, sizeof msg, "v2 4294967302 3 %s ", bound_mac);
	assert_string_equal(header, msg);
	assert_int_equal(n, strlen(msg));
	snprintf(msg, sizeof msg, "%s%s", header, body);
	assert_int_equal(verify(key, 32, msg, &m), DDL_AUTH_SIGNED);
	assert_true(m.bound);
	assert_true(m.xid == 4294967302ULL);
	assert_int_equal(m.seq, 3);
	assert_int_equal(m.body_len, strlen(body));
	assert_memory_equal(m.body, body, m.body_len);
	/* the old form's check sees the same body */
	{
		const char *b;
		size_t bl;

		assert_int_equal(ddl_auth_check(key, 32, msg, strlen(msg), &b, &bl), DDL_AUTH_SIGNED);
		assert_ptr_equal(b, m.body);
	}
	/* another key; the xid, the seq or the body changed */
	assert_int_equal(verify(other, 32, msg, &m), DDL_AUTH_FORGED);
	snprintf(msg, sizeof msg, "v2 4294967303 3 %s %s", bound_mac, body);
	assert_int_equal(verify(key, 32, msg, &m), DDL_AUTH_FORGED);
	snprintf(msg, sizeof msg, "v2 4294967302 4 %s %s", bound_mac, body);
	assert_int_equal(verify(key, 32, msg, &m), DDL_AUTH_FORGED);
	snprintf(msg, sizeof msg, "v2 4294967302 3 %s %s ", bound_mac, body);
	assert_int_equal(verify(key, 32, msg, &m), DDL_AUTH_FORGED);
	/* without a key the form is read, not checked */
	assert_int_equal(verify(key, 0, msg, &m), DDL_AUTH_SIGNED);
	assert_true(m.bound);
	/* the old form's MAC moved into the bound form does not check */
	{
		char old[DDL_AUTH_MAC_HEX + 1];

		ddl_auth_mac(key, sizeof key, body, strlen(body), old);
		snprintf(msg, sizeof msg, "v2 4294967302 3 %s %s", old, body);
		assert_int_equal(verify(key, 32, msg, &m), DDL_AUTH_FORGED);
	}
}

/* Anything that starts like the bound form but is not in it is forged. */
static void
test_bound_malformed(void **state)
{
	static const char *const heads[] = {
		"v2 ", "v2  1 ", "v2 1  ", "v2 01 1 ", "v2 1 01 ", "v2 1 0 ", "v2 -1 1 ", "v2 x 1 ",
		"v2 9223372036854775808 1 ", "v2 1 2147483648 ", "v2 1 1", NULL,
	};
	uint8_t key[32];
	char msg[300];
	ddl_auth_msg m;

	(void) state;
	key_0_31(key);
	for (int i = 0; heads[i] != NULL; i++) {
		snprintf(msg, sizeof msg, "%s%s %s", heads[i], bound_mac, body);
		assert_int_equal(verify(key, 32, msg, &m), DDL_AUTH_FORGED);
		assert_int_equal(verify(key, 0, msg, &m), DDL_AUTH_FORGED);
	}
	snprintf(msg, sizeof msg, "v2 1 1 %.63s %s", bound_mac, body);
	assert_int_equal(verify(key, 32, msg, &m), DDL_AUTH_FORGED);
	snprintf(msg, sizeof msg, "v2 9223372036854775807 2147483647 %s %s", bound_mac, body);
	assert_int_equal(verify(key, 32, msg, &m), DDL_AUTH_FORGED);
	assert_int_equal(verify(key, 0, msg, &m), DDL_AUTH_SIGNED);
	assert_int_equal(m.seq, 2147483647);
}

static void
test_widen_xid(void **state)
{
	(void) state;
	/* the same epoch, behind and ahead of near */
	assert_true(ddl_auth_widen_xid(5ULL << 32 | 1000, 900) == (5ULL << 32 | 900));
	assert_true(ddl_auth_widen_xid(5ULL << 32 | 1000, 1100) == (5ULL << 32 | 1100));
	/* across an epoch boundary, both ways */
	assert_true(ddl_auth_widen_xid(5ULL << 32 | 10, 0xfffffff0u) == (4ULL << 32 | 0xfffffff0u));
	assert_true(ddl_auth_widen_xid(4ULL << 32 | 0xfffffff0u, 10) == (5ULL << 32 | 10));
	/* 2^31 - 1 away at most */
	assert_true(ddl_auth_widen_xid(5ULL << 32, 0x7fffffffu) == (5ULL << 32 | 0x7fffffffu));
	assert_true(ddl_auth_widen_xid(5ULL << 32, 0x80000001u) == (4ULL << 32 | 0x80000001u));
	/* the first epoch: nothing before it */
	assert_true(ddl_auth_widen_xid(100, 0xfffffff0u) == 0xfffffff0u);
	assert_true(ddl_auth_widen_xid(100, 50) == 50);
}

static void
test_tx_accept(void **state)
{
	ddl_auth_tx tx = {0};

	(void) state;
	assert_int_equal(ddl_auth_tx_accept(&tx, 77, 1000, 77, 1), DDL_AUTH_BIND_OK);
	assert_int_equal(ddl_auth_tx_accept(&tx, 77, 1000, 77, 3), DDL_AUTH_BIND_OK);
	/* repeated, backwards, another transaction's: refused, the count stays */
	assert_int_equal(ddl_auth_tx_accept(&tx, 77, 1000, 77, 3), DDL_AUTH_BIND_SEQ);
	assert_int_equal(ddl_auth_tx_accept(&tx, 77, 1000, 77, 2), DDL_AUTH_BIND_SEQ);
	assert_int_equal(ddl_auth_tx_accept(&tx, 77, 1000, 76, 9), DDL_AUTH_BIND_OTHER_TX);
	assert_int_equal(ddl_auth_tx_accept(&tx, 77, 1000, 77, 4), DDL_AUTH_BIND_OK);
	/* the next transaction counts again; a message of the last one is a replay */
	assert_int_equal(ddl_auth_tx_accept(&tx, 78, 2000, 77, 5), DDL_AUTH_BIND_OTHER_TX);
	assert_int_equal(ddl_auth_tx_accept(&tx, 78, 2000, 78, 1), DDL_AUTH_BIND_OK);
	/* the same transaction delivered again (another session) counts again */
	assert_int_equal(ddl_auth_tx_accept(&tx, 78, 2500, 78, 1), DDL_AUTH_BIND_OK);
	/* the epoch counts */
	assert_int_equal(ddl_auth_tx_accept(&tx, 1ULL << 32 | 78, 3000, 78, 2), DDL_AUTH_BIND_OTHER_TX);
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
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_bound_malformed),
		cmocka_unit_test(test_widen_xid),
		cmocka_unit_test(test_tx_accept),
		cmocka_unit_test(test_key_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
