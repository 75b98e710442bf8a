/*
 * test_resume_check.c: may run resume from the target's position? The
 * start-up comparisons of the target's position with the slot and the
 * source, and the timeline history they read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "resume_check.h"

/* A healthy pair: the slot confirmed 0/500, the target applied 0/600 (not
 * reported yet), the source's WAL at 0/900, one timeline all along. */
static resume_facts
healthy(void)
{
	resume_facts f = {.target = 0x600, .slot_exists = true, .confirmed = 0x500,
	                  .source_end = 0x900, .stored_tli = 1, .source_tli = 1};

	return f;
}

static void
test_healthy_pairs_resume(void **state)
{
	resume_facts f = healthy();

	(void) state;
	assert_int_equal(resume_check(&f), RESUME_OK);
	f.confirmed = f.target; /* everything reported: equal */
	assert_int_equal(resume_check(&f), RESUME_OK);
	f.source_end = f.target; /* the target applied the source's last byte */
	assert_int_equal(resume_check(&f), RESUME_OK);
	f = healthy();
	f.stored_tli = 0; /* a catalog that recorded no timeline yet */
	f.source_tli = 3;
	assert_int_equal(resume_check(&f), RESUME_OK);
}

static void
test_target_behind_the_slot(void **state)
{
	resume_facts f = healthy();

	(void) state;
	f.target = 0x4ff;
	assert_int_equal(resume_check(&f), RESUME_TARGET_BEHIND);
	assert_string_equal(resume_verdict_name(resume_check(&f)), "target_behind");
}

static void
test_source_behind_the_target(void **state)
{
	resume_facts f = healthy();

	(void) state;
	f.source_end = 0x5ff; /* restored: its WAL ends before what the target applied */
	assert_int_equal(resume_check(&f), RESUME_SOURCE_BEHIND);
}

static void
test_timelines(void **state)
{
	resume_facts f = healthy();

	(void) state;
	/* promoted after it had received everything the target applied */
	f.source_tli = 2;
	f.stored_in_history = true;
	f.fork = 0x600;
	assert_int_equal(resume_check(&f), RESUME_OK);
	f.fork = 0x700;
	assert_int_equal(resume_check(&f), RESUME_OK);
	/* promoted before: its new timeline's WAL after 0/5F0 is other WAL */
	f.fork = 0x5f0;
	f.source_end = 0x10000;
	assert_int_equal(resume_check(&f), RESUME_FORKED);
	/* not even an ancestor: another history */
	f.fork = 0x700;
	f.stored_in_history = false;
	assert_int_equal(resume_check(&f), RESUME_FORKED);
}

static void
test_slot_first(void **state)
{
	resume_facts f = healthy();

	(void) state;
	f.target = 0x100; /* also behind */
	f.slot_invalidated = true;
	assert_int_equal(resume_check(&f), RESUME_SLOT_INVALIDATED);
	f.slot_exists = false;
	assert_int_equal(resume_check(&f), RESUME_SLOT_MISSING);
	f = healthy();
	f.target = LSN_INVALID; /* nothing applied yet: any slot position will do */
	assert_int_equal(resume_check(&f), RESUME_FRESH);
	f.slot_exists = false;
	assert_int_equal(resume_check(&f), RESUME_SLOT_MISSING);
}

static void
test_history(void **state)
{
	static const char text[] = "1\t0/3000158\tno recovery target specified\n"
	                           "\n"
	                           "# a comment\n"
	                           "2\t0/5000000\tat restore point \"x\"\n"
	                           "3\t1/A0\tno recovery target specified";
	bool found = true;
	tm_lsn end = 0;
	tm_error err;

	(void) state;
	assert_int_equal(resume_history_end(text, strlen(text), 2, &found, &end, &err), 0);
	assert_true(found);
	assert_int_equal(end, 0x5000000);
	assert_int_equal(resume_history_end(text, strlen(text), 3, &found, &end, &err), 0);
	assert_true(found);
	assert_int_equal(end, UINT64_C(0x1000000A0));
	assert_int_equal(resume_history_end(text, strlen(text), 4, &found, &end, &err), 0);
	assert_false(found);
	assert_int_equal(resume_history_end("", 0, 1, &found, &end, &err), 0);
	assert_false(found);
}

