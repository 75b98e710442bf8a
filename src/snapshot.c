#include "snapshot.h"
#include "clock.h"
#include "xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cast.h"
#include "catalog.h"
#include "log.h"
#include "pgconn.h"
#include "snap_load.h"
#include "snap_commits.h"
#include "snap_reader.h"

#define POLL_INTERVAL_S 2.0

/* A table being copied. */
typedef struct snap_table {
	int table_id;
	char *schema;            /* owned, like every string here */
	char *name;
	char *target_schema;
	char *target_table;
	int nkeys;
	char **key_columns;
	char **applied_key;      /* the last key applied on the target */
	char *request;           /* snapshot_requested_at as text, "" if none */
	long generation;
	bool done;
	bool restart;            /* read again from applied_key at the next poll */
	long long rows;
	long long estimate;
	int chunks;
	double started;
	int nchecks;             /* columns whose source values may not fit the target: */
	char **check_cols;       /* owned: their names */
	sqltype *check_src;      /* owned: the source type in force */
	sqltype *check_tgt;      /* owned: the target column's type */
	snap_window *window;     /* owned: open between the watermarks */
	char wm_id[96];
	tm_lsn low_lsn;
} snap_table;

struct snapshot {
	snapshot_config cfg;
	sink *sink;              /* borrowed */
	apply *apply;            /* borrowed */
	snap_reader *reader;     /* owned */
	snap_table **tables;     /* owned */
	int ntables;
	snap_commits *ring;      /* owned */
	double last_poll;
	double last_progress;
	bool polled;
};

/* ---- tables ---- */

static snap_table *
find(const snapshot *s, int table_id)
{
	for (int i = 0; i < s->ntables; i++)
		if (s->tables[i]->table_id == table_id)
			return s->tables[i];
	return NULL;
}

static void
table_free(snap_table *t)
{
	free(t->schema);
	free(t->name);
	free(t->target_schema);
	free(t->target_table);
	snap_keys_free(t->key_columns, t->nkeys);
	snap_keys_free(t->applied_key, t->nkeys);
	free(t->request);
	snap_keys_free(t->check_cols, t->nchecks);
	free(t->check_src);
	free(t->check_tgt);
	snap_window_free(t->window);
	free(t);
}

/* The target table's columns and types, for the reader's choice of the
 * binary row format. On failure the job simply goes without (text). */
static void
target_types(snapshot *s, const snap_table *t, snap_job *job)
{
	const char *p[] = {t->target_schema, t->target_table};
	PGresult *r = NULL;

	if (sink_query(s->sink, "reading the target's column types",
	               "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
	               " WHERE attrelid = format('%I.%I', $1::text, $2::text)::regclass"
	               " AND attnum > 0 AND NOT attisdropped ORDER BY attnum", 2, p, &r) != TM_OK)
		return;
	job->ntarget = PQntuples(r);
	job->target_names = calloc((size_t) job->ntarget + 1, sizeof(char *));
	job->target_types = calloc((size_t) job->ntarget + 1, sizeof(char *));
	if (job->target_names == NULL || job->target_types == NULL)
		abort();
	for (int i = 0; i < job->ntarget; i++) {
		job->target_names[i] = xstrdup(PQgetvalue(r, i, 0));
		job->target_types[i] = xstrdup(PQgetvalue(r, i, 1));
	}
	PQclear(r);
}

static void
checks_clear(snap_table *t)
{
	snap_keys_free(t->check_cols, t->nchecks);
	free(t->check_src);
	free(t->check_tgt);
	t->check_cols = NULL;
	t->check_src = t->check_tgt = NULL;
	t->nchecks = 0;
}

/* The columns whose source type in force (the latest schema version) may
 * hold values the target column's type cannot: the quarantine policy kept
 * the target's type. Their values are checked before a chunk loads. */
