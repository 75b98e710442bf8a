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
#include "clock.h"
#include "exitcode.h"
#include "log.h"
#include "part_tree_sql.h"
#include "pgconn.h"
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

/* Constraints and triggers of the target's own added or dropped while run
 * runs: every table's are read again APPLY_CONSTRAINTS_REREAD_S after the
 * last time, all at once (the queries go on the apply's own connection, in
 * one group), as the first source transaction after that begins, so that
 * parallel apply keeps whole the groups it must within that time. A
 * foreign key that comes to reference a table is seen at once
 * (apply_net_put, referenced_still_not). */
#define APPLY_CONSTRAINTS_REREAD_S 60

static int read_constraints(apply *a, apply_rel *r);

static int
reread_constraints(apply *a)
{
	int rc = TM_OK, n = 0;

	a->constraints_at = clock_coarse_s();
	for (int i = 0; rc == TM_OK && i < a->nrels; i++) {
		apply_rel *r = a->rels[i];

		if (!r->types_loaded || r->table == NULL)
			continue;
		rc = read_constraints(a, r);
		n += rc == TM_OK;
	}
	log_debug("apply: constraints and triggers of %d table(s) read again", n);
	return rc;
}

void
apply_net_reread_when_due(apply *a)
{
	if (clock_coarse_s() - a->constraints_at >= APPLY_CONSTRAINTS_REREAD_S)
		(void) reread_constraints(a); /* a failure shows at the next statement */
}

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

/* Constraints of the target's own that tie r's rows to other rows than by
 * the key (a unique index on other columns, an exclusion constraint, a
 * foreign key from or to the table), and triggers of its own that fire for
 * the apply's writes (they may read other rows, which must be as after
 * every earlier group): its rows must then go in the group's order, after
 * every earlier group (APPLY_APART_GROUP); and whether
 * foreign keys reference it (r->referenced: apply_net_put). A target table
 * partitioned by hand counts with its partitions (part_tree_sql.h, which
 * does not wait behind a lock on any of them): a foreign key may reference one of
 * them, a unique index be on one alone. */
static int
load_constraints(apply *a, apply_rel *r, apply_apart *apart, bool *referenced)
{
	const char *p[] = {r->table->target_schema, r->table->target_table};
	PGresult *res = NULL;
	int rc = sink_query(a->sink, "reading a target table's constraints",
	                    "WITH r AS (SELECT format('%I.%I', $1::text, $2::text)::regclass AS oid),"
	                    " t AS (SELECT oid FROM r UNION SELECT relid FROM r,"
	                    "  LATERAL " PART_TREE_SQL("r.oid") " p)"
	                    " SELECT i.indexrelid::int8, a.attname,"
	                    " CASE WHEN i.indexprs IS NOT NULL OR i.indpred IS NOT NULL THEN 'e' END"
	                    " FROM t JOIN pg_index i ON i.indrelid = t.oid AND i.indisunique"
	                    " LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid"
	                    " AND a.attnum = ANY (i.indkey) AND a.attnum > 0"
	                    " UNION ALL SELECT 0, NULL,"
	                    " CASE WHEN c.confrelid = t.oid THEN 'r' ELSE c.contype::text END"
	                    " FROM t, pg_constraint c"
	                    " WHERE c.contype IN ('f', 'x') AND t.oid IN (c.conrelid, c.confrelid)"
	                    " UNION ALL SELECT 0, NULL, 'g' FROM t, pg_trigger g"
	                    " WHERE g.tgrelid = t.oid AND NOT g.tgisinternal AND g.tgenabled IN ('O', 'A')"
	                    " AND g.tgtype::int & 28 <> 0", /* on INSERT, DELETE or UPDATE */
	                    2, p, &res);

	for (int j = 0; rc == TM_OK && j < PQntuples(res); j++) {
		const char *index = PQgetvalue(res, j, 0);
		int ncols = 0;
		bool key_col = false;

		/* a unique index on exactly the key's columns is the key's */
		for (int k = 0; k < PQntuples(res); k++)
			if (strcmp(PQgetvalue(res, k, 0), index) == 0)
				ncols++;
		for (int k = 0; k < r->nkeys; k++)
			key_col |= strcmp(PQgetvalue(res, j, 1), r->colnames[r->key_idx[k]]) == 0;
		if (PQgetvalue(res, j, 2)[0] != '\0' || ncols != r->nkeys || !key_col)
			*apart = APPLY_APART_GROUP;
		*referenced |= strcmp(PQgetvalue(res, j, 2), "r") == 0;
	}
	PQclear(res);
	return rc;
}

