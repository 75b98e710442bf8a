/*
 * apply_net.c: a group's net changes (apply.h, net_change.h). Changes of
 * tables with a key in mirror mode are put into the group's net set as they
 * come; apply_net_flush sends each key's last state with the usual
 * statements, in the order of the keys' last changes, wherever the target
 * must hold them.
 */
#include <stdlib.h>
#include <string.h>

#include "apply_int.h"
#include "exitcode.h"
#include "log.h"
#include "strbuf.h"
#include "xalloc.h"

/* A history table's own entries: whole rows are those of the stream
 * when its history has exactly the stream's columns (no generated column
 * the mirror computes, none the source dropped). */
static bool
history_of_stream(const apply_rel *r)
{
	const dml_sql_shape *sh = &r->shape.shape;

	if (!r->shape_ready || sh->history == NULL || sh->metadata || sh->soft_delete ||
	    sh->nhist != r->ncols)
		return false;
	for (int i = 0; i < r->ncols; i++) {
		bool found = false;

		for (int j = 0; j < sh->nhist && !found; j++)
			found = strcmp(sh->hist_cols[j], r->colnames[i]) == 0;
		if (!found)
			return false;
	}
	return true;
}

static bool load_types(apply *a, apply_rel *r);

apply_net_way
apply_net_way_of(apply *a, apply_rel *r)
{
	if (!a->cfg.net_changes || a->net == NULL || r->table == NULL || r->nkeys == 0 ||
	    !r->keys_ok)
		return APPLY_NET_NONE;
	if (!apply_shaped(r))
		return APPLY_NET_ALL;
	/* its entries are written by a statement of many rows: typed arrays */
	return history_of_stream(r) && load_types(a, r) ? APPLY_NET_ROWS : APPLY_NET_NONE;
}

/* ---- statements of many rows ---- */

/* The target type of each of r's columns, rendered (target_ddl.h), once
 * per definition; false when one is not known. */
static bool
load_types(apply *a, apply_rel *r)
{
	const char *p[] = {r->table->target_schema, r->table->target_table};
	PGresult *res = NULL;
	bool all = true;

	if (r->types_loaded)
		goto out;
	r->types_loaded = true;
	r->types = xcalloc((size_t) r->ncols + 1, sizeof(char *));
	/* the type by its catalog name, without modifiers: the column applies
	 * them as it does to a parameter (a cast to varchar(n) would cut a value
	 * silently, and "character" without a length is char(1)) */
	if (sink_query(a->sink, "reading a target table's column types",
	               "SELECT a.attname, n.nspname, t.typname FROM pg_attribute a"
	               " JOIN pg_type t ON t.oid = a.atttypid"
	               " JOIN pg_namespace n ON n.oid = t.typnamespace"
	               " WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass"
	               " AND a.attnum > 0 AND NOT a.attisdropped", 2, p, &res) != TM_OK) {
		PQclear(res);
		return false; /* the failure surfaces again with the next statement */
	}
	for (int i = 0; i < r->ncols; i++)
		for (int j = 0; j < PQntuples(res) && r->types[i] == NULL; j++)
			if (strcmp(PQgetvalue(res, j, 0), r->colnames[i]) == 0) {
				strbuf sb = STRBUF_INIT;

				strbuf_append_qualified(&sb, PQgetvalue(res, j, 1), PQgetvalue(res, j, 2));
				r->types[i] = strbuf_steal(&sb);
			}
	PQclear(res);
out:
	for (int i = 0; i < r->ncols; i++)
		all &= r->types[i] != NULL;
	return all;
}

void
apply_net_forget_rel(apply *a, apply_rel *r)
{
	sink_stmt_release(a->sink, r->upsert_rows);
	sink_stmt_release(a->sink, r->history_rows);
	r->upsert_rows = r->history_rows = NULL;
	for (int i = 0; r->types != NULL && i < r->ncols; i++)
		free(r->types[i]);
	free(r->types);
	r->types = NULL;
	r->types_loaded = false;
}

/* Rows of one table held for one statement: an array literal per column. */
typedef struct row_batch {
	uint32_t relid;
	int narrays;
	strbuf *arrays;   /* owned */
	long n;
} row_batch;

