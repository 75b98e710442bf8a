#include "snap_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "log.h"
#include "pgconn.h"
#include "shape.h"
#include "xalloc.h"

/* The base type key column k and its values are compared in (codec.h). */
static const char *
key_type(const snap_load_chunk *c, int k)
{
	return c->key_types != NULL ? c->key_types[k] : NULL;
}

/* Without a key on this side, the range's bound on the first key column:
 * WHERE k1 > $n (side 0) or k1 <= $n (side 1). */
static int
append_bound(strbuf *sql, const snap_load_chunk *c, const char *alias, const char **params,
             int side, int n)
{
	const char *v = side == 0 ? c->range_lower : c->range_upper;

	if (v == NULL)
		return n;
	strbuf_append(sql, n == 0 ? " WHERE " : " AND ");
	codec_append_key_operand(sql, alias, c->key_columns[0], key_type(c, 0));
	strbuf_append(sql, side == 0 ? " > " : " <= ");
	params[n] = v;
	codec_append_key_param(sql, ++n, key_type(c, 0));
	return n;
}

/* WHERE (k1, k2) > ($1, $2) AND (k1, k2) <= ($3, $4), either side optional
 * (or a range's bound instead). alias: a table alias to qualify the key
 * columns with, or NULL. */
static int
append_range(strbuf *sql, const snap_load_chunk *c, const char *alias, const char **params)
{
	int n = 0;

	for (int side = 0; side < 2; side++) {
		char *const *key = side == 0 ? c->prev_key : c->last_key;

		if (key == NULL) {
			n = append_bound(sql, c, alias, params, side, n);
			continue;
		}
		strbuf_append(sql, n == 0 ? " WHERE (" : " AND (");
		for (int k = 0; k < c->nkeys; k++) {
			if (k > 0)
				strbuf_append(sql, ", ");
			codec_append_key_operand(sql, alias, c->key_columns[k], key_type(c, k));
		}
		strbuf_append(sql, side == 0 ? ") > (" : ") <= (");
		for (int k = 0; k < c->nkeys; k++) {
			params[n] = key[k];
			strbuf_append(sql, k > 0 ? ", " : "");
			codec_append_key_param(sql, ++n, key_type(c, k));
		}
		strbuf_appendc(sql, ')');
	}
	return n;
}

static int
range_has_rows(sink *s, const snap_load_chunk *c, bool *has)
{
	const char **params = calloc((size_t) c->nkeys * 2 + 1, sizeof(char *));
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	int n, rc;

	if (params == NULL)
		abort();
	strbuf_append(&sql, "SELECT EXISTS (SELECT 1 FROM ");
	strbuf_append_qualified(&sql, c->target_schema, c->target_table);
	n = append_range(&sql, c, NULL, params);
	strbuf_appendc(&sql, ')');
	rc = sink_query(s, "checking the target range of a chunk", sql.data, n, params, &r);
	if (rc == TM_OK)
		*has = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	strbuf_free(&sql);
	free(params);
	return rc;
}

static void
append_columns(strbuf *sql, const snap_chunk *ch, const char *alias)
{
	for (int i = 0; i < ch->ncols; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		if (alias != NULL)
			strbuf_appendf(sql, "%s.", alias);
		strbuf_append_ident(sql, ch->colnames[i]);
	}
}

/* COPY ... FROM STDIN of rows in the given format, with the binary
 * header and trailer around them when binary. */
