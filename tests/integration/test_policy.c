/*
 * Schema-change policies kept in the target catalog (src/ddl/policy.h), against
 * real servers: set by setup and `tidemark policy`, used by every run
 * without flags (a restart by hand, another host), overridden by a run's
 * flags for that run only, shown by status, schema and `tidemark policy`.
 * The change they decide: numeric(12,2) to integer, which cannot widen
 * (widen keeps numeric(12,2), follow takes integer, stop stops).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tm_fixture.h"

static tm_env *
amounts(const char *name)
{
	tm_env *e = tm_env_new(name);

	pgtest_exec(e->s, "CREATE TABLE m (id int PRIMARY KEY, amount numeric(12,2));"
	                  "INSERT INTO m SELECT g, g + 0.5 FROM generate_series(1, 100) g");
	return e;
}

static void
narrow(tm_env *e)
{
	pgtest_exec(e->s, "INSERT INTO m VALUES (1000, 7.25)");
	pgtest_exec(e->s, "ALTER TABLE m ALTER COLUMN amount TYPE integer");
	pgtest_exec(e->s, "INSERT INTO m VALUES (1001, 42)");
}

static void
assert_amount_type(tm_env *e, const char *expected)
{
	char *t = pgtest_query_value(e->t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                                   " WHERE attrelid = 'm'::regclass AND attname = 'amount'");

	if (t == NULL || strcmp(t, expected) != 0)
		fail_msg("target m.amount is %s, expected %s", t ? t : "(none)", expected);
	free(t);
}

/* The table's entry in `status --json`: "policy" and "policy_set_by". */
static void
assert_status_policy(tm_env *e, const char *policy, const char *set_by)
{
	char *out = tm_expect(e, 0, "status", "--json", NULL, NULL, NULL);
	json_error_t err;
	json_t *doc = json_loads(strchr(out, '{'), 0, &err), *t;

	if (doc == NULL)
		fail_msg("status --json is not JSON (%s):\n%s", err.text, out);
	t = json_array_get(json_object_get(doc, "tables"), 0);
	assert_string_equal(json_string_value(json_object_get(t, "policy")), policy);
	assert_string_equal(json_string_value(json_object_get(t, "policy_set_by")), set_by);
	json_decref(doc);
	free(out);
}

/* setup --table-policy is kept: a run without any flag follows it, and so
 * does the next one. */
static void
test_setup_policy_used_by_every_run(void **state)
{
	tm_env *e = amounts("setup_policy");
	pgtest_proc *run;
	char *out;

	(void) state;
	free(tm_expect(e, 0, "setup", "--table", "public.m", "--table-policy", "public.m=follow"));
	tm_catch_up(e, 60);
	run = tm_start_run(e, NULL);
	narrow(e);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM m WHERE id = 1001", "1", 60));
	tm_stop_and_catch_up(e, run, 120);
	assert_true(pgtest_wait_value(e->t, "SELECT state FROM tidemark.tables", "streaming", 60));
	tm_catch_up(e, 60);
	assert_amount_type(e, "integer");
	tm_assert_equal(e, "m", "id");
	assert_status_policy(e, "follow", "table");
	out = tm_expect(e, 0, "schema", "public.m", NULL, NULL, NULL);
	assert_non_null(strstr(out, "schema-change policy: follow (set by: table)"));
	free(out);
	/* setup again without the flag keeps it */
	tm_setup_table(e, "m");
	assert_status_policy(e, "follow", "table");
	tm_env_free(e);
}

/* `tidemark policy` sets and lists; a stored stop stops every run; a run's
 * --table-policy overrides it for that run only, and says so. */
static void
test_policy_command_and_override(void **state)
{
	tm_env *e = amounts("policy_cmd");
	pgtest_proc *run;
	json_error_t err;
	json_t *doc;
	char *out;

	(void) state;
	tm_setup_table(e, "m");
	tm_catch_up(e, 60);
	assert_status_policy(e, "widen", "built-in");
	out = tm_expect(e, 0, "policy", "public.m=stop", "--default", "follow", NULL);
	assert_non_null(strstr(out, "default policy: follow"));
	assert_non_null(strstr(out, "(set by: table)"));
	free(out);
	out = tm_expect(e, 0, "policy", "--json", NULL, NULL, NULL);
	doc = json_loads(strchr(out, '{'), 0, &err);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "default"),
	                                                      "policy")), "follow");
	assert_string_equal(json_string_value(json_object_get(
	                        json_array_get(json_object_get(doc, "tables"), 0), "policy")), "stop");
	json_decref(doc);
	free(out);
	/* a run without flags stops at the change, saying how to go on */
	narrow(e);
	out = tm_expect(e, 6, "run", "--until-caught-up", NULL, NULL, NULL);
	assert_non_null(strstr(out, "set by: table"));
	assert_non_null(strstr(out, "tidemark policy 'public.m=widen'"));
	free(out);
	assert_amount_type(e, "numeric(12,2)");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM m WHERE id = 1001"), 0);
	/* this run only: widen */
	run = tm_start_run(e, "--table-policy", "public.m=widen", NULL);
	assert_true(pgtest_proc_wait_output(run, "overrides the policy stored for the table (stop)", 60));
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM m WHERE id = 1001", "1", 60));
	assert_status_policy(e, "widen", "run --table-policy");
	tm_stop_and_catch_up(e, run, 120);
	assert_true(pgtest_wait_value(e->t, "SELECT state FROM tidemark.tables", "streaming", 60));
	assert_amount_type(e, "numeric(12,2)");
	/* the run is over: the stored policy is in force again */
	assert_status_policy(e, "stop", "table");
	free(tm_expect(e, 0, "policy", "public.m=default", NULL, NULL, NULL));
	assert_status_policy(e, "follow", "default");
	tm_catch_up(e, 60);
	/* the same values, whatever the types' spellings (2 and 2.00) */
	tm_assert_multiset_equal(e, "m", "id, trim_scale(amount::numeric)");
	tm_env_free(e);
}

static void
test_policy_errors(void **state)
{
	tm_env *e = amounts("policy_errors");

	(void) state;
	/* a table of no setup, a policy that is none */
	free(tm_expect(e, 2, "setup", "--table", "public.m", "--table-policy", "public.other=stop"));
	free(tm_expect(e, 2, "setup", "--table", "public.m", "--policy", "sideways"));
	tm_setup_table(e, "m");
	free(tm_expect(e, 3, "policy", "public.nope=stop", NULL, NULL, NULL));
	free(tm_expect(e, 2, "policy", "public.m=sideways", NULL, NULL, NULL));
	free(tm_expect(e, 2, "policy", "public.m", NULL, NULL, NULL));
	free(tm_expect(e, 2, "run", "--policy", "sideways", NULL, NULL));
	/* nothing was stored by the failures */
	assert_status_policy(e, "widen", "built-in");
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setup_policy_used_by_every_run),
		cmocka_unit_test(test_policy_command_and_override),
		cmocka_unit_test(test_policy_errors),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
