#include "ddl_track.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cast.h"
#include "ddl_parse.h"
#include "ident.h"
#include "sqltype.h"

static const char *const policy_names[] = {"widen", "follow", "quarantine", "stop"};

/* The bytes PostgreSQL keeps of a name (NAMEDATALEN - 1). */
#define NAME_BYTES IDENT_NAME_BYTES

int
ddl_policy_parse(const char *text, ddl_policy *out)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(text, policy_names[i]) == 0) {
			*out = (ddl_policy) i;
			return 0;
		}
	return -1;
}

const char *
ddl_policy_name(ddl_policy p)
{
	return (unsigned) p < 4 ? policy_names[p] : "?";
}

/* ---- building the plan ---- */

typedef struct planner {
	const ddl_track_input *in;
	ddl_plan *plan;
	strbuf summary;
	tm_error *err;
} planner;

static ddl_action *
add_action(planner *pl, ddl_action_kind kind, const char *column, const char *name)
{
	ddl_plan *p = pl->plan;
	ddl_action *a;

	p->actions = realloc(p->actions, sizeof *a * (size_t) (p->n + 1));
	if (p->actions == NULL)
		abort();
	a = &p->actions[p->n++];
	memset(a, 0, sizeof *a);
	a->kind = kind;
	a->column = xstrdup(column);
	a->name = xstrdup(name);
	return a;
}

/* The collation the target column is to have: NULL for the default. */
static const srctype_collation *
wanted_collation(const tabledef_column *c)
{
	return c->collate && c->collation != NULL && !c->collation->is_default ? c->collation : NULL;
}

static void
set_collation(ddl_action *a, const tabledef_column *c)
{
	const srctype_collation *coll = wanted_collation(c);

	if (coll != NULL) {
		a->coll_schema = xstrdup(coll->schema);
		a->coll_name = xstrdup(coll->name);
	}
}

static void
note(planner *pl, const char *what)
{
	if (strstr(strbuf_str(&pl->summary), what) != NULL)
		return;
	if (pl->summary.len > 0)
		strbuf_append(&pl->summary, ", ");
	strbuf_append(&pl->summary, what);
}

static void
set_why(ddl_action *a, const char *fmt, const char *x, const char *y)
{
	strbuf sb = STRBUF_INIT;

	strbuf_appendf(&sb, fmt, x ? x : "", y ? y : "");
	a->why = strbuf_steal(&sb);
}

static const char *
target_type(const planner *pl, const char *column)
{
	const ddl_track_target *t = &pl->in->target;

	for (int i = 0; i < t->ncols; i++)
		if (strcmp(t->names[i], column) == 0)
			return t->types[i];
	return NULL;
}

static const tabledef_column *
by_attnum(const tabledef *t, int attnum)
{
	for (int i = 0; i < t->ncols; i++)
		if (t->cols[i].attnum == attnum)
			return &t->cols[i];
	return NULL;
}

/* Whether a column of the target has this name once the actions planned
 * so far have run. */
static bool
name_taken(const planner *pl, const char *name)
{
	bool taken = target_type(pl, name) != NULL;

	for (int i = 0; i < pl->plan->n; i++) {
		const ddl_action *a = &pl->plan->actions[i];

		if ((a->kind == DDL_ACT_RENAME_COLUMN || a->kind == DDL_ACT_DROP_COLUMN) &&
		    strcmp(a->column, name) == 0)
			taken = false;
		if ((a->kind == DDL_ACT_RENAME_COLUMN && strcmp(a->name, name) == 0) ||
		    (a->kind == DDL_ACT_ADD_COLUMN && strcmp(a->column, name) == 0))
			taken = true;
	}
	return taken;
}

/* The name a target column of this name has after the renames planned so
 * far. */
static const char *
current_name(const planner *pl, const char *name)
{
	for (int i = 0; i < pl->plan->n; i++) {
		const ddl_action *a = &pl->plan->actions[i];

		if (a->kind == DDL_ACT_RENAME_COLUMN && strcmp(a->column, name) == 0)
			name = a->name;
	}
	return name;
}

/* A name for a kept column moved aside that no column has or is to get
 * (ident_aside_name). */
static void
aside_name(const planner *pl, const char *name, char out[NAME_BYTES + 1])
{
	for (int n = 1;; n++) {
		ident_aside_name(name, n, out);
		if (!name_taken(pl, out) && tabledef_find(pl->in->now->def, out) == NULL)
			return;
	}
}

