/*
 * cmd_setup.c: `tidemark setup`. Idempotent: every step adds only what is
 * missing. Order matters: target tables are registered before the
 * publication includes them, so a running `run` never meets a change of a
 * table it does not know; the slot comes last, so its stream starts after
 * everything it needs exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "commands.h"
#include "ident.h"
#include "log.h"
#include "migrate.h"
#include "pgconn.h"
#include "source_query.h"

typedef struct setup_tables {
	tabledef **defs; /* owned array of owned definitions */
	int n;
} setup_tables;

static void
tables_free(setup_tables *t)
{
	for (int i = 0; i < t->n; i++)
		tabledef_free(t->defs[i]);
	free(t->defs);
}

static bool
tables_has(const setup_tables *t, const char *schema, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->defs[i]->schema, schema) == 0 && strcmp(t->defs[i]->name, name) == 0)
			return true;
	return false;
}

/* Reads one table's definition; a failure is counted, not fatal, so that
 * every table at fault is named in one run. */
static int
tables_read(PGconn *src, setup_tables *t, const char *schema, const char *name, int *bad)
{
	tabledef *def = NULL;
	int rc;

	if (tables_has(t, schema, name))
		return TM_OK;
	rc = source_query_table_def(src, schema, name, &def);
	if (rc == TM_EXIT_CONFIG) {
		(*bad)++;
		return TM_OK;
	}
	if (rc != TM_OK)
		return rc;
	t->defs = realloc(t->defs, sizeof(tabledef *) * (size_t) (t->n + 1));
	if (t->defs == NULL)
		abort();
	t->defs[t->n++] = def;
	return TM_OK;
}

static int
collect_tables(PGconn *src, const cli_options *o, setup_tables *t)
{
	int bad = 0;
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < o->ntables; i++) {
		char *schema, *name;
		tm_error err;

		if (ident_parse_qualified(o->tables[i], "public", &schema, &name, &err) != 0) {
			log_error("--table %s: %s", o->tables[i], err.msg);
			return TM_EXIT_USAGE;
		}
		rc = tables_read(src, t, schema, name, &bad);
		free(schema);
		free(name);
	}
	for (int i = 0; rc == TM_OK && i < o->nschemas; i++) {
		char **names = NULL;

		rc = source_query_schema_tables(src, o->schemas[i], &names);
		for (int j = 0; rc == TM_OK && names[j] != NULL; j++)
			rc = tables_read(src, t, o->schemas[i], names[j], &bad);
		for (int j = 0; names != NULL && names[j] != NULL; j++)
			free(names[j]);
		free(names);
	}
	if (rc == TM_OK && bad > 0) {
		log_error("setup stopped: %d table(s) cannot be replicated as they are (see above); "
		          "nothing was changed", bad);
		rc = TM_EXIT_CONFIG;
	}
	return rc;
}

static int
prepare_source(PGconn *src)
{
	bool super = false;
	int rc = source_query_check_server(src);

	if (rc == TM_OK)
		rc = source_query_is_superuser(src, &super);
	if (rc == TM_OK && migrate_source_scripts[0].name != NULL) {
		if (!super) {
			log_error("source: installing the DDL capture event trigger needs a superuser "
			          "(PostgreSQL allows only superusers to create event triggers). Fix: run "
			          "`tidemark setup` once with a superuser --source; `run` then needs only "
			          "the REPLICATION privilege and SELECT on the tables");
			return TM_EXIT_CONFIG;
		}
		rc = migrate_apply(src, PGCONN_SOURCE);
	}
	return rc;
}

/* The source's capture key, kept on the target: messages written from
 * valid_from on (after the key existed) must carry its signature. */
static int
keep_capture_key(sink *s, const cli_options *o, const char *key_hex, tm_lsn valid_from)
{
	if (key_hex == NULL) {
		log_warn("source: no capture key (tidemark.capture_key is empty); DDL capture messages "
		         "are not authenticated");
		return TM_OK;
	}
	return catalog_set_capture_key(s, o->slot, key_hex, valid_from);
}

