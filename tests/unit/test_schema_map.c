/* Unit tests for src/ddl/schema_map.c: a pipeline's source schema ->
 * target schema, and how a setup's request joins the stored mapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "schema_map.h"

static void
test_order_of_rules(void **state)
{
	schema_map m = SCHEMA_MAP_INIT;
	tm_error err;

	(void) state;
	assert_string_equal(schema_map_target(&m, "public"), "public");
	assert_int_equal(schema_map_parse_pair(&m, "billing=app1_billing", &err), 0);
	assert_string_equal(schema_map_target(&m, "billing"), "app1_billing");
	assert_string_equal(schema_map_target(&m, "public"), "public");
	assert_int_equal(schema_map_set_default(&m, "app1", &err), 0);
	/* a pair before --target-schema, which takes every other schema */
	assert_string_equal(schema_map_target(&m, "billing"), "app1_billing");
	assert_string_equal(schema_map_target(&m, "public"), "app1");
	assert_string_equal(schema_map_target(&m, "Sales Data"), "app1");
	schema_map_clear(&m);
}

static void
test_names_refused(void **state)
{
	static const char *const bad[] = {"tidemark", "pg_catalog", "pg_temp", "information_schema",
	                                  "", ("a234567890123456789012345678901234567890123456789012"
	                                       "345678901234")};
	schema_map m = SCHEMA_MAP_INIT;
	tm_error err;

	(void) state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(schema_map_set_default(&m, bad[i], &err), -1);
		assert_non_null(strstr(err.msg, "--target-schema"));
		assert_int_equal(schema_map_add(&m, "public", bad[i], &err), -1);
	}
	assert_null(m.target_schema);
	assert_int_equal(m.n, 0);
	/* 63 bytes is a name; quotes and spaces are part of it */
	assert_int_equal(schema_map_set_default(&m, "a23456789012345678901234567890123456789012345678901"
	                                            "234567890123", &err), 0);
	assert_int_equal(schema_map_add(&m, "x", "\"Odd\" name", &err), 0);
	schema_map_clear(&m);
}

static void
test_pairs_parsed(void **state)
{
	static const char *const bad[] = {"public", "=x", "x=", "a=b=c", ""};
	schema_map m = SCHEMA_MAP_INIT;
	tm_error err;

	(void) state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(schema_map_parse_pair(&m, bad[i], &err), -1);
		assert_non_null(strstr(err.msg, "SOURCE_SCHEMA=TARGET_SCHEMA"));
	}
	assert_int_equal(schema_map_parse_pair(&m, "a=b", &err), 0);
	assert_int_equal(schema_map_parse_pair(&m, "a=b", &err), 0); /* the same again */
	assert_int_equal(m.n, 1);
	assert_int_equal(schema_map_parse_pair(&m, "a=c", &err), -1);
	assert_non_null(strstr(err.msg, "mapped to b and to c"));
	assert_int_equal(schema_map_set_default(&m, "w", &err), 0);
	assert_int_equal(schema_map_set_default(&m, "w", &err), 0);
	assert_int_equal(schema_map_set_default(&m, "v", &err), -1);
	schema_map_clear(&m);
}

static void
test_merge_keeps_what_is_recorded(void **state)
{
	schema_map have = SCHEMA_MAP_INIT, want = SCHEMA_MAP_INIT, want2 = SCHEMA_MAP_INIT;
	tm_error err;

	(void) state;
	/* nothing recorded: the request is taken */
	assert_int_equal(schema_map_set_default(&want, "app2", &err), 0);
	assert_int_equal(schema_map_parse_pair(&want, "audit=app2_audit", &err), 0);
	assert_int_equal(schema_map_merge(&have, &want, &err), 0);
	assert_string_equal(schema_map_target(&have, "public"), "app2");
	assert_string_equal(schema_map_target(&have, "audit"), "app2_audit");
	/* the same again, and a new pair: fine */
	assert_int_equal(schema_map_parse_pair(&want, "ops=app2_ops", &err), 0);
	assert_int_equal(schema_map_merge(&have, &want, &err), 0);
	assert_int_equal(have.n, 2);
	/* a setup without the options keeps the recorded mapping */
	assert_int_equal(schema_map_merge(&have, &want2, &err), 0);
	assert_string_equal(schema_map_target(&have, "public"), "app2");
	/* another target schema for a mapped one: refused, nothing changed */
	assert_int_equal(schema_map_parse_pair(&want2, "audit=elsewhere", &err), 0);
	assert_int_equal(schema_map_merge(&have, &want2, &err), -1);
	assert_non_null(strstr(err.msg, "maps schema audit to app2_audit"));
	assert_string_equal(schema_map_target(&have, "audit"), "app2_audit");
	schema_map_clear(&want2);
	assert_int_equal(schema_map_set_default(&want2, "app3", &err), 0);
	assert_int_equal(schema_map_merge(&have, &want2, &err), -1);
	assert_non_null(strstr(err.msg, "into schema app2"));
	schema_map_clear(&have);
	schema_map_clear(&want);
	schema_map_clear(&want2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_of_rules),
		cmocka_unit_test(test_names_refused),
		cmocka_unit_test(test_pairs_parsed),
		cmocka_unit_test(test_merge_keeps_what_is_recorded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
