/*
 * Unit tests of the casting matrix (src/cast/cast.c): the fixtures under
 * fixtures/cast/ (classify.txt, common.txt, fits.txt, checked against a
 * PostgreSQL 15 server by tests/tools/check_cast_matrix.sh), USING clauses
 * with hostile column names, and values no fixture line can hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cast.h"

#define SEP " | "
#define MAX_FIELDS 4

/* ---- fixture files ---- */

typedef void (*line_fn)(const char *line, int lineno);

/* Calls fn for each line that is neither blank nor a comment; returns
 * how many. */
static int
each_line(const char *name, line_fn fn)
{
	char path[512], line[1024];
	FILE *f;
	int n = 0, lineno = 0;

	snprintf(path, sizeof path, "%s/cast/%s", FIXTURES_DIR, name);
	f = fopen(path, "r");
	if (f == NULL)
		fail_msg("cannot open %s", path);
	while (fgets(line, sizeof line, f) != NULL) {
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		fn(line, lineno);
		n++;
	}
	fclose(f);
	return n;
}

/* Splits at " | " into at most MAX_FIELDS fields (in place). */
static int
split_fields(char *line, char **fields)
{
	int n = 0;

	fields[n++] = line;
	for (char *p = strstr(line, SEP); p != NULL && n < MAX_FIELDS; p = strstr(p, SEP)) {
		*p = '\0';
		p += strlen(SEP);
		fields[n++] = p;
	}
	return n;
}

static void
parse_type(const char *text, sqltype *t, int lineno)
{
	tm_error err;

	if (sqltype_parse(text, t, &err) != 0)
		fail_msg("line %d: %s", lineno, err.msg);
}

static char *
render(const sqltype *t)
{
	strbuf sb = STRBUF_INIT;

	sqltype_render(t, &sb);
	return strbuf_steal(&sb);
}

/* ---- classify.txt ---- */

static const char *const kind_names[] = {"SAME", "WIDEN", "NARROW", "INCOMPATIBLE"};

static const struct {
	const char *name;
	unsigned flag;
} need_names[] = {
	{"timezone", CAST_NEEDS_TIMEZONE},
	{"datestyle", CAST_NEEDS_DATESTYLE},
	{"intervalstyle", CAST_NEEDS_INTERVALSTYLE},
	{"float_digits", CAST_NEEDS_FLOAT_DIGITS},
	{"bytea_output", CAST_NEEDS_BYTEA_OUTPUT},
};

static unsigned
parse_needs(const char *text, int lineno)
{
	unsigned needs = 0;
	char buf[128], *save = NULL;

	if (strcmp(text, "none") == 0)
		return 0;
	snprintf(buf, sizeof buf, "%s", text);
	for (char *w = strtok_r(buf, ",", &save); w != NULL; w = strtok_r(NULL, ",", &save)) {
		size_t i = 0;

		while (i < sizeof need_names / sizeof need_names[0] && strcmp(need_names[i].name, w) != 0)
			i++;
		if (i == sizeof need_names / sizeof need_names[0])
			fail_msg("line %d: unknown setting %s", lineno, w);
		needs |= need_names[i].flag;
	}
	return needs;
}

/* A widening is always a direct cast: TYPE to USING "c"::to, never
 * through text. */
static void
check_direct_using(const sqltype *from, const sqltype *to, int lineno)
{
	strbuf got = STRBUF_INIT, prefix = STRBUF_INIT;
	char *to_text = render(to);
	tm_error err;

	assert_int_equal(cast_alter_using(from, to, "c", &got, &err), 0);
	strbuf_appendf(&prefix, "TYPE %s USING \"c\"::", to_text);
	if (strncmp(strbuf_str(&got), strbuf_str(&prefix), prefix.len) != 0 ||
		strncmp(strbuf_str(&got) + prefix.len, "text::", 6) == 0)
		fail_msg("line %d: %s", lineno, strbuf_str(&got));
	free(to_text);
	strbuf_free(&got);
	strbuf_free(&prefix);
}

