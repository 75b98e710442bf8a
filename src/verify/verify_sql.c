#include "verify_sql.h"

#include <stdlib.h>
#include <string.h>

#include "cast.h"
#include "codec.h"
#include "sqltype.h"
#include "xalloc.h"

static char *
render(const sqltype *t)
{
	strbuf sb = STRBUF_INIT;

	sqltype_render(t, &sb);
	return strbuf_steal(&sb);
}

/* Whether t is plain text (a common type of text means: compare texts). */
static bool
is_text(const sqltype *t)
{
	return t->schema[0] == '\0' && !t->quoted && t->ndims == 0 && strcmp(t->name, "text") == 0;
}

void
verify_sql_column_init(verify_sql_column *c, const char *name, const char *source_type,
                       const char *target_type)
{
	sqltype s, t, common;
	tm_error err;

	c->name = xstrdup(name);
	c->mode = VERIFY_SQL_TEXT;
	c->type = c->source_type = NULL;
	if (strcmp(source_type, target_type) == 0 || sqltype_parse(source_type, &s, &err) != 0 ||
	    sqltype_parse(target_type, &t, &err) != 0)
		return;
	c->source_type = render(&s);
	switch (cast_classify(&s, &t)) {
	case CAST_SAME:
		return;
	case CAST_WIDEN:
		c->mode = VERIFY_SQL_TARGET;
		c->type = render(&t);
		return;
	default:
		break;
	}
	if (cast_common_type(&s, &t, &common, &err) != 0 || is_text(&common))
		return;
	c->mode = VERIFY_SQL_COMMON;
	c->type = render(&common);
}

void
verify_sql_column_clear(verify_sql_column *c)
{
	free(c->name);
	free(c->type);
	free(c->source_type);
	c->name = c->type = c->source_type = NULL;
}

/* A compared value as its text (codec.h), on the side the flags say. Plain statements
 * keep the key columns converted: rows of both sides match by key. */
static void
append_value(strbuf *sql, const verify_sql_table *t, int col, unsigned flags)
{
	const verify_sql_column *c = &t->cols[col];
	bool plain = flags & VERIFY_SQL_PLAIN;
	strbuf expr = STRBUF_INIT;
	bool cast;

	for (int i = 0; plain && i < t->nkeys; i++)
		plain = t->key_idx[i] != col;
	cast = !plain && (c->mode == VERIFY_SQL_COMMON ||
	                  (c->mode == VERIFY_SQL_TARGET && (flags & VERIFY_SQL_SOURCE)));
	strbuf_append_ident(&expr, c->name);
	if (cast) {
		strbuf_append(&expr, "::");
		strbuf_append(&expr, c->type);
	}
	codec_append_value_text(sql, expr.data);
	strbuf_free(&expr);
}

/* The row's hash: XOR over the columns of hashtextextended(text, i). */
static void
append_row_hash(strbuf *sql, const verify_sql_table *t, unsigned flags)
{
	for (int i = 0; i < t->ncols; i++) {
		if (i > 0)
			strbuf_append(sql, " # ");
		strbuf_append(sql, "coalesce(hashtextextended(");
		append_value(sql, t, i, flags);
		strbuf_appendf(sql, ", %d), %d)", i + 1, -(i + 1));
	}
	if (t->ncols == 0)
		strbuf_append(sql, "0::bigint");
}

/* "k1", "k2" (each with a prefix, e.g. "t."). */
static void
append_keys(strbuf *sql, const verify_sql_table *t, const char *prefix)
{
	for (int i = 0; i < t->nkeys; i++) {
		strbuf_append(sql, i > 0 ? ", " : "");
		strbuf_append(sql, prefix);
		strbuf_append_ident(sql, t->keys[i]);
	}
}

/* The keys' texts (codec.h): concat("k1"), concat("k2"). */
static void
append_key_texts(strbuf *sql, const verify_sql_table *t)
{
	for (int i = 0; i < t->nkeys; i++) {
		strbuf_append(sql, i > 0 ? ", " : "");
		codec_append_key_text(sql, NULL, t->keys[i]);
	}
}

static const char *
key_type(const verify_sql_table *t, int k)
{
	return t->key_types != NULL ? t->key_types[k] : NULL;
}

