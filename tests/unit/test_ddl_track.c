/*
 * Unit tests of the DDL tracker (src/ddl/ddl_track.c) on the scenarios of
 * fixtures/ddl_track/cases.txt, and of the capture message reader
 * (src/ddl/ddl_event.c) on fixtures/ddl_track/messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ddl_event.h"
#include "ddl_track.h"
#include "cast.h"

typedef struct scenario {
	char name[256];
	tabledef *old;
	ddl_event_table now;
	int ntarget;
	char *tnames[32];
	char *ttypes[32];
	ddl_policy policy;
	bool rewritten;
	bool drop_columns;
	bool converted;
	bool has_using;              /* a statement text was read */
	ddl_using_list using;
	char *settings[5];           /* timezone, datestyle, intervalstyle, float_digits, bytea */
	int nexpect;
	char *expect[32];
} scenario;

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* Splits s at " ; " (in place); returns the number of parts. */
static int
split_parts(char *s, char **parts, int max)
{
	int n = 0;

	while (s != NULL && n < max) {
		char *sep = strstr(s, " ; ");

		if (sep != NULL)
			*sep = '\0';
		parts[n++] = trim(s);
		s = sep ? sep + 3 : NULL;
	}
	return n;
}

/* "attnum|name|type|flags[|missing=v][|default][|gen=EXPR][|oid=N][|ref=N][|coll=S.N]" */
static void
add_column(tabledef *t, ddl_event_column *extra, char *spec)
{
	char *f[8] = {0};
	int n = 0;
	tabledef_column *c;

	for (char *p = spec; p != NULL && n < 8; n++) {
		char *bar = strchr(p, '|');

		if (bar != NULL)
			*bar = '\0';
		f[n] = p;
		p = bar ? bar + 1 : NULL;
	}
	assert_true(n >= 3);
	c = tabledef_add_column(t, atoi(f[0]), f[1], f[2], 0, -1,
	                        f[3] && strstr(f[3], "notnull") != NULL,
	                        f[3] && strstr(f[3], "key") != NULL);
	for (int i = 4; i < n; i++) {
		if (strncmp(f[i], "gen=", 4) == 0)
			c->generated = strdup(f[i] + 4);
		else if (strncmp(f[i], "ref=", 4) == 0)
			c->type_ref = (uint32_t) atol(f[i] + 4);
		else if (strncmp(f[i], "tt=", 3) == 0)
			tabledef_set_target_type(c, f[i] + 3);
		else if (strncmp(f[i], "oid=", 4) == 0)
			c->type_oid = (uint32_t) atol(f[i] + 4);
		else if (strncmp(f[i], "coll=", 5) == 0) {
			char *dot = strchr(f[i] + 5, '.');

			c->collation = calloc(1, sizeof(srctype_collation));
			*dot = '\0';
			c->collation->schema = strdup(f[i] + 5);
			c->collation->name = strdup(dot + 1);
			c->collation->provider = 'i';
			c->collate = true;
		} else if (extra != NULL && strncmp(f[i], "missing=", 8) == 0) {
			extra->has_missing = true;
			extra->missing = strdup(f[i] + 8);
		} else if (extra != NULL && strcmp(f[i], "default") == 0)
			extra->has_default = true;
	}
}

static tabledef *
parse_def(char *line, ddl_event_column **extras)
{
	char *parts[32];
	int n = split_parts(line, parts, 32);
	tabledef *t = tabledef_new("public", "orders", 42);

	if (extras != NULL)
		*extras = calloc(33, sizeof(ddl_event_column));
	for (int i = 0; i < n; i++) {
		if (strncmp(parts[i], "table: ", 7) == 0) {
			char *dot = strchr(parts[i] + 7, '.');

			*dot = '\0';
			free(t->schema);
			free(t->name);
			t->schema = strdup(parts[i] + 7);
			t->name = strdup(dot + 1);
			continue;
		}
		add_column(t, extras ? &(*extras)[t->ncols] : NULL, parts[i]);
	}
	return t;
}

