/*
 * cmd_mode.c: `tidemark mode [SCHEMA.TABLE=MODE]... [--metadata-columns |
 * --no-metadata-columns] [--json]`: sets what the target keeps of
 * replicated tables (mode.h), every change in one target transaction,
 * then lists each replicated table's mode. Needs the target only: a mode
 * is checked against the table's latest schema version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "commands.h"
#include "exitcode.h"
#include "log.h"
#include "mode.h"
#include "report.h"
#include "shape.h"

/* What the command line asks of each table it concerns. */
typedef struct mode_plan {
	mode_target *targets; /* owned */
	tabledef **defs;      /* owned, parallel: each target's definition */
	int n;
} mode_plan;

static void
plan_free(mode_plan *p)
{
	for (int i = 0; i < p->n; i++)
		tabledef_free(p->defs[i]);
	free(p->defs);
	free(p->targets);
}

/* Every table named is replicated through the slot. */
static int
check_named(const mode_settings *ms, const catalog_table *tables, int n, const char *slot)
{
	int rc = TM_OK;

	for (int i = 0; i < ms->n; i++) {
		bool found = false;

		for (int j = 0; j < n && !found; j++)
			found = strcmp(tables[j].source_schema, ms->items[i].schema) == 0 &&
			        strcmp(tables[j].source_table, ms->items[i].name) == 0;
		if (!found) {
			log_error("%s.%s is not replicated through slot \"%s\": no mode set for it. Fix: "
			          "name a replicated table (`tidemark mode` lists them)",
			          ms->items[i].schema, ms->items[i].name, slot);
			rc = TM_EXIT_CONFIG;
		}
	}
	return rc;
}

/* One table's target, when the command line concerns it; *bad counts the
 * tables whose definition does not fit their new mode (each said). */
static int
plan_one(sink *s, const cli_options *o, const mode_settings *ms, const catalog_table *t,
         mode_plan *p, int *bad)
{
	const mode_setting *set = mode_settings_find(ms, t->source_schema, t->source_table);
	bool flag = o->metadata_columns || o->no_metadata_columns;
	mode_target *mt = &p->targets[p->n];
	int rc;

	if (set == NULL && !flag)
		return TM_OK;
	mt->table_id = t->table_id;
	mt->mode = set != NULL ? set->mode : shape_mode_of(t);
	mt->metadata = flag ? o->metadata_columns : t->metadata;
	rc = mode_load_def(s, t->table_id, t->source_schema, t->source_table, &p->defs[p->n]);
	mt->def = p->defs[p->n++];
	if (rc == TM_OK && !shape_fits(mt->def, mt->mode, mt->metadata))
		(*bad)++;
	return rc;
}

static int
plan(sink *s, const cli_options *o, const mode_settings *ms, mode_plan *p)
{
	catalog_table *tables = NULL;
	int n = 0, bad = 0;
	int rc = catalog_load_tables(s, o->slot, &tables, &n);

	if (rc == TM_OK)
		rc = check_named(ms, tables, n, o->slot);
	p->targets = calloc((size_t) n + 1, sizeof *p->targets);
	p->defs = calloc((size_t) n + 1, sizeof *p->defs);
	if (p->targets == NULL || p->defs == NULL)
		abort();
	for (int i = 0; rc == TM_OK && i < n; i++)
		rc = plan_one(s, o, ms, &tables[i], p, &bad);
	if (rc == TM_OK && bad > 0) {
		log_error("no mode changed: %d table(s) cannot be replicated in the mode asked (see "
		          "above)", bad);
		rc = TM_EXIT_CONFIG;
	}
	catalog_tables_free(tables, n);
	return rc;
}

/* Every change in one transaction: all or nothing. */
static int
change(sink *s, const cli_options *o, const mode_plan *p, json_t *changes)
{
	int rc = sink_begin(s);

	if (rc == TM_OK && (o->metadata_columns || o->no_metadata_columns))
		rc = mode_set_default(s, o->slot, o->metadata_columns);
	for (int i = 0; rc == TM_OK && i < p->n; i++) {
		json_t *one = NULL;

		rc = mode_change(s, &p->targets[i], &one);
		if (one != NULL)
			json_array_append_new(changes, one);
	}
	if (rc == TM_OK)
		return sink_commit(s, NULL);
	sink_rollback(s);
	json_array_clear(changes);
	return rc;
}

