/*
 * schema_sync_part.c: captured changes of partitioned tables (see
 * schema_sync_int.h and src/ddl/ddl_partition.h).
 *
 * A replicated partitioned table is one target table, its root. Its
 * partitions are recorded (tidemark.partitions), never registered: a
 * capture message that lists them (ALTER TABLE on the root lists every
 * partition) changes only the root's definition. What changes the root's
 * rows without row changes in the stream makes it be copied again, through
 * the snapshot's re-copy (a copy over rows the target has deletes the
 * ones the source no longer has): ATTACH PARTITION of a table, DETACH
 * PARTITION (the message of its last transaction, for CONCURRENTLY), DROP
 * TABLE of a partition, and TRUNCATE of a partition, for which pgoutput
 * sends nothing when it publishes partitions through their root (the
 * capture's truncate triggers say it, migrations/source/005_partitions.sql).
 */
#include "schema_sync_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "log.h"
#include "pgconn.h"
#include "xalloc.h"

/* ---- the roots a message concerns ---- */

typedef struct oids {
	uint32_t *v;   /* owned */
	int n;
} oids;

static void
oids_add(oids *o, uint32_t relid)
{
	if (relid == 0)
		return;
	for (int i = 0; i < o->n; i++)
		if (o->v[i] == relid)
			return;
	o->v = xrealloc(o->v, sizeof(uint32_t) * (size_t) (o->n + 1));
	o->v[o->n++] = relid;
}

int
schema_sync_part_roots(schema_sync *ss, const ddl_event *e, ddl_part_root **roots, int *n)
{
	oids r = {NULL, 0}, m = {NULL, 0};
	int rc;

	for (int i = 0; i < e->ntables; i++) {
		const ddl_event_table *t = &e->tables[i];

		oids_add(&r, t->partition_root != 0 ? t->partition_root : t->def->relid);
		oids_add(&m, t->def->relid);
	}
	for (int i = 0; i < e->ndropped; i++)
		if (e->dropped[i].object_type != NULL && strcmp(e->dropped[i].object_type, "table") == 0) {
			oids_add(&r, e->dropped[i].objid);
			oids_add(&m, e->dropped[i].objid);
		}
	rc = catalog_partition_roots(ss->sink, ss->cfg.slot, r.v, r.n, m.v, m.n, roots, n);
	free(r.v);
	free(m.v);
	return rc;
}

static const ddl_part_root *
root_by_relid(const ddl_part_root *roots, int n, uint32_t relid)
{
	for (int i = 0; i < n; i++)
		if (roots[i].relid == relid)
			return &roots[i];
	return NULL;
}

/* ---- what a message did to a hierarchy ---- */

int
schema_sync_part_record_tree(schema_sync *ss, const tabledef *def)
{
	ddl_part_root tree = {0};
	int rc = TM_OK;

	if (ss->cfg.source.partitions != NULL)
		rc = ss->cfg.source.partitions(ss->cfg.source.ctx, def->relid, &tree);
	if (rc == TM_OK)
		rc = schema_sync_part_record_members(ss, def, &tree);
	ddl_part_root_clear(&tree);
	return rc;
}

int
schema_sync_part_record_members(schema_sync *ss, const tabledef *def, const ddl_part_root *tree)
{
	catalog_table *t = NULL;
	int rc = TM_OK;

	if (tree->nmembers > 0)
		rc = catalog_load_table(ss->sink, ss->cfg.slot, def->schema, def->name, &t);
	if (rc == TM_OK && t != NULL)
		rc = catalog_partitions_replace(ss->sink, t->table_id, tree->members, tree->nmembers);
	catalog_table_free(t);
	return rc;
}

/* A partition detached into a replicated schema is a table of its own
 * now: registered like a new table, with the source's definition of it
 * (nothing when it is gone, or a partition again, by now). */
int
schema_sync_part_register_detached(schema_sync *ss, const ddl_part_member *m, tm_lsn pos,
                                   sync_note *note, schema_sync_result *res)
{
	bool replicated = false, excluded = false, added = false;
	tabledef *def = NULL;
	int rc = catalog_schema_covers(ss->sink, ss->cfg.slot, m->schema, m->name, &replicated,
	                               &excluded);

	if (rc != TM_OK || !replicated || ss->cfg.source.table_def == NULL)
		return rc;
	rc = ss->cfg.source.table_def(ss->cfg.source.ctx, m->relid, &def);
	if (rc == TM_OK && def != NULL)
		rc = schema_sync_add_table(ss, def, pos, note, res, &added);
	if (rc == TM_OK && added)
		rc = schema_sync_part_record_tree(ss, def);
	tabledef_free(def);
	return rc;
}