/* r->apart and r->referenced from the target's catalog, on top of how apart
 * its key alone lets its rows go (r->apart_key); unchanged on a failure. */
static int
read_constraints(apply *a, apply_rel *r)
{
	apply_apart apart = r->apart_key;
	bool referenced = false;
	int rc = load_constraints(a, r, &apart, &referenced);

	if (rc == TM_OK) {
		r->apart = apart;
		r->referenced = referenced;
	}
	return rc;
}

/*
 * A foreign key of the target's own may have come to reference a table
 * since its constraints were read (a table added by hand while run runs).
 * Before net changes are written that made a row put onto a key the group
 * deleted one upsert (r->over_delete), the table is locked as its writes
 * lock it, for the rest of the group's transaction (so that no such key
 * can be added before it commits), and read again: when a key references
 * it now, its ON DELETE actions would be missed, so the group is given up
 * (PGCONN_RETRY_TARGET: run resumes from the stored position, reading
 * the constraints anew).
 */
static int
referenced_still_not(apply *a)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < a->nrels; i++) {
		apply_rel *r = a->rels[i];
		strbuf sql = STRBUF_INIT;

		if (!r->over_delete)
			continue;
		r->over_delete = false;
		strbuf_append(&sql, "LOCK TABLE ");
		strbuf_append_qualified(&sql, r->table->target_schema, r->table->target_table);
		strbuf_append(&sql, " IN ROW EXCLUSIVE MODE");
		rc = sink_command(a->sink, "locking a table to read its constraints", strbuf_str(&sql),
		                  0, NULL);
		strbuf_free(&sql);
		if (rc == TM_OK)
			rc = read_constraints(a, r);
		if (rc == TM_OK && r->referenced) {
			log_warn("target: a foreign key of the target's own references %s.%s now: the "
			         "transactions since the stored position are applied again, so that its "
			         "ON DELETE actions act on the rows deleted and inserted again",
			         r->table->target_schema, r->table->target_table);
			rc = PGCONN_RETRY_TARGET;
		}
	}
	return rc;
}

/* Is every key column's equality one of identical values (its type and
 * collation: tidemark.column_match 'image')? */
static bool
key_is_exact(const apply_rel *r, PGresult *res)
{
	bool exact = r->nkeys > 0;

	for (int k = 0; k < r->nkeys; k++) {
		bool image = false;

		for (int j = 0; j < PQntuples(res); j++)
			if (strcmp(PQgetvalue(res, j, 0), r->colnames[r->key_idx[k]]) == 0)
				image = strcmp(PQgetvalue(res, j, 3), "image") == 0;
		exact &= image;
	}
	return exact;
}

/* The target types of r's columns (rendered, target_ddl.h) and how apart
 * its rows can be applied (apply_net_apart), once per definition; false
 * when a type is not known. */