/* "history, metadata columns", and the history kept */
static void
print_table(json_t *t)
{
	const char *mode = report_str(t, "mode");
	bool history = strncmp(mode, "history", 7) == 0;

	printf("  %-40s %s%s", report_str(t, "table"), mode,
	       json_is_true(json_object_get(t, "metadata_columns")) ? ", metadata columns" : "");
	if (json_is_string(json_object_get(t, "history")))
		printf(history ? " (history: %s)" : " (history %s kept, not written)",
		       report_str(t, "history"));
	printf("\n");
}

static void
print_text(json_t *doc)
{
	size_t i, j;
	json_t *c, *d;

	json_array_foreach(json_object_get(doc, "changes"), i, c) {
		printf("tidemark: %s: %s", report_str(c, "table"), report_str(c, "mode"));
		if (json_is_true(json_object_get(c, "metadata_columns")))
			printf(", metadata columns");
		printf(" (was %s%s)\n", report_str(c, "was"),
		       json_is_true(json_object_get(c, "was_metadata_columns")) ? ", metadata columns"
		                                                               : "");
		if (report_str(c, "synced")[0] != '\0')
			printf("  %s\n", report_str(c, "synced"));
		json_array_foreach(json_object_get(c, "done"), j, d)
			printf("  %s\n", json_string_value(d));
	}
	printf("metadata columns of the tables joining later: %s\n",
	       json_is_true(json_object_get(json_object_get(doc, "default"), "metadata_columns"))
	           ? "on" : "off");
	json_array_foreach(json_object_get(doc, "tables"), i, c)
		print_table(c);
}

static int
list(sink *s, const cli_options *o, json_t *changes)
{
	const char *p[] = {o->slot};
	PGresult *d = NULL, *r = NULL;
	json_t *doc;
	int rc = sink_query(s, "reading the pipeline's metadata columns",
	                    "SELECT metadata_columns FROM tidemark.progress WHERE slot_name = $1", 1,
	                    p, &d);

	if (rc == TM_OK)
		rc = sink_query(s, "reading the tables' modes",
		                "SELECT format('%s.%s', quote_ident(source_schema),"
		                " quote_ident(source_table)) AS table, mode, metadata_columns,"
		                " tidemark.relation_if_any(history_relid)::text AS history,"
		                " tidemark.relation_if_any(versions_relid)::text AS versions"
		                " FROM tidemark.tables WHERE slot_name = $1 AND state <> 'dropped'"
		                " ORDER BY 1", 1, p, &r);
	if (rc == TM_OK) {
		doc = json_pack("{s:o, s:o, s:O}", "default",
		                PQntuples(d) ? report_row(d, 0) : json_object(), "tables",
		                report_rows(r), "changes", changes);
		if (o->json)
			report_print_json(doc);
		else
			print_text(doc);
		json_decref(doc);
	}
	PQclear(d);
	PQclear(r);
	return rc;
}

int
cmd_mode(const cli_options *o)
{
	mode_settings ms = {0};
	mode_plan p = {0};
	json_t *changes = json_array();
	sink *s = NULL;
	int rc = cli_require(o, false, true);

	if (rc == TM_OK && o->metadata_columns && o->no_metadata_columns) {
		fprintf(stderr, "tidemark mode: give --metadata-columns or --no-metadata-columns, not "
		        "both\n");
		rc = TM_EXIT_USAGE;
	}
	if (rc == TM_OK)
		rc = mode_settings_parse(o->table_modes, o->ntable_modes, "tidemark mode", &ms);
	if (rc == TM_OK)
		rc = sink_open(o->target, "mode", &s);
	if (rc == TM_OK)
		rc = catalog_check_registered(s, o->slot);
	if (rc == TM_OK)
		rc = mode_check_catalog(s);
	if (rc == TM_OK)
		rc = mode_refind_histories(s, o->slot);
	if (rc == TM_OK && (ms.n > 0 || o->metadata_columns || o->no_metadata_columns))
		rc = plan(s, o, &ms, &p);
	/* with a metadata flag and no table yet: the default only */
	if (rc == TM_OK && (p.n > 0 || o->metadata_columns || o->no_metadata_columns))
		rc = change(s, o, &p, changes);
	if (rc == TM_OK)
		rc = list(s, o, changes);
	json_decref(changes);
	sink_close(s);
	plan_free(&p);
	mode_settings_free(&ms);
	return rc;
}
