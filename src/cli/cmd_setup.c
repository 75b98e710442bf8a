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
#include "key_order.h"
#include "log.h"
#include "migrate.h"
#include "mode.h"
#include "pgconn.h"
#include "pipeline.h"
#include "policy.h"
#include "shape.h"
#include "source.h"
#include "source_query.h"
#include "strbuf.h"
#include "xalloc.h"

/* What a setup has changed so far, for the report of one that fails. */
typedef struct setup_done {
	int source_migrations;  /* source migrations applied (capture objects) */
	int target_migrations;  /* target catalog migrations applied */
	bool registered;        /* the replication's progress row, exclusions, schemas */
	int tables;             /* tables registered (and created on the target) */
} setup_done;

typedef struct setup_tables {
	tabledef **defs;      /* owned array of owned definitions */
	tm_lsn *at;           /* owned, parallel: where each definition was read
	                       * (source_query_table_def_at): its history starts there */
	ddl_part_root *trees; /* owned, parallel: a partitioned table's partitions */
	int n;
	char **excluded; /* owned: --exclude-table as schema, name pairs (2 * nexcluded) */
	int nexcluded;
	const char *conninfo; /* borrowed: the source's, to report a wait for a lock */
} setup_tables;

static void
tables_free(setup_tables *t)
{
	for (int i = 0; i < t->n; i++) {
		tabledef_free(t->defs[i]);
		ddl_part_root_clear(&t->trees[i]);
	}
	free(t->defs);
	free(t->at);
	free(t->trees);
	for (int i = 0; i < 2 * t->nexcluded; i++)
		free(t->excluded[i]);
	free(t->excluded);
}

static bool
is_excluded(const setup_tables *t, const char *schema, const char *name)
{
	for (int i = 0; i < t->nexcluded; i++)
		if (strcmp(t->excluded[2 * i], schema) == 0 && strcmp(t->excluded[2 * i + 1], name) == 0)
			return true;
	return false;
}

/* --exclude-table names, read the SQL way. */
static int
parse_exclusions(const cli_options *o, setup_tables *t)
{
	t->excluded = calloc((size_t) o->nexclude_tables * 2 + 1, sizeof(char *));
	if (t->excluded == NULL)
		abort();
	for (int i = 0; i < o->nexclude_tables; i++) {
		tm_error err;

		if (ident_parse_qualified(o->exclude_tables[i], "public", &t->excluded[2 * i],
		                          &t->excluded[2 * i + 1], &err) != 0) {
			log_error("--exclude-table %s: %s", o->exclude_tables[i], err.msg);
			return TM_EXIT_USAGE;
		}
		t->nexcluded++;
	}
	return TM_OK;
}

static void
add_exclusion(setup_tables *t, const char *schema, const char *name)
{
	t->excluded = realloc(t->excluded, sizeof(char *) * (size_t) (2 * t->nexcluded + 3));
	if (t->excluded == NULL)
		abort();
	t->excluded[2 * t->nexcluded] = xstrdup(schema);
	t->excluded[2 * t->nexcluded + 1] = xstrdup(name);
	t->excluded[2 * ++t->nexcluded] = NULL;
}

/* The tables an earlier setup of this replication left out stay out.
 * Read only: setup changes nothing before its checks have passed. */
static int
stored_exclusions(const cli_options *o, setup_tables *t)
{
	const char *p[] = {o->slot};
	PGconn *conn = NULL;
	PGresult *r = NULL;
	int rc = pgconn_open(o->target, PGCONN_TARGET, "setup", false, &conn);

	if (rc == TM_OK)
		rc = pgconn_exec(conn, PGCONN_TARGET, "looking for the tables left out",
		                 "SELECT to_regclass('tidemark.excluded_tables') IS NOT NULL", 0, NULL, &r);
	/* no catalog yet, or one from before exclusions: none */
	if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0) {
		PQclear(r);
		r = NULL;
		rc = pgconn_exec(conn, PGCONN_TARGET, "reading the tables left out",
		                 "SELECT source_schema, source_table FROM tidemark.excluded_tables"
		                 " WHERE slot_name = $1", 1, p, &r);
	} else if (rc == TM_OK) {
		PQclear(r);
		r = NULL;
	}
	for (int i = 0; r != NULL && i < PQntuples(r); i++)
		if (!is_excluded(t, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1)))
			add_exclusion(t, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
	PQclear(r);
	PQfinish(conn);
	return rc;
}

/*
 * An excluded table of a --schema stays in the schema's publication
 * (PostgreSQL 15 cannot leave one table out of it), so PostgreSQL refuses
 * its UPDATE and DELETE unless it has a replica identity: say so, with the
 * fix, rather than break the application.
 */
