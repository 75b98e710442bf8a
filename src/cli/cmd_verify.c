/*
 * cmd_verify.c: `tidemark verify [--table SCHEMA.TABLE]... [--json]`:
 * compares each replicated table between source and target (verify.h),
 * re-checks what differs once the target has caught up with the source,
 * and prints every difference that persists and a summary per table, as
 * text or as one JSON document. Exits 0 when equal, 1 when not.
 *
 * The report is built as JSON (ownership: the run's document) and printed
 * from it either way.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "ident.h"
#include "log.h"
#include "pgconn.h"
#include "pipeline.h"
#include "report.h"
#include "shape.h"
#include "verify.h"
#include "xalloc.h"

/* Longest wait for the target to catch up, over all re-check rounds. */
#define CATCH_UP_SECONDS 30.0
/* Re-check rounds while replication runs (a row changed again between the
 * two reads of one round is read again in the next). */
#define RECHECK_ROUNDS 3

typedef struct verify_run {
	const cli_options *o;
	PGconn *source;           /* owned connections */
	PGconn *target;
	sink *catalog;            /* owned: the target's catalog, read through a sink */
	catalog_table *tables;    /* owned: the tables asked for */
	int ntables;
	verify_table **compared;  /* owned: the tables compared */
	int ncompared;
	json_t *skipped;          /* owned: [{table, reason}] */
	verify_catch_up catch_up;
	double waited;
	int rounds;
} verify_run;

/* ---- connections and tables ---- */

static int
open_side(const char *conninfo, pgconn_side side, PGconn **out)
{
	int rc = pgconn_open(conninfo, side, "verify", false, out);

	if (rc == TM_OK)
		rc = verify_session_setup(*out, side);
	return rc;
}

static int
open_all(verify_run *run)
{
	int rc = open_side(run->o->source, PGCONN_SOURCE, &run->source);

	if (rc == TM_OK)
		rc = open_side(run->o->target, PGCONN_TARGET, &run->target);
	if (rc == TM_OK)
		rc = sink_open(run->o->target, "verify", &run->catalog);
	if (rc == TM_OK)
		rc = catalog_check_registered_conn(run->target, run->o->slot);
	/* another source's tables would be "compared" with this one's */
	if (rc == TM_OK)
		rc = pipeline_check((pipeline_target){NULL, run->target}, run->o->slot, run->source,
		                    run->o->source, false);
	return rc;
}

/* One --table: it must be replicated through the slot. */
static int
load_named(verify_run *run, const char *text, catalog_table *out)
{
	char *schema, *name;
	catalog_table *t = NULL;
	tm_error err;
	int rc;

	if (ident_parse_qualified(text, "public", &schema, &name, &err) != 0) {
		log_error("--table %s: %s", text, err.msg);
		return TM_EXIT_USAGE;
	}
	rc = catalog_load_table(run->catalog, run->o->slot, schema, name, &t);
	if (rc == TM_OK && t == NULL) {
		log_error("table %s is not replicated through slot \"%s\" (see `tidemark status`)",
		          text, run->o->slot);
		rc = TM_EXIT_CONFIG;
	}
	if (rc == TM_OK) {
		*out = *t;
		free(t);   /* its strings now belong to out */
	}
	free(schema);
	free(name);
	return rc;
}

static int
load_tables(verify_run *run)
{
	int rc = TM_OK;

	if (run->o->ntables == 0)
		return catalog_load_tables(run->catalog, run->o->slot, &run->tables, &run->ntables);
	run->tables = xcalloc((size_t) run->o->ntables, sizeof(catalog_table));
	for (int i = 0; rc == TM_OK && i < run->o->ntables; i++) {
		rc = load_named(run, run->o->tables[i], &run->tables[i]);
		if (rc == TM_OK)
			run->ntables++;
	}
	return rc;
}

/* ---- comparing ---- */

static int
skip(verify_run *run, const catalog_table *t)
{
	char reason[96];
	char *name = NULL;
	int rc = verify_display_name(run->target, t->source_schema, t->source_table, &name);

	if (rc != TM_OK)
		return rc;
	snprintf(reason, sizeof reason, "its snapshot is not finished (state %s)", t->state);
	log_info("%s: skipped: %s", name, reason);
	json_array_append_new(run->skipped, json_pack("{s:s, s:s, s:s}", "table", name, "status",
	                                              "skipped", "reason", reason));
	free(name);
	return TM_OK;
}

