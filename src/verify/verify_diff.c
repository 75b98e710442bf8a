#include "verify_diff.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* ---- rows ---- */

void
verify_rows_init(verify_rows *r, int nkeys, int ncols)
{
	memset(r, 0, sizeof *r);
	r->nkeys = nkeys;
	r->ncols = ncols;
}

void
verify_rows_add(verify_rows *r, const char *const *cells)
{
	int width = r->nkeys + r->ncols;

	if (r->nrows == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->cells = xrealloc(r->cells, sizeof(char *) * (size_t) r->cap * (size_t) width);
	}
	for (int i = 0; i < width; i++)
		r->cells[(size_t) r->nrows * (size_t) width + (size_t) i] = xstrdup(cells[i]);
	r->nrows++;
}

void
verify_rows_clear(verify_rows *r)
{
	size_t cells = (size_t) r->nrows * (size_t) (r->nkeys + r->ncols);

	for (size_t i = 0; i < cells; i++)
		free(r->cells[i]);
	free(r->cells);
	verify_rows_init(r, r->nkeys, r->ncols);
}

char *const *
verify_rows_row(const verify_rows *r, int row)
{
	return r->cells + (size_t) row * (size_t) (r->nkeys + r->ncols);
}

/* ---- differences ---- */

void
verify_diffs_init(verify_diffs *d, int nkeys)
{
	memset(d, 0, sizeof *d);
	d->nkeys = nkeys;
}

static void
diff_clear(verify_diff *d, int nkeys)
{
	for (int i = 0; i < nkeys; i++)
		free(d->key[i]);
	free(d->key);
	for (int i = 0; i < d->nvalues; i++) {
		free(d->values[i].source);
		free(d->values[i].target);
	}
	free(d->values);
}

void
verify_diffs_clear(verify_diffs *d)
{
	for (int i = 0; i < d->n; i++)
		diff_clear(&d->items[i], d->nkeys);
	free(d->items);
	verify_diffs_init(d, d->nkeys);
}

/* Appends a difference with a copy of key; returns it (values to add). */
static verify_diff *
diffs_add(verify_diffs *d, verify_diff_kind kind, char *const *key)
{
	verify_diff *x;

	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 16;
		d->items = xrealloc(d->items, sizeof(verify_diff) * (size_t) d->cap);
	}
	x = &d->items[d->n++];
	memset(x, 0, sizeof *x);
	x->kind = kind;
	x->key = xcalloc((size_t) d->nkeys, sizeof(char *));
	for (int i = 0; i < d->nkeys; i++)
		x->key[i] = xstrdup(key[i]);
	return x;
}

static void
diff_add_value(verify_diff *x, int col, const char *source, const char *target)
{
	x->values = xrealloc(x->values, sizeof(verify_diff_value) * (size_t) (x->nvalues + 1));
	x->values[x->nvalues].col = col;
	x->values[x->nvalues].source = xstrdup(source);
	x->values[x->nvalues].target = xstrdup(target);
	x->nvalues++;
}

/* ---- keys: texts joined unambiguously, sorted for lookups ---- */

typedef struct keyed {
	char *joined;  /* owned: "<len>:<text>" per key value, "-" for NULL */
	int index;
} keyed;

static char *
join_key(char *const *cells, const int *idx, int nkeys)
{
	strbuf sb = STRBUF_INIT;

	for (int i = 0; i < nkeys; i++) {
		const char *v = cells[idx ? idx[i] : i];

		if (v == NULL)
			strbuf_append(&sb, "-");
		else
			strbuf_appendf(&sb, "%zu:%s", strlen(v), v);
	}
	return strbuf_steal(&sb);
}

static int
keyed_cmp(const void *a, const void *b)
{
	const keyed *x = a, *y = b;
	int c = strcmp(x->joined, y->joined);

	return c != 0 ? c : (x->index > y->index) - (x->index < y->index);
}

static void
keyed_free(keyed *k, int n)
{
	for (int i = 0; i < n; i++)
		free(k[i].joined);
	free(k);
}

void
verify_diffs_unique(verify_diffs *d)
{
	int n = d->n;
	keyed *k = xcalloc((size_t) n, sizeof(keyed));
	bool *dup = xcalloc((size_t) n, sizeof(bool));
	int kept = 0;

	for (int i = 0; i < n; i++) {
		k[i].joined = join_key(d->items[i].key, NULL, d->nkeys);
		k[i].index = i;
	}
	qsort(k, (size_t) n, sizeof(keyed), keyed_cmp);
	for (int i = 1; i < n; i++)
		dup[k[i].index] = strcmp(k[i].joined, k[i - 1].joined) == 0;
	for (int i = 0; i < n; i++) {
		if (dup[i])
			diff_clear(&d->items[i], d->nkeys);
		else
			d->items[kept++] = d->items[i];
	}
	d->n = kept;
	keyed_free(k, n);
	free(dup);
}

/* ---- comparing rows ---- */

/* The target rows sorted by compared key, for binary search. */
static keyed *
index_rows(const verify_rows *r, const int *key_idx)
{
	keyed *k = xcalloc((size_t) r->nrows, sizeof(keyed));

	for (int i = 0; i < r->nrows; i++) {
		k[i].joined = join_key(verify_rows_row(r, i) + r->nkeys, key_idx, r->nkeys);
		k[i].index = i;
	}
	qsort(k, (size_t) r->nrows, sizeof(keyed), keyed_cmp);
	return k;
}

