#include "snap_table.h"
#include "clock.h"
#include "xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cast.h"
#include "catalog.h"
#include "codec.h"
#include "key_order.h"
#include "log.h"
#include "pgconn.h"
#include "snap_range.h"


void
snap_table_free(snap_table *t)
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
	free(t->refused_definition);
	snap_ranges_free(t->ranges, t->nranges, t->nkeys);
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
target_order(sink *sk, const snap_table *t, snap_job *job)
{
	if (key_order_target(sk, t->target_schema, t->target_table, job->nkeys,
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
void
snap_table_target_types(sink *sk, snap_table *t, snap_job *job)
{
	const char *p[] = {t->target_schema, t->target_table};
	PGresult *r = NULL;

	if (sink_query(sk, "reading the target's column types",
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
	target_order(sk, t, job);
}

/* What target_types added to a job (the rest is borrowed from the table). */
void
snap_table_job_free(snap_job *job)
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
void
snap_table_load_checks(sink *sk, snap_table *t, const snap_job *job)
{
	char id[16];
	const char *p[] = {id};
	PGresult *r = NULL;

	checks_clear(t);
	snprintf(id, sizeof id, "%d", t->table_id);
	if (sink_query(sk, "reading the source types in force",
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

/* JSON array text (or NULL) into a new array of n new strings. */
char **
snap_table_keys_from_json(const char *text, int n)
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

snap_table *
snap_table_new(PGresult *r, int row)
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
	t->key_columns = snap_table_keys_from_json(PQgetvalue(r, row, 3), t->nkeys);
	t->applied_key = snap_table_keys_from_json(PQgetvalue(r, row, 4), t->nkeys);
	t->request = xstrdup(PQgetvalue(r, row, 5));
	t->rows = atoll(PQgetvalue(r, row, 6));
	t->chunks = atoi(PQgetvalue(r, row, 7));
	t->target_schema = xstrdup(PQgetvalue(r, row, 8));
	t->target_table = xstrdup(PQgetvalue(r, row, 9));
	t->done = strcmp(PQgetvalue(r, row, 10), "streaming") == 0;
	t->key_order = PQgetvalue(r, row, 11)[0] == 't' ? 1 : PQgetvalue(r, row, 11)[0] == 'f' ? 0 : -1;
	t->key_order_reason = PQgetisnull(r, row, 12) ? NULL : xstrdup(PQgetvalue(r, row, 12));
	t->started = clock_now_s();
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
	snap_table_ranges_clear(t); /* with as many key values as the old key had */
	snap_keys_free(t->key_columns, t->nkeys);
	snap_keys_free(t->applied_key, t->nkeys);
	snap_keys_free(t->key_types, t->nkeys); /* as many as the old key had */
	t->key_columns = t->applied_key = t->key_types = NULL;
	t->recording = false;
	t->nkeys = n;
	t->keyless = n == 0;
	t->key_columns = snap_table_keys_from_json(PQgetvalue(r, row, 3), n);
}

void
snap_table_refresh(snap_table *t, PGresult *r, int row)
{
	char **keys;

	renumber_keys(t, r, row);
	keys = snap_table_keys_from_json(PQgetvalue(r, row, 3), t->nkeys);
	replace_str(&t->schema, PQgetvalue(r, row, 1));
	replace_str(&t->name, PQgetvalue(r, row, 2));
	replace_str(&t->target_schema, PQgetvalue(r, row, 8));
	replace_str(&t->target_table, PQgetvalue(r, row, 9));
	if (keys != NULL) {
		snap_keys_free(t->key_columns, t->nkeys);
		t->key_columns = keys;
	}
}

static double
rate_of(const snap_table *t, double now)
{
	return t->rows / (now - t->started > 0.001 ? now - t->started : 0.001);
}

void
snap_table_report_line(const snap_table *t, double now)
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
void
snap_table_append_bar(strbuf *sb, const snap_table *t, double now)
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

char *
snap_table_keys_json(char *const *keys, int n)
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

snap_range *
snap_table_range(snap_table *t, int no)
{
	for (int i = 0; i < t->nranges; i++)
		if (t->ranges[i].no == no)
			return &t->ranges[i];
	return NULL;
}

bool
snap_table_ranges_done(const snap_table *t)
{
	for (int i = 0; i < t->nranges; i++)
		if (!t->ranges[i].done)
			return false;
	return true;
}

void
snap_table_ranges_clear(snap_table *t)
{
	snap_ranges_free(t->ranges, t->nranges, t->nkeys);
	t->ranges = NULL;
	t->nranges = 0;
}

/* The chunk's progress, in the same target transaction as its rows. A
 * newer `tidemark snapshot` request (another stamp) is left alone. A range
 * of several: its row in tidemark.snapshot_ranges too (snap_range.h). */
int
snap_table_save_progress(sink *sk, const snap_table *t, const snap_range *g,
                         const snap_result *res, long rows)
{
	bool table_done = res->final;

	for (int i = 0; g != NULL && i < t->nranges; i++)
		table_done &= t->ranges[i].done || &t->ranges[i] == g;
	return snap_range_save(sk, t->table_id, t->request, g != NULL ? g->no : -1, res->last_key,
	                       res->nkeys, rows, res->final, table_done, res->estimate);
}

int
snap_table_mark_gone(sink *sk, snap_table *t)
{
	char id[16];
	const char *p[] = {id};

	snprintf(id, sizeof id, "%d", t->table_id);
	t->done = true;
	return sink_command(sk, "marking a dropped table",
	                    "UPDATE tidemark.tables SET state = 'dropped' WHERE table_id = $1::int", 1,
	                    p) ?: sink_command(sk, "forgetting the rows to read again",
	                                       "DELETE FROM tidemark.snapshot_rereads"
	                                       " WHERE table_id = $1::int", 1, p);
}

bool
snap_table_chunk_done(snap_table *t, snap_range *g, const snap_result *res, long rows,
                      bool fast, metrics *m)
{
	t->rows += rows;
	t->chunks++;
	metrics_stage_chunk(m, t->schema, t->name, (uint64_t) rows);
	if (res->estimate > 0)
		t->estimate = res->estimate;
	if (res->last_key != NULL) {
		snap_keys_free(g->applied_key, t->nkeys);
		g->applied_key = snap_keys_copy(res->last_key, t->nkeys);
	}
	log_debug("snapshot of %s.%s: chunk %d applied (range %d), %ld rows (%s)", t->schema,
	          t->name, t->chunks, g->no, rows, fast ? "COPY" : "staged upsert");
	g->done |= res->final;
	if (!snap_table_ranges_done(t))
		return false;
	t->done = true;
	log_status_line(NULL);
	log_info("snapshot of %s.%s done: %lld rows in %d chunks%s, %.0f rows/s", t->schema, t->name,
	         t->rows, t->chunks, t->nranges > 1 ? " of several key ranges" : "",
	         t->rows / (clock_now_s() - t->started + 1e-9));
	return true;
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
quarantine_row(const snap_table_sink *ts, const snap_table *t, const snap_chunk *c,
               const char **f, const size_t *fl, const char *why)
{
	json_t *key = fields_json(c, f, fl, true), *row = fields_json(c, f, fl, false);
	char *kt = json_dumps(key, JSON_COMPACT), *rt = json_dumps(row, JSON_COMPACT);
	char table[256];
	int rc;

	snprintf(table, sizeof table, "%s.%s", t->schema, t->name);
	rc = catalog_quarantine(ts->sink, ts->slot, t->table_id, table, t->low_lsn, "snapshot", kt,
	                        rt, why);
	metrics_stage(ts->metrics, METRICS_QUARANTINED, 1);
	free(kt);
	free(rt);
	json_decref(key);
	json_decref(row);
	return rc;
}

/* Rows (COPY text) whose values all fit the target go to out; the others
 * to quarantine. Returns the rows kept, or -1. */
long
snap_table_filter_misfits(const snap_table_sink *ts, const snap_table *t, const snap_chunk *c,
                          const strbuf *rows, strbuf *out)
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
			if (quarantine_row(ts, t, c, f, fl, why) != TM_OK) {
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

/* The copy's comparison of the key's order (res->by_keys) goes to the
 * catalog when the catalog says otherwise, in the chunk's transaction; it
 * is logged then (catalog_set_key_order). */
int
snap_table_record_key_order(sink *sk, snap_table *t, const snap_result *res)
{
	strbuf name = STRBUF_INIT;
	int rc;

	if (t->key_order == (res->by_keys ? 0 : 1) &&
	    (!res->by_keys || (t->key_order_reason != NULL &&
	                       strcmp(t->key_order_reason, res->order_note) == 0)))
		return TM_OK;
	strbuf_append_qualified(&name, t->schema, t->name);
	rc = catalog_set_key_order(sk, t->table_id, strbuf_str(&name),
	                           res->by_keys ? res->order_note : NULL);
	strbuf_free(&name);
	t->key_order = res->by_keys ? 0 : 1;
	free(t->key_order_reason);
	t->key_order_reason = res->by_keys ? xstrdup(res->order_note) : NULL;
	return rc;
}