static int
check_excluded(PGconn *src, const char *schema, const char *name, int *bad)
{
	char replident = 0;
	bool has_key = false;
	int rc = source_query_replica_identity(src, schema, name, &replident, &has_key);

	if (rc == TM_OK && !has_key && replident != 'f') {
		log_error("source: %s.%s is excluded but stays in the publication of schema %s, and "
		          "without a primary key or replica identity PostgreSQL would then refuse its "
		          "UPDATE and DELETE. Fix: ALTER TABLE \"%s\".\"%s\" REPLICA IDENTITY FULL; (it "
		          "stays excluded), or give it a primary key that is not DEFERRABLE", schema, name,
		          schema, schema, name);
		(*bad)++;
	}
	return rc;
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
	source_wait_watch watch = {t->conninfo, NULL, NULL};
	tabledef *def = NULL;
	tm_lsn at = LSN_INVALID;
	int rc;

	if (tables_has(t, schema, name))
		return TM_OK;
	rc = source_query_table_def_at(src, &watch, schema, name, &def, &at);
	if (rc == TM_EXIT_CONFIG) {
		(*bad)++;
		return TM_OK;
	}
	if (rc != TM_OK)
		return rc;
	if (tabledef_nstored(def) == 0) {
		log_error("source: table %s.%s has no columns (or only generated ones): its rows carry "
		          "nothing to replicate but their number. Fix: give it a column (ALTER TABLE "
		          "\"%s\".\"%s\" ADD COLUMN ...; a table of a replicated schema then joins on "
		          "its own, with all its rows), or leave the table out", schema, name, schema,
		          name);
		tabledef_free(def);
		(*bad)++;
		return TM_OK;
	}
	/* PostgreSQL 18 refuses UPDATE and DELETE of a published table whose
	 * replica identity has a column the publication does not send: under
	 * FULL, any generated column (a key over one is no key, source
	 * migration 019, which prepare_source applied: refused above) */
	if (PQserverVersion(src) >= 180000 && def->replident == 'f' &&
	    tabledef_nstored(def) < def->ncols) {
		log_error("source: table %s.%s has a replica identity (REPLICA IDENTITY FULL, or its "
		          "key) with a generated column, which logical decoding does not send: once "
		          "published, its UPDATE and DELETE would be refused by the source (PostgreSQL 18 "
		          "and later). Fix: give it a primary key over columns that are not generated, "
		          "with ALTER TABLE \"%s\".\"%s\" REPLICA IDENTITY DEFAULT; (or a unique index "
		          "on such NOT NULL columns, with REPLICA IDENTITY USING INDEX), or leave the "
		          "table out (setup --exclude-table '%s.%s')", schema, name, schema, name, schema,
		          name);
		tabledef_free(def);
		(*bad)++;
		return TM_OK;
	}
	t->defs = xrealloc(t->defs, sizeof(tabledef *) * (size_t) (t->n + 1));
	t->at = xrealloc(t->at, sizeof(tm_lsn) * (size_t) (t->n + 1));
	t->trees = xrealloc(t->trees, sizeof(ddl_part_root) * (size_t) (t->n + 1));
	memset(&t->trees[t->n], 0, sizeof t->trees[t->n]);
	t->defs[t->n] = def;
	t->at[t->n] = at;
	/* a partitioned table is replicated with all its partitions */
	return source_query_partitions(src, def->relid, &t->trees[t->n++]);
}

/* Is the table among those set up (by name, or through its schema)? */
static bool
covered(const setup_tables *t, const cli_options *o, const char *schema, const char *name)
{
	for (int i = 0; i < o->nschemas; i++)
		if (strcmp(o->schemas[i], schema) == 0)
			return true;
	return tables_has(t, schema, name);
}

/* Partitions of a replicated schema whose root lies elsewhere and is not
 * replicated: their rows would be missing. Said, with the fix. */
static int
warn_foreign_partitions(PGconn *src, const cli_options *o, const setup_tables *t)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < o->nschemas; i++) {
		char **f = NULL;

		rc = source_query_foreign_partitions(src, o->schemas[i], &f);
		for (int j = 0; rc == TM_OK && f[j] != NULL; j += 3)
			if (!covered(t, o, f[j + 1], f[j + 2]))
				log_warn("source: %s is a partition of %s.%s, which is not replicated: a "
				         "partitioned table is replicated as its root, so its rows are not. "
				         "Fix: add --table '%s.%s' (its partitions in every schema come with "
				         "it)", f[j], f[j + 1], f[j + 2], f[j + 1], f[j + 2]);
		xstrings_free(f);
	}
	return rc;
}

/* Inheritance children (INHERITS) of a replicated parent that are not
 * replicated: the parent is replicated with its own rows only, which a
 * query of the parent on the source does not show apart. Said, with the
 * fix. */
