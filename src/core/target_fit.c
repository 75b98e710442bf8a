/*
 * target_fit.c: an existing target table against the source's definition
 * (target_fit.h).
 */
#include "target_fit.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static const target_fit_column *
find(const target_fit_table *t, const char *name)
{
	for (int i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i].name, name) == 0)
			return &t->cols[i];
	return NULL;
}

static void
list_add(strbuf *sb, const char *text)
{
	if (sb->len > 0)
		strbuf_append(sb, ", ");
	strbuf_append(sb, text);
}

/* The source columns the stream writes that the target lacks. */
static void
missing_columns(const tabledef *def, const target_fit_table *t, strbuf *out)
{
	for (int i = 0; i < def->ncols; i++)
		if (tabledef_column_streamed(&def->cols[i]) && find(t, def->cols[i].name) == NULL)
			list_add(out, def->cols[i].name);
}

/* The target's own columns that refuse a row without a value. */
static void
required_columns(const tabledef *def, const target_fit_table *t, strbuf *out)
{
	for (int i = 0; i < t->ncols; i++)
		if (t->cols[i].required && tabledef_find(def, t->cols[i].name) == NULL)
			list_add(out, t->cols[i].name);
}

/* Built-in columns the target declares with another type. */
static void
retyped_columns(const tabledef *def, const target_fit_table *t, strbuf *differ)
{
	for (int i = 0; i < def->ncols; i++) {
		const tabledef_column *c = &def->cols[i];
		const char *want = c->target_type != NULL ? c->target_type : c->type_sql;
		const target_fit_column *tc = find(t, c->name);

		if (tc == NULL || c->type_ref != 0 || c->kept_as != NULL || want == NULL ||
		    strcmp(tc->type, want) == 0)
			continue;
		if (differ->len > 0)
			strbuf_append(differ, ", ");
		strbuf_appendf(differ, "%s (%s on the source, %s here)", c->name, want, tc->type);
	}
}

bool
target_fit_check(const tabledef *def, const target_fit_table *t, strbuf *why, strbuf *differ)
{
	strbuf list = STRBUF_INIT;
	size_t before = why->len;

	missing_columns(def, t, &list);
	if (list.len > 0)
		strbuf_appendf(why, "%sIt lacks the source's column(s) %s, which tidemark writes.",
		               why->len > before ? " " : "", list.data);
	strbuf_reset(&list);
	required_columns(def, t, &list);
	if (list.len > 0)
		strbuf_appendf(why, "%sIts own column(s) %s are NOT NULL without a default, so it "
		               "refuses the source's rows.", why->len > before ? " " : "", list.data);
	if (tabledef_nkeys(def) > 0 && !t->key_index) {
		const tabledef_column **keys = xcalloc((size_t) def->ncols, sizeof *keys);
		int n = tabledef_key_columns(def, keys);

		strbuf_reset(&list);
		for (int i = 0; i < n; i++)
			list_add(&list, keys[i]->name);
		strbuf_appendf(why, "%sIt has no primary key or unique index on (%s), the source's "
		               "key, which tidemark matches rows by.", why->len > before ? " " : "",
		               list.data);
		free(keys);
	}
	strbuf_free(&list);
	retyped_columns(def, t, differ);
	return why->len == before;
}
