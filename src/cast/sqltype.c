#include "sqltype.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names format_type() writes as SQL keywords. The time types carry their
 * modifiers after the first word ("timestamp(3) with time zone"), the
 * others at the end ("character varying(20)"). Longest first. */
typedef struct keyword_type {
	const char *name;
	bool mods_inside;
} keyword_type;

static const keyword_type keyword_types[] = {
	{"timestamp without time zone", true},
	{"timestamp with time zone", true},
	{"time without time zone", true},
	{"time with time zone", true},
	{"character varying", false},
	{"double precision", false},
	{"bit varying", false},
	{"timestamp", true},
	{"time", true},
	{"character", false},
	{"interval", false},
	{"bit", false},
	{NULL, false},
};

/* Interval field spellings after "interval". */
static const char *const interval_fields[] = {
	"year to month", "day to hour", "day to minute", "day to second", "hour to minute",
	"hour to second", "minute to second", "year", "month", "day", "hour", "minute", "second",
	NULL,
};

/* The largest modifier read, either sign. */
#define MOD_LIMIT 1000000

typedef struct cursor {
	const char *s;
	const char *text;
	tm_error *err;
} cursor;

static void
skip_space(cursor *c)
{
	while (*c->s == ' ')
		c->s++;
}

static int
read_quoted(cursor *c, char *out, size_t size)
{
	size_t n = 0;

	c->s++;
	for (;;) {
		if (*c->s == '\0')
			return tm_error_set(c->err, "type \"%s\": unterminated quoted name", c->text);
		if (*c->s == '"' && c->s[1] != '"')
			break;
		if (*c->s == '"')
			c->s++;
		if (n + 1 >= size)
			return tm_error_set(c->err, "type \"%s\": name too long", c->text);
		out[n++] = *c->s++;
	}
	c->s++;
	out[n] = '\0';
	return n == 0 ? tm_error_set(c->err, "type \"%s\": empty name", c->text) : 0;
}

/* A character of a plain lower-case name: [a-z_][a-z0-9_$]*. */
static bool
plain_char(char ch, bool first)
{
	unsigned char u = (unsigned char) ch;

	return islower(u) || ch == '_' || (!first && (isdigit(u) || ch == '$'));
}

static int
read_plain(cursor *c, char *out, size_t size)
{
	size_t n = 0;

	if (!plain_char(*c->s, true))
		return tm_error_set(c->err, "type \"%s\": unexpected \"%c\"", c->text, *c->s);
	while (plain_char(*c->s, false)) {
		if (n + 1 >= size)
			return tm_error_set(c->err, "type \"%s\": name too long", c->text);
		out[n++] = *c->s++;
	}
	out[n] = '\0';
	return 0;
}

static int
read_name(cursor *c, char *out, size_t size, bool *quoted)
{
	*quoted = *c->s == '"';
	return *quoted ? read_quoted(c, out, size) : read_plain(c, out, size);
}

static int
read_mods(cursor *c, sqltype *t)
{
	if (*c->s != '(')
		return 0;
	c->s++;
	for (;;) {
		char *end;
		long v = strtol(c->s, &end, 10);

		if (end == c->s || v < -MOD_LIMIT || v > MOD_LIMIT || t->nmods == SQLTYPE_MAX_MODS)
			return tm_error_set(c->err, "type \"%s\": bad modifier", c->text);
		t->mods[t->nmods++] = (int) v;
		c->s = end;
		if (*c->s == ')')
			break;
		if (*c->s != ',')
			return tm_error_set(c->err, "type \"%s\": bad modifier list", c->text);
		c->s++;
	}
	c->s++;
	return 0;
}

/* Whether a keyword ends before ch: not when ch continues a name
 * ("bit$x", "time_of_day") or qualifies one ("interval.x" is a type of
 * schema interval). */
static bool
keyword_ends(char ch)
{
	return !isalnum((unsigned char) ch) && ch != '_' && ch != '$' && ch != '.';
}

