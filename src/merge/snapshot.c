#include "snapshot.h"
#include "clock.h"
#include "xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

#include "log.h"
#include "pgconn.h"
#include "snap_keyless.h"
#include "snap_load.h"
#include "snap_commits.h"
#include "snap_reader.h"
#include "snap_range.h"
#include "snap_sweep.h"
#include "snap_table.h"

#define POLL_INTERVAL_S 2.0
/* Keys read again in one read, at most: their rows are held in memory. */
#define REREAD_MAX 100


struct snapshot {
	snapshot_config cfg;
	sink *sink;              /* borrowed */
	apply *apply;            /* borrowed */
	snap_reader *reader;     /* owned */
	snap_table **tables;     /* owned */
	int ntables;
	snap_commits *ring;      /* owned */
	snap_sweeps *sweeps;     /* owned: rows copies by keys left over (snap_sweep.h) */
	double last_poll;
	double last_progress;
	bool polled;
	bool reread_asked;       /* a request to read a row again may be new since the last scan */
	bool stale_dropped;      /* staging tables left behind were looked for */
};

/* ---- tables ---- */

static snap_table *
track(snapshot *s, PGresult *r, int row)
{
	snap_table *t = snap_table_new(r, row);

	s->tables = xrealloc(s->tables, sizeof(snap_table *) * (size_t) (s->ntables + 1));
	s->tables[s->ntables++] = t;
	return t;
}

static int
mark_gone(snapshot *s, snap_table *t)
{
	snap_reader_forget(s->reader, t->table_id);
	return snap_table_mark_gone(s->sink, t);
}

static void
chunk_done(snapshot *s, snap_table *t, snap_range *g, const snap_result *res, long rows,
           bool fast)
{
	if (snap_table_chunk_done(t, g, res, rows, fast, s->cfg.metrics))
		snap_reader_forget(s->reader, t->table_id);
}

/* The windows of the table's chunks in flight close (their reads are
 * superseded). */
static void
close_windows(snap_table *t)
{
	for (int i = 0; i < t->nranges; i++) {
		snap_window_free(t->ranges[i].window);
		t->ranges[i].window = NULL;
	}
}

static bool
windows_open(const snap_table *t)
{
	for (int i = 0; i < t->nranges; i++)
		if (t->ranges[i].window != NULL)
			return true;
	return false;
}

static snap_table *
find(const snapshot *s, int table_id)
{
	for (int i = 0; i < s->ntables; i++)
		if (s->tables[i]->table_id == table_id)
			return s->tables[i];
	return NULL;
}

static void submit_now(snapshot *s, snap_table *t);

/* A table without a key is staged through a target connection of the
 * reader's own, which sees only what is committed: its target table (new,
 * or altered by the transaction that asked for the copy) must be. Its
 * copy starts once no target transaction is open (snapshot_poll). */
static void
submit(snapshot *s, snap_table *t)
{
	if (t->keyless && s->apply != NULL && apply_in_transaction(s->apply)) {
		t->recording = false;
		t->restart = true;
		t->generation++; /* what was read before is superseded now */
		return;
	}
	submit_now(s, t);
}

/* The table's ranges (snap_range.h): those stored for this copy; else one
 * from the last key copied, when a copy of the table whole was under way;
 * else the source's split of a large table, stored; else one. */
static int
plan_ranges(snapshot *s, snap_table *t)
{
	snap_range_source src = {t->schema, t->name, t->key_columns[0], s->cfg.chunk_rows,
	                         s->cfg.chunk_bytes, s->cfg.readers};
	char **bounds = NULL;
	int n = 0;
	int rc = snap_range_load(s->sink, t->table_id, t->nkeys, &t->ranges, &t->nranges);

	if (rc == TM_OK && t->nranges > 0) {
		for (int i = 0; i < t->nranges; i++)
			n += t->ranges[i].done;
		log_info("snapshot of %s.%s resumes in its %d key ranges (%d of them copied)",
		         t->schema, t->name, t->nranges, n);
	}
	if (rc != TM_OK || t->nranges > 0)
		return rc;
	if (t->applied_key == NULL)
		snap_range_bounds(snap_reader_conn(s->reader), &src, &bounds, &n);
	if (n > 0)
		rc = snap_range_store(s->sink, t->table_id, bounds, n);
	if (rc != TM_OK)
		n = 0;
	t->ranges = snap_range_from_bounds(bounds, n);
	t->nranges = n + 1;
	if (n == 0)
		t->ranges[0].applied_key = snap_keys_copy(t->applied_key, t->nkeys);
	snap_keys_free(bounds, n);
	return rc;
}

/* Each range not yet copied to its end goes to the readers, from its last
 * key applied (a table without a key: once, whole). */