static void
parse_target(scenario *s, char *line)
{
	char *parts[32];
	int n = split_parts(line, parts, 32);

	for (int i = 0; i < n; i++) {
		char *bar = strchr(parts[i], '|');

		*bar = '\0';
		s->tnames[s->ntarget] = strdup(parts[i]);
		s->ttypes[s->ntarget++] = strdup(bar + 1);
	}
}

/* "col=none|plain|expr[=TEXT] ; ..." (the statement's ALTER ... TYPE
 * clauses), or "" for a text without any. */
static void
parse_using(scenario *s, char *line)
{
	char *parts[32];
	int n = *line ? split_parts(line, parts, 32) : 0;

	s->has_using = true;
	for (int i = 0; i < n; i++) {
		char *kind = strchr(parts[i], '='), *text;
		ddl_using_column *c;

		*kind++ = '\0';
		text = strchr(kind, '=');
		if (text != NULL)
			*text++ = '\0';
		s->using.cols = realloc(s->using.cols, sizeof *c * (size_t) (s->using.n + 1));
		c = &s->using.cols[s->using.n++];
		c->column = strdup(parts[i]);
		c->kind = strcmp(kind, "none") == 0    ? DDL_USING_NONE
		          : strcmp(kind, "plain") == 0 ? DDL_USING_PLAIN
		                                       : DDL_USING_EXPR;
		c->text = text ? strdup(text) : NULL;
	}
}

/* "timezone=America/New_York ; datestyle=SQL, DMY ; ...", or "all" for
 * tidemark's own values of all five. */
static void
parse_session(scenario *s, char *line)
{
	static const char *const keys[] = {"timezone", "datestyle", "intervalstyle",
	                                   "extra_float_digits", "bytea_output"};
	static const char *const mine[] = {"UTC", "ISO, YMD", "postgres", "3", "hex"};
	char *parts[8];
	int n = split_parts(line, parts, 8);

	for (int i = 0; i < n; i++)
		for (int k = 0; k < 5; k++) {
			size_t len = strlen(keys[k]);

			if (strcmp(parts[i], "all") == 0)
				s->settings[k] = strdup(mine[k]);
			else if (strncmp(parts[i], keys[k], len) == 0 && parts[i][len] == '=')
				s->settings[k] = strdup(parts[i] + len + 1);
		}
}

static void
describe(const ddl_action *a, strbuf *out)
{
	static const char *const names[] = {
		"rename_table", "set_schema", "rename_column", "alter_type", "drop_column", "keep_column",
		"add_column", "set_not_null", "drop_not_null", "set_key", "resnapshot",
		"add_generated", "drop_expression", "set_collation",
	};

	strbuf_append(out, names[a->kind]);
	switch (a->kind) {
	case DDL_ACT_RENAME_TABLE:
	case DDL_ACT_SET_SCHEMA:
		strbuf_appendf(out, " %s", a->name);
		break;
	case DDL_ACT_RENAME_COLUMN:
		strbuf_appendf(out, " %s -> %s", a->column, a->name);
		break;
	case DDL_ACT_ALTER_TYPE:
		strbuf_appendf(out, " %s %s -> %s", a->column, a->from_type, a->type);
		if (a->settings & CAST_NEEDS_TIMEZONE)
			strbuf_append(out, " under TimeZone");
		if (a->settings & CAST_NEEDS_DATESTYLE)
			strbuf_append(out, " under DateStyle");
		if (a->settings & CAST_NEEDS_INTERVALSTYLE)
			strbuf_append(out, " under IntervalStyle");
		if (a->settings & CAST_NEEDS_FLOAT_DIGITS)
			strbuf_append(out, " under extra_float_digits");
		if (a->settings & CAST_NEEDS_BYTEA_OUTPUT)
			strbuf_append(out, " under bytea_output");
		break;
	case DDL_ACT_RESNAPSHOT:
		if (a->column != NULL)
			strbuf_appendf(out, " %s", a->column);
		break;
	case DDL_ACT_ADD_COLUMN:
		strbuf_appendf(out, " %s %s = %s", a->column, a->type, a->value ? a->value : "NULL");
		if (a->coll_name != NULL)
			strbuf_appendf(out, " collate %s.%s", a->coll_schema, a->coll_name);
		break;
	case DDL_ACT_ADD_GENERATED:
		strbuf_appendf(out, " %s %s AS %s", a->column, a->type, a->value);
		break;
	case DDL_ACT_SET_COLLATION:
		strbuf_appendf(out, " %s %s %s", a->column, a->type,
		               a->coll_name ? a->coll_name : "default");
		break;
	case DDL_ACT_SET_KEY:
		strbuf_append(out, a->nkeys == 0 ? " (no key)" : " ");
		for (int k = 0; k < a->nkeys; k++)
			strbuf_appendf(out, "%s%s", k ? "," : "", a->keys[k]);
		break;
	default:
		strbuf_appendf(out, " %s", a->column);
	}
}

