/*
 * schema_sync_catchup.c: the schema changes a resync's stream will never
 * deliver (see schema_sync_catch_up in schema_sync.h).
 *
 * A target restored from a backup, or a slot made again after a failover,
 * resumes the stream past schema changes the target never saw: the copy
 * would then write columns the target lacks. Here each replicated table's
 * version in force is compared with the source's definition now, and a
 * difference is followed as a captured DDL is (ddl_track.h: the plan from
 * the old and new definitions, by attnum, under the table's policy), valid
 * from where the stream resumes; a partitioned table's partitions are
 * recorded as they are now. A schema change the stream delivers later
 * anyway (made after that position) then finds the target already changed
 * and does nothing more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "exitcode.h"
#include "log.h"
#include "schema_sync_int.h"
#include "typesync.h"
#include "xalloc.h"

static bool
text_differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0);
}

static bool
column_differs(const tabledef_column *a, const tabledef_column *b)
{
	return text_differs(a->name, b->name) || text_differs(a->type_sql, b->type_sql) ||
	       a->not_null != b->not_null || a->is_key != b->is_key ||
	       text_differs(a->generated, b->generated) ||
	       text_differs(a->collation != NULL ? a->collation->name : NULL,
	                    b->collation != NULL ? b->collation->name : NULL);
}

/* Does the source's definition now differ from the version in force? */
static bool
definition_differs(const tabledef *old, const tabledef *now)
{
	if (old->ncols != now->ncols || text_differs(old->schema, now->schema) ||
	    text_differs(old->name, now->name))
		return true;
	for (int i = 0; i < now->ncols; i++)
		if (old->cols[i].attnum != now->cols[i].attnum ||
		    column_differs(&old->cols[i], &now->cols[i]))
			return true;
	return false;
}

static void
note_free(sync_note *note)
{
	strbuf_free(&note->tables);
	strbuf_free(&note->classes);
	strbuf_free(&note->actions);
}

/* The table as the source has it now: followed on the target. */
static int
follow(schema_sync *ss, catalog_table *t, tabledef *now, tm_lsn pos, int *nchanged)
{
	ddl_event_table et = {now, 'r', now->replident, 0, 0, NULL};
	sync_note note = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, 0};
	schema_sync_result res;
	int rc;

	memset(&res, 0, sizeof res);
	et.cols = calloc((size_t) now->ncols + 1, sizeof *et.cols);
	if (et.cols == NULL)
		abort();
	/* rows the target has get no value here (the copy writes every row):
	 * a column added NOT NULL stays nullable on the target */
	for (int i = 0; i < now->ncols; i++)
		et.cols[i].has_default = true;
	rc = schema_sync_follow_table(ss, t, &et, pos, &note, &res);
	if (rc == TM_OK) {
		log_info("resync: %s.%s changed on the source in the stretch the stream does not "
		         "deliver: followed on the target (%s%s%s)", t->source_schema, t->source_table,
		         note.classes.len > 0 ? strbuf_str(&note.classes) : "no change",
		         note.actions.len > 0 ? ": " : "",
		         note.actions.len > 0 ? strbuf_str(&note.actions) : "");
		(*nchanged)++;
	}
	free(et.cols);
	note_free(&note);
	schema_sync_result_free(&res);
	return rc;
}

/* The table as it was, its types perhaps not: what the stream would have
 * delivered of them (an enum's values added: ALTER TYPE ... ADD VALUE)
 * followed on the target as a captured ALTER TYPE is, before the copy
 * writes such values. */
static int
types_ready(schema_sync *ss, const catalog_table *t, const tabledef *now, int *nchanged)
{
	typesync_result ts = {false, STRBUF_INIT};
	int rc;

	if (now->types.n == 0)
		return TM_OK;
	rc = typesync_follow(ss->sink, ss->cfg.slot, &now->types, &ts);

	if (rc == TM_OK && ts.actions.len > 0) {
		log_info("resync: the types of %s.%s changed on the source in the stretch the stream "
		         "does not deliver: followed on the target (%s)", t->source_schema,
		         t->source_table, strbuf_str(&ts.actions));
		(*nchanged)++;
	}
	typesync_result_free(&ts);
	return rc;
}

static int
mark_dropped(schema_sync *ss, const catalog_table *t, int *nchanged)
{
	char id[16];
	const char *p[] = {id};
	int rc;

	snprintf(id, sizeof id, "%d", t->table_id);
	rc = sink_command(ss->sink, "marking a dropped table",
	                  "UPDATE tidemark.tables SET state = 'dropped' WHERE table_id = $1::int", 1, p);
	if (rc == TM_OK) {
		log_info("resync: table %s.%s was dropped on the source in the stretch the stream does "
		         "not deliver; the target keeps it, no longer replicated", t->source_schema,
		         t->source_table);
		(*nchanged)++;
	}
	return rc;
}

