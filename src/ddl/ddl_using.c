#include "ddl_using.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static bool
names_table(const ddl_parse_change *ch, const char *schema, const char *name)
{
	return name != NULL && ch->table != NULL && strcmp(ch->table, name) == 0 &&
	       (ch->schema == NULL || (schema != NULL && strcmp(ch->schema, schema) == 0));
}

static ddl_using_kind
kind_of(const ddl_parse_change *ch)
{
	if (!ch->has_using)
		return DDL_USING_NONE;
	return ch->using_kind == DDL_PARSE_USING_PLAIN ? DDL_USING_PLAIN : DDL_USING_EXPR;
}

static ddl_using_column *
entry_for(ddl_using_list *l, const char *column)
{
	for (int i = 0; i < l->n; i++)
		if (strcmp(l->cols[i].column, column) == 0)
			return &l->cols[i];
	l->cols = xrealloc(l->cols, sizeof *l->cols * (size_t) (l->n + 1));
	memset(&l->cols[l->n], 0, sizeof l->cols[l->n]);
	l->cols[l->n].column = xstrdup(column);
	return &l->cols[l->n++];
}

void
ddl_using_for_table(const ddl_parse_result *pr, const char *schema, const char *name,
                    const char *old_schema, const char *old_name, ddl_using_list *out)
{
	memset(out, 0, sizeof *out);
	for (size_t i = 0; pr != NULL && i < pr->n_changes; i++) {
		const ddl_parse_change *ch = &pr->changes[i];
		ddl_using_column *c;
		ddl_using_kind k;

		if (ch->kind != DDL_PARSE_ALTER_COLUMN_TYPE || ch->column.name == NULL ||
		    !(names_table(ch, schema, name) || names_table(ch, old_schema, old_name)))
			continue;
		c = entry_for(out, ch->column.name);
		k = kind_of(ch);
		if (k <= c->kind)
			continue;
		c->kind = k;
		free(c->text);
		c->text = ch->using_text != NULL ? xstrdup(ch->using_text) : NULL;
	}
}

void
ddl_using_list_free(ddl_using_list *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->cols[i].column);
		free(l->cols[i].text);
	}
	free(l->cols);
	memset(l, 0, sizeof *l);
}

const ddl_using_column *
ddl_using_find(const ddl_using_list *l, const char *name, const char *other)
{
	for (int i = 0; l != NULL && i < l->n; i++)
		if ((name != NULL && strcmp(l->cols[i].column, name) == 0) ||
		    (other != NULL && strcmp(l->cols[i].column, other) == 0))
			return &l->cols[i];
	return NULL;
}

const char *
ddl_using_kind_name(ddl_using_kind kind)
{
	static const char *const names[] = {"unknown", "none", "plain", "expression"};

	return (unsigned) kind < 4 ? names[kind] : "?";
}