static int
copy_into(sink *s, const char *sql, snap_chunk_format format, const strbuf *rows)
{
	strbuf frame = STRBUF_INIT;
	int rc = sink_copy_begin(s, sql);

	snap_chunk_copy_header(format, &frame);
	if (rc == TM_OK && frame.len > 0)
		rc = sink_copy_data(s, frame.data, (int) frame.len);
	/* in pieces: libpq copies each into its buffer */
	for (size_t off = 0; rc == TM_OK && off < rows->len; off += 1 << 20) {
		size_t n = rows->len - off < (1u << 20) ? rows->len - off : 1u << 20;

		rc = sink_copy_data(s, rows->data + off, (int) n);
	}
	strbuf_reset(&frame);
	snap_chunk_copy_trailer(format, &frame);
	if (rc == TM_OK && frame.len > 0)
		rc = sink_copy_data(s, frame.data, (int) frame.len);
	if (rc == TM_OK)
		rc = sink_copy_end(s);
	strbuf_free(&frame);
	return rc;
}

static void
append_copy_from(strbuf *sql, const snap_load_chunk *c)
{
	strbuf_append(sql, " (");
	append_columns(sql, c->chunk, NULL);
	strbuf_append(sql, ") FROM STDIN");
	if (c->chunk->format == SNAP_CHUNK_BINARY)
		strbuf_append(sql, " (FORMAT binary)");
}

static int
load_direct(sink *s, const snap_load_chunk *c)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	strbuf_append(&sql, "COPY ");
	strbuf_append_qualified(&sql, c->target_schema, c->target_table);
	append_copy_from(&sql, c);
	rc = copy_into(s, sql.data, c->chunk->format, c->rows);
	strbuf_free(&sql);
	return rc;
}

/* ---- the staging path ---- */

/* pg_temp."tidemark_<what>_<table id>" */
static void
temp_name(strbuf *sql, const snap_load_chunk *c, const char *what)
{
	char name[64];

	snprintf(name, sizeof name, "tidemark_%s_%d", what, c->table_id);
	strbuf_append(sql, "pg_temp.");
	strbuf_append_ident(sql, name);
}

static void
append_key_columns(strbuf *sql, const snap_load_chunk *c)
{
	for (int k = 0; k < c->nkeys; k++) {
		if (k > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, c->key_columns[k]);
	}
}

static int
temp_drop(sink *s, const snap_load_chunk *c, const char *what, bool if_exists)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	strbuf_append(&sql, if_exists ? "DROP TABLE IF EXISTS " : "DROP TABLE ");
	temp_name(&sql, c, what);
	rc = sink_command(s, "dropping a staging table", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
}

/* A staging table "what" with the target's column types: the chunk's
 * columns, or only the key's. */
