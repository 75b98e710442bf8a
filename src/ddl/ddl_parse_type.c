/*
 * ddl_parse_type.c: a TypeName node as structured data, and its canonical
 * SQL spelling.
 *
 * TypeName in libpg_query's JSON:
 *   {"names": [String...], "typmods": [A_Const | ColumnRef ...],
 *    "arrayBounds": [Integer...], "setof": true, "typemod": -1, ...}
 * The grammar has already turned SQL-standard spellings into catalog names
 * ("double precision" is pg_catalog.float8); typmods are written as the
 * user wrote them, except that "char" and "bit" without a length get (1).
 * Everything read is copied into the result's arena.
 */
#include "ddl_parse_int.h"

#include <string.h>

/*
 * The value of an integer A_Const. libpg_query 15-4.0 writes an Integer's
 * ival only when it is positive: {"ival":{}} stands for 0 and for any
 * negative value, so those are read back from the text at the constant's
 * location (a grammar-made constant has location -1 and is never negative).
 */
int
ddl_int_const(ddl_walk *w, const json_t *a_const, int64_t *out)
{
	json_t *v = ddl_json_get(ddl_json_get(a_const, "ival"), "ival");
	int64_t loc;

	if (json_is_integer(v)) {
		*out = (int64_t) json_integer_value(v);
		return 0;
	}
	loc = ddl_json_int(a_const, "location", -1);
	if (loc < 0) {
		*out = 0;
		return 0;
	}
	if ((size_t) loc >= w->sql_len || ddl_scan_int_at(w->sql, w->sql_len, (size_t) loc, out) != 0)
		return tm_error_set(w->err, "integer constant at byte %lld cannot be read back",
							(long long) loc + 1);
	return 0;
}

/* A numeric literal as the parser keeps it ("99999999999", "1.5", "-2.5e3"). */
static bool
is_number_text(const char *s)
{
	bool digit = false;

	if (s == NULL || *s == '\0')
		return false;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			digit = true;
		else if (strchr(".eE+-", *s) == NULL)
			return false;
	}
	return digit;
}

static int
typmod_const(ddl_walk *w, const json_t *a_const, ddl_parse_typmod *tm)
{
	json_t *fval = ddl_json_get(a_const, "fval");
	json_t *sval = ddl_json_get(a_const, "sval");

	if (ddl_json_get(a_const, "ival") != NULL) {
		tm->kind = DDL_PARSE_TYPMOD_INT;
		return ddl_int_const(w, a_const, &tm->ival);
	}
	if (fval != NULL && is_number_text(ddl_json_str(fval, "fval"))) {
		tm->kind = DDL_PARSE_TYPMOD_NUMBER;
		tm->text = ddl_walk_strdup(w, ddl_json_str(fval, "fval"));
		return 0;
	}
	if (sval != NULL) {
		const char *text = ddl_json_str(sval, "sval");

		tm->kind = DDL_PARSE_TYPMOD_STRING;
		tm->text = ddl_walk_strdup(w, text != NULL ? text : "");
		return 0;
	}
	return tm_error_set(w->err, "type modifier is not an integer, number or string");
}

/* A typmod written as a bare identifier: mytype(foo). */
static int
typmod_ident(ddl_walk *w, const json_t *colref, ddl_parse_typmod *tm)
{
	json_t *fields = ddl_json_array(colref, "fields");
	const char *name;

	if (json_array_size(fields) != 1)
		return tm_error_set(w->err, "type modifier is a qualified name");
	name = ddl_json_str(ddl_json_node(json_array_get(fields, 0), "String"), "sval");
	if (name == NULL)
		return tm_error_set(w->err, "type modifier is not a name");
	tm->kind = DDL_PARSE_TYPMOD_IDENT;
	tm->text = ddl_walk_strdup(w, name);
	return 0;
}

static int
read_typmods(ddl_walk *w, const json_t *type_name, ddl_parse_type *t)
{
	json_t *list = ddl_json_array(type_name, "typmods");
	size_t n = json_array_size(list);

	if (n == 0)
		return 0;
	t->typmods = arena_zalloc(&w->res->mem, n * sizeof(*t->typmods));
	for (size_t i = 0; i < n; i++) {
		json_t *item = json_array_get(list, i);
		json_t *body;
		int rc;

		if ((body = ddl_json_node(item, "A_Const")) != NULL)
			rc = typmod_const(w, body, &t->typmods[i]);
		else if ((body = ddl_json_node(item, "ColumnRef")) != NULL)
			rc = typmod_ident(w, body, &t->typmods[i]);
		else
			rc = tm_error_set(w->err, "type modifier is an expression (%s)",
							  ddl_json_node_name(item) ? ddl_json_node_name(item) : "?");
		if (rc != 0)
			return rc;
	}
	t->n_typmods = n;
	return 0;
}

/* [] is written {"Integer":{}} (its -1 is dropped like any non-positive
 * value): it, and the indistinguishable [0], come out as -1. */