static row_batch *
batch_of(row_batch **list, int *n, uint32_t relid, int narrays)
{
	row_batch *b;

	for (int i = 0; i < *n; i++)
		if ((*list)[i].relid == relid)
			return &(*list)[i];
	*list = realloc(*list, sizeof **list * (size_t) (*n + 1));
	if (*list == NULL)
		abort();
	b = &(*list)[(*n)++];
	b->relid = relid;
	b->narrays = narrays;
	b->arrays = xcalloc((size_t) narrays, sizeof(strbuf));
	b->n = 0;
	return b;
}

static void
batches_free(row_batch *list, int n)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < list[i].narrays; j++)
			strbuf_free(&list[i].arrays[j]);
		free(list[i].arrays);
	}
	free(list);
}

/* Sends a batch with the statement built by build (held in *stmt). */
static int
send_batch(apply *a, apply_rel *r, row_batch *b, sink_stmt **stmt,
           void (*build)(strbuf *, const dml_sql_table *, const char *const *))
{
	const char **p = xcalloc((size_t) b->narrays + 1, sizeof(char *));
	int rc;

	if (*stmt == NULL) {
		strbuf sql = STRBUF_INIT;
		dml_sql_table t = {r->table->target_schema, r->table->target_table, r->ncols,
		                   (const char *const *) r->colnames, r->nkeys, r->key_idx,
		                   (const char *const *) r->key_types,
		                   build == dml_sql_history_rows ? &r->shape.shape : NULL};

		build(&sql, &t, (const char *const *) r->types);
		*stmt = sink_stmt_hold(a->sink, sql.data, b->narrays);
		strbuf_free(&sql);
	}
	for (int i = 0; i < b->narrays; i++) {
		dml_sql_array_end(&b->arrays[i]);
		p[i] = strbuf_str(&b->arrays[i]);
	}
	rc = sink_send(a->sink, *stmt, p, NULL);
	free(p);
	return rc;
}

/* ---- history entries held ---- */

int
apply_net_history_row(apply *a, apply_rel *r, const char *op, const pgoutput_tuple *t,
                      arena *scratch)
{
	const char *entry[4];
	row_batch *b = batch_of(&a->hist_bufs, &a->nhist_bufs, r->relid, 4 + r->ncols);
	size_t before = 0, after = 0;
	bool conflict;
	int rc;

	/* the entry's op, seq, position and time, as a history statement's */
	apply_shape_params(a, r, entry, 0, op, scratch);
	for (int i = 0; i < b->narrays; i++)
		before += b->arrays[i].len;
	for (int i = 0; i < 4; i++)
		dml_sql_array_element(&b->arrays[i], entry[i], strlen(entry[i]));
	for (int i = 0; i < t->ncols; i++)
		dml_sql_array_element(&b->arrays[4 + i],
		                      t->values[i].kind == PGOUTPUT_VALUE_TEXT ? t->values[i].data
		                                                               : NULL,
		                      t->values[i].len);
	for (int i = 0; i < b->narrays; i++)
		after += b->arrays[i].len;
	b->n++;
	a->hist_bytes += after - before;
	rc = apply_net_put(a, r, NET_ROW, t, NULL, &conflict);
	if (rc == TM_OK && a->hist_bytes > APPLY_NET_BYTES)
		rc = apply_net_flush(a);
	return rc;
}

static int
flush_history(apply *a)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < a->nhist_bufs; i++) {
		row_batch *b = &a->hist_bufs[i];
		apply_rel *r = apply_find_rel(a, b->relid);

		if (r == NULL || r->table == NULL || !r->shape_ready || r->shape.shape.history == NULL ||
		    b->narrays != 4 + r->ncols) {
			log_error("internal: history entries of relation %u lost their table",
			          (unsigned) b->relid);
			rc = TM_EXIT_INTERNAL;
		} else
			rc = send_batch(a, r, b, &r->history_rows, dml_sql_history_rows);
	}
	batches_free(a->hist_bufs, a->nhist_bufs);
	a->hist_bufs = NULL;
	a->nhist_bufs = 0;
	a->hist_bytes = 0;
	return rc;
}

void
apply_net_free(apply *a)
{
	batches_free(a->hist_bufs, a->nhist_bufs);
	a->hist_bufs = NULL;
	a->nhist_bufs = 0;
	net_free(a->net);
	a->net = NULL;
}