static int
warn_inheritance_children(PGconn *src, const cli_options *o, const setup_tables *t)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < t->n; i++) {
		strbuf left = STRBUF_INIT;
		char **c = NULL;

		rc = source_query_inheritance_children(src, t->defs[i]->relid, &c);
		for (int j = 0; rc == TM_OK && c[j] != NULL; j += 2)
			if (!covered(t, o, c[j], c[j + 1]))
				strbuf_appendf(&left, "%s%s.%s", left.len > 0 ? ", " : "", c[j], c[j + 1]);
		if (left.len > 0)
			log_warn("source: %s.%s has inheritance children that are not replicated (%s): a "
			         "parent is replicated with its own rows only, while a query of it on the "
			         "source also returns its children's rows. Fix, to replicate them: add "
			         "--table for each (each is a table of its own on the target)",
			         t->defs[i]->schema, t->defs[i]->name, left.data);
		strbuf_free(&left);
		xstrings_free(c);
	}
	return rc;
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
		if (is_excluded(t, schema, name)) {
			log_error("--table %s is also given to --exclude-table", o->tables[i]);
			rc = TM_EXIT_USAGE;
		} else
			rc = tables_read(src, t, schema, name, &bad);
		free(schema);
		free(name);
	}
	for (int i = 0; rc == TM_OK && i < o->nschemas; i++) {
		char **names = NULL, **unlogged = NULL, **empty = NULL;

		rc = source_query_schema_tables(src, o->schemas[i], &names, &unlogged, &empty);
		for (int j = 0; rc == TM_OK && names[j] != NULL; j++)
			rc = is_excluded(t, o->schemas[i], names[j])
				? check_excluded(src, o->schemas[i], names[j], &bad)
				: tables_read(src, t, o->schemas[i], names[j], &bad);
		/* left out until made LOGGED: it then joins (schema_sync_add_table) */
		for (int j = 0; rc == TM_OK && unlogged[j] != NULL; j++)
			log_warn("source: table %s.%s is UNLOGGED: its changes are not written to the WAL, "
			         "so it is not replicated; it joins (and is copied) when it is made LOGGED",
			         o->schemas[i], unlogged[j]);
		/* left out until it has a column (schema_sync_add_table) */
		for (int j = 0; rc == TM_OK && empty[j] != NULL; j++)
			log_warn("source: table %s.%s has no columns (or only generated ones): it is not "
			         "replicated; it joins (and is copied) when it is given one",
			         o->schemas[i], empty[j]);
		xstrings_free(names);
		xstrings_free(unlogged);
		xstrings_free(empty);
	}
	if (rc == TM_OK && bad > 0) {
		log_error("setup stopped: %d table(s) cannot be replicated as they are (see above)",
		          bad);
		rc = TM_EXIT_CONFIG;
	}
	if (rc == TM_OK)
		rc = warn_foreign_partitions(src, o, t);
	return rc == TM_OK ? warn_inheritance_children(src, o, t) : rc;
}

/* The pipeline this setup makes or extends: its source and mapping. */
typedef struct setup_pipeline {
	pipeline_source source;
	schema_map map;       /* the recorded mapping with what this setup adds */
} setup_pipeline;

/* --target-schema and --map-schema. */
static int
wanted_map(const cli_options *o, schema_map *want)
{
	tm_error err;

	if (o->target_schema != NULL && schema_map_set_default(want, o->target_schema, &err) != 0) {
		log_error("%s", err.msg);
		return TM_EXIT_USAGE;
	}
	for (int i = 0; i < o->nmap_schemas; i++)
		if (schema_map_parse_pair(want, o->map_schemas[i], &err) != 0) {
			log_error("%s", err.msg);
			return TM_EXIT_USAGE;
		}
	return TM_OK;
}

static void
names_push(char ***names, int *n, const char *schema, const char *name)
{
	*names = xrealloc(*names, sizeof(char *) * (size_t) (2 * *n + 2));
	(*names)[2 * *n] = xstrdup(schema);
	(*names)[2 * *n + 1] = xstrdup(name);
	(*n)++;
}

/* The tables this setup names, as schema, name pairs: known before their
 * definitions are read (which needs the capture functions on the source),
 * so that the pipeline's checks come before any change. */
static int
setup_names(PGconn *src, const cli_options *o, const setup_tables *t, char ***names, int *n)
{
	int rc = TM_OK;

	for (int i = 0; i < o->ntables; i++) {
		char *schema, *name;
		tm_error err;

		if (ident_parse_qualified(o->tables[i], "public", &schema, &name, &err) != 0) {
			log_error("--table %s: %s", o->tables[i], err.msg);
			return TM_EXIT_USAGE;
		}
		names_push(names, n, schema, name);
		free(schema);
		free(name);
	}
	for (int i = 0; rc == TM_OK && i < o->nschemas; i++) {
		char **list = NULL;

		rc = source_query_schema_tables(src, o->schemas[i], &list, NULL, NULL);
		for (int j = 0; rc == TM_OK && list[j] != NULL; j++)
			if (!is_excluded(t, o->schemas[i], list[j]))
				names_push(names, n, o->schemas[i], list[j]);
		xstrings_free(list);
	}
	return rc;
}