static void
submit_now(snapshot *s, snap_table *t)
{
	snap_job job = {.table_id = t->table_id, .generation = ++t->generation, .schema = t->schema,
	                .name = t->name, .nkeys = t->nkeys, .key_columns = t->key_columns,
	                .chunk_rows = s->cfg.chunk_rows, .range_no = -1,
	                .chunk_bytes = s->cfg.chunk_bytes, .target_schema = t->target_schema,
	                .target_table = t->target_table};

	if (!t->keyless && t->nranges == 0 && plan_ranges(s, t) != TM_OK) {
		t->restart = true; /* the next poll tries again */
		return;
	}
	snap_table_target_types(s->sink, t, &job);
	snap_table_load_checks(s->sink, t, &job);
	t->recording = false;
	t->restart = false;
	if (t->keyless)
		snap_reader_submit(s->reader, &job);
	for (int i = 0; i < t->nranges; i++) {
		snap_range *g = &t->ranges[i];

		snap_window_free(g->window);
		g->window = NULL;
		if (g->done)
			continue;
		job.range_no = g->no;
		job.range_lower = g->lower;
		job.range_upper = g->upper;
		job.start_key = g->applied_key;
		snap_reader_submit(s->reader, &job);
	}
	snap_table_job_free(&job);
}

/* A `tidemark snapshot` request changed the table's request stamp. */
static void
rerequested(snapshot *s, snap_table *t, PGresult *r, int row)
{
	free(t->request);
	t->request = xstrdup(PQgetvalue(r, row, 5));
	snap_keys_free(t->applied_key, t->nkeys);
	t->applied_key = snap_table_keys_from_json(PQgetvalue(r, row, 4), t->nkeys);
	snap_table_ranges_clear(t); /* planned again, for this request */
	snap_reader_forget(s->reader, t->table_id);
	t->rows = atoll(PQgetvalue(r, row, 6));
	t->chunks = 0;
	t->done = false;
	t->started = clock_now_s();
	log_info("snapshot of %s.%s requested again: copying from the start", t->schema, t->name);
	submit(s, t);
}

/* ---- rows read again by key ---- */

static void
rereads_clear(snap_table *t)
{
	snap_keys_free(t->reread_keys, t->nreread * t->nkeys);
	t->reread_keys = NULL;
	t->nreread = 0;
}

static void
reread_add(snap_table *t, const char *json)
{
	char **key = snap_table_keys_from_json(json, t->nkeys);

	if (key == NULL || t->nreread >= REREAD_MAX) {
		snap_keys_free(key, t->nkeys);
		return;
	}
	t->reread_keys = realloc(t->reread_keys,
	                         sizeof(char *) * ((size_t) (t->nreread + 1) * (size_t) t->nkeys + 1));
	if (t->reread_keys == NULL)
		abort();
	for (int k = 0; k < t->nkeys; k++)
		t->reread_keys[t->nreread * t->nkeys + k] = key[k];
	t->reread_keys[(t->nreread + 1) * t->nkeys] = NULL;
	t->nreread++;
	free(key);
}

/* The keys asked for, oldest request first, per table. */
static int
scan_rereads(snapshot *s)
{
	char max[16];
	const char *p[] = {s->cfg.slot, max};
	PGresult *r;
	/* a request made under another key (the table's key changed since)
	 * cannot be read under the current one */
	int rc = sink_command(s->sink, "forgetting requests made under another key",
	                      "DELETE FROM tidemark.snapshot_rereads r USING tidemark.tables t"
	                      " WHERE r.table_id = t.table_id AND t.slot_name = $1"
	                      " AND cardinality(r.key) <> cardinality(t.key_columns)", 1, p);

	if (rc != TM_OK)
		return rc;
	snprintf(max, sizeof max, "%d", REREAD_MAX);
	/* REREAD_MAX per table at a time: the others stay asked for, for the
	 * next scan once these are read */
	rc = sink_query(s->sink, "reading the rows to read again",
	                "SELECT table_id, key FROM (SELECT r.table_id, array_to_json(r.key)::text AS key,"
	                "  row_number() OVER (PARTITION BY r.table_id ORDER BY r.requested_lsn) AS n"
	                "  FROM tidemark.snapshot_rereads r JOIN tidemark.tables t USING (table_id)"
	                "  WHERE t.slot_name = $1 AND t.state <> 'dropped') q"
	                " WHERE n <= $2::int ORDER BY table_id, n", 2, p, &r);
	if (rc != TM_OK)
		return rc;
	for (int i = 0; i < s->ntables; i++)
		rereads_clear(s->tables[i]);
	for (int i = 0; i < PQntuples(r); i++) {
		snap_table *t = find(s, atoi(PQgetvalue(r, i, 0)));

		if (t != NULL)
			reread_add(t, PQgetvalue(r, i, 1));
	}
	PQclear(r);
	return TM_OK;
}

