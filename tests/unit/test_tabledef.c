/*
 * Unit tests of table definitions (src/ddl/tabledef.c): the capture's
 * columns with their type references, collations and generation
 * expressions, the table's types, copies, and the schema version's JSON
 * read back to the same definition.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tabledef.h"
#include "xalloc.h"

static const char *const capture_columns =
	"[{\"attnum\": 1, \"name\": \"id\", \"type\": \"integer\", \"target_type\": \"integer\","
	"  \"type_oid\": 23, \"typmod\": -1, \"type_ref\": null, \"collation\": null,"
	"  \"not_null\": true, \"key\": true, \"generated\": null},"
	" {\"attnum\": 2, \"name\": \"m\", \"type\": \"public.mood\", \"target_type\": \"public.mood\","
	"  \"type_oid\": 16400, \"typmod\": -1, \"type_ref\": 16400, \"collation\": null},"
	" {\"attnum\": 3, \"name\": \"k\", \"type\": \"text\", \"target_type\": \"text\","
	"  \"type_oid\": 25, \"typmod\": -1, \"collation\": {\"schema\": \"public\", \"name\": \"ci\","
	"  \"provider\": \"i\", \"locale\": \"und-u-ks-level2\", \"default\": false,"
	"  \"deterministic\": true, \"version\": \"153.120\"}},"
	" {\"attnum\": 4, \"name\": \"d\", \"type\": \"text\", \"target_type\": \"text\","
	"  \"type_oid\": 25, \"typmod\": -1, \"collation\": {\"schema\": \"pg_catalog\","
	"  \"name\": \"default\", \"provider\": \"c\", \"collate\": \"C\", \"ctype\": \"C\","
	"  \"default\": true}},"
	" {\"attnum\": 6, \"name\": \"g\", \"type\": \"integer\", \"target_type\": \"integer\","
	"  \"type_oid\": 23, \"typmod\": -1, \"generated\": \"(id * 2)\"}]";

static tabledef *
from_capture(void)
{
	json_t *cols = json_loads(capture_columns, 0, NULL);
	json_t *types = json_loads("[{\"oid\": 16400, \"schema\": \"public\", \"name\": \"mood\","
	                           " \"kind\": \"enum\", \"labels\": [{\"oid\": 1, \"label\": \"a\"}]}]",
	                           0, NULL);
	tabledef *t = tabledef_new("public", "t", 99);
	tm_error err;

	assert_int_equal(tabledef_columns_from_json(t, cols, &err), 0);
	assert_int_equal(tabledef_types_from_json(t, types, &err), 0);
	json_decref(cols);
	json_decref(types);
	return t;
}

static void
test_capture_columns(void **state)
{
	tabledef *t = from_capture();

	(void) state;
	assert_int_equal(t->ncols, 5);
	assert_int_equal(t->cols[1].type_ref, 16400);
	assert_null(t->cols[1].collation);
	assert_string_equal(t->cols[2].collation->name, "ci");
	/* a non-default collation is wanted on the target; the default is not written */
	assert_true(t->cols[2].collate);
	assert_false(t->cols[3].collate);
	assert_string_equal(t->cols[4].generated, "(id * 2)");
	assert_false(tabledef_column_streamed(&t->cols[4]));
	assert_true(tabledef_column_streamed(&t->cols[0]));
	assert_int_equal(tabledef_nstored(t), 4);
	assert_int_equal(t->types.n, 1);
	assert_string_equal(t->types.types[0].labels[0].label, "a");
	tabledef_free(t);
}

/* A table of no columns, or of generated ones only, carries none. */
static void
test_no_stored_columns(void **state)
{
	tabledef *t = tabledef_new("public", "e", 16500);

	(void) state;
	assert_int_equal(tabledef_nstored(t), 0);
	tabledef_add_column(t, 1, "g", "integer", 23, -1, false, false)->generated = xstrdup("1");
	assert_int_equal(t->ncols, 1);
	assert_int_equal(tabledef_nstored(t), 0);
	tabledef_add_column(t, 2, "v", "text", 25, -1, false, false);
	assert_int_equal(tabledef_nstored(t), 1);
	tabledef_free(t);
}