/* The target is another database than the source: in the same one, the
 * source's capture objects and the target's catalog would share the schema
 * tidemark and its record of migrations. */
static int
check_not_the_source(PGconn *target, const char *conninfo, const pipeline_source *src_id)
{
	pipeline_source t;
	int rc = pipeline_source_read(target, PGCONN_TARGET, conninfo, &t);

	if (rc == TM_OK && pipeline_source_same(&t, src_id)) {
		log_error("--source and --target are the same database (%s, server %s): tidemark "
		          "replicates into another database. Fix: CREATE DATABASE for the warehouse, "
		          "on this server or another, and give it as --target", src_id->database,
		          src_id->system_id);
		rc = TM_EXIT_CONFIG;
	}
	pipeline_source_clear(&t);
	return rc;
}

/* Which source this is, and whether this target lets it set up the
 * pipeline asked: checked before anything changes on either side. */
static int
check_pipeline(const cli_options *o, PGconn *src, const setup_tables *t, setup_pipeline *sp)
{
	schema_map want = SCHEMA_MAP_INIT;
	char **names = NULL;
	int n = 0;
	PGconn *target = NULL;
	int rc = wanted_map(o, &want);

	if (rc == TM_OK)
		rc = pipeline_source_read(src, PGCONN_SOURCE, o->source, &sp->source);
	if (rc == TM_OK)
		rc = setup_names(src, o, t, &names, &n);
	if (rc == TM_OK)
		rc = pgconn_open(o->target, PGCONN_TARGET, "setup", false, &target);
	if (rc == TM_OK)
		rc = check_not_the_source(target, o->target, &sp->source);
	if (rc == TM_OK)
		rc = source_query_check_whole(src, o->publication);
	if (rc == TM_OK)
		rc = pipeline_check_setup(target, src, o->slot, &sp->source, &want, names, n, &sp->map);
	for (int i = 0; i < 2 * n; i++)
		free(names[i]);
	free(names);
	schema_map_clear(&want);
	PQfinish(target);
	return rc;
}

/* The capture's event triggers made whole again (one dropped, disabled, or
 * enabled without ALWAYS by hand), each mending said. */
static int
repair_capture(PGconn *src)
{
	PGresult *r = NULL;
	int rc = pgconn_exec(src, PGCONN_SOURCE, "mending the DDL capture's event triggers",
	                     "SELECT unnest(tidemark.capture_repair())", 0, NULL, &r);

	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++)
		log_warn("source: DDL capture event trigger %s (schema changes made while it did not "
		         "fire were not captured: tables whose columns the stream describes otherwise "
		         "are set aside and copied again when run meets them)", PQgetvalue(r, i, 0));
	PQclear(r);
	return rc;
}

static int
prepare_source(PGconn *src, setup_done *done)
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
		rc = migrate_apply(src, PGCONN_SOURCE, &done->source_migrations);
	}
	if (rc == TM_OK)
		rc = repair_capture(src);
	return rc;
}

/* The source's capture key, kept on the target: messages written from
 * valid_from on (after the key existed) must carry its signature, bound to
 * their transaction. */
static int
keep_capture_key(sink *s, const cli_options *o, const char *key_hex, tm_lsn valid_from)
{
	int rc;

	if (key_hex == NULL) {
		log_warn("source: no capture key (tidemark.capture_key is empty); DDL capture messages "
		         "are not authenticated");
		return TM_OK;
	}
	rc = catalog_set_capture_key(s, o->slot, key_hex, valid_from);
	/* the source's capture (all of migrations/source/, applied above) binds
	 * its messages to their transaction from here on */
	if (rc == TM_OK)
		rc = catalog_set_capture_bound(s, o->slot, valid_from);
	return rc;
}

/* Records an exclusion; a table already replicated cannot be left out. */
static int
exclude_table(sink *s, const cli_options *o, const char *schema, const char *name)
{
	catalog_table *known = NULL;
	int rc = catalog_load_table(s, o->slot, schema, name, &known);

	if (rc == TM_OK && known != NULL) {
		log_error("--exclude-table %s.%s: the table is replicated already, and tidemark cannot "
		          "stop replicating one table of a running replication. Fix: leave the option "
		          "out, or start over without the table (tidemark teardown, then setup with "
		          "--exclude-table: every table is copied again)", schema, name);
		rc = TM_EXIT_CONFIG;
	}
	catalog_table_free(known);
	if (rc == TM_OK)
		rc = catalog_exclude_table(s, o->slot, schema, name);
	if (rc == TM_OK)
		log_info("target: %s.%s is left out of the replicated schemas", schema, name);
	return rc;
}

