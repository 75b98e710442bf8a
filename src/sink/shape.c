/*
 * shape.c: table modes and metadata columns on the target (shape.h).
 */
#include "shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "exitcode.h"
#include "log.h"
#include "pgoutput.h"
#include "strbuf.h"
#include "xalloc.h"

static const char *const reserved[] = {"tidemark_lsn", "tidemark_synced_at", "tidemark_deleted_at",
                                       "tidemark_op",  "tidemark_seq",       "tidemark_commit_time"};

bool
shape_mode_parse(const char *text, unsigned *mode)
{
	static const struct {
		const char *name;
		unsigned mode;
	} modes[] = {{"mirror", 0},
	             {"history", SHAPE_HISTORY},
	             {"soft-delete", SHAPE_SOFT_DELETE},
	             {"history,soft-delete", SHAPE_HISTORY | SHAPE_SOFT_DELETE},
	             {"soft-delete,history", SHAPE_HISTORY | SHAPE_SOFT_DELETE}};

	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		if (strcmp(text, modes[i].name) == 0) {
			*mode = modes[i].mode;
			return true;
		}
	return false;
}

const char *
shape_mode_name(unsigned mode)
{
	switch (mode & (SHAPE_HISTORY | SHAPE_SOFT_DELETE)) {
	case SHAPE_HISTORY:
		return "history";
	case SHAPE_SOFT_DELETE:
		return "soft-delete";
	case SHAPE_HISTORY | SHAPE_SOFT_DELETE:
		return "history,soft-delete";
	default:
		return "mirror";
	}
}

unsigned
shape_mode_of(const catalog_table *t)
{
	return (t->history ? SHAPE_HISTORY : 0) | (t->soft_delete ? SHAPE_SOFT_DELETE : 0);
}

bool
shape_reserved_column(const char *name)
{
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		if (strcmp(name, reserved[i]) == 0)
			return true;
	return false;
}

bool
shape_mirror_column(unsigned mode, bool metadata, const char *name)
{
	if ((mode & SHAPE_SOFT_DELETE) != 0 && strcmp(name, SHAPE_DELETED_AT) == 0)
		return true;
	return metadata && (strcmp(name, "tidemark_lsn") == 0 ||
	                    strcmp(name, "tidemark_synced_at") == 0);
}

bool
shape_fits(const tabledef *def, unsigned mode, bool metadata)
{
	if (mode == 0 && !metadata)
		return true;
	if ((mode & SHAPE_HISTORY) != 0 && tabledef_nkeys(def) == 0) {
		log_error("table %s.%s has no key, so it cannot keep a history (%s). Fix: give it a "
		          "primary key on the source, or replicate it as a mirror",
		          def->schema, def->name, shape_mode_name(mode));
		return false;
	}
	if ((mode & SHAPE_SOFT_DELETE) != 0 && tabledef_nkeys(def) == 0) {
		log_error("table %s.%s has no key, so its deleted rows cannot be kept marked (%s). Fix: "
		          "give it a primary key on the source, or replicate it as a mirror",
		          def->schema, def->name, shape_mode_name(mode));
		return false;
	}
	for (int i = 0; i < def->ncols; i++)
		if (shape_reserved_column(def->cols[i].name)) {
			log_error("table %s.%s has a column named %s, which tidemark's own columns use in "
			          "mode %s%s. Fix: rename the column on the source, or replicate the table "
			          "as a plain mirror", def->schema, def->name, def->cols[i].name,
			          shape_mode_name(mode), metadata ? " with metadata columns" : "");
			return false;
		}
	return true;
}

static void
log_done(int table_id, const char *done)
{
	if (done != NULL && done[0] != '\0')
		log_info("target: table %d: %s", table_id, done);
}

int
shape_sync(sink *s, int table_id, const char *const *renames, int n, char **done)
{
	strbuf list = STRBUF_INIT;
	char id[16];
	const char *p[] = {id, NULL};
	PGresult *r = NULL;
	int rc;

	snprintf(id, sizeof id, "%d", table_id);
	/* a text[] literal of the renames, each element quoted */
	strbuf_appendc(&list, '{');
	for (int i = 0; i < 2 * n; i++) {
		strbuf_append(&list, i > 0 ? ",\"" : "\"");
		for (const char *c = renames[i]; *c != '\0'; c++) {
			if (*c == '"' || *c == '\\')
				strbuf_appendc(&list, '\\');
			strbuf_appendc(&list, *c);
		}
		strbuf_appendc(&list, '"');
	}
	strbuf_appendc(&list, '}');
	p[1] = strbuf_str(&list);
	rc = sink_query(s, "bringing a table's history and columns in line with its mode",
	                "SELECT CASE WHEN mode <> 'mirror' OR metadata_columns"
	                " THEN tidemark.shape_sync(table_id, $2::text[]) ELSE '' END"
	                " FROM tidemark.tables WHERE table_id = $1::int",
	                2, p, &r);
	if (rc == TM_OK && PQntuples(r) == 1) {
		log_done(table_id, PQgetvalue(r, 0, 0));
		if (done != NULL)
			*done = xstrdup(PQgetvalue(r, 0, 0));
	} else if (done != NULL)
		*done = xstrdup("");
	PQclear(r);
	strbuf_free(&list);
	return rc;
}