static void
classify_line(const char *text, int lineno)
{
	char line[1024], *f[MAX_FIELDS];
	sqltype from, to;
	cast_kind got;
	int n;

	snprintf(line, sizeof line, "%s", text);
	n = split_fields(line, f);
	if (n < 3)
		fail_msg("line %d: want from | to | kind", lineno);
	parse_type(f[0], &from, lineno);
	parse_type(f[1], &to, lineno);
	got = cast_classify(&from, &to);
	if (strcmp(kind_names[got], f[2]) != 0)
		fail_msg("line %d: %s -> %s is %s, not %s", lineno, f[0], f[1], kind_names[got], f[2]);
	if (got == CAST_SAME && cast_classify(&to, &from) != CAST_SAME)
		fail_msg("line %d: SAME one way only", lineno);
	if (got == CAST_WIDEN)
		check_direct_using(&from, &to, lineno);
	if (n == 4 && cast_session_needs(&from, &to) != parse_needs(f[3], lineno))
		fail_msg("line %d: session needs 0x%x", lineno, cast_session_needs(&from, &to));
}

static void
test_classify_matrix(void **state)
{
	(void) state;
	assert_true(each_line("classify.txt", classify_line) >= 100);
}

/* ---- common.txt ---- */

static bool
holds(const sqltype *from, const sqltype *to)
{
	cast_kind k = cast_classify(from, to);

	return k == CAST_SAME || k == CAST_WIDEN;
}

static void
common_line(const char *text, int lineno)
{
	char line[1024], *f[MAX_FIELDS], *got;
	sqltype a, b, out;
	tm_error err;

	snprintf(line, sizeof line, "%s", text);
	if (split_fields(line, f) != 3)
		fail_msg("line %d: want a | b | common", lineno);
	parse_type(f[0], &a, lineno);
	parse_type(f[1], &b, lineno);
	if (cast_common_type(&a, &b, &out, &err) != 0)
		fail_msg("line %d: %s", lineno, err.msg);
	got = render(&out);
	if (strcmp(got, f[2]) != 0)
		fail_msg("line %d: %s + %s gives %s, not %s", lineno, f[0], f[1], got, f[2]);
	if (strcmp(out.name, "text") != 0 && !(holds(&a, &out) && holds(&b, &out)))
		fail_msg("line %d: %s does not hold both", lineno, got);
	free(got);
}

static void
test_common_matrix(void **state)
{
	(void) state;
	assert_true(each_line("common.txt", common_line) >= 40);
}

/* ---- fits.txt ---- */

static void
fits_line(const char *line, int lineno)
{
	const char *first = strstr(line, SEP), *last = NULL;
	char type[256], reason[256];
	sqltype t;
	bool want, got;

	for (const char *p = first; p != NULL; p = strstr(p + 1, SEP))
		last = p;
	if (first == NULL || last == first)
		fail_msg("line %d: want type | value | yes/no/strict", lineno);
	snprintf(type, sizeof type, "%.*s", (int) (first - line), line);
	parse_type(type, &t, lineno);
	want = strcmp(last + strlen(SEP), "yes") == 0;
	if (!want && strcmp(last + strlen(SEP), "no") != 0 && strcmp(last + strlen(SEP), "strict") != 0)
		fail_msg("line %d: want yes, no or strict", lineno);
	first += strlen(SEP);
	got = cast_value_fits(&t, first, (size_t) (last - first), reason, sizeof reason);
	if (got != want)
		fail_msg("line %d: %s '%.*s' %s (%s)", lineno, type, (int) (last - first), first,
		         got ? "fits" : "does not fit", reason);
	if (!got && reason[0] == '\0')
		fail_msg("line %d: no reason given", lineno);
}

static void
test_fits_matrix(void **state)
{
	(void) state;
	assert_true(each_line("fits.txt", fits_line) >= 150);
}