static void
load_checks(snapshot *s, snap_table *t, const snap_job *job)
{
	char id[16];
	const char *p[] = {id};
	PGresult *r = NULL;

	checks_clear(t);
	snprintf(id, sizeof id, "%d", t->table_id);
	if (sink_query(s->sink, "reading the source types in force",
	               "SELECT c->>'name', c->>'type' FROM tidemark.schema_versions v,"
	               " jsonb_array_elements(v.columns) c WHERE v.table_id = $1::int"
	               " AND v.version = (SELECT max(version) FROM tidemark.schema_versions"
	               "   WHERE table_id = $1::int)", 1, p, &r) != TM_OK)
		return;
	t->check_cols = calloc((size_t) PQntuples(r) + 1, sizeof(char *));
	t->check_src = calloc((size_t) PQntuples(r) + 1, sizeof(sqltype));
	t->check_tgt = calloc((size_t) PQntuples(r) + 1, sizeof(sqltype));
	if (t->check_cols == NULL || t->check_src == NULL || t->check_tgt == NULL)
		abort();
	for (int i = 0; i < PQntuples(r); i++)
		for (int j = 0; j < job->ntarget; j++) {
			int n = t->nchecks;

			if (strcmp(job->target_names[j], PQgetvalue(r, i, 0)) != 0 ||
			    sqltype_parse(PQgetvalue(r, i, 1), &t->check_src[n], NULL) != 0 ||
			    sqltype_parse(job->target_types[j], &t->check_tgt[n], NULL) != 0 ||
			    cast_classify(&t->check_src[n], &t->check_tgt[n]) <= CAST_WIDEN)
				continue;
			t->check_cols[t->nchecks++] = xstrdup(PQgetvalue(r, i, 0));
		}
	PQclear(r);
}

static void
submit(snapshot *s, snap_table *t)
{
	snap_job job = {t->table_id, ++t->generation, t->schema, t->name, t->nkeys,
	                t->key_columns, t->applied_key, s->cfg.chunk_rows, 0, NULL, NULL};

	target_types(s, t, &job);
	load_checks(s, t, &job);
	snap_window_free(t->window);
	t->window = NULL;
	t->restart = false;
	snap_reader_submit(s->reader, &job);
	snap_keys_free(job.target_names, job.ntarget);
	snap_keys_free(job.target_types, job.ntarget);
}

/* JSON array text (or NULL) into a new array of n new strings. */
static char **
keys_from_json(const char *text, int n)
{
	json_t *arr = text && *text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
	char **out = NULL;

	if (json_is_array(arr) && (int) json_array_size(arr) == n) {
		out = calloc((size_t) n + 1, sizeof(char *));
		if (out == NULL)
			abort();
		for (int i = 0; i < n; i++)
			out[i] = xstrdup(json_string_value(json_array_get(arr, (size_t) i)) ?: "");
	}
	json_decref(arr);
	return out;
}

static snap_table *
track(snapshot *s, PGresult *r, int row)
{
	snap_table *t = calloc(1, sizeof *t);
	json_t *keys = json_loads(PQgetvalue(r, row, 3), 0, NULL);

	if (t == NULL)
		abort();
	t->table_id = atoi(PQgetvalue(r, row, 0));
	t->schema = xstrdup(PQgetvalue(r, row, 1));
	t->name = xstrdup(PQgetvalue(r, row, 2));
	t->nkeys = (int) json_array_size(keys);
	json_decref(keys);
	t->key_columns = keys_from_json(PQgetvalue(r, row, 3), t->nkeys);
	t->applied_key = keys_from_json(PQgetvalue(r, row, 4), t->nkeys);
	t->request = xstrdup(PQgetvalue(r, row, 5));
	t->rows = atoll(PQgetvalue(r, row, 6));
	t->chunks = atoi(PQgetvalue(r, row, 7));
	t->target_schema = xstrdup(PQgetvalue(r, row, 8));
	t->target_table = xstrdup(PQgetvalue(r, row, 9));
	t->started = clock_now_s();
	s->tables = realloc(s->tables, sizeof(snap_table *) * (size_t) (s->ntables + 1));
	if (s->tables == NULL)
		abort();
	s->tables[s->ntables++] = t;
	log_info("snapshot of %s.%s %s", t->schema, t->name,
	         t->applied_key ? "resumes after the last chunk copied" : "starts");
	return t;
}