/* Whether the target orders the new table's key as the source does
 * (key_order.h), said now rather than at its copy. */
static int
record_key_order(PGconn *src, sink *s, const char *slot, const tabledef *def)
{
	catalog_table *t = NULL;
	int rc = catalog_load_table(s, slot, def->schema, def->name, &t);

	if (rc == TM_OK && t != NULL)
		rc = key_order_record(src, s, t, false, NULL);
	catalog_table_free(t);
	return rc;
}

/*
 * A partitioned table registered now: its partitions are recorded. One
 * registered already keeps what the stream recorded: it may be behind an
 * ATTACH or a DETACH, which must still find the partitions as they were.
 * Either way a partition registered as a table of its own (by an older
 * tidemark) is retired.
 */
static int
record_partitions(sink *s, const char *slot, const tabledef *def, ddl_part_root *tree,
                  bool added)
{
	catalog_table *t = NULL;
	int rc = catalog_load_table(s, slot, def->schema, def->name, &t);

	if (rc != TM_OK || t == NULL || tree->nmembers == 0) {
		catalog_table_free(t);
		return rc;
	}
	if (added) {
		log_info("target: %s.%s is partitioned: replicated as one table, with its %d "
		         "partition(s)", def->schema, def->name, tree->nmembers);
		rc = catalog_partitions_replace(s, t->table_id, tree->members, tree->nmembers);
	}
	free(tree->schema);
	free(tree->name);
	tree->schema = xstrdup(def->schema);
	tree->name = xstrdup(def->name);
	if (rc == TM_OK)
		rc = catalog_partitions_retire(s, slot, tree);
	catalog_table_free(t);
	return rc;
}

/*
 * A table registered already whose history was interrupted: registered for
 * an earlier slot (before `teardown`, or before the slot was dropped), so
 * the source's changes since the old slot's last position were never
 * captured; or the source's table under this name is another one (another
 * oid). Its history starts
 * again where its definition was read: a new schema version, copied again;
 * its target table is kept when it has the definition's columns, else
 * moved aside and made again.
 */
static int
rejoin(sink *s, const char *slot, const catalog_table *known, const tabledef *def, tm_lsn at,
       bool *rejoined)
{
	bool same = false;
	char *aside = NULL;
	char pos[LSN_TEXT_MAX];
	int rc = catalog_version_matches(s, known->table_id, def, &same);

	same = same && known->source_relid == def->relid;
	if (rc == TM_OK)
		rc = catalog_restart_table(s, slot, known, def, at, same, &aside);
	if (rc == TM_OK)
		log_info("target: %s.%s joins replication again from %s (changes before were not "
		         "captured): it is copied again%s%s%s", def->schema, def->name,
		         lsn_format(at, pos), aside ? "; its target table of another definition is "
		                                      "kept aside as \"" : "", aside ? aside : "",
		         aside ? "\"" : "");
	*rejoined = rc == TM_OK;
	free(aside);
	return rc;
}

/* Registers one table (new, joining again, or known: nothing to do). */
static int
register_table(sink *s, const cli_options *o, const tabledef *def, tm_lsn at, bool *added)
{
	catalog_table *known = NULL;
	int rc = catalog_load_table(s, o->slot, def->schema, def->name, &known);

	*added = false;
	if (rc == TM_OK && known != NULL &&
	    (known->interrupted || (known->source_relid != 0 && known->source_relid != def->relid)))
		rc = rejoin(s, o->slot, known, def, at, added);
	else if (rc == TM_OK && known == NULL)
		rc = catalog_add_table(s, o->slot, def, at, added, NULL);
	catalog_table_free(known);
	return rc;
}

/* --table-policy names tables of this setup: a table set up before gets its
 * policy from `tidemark policy`. */
static int
check_policies(const setup_tables *t, const policy_settings *ps)
{
	int rc = TM_OK;

	for (int i = 0; i < ps->n; i++)
		if (ps->items[i].name != NULL && !tables_has(t, ps->items[i].schema, ps->items[i].name)) {
			log_error("--table-policy %s.%s: the table is not among the tables of this setup. "
			          "Fix: name it with --table (or its --schema), or give a table set up "
			          "before its policy with `tidemark policy`", ps->items[i].schema,
			          ps->items[i].name);
			rc = TM_EXIT_USAGE;
		}
	return rc;
}