typedef struct flush_ctx {
	apply *a;
	arena scratch;
	row_batch *rows;        /* owned: whole rows per table, for one statement each */
	int nrows;
} flush_ctx;

/* A batch of rows sent; its arrays start again. */
static int
send_rows_of(apply *a, apply_rel *r, row_batch *b)
{
	int rc = b->n > 0 ? send_batch(a, r, b, &r->upsert_rows, dml_sql_upsert_rows) : TM_OK;

	for (int i = 0; i < b->narrays; i++)
		strbuf_reset(&b->arrays[i]);
	b->n = 0;
	return rc;
}

/* One entry: a whole row joins its table's batch (when the table's types
 * are known); a delete or a partial is sent alone. */
static int
send_entry(void *ctx, const net_entry *e)
{
	flush_ctx *f = ctx;
	apply_rel *r = apply_find_rel(f->a, (uint32_t) e->table);
	const char **v;
	int rc;

	if (r == NULL || r->table == NULL || r->ncols != e->ncols) {
		log_error("internal: a net change of relation %u lost its table", (unsigned) e->table);
		return TM_EXIT_INTERNAL;
	}
	if (e->kind == NET_ROW && load_types(f->a, r)) {
		row_batch *b = batch_of(&f->rows, &f->nrows, r->relid, r->ncols);

		size_t bytes = 0;

		for (int i = 0; i < r->ncols; i++) {
			dml_sql_array_element(&b->arrays[i], e->values[i], e->lens[i]);
			bytes += b->arrays[i].len;
		}
		b->n++;
		return bytes > APPLY_NET_BATCH_BYTES ? send_rows_of(f->a, r, b) : TM_OK;
	}
	v = arena_alloc(&f->scratch, sizeof(char *) * ((size_t) e->ncols + DML_SQL_HISTORY_PARAMS + 1));
	memcpy(v, e->values, sizeof(char *) * (size_t) e->ncols);
	if (e->kind == NET_ROW)
		rc = apply_send_row(f->a, r, v, &f->scratch);
	else if (e->kind == NET_DELETE)
		rc = apply_send_delete_key(f->a, r, v, &f->scratch);
	else
		rc = apply_send_partial(f->a, r, e->present, v, &f->scratch);
	arena_reset(&f->scratch);
	return rc;
}

/* The rows' statements, one per table: after the deletes and partials of
 * every table (the keys differ, so only other unique indexes of the
 * target could tell the order; tidemark makes none). */
static int
send_rows(flush_ctx *f)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < f->nrows; i++)
		rc = send_rows_of(f->a, apply_find_rel(f->a, f->rows[i].relid), &f->rows[i]);
	return rc;
}

int
apply_net_flush(apply *a)
{
	flush_ctx f = {a, {0}, NULL, 0};
	int rc;

	if (a->net == NULL || (net_count(a->net) == 0 && a->nhist_bufs == 0))
		return TM_OK;
	arena_init(&f.scratch, 16 * 1024);
	log_debug("apply: %ld net changes for %ld changes", net_count(a->net), net_puts(a->net));
	rc = net_each(a->net, send_entry, &f);
	if (rc == TM_OK)
		rc = send_rows(&f);
	batches_free(f.rows, f.nrows);
	net_clear(a->net);
	arena_free(&f.scratch);
	/* the mirror's rows sent, their history's entries */
	return rc == TM_OK ? flush_history(a) : rc;
}

int
apply_net_put(apply *a, apply_rel *r, net_kind kind, const pgoutput_tuple *t, const bool *present,
              bool *conflict)
{
	const char **v = calloc((size_t) t->ncols + 1, sizeof(char *));
	size_t *l = calloc((size_t) t->ncols + 1, sizeof(size_t));
	net_put_result res;

	if (v == NULL || l == NULL)
		abort();
	for (int i = 0; i < t->ncols; i++)
		if (t->values[i].kind == PGOUTPUT_VALUE_TEXT) {
			v[i] = t->values[i].data;
			l[i] = t->values[i].len;
		}
	res = net_put(a->net, (int) r->relid, kind, r->ncols, r->nkeys, r->key_idx, v, l, present);
	free(v);
	free(l);
	*conflict = res == NET_CONFLICT;
	if (!*conflict && net_bytes(a->net) > APPLY_NET_BYTES)
		return apply_net_flush(a);
	return TM_OK;
}
