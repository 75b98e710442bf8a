#include "snap_sweep.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "codec.h"
#include "log.h"
#include "pgconn.h"
#include "snap_load.h"
#include "xalloc.h"

typedef struct snap_sweep {
	int table_id;
	int nkeys;
	char **last_key;        /* owned: the last key looked up; NULL: none yet */
	long long checked;      /* keys looked up (this process) */
	long long removed;      /* rows deleted (this process) */
	double started;
	/* the page in flight */
	char **page;            /* owned: npage keys of nkeys values, flat */
	int npage;
	strbuf lines;           /* the same keys as COPY text lines */
	bool last_page;         /* fewer keys than a page: nothing after them */
	snap_result *res;       /* owned: the lookup, until its high watermark */
	snap_window *window;    /* owned: open between its watermarks */
	tm_lsn low_lsn;
} snap_sweep;

struct snap_sweeps {
	sink *sink;              /* borrowed */
	const char *slot;        /* borrowed */
	snap_sweep_lookup lookup;
	void *ctx;
	snap_sweep **items;      /* owned */
	int n;
};

/* ---- the catalog ---- */

int
snap_sweep_request(sink *s, int table_id)
{
	char id[16];
	const char *p[] = {id};

	snprintf(id, sizeof id, "%d", table_id);
	return sink_command(s, "asking for a sweep of the rows the source no longer has",
	                    "INSERT INTO tidemark.snapshot_sweeps (table_id) VALUES ($1::int)"
	                    " ON CONFLICT (table_id) DO UPDATE SET last_key = NULL, keys_checked = 0,"
	                    " rows_removed = 0, requested_at = now()", 1, p);
}

/* The sweeps to do for the slot's copied tables: *ids (new array) and the
 * last key each has looked up (new JSON texts, "" when none), *n. */
static int
sweep_list(sink *s, const char *slot, int **ids, char ***last_keys, int *n)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	int rc = sink_query(s, "reading the sweeps to do",
	                    "SELECT w.table_id, coalesce(array_to_json(w.last_key)::text, '')"
	                    " FROM tidemark.snapshot_sweeps w JOIN tidemark.tables t USING (table_id)"
	                    " WHERE t.slot_name = $1 AND t.state = 'streaming' ORDER BY 1", 1, p, &r);

	*ids = NULL;
	*last_keys = NULL;
	*n = 0;
	if (rc != TM_OK)
		return rc;
	*n = PQntuples(r);
	*ids = xcalloc((size_t) *n + 1, sizeof(int));
	*last_keys = xcalloc((size_t) *n + 1, sizeof(char *));
	for (int i = 0; i < *n; i++) {
		(*ids)[i] = atoi(PQgetvalue(r, i, 0));
		(*last_keys)[i] = xstrdup(PQgetvalue(r, i, 1));
	}
	PQclear(r);
	return TM_OK;
}

static int
save_progress(snap_sweep *w, sink *s, int table_id, long removed)
{
	json_t *arr = json_array();
	char id[16], n[24], gone[24];
	char *key;
	const char *p[] = {id, NULL, n, gone};
	int rc;

	for (int k = 0; k < w->nkeys; k++)
		json_array_append_new(arr, json_string(w->last_key[k]));
	key = json_dumps(arr, JSON_COMPACT);
	p[1] = key;
	snprintf(id, sizeof id, "%d", table_id);
	snprintf(n, sizeof n, "%d", w->npage);
	snprintf(gone, sizeof gone, "%ld", removed);
	rc = sink_command(s, "storing a sweep's progress",
	                  "UPDATE tidemark.snapshot_sweeps SET"
	                  " last_key = ARRAY(SELECT jsonb_array_elements_text($2::jsonb)),"
	                  " keys_checked = keys_checked + $3::bigint,"
	                  " rows_removed = rows_removed + $4::bigint WHERE table_id = $1::int", 4, p);
	free(key);
	json_decref(arr);
	return rc;
}

static int
end_sweep(sink *s, int table_id)
{
	char id[16];
	const char *p[] = {id};

	snprintf(id, sizeof id, "%d", table_id);
	return sink_command(s, "ending a sweep", "DELETE FROM tidemark.snapshot_sweeps"
	                    " WHERE table_id = $1::int", 1, p);
}

