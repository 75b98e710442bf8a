/*
 * test_sqltype.c: format_type() spellings parsed into parts and rendered
 * back unchanged; malformed names rejected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sqltype.h"

typedef struct spelling {
	const char *text;
	const char *name;
	int nmods;
	int mod0, mod1;
	const char *fields;
	int ndims;
} spelling;

/* As a PostgreSQL 15 server's format_type() writes them. */
static const spelling spellings[] = {
	{"integer", "integer", 0, 0, 0, "", 0},
	{"numeric(12,2)", "numeric", 2, 12, 2, "", 0},
	{"character varying(20)", "character varying", 1, 20, 0, "", 0},
	{"character varying(20)[]", "character varying", 1, 20, 0, "", 1},
	{"character varying", "character varying", 0, 0, 0, "", 0},
	{"bit varying(5)", "bit varying", 1, 5, 0, "", 0},
	{"character(3)", "character", 1, 3, 0, "", 0},
	{"bpchar", "bpchar", 0, 0, 0, "", 0},
	{"double precision[]", "double precision", 0, 0, 0, "", 1},
	{"timestamp(3) with time zone", "timestamp with time zone", 1, 3, 0, "", 0},
	{"timestamp(3) with time zone[]", "timestamp with time zone", 1, 3, 0, "", 1},
	{"timestamp without time zone", "timestamp without time zone", 0, 0, 0, "", 0},
	{"time(2) with time zone", "time with time zone", 1, 2, 0, "", 0},
	{"interval day to second(3)", "interval", 1, 3, 0, "day to second", 0},
	{"interval year to month", "interval", 0, 0, 0, "year to month", 0},
	{"interval(3)", "interval", 1, 3, 0, "", 0},
	{"integer[][]", "integer", 0, 0, 0, "", 2},
	{"\"char\"", "char", 0, 0, 0, "", 0},
};

static void
test_spellings(void **state)
{
	(void) state;
	for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
		const spelling *s = &spellings[i];
		sqltype t;
		tm_error err;
		strbuf sb = STRBUF_INIT;

		if (sqltype_parse(s->text, &t, &err) != 0)
			fail_msg("%s: %s", s->text, err.msg);
		assert_string_equal(t.name, s->name);
		assert_int_equal(t.nmods, s->nmods);
		if (s->nmods > 0)
			assert_int_equal(t.mods[0], s->mod0);
		if (s->nmods > 1)
			assert_int_equal(t.mods[1], s->mod1);
		assert_string_equal(t.fields, s->fields);
		assert_int_equal(t.ndims, s->ndims);
		assert_true(sqltype_is_wellformed(&t));
		sqltype_render(&t, &sb);
		assert_string_equal(strbuf_str(&sb), s->text);
		strbuf_free(&sb);
	}
}

/* Types built by hand that would not render as one type name. */
static void
test_wellformed(void **state)
{
	sqltype ok, t;
	tm_error err;

	(void) state;
	assert_int_equal(sqltype_parse("public.\"My Type\"", &ok, &err), 0);
	assert_true(sqltype_is_wellformed(&ok));
	t = ok;
	t.quoted = false;
	assert_false(sqltype_is_wellformed(&t));      /* "My Type" unquoted */
	t = ok;
	snprintf(t.schema, sizeof t.schema, "a.b");
	assert_false(sqltype_is_wellformed(&t));
	t = ok;
	snprintf(t.name, sizeof t.name, "character varying");
	t.quoted = false;
	assert_false(sqltype_is_wellformed(&t));      /* a keyword type with a schema */
	t.schema[0] = '\0';
	assert_true(sqltype_is_wellformed(&t));
	snprintf(t.fields, sizeof t.fields, "day; --");
	assert_false(sqltype_is_wellformed(&t));
	t = ok;
	t.name[0] = '\0';
	assert_false(sqltype_is_wellformed(&t));
	t = ok;
	t.nmods = SQLTYPE_MAX_MODS + 1;
	assert_false(sqltype_is_wellformed(&t));
}

/* Interval fields on another type, or a modifier sqltype_parse does not
 * read: they would render as another type, or as none. */