/* ---- values a fixture line cannot hold ---- */

static bool
fits(const char *type, const char *value, size_t len)
{
	sqltype t;
	tm_error err;

	assert_int_equal(sqltype_parse(type, &t, &err), 0);
	return cast_value_fits(&t, value, len, NULL, 0);
}

static void
test_fits_bytes(void **state)
{
	(void) state;
	assert_false(fits("text", "a\0b", 3));                   /* NUL */
	assert_false(fits("text", "\xff", 1));                   /* not UTF-8 */
	assert_false(fits("text", "\xc0\x80", 2));               /* overlong */
	assert_false(fits("text", "\xe6\x97", 2));               /* cut short */
	assert_true(fits("character varying(1)", "\xf0\x9f\x98\x80", 4)); /* one character */
	assert_true(fits("integer", "12x", 2));                  /* only len bytes are read */
	assert_true(fits("character varying(2)", "abc", 2));
	assert_false(fits("integer[]", "{1,\"2", 5));            /* unterminated quote */
	assert_true(fits("text[]", "{\"a\\\\b\"}", 8));
}

static bool
fits_str(const char *type, const char *value)
{
	return fits(type, value, strlen(value));
}

/* Sizes and depths no fixture line shows. */
static void
test_fits_limits(void **state)
{
	size_t n = 200000;
	char *big = malloc(n + 1);

	(void) state;
	assert_true(fits_str("integer[]", "{{{{{{1}}}}}}"));
	assert_false(fits_str("integer[]", "{{{{{{{1}}}}}}}"));
	assert_false(fits_str("integer[]", "{\"a\\"));
	memset(big, '9', n);
	big[n] = '\0';
	assert_false(fits_str("numeric", big));           /* 200000 digits before the point */
	assert_false(fits_str("double precision", big));  /* more digits than a double keeps */
	assert_false(fits_str("bigint", big));
	assert_true(fits_str("text", big));
	assert_false(fits_str("character varying(199999)", big));
	big[0] = '{';
	big[n - 1] = '}';
	assert_false(fits_str("integer[]", big));         /* one element, out of range */
	memset(big + 1, ',', n - 2);
	assert_false(fits_str("integer[]", big));         /* empty elements */
	free(big);
}

static void
test_reason_buffer(void **state)
{
	sqltype t;
	tm_error err;
	char small[8] = "xxxxxxx";

	(void) state;
	assert_int_equal(sqltype_parse("integer", &t, &err), 0);
	assert_false(cast_value_fits(&t, "x", 1, small, sizeof small));
	assert_int_equal(strlen(small), sizeof small - 1);
	assert_false(cast_value_fits(&t, "x", 1, small, 0));
	assert_true(cast_value_fits(&t, "1", 1, small, sizeof small));
	assert_string_equal(small, "");
}

static void
test_fits_from(void **state)
{
	sqltype json, jsonb, mood;
	tm_error err;
	char reason[128];

	(void) state;
	assert_int_equal(sqltype_parse("json", &json, &err), 0);
	assert_int_equal(sqltype_parse("jsonb", &jsonb, &err), 0);
	assert_int_equal(sqltype_parse("public.mood", &mood, &err), 0);
	assert_true(cast_value_fits_from(&json, &json, "{", 1, reason, sizeof reason));
	assert_true(cast_value_fits_from(&jsonb, &json, "{}", 2, reason, sizeof reason));
	assert_false(cast_value_fits_from(&json, &jsonb, "{}", 2, reason, sizeof reason));
	assert_non_null(strstr(reason, "not checked"));
	assert_true(cast_value_fits_from(&mood, &mood, "sad", 3, reason, sizeof reason));
	assert_false(cast_value_fits(&mood, "sad", 3, reason, sizeof reason));
}

/* ---- cast_alter_using ---- */

/* The column as a quoted identifier, quotes doubled, built here
 * independently of strbuf_append_ident. */