static bool
load_types(apply *a, apply_rel *r)
{
	const char *p[] = {r->table->target_schema, r->table->target_table};
	PGresult *res = NULL;
	bool all = true;

	if (r->types_loaded)
		goto out;
	r->types_loaded = true;
	r->apart_key = r->apart = APPLY_APART_GROUP;
	r->referenced = false;
	r->types = xcalloc((size_t) r->ncols + 1, sizeof(char *));
	/* the type by its catalog name, without modifiers: the column applies
	 * them as it does to a parameter (a cast to varchar(n) would cut a value
	 * silently, and "character" without a length is char(1)) */
	if (sink_query(a->sink, "reading a target table's column types",
	               "SELECT a.attname, n.nspname, t.typname,"
	               " tidemark.column_match(a.atttypid, a.attcollation) FROM pg_attribute a"
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
	if (key_is_exact(r, res))
		r->apart_key = APPLY_APART_KEY;
	else
		r->apart_key = r->nkeys > 0 ? APPLY_APART_TABLE : APPLY_APART_GROUP;
	PQclear(res);
	(void) read_constraints(a, r); /* on a failure, APPLY_APART_GROUP as set above */
out:
	for (int i = 0; i < r->ncols; i++)
		all &= r->types[i] != NULL;
	return all;
}

apply_apart
apply_net_apart(apply *a, apply_rel *r)
{
	(void) load_types(a, r);
	return r->apart;
}

bool
apply_net_referenced(apply *a, apply_rel *r)
{
	(void) load_types(a, r);
	return r->referenced;
}

void
apply_net_forget_rel(apply_rel *r)
{
	for (int i = 0; r->types != NULL && i < r->ncols; i++)
		free(r->types[i]);
	free(r->types);
	r->types = NULL;
	r->types_loaded = false;
}

/* Rows of one table held for one statement: a text[] parameter per column,
 * in binary format (dml_sql_array_element);
 * a history's entries also as lines of COPY text, the arrays kept only
 * while fewer than APPLY_HISTORY_COPY_MIN (hist_entry_add). */
typedef struct row_batch {
	uint32_t relid;
	int narrays;
	strbuf *arrays;   /* owned */
	long n;
	strbuf copy;      /* owned */
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
	strbuf_init(&b->copy);
	return b;
}

static void
batch_free_arrays(row_batch *b)
{
	for (int j = 0; b->arrays != NULL && j < b->narrays; j++)
		strbuf_free(&b->arrays[j]);
	free(b->arrays);
	b->arrays = NULL;
}

static void
batches_free(row_batch *list, int n)
{
	for (int i = 0; i < n; i++) {
		batch_free_arrays(&list[i]);
		strbuf_free(&list[i].copy);
	}
	free(list);
}

/* r's statement of many rows built by build, held in *stmt (types: r's,
 * loaded). */
static sink_stmt *
rows_stmt(apply *a, apply_rel *r, sink_stmt **stmt,
          void (*build)(strbuf *, const dml_sql_table *, const char *const *), int narrays)
{
	if (*stmt == NULL) {
		strbuf sql = STRBUF_INIT;
		dml_sql_table t = apply_rel_sql_table(r);

		t.shape = build == dml_sql_history_rows ? &r->shape.shape : NULL;
		build(&sql, &t, (const char *const *) r->types);
		*stmt = sink_stmt_hold(a->sink, sql.data, narrays);
		strbuf_free(&sql);
	}
	return *stmt;
}

/* Sends a batch's arrays as stmt's parameters, in binary format; the
 * arrays start again. */
static int
send_arrays(apply *a, sink_stmt *stmt, row_batch *b)
{
	const char **p = xcalloc((size_t) b->narrays + 1, sizeof(char *));
	int *lens = xcalloc((size_t) b->narrays + 1, sizeof(int));
	int *formats = xcalloc((size_t) b->narrays + 1, sizeof(int));
	int rc;

	for (int i = 0; i < b->narrays; i++) {
		dml_sql_array_end(&b->arrays[i]);
		p[i] = b->arrays[i].data;
		lens[i] = (int) b->arrays[i].len;
		formats[i] = 1;
	}
	rc = sink_send_formats(a->sink, stmt, p, lens, formats);
	free(p);
	free(lens);
	free(formats);
	for (int i = 0; i < b->narrays; i++)
		strbuf_reset(&b->arrays[i]);
	b->n = 0;
	return rc;
}

/* ---- history entries held ---- */

/* The bytes a batch holds. */
static size_t
batch_bytes(const row_batch *b)
{
	size_t n = b->copy.len;

	for (int i = 0; b->arrays != NULL && i < b->narrays; i++)
		n += b->arrays[i].len;
	return n;
}

/* One entry (its op, seq, position, time, then the row's values) into b:
 * a line of COPY text, and while the batch is small its arrays too. */
static void
hist_entry_add(row_batch *b, const char *const *entry, const pgoutput_tuple *t)
{
	for (int i = 0; i < b->narrays; i++) {
		const pgoutput_value *v = i < 4 ? NULL : &t->values[i - 4];
		const char *d = i < 4 ? entry[i] : v->kind == PGOUTPUT_VALUE_TEXT ? v->data : NULL;
		size_t len = i < 4 ? strlen(entry[i]) : v->len;

		dml_sql_copy_field(&b->copy, i == b->narrays - 1, d, len);
		if (b->arrays != NULL)
			dml_sql_array_element(&b->arrays[i], d, len);
	}
	if (++b->n >= APPLY_HISTORY_COPY_MIN)
		batch_free_arrays(b);
}

int
apply_net_history_row(apply *a, apply_rel *r, const char *op, const pgoutput_tuple *t,
                      arena *scratch)
{
	const char *entry[4];
	row_batch *b = batch_of(&a->hist_bufs, &a->nhist_bufs, r->relid, 4 + r->ncols);
	size_t before = batch_bytes(b);
	bool conflict;
	int rc;

	/* the entry's op, seq, position and time, as a history statement's */
	apply_shape_params(a, r, entry, 0, op, scratch);
	hist_entry_add(b, entry, t);
	a->hist_bytes += batch_bytes(b) - before;
	rc = apply_net_put(a, r, NET_ROW, t, NULL, &conflict);
	if (rc == TM_OK && a->hist_bytes > APPLY_NET_BYTES)
		rc = apply_net_flush(a);
	return rc;
}

/* Many entries of one table go in with COPY: the server reads each value
 * with the column type's input function as the arrays' casts do, at less
 * than half their cost per entry (bench_history); the wait for the
 * statements sent before it is paid once per batch. */
static int
copy_history(apply *a, apply_rel *r, const row_batch *b)
{
	strbuf sql = STRBUF_INIT;
	dml_sql_table t = apply_rel_sql_table(r);
	int rc;

	dml_sql_history_copy_in(&sql, &t);
	rc = sink_copy_begin(a->sink, sql.data);
	/* in pieces: libpq copies each into its buffer */
	for (size_t off = 0; rc == TM_OK && off < b->copy.len; off += 1 << 20) {
		size_t n = b->copy.len - off < (1u << 20) ? b->copy.len - off : 1u << 20;

		rc = sink_copy_data(a->sink, b->copy.data + off, (int) n);
	}
	if (rc == TM_OK)
		rc = sink_copy_end(a->sink);
	strbuf_free(&sql);
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
		} else if (b->arrays != NULL)
			rc = send_arrays(a, rows_stmt(a, r, &r->history_rows, dml_sql_history_rows,
			                              b->narrays), b);
		else
			rc = copy_history(a, r, b);
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
	free(a->put_vals);
	free(a->put_lens);
	a->put_vals = NULL;
	a->put_lens = NULL;
	a->put_cap = 0;
}

/* ---- the flush ---- */

/* The entries of one table for one statement's kind: its whole rows, its
 * deletes, or its partials of one set of present columns. */
typedef struct entry_group {
	uint32_t relid;
	net_kind kind;
	const bool *present;        /* borrowed from the first entry (NET_PARTIAL) */
	bool held;                  /* left until held_until (apply_net_flush_split) */
	bool sent;
	const net_entry **entries;  /* owned array; the entries borrowed from the
	                             * net set until net_clear */
	long n, cap;
} entry_group;

typedef struct flush_ctx {
	apply *a;
	arena scratch;
	entry_group *groups;    /* owned */
	int ngroups;
	apply_net_held held;    /* NULL: nothing held */
	void *held_ctx;
	bool hold_all;          /* nothing goes before held_until */
} flush_ctx;

static bool
same_group(const entry_group *g, const net_entry *e, bool held)
{
	return g->relid == (uint32_t) e->table && g->kind == e->kind && g->held == held &&
	       (e->kind != NET_PARTIAL ||
	        memcmp(g->present, e->present, sizeof(bool) * (size_t) e->ncols) == 0);
}

/* One entry, into its group (groups in the order of their first entry). */
static int
collect_entry(void *ctx, const net_entry *e)
{
	flush_ctx *f = ctx;
	apply_rel *r = apply_find_rel(f->a, (uint32_t) e->table);
	entry_group *g = NULL;
	bool held = false;

	if (r == NULL || r->table == NULL || r->ncols != e->ncols) {
		log_error("internal: a net change of relation %u lost its table", (unsigned) e->table);
		return TM_EXIT_INTERNAL;
	}
	if (f->held != NULL) {
		apply_held h = f->held(f->held_ctx, r, e);

		held = h != APPLY_HELD_NO;
		f->hold_all |= h == APPLY_HELD_ALL;
	}
	for (int i = f->ngroups - 1; i >= 0 && g == NULL; i--)
		if (same_group(&f->groups[i], e, held))
			g = &f->groups[i];
	if (g == NULL) {
		f->groups = realloc(f->groups, sizeof *f->groups * (size_t) (f->ngroups + 1));
		if (f->groups == NULL)
			abort();
		g = &f->groups[f->ngroups++];
		*g = (entry_group){(uint32_t) e->table, e->kind, e->present, held, false, NULL, 0, 0};
	}
	if (g->n == g->cap) {
		g->cap = g->cap > 0 ? 2 * g->cap : 16;
		g->entries = realloc(g->entries, sizeof *g->entries * (size_t) g->cap);
		if (g->entries == NULL)
			abort();
	}
	g->entries[g->n++] = e;
	return TM_OK;
}

/* One entry's own statement. */
static int
send_alone(flush_ctx *f, apply_rel *r, const net_entry *e)
{
	const char **v =
		arena_alloc(&f->scratch, sizeof(char *) * ((size_t) e->ncols + DML_SQL_HISTORY_PARAMS + 1));
	int rc;

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

/* The arrays of a group's statement of many rows: a row's columns; a
 * delete's key; a partial's present columns, then its key (as the
 * parameters of its single-row statement). */
static int
group_narrays(const apply_rel *r, const entry_group *g)
{
	int n = g->kind == NET_ROW ? r->ncols : r->nkeys;

	for (int i = 0; g->kind == NET_PARTIAL && i < r->ncols; i++)
		n += g->present[i];
	return n;
}

/* An entry's values appended to the arrays; the bytes they hold now. */
static size_t
entry_elements(const apply_rel *r, const net_entry *e, row_batch *b)
{
	size_t bytes = 0;
	int n = 0;

	for (int i = 0; e->kind != NET_DELETE && i < r->ncols; i++)
		if (e->kind == NET_ROW || e->present[i])
			dml_sql_array_element(&b->arrays[n++], e->values[i], e->lens[i]);
	for (int k = 0; e->kind != NET_ROW && k < r->nkeys; k++)
		dml_sql_array_element(&b->arrays[n++], e->values[r->key_idx[k]],
		                      e->lens[r->key_idx[k]]);
	b->n++;
	for (int i = 0; i < b->narrays; i++)
		bytes += b->arrays[i].len;
	return bytes;
}

static sink_stmt *
group_stmt(apply *a, apply_rel *r, const entry_group *g, int narrays)
{
	if (g->kind == NET_ROW)
		return rows_stmt(a, r, &r->upsert_rows, dml_sql_upsert_rows, narrays);
	if (g->kind == NET_DELETE)
		return rows_stmt(a, r, &r->delete_rows, dml_sql_delete_rows, narrays);
	return apply_stmt_partial_rows(a, r, g->present, (const char *const *) r->types);
}

/* Does a group go as statements of many rows? Whole rows do whenever the
 * columns' types are known, wide ones too (in binary, the arrays of values
 * of kilobytes cost the server less than a statement per row: a fifth less
 * on bench_apply's wide backlog); deletes and partials of a plain mirror
 * from APPLY_NET_MIN_BY_KEY entries on. */
static bool
group_in_one(apply *a, apply_rel *r, const entry_group *g)
{
	if (!load_types(a, r))
		return false;
	if (g->kind == NET_ROW)
		return true;
	return !apply_shaped(r) && g->n >= APPLY_NET_MIN_BY_KEY;
}

/* A group sent: statements of many rows of at most APPLY_NET_BATCH_BYTES
 * of arrays each, or each entry alone. */
static int
send_group(flush_ctx *f, const entry_group *g)
{
	apply_rel *r = apply_find_rel(f->a, g->relid);
	row_batch b = {g->relid, 0, NULL, 0, STRBUF_INIT};
	sink_stmt *stmt;
	int rc = TM_OK;

	if (!group_in_one(f->a, r, g)) {
		for (long i = 0; rc == TM_OK && i < g->n; i++)
			rc = send_alone(f, r, g->entries[i]);
		return rc;
	}
	b.narrays = group_narrays(r, g);
	b.arrays = xcalloc((size_t) b.narrays + 1, sizeof(strbuf));
	stmt = group_stmt(f->a, r, g, b.narrays);
	for (long i = 0; rc == TM_OK && i < g->n; i++)
		if (entry_elements(r, g->entries[i], &b) > APPLY_NET_BATCH_BYTES)
			rc = send_arrays(f->a, stmt, &b);
	if (rc == TM_OK && b.n > 0)
		rc = send_arrays(f->a, stmt, &b);
	for (int i = 0; i < b.narrays; i++)
		strbuf_free(&b.arrays[i]);
	free(b.arrays);
	return rc;
}

/*
 * The groups of one kind not sent yet, for every table; only those not
 * held when free_only. The keys of a flush's entries all differ, so only
 * other unique indexes of the target could tell an order between them
 * (tidemark makes none): the deletes go first (they only free values),
 * then the partials, then the whole rows.
 */
static int
send_groups(flush_ctx *f, net_kind kind, bool free_only)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < f->ngroups; i++) {
		entry_group *g = &f->groups[i];

		if (g->kind == kind && !g->sent && !(free_only && g->held)) {
			g->sent = true;
			rc = send_group(f, g);
		}
	}
	return rc;
}

