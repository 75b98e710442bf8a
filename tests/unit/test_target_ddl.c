/*
 * Unit tests of the target's table statements (src/sink/target_ddl.c):
 * CREATE TABLE with collations (generated columns left for later), the
 * column changes with their COLLATE and GENERATED clauses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "target_ddl.h"

static srctype_collation *
collation(const char *schema, const char *name, bool is_default)
{
	srctype_collation *c = calloc(1, sizeof *c);

	c->schema = strdup(schema);
	c->name = strdup(name);
	c->is_default = is_default;
	c->provider = 'i';
	c->locale = strdup("und");
	return c;
}

static void
test_create_table(void **state)
{
	tabledef *t = tabledef_new("public", "t", 1);
	tabledef_column *c;
	strbuf sql = STRBUF_INIT;
	tm_error err;

	(void) state;
	tabledef_add_column(t, 1, "id", "integer", 23, -1, true, true);
	c = tabledef_add_column(t, 2, "name", "text", 25, -1, false, false);
	c->collation = collation("public", "ci", false);
	c->collate = true;
	c = tabledef_add_column(t, 3, "plain", "text", 25, -1, false, false);
	c->collation = collation("pg_catalog", "default", true);
	c = tabledef_add_column(t, 4, "twice", "integer", 23, -1, false, false);
	c->generated = strdup("(id * 2)");
	c = tabledef_add_column(t, 5, "m", "public.mood", 16400, -1, false, false);
	tabledef_set_target_type(c, "text");
	assert_int_equal(target_ddl_create_table(&sql, "public", "t", t, &err), 0);
	assert_string_equal(strbuf_str(&sql),
	                    "CREATE TABLE IF NOT EXISTS \"public\".\"t\" (\"id\" integer NOT NULL,"
	                    " \"name\" text COLLATE \"public\".\"ci\", \"plain\" text, \"m\" text,"
	                    " PRIMARY KEY (\"id\"))");
	tabledef_free(t);
	strbuf_free(&sql);
}

static void
test_columns(void **state)
{
	strbuf sql = STRBUF_INIT;
	tm_error err;

	(void) state;
	assert_int_equal(target_ddl_add_column(&sql, "s", "t", "c", "text", "public", "ci", "it's",
	                                       &err), 0);
	assert_string_equal(strbuf_str(&sql), "ALTER TABLE \"s\".\"t\" ADD COLUMN \"c\" text COLLATE"
	                                      " \"public\".\"ci\" DEFAULT 'it''s'::text");
	strbuf_reset(&sql);
	assert_int_equal(target_ddl_add_generated(&sql, "s", "t", "g", "bigint", NULL, NULL,
	                                          "qty * 1000", &err), 0);
	assert_string_equal(strbuf_str(&sql), "ALTER TABLE \"s\".\"t\" ADD COLUMN \"g\" bigint"
	                                      " GENERATED ALWAYS AS (qty * 1000) STORED");
	strbuf_reset(&sql);
	assert_int_equal(target_ddl_add_generated(&sql, "s", "t", "g", "bigint", NULL, NULL, "", &err),
	                 -1);
	assert_int_equal(target_ddl_add_generated(&sql, "s", "t", "g", "big int(", NULL, NULL, "1",
	                                          &err), -1);
	assert_int_equal(sql.len, 0);
	target_ddl_drop_expression(&sql, "s", "t", "g");
	assert_string_equal(strbuf_str(&sql), "ALTER TABLE \"s\".\"t\" ALTER COLUMN \"g\" DROP EXPRESSION");
	strbuf_reset(&sql);
	assert_int_equal(target_ddl_set_collation(&sql, "s", "t", "c", "character varying(10)", "s",
	                                          "fr", &err), 0);
	assert_string_equal(strbuf_str(&sql), "ALTER TABLE \"s\".\"t\" ALTER COLUMN \"c\" TYPE"
	                                      " character varying(10) COLLATE \"s\".\"fr\"");
	strbuf_reset(&sql);
	assert_int_equal(target_ddl_set_collation(&sql, "s", "t", "c", "text", NULL, NULL, &err), 0);
	assert_string_equal(strbuf_str(&sql), "ALTER TABLE \"s\".\"t\" ALTER COLUMN \"c\" TYPE text"
	                                      " COLLATE \"default\"");
	strbuf_reset(&sql);
	target_ddl_not_null(&sql, "s", "t", "c", true);
	assert_string_equal(strbuf_str(&sql), "ALTER TABLE \"s\".\"t\" ALTER COLUMN \"c\" SET NOT NULL");
	strbuf_reset(&sql);
	assert_int_equal(target_ddl_alter_type(&sql, "s", "t", "c", "integer", "bigint", &err), 0);
	assert_string_equal(strbuf_str(&sql), "ALTER TABLE \"s\".\"t\" ALTER COLUMN \"c\" TYPE bigint"
	                                      " USING \"c\"::bigint");
	strbuf_free(&sql);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_table),
		cmocka_unit_test(test_columns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