static int
follow_root(schema_sync *ss, const ddl_event *e, const ddl_part_root *root, tm_lsn pos,
            sync_note *note, schema_sync_result *res)
{
	ddl_part_plan plan;
	int rc;

	ddl_partition_plan(e, root, &plan);
	rc = catalog_partitions_record(ss->sink, root->table_id, plan.add, plan.nadd);
	if (rc == TM_OK)
		rc = catalog_partitions_forget(ss->sink, root->table_id, plan.remove, plan.nremove);
	if (rc == TM_OK && plan.recopy) {
		rc = schema_sync_request_snapshot(ss, root->table_id);
		schema_sync_result_add(res, root->table_id);
	}
	if (rc == TM_OK && plan.why != NULL) {
		log_info("%s.%s: %s", root->schema, root->name, plan.why);
		schema_sync_note_table(note, root->schema, root->name);
		schema_sync_note_list(&note->classes, "partitions");
		schema_sync_note_list(&note->actions, plan.why);
	}
	for (int i = 0; rc == TM_OK && e->kind == DDL_EVENT_DDL && i < plan.nremove; i++)
		rc = schema_sync_part_register_detached(ss, ddl_part_root_find(root, plan.remove[i]),
		                                        pos, note, res);
	ddl_part_plan_free(&plan);
	return rc;
}

/* Did the root join replication after the message's transaction (its
 * partitions were recorded, and its copy reads them, as they were then)? */
static int
root_before_join(schema_sync *ss, const ddl_part_root *root, bool *before)
{
	catalog_table *t = NULL;
	int rc = catalog_load_table_relid(ss->sink, ss->cfg.slot, root->relid, &t);

	*before = rc == TM_OK && t != NULL && schema_sync_before_join(ss, t);
	catalog_table_free(t);
	return rc;
}

int
schema_sync_part_follow(schema_sync *ss, const ddl_event *e, ddl_part_root *roots, int n,
                        tm_lsn pos, sync_note *note, schema_sync_result *res)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < n; i++) {
		bool before = false;

		rc = root_before_join(ss, &roots[i], &before);
		if (rc == TM_OK && !before)
			rc = follow_root(ss, e, &roots[i], pos, note, res);
	}
	return rc;
}

/* ---- a partition listed in a message ---- */

/* A table replicated on its own until it became a partition of a
 * replicated root: its rows are the root's now. The target keeps it as it
 * was, no longer updated. */
static int
retire(schema_sync *ss, const catalog_table *t, const ddl_part_root *root, sync_note *note,
       schema_sync_result *res)
{
	char id[16], text[512];
	const char *p[] = {id};
	int rc;

	snprintf(id, sizeof id, "%d", t->table_id);
	rc = catalog_retire_table(ss->sink, t->table_id);
	if (rc == TM_OK)
		rc = sink_command(ss->sink, "forgetting the rows to read again",
		                  "DELETE FROM tidemark.snapshot_rereads WHERE table_id = $1::int", 1, p);
	if (rc != TM_OK)
		return rc;
	snprintf(text, sizeof text, "%s.%s is now a partition of %s.%s, whose rows it replicates: "
	         "no longer replicated as a table of its own (the target keeps %s.%s as it was)",
	         t->source_schema, t->source_table, root->schema, root->name, t->target_schema,
	         t->target_table);
	log_info("%s", text);
	schema_sync_note_list(&note->actions, text);
	schema_sync_result_add(res, t->table_id);
	return TM_OK;
}

/* A partition whose root is not replicated, in a replicated schema: its
 * rows are not replicated; said once per message, with the fix. */
static int
explain_unreplicated(schema_sync *ss, const ddl_event_table *et, sync_note *note)
{
	bool replicated = false, excluded = false;
	char *root = NULL, text[600];
	int rc = catalog_schema_covers(ss->sink, ss->cfg.slot, et->def->schema, et->def->name,
	                               &replicated, &excluded);

	if (rc != TM_OK || !replicated)
		return rc;
	if (ss->cfg.source.table_name != NULL)
		rc = ss->cfg.source.table_name(ss->cfg.source.ctx, et->partition_root, &root);
	if (rc != TM_OK)
		return rc;
	snprintf(text, sizeof text, "%s.%s is a partition of %s, which is not replicated: a "
	         "partitioned table is replicated as its root; the rows of %s.%s are not "
	         "replicated. Fix: tidemark setup --table '%s'", et->def->schema, et->def->name,
	         root ? root : "a table", et->def->schema, et->def->name, root ? root : "ROOT");
	log_warn("%s", text);
	schema_sync_note_table(note, et->def->schema, et->def->name);
	schema_sync_note_list(&note->actions, text);
	free(root);
	return TM_OK;
}