int
shape_sync_named(sink *s, const char *slot, const char *schema, const char *name)
{
	const char *p[] = {slot, schema, name};
	PGresult *r = NULL;
	int rc = sink_query(s, "bringing a table's history and columns in line with its mode",
	                    "SELECT table_id, tidemark.shape_sync(table_id) FROM tidemark.tables"
	                    " WHERE slot_name = $1 AND source_schema = $2 AND source_table = $3"
	                    " AND state <> 'dropped' AND (mode <> 'mirror' OR metadata_columns)",
	                    3, p, &r);

	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++)
		log_done(atoi(PQgetvalue(r, i, 0)), PQgetvalue(r, i, 1));
	PQclear(r);
	return rc;
}

void
shape_loaded_free(shape_loaded *l)
{
	for (int i = 0; l->cols != NULL && i < l->shape.nhist; i++)
		free(l->cols[i]);
	free(l->cols);
	free(l->text);
	free(l->history);
	memset(l, 0, sizeof *l);
}

/* json: the history's columns; text_json: those of them of text where the
 * mirror's column is not (target migration 022) */
static void
load_columns(shape_loaded *l, const char *json, const char *text_json)
{
	json_t *arr = json_loads(json, JSON_DECODE_ANY, NULL);
	json_t *text = json_loads(text_json, JSON_DECODE_ANY, NULL);
	size_t i, j;
	json_t *v, *w;

	l->cols = xcalloc(json_array_size(arr) + 1, sizeof(char *));
	l->text = xcalloc(json_array_size(arr) + 1, sizeof(bool));
	json_array_foreach(arr, i, v) {
		const char *name = json_string_value(v) ? json_string_value(v) : "";

		json_array_foreach(text, j, w)
			l->text[l->shape.nhist] |= json_is_string(w) && strcmp(json_string_value(w), name) == 0;
		l->cols[l->shape.nhist++] = xstrdup(name);
	}
	json_decref(arr);
	json_decref(text);
}

int
shape_load(sink *s, int table_id, shape_loaded *out)
{
	char id[16];
	const char *p[] = {id};
	PGresult *r = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	snprintf(id, sizeof id, "%d", table_id);
	rc = sink_query(s, "reading a table's mode",
	                "SELECT mode, metadata_columns, target_schema, target_table,"
	                " array_to_json(tidemark.history_columns(table_id))::text,"
	                " (SELECT relname FROM pg_class WHERE oid = history_relid), history_behind,"
	                " array_to_json(tidemark.history_text_columns(table_id))::text"
	                " FROM tidemark.tables WHERE table_id = $1::int", 1, p, &r);
	if (rc != TM_OK || PQntuples(r) != 1) {
		PQclear(r);
		return rc;
	}
	if (!shape_mode_parse(PQgetvalue(r, 0, 0), &out->mode))
		out->mode = 0;
	out->shape.metadata = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	out->shape.soft_delete = (out->mode & SHAPE_SOFT_DELETE) != 0;
	out->shaped = out->mode != 0 || out->shape.metadata;
	out->history_behind = strcmp(PQgetvalue(r, 0, 6), "t") == 0;
	if ((out->mode & SHAPE_HISTORY) != 0 && (PQgetisnull(r, 0, 4) || PQgetisnull(r, 0, 5))) {
		log_error("target: table %s.%s is in history mode but its history table is missing. "
		          "Fix: `tidemark mode` with the table's mode makes it again",
		          PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3));
		rc = TM_EXIT_TARGET;
	} else if ((out->mode & SHAPE_HISTORY) != 0) {
		out->history = xstrdup(PQgetvalue(r, 0, 5));
		out->shape.history = out->history;
		load_columns(out, PQgetvalue(r, 0, 4), PQgetvalue(r, 0, 7));
		out->shape.hist_cols = (const char *const *) out->cols;
		out->shape.hist_text = out->text;
	}
	PQclear(r);
	return rc;
}

/* (SHAPE_TIME_TEXT_MAX: room for any int the compiler may think the
 * fields hold, -Wformat-truncation) */
void
shape_format_commit_time(long long pg_us, char *out, size_t size)
{
	int64_t unix_us = pgoutput_timestamp_to_unix_us((pg_timestamp) pg_us);
	time_t secs = (time_t) (unix_us / 1000000);
	long us = (long) (unix_us % 1000000);
	struct tm tm;

	if (us < 0) {
		us += 1000000;
		secs--;
	}
	gmtime_r(&secs, &tm);
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld+00:00", tm.tm_year + 1900,
	         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
}

int
shape_set_position(sink *s, tm_lsn lsn, long long commit_time)
{
	static const char *const sql = "SELECT set_config('tidemark.lsn', $1, true),"
	                               " set_config('tidemark.commit_time', $2, true)";
	char l[LSN_TEXT_MAX], ts[SHAPE_TIME_TEXT_MAX];
	const char *p[] = {lsn_format(lsn, l), ts};

	shape_format_commit_time(commit_time, ts, sizeof ts);
	return sink_send(s, sink_stmt_get(s, sql, 2), p, NULL);
}
