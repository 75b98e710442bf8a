#include "snap_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pgconn.h"

#include <time.h>
static double
ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* WHERE (k1, k2) > ($1, $2) AND (k1, k2) <= ($3, $4), either side optional.
 * alias: a table alias to qualify the key columns with, or NULL. */
static int
append_range(strbuf *sql, const snap_load_chunk *c, const char *alias, const char **params)
{
	int n = 0;

	for (int side = 0; side < 2; side++) {
		char *const *key = side == 0 ? c->prev_key : c->last_key;

		if (key == NULL)
			continue;
		strbuf_append(sql, n == 0 ? " WHERE (" : " AND (");
		for (int k = 0; k < c->nkeys; k++) {
			if (k > 0)
				strbuf_append(sql, ", ");
			if (alias != NULL)
				strbuf_appendf(sql, "%s.", alias);
			strbuf_append_ident(sql, c->key_columns[k]);
		}
		strbuf_append(sql, side == 0 ? ") > (" : ") <= (");
		for (int k = 0; k < c->nkeys; k++) {
			params[n] = key[k];
			strbuf_appendf(sql, "%s$%d", k > 0 ? ", " : "", ++n);
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

static int
copy_into(sink *s, const char *sql, const char *data, size_t len)
{
	int rc = sink_copy_begin(s, sql);

	/* COPY data goes in pieces: libpq copies each into its buffer */
	for (size_t off = 0; rc == TM_OK && off < len; off += 1 << 20) {
		size_t n = len - off < (1u << 20) ? len - off : 1u << 20;

		rc = sink_copy_data(s, data + off, (int) n);
	}
	if (rc == TM_OK)
		rc = sink_copy_end(s);
	return rc;
}

static int
load_direct(sink *s, const snap_load_chunk *c)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	strbuf_append(&sql, "COPY ");
	strbuf_append_qualified(&sql, c->target_schema, c->target_table);
	strbuf_append(&sql, " (");
	append_columns(&sql, c->chunk, NULL);
	strbuf_append(&sql, ") FROM STDIN");
	{
		double t0 = ms_now();

		rc = copy_into(s, sql.data, strbuf_str(c->rows), c->rows->len);
		log_debug("snapshot load: COPY %.1f ms", ms_now() - t0);
	}
	strbuf_free(&sql);
	return rc;
}

/* ---- the staging path ---- */

#define STAGE_FLAG "tidemark_row"

static void
stage_name(strbuf *sql, const snap_load_chunk *c)
{
	char name[64];

	snprintf(name, sizeof name, "tidemark_stage_%d", c->table_id);
	strbuf_append(sql, "pg_temp.");
	strbuf_append_ident(sql, name);
}

static int
stage_create(sink *s, const snap_load_chunk *c)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	strbuf_append(&sql, "DROP TABLE IF EXISTS ");
	stage_name(&sql, c);
	rc = sink_command(s, "dropping a staging table", sql.data, 0, NULL);
	strbuf_reset(&sql);
	strbuf_append(&sql, "CREATE TEMP TABLE ");
	stage_name(&sql, c);
	strbuf_append(&sql, " AS SELECT ");
	append_columns(&sql, c->chunk, NULL);
	strbuf_append(&sql, ", true AS " STAGE_FLAG " FROM ");
	strbuf_append_qualified(&sql, c->target_schema, c->target_table);
	strbuf_append(&sql, " WITH NO DATA");
	if (rc == TM_OK)
		rc = sink_command(s, "creating a staging table", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
}

/* Chunk rows flagged true, keys the stream touched flagged false. */
static int
stage_fill(sink *s, const snap_load_chunk *c)
{
	strbuf sql = STRBUF_INIT, data = STRBUF_INIT;
	const char *p = strbuf_str(c->rows);
	int rc;

	strbuf_reserve(&data, c->rows->len + (size_t) c->nrows * 2);
	for (const char *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		strbuf_appendn(&data, p, (size_t) (nl - p));
		strbuf_append(&data, "\tt\n");
	}
	snap_window_keys_copy(c->window, c->chunk, "\tf", &data);
	strbuf_append(&sql, "COPY ");
	stage_name(&sql, c);
	strbuf_append(&sql, " (");
	append_columns(&sql, c->chunk, NULL);
	strbuf_append(&sql, ", " STAGE_FLAG ") FROM STDIN");
	rc = copy_into(s, sql.data, strbuf_str(&data), data.len);
	strbuf_free(&sql);
	strbuf_free(&data);
	return rc;
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
	stage_name(&sql, c);
	strbuf_append(&sql, " WHERE " STAGE_FLAG " ON CONFLICT (");
	for (int k = 0; k < c->nkeys; k++) {
		if (k > 0)
			strbuf_append(&sql, ", ");
		strbuf_append_ident(&sql, c->key_columns[k]);
	}
	strbuf_append(&sql, ") DO ");
	for (int i = 0; i < c->chunk->ncols; i++) {
		bool key = false;

		for (int k = 0; k < c->chunk->nkeys; k++)
			key |= c->chunk->key_idx[k] == i;
		if (key)
			continue;
		strbuf_append(&sql, any ? ", " : "UPDATE SET ");
		strbuf_append_ident(&sql, c->chunk->colnames[i]);
		strbuf_append(&sql, " = EXCLUDED.");
		strbuf_append_ident(&sql, c->chunk->colnames[i]);
		any = true;
	}
	if (!any)
		strbuf_append(&sql, "NOTHING");
	rc = sink_command(s, "upserting a chunk", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
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
	strbuf_append(&sql, "DELETE FROM ");
	strbuf_append_qualified(&sql, c->target_schema, c->target_table);
	strbuf_append(&sql, " t");
	n = append_range(&sql, c, "t", params);
	strbuf_append(&sql, n > 0 ? " AND" : " WHERE");
	strbuf_append(&sql, " NOT EXISTS (SELECT 1 FROM ");
	stage_name(&sql, c);
	strbuf_append(&sql, " s WHERE ");
	for (int k = 0; k < c->nkeys; k++) {
		if (k > 0)
			strbuf_append(&sql, " AND ");
		strbuf_append(&sql, "s.");
		strbuf_append_ident(&sql, c->key_columns[k]);
		strbuf_append(&sql, " = t.");
		strbuf_append_ident(&sql, c->key_columns[k]);
	}
	strbuf_appendc(&sql, ')');
	rc = sink_command(s, "deleting rows the source no longer has", sql.data, n, params);
	strbuf_free(&sql);
	free(params);
	return rc;
}

static int
load_staged(sink *s, const snap_load_chunk *c)
{
	strbuf sql = STRBUF_INIT;
	int rc = stage_create(s, c);

	if (rc == TM_OK)
		rc = stage_fill(s, c);
	if (rc == TM_OK)
		rc = stage_upsert(s, c);
	if (rc == TM_OK)
		rc = stage_delete_gone(s, c);
	strbuf_append(&sql, "DROP TABLE ");
	stage_name(&sql, c);
	if (rc == TM_OK)
		rc = sink_command(s, "dropping a staging table", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
}

int
snap_load(sink *s, const snap_load_chunk *c, bool *fast)
{
	bool has = false;
	double t0 = ms_now();
	int rc = range_has_rows(s, c, &has);

	log_debug("snapshot load: range check %.1f ms", ms_now() - t0);

	if (rc != TM_OK)
		return rc;
	*fast = !has;
	if (!has)
		return c->nrows > 0 ? load_direct(s, c) : TM_OK;
	return load_staged(s, c);
}