static void
test_wellformed_renders_back(void **state)
{
	sqltype t;
	tm_error err;

	(void) state;
	assert_int_equal(sqltype_parse("interval", &t, &err), 0);
	snprintf(t.fields, sizeof t.fields, "year");
	assert_true(sqltype_is_wellformed(&t));
	assert_int_equal(sqltype_parse("\"4\"", &t, &err), 0);
	snprintf(t.fields, sizeof t.fields, "day to minute");
	assert_false(sqltype_is_wellformed(&t));    /* rendered as "4": fields lost */
	assert_int_equal(sqltype_parse("bit", &t, &err), 0);
	snprintf(t.fields, sizeof t.fields, "day");
	assert_false(sqltype_is_wellformed(&t));    /* rendered as "bit day" */
	assert_int_equal(sqltype_parse("numeric(12,2)", &t, &err), 0);
	t.mods[0] = 2000000;
	assert_false(sqltype_is_wellformed(&t));    /* numeric(2000000,2) does not parse */
}

/* A quoted name that reads like a keyword type stays a quoted name. */
static void
test_quoted_keyword_name(void **state)
{
	sqltype t;
	tm_error err;
	strbuf sb = STRBUF_INIT;

	(void) state;
	assert_int_equal(sqltype_parse("\"character varying\"", &t, &err), 0);
	assert_true(t.quoted);
	sqltype_render(&t, &sb);
	assert_string_equal(strbuf_str(&sb), "\"character varying\"");
	strbuf_free(&sb);
}

/* Plain names that begin with a keyword type's word are names: as schemas
 * ("interval".x unquoted, as a well-formed type renders it), or with a
 * dollar sign. */
static void
test_keyword_prefixed_names(void **state)
{
	static const char *const names[][3] = {
		{"interval.\"x\"", "interval", "x"},
		{"bit.foo(3)", "bit", "foo"},
		{"character.foo", "character", "foo"},
		{"bit$x", "", "bit$x"},
		{"time_of_day", "", "time_of_day"},
	};

	(void) state;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		sqltype t;
		tm_error err;
		strbuf sb = STRBUF_INIT;

		if (sqltype_parse(names[i][0], &t, &err) != 0)
			fail_msg("%s: %s", names[i][0], err.msg);
		assert_string_equal(t.schema, names[i][1]);
		assert_string_equal(t.name, names[i][2]);
		assert_true(sqltype_is_wellformed(&t));
		sqltype_render(&t, &sb);
		assert_string_equal(strbuf_str(&sb), names[i][0]);
		strbuf_free(&sb);
	}
}

/* The built-in types whose values name objects (kept as text on the
 * target), as format_type() spells them, arrays too; not a type of the
 * name elsewhere, nor oid or text. */
static void
test_names_objects(void **state)
{
	static const char *const yes[] = {
		"regclass", "regtype[]", "pg_catalog.regproc", "regprocedure", "regoperator", "regoper",
		"regnamespace", "regrole", "regconfig", "regdictionary", "regcollation", "aclitem[]",
		NULL,
	};
	static const char *const no[] = {
		"oid", "text", "public.regclass", "\"regclass\"", "regclasses", "name", "integer[]", "regclass;", NULL,
	};

	(void) state;
	for (int i = 0; yes[i] != NULL; i++)
		if (!sqltype_names_objects(yes[i]))
			fail_msg("%s: not taken as naming objects", yes[i]);
	for (int i = 0; no[i] != NULL; i++)
		if (sqltype_names_objects(no[i]))
			fail_msg("%s: taken as naming objects", no[i]);
}

static void
test_rejects(void **state)
{
	static const char *const bad[] = {
		"character varying(20", "numeric(12,)", "integer; drop table x", "Integer",
		"\"unterminated", "character varying(20)(3)", "", NULL,
	};

	(void) state;
	for (int i = 0; bad[i] != NULL; i++) {
		sqltype t;
		tm_error err;

		if (sqltype_parse(bad[i], &t, &err) == 0)
			fail_msg("accepted \"%s\"", bad[i]);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spellings),
		cmocka_unit_test(test_quoted_keyword_name),
		cmocka_unit_test(test_wellformed),
		cmocka_unit_test(test_wellformed_renders_back),
		cmocka_unit_test(test_keyword_prefixed_names),
		cmocka_unit_test(test_names_objects),
		cmocka_unit_test(test_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