/* --table-mode names tables of this setup (a table set up before gets its
 * mode from `tidemark mode`), and each table fits the mode it is given
 * (shape_fits: a key for a history or soft deletes, no column under one of
 * tidemark's names), every table at fault said before the target changes. */
static int
check_modes(const setup_tables *t, const mode_settings *ms, bool metadata)
{
	int bad = 0;
	int rc = TM_OK;

	for (int i = 0; i < ms->n; i++)
		if (!tables_has(t, ms->items[i].schema, ms->items[i].name)) {
			log_error("--table-mode %s.%s: the table is not among the tables of this setup. "
			          "Fix: name it with --table (or its --schema), or give a table set up "
			          "before its mode with `tidemark mode`", ms->items[i].schema,
			          ms->items[i].name);
			rc = TM_EXIT_USAGE;
		}
	for (int i = 0; rc == TM_OK && i < t->n; i++) {
		const mode_setting *set = mode_settings_find(ms, t->defs[i]->schema, t->defs[i]->name);

		if ((set != NULL || metadata) &&
		    !shape_fits(t->defs[i], set != NULL ? set->mode : 0, metadata))
			bad++;
	}
	if (rc == TM_OK && bad > 0) {
		log_error("setup stopped: %d table(s) cannot be replicated in the mode asked (see "
		          "above)", bad);
		rc = TM_EXIT_CONFIG;
	}
	return rc;
}

/* One table of this setup to the mode it is given, and with
 * --metadata-columns to them; a table not named keeps its mode. */
static int
store_mode(sink *s, const cli_options *o, const tabledef *def, const mode_settings *ms,
           json_t *changes)
{
	const mode_setting *set = mode_settings_find(ms, def->schema, def->name);
	catalog_table *known = NULL;
	json_t *change = NULL;
	int rc;

	if (set == NULL && !o->metadata_columns)
		return TM_OK;
	rc = catalog_load_table(s, o->slot, def->schema, def->name, &known);
	if (rc == TM_OK && known != NULL) {
		mode_target mt = {known->table_id, set != NULL ? set->mode : shape_mode_of(known),
		                  o->metadata_columns || known->metadata, def};

		rc = mode_change(s, &mt, &change);
	}
	if (change != NULL)
		json_array_append_new(changes, change);
	catalog_table_free(known);
	return rc;
}

/* "target: public.t: mode history (was mirror): made ...; ..." */
static void
log_mode(json_t *c)
{
	strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *d;

	json_array_foreach(json_object_get(c, "done"), i, d)
		strbuf_appendf(&sb, "%s%s", i > 0 ? "; " : ": ", json_string_value(d));
	log_info("target: %s: mode %s%s (was %s%s)%s", json_string_value(json_object_get(c, "table")),
	         json_string_value(json_object_get(c, "mode")),
	         json_is_true(json_object_get(c, "metadata_columns")) ? ", metadata columns" : "",
	         json_string_value(json_object_get(c, "was")),
	         json_is_true(json_object_get(c, "was_metadata_columns")) ? ", metadata columns" : "",
	         sb.len > 0 ? sb.data : "");
	strbuf_free(&sb);
}

/* setup --table-mode, --metadata-columns: stored once the tables are
 * registered, every change in one transaction (mode.h). */
static int
store_modes(sink *s, const cli_options *o, const setup_tables *t, const mode_settings *ms)
{
	json_t *changes = json_array(), *c;
	size_t i;
	int rc = sink_begin(s);

	if (rc == TM_OK && o->metadata_columns)
		rc = mode_set_default(s, o->slot, true);
	for (int k = 0; rc == TM_OK && k < t->n; k++)
		rc = store_mode(s, o, t->defs[k], ms, changes);
	if (rc == TM_OK)
		rc = sink_commit(s, NULL);
	else
		sink_rollback(s);
	if (rc == TM_OK)
		json_array_foreach(changes, i, c)
			log_mode(c);
	json_decref(changes);
	return rc;
}

