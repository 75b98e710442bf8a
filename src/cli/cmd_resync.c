/*
 * cmd_resync.c: `tidemark resync [--table SCHEMA.TABLE]...`: brings a
 * replication back after the target lost changes (restored from a
 * backup), the slot was lost or invalidated, or the source's history
 * diverged from the target's (see consistency.h), by copying the tables
 * again in place while streaming (resync.h), then goes on as `run`.
 *
 *   the slot is there and valid   the stream resumes at its confirmed
 *                                 position; the copy covers what the
 *                                 target lacks (or holds in excess)
 *   the slot is missing or lost   it is created again (same name; a
 *                                 failover slot on PostgreSQL 17 and
 *                                 later) and the stream starts at its
 *                                 consistent point
 *
 * With --source-upgraded, a source server upgraded in place (pg_upgrade:
 * a new system identifier, the oids kept) is first taken up as the
 * pipeline's (pipeline_take_upgrade); where pg_upgrade kept the slot, the
 * target and the slot then agree and nothing is copied again.
 *
 * Nothing on the target is dropped or emptied: readers keep seeing every
 * table while each chunk's range is replaced by the source's rows. A
 * resync in progress (a kill -9, a stop) is finished by the next `run` or
 * `resync`; `resync` again while one is in progress and nothing new went
 * wrong goes on with it rather than start over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "commands.h"
#include "consistency.h"
#include "ident.h"
#include "log.h"
#include "migrate.h"
#include "pgconn.h"
#include "pipeline.h"
#include "policy.h"
#include "resync.h"
#include "schema_sync.h"
#include "source_query.h"

typedef struct resync_ctx {
	const cli_options *o;
	PGconn *control;          /* owned */
	sink *sink;               /* owned */
	char **names;             /* owned: --table as schema, name pairs */
	int nnames;
	consistency_facts c;
	schema_sync *ss;          /* owned: for the catch-up */
} resync_ctx;

/* ---- what the catch-up reads of the source (schema_sync_source) ---- */

/* A table that cannot be replicated (no key: logged) is NULL. */
static int
no_config_error(int rc, tabledef **out)
{
	if (rc != TM_EXIT_CONFIG)
		return rc;
	*out = NULL;
	return TM_OK;
}

static int
def_by_oid(void *ctx, uint32_t relid, tabledef **out)
{
	return no_config_error(source_query_table_def_oid(((resync_ctx *) ctx)->control, relid, out),
	                       out);
}

static int
def_by_name(void *ctx, const char *schema, const char *name, tabledef **out)
{
	return no_config_error(source_query_table_def(((resync_ctx *) ctx)->control, schema, name,
	                                              out), out);
}

static int
partitions_of(void *ctx, uint32_t relid, ddl_part_root *out)
{
	return source_query_partitions(((resync_ctx *) ctx)->control, relid, out);
}

static int
name_of(void *ctx, uint32_t relid, char **out)
{
	return source_query_table_name(((resync_ctx *) ctx)->control, relid, out);
}

static int
tables_of(void *ctx, const char *schema, char ***names)
{
	return source_query_schema_tables(((resync_ctx *) ctx)->control, schema, names, NULL,
	                                  NULL);
}

/* A table moved out of the publication's schemas in the gap stays
 * published by name (the resync copies it anyway). */
static int
publish(void *ctx, uint32_t relid, bool *recopy)
{
	resync_ctx *x = ctx;

	return source_query_keep_published(x->control, x->o->publication, relid, recopy);
}

static int
publish_joining(void *ctx, const tabledef *def, bool by_schema, bool *added)
{
	resync_ctx *x = ctx;

	return source_query_publish_joining(x->control, x->o->publication, def, by_schema, added);
}

static int
catch_up(void *ctx, tm_lsn resume)
{
	resync_ctx *x = ctx;
	int n = 0;
	int rc = schema_sync_catch_up(x->ss, resume, &n);

	if (rc == TM_OK && n > 0)
		log_info("resync: %d table(s) followed to the source's definitions as they are now", n);
	return rc;
}

