/*
 * test_slot_wal.c: when a replication slot's WAL is at risk (slot_wal.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "slot_wal.h"

#define MB (1024LL * 1024)

static slot_wal
wal(const char *status, long long retained, long long safe, long long keep)
{
	slot_wal s = {true, retained, "", safe, keep};

	strcpy(s.status, status);
	return s;
}

static void
test_at_risk(void **state)
{
	slot_wal s;

	(void) state;
	/* no limit: only 'unreserved' (beyond max_wal_size, the next
	 * checkpoint may remove it; wal_keep_size alone keeps it) */
	s = wal("reserved", 10 * MB, -1, -1);
	assert_false(slot_wal_at_risk(&s));
	s = wal("extended", 9000 * MB, -1, -1);
	assert_false(slot_wal_at_risk(&s));
	s = wal("unreserved", 9000 * MB, -1, -1);
	assert_true(slot_wal_at_risk(&s));
	/* a limit: less than a quarter of it left */
	s = wal("reserved", 10 * MB, 990 * MB, 1024 * MB);
	assert_false(slot_wal_at_risk(&s));
	s = wal("extended", 767 * MB, 257 * MB, 1024 * MB);
	assert_false(slot_wal_at_risk(&s));
	s = wal("extended", 769 * MB, 255 * MB, 1024 * MB);
	assert_true(slot_wal_at_risk(&s));
	s = wal("unreserved", 1100 * MB, 0, 1024 * MB);
	assert_true(slot_wal_at_risk(&s));
	/* gone: invalidated, not at risk; no slot at all */
	s = wal("lost", -1, -1, 1024 * MB);
	assert_false(slot_wal_at_risk(&s));
	s = wal("", -1, -1, -1);
	s.exists = false;
	assert_false(slot_wal_at_risk(&s));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_at_risk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
