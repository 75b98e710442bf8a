#include "ddl_partition.h"

#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "xalloc.h"

void
ddl_part_root_add(ddl_part_root *r, uint32_t relid, uint32_t parent, const char *schema,
                  const char *name)
{
	ddl_part_member *m;

	r->members = xrealloc(r->members, sizeof *r->members * (size_t) (r->nmembers + 1));
	m = &r->members[r->nmembers++];
	m->relid = relid;
	m->parent = parent;
	m->schema = xstrdup(schema ? schema : "");
	m->name = xstrdup(name ? name : "");
}

static void
members_free(ddl_part_member *m, int n)
{
	for (int i = 0; i < n; i++) {
		free(m[i].schema);
		free(m[i].name);
	}
	free(m);
}

void
ddl_part_root_clear(ddl_part_root *r)
{
	members_free(r->members, r->nmembers);
	free(r->schema);
	free(r->name);
	memset(r, 0, sizeof *r);
}

const ddl_part_member *
ddl_part_root_find(const ddl_part_root *r, uint32_t relid)
{
	for (int i = 0; i < r->nmembers; i++)
		if (r->members[i].relid == relid)
			return &r->members[i];
	return NULL;
}

/* Is t below the table ancestor, through the parents the event lists? */
static bool
below(const ddl_event *e, const ddl_event_table *t, uint32_t ancestor)
{
	for (int steps = 0; t != NULL && t->partition_of != 0 && steps <= e->ntables; steps++) {
		if (t->partition_of == ancestor)
			return true;
		t = ddl_event_table_by_relid(e, t->partition_of);
	}
	return false;
}

/* A leaf's column of this name, with a stored value for existing rows. */
static const ddl_event_column *
leaf_missing(const ddl_event *e, uint32_t root, const char *name)
{
	for (int i = 0; i < e->ntables; i++) {
		const ddl_event_table *t = &e->tables[i];

		if (t->relkind != 'r' || !below(e, t, root))
			continue;
		for (int c = 0; c < t->def->ncols; c++)
			if (strcmp(t->def->cols[c].name, name) == 0 && t->cols[c].has_missing)
				return &t->cols[c];
	}
	return NULL;
}

ddl_event_column *
ddl_partition_root_columns(const ddl_event *e, const ddl_event_table *root)
{
	ddl_event_column *cols = xcalloc((size_t) root->def->ncols + 1, sizeof *cols);

	for (int i = 0; i < root->def->ncols; i++) {
		const ddl_event_column *leaf;

		cols[i] = root->cols[i];
		if (root->relkind == 'p' && !cols[i].has_missing &&
		    (leaf = leaf_missing(e, root->def->relid, root->def->cols[i].name)) != NULL) {
			cols[i].has_missing = true;
			cols[i].missing = leaf->missing;
		}
	}
	return cols;
}

void
ddl_part_plan_free(ddl_part_plan *p)
{
	members_free(p->add, p->nadd);
	free(p->remove);
	free(p->why);
	memset(p, 0, sizeof *p);
}

/* ---- building the plan ---- */

typedef struct planner {
	const ddl_event *e;
	const ddl_part_root *root;
	ddl_part_plan *out;
	strbuf why;
} planner;

/* "<what> schema.name <then>", after the earlier ones */
static void
say(planner *p, const char *what, const char *schema, const char *name, const char *then)
{
	if (p->why.len > 0)
		strbuf_append(&p->why, "; ");
	strbuf_appendf(&p->why, "%s %s.%s %s", what, schema, name, then);
}

static void
plan_add(planner *p, const ddl_event_table *t)
{
	ddl_part_root r = {0};

	r.members = p->out->add;
	r.nmembers = p->out->nadd;
	ddl_part_root_add(&r, t->def->relid, t->partition_of, t->def->schema, t->def->name);
	p->out->add = r.members;
	p->out->nadd = r.nmembers;
}

static void
plan_remove(planner *p, const ddl_part_member *m, const char *then)
{
	p->out->remove = xrealloc(p->out->remove, sizeof(uint32_t) * (size_t) (p->out->nremove + 1));
	p->out->remove[p->out->nremove++] = m->relid;
	p->out->recopy = true;
	say(p, "partition", m->schema, m->name, then);
}

static const ddl_event_table *
listed(const ddl_event *e, uint32_t relid)
{
	return ddl_event_table_by_relid(e, relid);
}

/* Is a table of the message an ancestor of m, as recorded? The walk ends
 * at the root, at a table not recorded, or after as many steps as there
 * are members (a recorded cycle cannot hold it). */
static bool
under_listed(const planner *p, const ddl_part_member *m)
{
	uint32_t up = m->parent;

	for (int steps = 0; steps <= p->root->nmembers; steps++) {
		const ddl_part_member *parent;

		if (listed(p->e, up) != NULL)
			return true;
		if (up == p->root->relid || (parent = ddl_part_root_find(p->root, up)) == NULL)
			return false;
		up = parent->parent;
	}
	return false;
}

/* Partitions of the root that the message lists: new ones, and recorded
 * ones whose parent or name changed. */
static void
plan_listed(planner *p)
{
	bool created = p->e->command_tag != NULL && strcmp(p->e->command_tag, "CREATE TABLE") == 0;

	for (int i = 0; i < p->e->ntables; i++) {
		const ddl_event_table *t = &p->e->tables[i];
		const ddl_part_member *known;

		if (t->partition_root != p->root->relid)
			continue;
		known = ddl_part_root_find(p->root, t->def->relid);
		if (known == NULL) {
			plan_add(p, t);
			p->out->recopy |= !created;
			say(p, created ? "partition" : "table", t->def->schema, t->def->name,
			    created ? "created (no rows yet)" : "attached as a partition");
		} else if (known->parent != t->partition_of || strcmp(known->schema, t->def->schema) != 0 ||
		           strcmp(known->name, t->def->name) != 0)
			plan_add(p, t);
	}
}

/* Recorded partitions that left: listed as something else now, or missing
 * under a listed ancestor. */
static void
plan_gone(planner *p)
{
	for (int i = 0; i < p->root->nmembers; i++) {
		const ddl_part_member *m = &p->root->members[i];
		const ddl_event_table *t = listed(p->e, m->relid);

		if (t != NULL ? t->partition_root != p->root->relid : under_listed(p, m))
			plan_remove(p, m, "detached");
	}
}

static bool
dropped(const ddl_event *e, uint32_t relid)
{
	for (int i = 0; i < e->ndropped; i++)
		if (e->dropped[i].objid == relid && e->dropped[i].object_type != NULL &&
		    strcmp(e->dropped[i].object_type, "table") == 0)
			return true;
	return false;
}

static void
plan_dropped(planner *p)
{
	if (dropped(p->e, p->root->relid))
		return; /* the root goes too: nothing to copy */
	for (int i = 0; i < p->root->nmembers; i++)
		if (dropped(p->e, p->root->members[i].relid))
			plan_remove(p, &p->root->members[i], "dropped");
}

void
ddl_partition_plan(const ddl_event *e, const ddl_part_root *root, ddl_part_plan *out)
{
	planner p = {e, root, out, STRBUF_INIT};

	memset(out, 0, sizeof *out);
	if (e->kind == DDL_EVENT_DDL) {
		plan_listed(&p);
		plan_gone(&p);
	} else if (e->kind == DDL_EVENT_DROP)
		plan_dropped(&p);
	if (out->recopy)
		strbuf_append(&p.why, ": the table is copied again");
	out->why = p.why.len > 0 ? strbuf_steal(&p.why) : NULL;
	strbuf_free(&p.why);
}