/* The key columns as compared with values (codec.h). */
static void
append_key_operands(strbuf *sql, const verify_sql_table *t)
{
	for (int i = 0; i < t->nkeys; i++) {
		strbuf_append(sql, i > 0 ? ", " : "");
		codec_append_key_operand(sql, NULL, t->keys[i], key_type(t, i));
	}
}

/* ($first, ...) as key values */
static void
append_key_params(strbuf *sql, const verify_sql_table *t, int first)
{
	for (int i = 0; i < t->nkeys; i++) {
		strbuf_append(sql, i > 0 ? ", " : "");
		codec_append_key_param(sql, first + i, key_type(t, i));
	}
}

/* (keys) op ($first, ...): a row comparison, or a plain one for one key. */
static void
append_key_compare(strbuf *sql, const verify_sql_table *t, const char *op, int first)
{
	strbuf_append(sql, t->nkeys > 1 ? "(" : "");
	append_key_operands(sql, t);
	strbuf_appendf(sql, "%s %s %s", t->nkeys > 1 ? ")" : "", op, t->nkeys > 1 ? "(" : "");
	append_key_params(sql, t, first);
	strbuf_append(sql, t->nkeys > 1 ? ")" : "");
}

/* FROM table t */
static void
append_table(strbuf *sql, const verify_sql_table *t)
{
	strbuf_append(sql, t->only ? " FROM ONLY " : " FROM ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " t");
}

/* FROM table t, and WHERE t."c" IS NULL (live rows only) when t has a
 * live column; returns whether it wrote WHERE (the next condition takes
 * AND). */
static bool
append_from(strbuf *sql, const verify_sql_table *t)
{
	append_table(sql, t);
	if (t->live_column == NULL)
		return false;
	strbuf_append(sql, " WHERE t.");
	strbuf_append_ident(sql, t->live_column);
	strbuf_append(sql, " IS NULL");
	return true;
}

/*
 * FROM table t [WHERE live rows and bounds]; returns the number of
 * parameters used. ORDER BY names t's columns as t."c": an unqualified
 * name would be an output column of the same name (such as "c"::text) if
 * there is one.
 */
static int
append_from_where(strbuf *sql, const verify_sql_table *t, unsigned flags)
{
	bool where = append_from(sql, t);
	int n = 0;

	if (flags & VERIFY_SQL_LOWER) {
		strbuf_append(sql, where ? " AND " : " WHERE ");
		append_key_compare(sql, t, ">", 1);
		n += t->nkeys;
		where = true;
	}
	if (flags & VERIFY_SQL_UPPER) {
		strbuf_append(sql, where ? " AND " : " WHERE ");
		append_key_compare(sql, t, "<=", n + 1);
		n += t->nkeys;
	}
	return n;
}

static void
append_order_by(strbuf *sql, const verify_sql_table *t)
{
	strbuf_append(sql, " ORDER BY ");
	append_keys(sql, t, "t.");
}

/*
 * Two scans of the same rows in one statement (one snapshot): the first
 * sums them, the second reads the key of the last one with OFFSET, which
 * is cheaper than keeping the rows to find it.
 */
void
verify_sql_page(strbuf *sql, const verify_sql_table *t, unsigned flags)
{
	int n;

	flags &= ~VERIFY_SQL_UPPER;
	strbuf_append(sql, "SELECT a.n, a.h, l.* FROM (SELECT count(*) AS n,"
	              " coalesce(sum(h), 0)::text AS h FROM (SELECT ");
	append_row_hash(sql, t, flags);
	strbuf_append(sql, " AS h");
	n = append_from_where(sql, t, flags);
	append_order_by(sql, t);
	strbuf_appendf(sql, " LIMIT $%d) p) a LEFT JOIN (SELECT ", n + 1);
	append_key_texts(sql, t);
	append_from_where(sql, t, flags);
	append_order_by(sql, t);
	strbuf_appendf(sql, " OFFSET $%d LIMIT 1) l ON true", n + 2);
}

void
verify_sql_range_sum(strbuf *sql, const verify_sql_table *t, unsigned flags)
{
	strbuf_append(sql, "SELECT count(*), coalesce(sum(");
	append_row_hash(sql, t, flags);
	strbuf_append(sql, "), 0)::text");
	append_from_where(sql, t, flags);
}

/* The keys and row numbers are named k1..kn and rn inside: no column
 * name can clash with them. */
void
verify_sql_split(strbuf *sql, const verify_sql_table *t, unsigned flags)
{
	int n;

	strbuf_append(sql, "SELECT ");
	for (int i = 0; i < t->nkeys; i++) {
		const char *type = t->cols[t->key_idx[i]].source_type;

		strbuf_appendf(sql, "%sconcat(x.k%d", i > 0 ? ", " : "", i + 1);
		if (type != NULL && !(flags & VERIFY_SQL_SOURCE))
			strbuf_appendf(sql, "::%s", type);
		strbuf_appendc(sql, ')');
	}
	strbuf_append(sql, " FROM (SELECT ");
	for (int i = 0; i < t->nkeys; i++) {
		strbuf_append_ident(sql, t->keys[i]);
		strbuf_appendf(sql, " AS k%d, ", i + 1);
	}
	strbuf_append(sql, "row_number() OVER (ORDER BY ");
	append_keys(sql, t, "t.");
	strbuf_append(sql, ") AS rn");
	n = append_from_where(sql, t, flags);
	strbuf_appendf(sql, ") x WHERE x.rn %% $%d = 0 AND x.rn < $%d ORDER BY x.rn", n + 1, n + 2);
}

/* One row of filtered aggregates over the rows numbered by part: one scan
 * in key order, where GROUP BY would sort the rows by part first. */
void
verify_sql_part_sums(strbuf *sql, const verify_sql_table *t, unsigned flags, int nsplits)
{
	int first = ((flags & VERIFY_SQL_LOWER) ? t->nkeys : 0) +
	            ((flags & VERIFY_SQL_UPPER) ? t->nkeys : 0) + 1;

	strbuf_append(sql, "SELECT ");
	for (int i = 0; i <= nsplits; i++)
		strbuf_appendf(sql, "%scount(*) FILTER (WHERE p.b = %d),"
		               " coalesce(sum(p.h) FILTER (WHERE p.b = %d), 0)::text",
		               i > 0 ? ", " : "", i, i);
	strbuf_append(sql, " FROM (SELECT CASE");
	for (int i = 0; i < nsplits; i++) {
		strbuf_append(sql, " WHEN ");
		append_key_compare(sql, t, "<=", first + i * t->nkeys);
		strbuf_appendf(sql, " THEN %d", i);
	}
	strbuf_appendf(sql, " ELSE %d END AS b, ", nsplits);
	append_row_hash(sql, t, flags);
	strbuf_append(sql, " AS h");
	append_from_where(sql, t, flags);
	strbuf_append(sql, ") p");
}

static void
append_row_columns(strbuf *sql, const verify_sql_table *t, unsigned flags)
{
	strbuf_append(sql, "SELECT ");
	append_key_texts(sql, t);
	for (int i = 0; i < t->ncols; i++) {
		strbuf_append(sql, ", ");
		append_value(sql, t, i, flags);
	}
}

void
verify_sql_rows(strbuf *sql, const verify_sql_table *t, unsigned flags)
{
	append_row_columns(sql, t, flags);
	append_from_where(sql, t, flags);
	append_order_by(sql, t);
}

void
verify_sql_lookup(strbuf *sql, const verify_sql_table *t, unsigned flags, int nrows)
{
	append_row_columns(sql, t, flags);
	strbuf_append(sql, append_from(sql, t) ? " AND (" : " WHERE (");
	append_key_operands(sql, t);
	strbuf_append(sql, ") IN (");
	for (int r = 0; r < nrows; r++) {
		strbuf_append(sql, r > 0 ? ", (" : "(");
		append_key_params(sql, t, r * t->nkeys + 1);
		strbuf_appendc(sql, ')');
	}
	strbuf_appendc(sql, ')');
	append_order_by(sql, t);
}

void
verify_sql_marked_count(strbuf *sql, const verify_sql_table *t)
{
	strbuf_append(sql, "SELECT count(*)");
	append_table(sql, t);
	strbuf_append(sql, " WHERE t.");
	strbuf_append_ident(sql, t->live_column);
	strbuf_append(sql, " IS NOT NULL");
}