static void
check(scenario *s)
{
	ddl_track_input in = {s->old, &s->now, {s->ntarget, (const char *const *) s->tnames,
	                                        (const char *const *) s->ttypes},
	                      s->policy, s->rewritten, s->drop_columns,
	                      s->has_using ? &s->using : NULL, s->converted,
	                      {s->settings[0], s->settings[1], s->settings[2], s->settings[3],
	                       s->settings[4]}};
	ddl_plan plan;
	tm_error err;
	int n;

	if (ddl_track_plan(&in, &plan, &err) != 0)
		fail_msg("%s: %s", s->name, err.msg);
	n = plan.stop ? 1 : plan.n;
	for (int i = 0; i < (n > s->nexpect ? n : s->nexpect); i++) {
		strbuf got = STRBUF_INIT;

		if (plan.stop)
			strbuf_append(&got, "stop");
		else if (i < plan.n)
			describe(&plan.actions[i], &got);
		if (plan.n == 0 && !plan.stop && i == 0)
			strbuf_append(&got, "nothing");
		if (i >= s->nexpect || strcmp(strbuf_str(&got), s->expect[i]) != 0)
			fail_msg("%s: action %d is \"%s\", expected \"%s\"", s->name, i + 1, strbuf_str(&got),
			         i < s->nexpect ? s->expect[i] : "(none)");
		strbuf_free(&got);
	}
	assert_non_null(plan.summary);
	ddl_plan_free(&plan);
}

static void
scenario_free(scenario *s)
{
	tabledef_free(s->old);
	if (s->now.cols != NULL)
		for (int i = 0; i < s->now.def->ncols; i++)
			free(s->now.cols[i].missing);
	free(s->now.cols);
	tabledef_free(s->now.def);
	for (int i = 0; i < s->ntarget; i++) {
		free(s->tnames[i]);
		free(s->ttypes[i]);
	}
	for (int i = 0; i < s->nexpect; i++)
		free(s->expect[i]);
	ddl_using_list_free(&s->using);
	for (int i = 0; i < 5; i++)
		free(s->settings[i]);
	memset(s, 0, sizeof *s);
}

static void
field(scenario *s, const char *key, char *val)
{
	if (strcmp(key, "old") == 0)
		s->old = parse_def(val, NULL);
	else if (strcmp(key, "now") == 0)
		s->now.def = parse_def(val, &s->now.cols);
	else if (strcmp(key, "target") == 0)
		parse_target(s, val);
	else if (strcmp(key, "policy") == 0)
		assert_int_equal(ddl_policy_parse(val, &s->policy), 0);
	else if (strcmp(key, "rewritten") == 0)
		s->rewritten = strcmp(val, "yes") == 0;
	else if (strcmp(key, "converted") == 0)
		s->converted = strcmp(val, "yes") == 0;
	else if (strcmp(key, "using") == 0)
		parse_using(s, val);
	else if (strcmp(key, "session") == 0)
		parse_session(s, val);
	else if (strcmp(key, "drop_columns") == 0)
		s->drop_columns = strcmp(val, "yes") == 0;
	else if (strcmp(key, "expect") == 0)
		s->expect[s->nexpect++] = strdup(val);
	else
		fail_msg("unknown field %s", key);
}

