/*
 * verify_check.c: re-checking a table's candidates by key, and waiting for
 * the target to catch up with the source between the two reads. See
 * verify.h.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "clock.h"
#include "verify_int.h"
#include "xalloc.h"

struct verify_batch {
	int first;           /* the candidates vt->diffs.items[first .. first + count) */
	int count;
	bool plain;          /* read as plain text (a value did not convert) */
	verify_rows source;  /* owned: what the source has for them */
};

void
verify_check_clear(verify_table *vt)
{
	for (int i = 0; i < vt->nbatches; i++)
		verify_rows_clear(&vt->batches[i].source);
	free(vt->batches);
	vt->batches = NULL;
	vt->nbatches = 0;
}

static verify_batch *
batch_add(verify_table *vt, int first, int count, bool plain)
{
	verify_batch *b;

	vt->batches = xrealloc(vt->batches, sizeof(verify_batch) * (size_t) (vt->nbatches + 1));
	b = &vt->batches[vt->nbatches++];
	b->first = first;
	b->count = count;
	b->plain = plain;
	verify_rows_init(&b->source, vt->nkeys, vt->ncols);
	return b;
}

/* Reads a batch's keys on one side into rows; *data_error (nothing read)
 * when a value did not convert, or a key is no valid key on that side
 * (a target key too large for the source's type). */
static int
lookup(verify_table *vt, bool source, const verify_batch *b, verify_rows *rows, bool *data_error)
{
	verify_sql_table t = verify_side_table(vt, source);
	verify_query q;
	int rc;

	verify_query_init(&q, vt, source);
	q.plain = b->plain;
	verify_sql_lookup(&q.sql, &t, (source ? VERIFY_SQL_SOURCE : 0) |
	                  (b->plain ? VERIFY_SQL_PLAIN : 0), b->count);
	for (int i = 0; i < b->count; i++)
		for (int k = 0; k < vt->nkeys; k++)
			verify_query_param(&q, vt->diffs.items[b->first + i].key[k]);
	rc = verify_query_run(&q, NULL);
	*data_error = q.data_error;
	if (rc == TM_OK && !q.data_error) {
		verify_rows_from_result(rows, q.res);
		vt->stats.rows_read += PQntuples(q.res);
	}
	verify_query_clear(&q);
	return rc;
}

/* Reads the source's rows of candidates first .. first + count as one
 * batch; if a value does not convert, key by key, and a key whose value
 * does not convert as plain text. A key that fails even so has no row on
 * the source. */
static int
check_source(verify_table *vt, int first, int count, bool plain)
{
	verify_batch *b = batch_add(vt, first, count, plain);
	bool data_error;
	int rc = lookup(vt, true, b, &b->source, &data_error);

	if (rc != TM_OK || !data_error || (count == 1 && plain))
		return rc;
	vt->nbatches--;   /* b read nothing: dropped, its rows are empty */
	vt->stats.plain_ranges += count == 1;
	if (count == 1)
		return check_source(vt, first, 1, true);
	for (int i = 0; rc == TM_OK && i < count; i++)
		rc = check_source(vt, first + i, 1, false);
	return rc;
}

int
verify_table_recheck_source(verify_table *vt)
{
	double start = clock_now_s();
	int rc = TM_OK;

	if (vt->multiset)
		return verify_multiset_recheck_source(vt);
	verify_check_clear(vt);
	verify_diffs_unique(&vt->diffs);
	for (int i = 0; rc == TM_OK && i < vt->diffs.n; i += VERIFY_LOOKUP_BATCH)
		rc = check_source(vt, i, vt->diffs.n - i < VERIFY_LOOKUP_BATCH ? vt->diffs.n - i
		                                                              : VERIFY_LOOKUP_BATCH,
		                  false);
	vt->stats.seconds += clock_now_s() - start;
	return rc;
}

/* One candidate read again on both sides, converted, else as plain text;
 * a key that fails even so has no row on that side. */