static int
read_array_bounds(ddl_walk *w, const json_t *type_name, ddl_parse_type *t)
{
	json_t *list = ddl_json_array(type_name, "arrayBounds");
	size_t n = json_array_size(list);

	if (n == 0)
		return 0;
	t->array_bounds = arena_alloc(&w->res->mem, n * sizeof(*t->array_bounds));
	for (size_t i = 0; i < n; i++) {
		json_t *integer = ddl_json_node(json_array_get(list, i), "Integer");
		int64_t v = ddl_json_int(integer, "ival", -1);

		if (integer == NULL)
			return tm_error_set(w->err, "array bound is not an integer");
		t->array_bounds[i] = (v > 0 && v <= INT32_MAX) ? (int) v : -1;
	}
	t->n_array_bounds = n;
	return 0;
}

/*
 * Fills *out from a TypeName body, canonical spelling included. Errors
 * (with w->err set) on shapes a column type cannot have: no name, %TYPE,
 * a typmod that is an expression.
 */
int
ddl_type_read(ddl_walk *w, const json_t *type_name, ddl_parse_type *out)
{
	strbuf sb = STRBUF_INIT;
	int rc;

	memset(out, 0, sizeof(*out));
	if (type_name == NULL || !json_is_object(type_name))
		return tm_error_set(w->err, "type name missing");
	if (ddl_json_bool(type_name, "pct_type"))
		return tm_error_set(w->err, "%%TYPE is not a column type");
	if (ddl_walk_names(w, ddl_json_array(type_name, "names"), &out->names, &out->n_names) != 0)
		return -1;
	out->setof = ddl_json_bool(type_name, "setof");
	if (read_typmods(w, type_name, out) != 0 || read_array_bounds(w, type_name, out) != 0)
		return -1;
	rc = ddl_parse_type_render(out, &sb, w->err);
	if (rc == 0)
		out->canonical = ddl_walk_strdup(w, strbuf_str(&sb));
	strbuf_free(&sb);
	return rc;
}

/* A string literal that means the same whatever standard_conforming_strings
 * says: E'...' with backslashes doubled when it holds one, '...' otherwise. */
static void
append_literal(strbuf *sb, const char *s)
{
	bool backslash = strchr(s, '\\') != NULL;

	if (backslash)
		strbuf_appendc(sb, 'E');
	strbuf_appendc(sb, '\'');
	for (; *s; s++) {
		if (*s == '\'' || (backslash && *s == '\\'))
			strbuf_appendc(sb, *s);
		strbuf_appendc(sb, *s);
	}
	strbuf_appendc(sb, '\'');
}

static int
check_renderable(const ddl_parse_type *t, tm_error *err)
{
	if (t == NULL || t->n_names == 0 || t->names == NULL)
		return tm_error_set(err, "type has no name");
	for (size_t i = 0; i < t->n_names; i++)
		if (t->names[i] == NULL || t->names[i][0] == '\0')
			return tm_error_set(err, "type name component %zu is empty", i + 1);
	for (size_t i = 0; i < t->n_typmods; i++) {
		const ddl_parse_typmod *tm = &t->typmods[i];

		if (tm->kind > DDL_PARSE_TYPMOD_IDENT)
			return tm_error_set(err, "type modifier %zu is of unknown kind", i + 1);
		if (tm->kind == DDL_PARSE_TYPMOD_INT)
			continue;
		if (tm->text == NULL)
			return tm_error_set(err, "type modifier %zu has no text", i + 1);
		if (tm->kind == DDL_PARSE_TYPMOD_NUMBER && !is_number_text(tm->text))
			return tm_error_set(err, "type modifier %zu is not a number", i + 1);
		if (tm->kind == DDL_PARSE_TYPMOD_IDENT && tm->text[0] == '\0')
			return tm_error_set(err, "type modifier %zu is an empty name", i + 1);
	}
	return 0;
}

static void
append_typmod(strbuf *sb, const ddl_parse_typmod *tm)
{
	switch (tm->kind) {
	case DDL_PARSE_TYPMOD_INT:
		strbuf_appendf(sb, "%lld", (long long) tm->ival);
		break;
	case DDL_PARSE_TYPMOD_NUMBER:
		strbuf_append(sb, tm->text);
		break;
	case DDL_PARSE_TYPMOD_STRING:
		append_literal(sb, tm->text);
		break;
	case DDL_PARSE_TYPMOD_IDENT:
		strbuf_append_ident(sb, tm->text);
		break;
	}
}

int
ddl_parse_type_render(const ddl_parse_type *t, strbuf *out, tm_error *err)
{
	if (check_renderable(t, err) != 0)
		return -1;
	if (t->setof)
		strbuf_append(out, "SETOF ");
	for (size_t i = 0; i < t->n_names; i++) {
		if (i > 0)
			strbuf_appendc(out, '.');
		strbuf_append_ident(out, t->names[i]);
	}
	for (size_t i = 0; i < t->n_typmods; i++) {
		strbuf_append(out, i == 0 ? "(" : ",");
		append_typmod(out, &t->typmods[i]);
	}
	if (t->n_typmods > 0)
		strbuf_appendc(out, ')');
	for (size_t i = 0; i < t->n_array_bounds; i++)
		strbuf_append(out, "[]");
	return 0;
}