/* One replicated table: gone, changed or as it was. */
static int
catch_up_table(schema_sync *ss, catalog_table *t, tm_lsn pos, int *nchanged)
{
	const schema_sync_source *src = &ss->cfg.source;
	tabledef *now = NULL, *old = NULL;
	char *name = NULL;
	int version = 0;
	int rc;

	if (t->source_relid == 0)
		return TM_OK; /* not known: nothing to compare by */
	rc = src->table_def(src->ctx, t->source_relid, &now);

	if (rc == TM_OK && now == NULL && (rc = src->table_name(src->ctx, t->source_relid, &name)) == TM_OK) {
		if (name == NULL)
			rc = mark_dropped(ss, t, nchanged);
		else
			log_warn("resync: %s (was %s.%s) can no longer be replicated as it is on the "
			         "source (see the message above); its copy is left as it is", name,
			         t->source_schema, t->source_table);
	}
	if (rc == TM_OK && now != NULL)
		rc = schema_sync_load_version(ss, t, &old, &version);
	if (rc == TM_OK && now != NULL && (version == 0 || definition_differs(old, now)))
		rc = follow(ss, t, now, pos, nchanged);
	else if (rc == TM_OK && now != NULL)
		rc = types_ready(ss, t, now, nchanged);
	/* partitions attached, detached or dropped meanwhile */
	if (rc == TM_OK && now != NULL)
		rc = schema_sync_part_record_tree(ss, now);
	tabledef_free(now);
	tabledef_free(old);
	free(name);
	return rc;
}

/* A table of a replicated schema the catalog does not know: registered. */
static int
catch_up_new(schema_sync *ss, const char *schema, const char *name, tm_lsn pos, int *nchanged)
{
	const schema_sync_source *src = &ss->cfg.source;
	catalog_table *t = NULL;
	tabledef *def = NULL;
	bool covered = false, excluded = false, added = false;
	int rc = catalog_load_table(ss->sink, ss->cfg.slot, schema, name, &t);

	if (rc == TM_OK && t == NULL)
		rc = catalog_schema_covers(ss->sink, ss->cfg.slot, schema, name, &covered, &excluded);
	if (rc == TM_OK && covered)
		rc = src->table_def_named(src->ctx, schema, name, &def);
	if (rc == TM_OK && def != NULL) {
		sync_note note = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, 0};
		schema_sync_result res;

		memset(&res, 0, sizeof res);
		rc = schema_sync_add_table(ss, def, pos, &note, &res, &added);
		if (rc == TM_OK && added)
			rc = schema_sync_part_record_tree(ss, def);
		*nchanged += added;
		note_free(&note);
		schema_sync_result_free(&res);
	}
	tabledef_free(def);
	catalog_table_free(t);
	return rc;
}

static int
catch_up_schema(schema_sync *ss, const char *schema, tm_lsn pos, int *nchanged)
{
	const schema_sync_source *src = &ss->cfg.source;
	char **names = NULL;
	int rc = src->schema_tables(src->ctx, schema, &names);

	for (int i = 0; rc == TM_OK && names[i] != NULL; i++)
		rc = catch_up_new(ss, schema, names[i], pos, nchanged);
	xstrings_free(names);
	return rc;
}

int
schema_sync_catch_up(schema_sync *ss, tm_lsn pos, int *nchanged)
{
	const char *p[] = {ss->cfg.slot};
	catalog_table *tables = NULL;
	PGresult *r = NULL;
	int n = 0;
	int rc = catalog_load_tables(ss->sink, ss->cfg.slot, &tables, &n);

	*nchanged = 0;
	for (int i = 0; rc == TM_OK && i < n; i++)
		rc = catch_up_table(ss, &tables[i], pos, nchanged);
	catalog_tables_free(tables, n);
	/* after the renames above: a table renamed is not new */
	if (rc == TM_OK)
		rc = sink_query(ss->sink, "reading the replicated schemas",
		                "SELECT source_schema FROM tidemark.schemas WHERE slot_name = $1"
		                " ORDER BY 1", 1, p, &r);
	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++)
		rc = catch_up_schema(ss, PQgetvalue(r, i, 0), pos, nchanged);
	PQclear(r);
	return rc;
}