static int
compare_one(verify_run *run, const catalog_table *t)
{
	verify_table *vt;
	int rc = verify_table_open(run->source, run->target, t, run->o->chunk_rows, &vt);

	if (rc != TM_OK)
		return rc;
	run->compared[run->ncompared++] = vt;
	rc = verify_table_pass(vt);
	if (rc == TM_OK && vt->multiset)
		log_info("%s: no key, compared as a multiset (%lld rows on the source, %lld on the "
		         "target) in %.2f s: %s", vt->display, vt->stats.source_rows,
		         vt->stats.target_rows, vt->stats.seconds,
		         vt->multiset_differs ? "different, to check again" : "equal");
	else if (rc == TM_OK)
		log_info("%s: %lld rows compared in %.2f s, %d to check again", vt->display,
		         vt->stats.source_rows, vt->stats.seconds, vt->diffs.n);
	return rc;
}

static int
compare_all(verify_run *run)
{
	int rc = TM_OK;

	run->compared = xcalloc((size_t) run->ntables, sizeof(verify_table *));
	for (int i = 0; rc == TM_OK && i < run->ntables; i++) {
		if (strcmp(run->tables[i].state, "streaming") != 0)
			rc = skip(run, &run->tables[i]);
		else
			rc = compare_one(run, &run->tables[i]);
	}
	return rc;
}

static int
candidates(const verify_run *run)
{
	int n = 0;

	for (int i = 0; i < run->ncompared; i++)
		n += verify_table_differences(run->compared[i]);
	return n;
}

/* One round: the candidates on the source, the wait, then the target. */
static int
recheck_round(verify_run *run)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < run->ncompared; i++)
		if (verify_table_differences(run->compared[i]) > 0)
			rc = verify_table_recheck_source(run->compared[i]);
	if (rc == TM_OK)
		rc = verify_catch_up_wait(run->source, run->catalog, run->o->slot,
		                          CATCH_UP_SECONDS - run->waited, &run->catch_up);
	run->waited += run->catch_up.waited;
	for (int i = 0; rc == TM_OK && i < run->ncompared; i++)
		if (run->compared[i]->nbatches > 0 || run->compared[i]->multiset_differs)
			rc = verify_table_recheck_target(run->compared[i]);
	run->rounds++;
	return rc;
}

/* Rounds until nothing differs, or replication is not running (the target
 * will not change), or the target did not catch up in time. */
static int
recheck(verify_run *run)
{
	int rc = TM_OK;

	while (rc == TM_OK && candidates(run) > 0 && run->rounds < RECHECK_ROUNDS) {
		rc = recheck_round(run);
		if (!run->catch_up.running || !run->catch_up.caught_up)
			break;
	}
	return rc;
}

/* ---- the report ---- */

static json_t *
key_json(const verify_table *vt, const verify_diff *d)
{
	json_t *key = json_object();

	for (int k = 0; k < vt->nkeys; k++)
		json_object_set_new(key, vt->keys[k], d->key[k] ? json_string(d->key[k]) : json_null());
	return key;
}

static json_t *
text_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *
diff_json(const verify_table *vt, const verify_diff *d)
{
	json_t *o = json_pack("{s:o, s:s}", "key", key_json(vt, d), "kind",
	                      verify_diff_kind_name(d->kind));
	json_t *cols = json_array();

	for (int i = 0; i < d->nvalues; i++)
		json_array_append_new(cols, json_pack("{s:s, s:o, s:o}", "column",
		                                      vt->cols[d->values[i].col].name, "source",
		                                      text_or_null(d->values[i].source), "target",
		                                      text_or_null(d->values[i].target)));
	if (d->kind == VERIFY_DIFF_VALUES)
		json_object_set_new(o, "columns", cols);
	else
		json_decref(cols);
	return o;
}

static json_t *
columns_json(const verify_table *vt)
{
	json_t *cols = json_array();

	for (int i = 0; i < vt->ncols; i++) {
		json_t *c = json_pack("{s:s}", "name", vt->cols[i].name);

		if (vt->cols[i].type != NULL)
			json_object_set_new(c, "compared_as", json_string(vt->cols[i].type));
		json_array_append_new(cols, c);
	}
	return cols;
}