static int
finish(snap_sweep *w, sink *s, const snap_sweep_table *t)
{
	log_info("%s.%s: the sweep is done: %lld keys of the target looked up on the source, %lld "
	         "rows the source no longer has removed, in %.0f s", t->schema, t->name, w->checked,
	         w->removed, clock_now_s() - w->started);
	return end_sweep(s, t->table_id);
}

/* ---- one sweep ---- */

static char **
keys_from_json(const char *text, int n)
{
	json_t *arr = text && *text ? json_loads(text, 0, NULL) : NULL;
	char **out = NULL;

	if (json_is_array(arr) && (int) json_array_size(arr) == n) {
		out = xcalloc((size_t) n + 1, sizeof(char *));
		for (int i = 0; i < n; i++)
			out[i] = xstrdup(json_string_value(json_array_get(arr, (size_t) i)) ?: "");
	}
	json_decref(arr);
	return out;
}

static snap_sweep *
sweep_new(int table_id, const char *last_key_json, int nkeys)
{
	snap_sweep *w = xcalloc(1, sizeof *w);

	w->table_id = table_id;
	w->nkeys = nkeys;
	w->last_key = keys_from_json(last_key_json, nkeys);
	w->started = clock_now_s();
	return w;
}

static void
page_clear(snap_sweep *w)
{
	snap_keys_free(w->page, w->npage * w->nkeys);
	w->page = NULL;
	w->npage = 0;
	strbuf_free(&w->lines);
	snap_reader_release(NULL, w->res);
	w->res = NULL;
	snap_window_free(w->window);
	w->window = NULL;
}

static void
sweep_free(snap_sweep *w)
{
	if (w == NULL)
		return;
	page_clear(w);
	snap_keys_free(w->last_key, w->nkeys);
	free(w);
}

static bool
sweep_idle(const snap_sweep *w)
{
	return w->res == NULL;
}

/* SELECT concat(k1), ... FROM t [WHERE (k) > (last)] ORDER BY k LIMIT n:
 * the target's next keys in its own order. */
static void
page_sql(const snap_sweep *w, const snap_sweep_table *t, strbuf *sql)
{
	strbuf_append(sql, "SELECT ");
	for (int k = 0; k < t->nkeys; k++) {
		strbuf_append(sql, k > 0 ? ", " : "");
		codec_append_key_text(sql, NULL, t->key_columns[k]);
	}
	strbuf_append(sql, " FROM ");
	strbuf_append_qualified(sql, t->target_schema, t->target_table);
	for (int k = 0; w->last_key != NULL && k < t->nkeys; k++) {
		const char *type = t->key_types != NULL ? t->key_types[k] : NULL;

		strbuf_append(sql, k > 0 ? ", " : " WHERE (");
		codec_append_key_operand(sql, NULL, t->key_columns[k], type);
	}
	for (int k = 0; w->last_key != NULL && k < t->nkeys; k++) {
		strbuf_append(sql, k > 0 ? ", " : ") > (");
		codec_append_key_param(sql, k + 1, t->key_types != NULL ? t->key_types[k] : NULL);
	}
	strbuf_append(sql, w->last_key != NULL ? ") ORDER BY " : " ORDER BY ");
	for (int k = 0; k < t->nkeys; k++) {
		strbuf_append(sql, k > 0 ? ", " : "");
		strbuf_append_ident(sql, t->key_columns[k]);
	}
	strbuf_appendf(sql, " LIMIT %d", SNAP_SWEEP_PAGE);
}

/* The page's keys, as values and as COPY lines, cut at the page's bytes. */
static void
take_page(snap_sweep *w, PGresult *r)
{
	size_t bytes = 0;
	int n = PQntuples(r);

	w->page = xcalloc((size_t) n * (size_t) w->nkeys + 1, sizeof(char *));
	for (int i = 0; i < n && bytes < SNAP_SWEEP_PAGE_BYTES; i++) {
		for (int k = 0; k < w->nkeys; k++) {
			const char *v = PQgetvalue(r, i, k);
			size_t len = (size_t) PQgetlength(r, i, k);

			w->page[w->npage * w->nkeys + k] = xstrdup(v);
			strbuf_append(&w->lines, k > 0 ? "\t" : "");
			strbuf_append_copy_text(&w->lines, v, len);
			bytes += len;
		}
		strbuf_appendc(&w->lines, '\n');
		w->npage++;
	}
	w->last_page = w->npage == n && n < SNAP_SWEEP_PAGE;
}