static int
check_one(verify_table *vt, int index, verify_diffs *found)
{
	for (int plain = 0;; plain++) {
		verify_batch b = {index, 1, plain, {0}};
		verify_rows rows;
		bool source_error = false, target_error = false;
		int rc;

		verify_rows_init(&b.source, vt->nkeys, vt->ncols);
		verify_rows_init(&rows, vt->nkeys, vt->ncols);
		rc = lookup(vt, true, &b, &b.source, &source_error);
		if (rc == TM_OK)
			rc = lookup(vt, false, &b, &rows, &target_error);
		if (rc == TM_OK && (!(source_error || target_error) || plain))
			verify_diff_rows(&b.source, &rows, vt->key_idx, found);
		verify_rows_clear(&b.source);
		verify_rows_clear(&rows);
		if (rc != TM_OK || !(source_error || target_error) || plain)
			return rc;
		vt->stats.plain_ranges++;
	}
}

/* Reads a batch on the target and compares it with the source's rows; if
 * a target value does not convert, its keys one by one on both sides. */
static int
check_target(verify_table *vt, verify_batch *b, verify_diffs *found)
{
	verify_rows rows;
	bool data_error;
	int rc;

	verify_rows_init(&rows, vt->nkeys, vt->ncols);
	rc = lookup(vt, false, b, &rows, &data_error);
	if (rc == TM_OK && !data_error)
		verify_diff_rows(&b->source, &rows, vt->key_idx, found);
	for (int i = 0; rc == TM_OK && data_error && i < b->count; i++)
		rc = check_one(vt, b->first + i, found);
	verify_rows_clear(&rows);
	return rc;
}

int
verify_table_recheck_target(verify_table *vt)
{
	double start = clock_now_s();
	verify_diffs found;
	int rc = TM_OK;

	if (vt->multiset)
		return verify_multiset_recheck_target(vt);
	verify_diffs_init(&found, vt->nkeys);
	for (int i = 0; rc == TM_OK && i < vt->nbatches; i++)
		rc = check_target(vt, &vt->batches[i], &found);
	if (rc == TM_OK) {
		verify_diffs_clear(&vt->diffs);
		vt->diffs = found;
	} else
		verify_diffs_clear(&found);
	verify_check_clear(vt);
	vt->stats.seconds += clock_now_s() - start;
	return rc;
}

/* ---- waiting for the target ---- */

/*
 * The source's WAL insert position: every transaction visible on the source
 * now has its commit record before it (pg_current_wal_lsn(), the write
 * position, can be behind a commit made with synchronous_commit = off).
 */
static int
source_position(PGconn *source, const char *slot, verify_catch_up *out)
{
	const char *p[] = {slot};
	PGresult *r;
	int rc = pgconn_exec(source, PGCONN_SOURCE, "reading the WAL position",
	                     "SELECT pg_current_wal_insert_lsn()::text, coalesce((SELECT active"
	                     " FROM pg_replication_slots WHERE slot_name = $1), false)", 1, p, &r);

	if (rc == TM_OK) {
		lsn_parse(PQgetvalue(r, 0, 0), &out->source_lsn);
		out->running = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
		PQclear(r);
	}
	return rc;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int
verify_catch_up_wait(PGconn *source, sink *catalog, const char *slot, double timeout_s,
                     verify_catch_up *out)
{
	double start = clock_now_s();
	int interval = 10;
	int rc;

	memset(out, 0, sizeof *out);
	rc = source_position(source, slot, out);
	if (rc == TM_OK)
		rc = catalog_read_progress(catalog, slot, &out->applied_lsn);
	while (rc == TM_OK && out->running && out->applied_lsn < out->source_lsn &&
	       clock_now_s() - start < timeout_s) {
		sleep_ms(interval);
		interval = interval < 200 ? interval * 2 : 200;
		rc = catalog_read_progress(catalog, slot, &out->applied_lsn);
	}
	out->caught_up = out->applied_lsn >= out->source_lsn;
	out->waited = clock_now_s() - start;
	return rc;
}