/* The target row with the same compared key as a source row, or -1. */
static int
find_row(const keyed *index, int n, char *const *source_row, int nkeys, const int *key_idx)
{
	char *joined = join_key(source_row + nkeys, key_idx, nkeys);
	int lo = 0, hi = n - 1, found = -1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		int c = strcmp(joined, index[mid].joined);

		if (c == 0) {
			found = index[mid].index;
			break;
		}
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	free(joined);
	return found;
}

static bool
same_text(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void
compare_values(char *const *s, char *const *t, const verify_rows *source, verify_diffs *out)
{
	verify_diff *x = NULL;

	for (int c = 0; c < source->ncols; c++) {
		const char *sv = s[source->nkeys + c], *tv = t[source->nkeys + c];

		if (same_text(sv, tv))
			continue;
		if (x == NULL)
			x = diffs_add(out, VERIFY_DIFF_VALUES, s);
		diff_add_value(x, c, sv, tv);
	}
}

/* Target rows before `upto` that no source row matched: extra on the target. */
static int
emit_extra(const verify_rows *target, const bool *matched, int from, int upto, verify_diffs *out)
{
	for (int j = from; j < upto; j++)
		if (!matched[j])
			diffs_add(out, VERIFY_DIFF_EXTRA, verify_rows_row(target, j));
	return upto > from ? upto : from;
}

void
verify_diff_rows(const verify_rows *source, const verify_rows *target, const int *key_idx,
                 verify_diffs *out)
{
	keyed *index = index_rows(target, key_idx);
	int *match = xcalloc((size_t) source->nrows, sizeof(int));
	bool *matched = xcalloc((size_t) target->nrows, sizeof(bool));
	int next = 0;

	for (int i = 0; i < source->nrows; i++) {
		match[i] = find_row(index, target->nrows, verify_rows_row(source, i), source->nkeys,
		                    key_idx);
		if (match[i] >= 0)
			matched[match[i]] = true;
	}
	for (int i = 0; i < source->nrows; i++) {
		char *const *s = verify_rows_row(source, i);

		if (match[i] < 0) {
			diffs_add(out, VERIFY_DIFF_MISSING, s);
			continue;
		}
		next = emit_extra(target, matched, next, match[i], out);
		compare_values(s, verify_rows_row(target, match[i]), source, out);
	}
	emit_extra(target, matched, next, target->nrows, out);
	keyed_free(index, target->nrows);
	free(match);
	free(matched);
}

/* ---- text ---- */

const char *
verify_diff_kind_name(verify_diff_kind kind)
{
	switch (kind) {
	case VERIFY_DIFF_MISSING: return "missing on the target";
	case VERIFY_DIFF_EXTRA: return "extra on the target";
	default: return "values differ";
	}
}

/* Where to cut s to at most max bytes without splitting a UTF-8 character. */
static size_t
cut_at(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
		max--;
	return max;
}

/* One byte of a value; in a literal, quotes are doubled. */
static void
append_char_escaped(strbuf *sb, unsigned char c, bool literal)
{
	switch (c) {
	case '\n': strbuf_append(sb, "\\n"); break;
	case '\t': strbuf_append(sb, "\\t"); break;
	case '\r': strbuf_append(sb, "\\r"); break;
	case '\'': strbuf_append(sb, literal ? "''" : "'"); break;
	default:
		if (c < 0x20 || c == 0x7f)
			strbuf_appendf(sb, "\\x%02x", c);
		else
			strbuf_appendc(sb, (char) c);
	}
}

static void
append_literal(strbuf *sb, const char *v)
{
	size_t len, cut;

	if (v == NULL) {
		strbuf_append(sb, "NULL");
		return;
	}
	len = strlen(v);
	cut = cut_at(v, len, VERIFY_DIFF_VALUE_MAX);
	strbuf_appendc(sb, '\'');
	for (size_t i = 0; i < cut; i++)
		append_char_escaped(sb, (unsigned char) v[i], true);
	strbuf_append(sb, cut < len ? "'..." : "'");
}

void
verify_diff_format(strbuf *sb, const verify_diff *d, int nkeys, const char *table,
                   const char *const *key_names, const char *const *col_names)
{
	strbuf_appendf(sb, "%s key (", table);
	for (int i = 0; i < nkeys; i++)
		strbuf_appendf(sb, "%s%s", i > 0 ? ", " : "", key_names[i]);
	strbuf_append(sb, ")=(");
	for (int i = 0; i < nkeys; i++) {
		strbuf_append(sb, i > 0 ? ", " : "");
		for (const char *p = d->key[i] ? d->key[i] : "NULL"; *p != '\0'; p++)
			append_char_escaped(sb, (unsigned char) *p, false);
	}
	strbuf_appendf(sb, "): %s", verify_diff_kind_name(d->kind));
	for (int i = 0; i < d->nvalues; i++) {
		strbuf_appendf(sb, "%s%s source ", i > 0 ? ", " : ": ", col_names[d->values[i].col]);
		append_literal(sb, d->values[i].source);
		strbuf_append(sb, " target ");
		append_literal(sb, d->values[i].target);
	}
}