static int
read_page(snap_sweep *w, sink *s, const snap_sweep_table *t)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	int rc;

	page_sql(w, t, &sql);
	rc = sink_query(s, "reading the target's keys to sweep", sql.data,
	                w->last_key != NULL ? t->nkeys : 0, (const char *const *) w->last_key, &r);
	if (rc == TM_OK)
		take_page(w, r);
	PQclear(r);
	strbuf_free(&sql);
	return rc;
}

/* The next page and its lookup, or the end of the sweep (*finished). */
static int
sweep_next(snap_sweep *w, sink *s, snap_reader *r, const snap_sweep_table *t, bool *finished)
{
	snap_job job = {.table_id = t->table_id, .schema = (char *) t->schema,
	                .name = (char *) t->name, .nkeys = t->nkeys,
	                .key_columns = (char **) t->key_columns, .keys_only = true};
	int rc;

	*finished = false;
	page_clear(w);
	rc = read_page(w, s, t);
	if (rc == TM_OK && w->npage == 0) {
		*finished = true;
		return finish(w, s, t);
	}
	job.chunk_rows = w->npage;
	job.reread_keys = w->page;
	job.nreread = w->npage;
	if (rc == TM_OK)
		rc = snap_reader_reread(r, &job, &w->res);
	if (rc != TM_OK)
		page_clear(w);
	return rc;
}

/* The page's deletions, then its progress (or the end). */
static int
page_apply(snap_sweep *w, sink *s, const snap_sweep_table *t, bool *finished)
{
	snap_load_chunk lc = {.table_id = t->table_id, .target_schema = t->target_schema,
	                      .target_table = t->target_table, .nkeys = t->nkeys,
	                      .key_columns = t->key_columns, .chunk = w->res->chunk,
	                      .window = w->window, .key_types = t->key_types,
	                      .position = t->position, .position_time = t->position_time};
	long removed = 0;
	int rc = snap_load_sweep(s, &lc, &w->lines, &removed);

	if (rc != TM_OK)
		return rc;
	w->checked += w->npage;
	w->removed += removed;
	snap_keys_free(w->last_key, w->nkeys);
	w->last_key = snap_keys_copy(w->page + (size_t) (w->npage - 1) * (size_t) w->nkeys, w->nkeys);
	if (removed > 0)
		log_info("%s.%s: %ld rows the source no longer has removed", t->schema, t->name, removed);
	*finished = w->last_page;
	return w->last_page ? finish(w, s, t) : save_progress(w, s, t->table_id, removed);
}

/* At the lookup's high watermark. */
static int
sweep_high(snap_sweep *w, sink *s, const snap_commits *ring, const snap_sweep_table *t,
           bool *finished)
{
	int rc = TM_OK;

	*finished = false;
	if (w->window == NULL)
		log_warn("%s.%s: the high watermark of a sweep came without its low one; the page is "
		         "looked up again", t->schema, t->name);
	else if (w->res->table_gone) {
		*finished = true; /* dropped: the capture of the DROP says what comes of it */
		rc = end_sweep(s, t->table_id);
	}
	else if (snap_commits_missed(ring, w->res->xip, w->res->nxip, w->low_lsn))
		log_info("%s.%s: a transaction committed just before the sweep's read was not visible "
		         "to it; the page is looked up again", t->schema, t->name);
	else
		rc = page_apply(w, s, t, finished);
	page_clear(w);
	return rc;
}

/* ---- the sweeps of a snapshot ---- */

snap_sweeps *
snap_sweeps_new(sink *s, const char *slot, snap_sweep_lookup lookup, void *ctx)
{
	snap_sweeps *ws = xcalloc(1, sizeof *ws);

	ws->sink = s;
	ws->slot = slot;
	ws->lookup = lookup;
	ws->ctx = ctx;
	return ws;
}