/* Before a column is added or renamed under name: a kept column (dropped
 * on the source) that has it on the target is moved aside. */
static void
make_room(planner *pl, const char *name)
{
	char aside[NAME_BYTES + 1];

	if (!name_taken(pl, name))
		return;
	aside_name(pl, name, aside);
	set_why(add_action(pl, DDL_ACT_RENAME_COLUMN, name, aside),
	        "the kept column %s makes room for a new one as %s", name, aside);
}

static void
plan_table_name(planner *pl)
{
	const tabledef *old = pl->in->old, *now = pl->in->now->def;

	if (strcmp(old->schema, now->schema) != 0) {
		set_why(add_action(pl, DDL_ACT_SET_SCHEMA, NULL, now->schema),
		        "move the table to schema %s%s", now->schema, NULL);
		note(pl, "set schema");
	}
	if (strcmp(old->name, now->name) != 0) {
		set_why(add_action(pl, DDL_ACT_RENAME_TABLE, NULL, now->name), "rename the table to %s%s",
		        now->name, NULL);
		note(pl, "rename table");
	}
}

/* Renames in two steps when a new name is taken by a column that is itself
 * renamed or dropped (a swap, a, b -> b, a). */
static bool
rename_conflicts(const planner *pl)
{
	const tabledef *old = pl->in->old, *now = pl->in->now->def;

	for (int i = 0; i < now->ncols; i++) {
		const tabledef_column *o = by_attnum(old, now->cols[i].attnum);

		if (o == NULL || strcmp(o->name, now->cols[i].name) == 0)
			continue;
		for (int j = 0; j < old->ncols; j++)
			if (strcmp(old->cols[j].name, now->cols[i].name) == 0)
				return true;
	}
	return false;
}

static void
plan_renames(planner *pl)
{
	const tabledef *old = pl->in->old, *now = pl->in->now->def;
	bool two_steps = rename_conflicts(pl);

	for (int step = two_steps ? 0 : 1; step < 2; step++)
		for (int i = 0; i < now->ncols; i++) {
			const tabledef_column *o = by_attnum(old, now->cols[i].attnum);
			char tmp[64];
			ddl_action *a;

			if (o == NULL || strcmp(o->name, now->cols[i].name) == 0)
				continue;
			/* a generated column the target could not have: nothing to rename */
			if (o->generated != NULL && target_type(pl, o->name) == NULL)
				continue;
			if (step == 1)
				make_room(pl, now->cols[i].name);
			snprintf(tmp, sizeof tmp, "tidemark renaming %d", o->attnum);
			a = add_action(pl, DDL_ACT_RENAME_COLUMN, two_steps && step == 1 ? tmp : o->name,
			               step == 0 ? tmp : now->cols[i].name);
			set_why(a, "rename column %s to %s", o->name, now->cols[i].name);
			note(pl, "rename column");
		}
}

