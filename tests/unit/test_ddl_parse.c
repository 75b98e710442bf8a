/*
 * test_ddl_parse.c: ddl_parse against the corpus in fixtures/ddl/corpus.txt
 * (format described at its top), plus the canonical type spelling, the
 * statement slices and fingerprints, limits, and ownership of results.
 * Meant to pass under valgrind --leak-check=full and the sanitizers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pg_query.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddl_parse.h"
#include "ddl_parse_check.h"
#include "strbuf.h"

#define CORPUS_PATH FIXTURES_DIR "/ddl/corpus.txt"
#define MIN_CORPUS_CASES 60

typedef struct corpus_case {
	char name[128];
	int line;					/* of its "-- case:" line */
	strbuf sql;
	strbuf expect;				/* expected describe lines, each ending in \n */
	strbuf stmts;				/* expected classes, space separated */
	bool has_stmts;
	bool has_expect;
	bool sql_started;
} corpus_case;

typedef struct corpus_run {
	int cases;
	int failures;
} corpus_run;

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	strbuf sb = STRBUF_INIT;
	char buf[8192];
	size_t n;

	if (f == NULL)
		return NULL;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_appendn(&sb, buf, n);
	fclose(f);
	return strbuf_steal(&sb);
}

static bool
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void
case_reset(corpus_case *c, const char *name, int line)
{
	strbuf_reset(&c->sql);
	strbuf_reset(&c->expect);
	strbuf_reset(&c->stmts);
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->line = line;
	c->has_stmts = false;
	c->has_expect = false;
	c->sql_started = false;
}

static void
case_free(corpus_case *c)
{
	strbuf_free(&c->sql);
	strbuf_free(&c->expect);
	strbuf_free(&c->stmts);
}

/* The classes of the statements, and the changes as describe lines. */
static void
render_result(const ddl_parse_result *res, strbuf *changes, strbuf *classes)
{
	for (size_t i = 0; i < res->n_changes; i++) {
		ddl_parse_change_describe(&res->changes[i], changes);
		strbuf_appendc(changes, '\n');
	}
	if (res->n_changes == 0)
		strbuf_append(changes, "none\n");
	for (size_t i = 0; i < res->n_stmts; i++) {
		if (i > 0)
			strbuf_appendc(classes, ' ');
		strbuf_append(classes, ddl_parse_stmt_class_name(res->stmts[i].cls));
	}
}

/* The canonical spelling of a type reads back as the same type. */
static bool
type_round_trips(const ddl_parse_type *t)
{
	bool ok = ddl_check_type_round_trips(t);

	if (!ok)
		print_message("round trip of %s failed\n", t->canonical);
	return ok;
}

static bool
types_round_trip(const ddl_parse_result *res)
{
	for (size_t i = 0; i < res->n_changes; i++) {
		const ddl_parse_change *ch = &res->changes[i];

		if (!type_round_trips(&ch->column.type))
			return false;
		for (size_t k = 0; k < ch->n_columns; k++)
			if (!type_round_trips(&ch->columns[k].type))
				return false;
	}
	return true;
}

/*
 * Detail lines written "detail=X" in the corpus only say that some message
 * is there (jansson's wording of its depth error is not ours to pin).
 */
static bool
expect_matches(const char *expect, const char *actual)
{
	const char *e = expect, *a = actual;

	while (*e && *a) {
		const char *el = strchr(e, '\n'), *al = strchr(a, '\n');
		size_t elen = (size_t) (el - e), alen = (size_t) (al - a);

		if (elen > 9 && strncmp(el - 9, " detail=X", 9) == 0) {
			if (alen < elen - 1 || strncmp(e, a, elen - 1) != 0)
				return false;
		} else if (elen != alen || strncmp(e, a, elen) != 0)
			return false;
		e = el + 1;
		a = al + 1;
	}
	return *e == '\0' && *a == '\0';
}