static json_t *
not_compared_json(const verify_table *vt)
{
	json_t *cols = json_array();

	for (int i = 0; i < vt->nskipped; i++)
		json_array_append_new(cols, json_pack("{s:s, s:s}", "name", vt->skipped[i],
		                                      "only_on", vt->skipped_on_target[i] ? "target"
		                                                                          : "source"));
	return cols;
}

static json_t *
stats_json(const verify_stats *s)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:f}", "source_rows",
	                 (json_int_t) s->source_rows, "target_rows", (json_int_t) s->target_rows,
	                 "pages", (json_int_t) s->pages, "ranges", (json_int_t) s->ranges,
	                 "rows_read", (json_int_t) s->rows_read, "plain_ranges",
	                 (json_int_t) s->plain_ranges, "rechecked", s->candidates,
	                 "seconds", s->seconds);
}

static json_t *
table_json(const verify_table *vt)
{
	json_t *diffs = json_array();
	json_t *keys = json_array();
	json_t *t;

	for (int i = 0; i < vt->diffs.n; i++)
		json_array_append_new(diffs, diff_json(vt, &vt->diffs.items[i]));
	if (vt->multiset && vt->multiset_differs)
		json_array_append_new(diffs, json_pack("{s:s, s:I, s:I}", "kind", "multiset",
		                                       "source_rows",
		                                       (json_int_t) vt->multiset_source.rows,
		                                       "target_rows",
		                                       (json_int_t) vt->multiset_target.rows));
	for (int k = 0; k < vt->nkeys; k++)
		json_array_append_new(keys, json_string(vt->keys[k]));
	t = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:i, s:o}", "table",
	              vt->display, "comparison", vt->multiset ? "multiset" : "rows",
	              "schema", vt->source_schema, "name", vt->source_name,
	              "status", "compared", "mode", shape_mode_name(vt->shape_mode), "key", keys,
	              "columns", columns_json(vt), "not_compared", not_compared_json(vt),
	              "stats", stats_json(&vt->stats),
	              "difference_count", verify_table_differences(vt), "differences", diffs);
	/* rows deleted on the source that the target keeps: not differences */
	if (vt->soft_delete)
		json_object_set_new(t, "kept_as_deleted", json_integer(vt->stats.kept_deleted));
	return t;
}

static json_t *
catch_up_json(const verify_run *run)
{
	char src[LSN_TEXT_MAX], applied[LSN_TEXT_MAX];

	if (run->rounds == 0)
		return json_pack("{s:i}", "rounds", 0);
	return json_pack("{s:i, s:b, s:b, s:s, s:s, s:f}", "rounds", run->rounds,
	                 "replication_running", run->catch_up.running, "caught_up",
	                 run->catch_up.caught_up, "source_lsn",
	                 lsn_format(run->catch_up.source_lsn, src), "applied_lsn",
	                 lsn_format(run->catch_up.applied_lsn, applied), "waited_seconds",
	                 run->waited);
}

static json_t *
report_json(const verify_run *run)
{
	json_t *tables = json_array();
	int n = candidates(run);

	for (int i = 0; i < run->ncompared; i++)
		json_array_append_new(tables, table_json(run->compared[i]));
	json_array_extend(tables, run->skipped);
	return json_pack("{s:b, s:i, s:o, s:o}", "equal", n == 0, "differences", n, "tables",
	                 tables, "catch_up", catch_up_json(run));
}

static void
print_columns(const verify_table *vt)
{
	printf("  compared:");
	for (int i = 0; i < vt->ncols; i++)
		printf("%s %s%s%s", i > 0 ? "," : "", vt->col_display[i],
		       vt->cols[i].type ? " as " : "", vt->cols[i].type ? vt->cols[i].type : "");
	if (vt->nskipped > 0)
		printf("; not compared:");
	for (int i = 0; i < vt->nskipped; i++)
		printf("%s %s (%s only)", i > 0 ? "," : "", vt->skipped_display[i],
		       vt->skipped_on_target[i] ? "target" : "source");
	printf("\n");
}