static char *
rereads_json(const snap_table *t)
{
	json_t *arr = json_array();
	char *text;

	for (int i = 0; i < t->nreread; i++) {
		json_t *key = json_array();

		for (int k = 0; k < t->nkeys; k++)
			json_array_append_new(key, json_string(t->reread_keys[i * t->nkeys + k]));
		json_array_append_new(arr, key);
	}
	text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return text;
}

/* Reads the keys asked for again, between watermarks of their own; the
 * rows are loaded when the high watermark comes through (reread_apply). */
static int
reread_start(snapshot *s, snap_table *t)
{
	snap_job job = {.table_id = t->table_id, .generation = t->generation, .schema = t->schema,
	                .name = t->name, .nkeys = t->nkeys, .key_columns = t->key_columns,
	                .chunk_rows = t->nreread, .chunk_bytes = s->cfg.chunk_bytes,
	                .reread_keys = t->reread_keys, .nreread = t->nreread};
	int rc;

	snap_table_target_types(s->sink, t, &job);
	snap_table_load_checks(s->sink, t, &job);
	rc = snap_reader_reread(s->reader, &job, &t->reread);
	snap_table_job_free(&job);
	if (rc != TM_OK)
		return rc;
	free(t->reread_json);
	t->reread_json = rereads_json(t);
	log_info("%s.%s: reading %d row%s again (a key change that did not send every column "
	         "found no row to move on the target)", t->schema, t->name, t->nreread,
	         t->nreread == 1 ? "" : "s");
	rereads_clear(t);
	return TM_OK;
}

static int
rereads_start(snapshot *s)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < s->ntables; i++)
		if (s->tables[i]->nreread > 0 && s->tables[i]->reread == NULL)
			rc = reread_start(s, s->tables[i]);
	return rc;
}

/* A table being copied that the catalog no longer lists as such was dropped
 * (the capture of the DROP marked it): stop copying it. */
static void
forget_unlisted(snapshot *s, PGresult *r)
{
	for (int i = 0; i < s->ntables; i++) {
		snap_table *t = s->tables[i];
		bool listed = false;

		for (int row = 0; row < PQntuples(r) && !listed; row++)
			listed = atoi(PQgetvalue(r, row, 0)) == t->table_id;
		if (listed || t->done)
			continue;
		log_info("snapshot of %s.%s stops: the table was dropped", t->schema, t->name);
		t->done = true;
		t->recording = false;
		close_windows(t);
		snap_reader_forget(s->reader, t->table_id);
	}
}

/* Once per session: staging tables of copies given up (keyless). */
static int
drop_stale_stages(snapshot *s)
{
	int *live = calloc((size_t) s->ntables + 1, sizeof(int));
	int n = 0, rc;

	if (s->stale_dropped) {
		free(live);
		return TM_OK;
	}
	for (int i = 0; i < s->ntables; i++)
		if (s->tables[i]->keyless && !s->tables[i]->done)
			live[n++] = s->tables[i]->table_id;
	rc = snap_keyless_drop_stale(s->sink, live, n);
	s->stale_dropped = rc == TM_OK;
	free(live);
	return rc;
}

static int
scan_catalog(snapshot *s)
{
	const char *p[] = {s->cfg.slot};
	PGresult *r;
	int *asked = NULL, nasked = 0;
	int rc = sink_query(s->sink, "reading the tables to copy",
	                    "SELECT table_id, source_schema, source_table,"
	                    " array_to_json(key_columns)::text, array_to_json(snapshot_last_key)::text,"
	                    " coalesce(snapshot_requested_at::text, ''), snapshot_rows, snapshot_chunks,"
	                    " target_schema, target_table, state,"
	                    " coalesce(to_jsonb(t) ->> 'key_order_same', ''), to_jsonb(t) ->> 'key_order_reason'"
	                    " FROM tidemark.tables t WHERE slot_name = $1"
	                    " AND (state IN ('snapshot_pending', 'snapshotting') OR state = 'streaming'"
	                    "   AND (EXISTS (SELECT FROM tidemark.snapshot_rereads r"
	                    "     WHERE r.table_id = t.table_id) OR EXISTS (SELECT FROM"
	                    "     tidemark.snapshot_sweeps w WHERE w.table_id = t.table_id)))"
	                    " ORDER BY table_id",
	                    1, p, &r);

	if (rc != TM_OK)
		return rc;
	forget_unlisted(s, r);
	asked = xcalloc((size_t) PQntuples(r) + 1, sizeof(int));
	for (int i = 0; i < PQntuples(r); i++) {
		snap_table *t = find(s, atoi(PQgetvalue(r, i, 0)));

		if (t == NULL) {
			if (!(t = track(s, r, i))->done)
				submit(s, t);
			asked[nasked++] = t->table_id;
			continue;
		}
		snap_table_refresh(t, r, i);
		if (strcmp(t->request, PQgetvalue(r, i, 5)) != 0) {
			rerequested(s, t, r, i);
			asked[nasked++] = t->table_id;
		}
	}
	PQclear(r);
	/* a copy asked for may come with a new mode (`tidemark mode`): the
	 * apply writes the table's changes in it from here on */
	if (s->apply != NULL)
		rc = apply_reload_tables_ids(s->apply, asked, nasked);
	free(asked);
	if (rc != TM_OK)
		return rc;
	for (int i = 0; i < s->ntables; i++)
		if (s->tables[i]->restart && !s->tables[i]->done)
			submit(s, s->tables[i]);
	rc = drop_stale_stages(s);
	if (rc == TM_OK)
		rc = snap_sweeps_scan(s->sweeps);
	return rc == TM_OK ? scan_rereads(s) : rc;
}

