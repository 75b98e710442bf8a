/*
 * srctype_steps.c: comparing definitions (see srctype.h): whether a
 * collation can be written as literals, and the steps from one enum or
 * composite type to the next. (Whether two servers order a key alike is
 * codec.h's to say.)
 */
#include "srctype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "xalloc.h"

/* ---- collations ---- */

static bool
safe_literal(const char *s)
{
	if (s == NULL)
		return true;
	if (strlen(s) > 255)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("_-.@=;,", *p) != NULL))
			return false;
	return true;
}

bool
srctype_collation_wellformed(const srctype_collation *c)
{
	return safe_literal(c->collate) && safe_literal(c->ctype) && safe_literal(c->locale) &&
	       c->rules == NULL && (c->provider != 'i' || c->locale != NULL) &&
	       (c->provider != 'c' || (c->collate != NULL && c->ctype != NULL));
}

/* ---- steps ---- */

static srctype_step *
add_step(srctype_steps *s, srctype_step_kind kind, const char *name, const char *new_name)
{
	srctype_step *st;

	s->steps = xrealloc(s->steps, sizeof *st * (size_t) (s->n + 1));
	st = &s->steps[s->n++];
	memset(st, 0, sizeof *st);
	st->kind = kind;
	st->name = xstrdup(name);
	st->new_name = xstrdup(new_name);
	return st;
}

void
srctype_steps_free(srctype_steps *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->steps[i].name);
		free(s->steps[i].new_name);
	}
	free(s->steps);
	s->n = 0;
	s->steps = NULL;
}

static void
temp_name(char *buf, size_t size, int i)
{
	snprintf(buf, size, "tidemark renaming %d", i);
}

/* Renames in one or two steps: old[i] -> new[i] for each i with both set
 * and different; through temporary names when a new name is an old one. */
static void
plan_renames(srctype_steps *out, srctype_step_kind kind, char *const *old_names,
             char *const *new_names, int n, const char *const *taken, int ntaken)
{
	bool two_steps = false;
	char tmp[40];

	for (int i = 0; i < n && !two_steps; i++)
		for (int j = 0; new_names[i] != NULL && j < ntaken && !two_steps; j++)
			two_steps = strcmp(old_names[i], new_names[i]) != 0 &&
			            strcmp(new_names[i], taken[j]) == 0;
	for (int step = two_steps ? 0 : 1; step < 2; step++)
		for (int i = 0; i < n; i++) {
			if (new_names[i] == NULL || strcmp(old_names[i], new_names[i]) == 0)
				continue;
			temp_name(tmp, sizeof tmp, i);
			add_step(out, kind, two_steps && step == 1 ? tmp : old_names[i],
			         step == 0 ? tmp : new_names[i]);
		}
}

/* The index in to of from's label i, -1 when none. */
static int
match_label(const srctype *from, int i, const srctype *to, bool by_oid)
{
	for (int j = 0; j < to->nlabels; j++)
		if (by_oid ? to->labels[j].oid == from->labels[i].oid
		           : strcmp(to->labels[j].label, from->labels[i].label) == 0)
			return j;
	return -1;
}

static bool
all_oids(const srctype *t)
{
	for (int i = 0; i < t->nlabels; i++)
		if (t->labels[i].oid == 0)
			return false;
	return true;
}

/* Where the new label j goes: after the label before it, or before the
 * first existing label, or at the end of an enum that had none. */
static void
plan_add_value(srctype_steps *out, const srctype *to, int j, const bool *old_in_to)
{
	srctype_step *st;
	int first_old = -1;

	for (int k = 0; k < to->nlabels && first_old < 0; k++)
		if (old_in_to[k])
			first_old = k;
	if (j > 0) {
		add_step(out, SRCTYPE_ADD_VALUE, to->labels[j - 1].label, to->labels[j].label);
		return;
	}
	st = add_step(out, SRCTYPE_ADD_VALUE, first_old >= 0 ? to->labels[first_old].label : NULL,
	              to->labels[j].label);
	st->before = first_old >= 0;
}