/* Matches a keyword type: its words, with modifiers after the first word
 * or after the last, as format_type() places them for that type. */
static bool
match_keyword_type(cursor *c, const keyword_type *k, sqltype *t)
{
	const char *kw = k->name;
	const char *s = c->s;
	const char *space = strchr(kw, ' ');
	size_t first = space ? (size_t) (space - kw) : strlen(kw);
	cursor save = *c;

	if (strncmp(s, kw, first) != 0 || !keyword_ends(s[first]))
		return false;
	c->s = s + first;
	t->nmods = 0;
	if (k->mods_inside && read_mods(c, t) != 0) {
		*c = save;
		return false;
	}
	if (space != NULL) {
		size_t rest = strlen(space);

		if (strncmp(c->s, space, rest) != 0 || isalnum((unsigned char) c->s[rest])) {
			*c = save;
			return false;
		}
		c->s += rest;
	}
	if (!k->mods_inside && read_mods(c, t) != 0) {
		*c = save;
		return false;
	}
	snprintf(t->name, sizeof t->name, "%s", kw);
	return true;
}

static void
read_interval_fields(cursor *c, sqltype *t)
{
	for (int i = 0; interval_fields[i] != NULL; i++) {
		size_t n = strlen(interval_fields[i]);

		if (c->s[0] == ' ' && strncmp(c->s + 1, interval_fields[i], n) == 0 &&
		    !isalnum((unsigned char) c->s[n + 1])) {
			snprintf(t->fields, sizeof t->fields, "%s", interval_fields[i]);
			c->s += n + 1;
			return;
		}
	}
}

static int
read_type_name(cursor *c, sqltype *t)
{
	char first[SQLTYPE_NAME_MAX];
	bool quoted;

	for (int i = 0; keyword_types[i].name != NULL; i++)
		if (match_keyword_type(c, &keyword_types[i], t)) {
			if (strcmp(t->name, "interval") == 0)
				read_interval_fields(c, t);
			return 0;
		}
	if (read_name(c, first, sizeof first, &quoted) != 0)
		return -1;
	if (*c->s == '.') {
		c->s++;
		memcpy(t->schema, first, sizeof first);
		t->schema_quoted = quoted;
		if (read_name(c, t->name, sizeof t->name, &t->quoted) != 0)
			return -1;
	} else {
		memcpy(t->name, first, sizeof first);
		t->quoted = quoted;
	}
	return read_mods(c, t);
}

int
sqltype_parse(const char *text, sqltype *out, tm_error *err)
{
	cursor c = {text, text, err};

	memset(out, 0, sizeof *out);
	skip_space(&c);
	if (read_type_name(&c, out) != 0)
		return -1;
	/* interval(3) second-style precision after fields is spelled
	 * "interval second(3)" by format_type; handle trailing mods */
	if (out->fields[0] != '\0' && read_mods(&c, out) != 0)
		return -1;
	while (c.s[0] == '[' && c.s[1] == ']') {
		out->ndims++;
		c.s += 2;
	}
	skip_space(&c);
	if (*c.s != '\0')
		return tm_error_set(err, "type \"%s\": unexpected text \"%s\"", text, c.s);
	return 0;
}

static const keyword_type *
find_keyword_type(const char *name)
{
	for (int i = 0; keyword_types[i].name != NULL; i++)
		if (strcmp(name, keyword_types[i].name) == 0)
			return &keyword_types[i];
	return NULL;
}

static void
render_mods(const sqltype *t, strbuf *sb)
{
	if (t->nmods == 0)
		return;
	strbuf_appendc(sb, '(');
	for (int i = 0; i < t->nmods; i++)
		strbuf_appendf(sb, "%s%d", i ? "," : "", t->mods[i]);
	strbuf_appendc(sb, ')');
}

/* A name read unquoted is one plain token ([a-z_][a-z0-9_$]*, checked by
 * read_plain): it is written back as it was. */