/* A type change of one column (named as it is after the renames). */
static int
plan_type(planner *pl, const tabledef_column *o, const tabledef_column *n)
{
	sqltype from, to, tgt, common;
	const char *tgt_text = target_type(pl, o->name);
	cast_kind k;
	strbuf sb = STRBUF_INIT;
	ddl_action *a;

	if (sqltype_parse(o->type_sql, &from, pl->err) != 0 ||
	    sqltype_parse(n->type_sql, &to, pl->err) != 0 ||
	    (tgt_text != NULL && sqltype_parse(tgt_text, &tgt, pl->err) != 0))
		return -1;
	if (tgt_text == NULL)
		tgt = from;
	k = cast_classify(&from, &to);
	if (k == CAST_SAME)
		return 0;
	note(pl, "alter column type");
	if (k != CAST_WIDEN && pl->in->policy == DDL_POLICY_STOP) {
		strbuf_appendf(&sb, "column %s of %s.%s changes type from %s to %s, which cannot widen "
		               "exactly; the stop policy stops replication before this change",
		               n->name, pl->in->now->def->schema, pl->in->now->def->name, o->type_sql,
		               n->type_sql);
		pl->plan->stop = true;
		free(pl->plan->stop_reason);
		pl->plan->stop_reason = strbuf_steal(&sb);
		return 0;
	}
	if (k != CAST_WIDEN && pl->in->policy == DDL_POLICY_QUARANTINE)
		goto resnapshot;
	if (k == CAST_WIDEN || pl->in->policy == DDL_POLICY_WIDEN) {
		if (cast_common_type(&tgt, &to, &common, pl->err) != 0)
			return -1;
	} else
		common = to; /* follow */
	if (cast_classify(&tgt, &common) != CAST_SAME) {
		/* the statement must be one the target can be given: a type with
		 * modifiers out of range (varchar(0)) fails the plan here */
		if (cast_alter_using(&tgt, &common, n->name, &sb, pl->err) != 0) {
			strbuf_free(&sb);
			return -1;
		}
		strbuf_reset(&sb);
		sqltype_render(&common, &sb);
		a = add_action(pl, DDL_ACT_ALTER_TYPE, n->name, NULL);
		a->type = strbuf_steal(&sb);
		sqltype_render(&tgt, &sb);
		a->from_type = strbuf_steal(&sb);
		set_why(a, "column %s follows the source's new type as %s", n->name, a->type);
	}
resnapshot:
	/* The source converted its existing rows itself (perhaps with USING):
	 * they are copied again, unless under quarantine their new values do
	 * not fit the kept type (then the target keeps the previous values). */
	if (k != CAST_WIDEN && pl->in->rewritten &&
	    (pl->in->policy != DDL_POLICY_QUARANTINE || cast_classify(&to, &tgt) <= CAST_WIDEN))
		set_why(add_action(pl, DDL_ACT_RESNAPSHOT, n->name, NULL),
		        "the source converted the existing values of %s%s itself; the table is copied "
		        "again", n->name, NULL);
	strbuf_free(&sb);
	return 0;
}

static void
plan_not_null(planner *pl, const tabledef_column *o, const tabledef_column *n)
{
	if (o->not_null == n->not_null)
		return;
	set_why(add_action(pl, n->not_null ? DDL_ACT_SET_NOT_NULL : DDL_ACT_DROP_NOT_NULL, n->name,
	                   NULL),
	        n->not_null ? "column %s becomes NOT NULL%s" : "column %s may be NULL again%s",
	        n->name, NULL);
	note(pl, n->not_null ? "set not null" : "drop not null");
}

/* The same type under another name: ALTER TYPE ... RENAME TO or SET
 * SCHEMA on the source, followed by the target's type itself. */
static bool
type_renamed(const tabledef_column *o, const tabledef_column *n)
{
	return n->type_ref != 0 && o->type_oid == n->type_oid && o->typmod == n->typmod;
}

/* Adds a generated column, when its expression is one tidemark writes. */
static void
plan_add_generated(planner *pl, const tabledef_column *n)
{
	strbuf expr = STRBUF_INIT;
	tm_error why;
	ddl_action *a;

	if (n->kept_as != NULL || ddl_parse_generation_expr(n->generated, &expr, &why) != 0) {
		strbuf_free(&expr);
		return; /* left out: the caller records why */
	}
	a = add_action(pl, DDL_ACT_ADD_GENERATED, n->name, NULL);
	a->type = xstrdup(n->target_type);
	a->value = strbuf_steal(&expr);
	set_collation(a, n);
	set_why(a, "add generated column %s of type %s", n->name, n->target_type);
}

/* A column generated before or after the change (named as after the
 * renames): dropped and added again when its type or expression changed,
 * made ordinary by DROP EXPRESSION. */
static void
plan_generated(planner *pl, const tabledef_column *o, const tabledef_column *n)
{
	bool on_target = target_type(pl, o->name) != NULL;
	ddl_action *a;

	if (o->generated != NULL && n->generated == NULL) {
		note(pl, "drop expression");
		if (on_target) {
			set_why(add_action(pl, DDL_ACT_DROP_EXPRESSION, n->name, NULL),
			        "column %s is no longer generated%s", n->name, NULL);
			return;
		}
		a = add_action(pl, DDL_ACT_ADD_COLUMN, n->name, NULL);
		a->type = xstrdup(n->target_type);
		set_collation(a, n);
		set_why(a, "add column %s, no longer generated, of type %s", n->name, n->target_type);
		set_why(add_action(pl, DDL_ACT_RESNAPSHOT, n->name, NULL),
		        "column %s had no values on the target%s; the table is copied again", n->name,
		        NULL);
		return;
	}
	if (on_target && o->generated != NULL && strcmp(o->generated, n->generated) == 0 &&
	    strcmp(o->type_sql, n->type_sql) == 0)
		return;
	note(pl, "generated column");
	if (on_target)
		set_why(add_action(pl, DDL_ACT_DROP_COLUMN, n->name, NULL),
		        "generated column %s changes: dropped to be added again%s", n->name, NULL);
	plan_add_generated(pl, n);
}

