/*
 * test_lock_holders.c: who keeps a statement waiting, in words
 * (lock_holders.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lock_holders.h"

static char *
described(const lock_holder *h, int n)
{
	static char text[2048];
	strbuf sb = STRBUF_INIT;

	lock_holders_describe(h, n, &sb);
	snprintf(text, sizeof text, "%s", strbuf_str(&sb));
	strbuf_free(&sb);
	return text;
}

static void
test_prepared(void **state)
{
	lock_holder h = {false, 0, "it's p1", "app", NULL, NULL, "2026-12-07 02:23:59+00"};

	(void) state;
	assert_string_equal(described(&h, 1),
	                    "prepared transaction 'it''s p1' (prepared at 2026-12-07 02:23:59+00 by "
	                    "role app). Fix: end that transaction; COMMIT PREPARED 'it''s p1' or "
	                    "ROLLBACK PREPARED 'it''s p1'");
}

static void
test_sessions(void **state)
{
	lock_holder h[] = {
		{false, 4242, NULL, "deploy", "migrate", "idle in transaction", "2026-12-07 01:00:00+00"},
		{true, 77, NULL, "app", "", "active", NULL},
	};
	const char *text;

	(void) state;
	text = described(h, 2);
	assert_string_equal(text, "pid 4242 (role deploy, application \"migrate\", idle in "
	                          "transaction, in its transaction since 2026-12-07 01:00:00+00); "
	                          "pid 77 (role app, active, itself waiting for the lock, ahead of "
	                          "tidemark). Fix: end those transactions; a session's transaction "
	                          "ends with its COMMIT or ROLLBACK, or with the session (SELECT "
	                          "pg_terminate_backend(pid))");
}

static void
test_mixed_and_missing_fields(void **state)
{
	lock_holder h[] = {
		{false, 9, NULL, NULL, NULL, NULL, NULL},
		{false, 0, NULL, NULL, NULL, NULL, NULL},
	};
	const char *text;

	(void) state;
	text = described(h, 2);
	assert_non_null(strstr(text, "pid 9 (state unknown)"));
	assert_non_null(strstr(text, "prepared transaction '' (prepared)"));
	assert_non_null(strstr(text, "COMMIT PREPARED '' or ROLLBACK PREPARED ''"));
	assert_non_null(strstr(text, "pg_terminate_backend(pid)"));
}

static void
test_none(void **state)
{
	(void) state;
	assert_string_equal(described(NULL, 0), "no session holds it any longer");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prepared),
		cmocka_unit_test(test_sessions),
		cmocka_unit_test(test_mixed_and_missing_fields),
		cmocka_unit_test(test_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