/* A command on a partition of a replicated root alone: recorded in the
 * audit log as such (when the root is listed, its partitions are not). */
static void
note_partition(const ddl_event *e, const ddl_event_table *et, const ddl_part_root *root,
               sync_note *note)
{
	char text[512];

	if (ddl_event_table_by_relid(e, root->relid) != NULL)
		return;
	snprintf(text, sizeof text, "%s.%s is a partition of %s.%s, which is replicated as one "
	         "table: nothing to do", et->def->schema, et->def->name, root->schema, root->name);
	schema_sync_note_table(note, et->def->schema, et->def->name);
	schema_sync_note_list(&note->actions, text);
}

int
schema_sync_part_listed(schema_sync *ss, const ddl_event *e, const ddl_event_table *et,
                        const ddl_part_root *roots, int n, sync_note *note,
                        schema_sync_result *res, bool *done)
{
	const ddl_part_root *root = root_by_relid(roots, n, et->partition_root);
	catalog_table *own = NULL;
	int rc = catalog_load_table_relid(ss->sink, ss->cfg.slot, et->def->relid, &own);

	*done = true;
	schema_sync_join_partitioned(ss, et->def->relid);
	if (rc == TM_OK && root == NULL && schema_sync_join_find(ss, et->partition_root) != NULL)
		schema_sync_note_list(&note->actions, "a partition of a table that joins replication "
		                                      "at the commit of its transaction");
	else if (rc == TM_OK && root != NULL && own != NULL)
		rc = retire(ss, own, root, note, res);
	else if (rc == TM_OK && root != NULL)
		note_partition(e, et, root, note);
	else if (rc == TM_OK && root == NULL && own != NULL)
		*done = false; /* replicated by itself, under its own name: followed as a table */
	else if (rc == TM_OK && root == NULL)
		rc = explain_unreplicated(ss, et, note);
	catalog_table_free(own);
	return rc;
}

bool
schema_sync_part_rewritten(const schema_sync *ss, const ddl_event *e, uint32_t relid)
{
	for (int i = 0; i < e->ntables; i++)
		if (e->tables[i].partition_root == relid &&
		    schema_sync_was_rewritten(ss, e->xid, e->tables[i].def->relid))
			return true;
	return false;
}

/* ---- truncate ---- */

int
schema_sync_part_truncate(schema_sync *ss, const ddl_event *e, sync_note *note,
                          schema_sync_result *res, bool *log)
{
	const ddl_event_table *et = e->ntables > 0 ? &e->tables[0] : NULL;
	ddl_part_root *roots = NULL;
	const ddl_part_root *root;
	int nroots = 0;
	char text[600];
	bool before = false;
	int rc;

	*log = false;
	if (et == NULL)
		return TM_OK;
	/* a partitioned table truncated as a whole: pgoutput sends that; its
	 * partitions, truncated with it, need nothing more */
	if (et->partition_root == 0) {
		(void) schema_sync_truncated_first(ss, e->xid, et->def->relid);
		return TM_OK;
	}
	/* a root that joins at this commit: its rows of the transaction are
	 * copied, not applied */
	schema_sync_join_rewritten(ss, et->partition_root);
	rc = schema_sync_part_roots(ss, e, &roots, &nroots);
	root = rc == TM_OK ? root_by_relid(roots, nroots, et->partition_root) : NULL;
	if (root != NULL)
		rc = root_before_join(ss, root, &before);
	if (root != NULL && rc == TM_OK && !before &&
	    schema_sync_truncated_first(ss, e->xid, et->partition_root)) {
		rc = schema_sync_request_snapshot(ss, root->table_id);
		schema_sync_result_add(res, root->table_id);
		snprintf(text, sizeof text, "partition %s.%s truncated (the source sends no row change "
		         "for it): the table is copied again", et->def->schema, et->def->name);
		log_info("%s.%s: %s", root->schema, root->name, text);
		schema_sync_note_table(note, root->schema, root->name);
		schema_sync_note_list(&note->classes, "truncate partition");
		schema_sync_note_list(&note->actions, text);
		*log = true;
	}
	catalog_partition_roots_free(roots, nroots);
	return rc;
}