static int
prepare_target(const cli_options *o, const setup_tables *t, const char *key_hex,
               tm_lsn valid_from)
{
	PGconn *plain;
	sink *s = NULL;
	int added_count = 0;
	int rc = pgconn_open(o->target, PGCONN_TARGET, "setup", false, &plain);

	if (rc != TM_OK)
		return rc;
	rc = migrate_apply(plain, PGCONN_TARGET);
	PQfinish(plain);
	if (rc == TM_OK)
		rc = sink_open(o->target, "setup", &s);
	if (rc == TM_OK)
		rc = catalog_ensure_progress(s, o->slot);
	if (rc == TM_OK)
		rc = keep_capture_key(s, o, key_hex, valid_from);
	for (int i = 0; rc == TM_OK && i < o->nschemas; i++)
		rc = catalog_add_schema(s, o->slot, o->schemas[i]);
	for (int i = 0; rc == TM_OK && i < t->n; i++) {
		bool added = false;

		rc = sink_begin(s);
		if (rc == TM_OK)
			rc = catalog_add_table(s, o->slot, t->defs[i], valid_from, &added, NULL);
		if (rc == TM_OK)
			rc = sink_commit(s, NULL);
		else
			sink_rollback(s);
		if (rc == TM_OK && added) {
			log_info("target: replicating %s.%s (%d columns, key of %d)", t->defs[i]->schema,
			         t->defs[i]->name, t->defs[i]->ncols, tabledef_nkeys(t->defs[i]));
			added_count++;
		}
	}
	if (rc == TM_OK)
		log_info("target: %d table(s) newly registered, %d in all from this setup",
		         added_count, t->n);
	sink_close(s);
	return rc;
}

int
cmd_setup(const cli_options *o)
{
	setup_tables tables = {NULL, 0};
	PGconn *src = NULL;
	tm_lsn lsn = LSN_INVALID, slot_lsn = LSN_INVALID;
	char *key_hex = NULL; /* owned: the source's capture key */
	bool created = false;
	int rc = cli_require(o, true, true);

	if (rc != TM_OK)
		return rc;
	if (o->ntables == 0 && o->nschemas == 0) {
		fprintf(stderr, "tidemark setup: name at least one --table or --schema\n");
		return TM_EXIT_USAGE;
	}
	if ((rc = pgconn_check_conninfo(o->source, "--source")) != TM_OK ||
	    (rc = pgconn_check_conninfo(o->target, "--target")) != TM_OK)
		return rc;
	rc = pgconn_open(o->source, PGCONN_SOURCE, "setup", false, &src);
	if (rc == TM_OK)
		rc = prepare_source(src);
	if (rc == TM_OK)
		rc = collect_tables(src, o, &tables);
	if (rc == TM_OK)
		rc = source_query_capture_key(src, &key_hex);
	if (rc == TM_OK)
		rc = source_query_current_lsn(src, &lsn);
	if (rc == TM_OK)
		rc = prepare_target(o, &tables, key_hex, lsn);
	if (rc == TM_OK)
		rc = source_query_ensure_publication(src, o->publication, tables.defs, tables.n,
		                                     o->schemas, o->nschemas);
	if (rc == TM_OK)
		rc = source_query_ensure_slot(src, o->slot, &created, &slot_lsn);
	if (rc == TM_OK) {
		char buf[LSN_TEXT_MAX];

		log_info("source: replication slot \"%s\" %s at %s", o->slot,
		         created ? "created" : "already exists, confirmed", lsn_format(slot_lsn, buf));
		printf("tidemark: setup done: %d table(s) replicated through slot \"%s\" and "
		       "publication \"%s\"; start streaming with `tidemark run`\n",
		       tables.n, o->slot, o->publication);
	}
	tables_free(&tables);
	free(key_hex);
	PQfinish(src);
	return rc;
}