static void
run_case(corpus_case *c, corpus_run *run)
{
	ddl_parse_result res;
	tm_error err = {{0}};
	strbuf changes = STRBUF_INIT, classes = STRBUF_INIT;
	const char *broken = NULL;
	int rc;

	run->cases++;
	rc = ddl_parse_text(strbuf_str(&c->sql), &res, &err);
	render_result(&res, &changes, &classes);
	if (rc == 0)
		broken = ddl_check_invariants(strbuf_str(&c->sql), &res);
	if (rc != 0 || !c->has_expect || broken != NULL ||
		!expect_matches(strbuf_str(&c->expect), strbuf_str(&changes)) ||
		(c->has_stmts && strcmp(strbuf_str(&c->stmts), strbuf_str(&classes)) != 0) ||
		!types_round_trip(&res)) {
		run->failures++;
		print_message("case %s (line %d) failed%s%s%s\n  expected:\n%s  got:\n%s"
					  "  expected stmts: %s\n  got stmts: %s\n",
					  c->name, c->line, rc ? ": " : "", rc ? err.msg : "",
					  broken ? broken : "", strbuf_str(&c->expect), strbuf_str(&changes),
					  c->has_stmts ? strbuf_str(&c->stmts) : "(any)", strbuf_str(&classes));
	}
	ddl_parse_result_free(&res);
	strbuf_free(&changes);
	strbuf_free(&classes);
}

/* One line of the corpus, for the case being read. */
static void
read_line(corpus_case *c, const char *line)
{
	if (starts_with(line, "-- expect: ")) {
		strbuf_append(&c->expect, line + strlen("-- expect: "));
		strbuf_appendc(&c->expect, '\n');
		c->has_expect = true;
	} else if (starts_with(line, "-- stmts:")) {
		const char *s = line + strlen("-- stmts:");

		strbuf_append(&c->stmts, *s == ' ' ? s + 1 : s);
		c->has_stmts = true;
	} else if (!c->has_expect && !c->has_stmts) {
		if (c->sql_started)
			strbuf_appendc(&c->sql, '\n');
		strbuf_append(&c->sql, line);
		c->sql_started = true;
	}
}

static void
test_corpus(void **state)
{
	char *text = slurp(CORPUS_PATH);
	corpus_case c = {.sql = STRBUF_INIT, .expect = STRBUF_INIT, .stmts = STRBUF_INIT};
	corpus_run run = {0, 0};
	bool in_case = false;
	int lineno = 0;

	assert_non_null(text);
	for (char *line = text, *next; line != NULL && *line; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		lineno++;
		if (starts_with(line, "-- case: ")) {
			if (in_case)
				run_case(&c, &run);
			case_reset(&c, line + strlen("-- case: "), lineno);
			in_case = true;
		} else if (in_case)
			read_line(&c, line);
	}
	if (in_case)
		run_case(&c, &run);
	case_free(&c);
	free(text);
	print_message("corpus: %d cases, %d failed\n", run.cases, run.failures);
	assert_true(run.cases >= MIN_CORPUS_CASES);
	assert_int_equal(run.failures, 0);
}

/* Parses "ALTER TABLE t ADD COLUMN c <spelling>" and returns its one change. */
static const ddl_parse_change *
parse_column_type(const char *spelling, ddl_parse_result *res)
{
	strbuf sql = STRBUF_INIT;
	tm_error err;

	strbuf_appendf(&sql, "ALTER TABLE t ADD COLUMN c %s", spelling);
	assert_int_equal(ddl_parse_text(strbuf_str(&sql), res, &err), 0);
	strbuf_free(&sql);
	assert_int_equal(res->n_changes, 1);
	assert_int_equal(res->changes[0].kind, DDL_PARSE_ADD_COLUMN);
	return &res->changes[0];
}