/* The schema version's JSON keeps what the target was given. */
static void
test_version_round_trip(void **state)
{
	tabledef *t = from_capture(), *copy, *back;
	json_t *cols;
	tm_error err;

	(void) state;
	tabledef_set_target_type(&t->cols[1], "text");
	tabledef_set_kept_as(&t->cols[1], "kept as text: why");
	t->cols[2].collate = false;
	copy = tabledef_copy(t);
	assert_int_equal(copy->types.n, 1);
	assert_string_equal(copy->cols[1].kept_as, "kept as text: why");
	cols = tabledef_columns_to_json(copy);
	back = tabledef_new("public", "t", 99);
	assert_int_equal(tabledef_columns_from_json(back, cols, &err), 0);
	for (int i = 0; i < t->ncols; i++) {
		const tabledef_column *a = &t->cols[i], *b = &back->cols[i];

		assert_string_equal(a->target_type, b->target_type);
		assert_int_equal(a->type_ref, b->type_ref);
		assert_int_equal(a->collate, b->collate);
		assert_int_equal(a->collation == NULL, b->collation == NULL);
		assert_int_equal(a->generated == NULL, b->generated == NULL);
		assert_int_equal(a->kept_as == NULL, b->kept_as == NULL);
	}
	assert_string_equal(back->cols[2].collation->locale, "und-u-ks-level2");
	tabledef_set_kept_as(&back->cols[1], NULL);
	assert_null(back->cols[1].kept_as);
	json_decref(cols);
	tabledef_free(t);
	tabledef_free(copy);
	tabledef_free(back);
}

static void
test_malformed(void **state)
{
	json_t *bad = json_loads("[{\"attnum\": 1, \"name\": \"a\", \"type\": \"text\","
	                         " \"type_ref\": \"x\"}]", 0, NULL);
	json_t *bad_types = json_loads("[{\"oid\": 1}]", 0, NULL);
	tabledef *t = tabledef_new("public", "t", 1);
	tm_error err;

	(void) state;
	assert_int_equal(tabledef_columns_from_json(t, bad, &err), -1);
	assert_non_null(strstr(err.msg, "type_ref"));
	assert_int_equal(tabledef_types_from_json(t, bad_types, &err), -1);
	assert_non_null(strstr(err.msg, "table definition: a type definition without"));
	json_decref(bad);
	json_decref(bad_types);
	tabledef_free(t);
}

/* A whole table object of the capture: its header's defaults (an older
 * capture sends no persistence), its fields, and an error that names the
 * table when a column cannot be read. */
static void
test_table_object(void **state)
{
	const char *ok = "{\"relid\": 42, \"schema\": \"s\", \"name\": \"t\", \"replident\": \"f\","
	                 " \"persistence\": \"u\", \"columns\": [{\"attnum\": 1, \"name\": \"id\","
	                 " \"type\": \"integer\", \"key\": true}], \"types\": []}";
	const char *old = "{\"relid\": 42, \"schema\": \"s\", \"name\": \"t\", \"columns\": []}";
	const char *bad = "{\"relid\": 42, \"schema\": \"s\", \"name\": \"t\", \"columns\": [{}]}";
	const char *nameless = "{\"relid\": 42, \"schema\": \"s\", \"columns\": []}";
	json_t *o;
	tabledef *t;
	tm_error err;

	(void) state;
	o = json_loads(ok, 0, NULL);
	assert_int_equal(tabledef_from_json(o, &t, &err), 0);
	assert_string_equal(t->schema, "s");
	assert_string_equal(t->name, "t");
	assert_int_equal(t->relid, 42);
	assert_int_equal(t->replident, 'f');
	assert_int_equal(t->persistence, 'u');
	assert_int_equal(t->ncols, 1);
	tabledef_free(t);
	json_decref(o);

	o = json_loads(old, 0, NULL);
	assert_int_equal(tabledef_from_json(o, &t, &err), 0);
	assert_int_equal(t->replident, 'd');
	assert_int_equal(t->persistence, 'p');
	tabledef_free(t);
	json_decref(o);

	o = json_loads(bad, 0, NULL);
	assert_int_equal(tabledef_from_json(o, &t, &err), -1);
	assert_null(t);
	assert_non_null(strstr(err.msg, "s.t: table definition: column 0"));
	json_decref(o);

	o = json_loads(nameless, 0, NULL);
	assert_int_equal(tabledef_from_json(o, &t, &err), -1);
	assert_null(t);
	assert_non_null(strstr(err.msg, "without schema, name or relid"));
	json_decref(o);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_columns),
		cmocka_unit_test(test_no_stored_columns),
		cmocka_unit_test(test_version_round_trip),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_table_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