static void
append_name(strbuf *sb, const char *name, bool quoted)
{
	if (quoted)
		strbuf_append_ident(sb, name);
	else
		strbuf_append(sb, name);
}

/* A keyword type: its words, the modifiers where format_type() puts them,
 * interval fields last (with the seconds precision after them). */
static void
render_keyword_type(const sqltype *t, const keyword_type *k, strbuf *sb)
{
	const char *space = strchr(t->name, ' ');
	size_t first = space ? (size_t) (space - t->name) : strlen(t->name);

	strbuf_appendn(sb, t->name, first);
	if (k->mods_inside)
		render_mods(t, sb);
	if (space != NULL)
		strbuf_append(sb, space);
	if (t->fields[0] != '\0') {
		strbuf_appendc(sb, ' ');
		strbuf_append(sb, t->fields);
	}
	if (!k->mods_inside)
		render_mods(t, sb);
}

void
sqltype_render(const sqltype *t, strbuf *sb)
{
	const keyword_type *k = NULL;

	if (t->schema[0] == '\0' && !t->quoted)
		k = find_keyword_type(t->name);
	if (k != NULL)
		render_keyword_type(t, k, sb);
	else {
		if (t->schema[0] != '\0') {
			append_name(sb, t->schema, t->schema_quoted);
			strbuf_appendc(sb, '.');
		}
		append_name(sb, t->name, t->quoted);
		render_mods(t, sb);
	}
	for (int i = 0; i < t->ndims; i++)
		strbuf_append(sb, "[]");
}

static bool
plain_name(const char *s)
{
	if (!plain_char(*s, true))
		return false;
	while (*s && plain_char(*s, false))
		s++;
	return *s == '\0';
}

static bool
known_fields(const char *fields)
{
	if (fields[0] == '\0')
		return true;
	for (int i = 0; interval_fields[i] != NULL; i++)
		if (strcmp(fields, interval_fields[i]) == 0)
			return true;
	return false;
}

/* Interval fields are written after the type interval alone (and are
 * lost on any other), modifiers as sqltype_parse reads them. */
static bool
parts_render(const sqltype *t)
{
	if (t->nmods < 0 || t->nmods > SQLTYPE_MAX_MODS)
		return false;
	for (int i = 0; i < t->nmods; i++)
		if (t->mods[i] < -MOD_LIMIT || t->mods[i] > MOD_LIMIT)
			return false;
	if (t->fields[0] == '\0')
		return true;
	return !t->quoted && t->schema[0] == '\0' && strcmp(t->name, "interval") == 0 &&
		known_fields(t->fields);
}

bool
sqltype_is_wellformed(const sqltype *t)
{
	if (t->name[0] == '\0' || (t->schema_quoted && t->schema[0] == '\0'))
		return false;
	if (!t->schema_quoted && t->schema[0] != '\0' && !plain_name(t->schema))
		return false;
	if (!t->quoted && !plain_name(t->name) &&
		(t->schema[0] != '\0' || find_keyword_type(t->name) == NULL))
		return false;
	return t->ndims >= 0 && parts_render(t);
}

const char *
sqltype_base(const sqltype *t)
{
	return t->name;
}

bool
sqltype_names_objects(const char *type_sql)
{
	sqltype parsed;
	const sqltype *t = &parsed;
	static const char *const names[] = {
		"regclass",    "regcollation", "regconfig",    "regdictionary", "regnamespace",
		"regoper",     "regoperator",  "regproc",      "regprocedure",  "regrole",
		"regtype",     "aclitem",      NULL};

	if (type_sql == NULL || sqltype_parse(type_sql, &parsed, NULL) != 0 || t->quoted ||
	    (t->schema[0] != '\0' && strcmp(t->schema, "pg_catalog") != 0))
		return false;
	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(t->name, names[i]) == 0)
			return true;
	return false;
}