static void
quote_column(const char *name, strbuf *out)
{
	strbuf_appendc(out, '"');
	for (const char *p = name; *p; p++) {
		if (*p == '"')
			strbuf_appendc(out, '"');
		strbuf_appendc(out, *p);
	}
	strbuf_appendc(out, '"');
}

/* cast_alter_using(from, to, column) is TYPE to USING "column"::cast. */
static void
expect_using(const char *from_text, const char *to_text, const char *column, const char *cast)
{
	sqltype from, to;
	tm_error err;
	strbuf got = STRBUF_INIT, want = STRBUF_INIT;

	assert_int_equal(sqltype_parse(from_text, &from, &err), 0);
	assert_int_equal(sqltype_parse(to_text, &to, &err), 0);
	assert_int_equal(cast_alter_using(&from, &to, column, &got, &err), 0);
	strbuf_appendf(&want, "TYPE %s USING ", to_text);
	quote_column(column, &want);
	strbuf_appendf(&want, "::%s", cast);
	assert_string_equal(strbuf_str(&got), strbuf_str(&want));
	strbuf_free(&got);
	strbuf_free(&want);
}

/* The cast names the type without modifiers: the ALTER applies them as an
 * assignment, which fails on a value too long where an explicit cast to
 * varchar(n), character(n) or bit(n) would cut or pad it. */
static void
test_using_forms(void **state)
{
	(void) state;
	expect_using("integer", "numeric(12,2)", "total", "numeric");
	expect_using("numeric(12,2)", "integer", "total", "integer");
	expect_using("text", "integer", "c", "integer");
	expect_using("integer[]", "text", "c", "text");
	expect_using("text", "integer[]", "c", "integer[]");
	expect_using("character varying(3)[]", "integer[]", "c", "integer[]");
	expect_using("integer[]", "character varying(3)[]", "c", "character varying[]");
	expect_using("timestamp without time zone", "timestamp(3) with time zone", "at",
	             "timestamp with time zone");
	expect_using("character varying(10)", "character varying(20)", "c", "character varying");
	expect_using("text", "character(3)", "c", "bpchar");
	expect_using("text", "character", "c", "bpchar");
	expect_using("bit varying(5)", "bit(5)", "c", "bit varying");
	expect_using("interval", "interval day to second(3)", "c", "interval");
	expect_using("uuid", "integer", "c", "text::integer");
	expect_using("boolean", "integer", "c", "text::integer");
	expect_using("jsonb", "integer", "c", "text::integer");
	expect_using("uuid[]", "integer[]", "c", "text::integer[]");
	expect_using("integer[]", "integer", "c", "text::integer");
	expect_using("public.mood", "public.color", "c", "text::public.color");
	expect_using("public.vec(3)", "public.vec(5)", "c", "public.vec");
	expect_using("\"My Type\"", "text", "c", "text");
	expect_using("text", "\"My Type\"[]", "c", "\"My Type\"[]");
}

/* Whatever the column is called, it stays one quoted identifier. */
static void
test_using_hostile_columns(void **state)
{
	static const char *const names[] = {
		"x\"; DROP TABLE y; --", "\"", "\"\"", "a b", "Total", "select", "x::text",
		"caf\xc3\xa9", "--", "x\" USING 1; --",
	};

	(void) state;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		expect_using("integer", "bigint", names[i], "bigint");
		expect_using("uuid", "character varying(5)", names[i], "character varying");
		expect_using("uuid", "integer", names[i], "text::integer");
	}
}

