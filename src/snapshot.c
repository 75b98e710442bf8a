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

#include "cast.h"
#include "catalog.h"
#include "codec.h"
#include "key_order.h"
#include "log.h"
#include "pgconn.h"
#include "snap_keyless.h"
#include "snap_load.h"
#include "snap_commits.h"
#include "snap_reader.h"
#include "snap_sweep.h"

#define POLL_INTERVAL_S 2.0
/* Keys read again in one read, at most: their rows are held in memory. */
#define REREAD_MAX 100

/* A table being copied. */
typedef struct snap_table {
	int table_id;
	char *schema;            /* owned, like every string here */
	char *name;
	char *target_schema;
	char *target_table;
	int nkeys;
	char **key_columns;
	char **key_types;        /* owned: the key columns' types on the target (may be NULL) */
	int nkey_types;          /* key_types' length (the key may change meanwhile) */
	char **applied_key;      /* the last key applied on the target */
	char *request;           /* snapshot_requested_at as text, "" if none */
	long generation;
	int key_order;           /* what the catalog says of the key's order on the target
	                          * (key_order.h): 1 alike, 0 not, -1 not known */
	char *key_order_reason;  /* owned: why not (NULL when alike or not known) */
	bool done;
	bool restart;            /* read again from applied_key at the next poll */
	bool keyless;            /* no key: copied in one read (snap_keyless.h) */
	bool recording;          /* keyless: between the watermarks of its read */
	snap_commits *at_low;    /* owned: the recent commits as the chunk's (or the
	                          * keyless read's) low watermark met them, while its
	                          * window is open: however many commits come before its
	                          * high watermark, those before the low one stay known */
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
	/* rows to read again by key (tidemark.snapshot_rereads) */
	char **reread_keys;      /* owned: nreread keys of nkeys values, from the last scan */
	int nreread;
	snap_result *reread;     /* owned: read, waiting for its high watermark */
	char *reread_json;       /* owned: its keys, a JSON array of arrays */
	snap_window *reread_window; /* owned: open between its watermarks */
	snap_commits *reread_at_low; /* owned: the recent commits as its low watermark met them */
	tm_lsn reread_low_lsn;
} snap_table;

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
	snap_keys_free(t->key_types, t->nkey_types);
	free(t->key_order_reason);
	snap_keys_free(t->applied_key, t->nkeys);
	free(t->request);
	snap_keys_free(t->check_cols, t->nchecks);
	free(t->check_src);
	free(t->check_tgt);
	snap_window_free(t->window);
	snap_keys_free(t->reread_keys, t->nreread * t->nkeys);
	snap_reader_release(NULL, t->reread);
	free(t->reread_json);
	snap_window_free(t->reread_window);
	free(t->at_low);
	free(t->reread_at_low);
	free(t);
}

/* How the target orders each key column (codec.h), for the reader to
 * compare with the source. On failure the job goes without: the reader
 * then matches the chunk's rows by key, the safe way. */
static void
target_order(snapshot *s, const snap_table *t, snap_job *job)
{
	if (key_order_target(s->sink, t->target_schema, t->target_table, job->nkeys,
	                     job->key_columns, &job->target_order) != TM_OK)
		job->target_order = NULL;
}

/* Each key column's base type on the target (codec.h), for the key
 * comparisons of the load's statements (snap_load.h). */
static void
target_key_types(snap_table *t, PGresult *r)
{
	snap_keys_free(t->key_types, t->nkey_types);
	t->key_types = xcalloc((size_t) t->nkeys + 1, sizeof(char *));
	t->nkey_types = t->nkeys;
	for (int k = 0; k < t->nkeys; k++)
		for (int i = 0; i < PQntuples(r) && t->key_types[k] == NULL; i++)
			if (strcmp(PQgetvalue(r, i, 0), t->key_columns[k]) == 0) {
				strbuf type = STRBUF_INIT;

				strbuf_append_qualified(&type, PQgetvalue(r, i, 2), PQgetvalue(r, i, 3));
				t->key_types[k] = strbuf_steal(&type);
			}
}

/* The target table's columns and types, for the reader's choice of the
 * binary row format, and how it orders the key. On failure the job simply
 * goes without (text rows, rows matched by key). */
static void
target_types(snapshot *s, snap_table *t, snap_job *job)
{
	const char *p[] = {t->target_schema, t->target_table};
	PGresult *r = NULL;

	if (sink_query(s->sink, "reading the target's column types",
	               "SELECT a.attname, tidemark.format_type(a.atttypid, a.atttypmod),"
	               CODEC_KEY_TYPE_COLUMNS " FROM pg_attribute a"
	               " WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass"
	               " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", 2, p, &r) != TM_OK)
		return;
	target_key_types(t, r);
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
	target_order(s, t, job);
}