/* A `tidemark snapshot` request changed the table's request stamp. */
static void
rerequested(snapshot *s, snap_table *t, PGresult *r, int row)
{
	free(t->request);
	t->request = xstrdup(PQgetvalue(r, row, 5));
	snap_keys_free(t->applied_key, t->nkeys);
	t->applied_key = keys_from_json(PQgetvalue(r, row, 4), t->nkeys);
	t->rows = atoll(PQgetvalue(r, row, 6));
	t->chunks = 0;
	t->done = false;
	t->started = clock_now_s();
	log_info("snapshot of %s.%s requested again: copying from the start", t->schema, t->name);
	submit(s, t);
}

static int
scan_catalog(snapshot *s)
{
	const char *p[] = {s->cfg.slot};
	PGresult *r;
	int rc = sink_query(s->sink, "reading the tables to copy",
	                    "SELECT table_id, source_schema, source_table,"
	                    " array_to_json(key_columns)::text, array_to_json(snapshot_last_key)::text,"
	                    " coalesce(snapshot_requested_at::text, ''), snapshot_rows, snapshot_chunks,"
	                    " target_schema, target_table"
	                    " FROM tidemark.tables WHERE slot_name = $1"
	                    " AND state IN ('snapshot_pending', 'snapshotting') ORDER BY table_id",
	                    1, p, &r);

	if (rc != TM_OK)
		return rc;
	for (int i = 0; i < PQntuples(r); i++) {
		snap_table *t = find(s, atoi(PQgetvalue(r, i, 0)));

		if (t == NULL)
			submit(s, track(s, r, i));
		else if (strcmp(t->request, PQgetvalue(r, i, 5)) != 0)
			rerequested(s, t, r, i);
	}
	PQclear(r);
	for (int i = 0; i < s->ntables; i++)
		if (s->tables[i]->restart && !s->tables[i]->done)
			submit(s, s->tables[i]);
	return TM_OK;
}

/* ---- progress ---- */

static double
rate_of(const snap_table *t, double now)
{
	return t->rows / (now - t->started > 0.001 ? now - t->started : 0.001);
}

static void
report_line(const snap_table *t, double now)
{
	double rate = rate_of(t, now);

	if (t->estimate > 0)
		log_info("snapshot of %s.%s: chunk %d, %lld of about %lld rows (%.0f%%), "
		         "%.0f rows/s, about %.0f s left", t->schema, t->name, t->chunks + 1,
		         t->rows, t->estimate,
		         t->rows < t->estimate ? 100.0 * (double) t->rows / (double) t->estimate : 99.0,
		         rate, rate > 0 && t->rows < t->estimate ? (t->estimate - t->rows) / rate : 0);
	else
		log_info("snapshot of %s.%s: chunk %d, %lld rows, %.0f rows/s", t->schema, t->name,
		         t->chunks + 1, t->rows, rate);
}

/* "public.orders [#######.............]  35% 3m10s" */
static void
append_bar(strbuf *sb, const snap_table *t, double now)
{
	double frac = t->estimate > 0 ? (double) t->rows / (double) t->estimate : 0;
	double rate = rate_of(t, now);
	int filled;

	if (frac > 0.99)
		frac = 0.99;
	filled = (int) (frac * 20);
	strbuf_appendf(sb, "%s%s.%s [", sb->len ? "  " : "", t->schema, t->name);
	for (int i = 0; i < 20; i++)
		strbuf_appendc(sb, i < filled ? '#' : '.');
	if (t->estimate > 0 && rate > 0) {
		long left = (long) ((t->estimate - t->rows) / rate);

		strbuf_appendf(sb, "] %3.0f%% %ldm%02lds left", frac * 100, left / 60, left % 60);
	} else
		strbuf_appendf(sb, "] %lld rows", t->rows);
}