/* The schema changes the stream will not deliver are followed under the
 * policies in force: stored, or run's --policy and --table-policy given
 * to this resync (recorded for its connection, as run does). */
static int
open_schema_sync(resync_ctx *x)
{
	const cli_options *o = x->o;
	schema_sync_config cfg = {.slot = o->slot, .drop_columns = o->drop_columns,
	                          .drop_tables = o->drop_tables,
	                          .source = {x, def_by_oid, partitions_of, name_of, tables_of,
	                                     def_by_name, publish, publish_joining}};
	policy_settings ps = {0, NULL};
	int rc = policy_settings_parse(o->policy, o->table_policies, o->ntable_policies,
	                               "--table-policy", false, &ps);

	if (rc == TM_OK)
		rc = policy_record_run(x->sink, o->slot, &ps, false);
	policy_settings_free(&ps);
	if (rc == TM_OK)
		rc = schema_sync_new(&cfg, x->sink, &x->ss);
	return rc;
}

static int
parse_tables(resync_ctx *x)
{
	x->names = calloc((size_t) x->o->ntables * 2 + 1, sizeof(char *));
	if (x->names == NULL)
		abort();
	for (int i = 0; i < x->o->ntables; i++) {
		tm_error err;

		if (ident_parse_qualified(x->o->tables[i], "public", &x->names[2 * i],
		                          &x->names[2 * i + 1], &err) != 0) {
			log_error("--table %s: %s", x->o->tables[i], err.msg);
			return TM_EXIT_USAGE;
		}
		x->nnames++;
	}
	return TM_OK;
}

static int
open_both(resync_ctx *x)
{
	const cli_options *o = x->o;
	int rc = pgconn_open(o->source, PGCONN_SOURCE, "control", false, &x->control);

	if (rc == TM_OK)
		rc = source_query_check_server(x->control);
	if (rc == TM_OK)
		rc = sink_open(o->target, "resync", &x->sink);
	if (rc == TM_OK)
		rc = catalog_check_registered(x->sink, o->slot);
	/* the catalog at this binary's version (tidemark.resyncs and the rest) */
	if (rc == TM_OK)
		rc = migrate_apply_to(o->target, PGCONN_TARGET);
	/* an upgraded server taken up as the pipeline's (--source-upgraded),
	 * then this source's pipeline: before anything else is changed */
	if (rc == TM_OK && o->source_upgraded)
		rc = pipeline_take_upgrade(x->sink, o->slot, x->control, o->source);
	if (rc == TM_OK)
		rc = pipeline_check((pipeline_target){x->sink, NULL}, o->slot, x->control, o->source,
		                    true);
	if (rc == TM_OK)
		rc = consistency_gather(x->control, x->sink, o->source, o->slot, &x->c);
	if (rc == TM_OK)
		rc = open_schema_sync(x);
	return rc;
}

/* What stops a resync before it changes anything. */
static int
refusals(const resync_ctx *x, bool diverged)
{
	const source_slot_state *st = &x->c.slot;

	if (st->in_recovery)
		return consistency_explain(&x->c, x->o->slot);
	if (st->exists && !st->ours) {
		log_error("source: replication slot \"%s\" exists but is not a pgoutput slot of this "
		          "database. Fix: name this replication's slot with --slot", x->o->slot);
		return TM_EXIT_CONFIG;
	}
	if (st->exists && st->active_pid != 0) {
		log_error("source: replication slot \"%s\" is in use by the process with pid %d (a "
		          "tidemark run?). Fix: stop it first; to copy some tables again while it runs, "
		          "use `tidemark snapshot`", x->o->slot, st->active_pid);
		return TM_EXIT_CONFIG;
	}
	if (diverged && x->nnames > 0) {
		log_error("resync --table: %s, so every table may lack changes or hold changes the "
		          "source does not have. Fix: `tidemark resync` without --table",
		          resume_verdict_name(x->c.verdict));
		return TM_EXIT_CONFIG;
	}
	return TM_OK;
}

/* A slot that is gone or lost is made again, same name; *resume: where
 * its stream starts. */