static void
test_cases(void **state)
{
	FILE *f = fopen(FIXTURES_DIR "/ddl_track/cases.txt", "r");
	char line[1024];
	scenario s;
	int cases = 0;

	(void) state;
	memset(&s, 0, sizeof s);
	assert_non_null(f);
	while (fgets(line, sizeof line, f) != NULL) {
		char *colon = strchr(line, ':');

		if (line[0] == '#' || colon == NULL)
			continue;
		*colon = '\0';
		if (strcmp(line, "case") == 0) {
			if (s.old != NULL) {
				check(&s);
				cases++;
			}
			scenario_free(&s);
			snprintf(s.name, sizeof s.name, "%s", trim(colon + 1));
		} else
			field(&s, line, trim(colon + 1));
	}
	check(&s);
	cases++;
	scenario_free(&s);
	fclose(f);
	assert_true(cases >= 20);
}

/* A type change to a type the target cannot be given (modifiers out of
 * range) fails the plan, rather than leaving an action that cannot run. */
static void
test_malformed_type_fails_the_plan(void **state)
{
	char old_line[] = "1|id|integer|key,notnull ; 2|name|text";
	char now_line[] = "1|id|integer|key,notnull ; 2|name|character varying(0)";
	char target_line[] = "id|integer ; name|text";
	scenario s;
	ddl_plan plan;
	tm_error err;

	(void) state;
	memset(&s, 0, sizeof s);
	s.old = parse_def(old_line, NULL);
	s.now.def = parse_def(now_line, &s.now.cols);
	parse_target(&s, target_line);
	for (int p = DDL_POLICY_WIDEN; p <= DDL_POLICY_FOLLOW; p++) {
		ddl_track_input in = {s.old, &s.now, {s.ntarget, (const char *const *) s.tnames,
		                                      (const char *const *) s.ttypes},
		                      (ddl_policy) p, false, false, NULL, false, {NULL, NULL, NULL,
		                                                                  NULL, NULL}};

		assert_int_equal(ddl_track_plan(&in, &plan, &err), -1);
		assert_non_null(strstr(err.msg, "out of range"));
	}
	scenario_free(&s);
}

/* Parses a capture message of one table: its fields (schema, name) and
 * columns as JSON fragments. */
static int
parse_table_event(const char *fields, const char *columns, ddl_event **e, tm_error *err)
{
	char json[512];

	snprintf(json, sizeof json,
	         "{\"version\": 1, \"kind\": \"ddl\", \"tables\": [{\"relid\": 42, %s, "
	         "\"columns\": [%s]}]}", fields, columns);
	return ddl_event_parse(json, strlen(json), e, err);
}

/* A definition with two columns of one attnum or one name is malformed:
 * planned, it would rename or add one column twice. */
static void
test_event_repeated_columns(void **state)
{
	static const char *const repeated[] = {
		"{\"attnum\": 2, \"name\": \"a\", \"type\": \"text\"}, "
		"{\"attnum\": 2, \"name\": \"b\", \"type\": \"text\"}",
		"{\"attnum\": 2, \"name\": \"a\", \"type\": \"text\"}, "
		"{\"attnum\": 3, \"name\": \"a\", \"type\": \"integer\"}",
		"{\"attnum\": 2, \"name\": \"a\", \"type\": \"text\"}, "
		"{\"attnum\": 3, \"name\": \"b\", \"type\": \"integer\"}",
	};
	const char *table = "\"schema\": \"public\", \"name\": \"t\"";
	ddl_event *e = NULL;
	tm_error err;

	(void) state;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(parse_table_event(table, repeated[i], &e, &err), -1);
		assert_non_null(strstr(err.msg, "repeats"));
	}
	assert_int_equal(parse_table_event(table, repeated[2], &e, &err), 0);
	assert_int_equal(e->tables[0].def->ncols, 2);
	ddl_event_free(e);
}