/* Every kind's groups not sent yet, in their order; free_only: those not
 * held, what may go before held_until (nothing when a table of the group
 * must go in the group's order). Those meet none of the held ones' keys,
 * nor their rows by another constraint (apply_apart), so no order between
 * the two parts matters. */
static int
send_kinds(flush_ctx *f, bool free_only)
{
	int rc;

	if (free_only && f->hold_all)
		return TM_OK;
	rc = send_groups(f, NET_DELETE, free_only);

	if (rc == TM_OK)
		rc = send_groups(f, NET_PARTIAL, free_only);
	if (rc == TM_OK)
		rc = send_groups(f, NET_ROW, free_only);
	return rc;
}

int
apply_net_flush_split(apply *a, apply_net_held held, int (*held_until)(void *ctx), void *ctx)
{
	flush_ctx f = {a, {0}, NULL, 0, held, ctx, false};
	bool any_held = false;
	int rc;

	if (a->net == NULL || (net_count(a->net) == 0 && a->nhist_bufs == 0))
		return TM_OK;
	if ((rc = referenced_still_not(a)) != TM_OK)
		return rc;
	arena_init(&f.scratch, 16 * 1024);
	log_debug("apply: %ld net changes for %ld changes", net_count(a->net), net_puts(a->net));
	rc = net_each(a->net, collect_entry, &f);
	if (rc == TM_OK)
		rc = send_kinds(&f, true);
	for (int i = 0; i < f.ngroups; i++)
		any_held |= !f.groups[i].sent;
	if (rc == TM_OK && any_held)
		rc = held_until(ctx);
	if (rc == TM_OK)
		rc = send_kinds(&f, false);
	for (int i = 0; i < f.ngroups; i++)
		free(f.groups[i].entries);
	free(f.groups);
	net_clear(a->net);
	arena_free(&f.scratch);
	/* the mirror's rows sent, their history's entries */
	return rc == TM_OK ? flush_history(a) : rc;
}