static int
new_slot(resync_ctx *x, tm_lsn *resume)
{
	bool created = false;
	int rc = TM_OK;

	if (x->c.slot.exists) {
		log_info("source: dropping the invalidated replication slot \"%s\" (%s)", x->o->slot,
		         x->c.slot.reason);
		rc = source_query_drop_slot(x->control, x->o->slot);
	}
	if (rc == TM_OK)
		rc = source_query_ensure_slot(x->control, x->o->source, x->o->slot, &created, resume);
	return rc;
}

/* The resync's plan from the verdict, the slot made again if needed. */
static int
plan(resync_ctx *x, resync_plan *p)
{
	const resume_facts *f = &x->c.facts;
	resume_verdict v = x->c.verdict;
	bool consistent = v == RESUME_OK || v == RESUME_FRESH;
	int rc = refusals(x, !consistent);

	memset(p, 0, sizeof *p);
	p->reason = consistent ? "requested" : resume_verdict_name(v);
	p->from = f->target;
	p->timeline = f->source_tli;
	p->ntables = x->nnames;
	p->tables = x->names;
	p->catch_up = catch_up;
	p->catch_up_ctx = x;
	if (rc != TM_OK)
		return rc;
	if (v == RESUME_SLOT_MISSING || v == RESUME_SLOT_INVALIDATED) {
		p->new_slot = true;
		return new_slot(x, &p->resume);
	}
	/* the slot's confirmed position: everything before it is the
	 * source's history, the copy covers what the target lacks of it */
	p->resume = consistent && f->target != LSN_INVALID ? f->target : f->confirmed;
	return TM_OK;
}

static void
log_begun(const resync_ctx *x, const resync_plan *p, int n)
{
	char from[LSN_TEXT_MAX], resume[LSN_TEXT_MAX];

	log_info("resync begins (%s): %d table(s) to copy again in place; the target's position "
	         "was %s, the stream resumes at %s%s", p->reason, n, lsn_format(p->from, from),
	         lsn_format(p->resume, resume),
	         p->new_slot ? " from the replication slot created again" : "");
	if (p->new_slot && x->c.slot.server_version < 170000)
		log_info("source: PostgreSQL %d keeps no logical slot on a standby: after a failover of "
		         "the source, `tidemark resync` again", x->c.slot.server_version / 10000);
}

static int
prepare(resync_ctx *x)
{
	bool active = false;
	char *started = NULL, *reason = NULL;
	resync_plan p;
	int n = 0;
	int rc = resync_in_progress(x->sink, x->o->slot, &active, &started, &reason);
	bool consistent = x->c.verdict == RESUME_OK || x->c.verdict == RESUME_FRESH;

	if (rc == TM_OK && active && consistent && x->nnames == 0) {
		log_info("a resync is in progress since %s (%s): it goes on", started, reason);
		rc = refusals(x, false);
	} else if (rc == TM_OK && x->o->source_upgraded && consistent && x->nnames == 0) {
		/* taken up with its slot kept: the target holds everything
		 * before the slot's position, nothing to copy */
		rc = refusals(x, false);
	} else if (rc == TM_OK && (rc = plan(x, &p)) == TM_OK &&
	           (rc = resync_begin(x->sink, x->o->slot, &p, &n)) == TM_OK)
		log_begun(x, &p, n);
	free(started);
	free(reason);
	return rc;
}

int
cmd_resync(const cli_options *o)
{
	resync_ctx x = {.o = o};
	int rc = cli_require(o, true, true);

	if (rc == TM_OK)
		rc = parse_tables(&x);
	if (rc == TM_OK)
		rc = open_both(&x);
	if (rc == TM_OK)
		rc = prepare(&x);
	schema_sync_free(x.ss);
	sink_close(x.sink);
	PQfinish(x.control);
	for (int i = 0; i < 2 * x.nnames; i++)
		free(x.names[i]);
	free(x.names);
	/* the copies and the stream: what run does */
	return rc == TM_OK ? cmd_run(o) : rc;
}