static void
report_bars(const snapshot *s, double now)
{
	strbuf sb = STRBUF_INIT;
	int width = log_tty_width();

	for (int i = 0; i < s->ntables; i++)
		if (!s->tables[i]->done && s->tables[i]->chunks > 0)
			append_bar(&sb, s->tables[i], now);
	if ((int) sb.len >= width)
		sb.data[width - 1] = '\0';
	log_status_line(strbuf_str(&sb));
	strbuf_free(&sb);
}

/* Progress: bars on a terminal (each second), log lines otherwise. */
static void
report(snapshot *s, bool force)
{
	double now = clock_now_s();
	bool tty = log_is_tty();

	if (!force && now - s->last_progress < (tty ? 1.0 : s->cfg.progress_interval))
		return;
	s->last_progress = now;
	if (tty) {
		report_bars(s, now);
		return;
	}
	for (int i = 0; i < s->ntables; i++)
		if (!s->tables[i]->done)
			report_line(s->tables[i], now);
}

/* ---- the public side ---- */

int
snapshot_new(const snapshot_config *cfg, sink *sk, snapshot **out)
{
	snapshot *s = calloc(1, sizeof *s);
	char session[32];
	int rc;

	if (s == NULL || (s->ring = calloc(1, sizeof *s->ring)) == NULL)
		abort();
	s->cfg = *cfg;
	s->sink = sk;
	snprintf(session, sizeof session, "%x.%lx", (unsigned) getpid(), (unsigned long) time(NULL));
	rc = snap_reader_start(cfg->source, cfg->readers, session, &s->reader);
	if (rc != TM_OK) {
		free(s->ring);
		free(s);
		return rc;
	}
	s->last_poll = -1e9;
	s->last_progress = clock_now_s();
	*out = s;
	return TM_OK;
}

void
snapshot_free(snapshot *s)
{
	if (s == NULL)
		return;
	log_status_line(NULL);
	snap_reader_stop(s->reader);
	for (int i = 0; i < s->ntables; i++)
		table_free(s->tables[i]);
	free(s->tables);
	free(s->ring);
	free(s);
}

void
snapshot_attach(snapshot *s, apply *a)
{
	s->apply = a;
}

int
snapshot_poll(snapshot *s)
{
	int rc = snap_reader_status(s->reader);

	if (rc != TM_OK)
		return rc;
	if (clock_now_s() - s->last_poll >= POLL_INTERVAL_S) {
		rc = scan_catalog(s);
		s->last_poll = clock_now_s();
		s->polled = rc == TM_OK;
	}
	report(s, false);
	return rc;
}

bool
snapshot_busy(const snapshot *s)
{
	if (!s->polled)
		return true;
	for (int i = 0; i < s->ntables; i++)
		if (!s->tables[i]->done)
			return true;
	return false;
}

void
snapshot_poll_soon(snapshot *s)
{
	s->last_poll = -1e9;
	s->polled = false;
}

void
snapshot_restart(snapshot *s, int table_id)
{
	snap_table *t = find(s, table_id);

	if (t != NULL && !t->done) {
		snap_window_free(t->window);
		t->window = NULL;
		t->restart = true;
		s->last_poll = -1e9;
	}
}

/* ---- hooks: what the stream shows ---- */

static bool
hook_watching(void *ctx, int table_id)
{
	snap_table *t = find(ctx, table_id);

	return t != NULL && t->window != NULL;
}

static void
hook_row(void *ctx, int table_id, const char *const *key, const size_t *key_len)
{
	snap_table *t = find(ctx, table_id);

	if (t != NULL && t->window != NULL)
		snap_window_note_row(t->window, key, key_len);
}

static void
hook_partial(void *ctx, int table_id, const char *const *key, const size_t *key_len, int n,
             const char *const *names, const char *const *values, const size_t *value_len)
{
	snap_table *t = find(ctx, table_id);

	if (t != NULL && t->window != NULL)
		snap_window_note_partial(t->window, key, key_len, n, names, values, value_len);
}

static void
hook_truncate(void *ctx, int table_id)
{
	snap_table *t = find(ctx, table_id);

	if (t != NULL && t->window != NULL)
		snap_window_note_truncate(t->window);
}