static void
test_type_spellings(void **state)
{
	static const struct {
		const char *sql;
		const char *canonical;
	} cases[] = {
		{"int", "\"pg_catalog\".\"int4\""},
		{"varchar(20)", "\"pg_catalog\".\"varchar\"(20)"},
		{"double precision", "\"pg_catalog\".\"float8\""},
		{"timestamp with time zone", "\"pg_catalog\".\"timestamptz\""},
		{"numeric(12,2)", "\"pg_catalog\".\"numeric\"(12,2)"},
		{"bit varying(7)", "\"pg_catalog\".\"varbit\"(7)"},
		{"interval minute to second(2)", "\"pg_catalog\".\"interval\"(6144,2)"},
		{"int[]", "\"pg_catalog\".\"int4\"[]"},
		{"text[][]", "\"text\"[][]"},
		{"public.\"My Type\"", "\"public\".\"My Type\""},
		{"character(3)[2]", "\"pg_catalog\".\"bpchar\"(3)[]"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ddl_parse_result res;
		const ddl_parse_change *ch = parse_column_type(cases[i].sql, &res);

		assert_string_equal(ch->column.type.canonical, cases[i].canonical);
		ddl_parse_result_free(&res);
	}
}

static void
test_type_structure(void **state)
{
	ddl_parse_result res;
	const ddl_parse_type *t;

	t = &parse_column_type("numeric(12,-2)[3][]", &res)->column.type;
	assert_int_equal(t->n_names, 2);
	assert_string_equal(t->names[0], "pg_catalog");
	assert_string_equal(t->names[1], "numeric");
	assert_int_equal(t->n_typmods, 2);
	assert_int_equal(t->typmods[0].kind, DDL_PARSE_TYPMOD_INT);
	assert_int_equal(t->typmods[0].ival, 12);
	assert_int_equal(t->typmods[1].ival, -2);
	assert_null(t->typmods[1].text);
	assert_int_equal(t->n_array_bounds, 2);
	assert_int_equal(t->array_bounds[0], 3);
	assert_int_equal(t->array_bounds[1], -1);
	assert_false(t->setof);
	ddl_parse_result_free(&res);

	t = &parse_column_type("s.\"T\"('x''y', Ident, 99999999999)", &res)->column.type;
	assert_int_equal(t->n_typmods, 3);
	assert_int_equal(t->typmods[0].kind, DDL_PARSE_TYPMOD_STRING);
	assert_string_equal(t->typmods[0].text, "x'y");
	assert_int_equal(t->typmods[1].kind, DDL_PARSE_TYPMOD_IDENT);
	assert_string_equal(t->typmods[1].text, "ident");
	assert_int_equal(t->typmods[2].kind, DDL_PARSE_TYPMOD_NUMBER);
	assert_string_equal(t->typmods[2].text, "99999999999");
	assert_string_equal(t->canonical, "\"s\".\"T\"('x''y',\"ident\",99999999999)");
	ddl_parse_result_free(&res);
}

/* Rendering hand-built types: quoting, literals, refusals. */
static void
test_type_render(void **state)
{
	const char *names[] = {"public", "x\"; DROP TABLE y; --"};
	ddl_parse_typmod mods[] = {
		{DDL_PARSE_TYPMOD_INT, -5, NULL},
		{DDL_PARSE_TYPMOD_STRING, 0, "it's a \\ test"},
		{DDL_PARSE_TYPMOD_IDENT, 0, "Mixed Case"},
		{DDL_PARSE_TYPMOD_NUMBER, 0, "1.5e3"},
	};
	int bounds[] = {-1, 4};
	ddl_parse_type t = {names, 2, mods, 4, bounds, 2, true, NULL};
	strbuf sb = STRBUF_INIT;
	tm_error err = {{0}};

	assert_int_equal(ddl_parse_type_render(&t, &sb, &err), 0);
	assert_string_equal(strbuf_str(&sb),
						"SETOF \"public\".\"x\"\"; DROP TABLE y; --\""
						"(-5,E'it''s a \\\\ test',\"Mixed Case\",1.5e3)[][]");

	strbuf_reset(&sb);
	mods[3].text = "1); DROP TABLE t; --";
	assert_int_equal(ddl_parse_type_render(&t, &sb, &err), -1);
	assert_string_equal(strbuf_str(&sb), "");
	assert_non_null(strstr(err.msg, "not a number"));

	t.n_names = 0;
	assert_int_equal(ddl_parse_type_render(&t, &sb, &err), -1);
	names[0] = "";
	t.n_names = 1;
	t.n_typmods = 0;
	assert_int_equal(ddl_parse_type_render(&t, &sb, &err), -1);
	assert_int_equal(ddl_parse_type_render(NULL, &sb, &err), -1);
	assert_string_equal(strbuf_str(&sb), "");
	strbuf_free(&sb);
}

static void
test_slices_and_fingerprints(void **state)
{
	const char *sql = "  INSERT INTO t VALUES (1);\n/* c */ ALTER TABLE t ADD c int ;  SELECT 1  ";
	const char *same = "alter   table t\n ADD c int";
	ddl_parse_result a, b;
	tm_error err;

	assert_int_equal(ddl_parse_text(sql, &a, &err), 0);
	assert_int_equal(a.n_stmts, 3);
	assert_string_equal(a.stmts[0].text, "INSERT INTO t VALUES (1)");
	assert_int_equal(a.stmts[0].offset, 2);
	assert_string_equal(a.stmts[1].text, "/* c */ ALTER TABLE t ADD c int");
	assert_string_equal(a.stmts[1].node, "AlterTableStmt");
	assert_string_equal(a.stmts[2].text, "SELECT 1");
	assert_int_equal(a.n_dml, 2);
	assert_int_equal(a.n_changes, 1);
	assert_int_equal(a.changes[0].stmt_index, 1);
	assert_null(ddl_check_invariants(sql, &a));

	/* The fingerprint ignores spelling, spacing and comments. */
	assert_int_equal(ddl_parse_text(same, &b, &err), 0);
	assert_string_equal(a.stmts[1].fingerprint, b.stmts[0].fingerprint);
	assert_string_not_equal(a.stmts[0].fingerprint, a.stmts[1].fingerprint);
	ddl_parse_result_free(&a);
	ddl_parse_result_free(&b);
}

/* Texts the parser is not given, or that cannot be read: no crash, one
 * UNPARSABLE change for the whole text. */
static void
expect_refused(const char *sql, const char *message_part)
{
	ddl_parse_result res;
	tm_error err;

	assert_int_equal(ddl_parse_text(sql, &res, &err), 0);
	assert_int_equal(res.n_stmts, 1);
	assert_int_equal(res.n_changes, 1);
	assert_int_equal(res.changes[0].kind, DDL_PARSE_UNPARSABLE);
	assert_true(res.unparsable);
	assert_non_null(strstr(res.changes[0].detail, message_part));
	assert_int_equal(res.stmts[0].length, strlen(res.stmts[0].text));
	ddl_parse_result_free(&res);
}

static char *
repeat(const char *head, const char *unit, size_t n, const char *tail)
{
	strbuf sb = STRBUF_INIT;

	strbuf_append(&sb, head);
	for (size_t i = 0; i < n; i++)
		strbuf_append(&sb, unit);
	strbuf_append(&sb, tail);
	return strbuf_steal(&sb);
}

/* head, then unit n times, then tail: refused with message_part. */
static void
expect_repeat_refused(const char *head, const char *unit, size_t n, const char *tail,
					  const char *message_part)
{
	char *s = repeat(head, unit, n, tail);

	expect_refused(s, message_part);
	free(s);
}

static void
test_limits(void **state)
{
	char *tail;

	/* 200,000 links would overflow libpg_query's writer on the C stack. */
	expect_repeat_refused("SELECT 1", "+1", 200000, "; ALTER TABLE t ADD c int",
						  "nested too deeply to parse safely");
	expect_repeat_refused("SELECT x", " IS NULL", 5000, "", "nested too deeply to parse safely");
	expect_repeat_refused("SELECT * FROM a", " JOIN a USING (id)", 5000, "",
						  "nested too deeply to parse safely");
	expect_repeat_refused("SELECT 1 WHERE x", " BETWEEN 1 AND 2", 5000, "",
						  "nested too deeply to parse safely");
	/* Open brackets count too (the parser would stop at about 5,000). */
	expect_repeat_refused("SELECT ", "f(", 20000, "1", "nested too deeply to parse safely");
	expect_repeat_refused("ALTER TABLE t ADD c int DEFAULT ", "(", 12000, "1",
						  "nested too deeply to parse safely");
	/* Within the parser's limits, but deeper than jansson reads. */
	tail = repeat("1", ")", 600, "");
	expect_repeat_refused("SELECT ", "(SELECT ", 600, tail, "nested too deeply to read");
	free(tail);
	/* A qualified operator is a link, not a bracket: 70,000 of them
	 * overflowed an 8 MB stack. */
	expect_repeat_refused("SELECT 1", " OPERATOR(+)1", 70000, "", "nested too deeply to parse safely");
	expect_repeat_refused("SELECT 1", " OPERATOR ( \"pg_catalog\" . + ) 1", 2000, "",
						  "nested too deeply to parse safely");
	expect_repeat_refused("-- ", "x", DDL_PARSE_MAX_TEXT, "\nALTER TABLE t ADD c int", "longer than");
	expect_refused("ALTER TABLE t ADD \"\xff\xfe\" int", "not valid UTF-8");
	expect_refused("ALTER TABLE t ADD \"\xed\xa0\x80\" int", "not valid UTF-8");
	expect_refused("ALTER TABLE t ADD \"\xc0\xaf\" int", "not valid UTF-8");
}

typedef struct threaded_parse {
	const char *sql;
	bool refused;				/* one UNPARSABLE change: too deep */
} threaded_parse;

/* No cmocka assertion here: a failure must not jump out of the thread. */
static void *
parse_in_thread(void *arg)
{
	threaded_parse *tp = arg;
	ddl_parse_result res;
	tm_error err;

	tp->refused = ddl_parse_text(tp->sql, &res, &err) == 0 && res.n_changes == 1 &&
		res.changes[0].kind == DDL_PARSE_UNPARSABLE &&
		strstr(res.changes[0].detail, "nested too deeply to parse safely") != NULL;
	ddl_parse_result_free(&res);
	return NULL;
}

/* head, then unit n times, then tail: refused, on a thread with the 512 kB
 * of stack that ddl_parse.h promises is enough. */
static void
expect_refused_on_small_stack(const char *head, const char *unit, size_t n, const char *tail)
{
	threaded_parse tp = {repeat(head, unit, n, tail), false};
	pthread_attr_t attr;
	pthread_t thread;

	assert_int_equal(pthread_attr_init(&attr), 0);
	assert_int_equal(pthread_attr_setstacksize(&attr, 512 * 1024), 0);
	assert_int_equal(pthread_create(&thread, &attr, parse_in_thread, &tp), 0);
	assert_int_equal(pthread_join(thread, NULL), 0);
	pthread_attr_destroy(&attr);
	if (!tp.refused)
		fail_msg("not refused as too deep: %.60s...", tp.sql);
	free((char *) tp.sql);
}

/* Right-deep chains and nested CASE: the parser takes thousands of levels
 * of them, which take megabytes of stack to write out. */
static void
test_limits_small_stack(void **state)
{
	char *tail = repeat("true", " THEN 1 END", 3000, "");

	expect_refused_on_small_stack("SELECT ", "NOT ", 5000, "true");
	expect_refused_on_small_stack("SELECT ", "+-", 2500, "1");
	expect_refused_on_small_stack("SELECT ", "CASE WHEN ", 3000, tail);
	free(tail);
}

/* A large text of ordinary statements is not refused. */
static void
test_large_ordinary_text(void **state)
{
	char *s = repeat("", "INSERT INTO t VALUES (1, 'a + b', now() - interval '1 day');\n", 5000,
					 "ALTER TABLE t DROP COLUMN c");
	ddl_parse_result res;
	tm_error err;

	assert_int_equal(ddl_parse_text(s, &res, &err), 0);
	assert_int_equal(res.n_stmts, 5001);
	assert_int_equal(res.n_dml, 5000);
	assert_int_equal(res.n_changes, 1);
	assert_int_equal(res.changes[0].kind, DDL_PARSE_DROP_COLUMN);
	assert_int_equal(res.changes[0].stmt_index, 5000);
	assert_null(ddl_check_invariants(s, &res));
	ddl_parse_result_free(&res);
	free(s);
}

/*
 * Ownership: the result owns copies of everything (the input may go
 * first), free empties it, and freeing twice, NULL or a zeroed result is
 * harmless.
 */
static void
test_ownership(void **state)
{
	const char *src = "ALTER TABLE \"S\".\"T\" RENAME COLUMN \"Old\" TO \"New\"; DROP TABLE a, b";
	char *input = strdup(src);
	ddl_parse_result res, other, zero;
	tm_error err = {{0}};

	assert_int_equal(ddl_parse_text(input, &res, &err), 0);
	memset(input, 'x', strlen(input));
	free(input);
	assert_int_equal(res.n_changes, 3);
	assert_string_equal(res.changes[0].schema, "S");
	assert_string_equal(res.changes[0].table, "T");
	assert_string_equal(res.changes[0].column.name, "Old");
	assert_string_equal(res.changes[0].new_name, "New");
	assert_string_equal(res.stmts[0].text, "ALTER TABLE \"S\".\"T\" RENAME COLUMN \"Old\" TO \"New\"");
	assert_string_equal(res.changes[2].table, "b");

	/* A second result does not disturb the first. */
	assert_int_equal(ddl_parse_text("CREATE TABLE z (a int)", &other, &err), 0);
	assert_string_equal(res.changes[1].table, "a");
	assert_string_equal(other.changes[0].columns[0].name, "a");
	ddl_parse_result_free(&other);

	ddl_parse_result_free(&res);
	assert_null(res.changes);
	assert_int_equal(res.n_changes, 0);
	assert_null(res.stmts);
	ddl_parse_result_free(&res);
	ddl_parse_result_free(NULL);
	memset(&zero, 0, sizeof(zero));
	ddl_parse_result_free(&zero);

	/* A freed result can be filled again. */
	assert_int_equal(ddl_parse_text("ALTER TABLE t ADD c int", &res, &err), 0);
	assert_int_equal(res.n_changes, 1);
	ddl_parse_result_free(&res);
}

static void
test_bad_arguments(void **state)
{
	ddl_parse_result res;
	tm_error err = {{0}};

	assert_int_equal(ddl_parse_text(NULL, &res, &err), -1);
	assert_non_null(strstr(err.msg, "no statement text"));
	assert_int_equal(res.n_changes, 0);
	assert_int_equal(res.n_stmts, 0);
	ddl_parse_result_free(&res);
	assert_int_equal(ddl_parse_text("SELECT 1", NULL, &err), -1);
	assert_int_equal(ddl_parse_text("SELECT 1", NULL, NULL), -1);
}

static void
test_names(void **state)
{
	for (int k = 0; k < DDL_PARSE_KIND_COUNT; k++)
		assert_string_not_equal(ddl_parse_kind_name((ddl_parse_kind) k), "?");
	assert_string_equal(ddl_parse_kind_name(DDL_PARSE_ALTER_COLUMN_TYPE), "ALTER_COLUMN_TYPE");
	assert_string_equal(ddl_parse_kind_name((ddl_parse_kind) DDL_PARSE_KIND_COUNT), "?");
	assert_string_equal(ddl_parse_kind_name((ddl_parse_kind) -1), "?");
	assert_string_equal(ddl_parse_stmt_class_name(DDL_PARSE_STMT_OPAQUE), "opaque");
}

/* Generated columns' expressions: written again from the parse tree, or
 * refused with a reason. */
static void
test_generation_expr(void **state)
{
	static const char *const accepted[][2] = {
		{"(qty * 3)", "qty * 3"},
		{"(lower(name) || '!'::text)", "lower(name) || '!'::text"},
		{"CASE WHEN (qty > 0) THEN 'pos'::text ELSE NULL::text END",
		 "CASE WHEN qty > 0 THEN 'pos'::text ELSE NULL::text END"},
		{"public.dbl(qty)", "public.dbl(qty)"},
		{"COALESCE(a, (b)::integer, 0)", "COALESCE(a, b::int, 0)"},
		{"((p).m)::text", "(p).m::text"},
		{"(name COLLATE \"C\")", "name COLLATE \"C\""},
		{"'it''s'::text", "'it''s'::text"},
	};
	static const char *const refused[][2] = {
		{"(SELECT 1)", "SubLink"},
		{"1 FROM pg_authid", "not exactly one expression"},
		{"1, 2", "not exactly one expression"},
		{"1; DROP TABLE t", "not exactly one expression"},
		{"random()", "volatile"},
		{"generate_series(1, a)", "returns a set"},
		{"count(*)", "aggregate"},
		{"sum(a) OVER ()", "aggregate or window"},
		{"t.a", "other than a column"},
		{"$1", "ParamRef"},
		{"1 AS x", "not exactly one expression"},
		{"", "empty"},
		{"(1 +", "does not parse"},
		/* libpg_query 15-4.0 writes this as ARRAY[a, b][1], which does not parse */
		{"(ARRAY[a, b])[1]", "cannot write it back"},
	};
	strbuf out = STRBUF_INIT;
	tm_error err;

	(void) state;
	for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
		strbuf_reset(&out);
		if (ddl_parse_generation_expr(accepted[i][0], &out, &err) != 0)
			fail_msg("%s: refused: %s", accepted[i][0], err.msg);
		assert_string_equal(strbuf_str(&out), accepted[i][1]);
	}
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		strbuf_reset(&out);
		if (ddl_parse_generation_expr(refused[i][0], &out, &err) == 0)
			fail_msg("%s: accepted as %s", refused[i][0], strbuf_str(&out));
		if (strstr(err.msg, refused[i][1]) == NULL)
			fail_msg("%s: \"%s\" does not say \"%s\"", refused[i][0], err.msg, refused[i][1]);
		assert_int_equal(out.len, 0);
	}
	{
		char *deep = malloc(DDL_PARSE_MAX_EXPR + 2);

		memset(deep, '(', DDL_PARSE_MAX_EXPR + 1);
		deep[DDL_PARSE_MAX_EXPR + 1] = '\0';
		assert_int_equal(ddl_parse_generation_expr(deep, &out, &err), -1);
		assert_non_null(strstr(err.msg, "longer than"));
		memset(deep, '(', 3000);
		deep[3000] = '\0';
		assert_int_equal(ddl_parse_generation_expr(deep, &out, &err), -1);
		free(deep);
	}
	{
		/* a chain of operators is as deep as it is long: refused before
		 * libpg_query writes it back; a shorter one is accepted */
		strbuf chain = STRBUF_INIT;

		strbuf_append(&chain, "a");
		for (int i = 0; i < 630; i++) {
			strbuf_append(&chain, "+1");
			if (i == 99) {
				assert_int_equal(ddl_parse_generation_expr(strbuf_str(&chain), &out, &err), 0);
				strbuf_reset(&out);
			}
		}
		assert_int_equal(ddl_parse_generation_expr(strbuf_str(&chain), &out, &err), -1);
		assert_non_null(strstr(err.msg, "levels deep"));
		assert_int_equal(out.len, 0);
		strbuf_free(&chain);
	}
	{
		/* a fuzzed chain whose depth the scan estimates below the limit:
		 * what is accepted renders into what is accepted again */
		char *fuzzed = slurp(FIXTURES_DIR "/ddl/operator_chain_fuzzed.sql");

		assert_non_null(fuzzed);
		if (ddl_parse_generation_expr(fuzzed, &out, &err) == 0) {
			strbuf again = STRBUF_INIT;
			char *once = strbuf_steal(&out);

			assert_int_equal(ddl_parse_generation_expr(once, &again, &err), 0);
			assert_string_equal(strbuf_str(&again), once);
			free(once);
			strbuf_free(&again);
		} else
			assert_non_null(strstr(err.msg, "rendered, is nested"));
		free(fuzzed);
	}
	assert_int_equal(ddl_parse_generation_expr("'\xff'", &out, &err), -1);
	assert_non_null(strstr(err.msg, "UTF-8"));
	strbuf_free(&out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_generation_expr),
		cmocka_unit_test(test_type_spellings),
		cmocka_unit_test(test_type_structure),
		cmocka_unit_test(test_type_render),
		cmocka_unit_test(test_slices_and_fingerprints),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_limits_small_stack),
		cmocka_unit_test(test_large_ordinary_text),
		cmocka_unit_test(test_ownership),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_names),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	/* Releases libpg_query's memory for this thread, for leak checkers. */
	pg_query_exit();
	return failed;
}