int
apply_net_flush(apply *a)
{
	return apply_net_flush_split(a, NULL, NULL, NULL);
}

int
apply_net_put(apply *a, apply_rel *r, net_kind kind, const pgoutput_tuple *t, const bool *present,
              bool *conflict)
{
	int n = (t->ncols > r->ncols ? t->ncols : r->ncols) + 1;
	net_put_result res;

	if (n > a->put_cap) {
		a->put_cap = n;
		a->put_vals = xrealloc(a->put_vals, sizeof(char *) * (size_t) n);
		a->put_lens = xrealloc(a->put_lens, sizeof(size_t) * (size_t) n);
	}
	/* a value not sent as text (NULL, unchanged TOAST) is NULL here */
	for (int i = 0; i < n; i++) {
		bool text = i < t->ncols && t->values[i].kind == PGOUTPUT_VALUE_TEXT;

		a->put_vals[i] = text ? t->values[i].data : NULL;
		a->put_lens[i] = text ? t->values[i].len : 0;
	}
	/* a row onto a key this group deleted, of a table that foreign keys of
	 * the target's own reference: the delete goes first, so that their
	 * ON DELETE actions act as on the source's delete (the upsert alone
	 * would leave the rows that referred to the row deleted). A table
	 * known not to be referenced is not looked up. */
	*conflict = false;
	if (kind == NET_ROW && (!r->types_loaded || r->referenced) &&
	    net_deleted(a->net, (int) r->relid, r->nkeys, r->key_idx, a->put_vals, a->put_lens) &&
	    apply_net_referenced(a, r)) {
		int rc = apply_net_flush(a);

		if (rc != TM_OK)
			return rc;
	}
	res = net_put(a->net, (int) r->relid, kind, r->ncols, r->nkeys, r->key_idx, a->put_vals,
	              a->put_lens, present);
	*conflict = res == NET_CONFLICT;
	r->over_delete |= res == NET_PUT_OVER_DELETE;
	if (!*conflict && net_bytes(a->net) > APPLY_NET_BYTES)
		return apply_net_flush(a);
	return TM_OK;
}