static void
test_using_refuses(void **state)
{
	sqltype from, to, bad;
	tm_error err;
	strbuf sb = STRBUF_INIT;

	(void) state;
	assert_int_equal(sqltype_parse("integer", &from, &err), 0);
	assert_int_equal(sqltype_parse("bigint", &to, &err), 0);
	assert_int_equal(cast_alter_using(&from, &to, "", &sb, &err), -1);
	assert_int_equal(cast_alter_using(&from, &to, NULL, &sb, &err), -1);
	/* a name that never came out of sqltype_parse */
	bad = to;
	snprintf(bad.name, sizeof bad.name, "int; DROP TABLE y");
	assert_int_equal(cast_alter_using(&from, &bad, "c", &sb, &err), -1);
	bad = to;
	snprintf(bad.schema, sizeof bad.schema, "x.y");
	assert_int_equal(cast_alter_using(&from, &bad, "c", &sb, &err), -1);
	assert_int_equal(sqltype_parse("interval", &bad, &err), 0);
	snprintf(bad.fields, sizeof bad.fields, "day; --");
	assert_int_equal(cast_alter_using(&from, &bad, "c", &sb, &err), -1);
	assert_int_equal(sqltype_parse("numeric(0,0)", &bad, &err), 0);
	assert_int_equal(cast_alter_using(&from, &bad, "c", &sb, &err), -1);
	assert_int_equal(sb.len, 0);
	strbuf_free(&sb);
}

static void
test_common_refuses(void **state)
{
	sqltype a, b, out;
	tm_error err;

	(void) state;
	assert_int_equal(sqltype_parse("integer", &a, &err), 0);
	assert_int_equal(sqltype_parse("numeric(1001,0)", &b, &err), 0);
	assert_int_equal(cast_common_type(&a, &b, &out, &err), -1);
	assert_non_null(strstr(err.msg, "numeric"));
	assert_int_equal(sqltype_parse("character varying(0)", &b, &err), 0);
	assert_int_equal(cast_common_type(&b, &a, &out, &err), -1);
	memset(&b, 0, sizeof b);
	assert_int_equal(cast_common_type(&a, &b, &out, &err), -1);
}

static bool
faithful(const char *from, const char *to)
{
	sqltype f, t;
	tm_error err;

	assert_int_equal(sqltype_parse(from, &f, &err), 0);
	assert_int_equal(sqltype_parse(to, &t, &err), 0);
	return cast_faithful(&f, &t);
}

/* A widening that keeps only the values' text is not faithful. */
static void
test_faithful(void **state)
{
	static const char *const yes[][2] = {
		{"integer", "bigint"}, {"integer", "numeric(12,2)"}, {"real", "double precision"},
		{"character varying(10)", "text"}, {"character(3)", "text"},
		{"date", "timestamp without time zone"},
		{"timestamp without time zone", "timestamp with time zone"}, {"cidr", "inet"},
		{"integer[]", "bigint[]"}, {"public.mood", "public.mood"}, {"jsonb", "jsonb"},
	};
	static const char *const no[][2] = {
		{"integer", "text"}, {"uuid", "text"}, {"jsonb", "json"}, {"json", "jsonb"},
		{"integer[]", "text"}, {"public.mood", "text"}, {"text", "public.mood"},
		{"character varying(20)", "public.citext"}, {"bigint", "integer"},
		{"timestamp with time zone", "timestamp without time zone"}, {"boolean", "integer"},
		{"date", "character varying(20)"},
	};

	(void) state;
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		if (!faithful(yes[i][0], yes[i][1]))
			fail_msg("%s -> %s should be faithful", yes[i][0], yes[i][1]);
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		if (faithful(no[i][0], no[i][1]))
			fail_msg("%s -> %s should not be faithful", no[i][0], no[i][1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_matrix),
		cmocka_unit_test(test_common_matrix),
		cmocka_unit_test(test_fits_matrix),
		cmocka_unit_test(test_fits_bytes),
		cmocka_unit_test(test_fits_limits),
		cmocka_unit_test(test_reason_buffer),
		cmocka_unit_test(test_fits_from),
		cmocka_unit_test(test_using_forms),
		cmocka_unit_test(test_using_hostile_columns),
		cmocka_unit_test(test_using_refuses),
		cmocka_unit_test(test_common_refuses),
		cmocka_unit_test(test_faithful),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