/* ---- progress ---- */
static void
report_bars(const snapshot *s, double now)
{
	strbuf sb = STRBUF_INIT;
	int width = log_tty_width();

	for (int i = 0; i < s->ntables; i++)
		if (!s->tables[i]->done && s->tables[i]->keyless)
			strbuf_appendf(&sb, "%s%s.%s [one read] %.0f s", sb.len ? "  " : "",
			               s->tables[i]->schema, s->tables[i]->name, now - s->tables[i]->started);
		else if (!s->tables[i]->done && s->tables[i]->chunks > 0)
			snap_table_append_bar(&sb, s->tables[i], now);
	if ((int) sb.len >= width)
		sb.data[width - 1] = '\0';
	log_status_line(strbuf_str(&sb));
	strbuf_free(&sb);
}

/* Progress: bars on a terminal (each second), log lines otherwise. */
static void
report(snapshot *s, bool force)
{
	double now = clock_coarse_s();
	bool tty = log_is_tty();

	if (!force && now - s->last_progress < (tty ? 1.0 : s->cfg.progress_interval))
		return;
	now = clock_now_s(); /* (the rates and times shown: to the microsecond) */
	s->last_progress = now;
	if (tty) {
		report_bars(s, now);
		return;
	}
	for (int i = 0; i < s->ntables; i++)
		if (!s->tables[i]->done)
			snap_table_report_line(s->tables[i], now);
}

/* A table copied to its end, for its sweep (snap_sweep.h). */
static bool
sweep_lookup(void *ctx, int table_id, snap_sweep_table *out)
{
	snapshot *s = ctx;
	snap_table *t = find(s, table_id);

	if (t == NULL || !t->done || t->keyless)
		return false;
	*out = (snap_sweep_table) {t->table_id, t->schema, t->name, t->target_schema,
	                           t->target_table, t->nkeys, t->key_columns, t->key_types,
	                           apply_current_commit_lsn(s->apply),
	                           (long long) apply_current_commit_time(s->apply)};
	return true;
}

/* ---- the public side ---- */

/* Random: a watermark id nobody else can guess, so that no other writer of
 * logical messages can close a chunk's window early. */
static void
session_id(char *out, size_t size)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof r, 0) != (ssize_t) sizeof r)
		r = ((uint64_t) getpid() << 32) ^ (uint64_t) time(NULL) ^ (uint64_t) clock();
	snprintf(out, size, "%016llx", (unsigned long long) r);
}

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
	s->sweeps = snap_sweeps_new(sk, cfg->slot, sweep_lookup, s);
	session_id(session, sizeof session);
	rc = snap_reader_start(cfg->source, cfg->target, cfg->readers, session, cfg->metrics,
	                       &s->reader);
	if (rc != TM_OK) {
		snap_sweeps_free(s->sweeps);
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
		snap_table_free(s->tables[i]);
	free(s->tables);
	free(s->ring);
	snap_sweeps_free(s->sweeps);
	free(s);
}

void
snapshot_attach(snapshot *s, apply *a)
{
	s->apply = a;
}

static uint64_t
pending_tables(const snapshot *s)
{
	uint64_t n = 0;

	for (int i = 0; i < s->ntables; i++)
		n += !s->tables[i]->done;
	return n;
}

int
snapshot_poll(snapshot *s)
{
	int rc = snap_reader_status(s->reader);

	if (rc != TM_OK)
		return rc;
	if (clock_coarse_s() - s->last_poll >= POLL_INTERVAL_S) {
		s->reread_asked = false; /* the scan sees the requests, committed or not */
		rc = scan_catalog(s);
		s->last_poll = clock_coarse_s();
		s->polled = rc == TM_OK;
		metrics_set(s->cfg.metrics, METRICS_TABLES_PENDING, pending_tables(s));
	}
	/* not inside a target transaction: its requests are committed, and a
	 * read that waits on the source holds nothing open on the target */
	if (rc == TM_OK && (s->apply == NULL || !apply_in_transaction(s->apply))) {
		for (int i = 0; i < s->ntables; i++)
			if (s->tables[i]->keyless && s->tables[i]->restart && !s->tables[i]->done)
				submit_now(s, s->tables[i]);
		rc = rereads_start(s);
		if (rc == TM_OK)
			rc = snap_sweeps_start(s->sweeps, s->reader);
	}
	report(s, false);
	return rc;
}

