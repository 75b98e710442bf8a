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

apply_net_way
apply_net_way_of(const apply *a, const apply_rel *r)
{
	if (!a->cfg.net_changes || a->net == NULL || r->table == NULL || r->nkeys == 0 ||
	    !r->keys_ok)
		return APPLY_NET_NONE;
	if (!apply_shaped(r))
		return APPLY_NET_ALL;
	return history_of_stream(r) ? APPLY_NET_ROWS : APPLY_NET_NONE;
}

/* ---- history entries held for COPY ---- */

typedef struct apply_hist_buf {
	uint32_t relid;
	strbuf rows;    /* COPY text lines: op, seq, position, time, the stream's columns */
} apply_hist_buf;

static apply_hist_buf *
hist_buf(apply *a, uint32_t relid)
{
	apply_hist_buf *b;

	for (int i = 0; i < a->nhist_bufs; i++)
		if (a->hist_bufs[i].relid == relid)
			return &a->hist_bufs[i];
	a->hist_bufs = realloc(a->hist_bufs, sizeof *b * (size_t) (a->nhist_bufs + 1));
	if (a->hist_bufs == NULL)
		abort();
	b = &a->hist_bufs[a->nhist_bufs++];
	b->relid = relid;
	strbuf_init(&b->rows);
	return b;
}

static void
append_field(strbuf *line, const char *v, size_t len, bool first)
{
	if (!first)
		strbuf_appendc(line, '\t');
	if (v == NULL)
		strbuf_append(line, "\\N");
	else
		strbuf_append_copy_text(line, v, len);
}

int
apply_net_history_row(apply *a, apply_rel *r, const char *op, const pgoutput_tuple *t,
                      arena *scratch)
{
	const char *entry[4];
	apply_hist_buf *b = hist_buf(a, r->relid);
	size_t before = b->rows.len;
	bool conflict;
	int rc;

	/* the entry's op, seq, position and time, as a history statement's */
	apply_shape_params(a, r, entry, 0, op, scratch);
	for (int i = 0; i < 4; i++)
		append_field(&b->rows, entry[i], strlen(entry[i]), i == 0);
	for (int i = 0; i < t->ncols; i++)
		append_field(&b->rows, t->values[i].kind == PGOUTPUT_VALUE_TEXT ? t->values[i].data : NULL,
		             t->values[i].len, false);
	strbuf_appendc(&b->rows, '\n');
	a->hist_bytes += b->rows.len - before;
	rc = apply_net_put(a, r, NET_ROW, t, NULL, &conflict);
	if (rc == TM_OK && a->hist_bytes > APPLY_NET_BYTES)
		rc = apply_net_flush(a);
	return rc;
}

/* COPY "schema"."history" (tidemark_op, ..., the stream's columns) */
static int
copy_history(apply *a, apply_hist_buf *b)
{
	apply_rel *r = apply_find_rel(a, b->relid);
	strbuf sql = STRBUF_INIT;
	int rc;

	if (r == NULL || r->table == NULL || !r->shape_ready || r->shape.shape.history == NULL) {
		log_error("internal: history entries of relation %u lost their table",
		          (unsigned) b->relid);
		return TM_EXIT_INTERNAL;
	}
	strbuf_append(&sql, "COPY ");
	strbuf_append_qualified(&sql, r->table->target_schema, r->shape.shape.history);
	strbuf_append(&sql, " (tidemark_op, tidemark_seq, tidemark_lsn, tidemark_commit_time");
	for (int i = 0; i < r->ncols; i++) {
		strbuf_append(&sql, ", ");
		strbuf_append_ident(&sql, r->colnames[i]);
	}
	strbuf_append(&sql, ") FROM STDIN");
	rc = sink_copy_begin(a->sink, strbuf_str(&sql));
	/* in pieces: a COPY message holds at most 1 GB, and the buffer may
	 * be larger than one */
	for (size_t off = 0; rc == TM_OK && off < b->rows.len; off += 1 << 20) {
		size_t n = b->rows.len - off < (1u << 20) ? b->rows.len - off : 1u << 20;

		rc = sink_copy_data(a->sink, b->rows.data + off, (int) n);
	}
	if (rc == TM_OK)
		rc = sink_copy_end(a->sink);
	strbuf_free(&sql);
	return rc;
}

static void
forget_history(apply *a)
{
	for (int i = 0; i < a->nhist_bufs; i++)
		strbuf_free(&a->hist_bufs[i].rows);
	free(a->hist_bufs);
	a->hist_bufs = NULL;
	a->nhist_bufs = 0;
	a->hist_bytes = 0;
}

static int
flush_history(apply *a)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < a->nhist_bufs; i++)
		if (a->hist_bufs[i].rows.len > 0)
			rc = copy_history(a, &a->hist_bufs[i]);
	forget_history(a);
	return rc;
}

void
apply_net_free(apply *a)
{
	forget_history(a);
	net_free(a->net);
	a->net = NULL;
}

typedef struct flush_ctx {
	apply *a;
	arena scratch;
} flush_ctx;

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

int
apply_net_flush(apply *a)
{
	flush_ctx f = {a, {0}};
	int rc;

	if (a->net == NULL || (net_count(a->net) == 0 && a->nhist_bufs == 0))
		return TM_OK;
	arena_init(&f.scratch, 16 * 1024);
	log_debug("apply: %ld net changes for %ld changes", net_count(a->net), net_puts(a->net));
	rc = net_each(a->net, send_entry, &f);
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