static int
prepare_target(const cli_options *o, PGconn *src, const setup_tables *t,
               const setup_pipeline *sp, const char *key_hex, tm_lsn valid_from,
               const policy_settings *ps, const mode_settings *ms, bool slot_new,
               setup_done *done)
{
	PGconn *plain;
	sink *s = NULL;
	int added_count = 0;
	int rc = pgconn_open(o->target, PGCONN_TARGET, "setup", false, &plain);

	if (rc != TM_OK)
		return rc;
	pgconn_warn_encodings(src, plain);
	rc = migrate_apply(plain, PGCONN_TARGET, &done->target_migrations);
	PQfinish(plain);
	if (rc == TM_OK)
		rc = sink_open(o->target, "setup", &s);
	if (rc == TM_OK)
		rc = catalog_ensure_progress(s, o->slot);
	if (rc == TM_OK && slot_new)
		rc = catalog_new_slot_generation(s, o->slot);
	if (rc == TM_OK)
		rc = pipeline_save(s, o->slot, &sp->source, &sp->map);
	done->registered = rc == TM_OK;
	if (rc == TM_OK)
		rc = keep_capture_key(s, o, key_hex, valid_from);
	for (int i = 0; rc == TM_OK && i < t->nexcluded; i++)
		rc = exclude_table(s, o, t->excluded[2 * i], t->excluded[2 * i + 1]);
	for (int i = 0; rc == TM_OK && i < o->nschemas; i++)
		rc = catalog_add_schema(s, o->slot, o->schemas[i]);
	for (int i = 0; rc == TM_OK && i < t->n; i++) {
		bool added = false;

		rc = sink_begin(s);
		if (rc == TM_OK)
			rc = register_table(s, o, t->defs[i], t->at[i], &added);
		if (rc == TM_OK)
			rc = record_partitions(s, o->slot, t->defs[i], &t->trees[i], added);
		if (rc == TM_OK)
			rc = sink_commit(s, NULL);
		else
			sink_rollback(s);
		if (rc == TM_OK && added && tabledef_nkeys(t->defs[i]) == 0)
			log_info("target: replicating %s.%s (%d columns, no key: REPLICA IDENTITY FULL, rows "
			         "matched by all their columns, copied in one read)", t->defs[i]->schema,
			         t->defs[i]->name, t->defs[i]->ncols);
		else if (rc == TM_OK && added)
			log_info("target: replicating %s.%s (%d columns, key of %d)", t->defs[i]->schema,
			         t->defs[i]->name, t->defs[i]->ncols, tabledef_nkeys(t->defs[i]));
		added_count += rc == TM_OK && added;
		done->tables += rc == TM_OK && added;
		if (rc == TM_OK && added && tabledef_nkeys(t->defs[i]) > 0)
			rc = record_key_order(src, s, o->slot, t->defs[i]);
	}
	if (rc == TM_OK)
		rc = catalog_warn_interrupted(s, o->slot);
	if (rc == TM_OK)
		log_info("target: %d table(s) newly registered, %d in all from this setup",
		         added_count, t->n);
	/* setup --policy, --table-policy: kept in the catalog, for every run */
	if (rc == TM_OK && ps->n > 0)
		rc = policy_store(s, o->slot, ps);
	/* setup --table-mode, --metadata-columns: kept too, their objects made */
	if (rc == TM_OK && (ms->n > 0 || o->metadata_columns))
		rc = store_modes(s, o, t, ms);
	sink_close(s);
	return rc;
}

/* Every table of this setup can be in the publication: one given by
 * --publication may leave some out for good (FOR ALL TABLES EXCEPT, from
 * PostgreSQL 19), whose changes would never be sent. A table not in it
 * yet that ensure_publication adds is not said: only a FOR ALL TABLES
 * publication leaves any out after that. */
static int
check_published(PGconn *src, const char *publication, const setup_tables *t)
{
	uint32_t *relids = xcalloc((size_t) t->n + 1, sizeof *relids);
	char **names = NULL;
	int rc;

	for (int i = 0; i < t->n; i++)
		relids[i] = t->defs[i]->relid;
	rc = t->n > 0 ? source_query_unpublished(src, publication, relids, t->n, true, &names) : TM_OK;
	for (int i = 0; names != NULL && names[i] != NULL; i++) {
		log_error("source: publication \"%s\" does not publish table %s (FOR ALL TABLES EXCEPT "
		          "it?), so its changes would not be sent. Fix: publish it (ALTER PUBLICATION "
		          "\"%s\" SET ALL TABLES without it in EXCEPT), or give tidemark a publication "
		          "of its own (leave --publication out)", publication, names[i], publication);
		rc = TM_EXIT_CONFIG;
	}
	xstrings_free(names);
	free(relids);
	return rc;
}

/* What a failed setup had done already: said exactly, so that nobody
 * believes nothing changed (running setup again after the fix goes on
 * from there: every step is idempotent). */
static void
report_partial(const setup_done *d)
{
	strbuf sb = STRBUF_INIT;

	if (d->source_migrations > 0)
		strbuf_appendf(&sb, "; on the source, %d of tidemark's migrations (its schema and the "
		               "DDL capture event triggers, which write a message into the WAL for each "
		               "DDL and change nothing else)", d->source_migrations);
	if (d->target_migrations > 0)
		strbuf_appendf(&sb, "; on the target, %d catalog migrations (schema tidemark)",
		               d->target_migrations);
	if (d->registered)
		strbuf_append(&sb, "; the replication's row in tidemark.progress");
	if (d->tables > 0)
		strbuf_appendf(&sb, "; %d table(s) registered and created on the target", d->tables);
	if (sb.len == 0)
		log_error("setup changed nothing");
	else
		log_error("setup had already installed%s. Running setup again once fixed goes on from "
		          "there; `tidemark teardown` removes it", strbuf_str(&sb) + 1);
	strbuf_free(&sb);
}