static void
test_history_malformed(void **state)
{
	static const char *const bad[] = {
		"x\t0/1\treason\n", "1\t0/\treason\n", "1\n", "0\t0/1\tr\n", "99999999999\t0/1\tr\n",
		"1 0/1/2 r\n", "1\t0/1",
	};
	bool found;
	tm_lsn end;
	tm_error err;

	(void) state;
	for (size_t i = 0; i + 1 < sizeof bad / sizeof bad[0]; i++)
		if (resume_history_end(bad[i], strlen(bad[i]), 1, &found, &end, &err) == 0)
			fail_msg("accepted \"%s\"", bad[i]);
	/* the last line without its newline is a line all the same */
	assert_int_equal(resume_history_end(bad[6], strlen(bad[6]), 1, &found, &end, &err), 0);
	assert_true(found);
	assert_int_equal(resume_history_end("1\t0/1\0\n", 7, 1, &found, &end, &err), -1);
}

static void
test_upgrade(void **state)
{
	const upgrade_facts kept = {.same_database = true, .tables = 3, .tables_same = 3,
	                            .slot_exists = true, .slot_ours = true,
	                            .confirmed = 0x8000310, .target = 0x1C56858};
	upgrade_facts f;
	char why[160];

	(void) state;
	assert_int_equal(resume_upgrade_check(&kept, why, sizeof why), UPGRADE_SLOT_KEPT);
	f = kept;
	f.target = LSN_INVALID; /* nothing applied yet */
	assert_int_equal(resume_upgrade_check(&f, why, sizeof why), UPGRADE_SLOT_KEPT);
	/* an upgrade from before 17, or a slot lost: copied again */
	f = kept;
	f.slot_exists = false;
	assert_int_equal(resume_upgrade_check(&f, why, sizeof why), UPGRADE_SLOT_LOST);
	f = kept;
	f.slot_invalidated = true;
	assert_int_equal(resume_upgrade_check(&f, why, sizeof why), UPGRADE_SLOT_LOST);
	/* another server, or a dump restored: the oids differ */
	f = kept;
	f.same_database = false;
	assert_int_equal(resume_upgrade_check(&f, why, sizeof why), UPGRADE_NOT_SAME);
	assert_non_null(strstr(why, "database's oid"));
	f = kept;
	f.tables_same = 2;
	assert_int_equal(resume_upgrade_check(&f, why, sizeof why), UPGRADE_NOT_SAME);
	assert_string_equal(why, "1 of its 3 replicated tables have other oids or names there");
	f = kept;
	f.tables = f.tables_same = 0;
	assert_int_equal(resume_upgrade_check(&f, why, sizeof why), UPGRADE_NOT_SAME);
	/* the oids alike, the slot anything but one pg_upgrade made */
	f = kept;
	f.slot_ours = false;
	assert_int_equal(resume_upgrade_check(&f, why, sizeof why), UPGRADE_NOT_SAME);
	f = kept;
	f.confirmed = f.target;
	assert_int_equal(resume_upgrade_check(&f, why, sizeof why), UPGRADE_NOT_SAME);
	assert_non_null(strstr(why, "not past the target's"));
	f.confirmed = f.target - 1;
	assert_int_equal(resume_upgrade_check(&f, why, sizeof why), UPGRADE_NOT_SAME);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_pairs_resume),
		cmocka_unit_test(test_target_behind_the_slot),
		cmocka_unit_test(test_source_behind_the_target),
		cmocka_unit_test(test_timelines),
		cmocka_unit_test(test_slot_first),
		cmocka_unit_test(test_history),
		cmocka_unit_test(test_history_malformed),
		cmocka_unit_test(test_upgrade),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