/* A collation to follow: the column's changed (when the old version knew
 * it), or a type change that the default collation of the new type would
 * otherwise decide. type: the column's type on the target after the plan. */
static void
plan_collation(planner *pl, const tabledef_column *o, const tabledef_column *n, const char *type,
               bool retyped)
{
	const srctype_collation *oc = wanted_collation(o), *nc = wanted_collation(n);
	bool changed = o->collation != NULL &&
	               !(oc == NULL ? nc == NULL
	                            : nc != NULL && strcmp(oc->schema, nc->schema) == 0 &&
	                                  strcmp(oc->name, nc->name) == 0);
	ddl_action *a;

	if (type == NULL || n->collation == NULL || !(changed || (retyped && nc != NULL)))
		return;
	note(pl, "collation");
	a = add_action(pl, DDL_ACT_SET_COLLATION, n->name, NULL);
	a->type = xstrdup(type);
	set_collation(a, n);
	set_why(a, "column %s takes collation %s", n->name, nc != NULL ? nc->name : "default");
}

/* The type the plan last gave column name, or NULL when it changes none. */
static const char *
planned_type(const planner *pl, const char *name)
{
	const char *type = NULL;

	for (int i = 0; i < pl->plan->n; i++)
		if (pl->plan->actions[i].kind == DDL_ACT_ALTER_TYPE &&
		    strcmp(pl->plan->actions[i].column, name) == 0)
			type = pl->plan->actions[i].type;
	return type;
}

static int
plan_changed_columns(planner *pl)
{
	const tabledef *old = pl->in->old, *now = pl->in->now->def;

	for (int i = 0; i < now->ncols; i++) {
		const tabledef_column *o = by_attnum(old, now->cols[i].attnum);
		const tabledef_column *n = &now->cols[i];
		tabledef_column renamed;
		const char *retyped;

		if (o == NULL)
			continue;
		if (o->generated != NULL || n->generated != NULL) {
			plan_generated(pl, o, n);
			continue;
		}
		renamed = *o;
		renamed.name = n->name;
		if (strcmp(o->type_sql, n->type_sql) != 0 && !type_renamed(o, n) &&
		    plan_type(pl, o, n) != 0)
			return -1;
		plan_not_null(pl, &renamed, n);
		retyped = planned_type(pl, n->name);
		plan_collation(pl, o, n, retyped ? retyped : target_type(pl, o->name),
		               retyped != NULL);
	}
	return 0;
}

static void
plan_dropped(planner *pl)
{
	const tabledef *old = pl->in->old, *now = pl->in->now->def;

	for (int i = 0; i < old->ncols; i++) {
		const tabledef_column *o = &old->cols[i];

		if (by_attnum(now, o->attnum) != NULL)
			continue;
		note(pl, "drop column");
		if (o->generated != NULL) {
			/* computed by the target from other columns: nothing of its own */
			if (target_type(pl, o->name) != NULL)
				set_why(add_action(pl, DDL_ACT_DROP_COLUMN, current_name(pl, o->name), NULL),
				        "generated column %s was dropped on the source%s", o->name, NULL);
			continue;
		}
		set_why(add_action(pl, pl->in->drop_columns ? DDL_ACT_DROP_COLUMN : DDL_ACT_KEEP_COLUMN,
		                   current_name(pl, o->name), NULL),
		        pl->in->drop_columns ? "column %s was dropped on the source%s"
		                             : "column %s was dropped on the source; the target keeps it and "
		                               "no longer fills it%s",
		        o->name, NULL);
	}
}

/* A kept column (dropped on the source earlier) in the way of a new one
 * gets out of the way first. */