bool
snapshot_busy(const snapshot *s)
{
	if (!s->polled || s->reread_asked || snap_sweeps_busy(s->sweeps))
		return true;
	for (int i = 0; i < s->ntables; i++)
		if (!s->tables[i]->done || s->tables[i]->nreread > 0 || s->tables[i]->reread != NULL)
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
		if (t->recording)
			log_info("snapshot of %s.%s: the table changed during its read; it is read again",
			         t->schema, t->name);
		close_windows(t);
		t->recording = false;
		t->restart = true;
		s->last_poll = -1e9;
	}
}

/* ---- hooks: what the stream shows ---- */

static bool
hook_watching(void *ctx, int table_id)
{
	snap_table *t = find(ctx, table_id);

	return t != NULL && (windows_open(t) || t->reread_window != NULL ||
	                     snap_sweeps_window(((snapshot *) ctx)->sweeps, table_id) != NULL);
}

static void
hook_row(void *ctx, int table_id, const char *const *key, const size_t *key_len)
{
	snap_table *t = find(ctx, table_id);
	snap_window *w;

	for (int i = 0; t != NULL && i < t->nranges; i++)
		if (t->ranges[i].window != NULL)
			snap_window_note_row(t->ranges[i].window, key, key_len);
	if (t != NULL && t->reread_window != NULL)
		snap_window_note_row(t->reread_window, key, key_len);
	if ((w = snap_sweeps_window(((snapshot *) ctx)->sweeps, table_id)) != NULL)
		snap_window_note_row(w, key, key_len);
}

static void
hook_partial(void *ctx, int table_id, const char *const *key, const size_t *key_len, int n,
             const char *const *names, const char *const *values, const size_t *value_len)
{
	snap_table *t = find(ctx, table_id);
	snap_window *w;

	for (int i = 0; t != NULL && i < t->nranges; i++)
		if (t->ranges[i].window != NULL)
			snap_window_note_partial(t->ranges[i].window, key, key_len, n, names, values,
			                         value_len);
	if (t != NULL && t->reread_window != NULL)
		snap_window_note_partial(t->reread_window, key, key_len, n, names, values, value_len);
	if ((w = snap_sweeps_window(((snapshot *) ctx)->sweeps, table_id)) != NULL)
		snap_window_note_row(w, key, key_len); /* the key is touched: whole or not */
}

static void
hook_truncate(void *ctx, int table_id)
{
	snap_table *t = find(ctx, table_id);
	snap_window *w;

	for (int i = 0; t != NULL && i < t->nranges; i++)
		if (t->ranges[i].window != NULL)
			snap_window_note_truncate(t->ranges[i].window);
	if (t != NULL && t->reread_window != NULL)
		snap_window_note_truncate(t->reread_window);
	if ((w = snap_sweeps_window(((snapshot *) ctx)->sweeps, table_id)) != NULL)
		snap_window_note_truncate(w);
}

/* A request to read a row again may have gone out: the next scan looks
 * (at its usual interval: such updates may come in bursts), and until
 * then the snapshot counts as busy. */
static void
hook_reread(void *ctx, int table_id)
{
	(void) table_id;
	((snapshot *) ctx)->reread_asked = true;
}

static void
hook_commit(void *ctx, uint32_t xid, tm_lsn commit_lsn)
{
	snap_commits_add(((snapshot *) ctx)->ring, xid, commit_lsn);
}

/* A transaction the read could not see committed before the window opened
 * (see snap_commits.h): looked for among the commits the stream had shown
 * when the low watermark came (*at_low, which goes with the window). */
static bool
missed_commit(snap_commits **at_low, const snap_result *res, tm_lsn low_lsn)
{
	bool missed = *at_low == NULL || snap_commits_missed(*at_low, res->xip, res->nxip, low_lsn);

	free(*at_low);
	*at_low = NULL;
	return missed;
}