static void
hook_commit(void *ctx, uint32_t xid, tm_lsn commit_lsn)
{
	snap_commits_add(((snapshot *) ctx)->ring, xid, commit_lsn);
}

/* A transaction the read could not see committed before the window opened
 * (see snap_commits.h). */
static bool
missed_commit(const snapshot *s, const snap_result *res, tm_lsn low_lsn)
{
	return snap_commits_missed(s->ring, res->xip, res->nxip, low_lsn);
}

/* Did the table's columns change between the read and now? */
static bool
columns_changed(const snapshot *s, const snap_result *res)
{
	const char *const *names;
	int n;

	if (s->apply == NULL || !apply_stream_columns(s->apply, res->table_id, &n, &names))
		return false;
	if (n != res->chunk->ncols)
		return true;
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], res->chunk->colnames[i]) != 0)
			return true;
	return false;
}

static char *
keys_json(char *const *keys, int n)
{
	json_t *arr;
	char *text;

	if (keys == NULL)
		return NULL;
	arr = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(arr, json_string(keys[i]));
	text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return text;
}

/* The chunk's progress, in the same target transaction as its rows. A
 * newer `tidemark snapshot` request (another stamp) is left alone. */
static int
save_progress(snapshot *s, snap_table *t, const snap_result *res, long rows)
{
	static const char *const sql =
		"UPDATE tidemark.tables SET"
		" snapshot_last_key = CASE WHEN $2::jsonb IS NULL THEN snapshot_last_key"
		"   ELSE ARRAY(SELECT jsonb_array_elements_text($2::jsonb)) END,"
		" snapshot_rows = snapshot_rows + $3::bigint, snapshot_chunks = snapshot_chunks + 1,"
		" state = CASE WHEN $4::bool THEN 'streaming' ELSE 'snapshotting' END,"
		" snapshot_started_at = coalesce(snapshot_started_at, now()),"
		" snapshot_finished_at = CASE WHEN $4::bool THEN now() END,"
		" snapshot_estimate = coalesce(snapshot_estimate, nullif($5::bigint, -1))"
		" WHERE table_id = $1::int AND coalesce(snapshot_requested_at::text, '') = $6";
	char id[16], nrows[24], est[24];
	char *key = keys_json(res->last_key, res->nkeys);
	const char *p[] = {id, key, nrows, res->final ? "true" : "false", est, t->request};
	int rc;

	snprintf(id, sizeof id, "%d", t->table_id);
	snprintf(nrows, sizeof nrows, "%ld", rows);
	snprintf(est, sizeof est, "%lld", res->estimate > 0 ? res->estimate : -1LL);
	rc = sink_send(s->sink, sink_stmt_get(s->sink, sql, 6), p, NULL);
	free(key);
	return rc;
}

static int
mark_gone(snapshot *s, snap_table *t)
{
	char id[16];
	const char *p[] = {id};

	snprintf(id, sizeof id, "%d", t->table_id);
	t->done = true;
	snap_reader_forget(s->reader, t->table_id);
	return sink_command(s->sink, "marking a dropped table",
	                    "UPDATE tidemark.tables SET state = 'dropped' WHERE table_id = $1::int", 1,
	                    p);
}

static void
chunk_done(snapshot *s, snap_table *t, const snap_result *res, long rows, bool fast)
{
	t->rows += rows;
	t->chunks++;
	if (res->estimate > 0)
		t->estimate = res->estimate;
	if (res->last_key != NULL) {
		snap_keys_free(t->applied_key, t->nkeys);
		t->applied_key = snap_keys_copy(res->last_key, t->nkeys);
	}
	log_debug("snapshot of %s.%s: chunk %d applied, %ld rows (%s)", t->schema, t->name,
	          t->chunks, rows, fast ? "COPY" : "staged upsert");
	if (!res->final)
		return;
	t->done = true;
	snap_reader_forget(s->reader, t->table_id);
	log_status_line(NULL);
	log_info("snapshot of %s.%s done: %lld rows in %d chunks, %.0f rows/s", t->schema, t->name,
	         t->rows, t->chunks, t->rows / (clock_now_s() - t->started + 1e-9));
}