int
srctype_enum_steps(const srctype *from, const srctype *to, srctype_steps *out, tm_error *err)
{
	bool by_oid = all_oids(from) && all_oids(to);
	bool *old_in_to = xcalloc((size_t) to->nlabels + 1, sizeof(bool));
	char **old_names = xcalloc((size_t) from->nlabels + 1, sizeof(char *));
	char **new_names = xcalloc((size_t) from->nlabels + 1, sizeof(char *));
	int last = -1, rc = 0;

	memset(out, 0, sizeof *out);
	for (int i = 0; i < from->nlabels && rc == 0; i++) {
		int j = match_label(from, i, to, by_oid);

		if (j < 0)
			rc = tm_error_set(err, "value '%s' of %s.%s is gone", from->labels[i].label,
			                  from->schema, from->name);
		else if (j < last)
			rc = tm_error_set(err, "the values of %s.%s are in another order", from->schema,
			                  from->name);
		else {
			last = j;
			old_in_to[j] = true;
			old_names[i] = from->labels[i].label;
			new_names[i] = to->labels[j].label;
		}
	}
	if (rc == 0)
		plan_renames(out, SRCTYPE_RENAME_VALUE, old_names, new_names, from->nlabels,
		             (const char *const *) old_names, from->nlabels);
	for (int j = 0; rc == 0 && j < to->nlabels; j++)
		if (!old_in_to[j])
			plan_add_value(out, to, j, old_in_to);
	free(old_in_to);
	free(old_names);
	free(new_names);
	if (rc != 0)
		srctype_steps_free(out);
	return rc;
}

bool
srctype_attr_same_type(const srctype_attr *a, const srctype_attr *b)
{
	if (a->type_oid != b->type_oid)
		return false;
	return a->type_ref != 0 || strcmp(a->type_sql, b->type_sql) == 0;
}

static const srctype_attr *
attr_by_attnum(const srctype *t, int attnum)
{
	for (int i = 0; i < t->nattrs; i++)
		if (t->attrs[i].attnum == attnum)
			return &t->attrs[i];
	return NULL;
}

int
srctype_composite_steps(const srctype *from, const srctype *to, srctype_steps *out,
                        tm_error *err)
{
	char **old_names = xcalloc((size_t) from->nattrs + 1, sizeof(char *));
	char **new_names = xcalloc((size_t) from->nattrs + 1, sizeof(char *));
	const char **kept = xcalloc((size_t) from->nattrs + 1, sizeof(char *));
	int nkept = 0;

	(void) err;
	memset(out, 0, sizeof *out);
	for (int i = 0; i < from->nattrs; i++) {
		const srctype_attr *n = attr_by_attnum(to, from->attrs[i].attnum);

		old_names[i] = from->attrs[i].name;
		new_names[i] = n != NULL ? n->name : NULL;
		if (n == NULL)
			add_step(out, SRCTYPE_DROP_ATTR, from->attrs[i].name, NULL);
		else
			kept[nkept++] = from->attrs[i].name;
	}
	plan_renames(out, SRCTYPE_RENAME_ATTR, old_names, new_names, from->nattrs, kept, nkept);
	for (int i = 0; i < to->nattrs; i++) {
		const srctype_attr *o = attr_by_attnum(from, to->attrs[i].attnum);

		if (o == NULL)
			add_step(out, SRCTYPE_ADD_ATTR, NULL, to->attrs[i].name)->attr = &to->attrs[i];
		else if (!srctype_attr_same_type(o, &to->attrs[i]))
			add_step(out, SRCTYPE_ALTER_ATTR, to->attrs[i].name, NULL)->attr = &to->attrs[i];
	}
	free(old_names);
	free(new_names);
	free(kept);
	return 0;
}