static void
plan_added(planner *pl)
{
	const tabledef *old = pl->in->old, *now = pl->in->now->def;

	for (int i = 0; i < now->ncols; i++) {
		const tabledef_column *n = &now->cols[i];
		ddl_action *a;
		bool computed;

		if (by_attnum(old, n->attnum) != NULL)
			continue;
		note(pl, "add column");
		make_room(pl, n->name);
		if (n->generated != NULL) {
			plan_add_generated(pl, n);
			continue;
		}
		a = add_action(pl, DDL_ACT_ADD_COLUMN, n->name, NULL);
		a->type = xstrdup(n->target_type);
		set_collation(a, n);
		if (pl->in->now->cols[i].has_missing)
			a->value = xstrdup(pl->in->now->cols[i].missing);
		set_why(a, "add column %s of type %s", n->name, n->target_type);
		/* existing rows got computed values: a volatile default, or an
		 * identity (NOT NULL, and no default in the catalog's sense) */
		computed = pl->in->rewritten && !pl->in->now->cols[i].has_missing &&
		           (pl->in->now->cols[i].has_default || n->not_null);
		/* not while the target's rows wait for the copy's values */
		if (n->not_null && !computed && (a->value != NULL || !pl->in->now->cols[i].has_default))
			set_why(add_action(pl, DDL_ACT_SET_NOT_NULL, n->name, NULL),
			        "column %s is NOT NULL%s", n->name, NULL);
		if (computed)
			set_why(add_action(pl, DDL_ACT_RESNAPSHOT, n->name, NULL),
			        "existing rows got a computed default for %s%s; the table is copied again",
			        n->name, NULL);
	}
}

static bool
keys_differ(const tabledef *a, const tabledef *b)
{
	int na = tabledef_nkeys(a), nb = tabledef_nkeys(b);

	if (na != nb)
		return true;
	for (int i = 0; i < b->ncols; i++) {
		const tabledef_column *o;

		if (!b->cols[i].is_key)
			continue;
		o = by_attnum(a, b->cols[i].attnum);
		if (o == NULL || !o->is_key)
			return true;
	}
	return false;
}

static void
plan_key(planner *pl)
{
	const tabledef *now = pl->in->now->def;
	const tabledef_column **keys;
	ddl_action *a;

	if (!keys_differ(pl->in->old, now))
		return;
	note(pl, tabledef_nkeys(now) == 0 ? "key dropped" : "primary key");
	a = add_action(pl, DDL_ACT_SET_KEY, NULL, NULL);
	a->keys = xcalloc((size_t) now->ncols + 1, sizeof(char *));
	keys = xcalloc((size_t) now->ncols + 1, sizeof *keys);
	a->nkeys = tabledef_key_columns(now, keys);
	for (int k = 0; k < a->nkeys; k++)
		a->keys[k] = xstrdup(keys[k]->name);
	free(keys);
	if (a->nkeys == 0)
		set_why(a, "the key is dropped: rows are matched by all their columns%s%s", NULL, NULL);
	else if (tabledef_nkeys(pl->in->old) == 0)
		set_why(a, "the table gets a key%s%s", NULL, NULL);
	else
		set_why(a, "the key changes%s%s", NULL, NULL);
}

int
ddl_track_plan(const ddl_track_input *in, ddl_plan *out, tm_error *err)
{
	planner pl = {in, out, STRBUF_INIT, err};
	int rc;

	memset(out, 0, sizeof *out);
	plan_table_name(&pl);
	plan_renames(&pl);
	rc = plan_changed_columns(&pl);
	if (rc == 0) {
		plan_dropped(&pl);
		plan_added(&pl);
		plan_key(&pl);
	}
	if (pl.summary.len == 0)
		strbuf_append(&pl.summary, "no change to the replicated columns");
	out->summary = strbuf_steal(&pl.summary);
	if (rc != 0) {
		ddl_plan_free(out);
		return -1;
	}
	return 0;
}

void
ddl_plan_free(ddl_plan *p)
{
	for (int i = 0; i < p->n; i++) {
		ddl_action *a = &p->actions[i];

		free(a->column);
		free(a->name);
		free(a->type);
		free(a->from_type);
		free(a->value);
		free(a->coll_schema);
		free(a->coll_name);
		for (int k = 0; k < a->nkeys; k++)
			free(a->keys[k]);
		free(a->keys);
		free(a->why);
	}
	free(p->actions);
	free(p->stop_reason);
	free(p->summary);
	memset(p, 0, sizeof *p);
}

void
ddl_action_describe(const ddl_action *a, strbuf *out)
{
	strbuf_append(out, a->why ? a->why : "(no description)");
}