static json_t *
fields_json(const snap_chunk *c, const char **f, const size_t *fl, bool keys_only)
{
	json_t *o = json_object();
	strbuf v = STRBUF_INIT;

	for (int i = 0; i < c->ncols; i++) {
		bool key = false;

		for (int k = 0; k < c->nkeys; k++)
			key |= c->key_idx[k] == i;
		if (keys_only && !key)
			continue;
		strbuf_reset(&v);
		json_object_set_new(o, c->colnames[i],
		                    snap_chunk_text_unescape(f[i], fl[i], &v)
		                        ? json_stringn(strbuf_str(&v), v.len) : json_null());
	}
	strbuf_free(&v);
	return o;
}

/* A row with a value the target column cannot hold: why, or false. */
static bool
row_misfits(const snap_table *t, const snap_chunk *c, const char **f, const size_t *fl,
            char *why, size_t size)
{
	strbuf v = STRBUF_INIT;
	bool bad = false;

	for (int k = 0; k < t->nchecks && !bad; k++)
		for (int i = 0; i < c->ncols && !bad; i++) {
			char reason[200];

			strbuf_reset(&v);
			if (strcmp(c->colnames[i], t->check_cols[k]) != 0 ||
			    !snap_chunk_text_unescape(f[i], fl[i], &v) ||
			    cast_value_fits_from(&t->check_src[k], &t->check_tgt[k], strbuf_str(&v), v.len,
			                         reason, sizeof reason))
				continue;
			snprintf(why, size, "column %s: %s", c->colnames[i], reason);
			bad = true;
		}
	strbuf_free(&v);
	return bad;
}

static int
quarantine_row(snapshot *s, const snap_table *t, const snap_chunk *c, const char **f,
               const size_t *fl, const char *why)
{
	json_t *key = fields_json(c, f, fl, true), *row = fields_json(c, f, fl, false);
	char *kt = json_dumps(key, JSON_COMPACT), *rt = json_dumps(row, JSON_COMPACT);
	char table[256];
	int rc;

	snprintf(table, sizeof table, "%s.%s", t->schema, t->name);
	rc = catalog_quarantine(s->sink, s->cfg.slot, t->table_id, table, t->low_lsn, "snapshot", kt,
	                        rt, why);
	free(kt);
	free(rt);
	json_decref(key);
	json_decref(row);
	return rc;
}

/* Rows (COPY text) whose values all fit the target go to out; the others
 * to quarantine. Returns the rows kept, or -1. */
static long
filter_misfits(snapshot *s, const snap_table *t, const snap_chunk *c, const strbuf *rows,
               strbuf *out)
{
	const char **f = calloc((size_t) c->ncols + 1, sizeof(char *));
	size_t *fl = calloc((size_t) c->ncols + 1, sizeof(size_t));
	long kept = 0;

	if (f == NULL || fl == NULL)
		abort();
	for (size_t off = 0; off < rows->len;) {
		const char *line = rows->data + off;
		const char *nl = memchr(line, '\n', rows->len - off);
		size_t len = (size_t) (nl - line);
		char why[256];

		if (snap_chunk_text_fields(line, len, f, fl, c->ncols) == c->ncols &&
		    row_misfits(t, c, f, fl, why, sizeof why)) {
			if (quarantine_row(s, t, c, f, fl, why) != TM_OK) {
				kept = -1;
				break;
			}
		} else {
			strbuf_appendn(out, line, len + 1);
			kept++;
		}
		off += len + 1;
	}
	free(f);
	free(fl);
	return kept;
}

