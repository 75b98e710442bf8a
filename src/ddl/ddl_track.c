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
 * on the source, or the target's own) that has it on the target is moved
 * aside. */
static void
make_room(planner *pl, const char *name)
{
	char aside[NAME_BYTES + 1];

	if (!name_taken(pl, name))
		return;
	aside_name(pl, name, aside);
	set_why(add_action(pl, DDL_ACT_RENAME_COLUMN, name, aside),
	        "the kept column %s (dropped on the source, or the target's own) makes room for a "
	        "new one as %s", name, aside);
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

/* ---- type changes ---- */

/* The entry of the statement text for a column, NULL when UNKNOWN. */
static const ddl_using_column *
using_of(const planner *pl, const tabledef_column *o, const tabledef_column *n)
{
	return ddl_using_find(pl->in->using, n->name, o->name);
}

static ddl_using_kind
using_kind(const ddl_using_column *u)
{
	return u != NULL ? u->kind : DDL_USING_UNKNOWN;
}

static const char *const setting_gucs[] = {"TimeZone", "DateStyle", "IntervalStyle",
                                          "extra_float_digits", "bytea_output"};

/* The session's value of one setting (a CAST_NEEDS_* bit), NULL if none. */
static const char *
setting_value(const ddl_track_session *s, unsigned bit)
{
	switch (bit) {
	case CAST_NEEDS_TIMEZONE:
		return s->timezone;
	case CAST_NEEDS_DATESTYLE:
		return s->datestyle;
	case CAST_NEEDS_INTERVALSTYLE:
		return s->intervalstyle;
	case CAST_NEEDS_FLOAT_DIGITS:
		return s->float_digits;
	case CAST_NEEDS_BYTEA_OUTPUT:
		return s->bytea_output;
	}
	return NULL;
}

int
ddl_track_settings(const ddl_track_session *s, unsigned mask, const char **names,
                   const char **values)
{
	int n = 0;

	for (int i = 0; i < 5; i++) {
		const char *v = (mask & (1u << i)) ? setting_value(s, 1u << i) : NULL;

		if (v != NULL) {
			names[n] = setting_gucs[i];
			values[n++] = v;
		}
	}
	return n;
}

/* The settings of mask the capture recorded (CAST_NEEDS_*). */
static unsigned
recorded(const ddl_track_session *s, unsigned mask)
{
	unsigned have = 0;

	for (int i = 0; i < 5; i++)
		if ((mask & (1u << i)) && setting_value(s, 1u << i) != NULL)
			have |= 1u << i;
	return have;
}

/* "TimeZone America/New_York, DateStyle SQL, DMY" */
static void
describe_settings(const ddl_track_session *s, unsigned mask, strbuf *out)
{
	const char *names[5], *values[5];
	int n = ddl_track_settings(s, mask, names, values);

	for (int i = 0; i < n; i++)
		strbuf_appendf(out, "%s%s %s", i ? ", " : "", names[i], values[i]);
}

/* "TimeZone, DateStyle": the names of mask's settings. */
static void
setting_names(unsigned mask, strbuf *out)
{
	int k = 0;

	for (int i = 0; i < 5; i++)
		if (mask & (1u << i))
			strbuf_appendf(out, "%s%s", k++ ? ", " : "", setting_gucs[i]);
}

static void
recopy(planner *pl, const char *column, strbuf *why)
{
	ddl_action *a = add_action(pl, DDL_ACT_RESNAPSHOT, column, NULL);

	a->why = strbuf_steal(why);
}

/* A USING expression, cut short for the audit log. */
static void
append_using(strbuf *sb, const ddl_using_column *u)
{
	const char *text = u != NULL && u->text != NULL ? u->text : "an expression";
	size_t len = strlen(text), keep = len > 200 ? 200 : len;

	while (keep < len && keep > 0 && ((unsigned char) text[keep] & 0xc0) == 0x80)
		keep--; /* not in the middle of a UTF-8 character */
	strbuf_append(sb, "USING ");
	strbuf_appendn(sb, text, keep);
	if (keep < len)
		strbuf_append(sb, "...");
}

/* One type change of a column: what the plan knows of it. */
typedef struct type_change {
	const tabledef_column *o, *n;
	sqltype from, to, tgt, next; /* next: the target's type after the plan */
	cast_kind k;
	ddl_action *alter;           /* the target's ALTER, NULL when none */
} type_change;

/* Whether the target's ALTER is the source's own conversion: from the
 * source's old type to its new one. */
static bool
reproduces(const type_change *tc)
{
	return tc->alter != NULL && cast_classify(&tc->tgt, &tc->from) == CAST_SAME &&
	       cast_classify(&tc->next, &tc->to) == CAST_SAME;
}

/*
 * Whether the target's existing values still equal the source's after the
 * change, and what to do when they may not: copy the table again, or run
 * the target's ALTER under the source session's settings.
 */
static void
plan_values(planner *pl, type_change *tc)
{
	const ddl_using_column *u = using_of(pl, tc->o, tc->n);
	unsigned needs = cast_session_needs(&tc->from, &tc->to);
	bool rewritten = pl->in->rewritten || pl->in->converted;
	strbuf why = STRBUF_INIT;
	const char *name = tc->n->name;

	if (pl->in->policy == DDL_POLICY_QUARANTINE && tc->k != CAST_WIDEN) {
		/* the target keeps its type: copied again unless the new values
		 * do not fit it (then the target keeps the previous values) */
		if ((rewritten || using_kind(u) == DDL_USING_EXPR) &&
		    cast_classify(&tc->to, &tc->tgt) <= CAST_WIDEN) {
			strbuf_appendf(&why, "copied again: the source converted the existing values of %s "
			               "itself", name);
			recopy(pl, name, &why);
		}
		return;
	}
	if (using_kind(u) == DDL_USING_EXPR) {
		strbuf_appendf(&why, "copied again: the source converted the values of %s with ", name);
		append_using(&why, u);
	} else if (using_kind(u) == DDL_USING_UNKNOWN && pl->in->converted)
		strbuf_appendf(&why, "copied again: the source rewrote %s, and the statement does not "
		               "show how (no ALTER ... TYPE of it in the text: a DO block, a function, "
		               "a parent table's ALTER)", name);
	else if (tc->k != CAST_WIDEN && rewritten)
		strbuf_appendf(&why, "copied again: the source converted the existing values of %s "
		               "itself", name);
	else if (needs != 0 && reproduces(tc) && recorded(&pl->in->session, needs) == needs) {
		tc->alter->settings = needs;
		strbuf_append(&why, tc->alter->why);
		strbuf_append(&why, ", converted under the source session's ");
		describe_settings(&pl->in->session, needs, &why);
		free(tc->alter->why);
		tc->alter->why = strbuf_steal(&why);
		return;
	} else if (needs != 0 && rewritten) {
		strbuf_appendf(&why, "copied again: the source converted %s under its session's ", name);
		setting_names(needs, &why);
		strbuf_append(&why, reproduces(tc) ? ", which the capture did not record"
		                                   : ", and the target's column does not convert the same way");
	} else
		return;
	recopy(pl, name, &why);
}

/* The type the target column takes: the common type of its type and the
 * new one (widen; the new type itself when the common one would keep only
 * the values' text), or the new one (follow). */
static int
next_type(planner *pl, type_change *tc)
{
	sqltype to_target;

	if (tc->k == CAST_WIDEN || pl->in->policy == DDL_POLICY_WIDEN) {
		if (cast_common_type(&tc->tgt, &tc->to, &tc->next, pl->err) != 0)
			return -1;
		if (tc->k == CAST_WIDEN || cast_faithful(&tc->to, &tc->next))
			return 0;
	}
	if (sqltype_parse(tc->n->target_type, &to_target, pl->err) != 0)
		return -1;
	tc->next = to_target; /* follow, or widen following the source */
	return 0;
}

static int
plan_alter(planner *pl, type_change *tc)
{
	strbuf sb = STRBUF_INIT;
	ddl_action *a;

	if (next_type(pl, tc) != 0)
		return -1;
	if (cast_classify(&tc->tgt, &tc->next) == CAST_SAME)
		return 0;
	/* the statement must be one the target can be given: a type with
	 * modifiers out of range (varchar(0)) fails the plan here */
	if (cast_alter_using(&tc->tgt, &tc->next, tc->n->name, &sb, pl->err) != 0) {
		strbuf_free(&sb);
		return -1;
	}
	strbuf_reset(&sb);
	sqltype_render(&tc->next, &sb);
	a = add_action(pl, DDL_ACT_ALTER_TYPE, tc->n->name, NULL);
	a->type = strbuf_steal(&sb);
	sqltype_render(&tc->tgt, &sb);
	a->from_type = strbuf_steal(&sb);
	set_why(a, "column %s follows the source's new type as %s", tc->n->name, a->type);
	tc->alter = a;
	return 0;
}

static void
plan_stop(planner *pl, const type_change *tc)
{
	strbuf sb = STRBUF_INIT;

	strbuf_appendf(&sb, "column %s of %s.%s changes type from %s to %s, which cannot widen "
	               "exactly; the stop policy stops replication before this change",
	               tc->n->name, pl->in->now->def->schema, pl->in->now->def->name,
	               tc->o->type_sql, tc->n->type_sql);
	pl->plan->stop = true;
	free(pl->plan->stop_reason);
	pl->plan->stop_reason = strbuf_steal(&sb);
}

/* A type change of one column (named as it is after the renames). */
static int
plan_type(planner *pl, const tabledef_column *o, const tabledef_column *n)
{
	const char *tgt_text = target_type(pl, o->name);
	type_change tc;

	memset(&tc, 0, sizeof tc);
	tc.o = o;
	tc.n = n;
	if (sqltype_parse(o->type_sql, &tc.from, pl->err) != 0 ||
	    sqltype_parse(n->type_sql, &tc.to, pl->err) != 0 ||
	    (tgt_text != NULL && sqltype_parse(tgt_text, &tc.tgt, pl->err) != 0))
		return -1;
	if (tgt_text == NULL)
		tc.tgt = tc.from;
	tc.k = cast_classify(&tc.from, &tc.to);
	if (tc.k == CAST_SAME)
		return 0;
	note(pl, "alter column type");
	if (tc.k != CAST_WIDEN && pl->in->policy == DDL_POLICY_STOP) {
		plan_stop(pl, &tc);
		return 0;
	}
	if ((tc.k == CAST_WIDEN || pl->in->policy != DDL_POLICY_QUARANTINE) &&
	    plan_alter(pl, &tc) != 0)
		return -1;
	plan_values(pl, &tc);
	return 0;
}

/* Whether a column's type changed (by the matrix, not by its spelling). */
static bool
retyped(const tabledef_column *o, const tabledef_column *n)
{
	sqltype a, b;
	tm_error err;

	if (strcmp(o->type_sql, n->type_sql) == 0 || o->generated != NULL || n->generated != NULL)
		return false;
	if (sqltype_parse(o->type_sql, &a, &err) != 0 || sqltype_parse(n->type_sql, &b, &err) != 0)
		return true;
	return cast_classify(&a, &b) != CAST_SAME;
}

/*
 * Conversions without a type change, in a command that rewrote the table
 * to convert values: USING an expression to the same type (bigint ->
 * bigint USING amount * 100), or a conversion the text does not show. The
 * table is copied again. (The text is the whole client string: its USING
 * may belong to another command of it.)
 */
static void
plan_same_type(planner *pl)
{
	const tabledef *old = pl->in->old, *now = pl->in->now->def;
	bool any_retyped = false;
	strbuf why = STRBUF_INIT;

	for (int i = 0; i < now->ncols; i++) {
		const tabledef_column *o = by_attnum(old, now->cols[i].attnum);

		any_retyped |= o != NULL && retyped(o, &now->cols[i]);
	}
	for (int i = 0; i < now->ncols && !pl->plan->stop; i++) {
		const tabledef_column *o = by_attnum(old, now->cols[i].attnum), *n = &now->cols[i];
		const ddl_using_column *u = o != NULL ? using_of(pl, o, n) : NULL;

		if (!pl->in->converted || o == NULL || retyped(o, n) || n->generated != NULL ||
		    using_kind(u) != DDL_USING_EXPR)
			continue;
		note(pl, "alter column type");
		strbuf_appendf(&why, "copied again: the source converted the values of %s with ", n->name);
		append_using(&why, u);
		recopy(pl, n->name, &why);
		return;
	}
	if (pl->in->converted && !any_retyped && !pl->plan->stop) {
		strbuf_append(&why, "copied again: the source rewrote the table converting column "
		              "values, and the statement does not show how");
		recopy(pl, NULL, &why);
	}
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
		else if (pl->in->now->cols[i].has_missing && sqltype_names_objects(n->type_sql))
			set_why(add_action(pl, DDL_ACT_RESNAPSHOT, n->name, NULL),
			        "existing rows got a default for %s naming an object, which the capture "
			        "prints otherwise than the stream%s; the table is copied again", n->name, NULL);
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

/* In a plan that copies the table again, the target's values are
 * replaced anyway: an ALTER its rows refuse may empty the table. */
static void
mark_recopied(ddl_plan *p)
{
	bool recopy = false;

	for (int i = 0; i < p->n; i++)
		recopy |= p->actions[i].kind == DDL_ACT_RESNAPSHOT;
	for (int i = 0; recopy && i < p->n; i++)
		if (p->actions[i].kind == DDL_ACT_ALTER_TYPE)
			p->actions[i].recopied = true;
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
		plan_same_type(&pl);
		plan_dropped(&pl);
		plan_added(&pl);
		plan_key(&pl);
	}
	mark_recopied(out);
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

/* ---- the README's table of what widen does ---- */

static void
widen_cell(const ddl_plan *p, const char *from, strbuf *out)
{
	const ddl_action *alter = NULL;
	bool recopy = false;

	for (int i = 0; i < p->n; i++) {
		if (p->actions[i].kind == DDL_ACT_ALTER_TYPE)
			alter = &p->actions[i];
		recopy |= p->actions[i].kind == DDL_ACT_RESNAPSHOT;
	}
	if (alter != NULL)
		strbuf_appendf(out, "becomes %s", alter->type);
	else
		strbuf_appendf(out, "stays %s", from);
	if (recopy)
		strbuf_append(out, "; the table is copied again");
	else if (alter != NULL && alter->settings != 0) {
		strbuf_append(out, "; values converted on the target under the source session's ");
		setting_names(alter->settings, out);
	} else if (alter != NULL)
		strbuf_append(out, "; values converted on the target");
}

int
ddl_track_widen_row(const char *from, const char *to, strbuf *out, tm_error *err)
{
	tabledef *old = tabledef_new("public", "t", 1), *now = tabledef_new("public", "t", 1);
	ddl_event_column cols[2] = {{0}, {0}};
	ddl_event_table et = {now, 'r', 'd', 0, 0, cols};
	const char *names[] = {"id", "c"}, *types[] = {"integer", from};
	ddl_using_column plain = {(char *) "c", DDL_USING_NONE, NULL};
	ddl_using_list using = {1, &plain};
	ddl_track_input in = {old, &et, {2, names, types}, DDL_POLICY_WIDEN, true, false, &using,
	                      true, {"UTC", "ISO, YMD", "postgres", "3", "hex"}};
	ddl_plan plan;
	int rc;

	tabledef_add_column(old, 1, "id", "integer", 0, -1, true, true);
	tabledef_add_column(old, 2, "c", from, 0, -1, false, false);
	tabledef_add_column(now, 1, "id", "integer", 0, -1, true, true);
	tabledef_add_column(now, 2, "c", to, 0, -1, false, false);
	rc = ddl_track_plan(&in, &plan, err);
	if (rc == 0) {
		strbuf_appendf(out, "| %s | %s | ", from, to);
		widen_cell(&plan, from, out);
		strbuf_append(out, " |");
		ddl_plan_free(&plan);
	}
	tabledef_free(old);
	tabledef_free(now);
	return rc;
}