/* The recent commits as a low watermark meets them, into *at_low. */
static void
keep_commits(const snapshot *s, snap_commits **at_low)
{
	if (*at_low == NULL)
		*at_low = xcalloc(1, sizeof **at_low);
	**at_low = *s->ring;
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

/* The rows of a chunk (or a reread) that survive its window, loaded into
 * the target; *n receives their count. */
static int
load_rows(snapshot *s, snap_table *t, const snap_result *res, const snap_range *g,
          snap_window *w, long *n, bool *fast)
{
	strbuf merged = STRBUF_INIT, fitting = STRBUF_INIT;
	const strbuf *rows = &res->chunk->data;
	snap_overlay *overlays = NULL;
	int noverlays = 0;
	int rc = TM_OK;

	*n = res->chunk->nrows;
	/* the usual case: the stream did not touch the table in the window */
	if (snap_window_changes(w) > 0) {
		*n = snap_window_merge(w, res->chunk, &merged, &overlays, &noverlays);
		rows = &merged;
	}
	if (t->nchecks > 0 && res->chunk->format == SNAP_CHUNK_TEXT) {
		snap_table_sink ts = {s->sink, s->cfg.slot, s->cfg.metrics};

		*n = snap_table_filter_misfits(&ts, t, res->chunk, rows, &fitting);
		rows = &fitting;
		rc = *n < 0 ? TM_EXIT_TARGET : TM_OK;
	}
	if (rc == TM_OK) {
		snap_load_chunk lc = {.table_id = t->table_id, .target_schema = t->target_schema,
		                      .target_table = t->target_table, .nkeys = t->nkeys,
		                      .key_columns = t->key_columns, .chunk = res->chunk, .rows = rows,
		                      .nrows = *n, .overlays = overlays, .noverlays = noverlays,
		                      .window = w, .prev_key = res->prev_key,
		                      .last_key = res->final ? NULL : res->last_key,
		                      .range_lower = g ? g->lower : NULL,
		                      .range_upper = g ? g->upper : NULL,
		                      .upsert_only = g == NULL, .by_keys = res->by_keys,
		                      .key_types = (char *const *) t->key_types,
		                      .position = apply_current_commit_lsn(s->apply),
		                      .position_time = apply_current_commit_time(s->apply)};
		double t0 = clock_now_s();

		rc = snap_load(s->sink, &lc, fast);
		log_debug("snapshot load: %ld rows in %.1f ms", *n, (clock_now_s() - t0) * 1000);
	}
	strbuf_free(&merged);
	strbuf_free(&fitting);
	return rc;
}

/* Is g the last range not done, and this its last chunk? */
static bool
ends_table(const snap_table *t, const snap_range *g, const snap_result *res)
{
	for (int i = 0; i < t->nranges; i++)
		if (&t->ranges[i] != g && !t->ranges[i].done)
			return false;
	return res->final;
}

static int
apply_chunk(snapshot *s, snap_table *t, snap_range *g, snap_result *res)
{
	bool fast = false;
	long n = 0;
	int rc;

	t->low_lsn = g->low_lsn; /* a quarantined row's position */
	rc = snap_table_record_key_order(s->sink, t, res);
	if (rc == TM_OK)
		rc = load_rows(s, t, res, g, g->window, &n, &fast);

	if (rc == TM_OK)
		rc = snap_table_save_progress(s->sink, t, g, res, n);
	/* copied again by keys: what the chunks could not remove, a sweep does */
	if (rc == TM_OK && ends_table(t, g, res) && res->by_keys && t->request[0] != '\0') {
		rc = snap_sweep_request(s->sink, t->table_id);
		snapshot_poll_soon(s); /* busy until the scan takes the sweep */
	}
	if (rc == TM_OK)
		chunk_done(s, t, g, res, n, fast);
	/* the target transaction ends with this chunk: each chunk is committed
	 * as it is loaded, so the copy's progress shows chunk by chunk and a
	 * crash loses at most the chunks not yet loaded (a group of the stream's
	 * would otherwise hold every chunk loaded in its second) */
	if (rc == TM_OK)
		apply_commit_after(s->apply);
	return rc;
}

/* The requests a reread answered, in the transaction that loads its rows;
 * a request newer than its low watermark stays for the next one. */
static int
rereads_done(snapshot *s, const snap_table *t)
{
	char id[16], lsn[LSN_TEXT_MAX];
	const char *p[] = {id, lsn_format(t->reread_low_lsn, lsn), t->reread_json};

	snprintf(id, sizeof id, "%d", t->table_id);
	return sink_command(s->sink, "forgetting the rows read again",
	                    "DELETE FROM tidemark.snapshot_rereads WHERE table_id = $1::int"
	                    " AND requested_lsn < $2::pg_lsn"
	                    " AND to_jsonb(key) IN (SELECT jsonb_array_elements($3::jsonb))", 3, p);
}

/* At a reread's high watermark: its rows join the target like a chunk's,
 * unless the table changed under the read (then the next scan asks again). */
static int
reread_apply(snapshot *s, snap_table *t)
{
	snap_result *res = t->reread;
	bool fast = false;
	long n = 0;
	int rc = TM_OK;

	if (t->reread_window == NULL)
		log_warn("%s.%s: the high watermark of a reread came without its low one; the rows "
		         "are read again", t->schema, t->name);
	else if (res->table_gone)
		rc = mark_gone(s, t);
	else if (columns_changed(s, res) || missed_commit(&t->reread_at_low, res, t->reread_low_lsn))
		log_info("%s.%s: the rows read again are read once more (the table changed during "
		         "the read)", t->schema, t->name);
	else if ((rc = load_rows(s, t, res, NULL, t->reread_window, &n, &fast)) == TM_OK)
		rc = rereads_done(s, t);
	snap_reader_release(s->reader, res);
	t->reread = NULL;
	snap_window_free(t->reread_window);
	t->reread_window = NULL;
	snapshot_poll_soon(s);
	return rc;
}

/* ---- tables without a key: one read (snap_keyless.h) ---- */

/* The read's window opens: its changes are kept from here on, and those
 * kept by an earlier attempt go (the new read sees them). */
static int
keyless_low(snapshot *s, snap_table *t, const char *id, tm_lsn lsn)
{
	keep_commits(s, &t->at_low);
	t->recording = true;
	snprintf(t->wm_id, sizeof t->wm_id, "%s", id);
	t->low_lsn = lsn;
	return keyless_pending_clear(s->sink, t->table_id);
}

static void
keyless_done(snapshot *s, snap_table *t, const snap_keyless_loaded *out)
{
	t->rows = out->rows;
	t->chunks = 1;
	t->done = true;
	free(t->refused_definition);
	t->refused_definition = NULL;
	metrics_stage_chunk(s->cfg.metrics, t->schema, t->name, (uint64_t) out->rows);
	snap_reader_forget(s->reader, t->table_id);
	log_status_line(NULL);
	log_info("snapshot of %s.%s done: %lld rows in one read, %.0f rows/s; %ld changes kept "
	         "during the read, %ld of them applied over it (the read saw the others)", t->schema,
	         t->name, out->rows, out->rows / (clock_now_s() - t->started + 1e-9),
	         out->replayed.kept, out->replayed.applied);
}

/* The rows staged, the changes kept: the table, at the high watermark. */
static int
keyless_load(snapshot *s, snap_table *t, snap_result *res)
{
	char display[256];
	keyless_change table = {t->table_id, t->target_schema, t->target_table, display,
	                        res->chunk->ncols, (const char *const *) res->chunk->colnames,
	                        't', NULL, NULL, NULL, NULL};
	snap_keyless_load in = {table, &res->snap, s->cfg.chunk_bytes};
	snap_keyless_loaded out;
	double t0 = clock_now_s();
	int rc;

	snprintf(display, sizeof display, "%s.%s", t->schema, t->name);
	rc = snap_keyless_apply(s->sink, apply_keyless(s->apply), &in, &out);
	if (rc == TM_OK)
		rc = snap_table_save_progress(s->sink, t, NULL, res, (long) out.rows);
	if (rc == TM_OK)
		keyless_done(s, t, &out);
	log_debug("snapshot load of %s: %lld rows in %.1f ms", display, out.rows,
	          (clock_now_s() - t0) * 1000);
	return rc;
}

/* A read given up for columns the target lacked: they must be there now.
 * One given up for a value the target refused: read again, since the
 * stream has now brought every change of the table up to the read; but a
 * second refusal of the same columns read is no change on its way: the
 * target's column was altered by hand. */
static int
keyless_target_ready(snapshot *s, snap_table *t, const snap_result *res)
{
	char display[256];

	snprintf(display, sizeof display, "%s.%s", t->schema, t->name);
	if (res->refused == NULL)
		return snap_keyless_check_target(s->sink, t->table_id, t->target_schema,
		                                 t->target_table, res->chunk->ncols,
		                                 (const char *const *) res->chunk->colnames, display);
	if (t->refused_definition != NULL && strcmp(t->refused_definition, res->definition) == 0) {
		log_error("target: %s.%s: a value of %s read from the source is refused again, with no "
		          "change of its columns on the way (%s): a target column's type no longer "
		          "takes the source's values: it was altered by hand. Fix: give it back a type "
		          "that holds them", t->target_schema, t->target_table, display, res->refused);
		return TM_EXIT_TARGET;
	}
	free(t->refused_definition);
	t->refused_definition = xstrdup(res->definition);
	return TM_OK;
}

static int
keyless_high(snapshot *s, snap_table *t, snap_result *res, const char *id)
{
	bool current = t->recording && strcmp(t->wm_id, id) == 0 && res->generation == t->generation;
	int rc = TM_OK;

	if (current)
		t->recording = false; /* the window closes here, whatever comes of the read */
	if (!current) {
		/* an older attempt's: superseded */
	} else if (res->table_gone) {
		rc = mark_gone(s, t);
		if (rc == TM_OK)
			rc = keyless_pending_clear(s->sink, t->table_id);
	} else if (!res->staged || columns_changed(s, res)) {
		if (res->behind)
			rc = keyless_target_ready(s, t, res);
		if (rc == TM_OK) {
			log_info("snapshot of %s.%s: the table changed during its read; it is read again",
			         t->schema, t->name);
			snapshot_restart(s, t->table_id);
		}
	} else if (missed_commit(&t->at_low, res, t->low_lsn)) {
		log_info("snapshot of %s.%s: a transaction committed just before the read was not "
		         "visible to it; the table is read again", t->schema, t->name);
		snapshot_restart(s, t->table_id);
	} else
		rc = keyless_load(s, t, res);
	snap_reader_release(s->reader, res);
	return rc;
}

static keyless_mode
hook_keyless_mode(void *ctx, int table_id, const char *state)
{
	snap_table *t = find(ctx, table_id);

	if (t == NULL)
		return strcmp(state, "streaming") == 0 ? KEYLESS_APPLY : KEYLESS_SKIP;
	if (t->done)
		return KEYLESS_APPLY;
	return t->recording ? KEYLESS_RECORD : KEYLESS_SKIP;
}

/* The table whose reread has this watermark id, or NULL. */
static snap_table *
reread_owner(const snapshot *s, const char *id)
{
	for (int i = 0; i < s->ntables; i++)
		if (s->tables[i]->reread != NULL && strcmp(s->tables[i]->reread->id, id) == 0)
			return s->tables[i];
	return NULL;
}

static int
high_watermark(snapshot *s, const char *id)
{
	snap_table *t = reread_owner(s, id);
	snap_range *g;
	snap_result *res;
	bool sweep = false;
	int rc = TM_OK;

	if (t != NULL)
		return reread_apply(s, t);
	rc = snap_sweeps_high(s->sweeps, id, s->ring, &sweep);
	if (sweep)
		return rc;
	res = snap_reader_take(s->reader, id);
	t = res ? find(s, res->table_id) : NULL;
	if (t != NULL && t->keyless)
		return keyless_high(s, t, res, id);
	g = t != NULL ? snap_table_range(t, res->range_no) : NULL;
	if (g == NULL || g->window == NULL || strcmp(g->wm_id, id) != 0 ||
	    res->generation != t->generation) {
		/* a chunk of an older generation: already superseded */
	} else if (res->table_gone)
		rc = mark_gone(s, t);
	else if (columns_changed(s, res)) {
		log_info("snapshot of %s.%s: the table's columns changed during a chunk; it is read "
		         "again", t->schema, t->name);
		snapshot_restart(s, t->table_id);
	} else if (missed_commit(&g->at_low, res, g->low_lsn)) {
		log_info("snapshot of %s.%s: a transaction committed just before the chunk was not "
		         "visible to its read; the chunk is read again", t->schema, t->name);
		snapshot_restart(s, t->table_id);
	} else
		rc = apply_chunk(s, t, g, res);
	if (g != NULL && g->window != NULL && strcmp(g->wm_id, id) == 0) {
		snap_window_free(g->window);
		g->window = NULL;
	}
	snap_reader_release(s->reader, res);
	return rc;
}

static int
low_watermark(snapshot *s, const char *id, tm_lsn lsn)
{
	int table_id, range_no;
	long generation;
	snap_table *t;
	snap_range *g;

	if ((t = reread_owner(s, id)) != NULL) {
		snap_window_free(t->reread_window);
		t->reread_window = snap_window_new(t->nkeys);
		t->reread_low_lsn = lsn;
		keep_commits(s, &t->reread_at_low);
		return TM_OK;
	}
	if (snap_sweeps_low(s->sweeps, id, lsn))
		return TM_OK;
	if (!snap_reader_issued(s->reader, id, &table_id, &generation, &range_no))
		return TM_OK; /* another process's, or an earlier run's */
	t = find(s, table_id);
	if (t == NULL || t->done || generation != t->generation)
		return TM_OK;
	if (t->keyless)
		return keyless_low(s, t, id, lsn);
	if ((g = snap_table_range(t, range_no)) == NULL || g->done)
		return TM_OK;
	snap_window_free(g->window);
	g->window = snap_window_new(t->nkeys);
	snprintf(g->wm_id, sizeof g->wm_id, "%s", id);
	g->low_lsn = lsn;
	keep_commits(s, &g->at_low);
	return TM_OK;
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
		return low_watermark(s, content + 2, m->u.message.lsn);
	else if (content[0] == 'H' && content[1] == ' ')
		return high_watermark(s, content + 2);
	return TM_OK;
}

apply_hooks
snapshot_hooks(snapshot *s)
{
	apply_hooks h = {s,           hook_watching, hook_row,     hook_partial, hook_truncate,
	                 hook_commit, hook_reread,   hook_message, s,            hook_keyless_mode,
	                 NULL,        NULL,          NULL,         NULL};

	return h;
}