/* PostgreSQL 17 and later: a slot created before (by an older tidemark,
 * or on an older server since upgraded) becomes a failover slot. */
static int
ensure_failover(PGconn *src, const cli_options *o)
{
	source_slot_state st;
	int rc;

	if (PQserverVersion(src) < 170000)
		return TM_OK;
	rc = source_query_slot_state(src, o->slot, &st);
	if (rc != TM_OK || st.failover || st.synced)
		return rc;
	if (st.active_pid != 0) {
		log_warn("source: replication slot \"%s\" is not a failover slot, and cannot be made "
		         "one while it is in use (pid %d). Fix: stop `tidemark run`, then `tidemark "
		         "setup` again", o->slot, st.active_pid);
		return TM_OK;
	}
	return source_set_failover(o->source, o->slot);
}

int
cmd_setup(const cli_options *o)
{
	setup_tables tables = {.conninfo = o->source};
	setup_pipeline pipeline = {{NULL, NULL, NULL, NULL}, SCHEMA_MAP_INIT};
	setup_done done = {0};
	policy_settings policies = {0};
	mode_settings modes = {0};
	PGconn *src = NULL;
	tm_lsn lsn = LSN_INVALID, slot_lsn = LSN_INVALID;
	char *key_hex = NULL; /* owned: the source's capture key */
	bool created = false, slot_exists = false;
	int rc = cli_require(o, true, true);

	if (rc != TM_OK)
		return rc;
	if (o->ntables == 0 && o->nschemas == 0) {
		fprintf(stderr, "tidemark setup: name at least one --table or --schema\n");
		return TM_EXIT_USAGE;
	}
	rc = policy_settings_parse(o->policy, o->table_policies, o->ntable_policies,
	                           "--table-policy", false, &policies);
	if (rc == TM_OK)
		rc = mode_settings_parse(o->table_modes, o->ntable_modes, "--table-mode", &modes);
	if (rc == TM_OK)
		rc = parse_exclusions(o, &tables);
	if (rc == TM_OK)
		rc = stored_exclusions(o, &tables);
	if (rc == TM_OK)
		rc = pgconn_open(o->source, PGCONN_SOURCE, "setup", false, &src);
	if (rc == TM_OK)
		rc = check_pipeline(o, src, &tables, &pipeline);
	if (rc == TM_OK)
		rc = prepare_source(src, &done);
	if (rc == TM_OK)
		rc = collect_tables(src, o, &tables);
	if (rc == TM_OK)
		rc = check_policies(&tables, &policies);
	if (rc == TM_OK)
		rc = check_modes(&tables, &modes, o->metadata_columns);
	/* a publication of the user's that exists already (one setup makes
	 * publishes every table it adds) */
	if (rc == TM_OK)
		rc = check_published(src, o->publication, &tables);
	if (rc == TM_OK)
		rc = source_query_capture_key(src, &key_hex);
	if (rc == TM_OK)
		rc = source_query_current_lsn(src, &lsn);
	if (rc == TM_OK)
		rc = source_query_slot_exists(src, o->slot, &slot_exists);
	if (rc == TM_OK)
		rc = prepare_target(o, src, &tables, &pipeline, key_hex, lsn, &policies, &modes,
		                    !slot_exists, &done);
	if (rc == TM_OK)
		rc = source_query_ensure_publication(src, o->publication, tables.defs, tables.n,
		                                     o->schemas, o->nschemas);
	if (rc == TM_OK)
		rc = source_query_ensure_slot(src, o->source, o->slot, &created, &slot_lsn);
	if (rc == TM_OK && !created)
		rc = ensure_failover(src, o);
	if (rc == TM_OK) {
		char buf[LSN_TEXT_MAX];

		log_info("source: replication slot \"%s\" %s at %s", o->slot,
		         created ? "created" : "already exists, confirmed", lsn_format(slot_lsn, buf));
		printf("tidemark: setup done: %d table(s) replicated through slot \"%s\" and "
		       "publication \"%s\"; start streaming with `tidemark run`\n",
		       tables.n, o->slot, o->publication);
	}
	if (rc != TM_OK && rc != TM_EXIT_USAGE)
		report_partial(&done);
	tables_free(&tables);
	pipeline_source_clear(&pipeline.source);
	schema_map_clear(&pipeline.map);
	policy_settings_free(&policies);
	mode_settings_free(&modes);
	free(key_hex);
	PQfinish(src);
	return rc;
}