void
snap_sweeps_free(snap_sweeps *ws)
{
	if (ws == NULL)
		return;
	for (int i = 0; i < ws->n; i++)
		sweep_free(ws->items[i]);
	free(ws->items);
	free(ws);
}

static snap_sweep *
find(const snap_sweeps *ws, int table_id)
{
	for (int i = 0; i < ws->n; i++)
		if (ws->items[i]->table_id == table_id)
			return ws->items[i];
	return NULL;
}

static void
forget(snap_sweeps *ws, snap_sweep *w)
{
	for (int i = 0; i < ws->n; i++)
		if (ws->items[i] == w) {
			ws->items[i] = ws->items[--ws->n];
			sweep_free(w);
			return;
		}
}

static bool
listed(const int *ids, int n, int table_id)
{
	for (int i = 0; i < n; i++)
		if (ids[i] == table_id)
			return true;
	return false;
}

int
snap_sweeps_scan(snap_sweeps *ws)
{
	int *ids = NULL, n = 0;
	char **last = NULL;
	int rc = sweep_list(ws->sink, ws->slot, &ids, &last, &n);

	for (int i = ws->n - 1; rc == TM_OK && i >= 0; i--)
		if (!listed(ids, n, ws->items[i]->table_id) && sweep_idle(ws->items[i]))
			forget(ws, ws->items[i]);
	for (int i = 0; rc == TM_OK && i < n; i++) {
		snap_sweep_table t;

		if (find(ws, ids[i]) != NULL || !ws->lookup(ws->ctx, ids[i], &t) || t.nkeys == 0)
			continue;
		ws->items = realloc(ws->items, sizeof(snap_sweep *) * (size_t) (ws->n + 1));
		if (ws->items == NULL)
			abort();
		ws->items[ws->n++] = sweep_new(ids[i], last[i], t.nkeys);
	}
	snap_keys_free(last, n);
	free(ids);
	return rc;
}

int
snap_sweeps_start(snap_sweeps *ws, snap_reader *r)
{
	int rc = TM_OK;

	for (int i = ws->n - 1; rc == TM_OK && i >= 0; i--) {
		snap_sweep *w = ws->items[i];
		snap_sweep_table t;
		bool finished = false;

		/* a table whose copy started again waits for its end */
		if (!sweep_idle(w) || !ws->lookup(ws->ctx, w->table_id, &t) || t.nkeys != w->nkeys)
			continue;
		rc = sweep_next(w, ws->sink, r, &t, &finished);
		if (finished)
			forget(ws, w);
	}
	return rc;
}

bool
snap_sweeps_busy(const snap_sweeps *ws)
{
	return ws->n > 0;
}

snap_window *
snap_sweeps_window(snap_sweeps *ws, int table_id)
{
	snap_sweep *w = find(ws, table_id);

	return w != NULL ? w->window : NULL;
}

static snap_sweep *
owner(const snap_sweeps *ws, const char *id)
{
	for (int i = 0; i < ws->n; i++)
		if (ws->items[i]->res != NULL && strcmp(ws->items[i]->res->id, id) == 0)
			return ws->items[i];
	return NULL;
}

bool
snap_sweeps_low(snap_sweeps *ws, const char *id, tm_lsn lsn)
{
	snap_sweep *w = owner(ws, id);

	if (w == NULL)
		return false;
	snap_window_free(w->window);
	w->window = snap_window_new(w->nkeys);
	w->low_lsn = lsn;
	return true;
}

int
snap_sweeps_high(snap_sweeps *ws, const char *id, const snap_commits *ring, bool *handled)
{
	snap_sweep *w = owner(ws, id);
	snap_sweep_table t;
	bool finished = false;
	int rc = TM_OK;

	*handled = w != NULL;
	if (w == NULL)
		return TM_OK;
	if (ws->lookup(ws->ctx, w->table_id, &t) && t.nkeys == w->nkeys)
		rc = sweep_high(w, ws->sink, ring, &t, &finished);
	else
		page_clear(w); /* copied again meanwhile: its end asks for a new sweep */
	if (finished)
		forget(ws, w);
	return rc;
}