/* A table without a name (or schema) is malformed: it would be renamed to
 * "", which no ALTER TABLE takes. */
static void
test_event_table_without_name(void **state)
{
	static const char *const tables[] = {
		"\"schema\": \"public\", \"name\": \"\"",
		"\"schema\": \"\", \"name\": \"t\"",
		"\"schema\": \"public\"",
	};
	ddl_event *e = NULL;
	tm_error err;

	(void) state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(parse_table_event(tables[i], "", &e, &err), -1);
		assert_non_null(strstr(err.msg, "without schema, name or relid"));
	}
}

/* A message's own types and a table's types are read; a malformed type
 * makes the message unreadable. */
static void
test_event_types(void **state)
{
	const char *ok = "{\"version\": 1, \"kind\": \"ddl\", \"types\": [{\"oid\": 7,"
	                 " \"schema\": \"public\", \"name\": \"mood\", \"kind\": \"enum\","
	                 " \"labels\": [{\"oid\": 8, \"label\": \"a\"}]}], \"tables\": [{\"relid\": 42,"
	                 " \"schema\": \"public\", \"name\": \"t\", \"types\": [{\"oid\": 7,"
	                 " \"schema\": \"public\", \"name\": \"mood\", \"kind\": \"enum\", \"labels\": []}],"
	                 " \"columns\": [{\"attnum\": 1, \"name\": \"m\", \"type\": \"public.mood\","
	                 " \"type_ref\": 7, \"generated\": null}]}]}";
	const char *bad = "{\"version\": 1, \"kind\": \"ddl\", \"types\": [{\"oid\": 7}]}";
	ddl_event *e = NULL;
	tm_error err;

	(void) state;
	assert_int_equal(ddl_event_parse(ok, strlen(ok), &e, &err), 0);
	assert_int_equal(e->types.n, 1);
	assert_string_equal(e->types.types[0].labels[0].label, "a");
	assert_int_equal(e->tables[0].def->types.n, 1);
	assert_int_equal(e->tables[0].def->cols[0].type_ref, 7);
	ddl_event_free(e);
	assert_int_equal(ddl_event_parse(bad, strlen(bad), &e, &err), -1);
	assert_non_null(strstr(err.msg, "type definition"));
}

static void
test_policy_names(void **state)
{
	ddl_policy p;

	(void) state;
	assert_int_equal(ddl_policy_parse("quarantine", &p), 0);
	assert_int_equal(p, DDL_POLICY_QUARANTINE);
	assert_string_equal(ddl_policy_name(DDL_POLICY_FOLLOW), "follow");
	assert_int_equal(ddl_policy_parse("WIDEN", &p), -1);
}

/* ---- the README's table of what widen does ---- */

static char *
read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	strbuf sb = STRBUF_INIT;
	char buf[8192];
	size_t n;

	if (f == NULL)
		fail_msg("cannot open %s", path);
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		strbuf_appendn(&sb, buf, n);
	fclose(f);
	return strbuf_steal(&sb);
}

/* The table as the planner makes it, from fixtures/cast/widen_table.txt. */
static void
widen_table(strbuf *out)
{
	FILE *f = fopen(FIXTURES_DIR "/cast/widen_table.txt", "r");
	char line[512];
	tm_error err;

	assert_non_null(f);
	strbuf_appendf(out, "%s\n%s\n", DDL_TRACK_WIDEN_HEADER, DDL_TRACK_WIDEN_RULE);
	while (fgets(line, sizeof line, f) != NULL) {
		char *sep = strstr(line, " | ");

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		assert_non_null(sep);
		*sep = '\0';
		if (ddl_track_widen_row(line, sep + 3, out, &err) != 0)
			fail_msg("%s -> %s: %s", line, sep + 3, err.msg);
		strbuf_appendc(out, '\n');
	}
	fclose(f);
}