static int
apply_chunk(snapshot *s, snap_table *t, snap_result *res)
{
	strbuf merged = STRBUF_INIT;
	const strbuf *rows = &res->chunk->data;
	long n = res->chunk->nrows;
	snap_overlay *overlays = NULL;
	int noverlays = 0;
	bool fast = false;
	int rc;
	double t0;

	strbuf fitting = STRBUF_INIT;

	/* the usual case: the stream did not touch the table in the window */
	if (snap_window_changes(t->window) > 0) {
		n = snap_window_merge(t->window, res->chunk, &merged, &overlays, &noverlays);
		rows = &merged;
	}
	if (t->nchecks > 0 && res->chunk->format == SNAP_CHUNK_TEXT) {
		n = filter_misfits(s, t, res->chunk, rows, &fitting);
		rows = &fitting;
		if (n < 0) {
			strbuf_free(&merged);
			strbuf_free(&fitting);
			return TM_EXIT_TARGET;
		}
	}
	t0 = clock_now_s();
	{
		snap_load_chunk lc = {t->table_id, t->target_schema, t->target_table, t->nkeys,
		                      t->key_columns, res->chunk, rows, n, overlays, noverlays,
		                      t->window, res->prev_key, res->final ? NULL : res->last_key};

		rc = snap_load(s->sink, &lc, &fast);
	}
	log_debug("snapshot load: %ld rows in %.1f ms", n, (clock_now_s() - t0) * 1000);
	if (rc == TM_OK)
		rc = save_progress(s, t, res, n);
	if (rc == TM_OK)
		chunk_done(s, t, res, n, fast);
	strbuf_free(&merged);
	strbuf_free(&fitting);
	return rc;
}

static int
high_watermark(snapshot *s, const char *id)
{
	snap_result *res = snap_reader_take(s->reader, id);
	snap_table *t = res ? find(s, res->table_id) : NULL;
	int rc = TM_OK;

	if (t == NULL || t->window == NULL || strcmp(t->wm_id, id) != 0 ||
	    res->generation != t->generation) {
		/* a chunk of an older generation: already superseded */
	} else if (res->table_gone)
		rc = mark_gone(s, t);
	else if (columns_changed(s, res)) {
		log_info("snapshot of %s.%s: the table's columns changed during a chunk; it is read "
		         "again", t->schema, t->name);
		snapshot_restart(s, t->table_id);
	} else if (missed_commit(s, res, t->low_lsn)) {
		log_info("snapshot of %s.%s: a transaction committed just before the chunk was not "
		         "visible to its read; the chunk is read again", t->schema, t->name);
		snapshot_restart(s, t->table_id);
	} else
		rc = apply_chunk(s, t, res);
	if (t != NULL && t->window != NULL && strcmp(t->wm_id, id) == 0) {
		snap_window_free(t->window);
		t->window = NULL;
	}
	snap_reader_release(s->reader, res);
	return rc;
}

static void
low_watermark(snapshot *s, const char *id, tm_lsn lsn)
{
	int table_id;
	long generation;
	snap_table *t;

	if (!snap_reader_issued(s->reader, id, &table_id, &generation))
		return; /* another process's, or an earlier run's */
	t = find(s, table_id);
	if (t == NULL || t->done || generation != t->generation)
		return;
	snap_window_free(t->window);
	t->window = snap_window_new(t->nkeys);
	snprintf(t->wm_id, sizeof t->wm_id, "%s", id);
	t->low_lsn = lsn;
}

static int
hook_message(void *ctx, const pgoutput_msg *m, pg_timestamp commit_time)
{
	snapshot *s = ctx;
	char content[80];
	size_t len = m->u.message.len;

	(void) commit_time;
	if (strcmp(m->u.message.prefix, SNAP_WM_PREFIX) != 0 || len < 3 || len >= sizeof content)
		return TM_OK;
	memcpy(content, m->u.message.content, len);
	content[len] = '\0';
	if (content[0] == 'L' && content[1] == ' ')
		low_watermark(s, content + 2, m->u.message.lsn);
	else if (content[0] == 'H' && content[1] == ' ')
		return high_watermark(s, content + 2);
	return TM_OK;
}

apply_hooks
snapshot_hooks(snapshot *s)
{
	apply_hooks h = {s, hook_watching, hook_row, hook_partial, hook_truncate, hook_commit,
	                 hook_message, s};

	return h;
}