/* A table without a key: equal or not as a multiset, both counts. */
static void
print_multiset(const verify_table *vt)
{
	printf("%s: %s as a multiset (no key: compared by the count and the sum of the row hashes of "
	       "each side; which rows differ is not said); %lld rows on the source, %lld on the "
	       "target, %.2f s\n", vt->display, vt->multiset_differs ? "different" : "equal",
	       vt->stats.source_rows, vt->stats.target_rows, vt->stats.seconds);
	print_columns(vt);
}

static void
print_keyed(const verify_table *vt)
{
	const verify_stats *s = &vt->stats;
	strbuf line = STRBUF_INIT;

	for (int i = 0; i < vt->diffs.n; i++) {
		strbuf_reset(&line);
		verify_diff_format(&line, &vt->diffs.items[i], vt->nkeys, vt->display,
		                   (const char *const *) vt->key_display,
		                   (const char *const *) vt->col_display);
		printf("%s\n", line.data);
	}
	strbuf_free(&line);
	printf("%s: %s, %d difference%s; %lld rows on the source, %lld on the target, %ld pages,"
	       " %ld ranges summed, %lld rows read one by one, %d keys re-checked, %.2f s\n",
	       vt->display, vt->diffs.n ? "different" : "equal", vt->diffs.n,
	       vt->diffs.n == 1 ? "" : "s", s->source_rows, s->target_rows, s->pages, s->ranges,
	       s->rows_read, s->candidates, s->seconds);
	print_columns(vt);
}

static void
print_table(const verify_table *vt)
{
	long long n = vt->stats.kept_deleted;

	if (vt->multiset)
		print_multiset(vt);
	else
		print_keyed(vt);
	if (vt->soft_delete)
		printf("  %lld row%s kept as deleted (soft-delete): not compared\n", n,
		       n == 1 ? "" : "s");
}

static void
print_text(const verify_run *run)
{
	size_t i;
	json_t *t;
	int n = candidates(run);

	for (int k = 0; k < run->ncompared; k++)
		print_table(run->compared[k]);
	json_array_foreach(run->skipped, i, t)
		printf("%s: skipped: %s\n", report_str(t, "table"), report_str(t, "reason"));
	if (n == 0)
		printf("equal: %d table%s compared\n", run->ncompared, run->ncompared == 1 ? "" : "s");
	else
		printf("different: %d difference%s\n", n, n == 1 ? "" : "s");
}

/* Says why differences may be changes in flight, when they may be. */
static void
warn_catch_up(const verify_run *run)
{
	const verify_catch_up *c = &run->catch_up;
	char src[LSN_TEXT_MAX], applied[LSN_TEXT_MAX];

	if (run->rounds == 0 || c->caught_up || candidates(run) == 0)
		return;
	lsn_format(c->source_lsn, src);
	lsn_format(c->applied_lsn, applied);
	if (!c->running)
		log_warn("replication is not running (slot \"%s\" is not active) and the target has "
		         "applied up to %s, the source is at %s: some differences may be changes not "
		         "applied yet", run->o->slot, applied, src);
	else
		log_warn("the target did not catch up with the source within %.0f s (applied %s, "
		         "source %s): some differences may be changes still in flight",
		         CATCH_UP_SECONDS, applied, src);
}

static void
run_free(verify_run *run)
{
	for (int i = 0; i < run->ncompared; i++)
		verify_table_free(run->compared[i]);
	free(run->compared);
	catalog_tables_free(run->tables, run->ntables);
	json_decref(run->skipped);
	sink_close(run->catalog);
	PQfinish(run->source);
	PQfinish(run->target);
}

int
cmd_verify(const cli_options *o)
{
	verify_run run = {.o = o, .skipped = json_array()};
	int rc = cli_require(o, true, true);

	if (rc == TM_OK)
		rc = open_all(&run);
	if (rc == TM_OK)
		rc = load_tables(&run);
	if (rc == TM_OK)
		rc = compare_all(&run);
	if (rc == TM_OK)
		rc = recheck(&run);
	if (rc == TM_OK) {
		json_t *doc = report_json(&run);

		warn_catch_up(&run);
		if (o->json)
			report_print_json(doc);
		else
			print_text(&run);
		rc = candidates(&run) > 0 ? TM_EXIT_DIFFERENT : TM_OK;
		json_decref(doc);
	}
	run_free(&run);
	return rc;
}