/* The README's table says what the planner does, row for row: regenerate
 * it with `build/tests/tools/cast_using --widen-table <
 * fixtures/cast/widen_table.txt`. */
static void
test_readme_widen_table(void **state)
{
	char *readme = read_file(FIXTURES_DIR "/../README.md");
	const char *start = strstr(readme, "<!-- widen table"), *end = NULL;
	strbuf want = STRBUF_INIT, got = STRBUF_INIT;

	(void) state;
	if (start == NULL || (start = strstr(start, "-->\n")) == NULL ||
	    (end = strstr(start, "<!-- end widen table -->")) == NULL)
		fail_msg("README.md has no widen table between its markers");
	start += 4;
	strbuf_appendn(&got, start, (size_t) (end - start));
	widen_table(&want);
	if (strcmp(strbuf_str(&want), strbuf_str(&got)) != 0)
		fail_msg("README.md's widen table differs from the planner's; it should read:\n%s",
		         strbuf_str(&want));
	strbuf_free(&want);
	strbuf_free(&got);
	free(readme);
}

/* The flags of an ALTER in a plan that copies the table again, and the
 * settings' names and values. */
static void
test_recopied_and_settings(void **state)
{
	ddl_track_session session = {"America/New_York", NULL, "postgres", NULL, "hex"};
	const char *names[5], *values[5];
	char old_line[] = "1|id|integer|key,notnull ; 2|a|integer ; 3|b|integer";
	char now_line[] = "1|id|integer|key,notnull ; 2|a|bigint ; 3|b|bigint";
	char target_line[] = "id|integer ; a|integer ; b|integer";
	char using_line[] = "a=expr=a * 2 ; b=none";
	scenario s;
	ddl_plan plan;
	tm_error err;

	(void) state;
	assert_int_equal(ddl_track_settings(&session, CAST_NEEDS_TIMEZONE | CAST_NEEDS_DATESTYLE |
	                                                  CAST_NEEDS_BYTEA_OUTPUT, names, values), 2);
	assert_string_equal(names[0], "TimeZone");
	assert_string_equal(values[0], "America/New_York");
	assert_string_equal(names[1], "bytea_output");
	memset(&s, 0, sizeof s);
	s.old = parse_def(old_line, NULL);
	s.now.def = parse_def(now_line, &s.now.cols);
	parse_target(&s, target_line);
	parse_using(&s, using_line);
	s.rewritten = s.converted = true;
	{
		ddl_track_input in = {s.old, &s.now, {s.ntarget, (const char *const *) s.tnames,
		                                      (const char *const *) s.ttypes},
		                      DDL_POLICY_WIDEN, true, false, &s.using, true, session};

		assert_int_equal(ddl_track_plan(&in, &plan, &err), 0);
	}
	assert_int_equal(plan.n, 3); /* alter a, resnapshot, alter b */
	for (int i = 0; i < plan.n; i++)
		if (plan.actions[i].kind == DDL_ACT_ALTER_TYPE)
			assert_true(plan.actions[i].recopied);
		else
			assert_non_null(strstr(plan.actions[i].why, "with USING a * 2"));
	ddl_plan_free(&plan);
	scenario_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_malformed_type_fails_the_plan),
		cmocka_unit_test(test_event_repeated_columns),
		cmocka_unit_test(test_event_table_without_name),
		cmocka_unit_test(test_event_types),
		cmocka_unit_test(test_policy_names),
		cmocka_unit_test(test_readme_widen_table),
		cmocka_unit_test(test_recopied_and_settings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