/* What target_types added to a job (the rest is borrowed from the table). */
static void
job_free_target(snap_job *job)
{
	snap_keys_free(job->target_names, job->ntarget);
	snap_keys_free(job->target_types, job->ntarget);
	snap_keys_free(job->target_order, job->nkeys);
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
	               /* the type the target column is to have: the source's, or
	                * its counterpart (a type in the pipeline's target schema) */
	               "SELECT c->>'name', coalesce(c->>'target_type', c->>'type')"
	               " FROM tidemark.schema_versions v,"
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

static void submit_now(snapshot *s, snap_table *t);

/* A table without a key is staged through a target connection of the
 * reader's own, which sees only what is committed: its target table (new,
 * or altered by the transaction that asked for the copy) must be. Its
 * copy starts once no target transaction is open (snapshot_poll). */
static void
submit(snapshot *s, snap_table *t)
{
	if (t->keyless && s->apply != NULL && apply_in_transaction(s->apply)) {
		snap_window_free(t->window);
		t->window = NULL;
		t->recording = false;
		t->restart = true;
		t->generation++; /* what was read before is superseded now */
		return;
	}
	submit_now(s, t);
}

static void
submit_now(snapshot *s, snap_table *t)
{
	snap_job job = {.table_id = t->table_id, .generation = ++t->generation, .schema = t->schema,
	                .name = t->name, .nkeys = t->nkeys, .key_columns = t->key_columns,
	                .start_key = t->applied_key, .chunk_rows = s->cfg.chunk_rows,
	                .chunk_bytes = s->cfg.chunk_bytes, .target_schema = t->target_schema,
	                .target_table = t->target_table};

	target_types(s, t, &job);
	load_checks(s, t, &job);
	snap_window_free(t->window);
	t->window = NULL;
	t->recording = false;
	t->restart = false;
	snap_reader_submit(s->reader, &job);
	job_free_target(&job);
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
	t->keyless = t->nkeys == 0;
	json_decref(keys);
	t->key_columns = keys_from_json(PQgetvalue(r, row, 3), t->nkeys);
	t->applied_key = keys_from_json(PQgetvalue(r, row, 4), t->nkeys);
	t->request = xstrdup(PQgetvalue(r, row, 5));
	t->rows = atoll(PQgetvalue(r, row, 6));
	t->chunks = atoi(PQgetvalue(r, row, 7));
	t->target_schema = xstrdup(PQgetvalue(r, row, 8));
	t->target_table = xstrdup(PQgetvalue(r, row, 9));
	t->done = strcmp(PQgetvalue(r, row, 10), "streaming") == 0;
	t->key_order = PQgetvalue(r, row, 11)[0] == 't' ? 1 : PQgetvalue(r, row, 11)[0] == 'f' ? 0 : -1;
	t->key_order_reason = PQgetisnull(r, row, 12) ? NULL : xstrdup(PQgetvalue(r, row, 12));
	t->started = clock_now_s();
	s->tables = realloc(s->tables, sizeof(snap_table *) * (size_t) (s->ntables + 1));
	if (s->tables == NULL)
		abort();
	s->tables[s->ntables++] = t;
	if (!t->done && t->keyless)
		log_info("snapshot of %s.%s starts: the table has no key, so it is read in one piece; "
		         "its changes meanwhile are kept and applied after the read", t->schema,
		         t->name);
	else if (!t->done)
		log_info("snapshot of %s.%s %s", t->schema, t->name,
		         t->applied_key ? "resumes after the last chunk copied" : "starts");
	return t;
}

static void
replace_str(char **field, const char *value)
{
	if (strcmp(*field, value) != 0) {
		free(*field);
		*field = xstrdup(value);
	}
}

/* The names as the catalog has them now: a table renamed or moved on the
 * source (and so on the target) is read and loaded under its new names. */
/* The key changed its number of columns (a key added to a table without
 * one, or dropped): what was kept per key column goes; the copy starts
 * again (the key change asked for it). */
static void
renumber_keys(snap_table *t, PGresult *r, int row)
{
	json_t *keys = json_loads(PQgetvalue(r, row, 3), 0, NULL);
	int n = (int) json_array_size(keys);

	json_decref(keys);
	if (n == t->nkeys)
		return;
	snap_keys_free(t->reread_keys, t->nreread * t->nkeys);
	t->reread_keys = NULL;
	t->nreread = 0;
	snap_keys_free(t->key_columns, t->nkeys);
	snap_keys_free(t->applied_key, t->nkeys);
	snap_keys_free(t->key_types, t->nkeys); /* as many as the old key had */
	t->key_columns = t->applied_key = t->key_types = NULL;
	snap_window_free(t->window);
	t->window = NULL;
	t->recording = false;
	t->nkeys = n;
	t->keyless = n == 0;
	t->key_columns = keys_from_json(PQgetvalue(r, row, 3), n);
}

static void
refresh_names(snap_table *t, PGresult *r, int row)
{
	char **keys;

	renumber_keys(t, r, row);
	keys = keys_from_json(PQgetvalue(r, row, 3), t->nkeys);
	replace_str(&t->schema, PQgetvalue(r, row, 1));
	replace_str(&t->name, PQgetvalue(r, row, 2));
	replace_str(&t->target_schema, PQgetvalue(r, row, 8));
	replace_str(&t->target_table, PQgetvalue(r, row, 9));
	if (keys != NULL) {
		snap_keys_free(t->key_columns, t->nkeys);
		t->key_columns = keys;
	}
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
	char **key = keys_from_json(json, t->nkeys);

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

	target_types(s, t, &job);
	load_checks(s, t, &job);
	rc = snap_reader_reread(s->reader, &job, &t->reread);
	job_free_target(&job);
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
		snap_window_free(t->window);
		t->window = NULL;
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
	bool asked = false;
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
	for (int i = 0; i < PQntuples(r); i++) {
		snap_table *t = find(s, atoi(PQgetvalue(r, i, 0)));

		if (t == NULL) {
			if (!(t = track(s, r, i))->done)
				submit(s, t);
			asked = true;
			continue;
		}
		refresh_names(t, r, i);
		if (strcmp(t->request, PQgetvalue(r, i, 5)) != 0) {
			rerequested(s, t, r, i);
			asked = true;
		}
	}
	PQclear(r);
	/* a copy asked for may come with a new mode (`tidemark mode`): the
	 * apply writes the table's changes in it from here on */
	if (asked && s->apply != NULL && (rc = apply_reload_tables(s->apply)) != TM_OK)
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

static double
rate_of(const snap_table *t, double now)
{
	return t->rows / (now - t->started > 0.001 ? now - t->started : 0.001);
}

static void
report_line(const snap_table *t, double now)
{
	double rate = rate_of(t, now);

	if (t->keyless)
		log_info("snapshot of %s.%s: one read of the whole table (no key to page by), %.0f s "
		         "so far", t->schema, t->name, now - t->started);
	else if (t->estimate > 0)
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
		if (!s->tables[i]->done && s->tables[i]->keyless)
			strbuf_appendf(&sb, "%s%s.%s [one read] %.0f s", sb.len ? "  " : "",
			               s->tables[i]->schema, s->tables[i]->name, now - s->tables[i]->started);
		else if (!s->tables[i]->done && s->tables[i]->chunks > 0)
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
		table_free(s->tables[i]);
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
	if (clock_now_s() - s->last_poll >= POLL_INTERVAL_S) {
		s->reread_asked = false; /* the scan sees the requests, committed or not */
		rc = scan_catalog(s);
		s->last_poll = clock_now_s();
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
		snap_window_free(t->window);
		t->window = NULL;
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

	return t != NULL && (t->window != NULL || t->reread_window != NULL ||
	                     snap_sweeps_window(((snapshot *) ctx)->sweeps, table_id) != NULL);
}

static void
hook_row(void *ctx, int table_id, const char *const *key, const size_t *key_len)
{
	snap_table *t = find(ctx, table_id);
	snap_window *w;

	if (t != NULL && t->window != NULL)
		snap_window_note_row(t->window, key, key_len);
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

	if (t != NULL && t->window != NULL)
		snap_window_note_partial(t->window, key, key_len, n, names, values, value_len);
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

	if (t != NULL && t->window != NULL)
		snap_window_note_truncate(t->window);
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
		" history_behind = CASE WHEN $4::bool AND history_behind"
		"   THEN tidemark.history_caught_up(history_relid) ELSE history_behind END,"
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
	                    p) ?: sink_command(s->sink, "forgetting the rows to read again",
	                                       "DELETE FROM tidemark.snapshot_rereads"
	                                       " WHERE table_id = $1::int", 1, p);
}

static void
chunk_done(snapshot *s, snap_table *t, const snap_result *res, long rows, bool fast)
{
	t->rows += rows;
	t->chunks++;
	metrics_stage_chunk(s->cfg.metrics, t->schema, t->name, (uint64_t) rows);
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
	metrics_stage(s->cfg.metrics, METRICS_QUARANTINED, 1);
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

/* The rows of a chunk (or a reread) that survive its window, loaded into
 * the target; *n receives their count. */
static int
load_rows(snapshot *s, snap_table *t, const snap_result *res, snap_window *w, bool upsert_only,
          long *n, bool *fast)
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
		*n = filter_misfits(s, t, res->chunk, rows, &fitting);
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
		                      .upsert_only = upsert_only, .by_keys = res->by_keys,
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

/* The copy's comparison of the key's order (res->by_keys) goes to the
 * catalog when the catalog says otherwise, in the chunk's transaction; it
 * is logged then (catalog_set_key_order). */
static int
record_key_order(snapshot *s, snap_table *t, const snap_result *res)
{
	strbuf name = STRBUF_INIT;
	int rc;

	if (t->key_order == (res->by_keys ? 0 : 1) &&
	    (!res->by_keys || (t->key_order_reason != NULL &&
	                       strcmp(t->key_order_reason, res->order_note) == 0)))
		return TM_OK;
	strbuf_append_qualified(&name, t->schema, t->name);
	rc = catalog_set_key_order(s->sink, t->table_id, strbuf_str(&name),
	                           res->by_keys ? res->order_note : NULL);
	strbuf_free(&name);
	t->key_order = res->by_keys ? 0 : 1;
	free(t->key_order_reason);
	t->key_order_reason = res->by_keys ? xstrdup(res->order_note) : NULL;
	return rc;
}

static int
apply_chunk(snapshot *s, snap_table *t, snap_result *res)
{
	bool fast = false;
	long n = 0;
	int rc;

	rc = record_key_order(s, t, res);
	if (rc == TM_OK)
		rc = load_rows(s, t, res, t->window, false, &n, &fast);

	if (rc == TM_OK)
		rc = save_progress(s, t, res, n);
	/* copied again by keys: what the chunks could not remove, a sweep does */
	if (rc == TM_OK && res->final && res->by_keys && t->request[0] != '\0') {
		rc = snap_sweep_request(s->sink, t->table_id);
		snapshot_poll_soon(s); /* busy until the scan takes the sweep */
	}
	if (rc == TM_OK)
		chunk_done(s, t, res, n, fast);
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
	else if ((rc = load_rows(s, t, res, t->reread_window, true, &n, &fast)) == TM_OK)
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
		rc = save_progress(s, t, res, (long) out.rows);
	if (rc == TM_OK)
		keyless_done(s, t, &out);
	log_debug("snapshot load of %s: %lld rows in %.1f ms", display, out.rows,
	          (clock_now_s() - t0) * 1000);
	return rc;
}

/* A read given up for columns the target lacked: they must be there now. */
static int
keyless_target_ready(snapshot *s, const snap_table *t, const snap_result *res)
{
	char display[256];

	snprintf(display, sizeof display, "%s.%s", t->schema, t->name);
	return snap_keyless_check_target(s->sink, t->table_id, t->target_schema, t->target_table,
	                                 res->chunk->ncols, (const char *const *) res->chunk->colnames,
	                                 display);
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
	if (t == NULL || t->window == NULL || strcmp(t->wm_id, id) != 0 ||
	    res->generation != t->generation) {
		/* a chunk of an older generation: already superseded */
	} else if (res->table_gone)
		rc = mark_gone(s, t);
	else if (columns_changed(s, res)) {
		log_info("snapshot of %s.%s: the table's columns changed during a chunk; it is read "
		         "again", t->schema, t->name);
		snapshot_restart(s, t->table_id);
	} else if (missed_commit(&t->at_low, res, t->low_lsn)) {
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

static int
low_watermark(snapshot *s, const char *id, tm_lsn lsn)
{
	int table_id;
	long generation;
	snap_table *t;

	if ((t = reread_owner(s, id)) != NULL) {
		snap_window_free(t->reread_window);
		t->reread_window = snap_window_new(t->nkeys);
		t->reread_low_lsn = lsn;
		keep_commits(s, &t->reread_at_low);
		return TM_OK;
	}
	if (snap_sweeps_low(s->sweeps, id, lsn))
		return TM_OK;
	if (!snap_reader_issued(s->reader, id, &table_id, &generation))
		return TM_OK; /* another process's, or an earlier run's */
	t = find(s, table_id);
	if (t == NULL || t->done || generation != t->generation)
		return TM_OK;
	if (t->keyless)
		return keyless_low(s, t, id, lsn);
	snap_window_free(t->window);
	t->window = snap_window_new(t->nkeys);
	snprintf(t->wm_id, sizeof t->wm_id, "%s", id);
	t->low_lsn = lsn;
	keep_commits(s, &t->at_low);
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