static int
temp_create(sink *s, const snap_load_chunk *c, const char *what, bool keys_only)
{
	strbuf sql = STRBUF_INIT;
	int rc = temp_drop(s, c, what, true);

	strbuf_append(&sql, "CREATE TEMP TABLE ");
	temp_name(&sql, c, what);
	strbuf_append(&sql, " AS SELECT ");
	if (keys_only)
		append_key_columns(&sql, c);
	else
		append_columns(&sql, c->chunk, NULL);
	strbuf_append(&sql, " FROM ");
	strbuf_append_qualified(&sql, c->target_schema, c->target_table);
	strbuf_append(&sql, " WITH NO DATA");
	if (rc == TM_OK)
		rc = sink_command(s, "creating a staging table", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
}


/* COPY keys (text lines of the key values) into the staging table what. */
static int
temp_fill_keys(sink *s, const snap_load_chunk *c, const char *what, const strbuf *keys)
{
	strbuf sql = STRBUF_INIT;
	int rc = TM_OK;

	strbuf_append(&sql, "COPY ");
	temp_name(&sql, c, what);
	strbuf_append(&sql, " (");
	append_key_columns(&sql, c);
	strbuf_append(&sql, ") FROM STDIN");
	if (keys->len > 0)
		rc = copy_into(s, sql.data, SNAP_CHUNK_TEXT, keys);
	strbuf_free(&sql);
	return rc;
}

/* The staging tables: the chunk's rows, and the keys the stream touched
 * in the window, both with the target's column types. */
static int
stage_create(sink *s, const snap_load_chunk *c)
{
	int rc = temp_create(s, c, "stage", false);

	return rc == TM_OK ? temp_create(s, c, "touched", true) : rc;
}

static int
stage_fill(sink *s, const snap_load_chunk *c)
{
	strbuf sql = STRBUF_INIT, keys = STRBUF_INIT;
	int rc;

	strbuf_append(&sql, "COPY ");
	temp_name(&sql, c, "stage");
	append_copy_from(&sql, c);
	rc = copy_into(s, sql.data, c->chunk->format, c->rows);
	snap_window_keys_copy(c->window, &keys);
	if (rc == TM_OK)
		rc = temp_fill_keys(s, c, "touched", &keys);
	strbuf_free(&sql);
	strbuf_free(&keys);
	return rc;
}

static bool
is_key_column(const snap_chunk *ch, int i)
{
	for (int k = 0; k < ch->nkeys; k++)
		if (ch->key_idx[k] == i)
			return true;
	return false;
}

static int
stage_upsert(sink *s, const snap_load_chunk *c)
{
	strbuf sql = STRBUF_INIT;
	bool any = false;
	int rc;

	strbuf_append(&sql, "INSERT INTO ");
	strbuf_append_qualified(&sql, c->target_schema, c->target_table);
	strbuf_append(&sql, " (");
	append_columns(&sql, c->chunk, NULL);
	strbuf_append(&sql, ") SELECT ");
	append_columns(&sql, c->chunk, NULL);
	strbuf_append(&sql, " FROM ");
	temp_name(&sql, c, "stage");
	strbuf_append(&sql, " ON CONFLICT (");
	append_key_columns(&sql, c);
	strbuf_append(&sql, ") DO ");
	for (int i = 0; i < c->chunk->ncols; i++) {
		if (is_key_column(c->chunk, i))
			continue;
		strbuf_append(&sql, any ? ", " : "UPDATE SET ");
		strbuf_append_ident(&sql, c->chunk->colnames[i]);
		strbuf_append(&sql, " = EXCLUDED.");
		strbuf_append_ident(&sql, c->chunk->colnames[i]);
		any = true;
	}
	if (!any && c->shape != NULL) {
		strbuf_append(&sql, "UPDATE SET ");
		strbuf_append_ident(&sql, c->key_columns[0]);
		strbuf_append(&sql, " = EXCLUDED.");
		strbuf_append_ident(&sql, c->key_columns[0]);
		any = true;
	}
	if (!any)
		strbuf_append(&sql, "NOTHING");
	if (c->shape != NULL && c->shape->metadata)
		strbuf_append(&sql, ", tidemark_lsn = EXCLUDED.tidemark_lsn,"
		                    " tidemark_synced_at = EXCLUDED.tidemark_synced_at");
	if (c->shape != NULL && c->shape->soft_delete)
		strbuf_append(&sql, ", tidemark_deleted_at = NULL");
	rc = sink_command(s, "upserting a chunk", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
}

/* AND [NOT] EXISTS (SELECT 1 FROM <temp> s WHERE s.k = t.k AND ...) */
static void
append_in(strbuf *sql, const snap_load_chunk *c, const char *what, bool in)
{
	strbuf_append(sql, in ? " AND EXISTS (SELECT 1 FROM " : " AND NOT EXISTS (SELECT 1 FROM ");
	temp_name(sql, c, what);
	strbuf_append(sql, " s WHERE ");
	for (int k = 0; k < c->nkeys; k++) {
		if (k > 0)
			strbuf_append(sql, " AND ");
		codec_append_key_operand(sql, "s", c->key_columns[k], key_type(c, k));
		strbuf_append(sql, " = ");
		codec_append_key_operand(sql, "t", c->key_columns[k], key_type(c, k));
	}
	strbuf_appendc(sql, ')');
}

static dml_sql_table
shape_table(const snap_load_chunk *c, int *key_idx)
{
	for (int k = 0; k < c->nkeys; k++)
		key_idx[k] = k;
	return (dml_sql_table){c->target_schema, c->target_table, c->nkeys,
	                       (const char *const *) c->key_columns, c->nkeys, key_idx,
	                       (const char *const *) c->key_types, c->shape};
}

/* The start of a statement that removes rows of the target (alias t): a
 * DELETE, or with soft deletes the mark; a history's entries around it. */
static void
gone_open(strbuf *sql, const snap_load_chunk *c)
{
	bool soft = c->shape != NULL && c->shape->soft_delete;

	if (c->shape != NULL && c->shape->history != NULL)
		dml_sql_history_open(sql);
	strbuf_append(sql, soft ? "UPDATE " : "DELETE FROM ");
	strbuf_append_qualified(sql, c->target_schema, c->target_table);
	if (soft) {
		strbuf_append(sql, " t SET tidemark_deleted_at = " DML_SQL_COMMIT_TIME);
		if (c->shape->metadata)
			strbuf_append(sql, ", tidemark_lsn = DEFAULT, tidemark_synced_at = DEFAULT");
	} else
		strbuf_append(sql, " t");
}

/* ... its WHERE written: the end. */
static void
gone_close(strbuf *sql, const snap_load_chunk *c)
{
	strbuf seq = STRBUF_INIT;
	int *key_idx;
	dml_sql_table t;

	if (c->shape != NULL && c->shape->soft_delete)
		strbuf_append(sql, " AND t.tidemark_deleted_at IS NULL");
	if (c->shape == NULL || c->shape->history == NULL)
		return;
	key_idx = calloc((size_t) c->nkeys + 1, sizeof(int));
	if (key_idx == NULL)
		abort();
	t = shape_table(c, key_idx);
	dml_sql_history_next_seq(&seq, &t);
	dml_sql_history_close(sql, &t, "'delete'", strbuf_str(&seq));
	strbuf_free(&seq);
	free(key_idx);
}

/* The mirror's rows (alias m) a history's 'copy' entries look at: those
 * of the chunk's key range, or of its staged keys (by_keys, upsert_only).
 * Returns the count of params used. */
static int
entries_cond(const snap_load_chunk *c, strbuf *cond, const char **params)
{
	int n = 0;

	if (c->upsert_only || c->by_keys) {
		strbuf_append(cond, " AND EXISTS (SELECT 1 FROM ");
		temp_name(cond, c, "stage");
		strbuf_append(cond, " s WHERE ");
		for (int k = 0; k < c->nkeys; k++) {
			if (k > 0)
				strbuf_append(cond, " AND ");
			codec_append_key_operand(cond, "s", c->key_columns[k], key_type(c, k));
			strbuf_append(cond, " = ");
			codec_append_key_operand(cond, "m", c->key_columns[k], key_type(c, k));
		}
		strbuf_appendc(cond, ')');
	} else {
		n = append_range(cond, c, "m", params);
		if (n > 0) /* " WHERE (" becomes " AND (" */
			memcpy(cond->data, " AND  ", 6);
	}
	return n;
}

/* Runs sql (a statement over the mirror's rows of entries_cond, which
 * build appends to sql). */
typedef void (*entries_sql)(strbuf *sql, const snap_load_chunk *c, const dml_sql_table *t,
                            const char *cond, dml_sql_copy_against against);

static int
entries_command(sink *s, const snap_load_chunk *c, entries_sql build,
                dml_sql_copy_against against, const char *what)
{
	const char **params = xcalloc((size_t) c->nkeys * 2 + 1, sizeof(char *));
	int *key_idx = xcalloc((size_t) c->nkeys + 1, sizeof(int));
	strbuf sql = STRBUF_INIT, cond = STRBUF_INIT;
	dml_sql_table t = shape_table(c, key_idx);
	int n = entries_cond(c, &cond, params), rc;

	build(&sql, c, &t, strbuf_str(&cond), against);
	rc = sink_command(s, what, sql.data, n, params);
	strbuf_free(&sql);
	strbuf_free(&cond);
	free(params);
	free(key_idx);
	return rc;
}

static void
build_before(strbuf *sql, const snap_load_chunk *c, const dml_sql_table *t, const char *cond,
             dml_sql_copy_against against)
{
	(void) against;
	strbuf_append(sql, "CREATE TEMP TABLE ");
	temp_name(sql, c, "before");
	strbuf_append(sql, " AS SELECT ");
	dml_sql_history_row_text(sql, t, "m");
	strbuf_append(sql, " AS r FROM ");
	strbuf_append_qualified(sql, c->target_schema, c->target_table);
	strbuf_appendf(sql, " m WHERE true%s", cond);
	if (c->shape->soft_delete)
		strbuf_append(sql, " AND m.tidemark_deleted_at IS NULL");
}

static void
build_copy(strbuf *sql, const snap_load_chunk *c, const dml_sql_table *t, const char *cond,
           dml_sql_copy_against against)
{
	strbuf before = STRBUF_INIT;

	temp_name(&before, c, "before");
	dml_sql_history_copy(sql, t, cond, against, strbuf_str(&before));
	strbuf_free(&before);
}

/* The mirror's rows the chunk may write, as they are before it is loaded:
 * what its 'copy' entries are compared with (DML_SQL_COPY_BEFORE). */
static int
before_image(sink *s, const snap_load_chunk *c)
{
	int rc = temp_drop(s, c, "before", true);

	if (rc == TM_OK)
		rc = entries_command(s, c, build_before, DML_SQL_COPY_BEFORE,
		                     "keeping the rows a chunk replaces, for the history");
	return rc;
}

/* A history's 'copy' entries for the rows the chunk wrote. */
static int
copy_entries(sink *s, const snap_load_chunk *c, dml_sql_copy_against against)
{
	return entries_command(s, c, build_copy, against, "writing a copy's entries into the history");
}

/* Rows of the range on the target that the source no longer has. */
static int
stage_delete_gone(sink *s, const snap_load_chunk *c)
{
	const char **params = calloc((size_t) c->nkeys * 2 + 1, sizeof(char *));
	strbuf sql = STRBUF_INIT;
	int n, rc;

	if (params == NULL)
		abort();
	gone_open(&sql, c);
	n = append_range(&sql, c, "t", params);
	if (n == 0)
		strbuf_append(&sql, " WHERE true");
	append_in(&sql, c, "stage", false);
	append_in(&sql, c, "touched", false);
	gone_close(&sql, c);
	rc = sink_command(s, "deleting rows the source no longer has", sql.data, n, params);
	strbuf_free(&sql);
	free(params);
	return rc;
}

static int
load_staged(sink *s, const snap_load_chunk *c, dml_sql_copy_against against)
{
	int rc = stage_create(s, c);

	if (rc == TM_OK)
		rc = stage_fill(s, c);
	if (rc == TM_OK && against == DML_SQL_COPY_BEFORE)
		rc = before_image(s, c);
	if (rc == TM_OK)
		rc = stage_upsert(s, c);
	if (rc == TM_OK && !c->upsert_only && !c->by_keys)
		rc = stage_delete_gone(s, c);
	return rc;
}

static int
drop_staged(sink *s, const snap_load_chunk *c)
{
	int rc = temp_drop(s, c, "stage", false);

	if (rc == TM_OK)
		rc = temp_drop(s, c, "touched", false);
	if (rc == TM_OK && c->shape != NULL && c->shape->history != NULL)
		rc = temp_drop(s, c, "before", true);
	return rc;
}

/* Does the target hold any of the keys the chunk loads? Asked by key, not
 * by range (by_keys). */
static int
keys_held(sink *s, const snap_load_chunk *c, bool *has)
{
	strbuf keys = STRBUF_INIT, sql = STRBUF_INIT;
	PGresult *r = NULL;
	int rc = temp_create(s, c, "keys", true);

	snap_window_kept_keys_copy(c->window, c->chunk, &keys);
	if (rc == TM_OK)
		rc = temp_fill_keys(s, c, "keys", &keys);
	strbuf_append(&sql, "SELECT EXISTS (SELECT 1 FROM ");
	strbuf_append_qualified(&sql, c->target_schema, c->target_table);
	strbuf_append(&sql, " t WHERE true");
	append_in(&sql, c, "keys", true);
	strbuf_appendc(&sql, ')');
	if (rc == TM_OK)
		rc = sink_query(s, "looking up a chunk's keys on the target", sql.data, 0, NULL, &r);
	if (rc == TM_OK)
		*has = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	strbuf_free(&keys);
	strbuf_free(&sql);
	return rc == TM_OK ? temp_drop(s, c, "keys", false) : rc;
}

/* UPDATE t SET c1 = $1, ... WHERE k1 = $n+1 AND ... */
static int
apply_overlay(sink *s, const snap_load_chunk *c, const snap_overlay *o)
{
	const char **params = calloc((size_t) (o->n + c->nkeys) + 1, sizeof(char *));
	strbuf sql = STRBUF_INIT, vals = STRBUF_INIT;
	size_t *offsets = calloc((size_t) (o->n + c->nkeys) + 1, sizeof(size_t));
	int np = 0, rc;

	if (params == NULL || offsets == NULL)
		abort();
	strbuf_append(&sql, "UPDATE ");
	strbuf_append_qualified(&sql, c->target_schema, c->target_table);
	strbuf_append(&sql, " SET ");
	for (int i = 0; i < o->n + c->nkeys; i++) {
		bool set = i < o->n;
		const char *v = set ? o->values[i] : o->key[i - o->n];
		size_t vl = set ? o->lens[i] : o->key_len[i - o->n];

		if (i == o->n)
			strbuf_append(&sql, " WHERE ");
		else if (i > 0)
			strbuf_append(&sql, set ? ", " : " AND ");
		if (set) {
			strbuf_append_ident(&sql, o->names[i]);
			strbuf_appendf(&sql, " = $%d", ++np);
		} else {
			codec_append_key_operand(&sql, NULL, c->key_columns[i - o->n], key_type(c, i - o->n));
			strbuf_append(&sql, " = ");
			codec_append_key_param(&sql, ++np, key_type(c, i - o->n));
		}
		offsets[i] = v ? vals.len : (size_t) -1;
		if (v != NULL) {
			strbuf_appendn(&vals, v, vl);
			strbuf_appendc(&vals, '\0');
		}
	}
	for (int i = 0; i < np; i++)
		params[i] = offsets[i] == (size_t) -1 ? NULL : strbuf_str(&vals) + offsets[i];
	rc = sink_send(s, sink_stmt_get(s, sql.data, np), params, NULL);
	strbuf_free(&sql);
	strbuf_free(&vals);
	free(params);
	free(offsets);
	return rc;
}

/* The chunk's table as it is shaped (shape.h): the session's position
 * set to the high watermark's for a shaped one. */
static int
load_shape(sink *s, const snap_load_chunk *c, shape_loaded *sl, snap_load_chunk *shaped)
{
	int rc = shape_load(s, c->table_id, sl);

	*shaped = *c;
	shaped->shape = sl->shaped ? &sl->shape : NULL;
	if (rc == TM_OK && sl->shaped)
		rc = shape_set_position(s, c->position, c->position_time);
	return rc;
}

/* What the chunk's 'copy' entries are compared with: the mirror's rows
 * before the load, nothing when it holds none of the chunk's; a history
 * behind its mirror (015_history_append_only.sql) is looked up by key. */
static dml_sql_copy_against
copy_against(bool behind, bool has)
{
	if (behind)
		return DML_SQL_COPY_LATEST;
	return has ? DML_SQL_COPY_BEFORE : DML_SQL_COPY_ALL;
}

static int
load(sink *s, const snap_load_chunk *c, bool behind, bool *fast)
{
	bool history = c->shape != NULL && c->shape->history != NULL;
	bool has = c->upsert_only || (history && c->by_keys);
	dml_sql_copy_against against;
	int rc = TM_OK;

	if (!has && c->by_keys)
		rc = c->nrows > 0 ? keys_held(s, c, &has) : TM_OK;
	else if (!has)
		rc = range_has_rows(s, c, &has);

	if (rc != TM_OK || (c->upsert_only && c->nrows == 0))
		return rc;
	*fast = !has;
	against = copy_against(behind, has);
	if (!has)
		rc = c->nrows > 0 ? load_direct(s, c) : TM_OK;
	else
		rc = load_staged(s, c, history ? against : DML_SQL_COPY_ALL);
	for (int i = 0; rc == TM_OK && i < c->noverlays; i++)
		rc = apply_overlay(s, c, &c->overlays[i]);
	if (rc == TM_OK && history)
		rc = copy_entries(s, c, against);
	if (rc == TM_OK && has)
		rc = drop_staged(s, c);
	return rc;
}

int
snap_load(sink *s, const snap_load_chunk *c, bool *fast)
{
	shape_loaded sl;
	snap_load_chunk shaped;
	int rc = load_shape(s, c, &sl, &shaped);

	if (rc == TM_OK)
		rc = load(s, &shaped, sl.history_behind, fast);
	shape_loaded_free(&sl);
	return rc;
}

/* ---- a sweep's page ---- */

static int
sweep_stage(sink *s, const snap_load_chunk *c, const strbuf *page)
{
	strbuf keys = STRBUF_INIT;
	int rc = temp_create(s, c, "page", true);

	if (rc == TM_OK)
		rc = temp_fill_keys(s, c, "page", page);
	if (rc == TM_OK)
		rc = temp_create(s, c, "keys", true);
	snap_window_kept_keys_copy(c->window, c->chunk, &keys);
	if (rc == TM_OK)
		rc = temp_fill_keys(s, c, "keys", &keys);
	strbuf_reset(&keys);
	snap_window_keys_copy(c->window, &keys);
	if (rc == TM_OK)
		rc = temp_create(s, c, "touched", true);
	if (rc == TM_OK)
		rc = temp_fill_keys(s, c, "touched", &keys);
	strbuf_free(&keys);
	return rc;
}

static int
sweep(sink *s, const snap_load_chunk *c, const strbuf *page, long *removed)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	int rc = sweep_stage(s, c, page);

	*removed = 0;
	gone_open(&sql, c);
	strbuf_append(&sql, " WHERE true");
	append_in(&sql, c, "page", true);
	append_in(&sql, c, "keys", false);
	append_in(&sql, c, "touched", false);
	gone_close(&sql, c);
	if (rc == TM_OK)
		rc = sink_query(s, "deleting rows the source no longer has", sql.data, 0, NULL, &r);
	if (rc == TM_OK)
		*removed = atol(PQcmdTuples(r));
	PQclear(r);
	strbuf_free(&sql);
	for (int i = 0; rc == TM_OK && i < 3; i++)
		rc = temp_drop(s, c, (const char *const[]) {"page", "keys", "touched"}[i], false);
	return rc;
}

int
snap_load_sweep(sink *s, const snap_load_chunk *c, const strbuf *page, long *removed)
{
	shape_loaded sl;
	snap_load_chunk shaped;
	int rc = load_shape(s, c, &sl, &shaped);

	*removed = 0;
	if (rc == TM_OK)
		rc = sweep(s, &shaped, page, removed);
	shape_loaded_free(&sl);
	return rc;
}
