#include "snap_reader.h"
#include "xalloc.h"

#include <errno.h>
#include <limits.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "codec.h"
#include "key_order.h"
#include "keyless_sql.h"
#include "keyless_stage.h"
#include "lock_watch.h"
#include "log.h"
#include "part_tree_sql.h"
#include "pgconn.h"
#include "source_query.h"
#include "strbuf.h"

#define SRC PGCONN_SOURCE

/* A read that waited lock_timeout for a lock on its table (an ALTER TABLE
 * or a prepared transaction holds it): never returned by this module; the
 * table is left for LOCKED_PAUSE_S and the others read meanwhile. */
#define READ_LOCKED 1000
/* A read named a column or the table by a definition the source no longer
 * has (changed since load_columns): the failure is kept in the cursor and
 * logged only when the definition turns out unchanged (read_or_gone). */
#define READ_STALE 1001
#define LOCK_TIMEOUT_S 5.0 /* the readers' lock_timeout (open_conn) */
#define LOCKED_PAUSE_S 5.0
#define LOCKED_WARN_EVERY_S 60.0

typedef struct job_slot {
	snap_job job;            /* the latest submission */
	bool active;
	int claimed_by;          /* thread index, -1: free */
	bool read_to_end;        /* the reader met the end for this generation */
	double not_before;       /* clock_now_s(): left alone until then (a lock) */
	double locked_since;     /* the first read that met the lock; 0: none */
	double locked_warned;    /* when the holders were last named */
} job_slot;

typedef struct issued {
	struct issued *next;
	char id[64];
	int table_id;
	long generation;
	int range_no;
	int thread;
	snap_result *result;     /* owned; NULL until the read is done */
} issued;

struct snap_reader {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *conninfo;          /* owned */
	char *target;            /* owned: the target's conninfo (staging) */
	char session[32];
	int nthreads;
	pthread_t *threads;      /* owned */
	int *outstanding;        /* per thread: results not yet released */
	bool stop;
	int status;
	job_slot *jobs;          /* owned array */
	int njobs;
	issued *issued;          /* owned list */
	long seq;
	PGconn *reread_conn;     /* owned: the calling thread's, for snap_reader_reread */
	metrics *metrics;        /* borrowed; NULL: none */
};

typedef struct reader_thread {
	snap_reader *r;
	int index;
} reader_thread;

/* The state of one table being read by one thread. */
typedef struct table_cursor {
	snap_job job;            /* owned copy */
	int ncols;
	char **colnames;         /* owned */
	char **coltypes;         /* owned: each column's base type (codec.h) */
	strbuf definition;       /* the columns as read: "name type, ..." (format_type) */
	char *stale_failure;     /* owned: a READ_STALE failure's text, not logged yet */
	int stale_rc;            /* its status */
	int *key_idx;            /* owned */
	char **next_after;       /* owned: key of the last row read */
	long long estimate;
	long rows_limit;
	bool loaded;
	bool partitioned;        /* read with its partitions (no ONLY) */
	char *owner;             /* owned: the table's owner, for a GRANT in an error */
	snap_chunk_format format;
	bool by_keys;            /* see snap_result.by_keys */
	char order_note[CODEC_ORDER_REASON_MAX];
	keyless_stage **stage;   /* borrowed: the thread's, for a table without a key */
} table_cursor;

/* ---- keys and jobs ---- */

void
snap_keys_free(char **keys, int n)
{
	if (keys == NULL)
		return;
	for (int i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

char **
snap_keys_copy(char *const *keys, int n)
{
	char **out;

	if (keys == NULL)
		return NULL;
	out = calloc((size_t) n + 1, sizeof(char *));
	if (out == NULL)
		abort();
	for (int i = 0; i < n; i++)
		if ((out[i] = strdup(keys[i])) == NULL)
			abort();
	return out;
}

/* Like snap_keys_copy, for arrays whose entries may be NULL. */
static char **
keys_copy_nullable(char *const *keys, int n)
{
	char **out;

	if (keys == NULL)
		return NULL;
	out = xcalloc((size_t) n + 1, sizeof(char *));
	for (int i = 0; i < n; i++)
		out[i] = keys[i] ? xstrdup(keys[i]) : NULL;
	return out;
}

static void
job_copy(snap_job *dst, const snap_job *src)
{
	*dst = *src;
	dst->schema = xstrdup(src->schema);
	dst->name = xstrdup(src->name);
	dst->key_columns = snap_keys_copy(src->key_columns, src->nkeys);
	dst->start_key = snap_keys_copy(src->start_key, src->nkeys);
	dst->range_lower = src->range_lower ? xstrdup(src->range_lower) : NULL;
	dst->range_upper = src->range_upper ? xstrdup(src->range_upper) : NULL;
	dst->target_names = snap_keys_copy(src->target_names, src->ntarget);
	dst->target_types = snap_keys_copy(src->target_types, src->ntarget);
	dst->reread_keys = snap_keys_copy(src->reread_keys, src->nreread * src->nkeys);
	dst->target_order = keys_copy_nullable(src->target_order, src->nkeys);
	dst->target_schema = src->target_schema ? xstrdup(src->target_schema) : NULL;
	dst->target_table = src->target_table ? xstrdup(src->target_table) : NULL;
}

void
snap_job_clear(snap_job *job)
{
	free(job->schema);
	free(job->name);
	snap_keys_free(job->key_columns, job->nkeys);
	snap_keys_free(job->start_key, job->nkeys);
	free(job->range_lower);
	free(job->range_upper);
	snap_keys_free(job->target_names, job->ntarget);
	snap_keys_free(job->target_types, job->ntarget);
	snap_keys_free(job->reread_keys, job->nreread * job->nkeys);
	snap_keys_free(job->target_order, job->nkeys);
	free(job->target_schema);
	free(job->target_table);
	memset(job, 0, sizeof *job);
}

static void
result_free(snap_result *res)
{
	if (res == NULL)
		return;
	snap_chunk_free(res->chunk);
	snap_keys_free(res->prev_key, res->nkeys);
	snap_keys_free(res->last_key, res->nkeys);
	free(res->xip);
	snap_visible_clear(&res->snap);
	free(res->refused);
	free(res->definition);
	free(res);
}

static void
cursor_clear(table_cursor *c)
{
	keyless_stage **stage = c->stage;

	snap_keys_free(c->next_after, c->job.nkeys);
	snap_keys_free(c->colnames, c->ncols);
	snap_keys_free(c->coltypes, c->ncols);
	strbuf_free(&c->definition);
	free(c->stale_failure);
	free(c->key_idx);
	free(c->owner);
	snap_job_clear(&c->job);
	memset(c, 0, sizeof *c);
	c->stage = stage;
}

/* ---- source queries of a reader ---- */

/* Does the target have this column with exactly this (built-in) type? */
static bool
same_target_type(const snap_job *job, const char *name, const char *type)
{
	for (int i = 0; i < job->ntarget; i++)
		if (strcmp(job->target_names[i], name) == 0)
			return strcmp(job->target_types[i], type) == 0;
	return false;
}

/* The LIMIT of the next chunk: at most chunk_rows rows, and about
 * chunk_bytes bytes at the average row size seen (statistics at first,
 * then the rows read); a reread, of its keys. The bytes read are measured
 * too (copy_rows): the estimate only saves cutting a chunk short. */
static void
limit_rows(table_cursor *c, long long row_bytes)
{
	c->rows_limit = c->job.chunk_rows;
	if (c->job.reread_keys != NULL) {
		c->rows_limit = c->job.nreread; /* every key asked for, at most once each */
		return;
	}
	if (row_bytes > 0 && c->job.chunk_bytes / row_bytes < c->rows_limit)
		c->rows_limit = c->job.chunk_bytes / row_bytes;
	if (c->rows_limit < 1)
		c->rows_limit = 1;
}

/* Does the target order the key as the source does (key_order.h)? The
 * source's descriptors of the key columns against the job's target ones. */
static int
compare_order(PGconn *conn, table_cursor *c)
{
	char **src = NULL;
	int rc = key_order_source(conn, c->job.schema, c->job.name, c->job.nkeys,
	                          c->job.key_columns, &src);

	if (rc == TM_OK)
		c->by_keys = !codec_order_compare(c->job.nkeys, (const char *const *) c->job.key_columns,
		                                  (const char *const *) src,
		                                  (const char *const *) c->job.target_order,
		                                  c->order_note, sizeof c->order_note);
	for (int k = 0; src != NULL && k < c->job.nkeys; k++)
		free(src[k]);
	free(src);
	return rc;
}

/* The bytes of table alias's heap and TOAST as of their last VACUUM or
 * ANALYZE (as reltuples): read from pg_class, so that no lock is asked on
 * the table (pg_relation_size's would wait behind an ALTER TABLE). */
#define PAGES_BYTES(alias)                                                              \
	"((" alias ".relpages + coalesce((SELECT tc.relpages FROM pg_class tc WHERE tc.oid = " \
	alias ".reltoastrelid), 0))::bigint * current_setting('block_size')::bigint)"

/* A partitioned table holds no rows itself: it is read with all its
 * partitions (no ONLY), and its size is that of its leaves. Any other
 * table is read ONLY: an inheritance child is a table of its own. */
static int
load_scope(PGconn *conn, table_cursor *c)
{
	const char *p[] = {c->job.schema, c->job.name};
	PGresult *r;
	int rc = pgconn_exec(conn, SRC, "reading the kind of a table to copy",
	                     "SELECT c.relkind = 'p', s.rows, s.bytes / nullif(s.rows, 0),"
	                     " pg_get_userbyid(c.relowner)"
	                     " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,"
	                     " LATERAL (SELECT sum(greatest(l.reltuples, 0))::bigint AS rows,"
	                     "   sum(" PAGES_BYTES("l") ")::bigint AS bytes"
	                     "   FROM " PART_TREE_SQL("c.oid") " t JOIN pg_class l ON l.oid = t.relid"
	                     "   WHERE t.isleaf AND c.relkind = 'p') s"
	                     " WHERE n.nspname = $1 AND c.relname = $2", 2, p, &r);

	if (rc != TM_OK)
		return rc;
	c->partitioned = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	free(c->owner);
	c->owner = PQntuples(r) == 1 ? xstrdup(PQgetvalue(r, 0, 3)) : NULL;
	if (c->partitioned && !PQgetisnull(r, 0, 1)) {
		c->estimate = atoll(PQgetvalue(r, 0, 1));
		limit_rows(c, PQgetisnull(r, 0, 2) ? 0 : atoll(PQgetvalue(r, 0, 2)));
	}
	PQclear(r);
	return TM_OK;
}

static int
load_columns(PGconn *conn, table_cursor *c, bool *gone)
{
	const char *p[] = {c->job.schema, c->job.name};
	PGresult *r;
	/* a row per column, or one of NULLs for a table without columns; none
	 * when the table is gone */
	int rc = pgconn_exec(conn, SRC, "reading the columns of a table to copy",
	                     "SELECT a.attname, (SELECT greatest(c.reltuples, 0)::bigint FROM pg_class c"
	                     "   WHERE c.oid = t.oid),"
	                     " (SELECT CASE WHEN c.reltuples > 0 THEN (" PAGES_BYTES("c") ""
	                     "   / c.reltuples)::bigint END FROM pg_class c WHERE c.oid = t.oid),"
	                     " format_type(a.atttypid, a.atttypmod), a.atttypid < 16384,"
	                     CODEC_KEY_TYPE_COLUMNS " FROM (SELECT c.oid FROM pg_class c"
	                     "   JOIN pg_namespace n ON n.oid = c.relnamespace"
	                     "   WHERE n.nspname = $1 AND c.relname = $2) t"
	                     " LEFT JOIN pg_attribute a ON a.attrelid = t.oid"
	                     " AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''"
	                     " ORDER BY a.attnum", 2, p, &r);

	if (rc != TM_OK)
		return rc;
	*gone = PQntuples(r) == 0;
	c->ncols = PQntuples(r) == 1 && PQgetisnull(r, 0, 0) ? 0 : PQntuples(r);
	c->colnames = xcalloc((size_t) c->ncols + 1, sizeof(char *));
	c->coltypes = xcalloc((size_t) c->ncols + 1, sizeof(char *));
	c->key_idx = xcalloc((size_t) c->job.nkeys + 1, sizeof(int));
	c->format = SNAP_CHUNK_BINARY;
	strbuf_reset(&c->definition);
	for (int i = 0; i < c->ncols; i++) {
		strbuf type = STRBUF_INIT;

		strbuf_appendf(&c->definition, "%s%s %s", i ? ", " : "", PQgetvalue(r, i, 0),
		               PQgetvalue(r, i, 3));
		c->colnames[i] = xstrdup(PQgetvalue(r, i, 0));
		strbuf_append_qualified(&type, PQgetvalue(r, i, 5), PQgetvalue(r, i, 6));
		c->coltypes[i] = strbuf_steal(&type);
		if (strcmp(PQgetvalue(r, i, 4), "t") != 0 ||
		    !same_target_type(&c->job, c->colnames[i], PQgetvalue(r, i, 3)))
			c->format = SNAP_CHUNK_TEXT;
	}
	if (!*gone) {
		c->estimate = atoll(PQgetvalue(r, 0, 1));
		/* the average row's size on disk, when statistics know it */
		limit_rows(c, PQgetisnull(r, 0, 2) ? 0 : atoll(PQgetvalue(r, 0, 2)));
	}
	PQclear(r);
	for (int k = 0; !*gone && k < c->job.nkeys; k++) {
		int found = -1;

		for (int i = 0; i < c->ncols && found < 0; i++)
			if (strcmp(c->colnames[i], c->job.key_columns[k]) == 0)
				found = i;
		if (found < 0) {
			/* dropped and created again under the name, or the key renamed:
			 * the capture message of that change decides what comes next */
			log_info("snapshot of %s.%s: key column \"%s\" no longer exists on the source: "
			         "the table is not the one being copied",
			         c->job.schema, c->job.name, c->job.key_columns[k]);
			*gone = true;
			return TM_OK;
		}
		c->key_idx[k] = found;
	}
	if (*gone)
		return TM_OK;
	rc = load_scope(conn, c);
	return rc == TM_OK ? compare_order(conn, c) : rc;
}

static void
append_key_cols(strbuf *sql, const table_cursor *c)
{
	for (int k = 0; k < c->job.nkeys; k++) {
		if (k > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, c->job.key_columns[k]);
	}
}

/* (lit::type, ...): key values as escaped literals cast to their column's
 * base type, as the column is (codec.h). */
static void
append_key_literals(PGconn *conn, const table_cursor *c, strbuf *sql, char *const *values)
{
	strbuf_appendc(sql, '(');
	for (int k = 0; k < c->job.nkeys; k++) {
		char *lit = PQescapeLiteral(conn, values[k], strlen(values[k]));

		if (lit == NULL)
			abort();
		strbuf_appendf(sql, "%s%s::%s", k > 0 ? ", " : "", lit, c->coltypes[c->key_idx[k]]);
		PQfreemem(lit);
	}
	strbuf_appendc(sql, ')');
}

/* WHERE (keys) > (last) */
static void
append_after(PGconn *conn, const table_cursor *c, strbuf *sql, bool *where)
{
	strbuf_append(sql, " WHERE (");
	*where = true;
	for (int k = 0; k < c->job.nkeys; k++) {
		strbuf_append(sql, k > 0 ? ", " : "");
		codec_append_key_operand(sql, NULL, c->job.key_columns[k], c->coltypes[c->key_idx[k]]);
	}
	strbuf_append(sql, ") > ");
	append_key_literals(conn, c, sql, c->next_after);
}

/* AND first_key > lower (side 0) or <= upper (side 1): a range's bound. */
static void
append_range_bound(PGconn *conn, const table_cursor *c, strbuf *sql, int side, bool *where)
{
	const char *v = side == 0 ? c->job.range_lower : c->job.range_upper;
	const char *type = c->coltypes[c->key_idx[0]];
	char *lit;

	if (v == NULL)
		return;
	strbuf_append(sql, *where ? " AND " : " WHERE ");
	*where = true;
	codec_append_key_operand(sql, NULL, c->job.key_columns[0], type);
	if ((lit = PQescapeLiteral(conn, v, strlen(v))) == NULL)
		abort();
	strbuf_appendf(sql, " %s %s::%s", side == 0 ? ">" : "<=", lit, type);
	PQfreemem(lit);
}

/* WHERE (keys) > (last) [AND first <= upper], or WHERE first > lower [AND
 * first <= upper] for a range's first chunk, or WHERE (keys) IN ((..),
 * ...) for a reread. */
static void
append_chunk_where(PGconn *conn, const table_cursor *c, strbuf *sql)
{
	int nkeys = c->job.nkeys;
	bool where = false;

	if (c->job.reread_keys == NULL) {
		if (c->next_after == NULL)
			append_range_bound(conn, c, sql, 0, &where);
		else
			append_after(conn, c, sql, &where);
		append_range_bound(conn, c, sql, 1, &where);
		return;
	}
	strbuf_append(sql, " WHERE (");
	for (int k = 0; k < nkeys; k++) {
		strbuf_append(sql, k > 0 ? ", " : "");
		codec_append_key_operand(sql, NULL, c->job.key_columns[k], c->coltypes[c->key_idx[k]]);
	}
	strbuf_append(sql, ") IN (");
	for (int i = 0; i < c->job.nreread; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		append_key_literals(conn, c, sql, c->job.reread_keys + (size_t) i * (size_t) nkeys);
	}
	strbuf_appendc(sql, ')');
}

/* COPY (SELECT cols FROM t WHERE (keys) > (last) ORDER BY keys LIMIT n).
 * COPY takes no parameters: the key values are escaped literals. */
static void
chunk_sql(PGconn *conn, const table_cursor *c, strbuf *sql)
{
	strbuf_append(sql, "COPY (SELECT ");
	/* binary rows carry their key as text first (see snap_chunk.h) */
	for (int k = 0; c->format == SNAP_CHUNK_BINARY && k < c->job.nkeys; k++) {
		codec_append_key_text(sql, NULL, c->job.key_columns[k]);
		strbuf_appendf(sql, " AS \"tidemark key %d\", ", k + 1);
	}
	if (c->job.keys_only)
		append_key_cols(sql, c);
	for (int i = 0; !c->job.keys_only && i < c->ncols; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, c->colnames[i]);
	}
	strbuf_append(sql, c->partitioned ? " FROM " : " FROM ONLY ");
	strbuf_append_qualified(sql, c->job.schema, c->job.name);
	append_chunk_where(conn, c, sql);
	strbuf_append(sql, " ORDER BY ");
	append_key_cols(sql, c);
	strbuf_appendf(sql, " LIMIT %ld) TO STDOUT%s", c->rows_limit,
	               c->format == SNAP_CHUNK_BINARY ? " (FORMAT binary)" : "");
}

/* "xmin:xmax:xip,xip,..." */
static void
parse_snapshot(const char *text, snap_result *res)
{
	const char *p = strchr(text, ':');
	int n = 0;

	free(res->xip); /* a read made again */
	res->xip = NULL;
	res->nxip = 0;
	p = p ? strchr(p + 1, ':') : NULL;
	if (p == NULL || p[1] == '\0')
		return;
	for (const char *q = p + 1; *q; q++)
		n += *q == ',';
	res->xip = calloc((size_t) n + 1, sizeof(uint64_t));
	if (res->xip == NULL)
		abort();
	for (const char *q = p + 1; *q; ) {
		char *end;

		res->xip[res->nxip++] = strtoull(q, &end, 10);
		q = *end == ',' ? end + 1 : end;
		if (end == q && *q != '\0')
			break;
	}
}

/* Ends a COPY TO STDOUT early: asks the server to cancel it and reads
 * what it still sends, keeping none of it. The statement then fails
 * (canceled) or ends; either way its transaction is only rolled back. */
static void
cancel_copy(PGconn *conn)
{
	PGcancel *cancel = PQgetCancel(conn);
	char errbuf[256];
	char *buf;

	if (cancel != NULL && !PQcancel(cancel, errbuf, sizeof errbuf))
		log_debug("source: cancelling a chunk read: %s", errbuf);
	PQfreeCancel(cancel);
	while (PQgetCopyData(conn, &buf, 0) > 0)
		PQfreemem(buf);
}

/* The read waited lock_timeout for its table's lock (snap_reader sets it). */
static bool
lock_timed_out(const PGresult *r)
{
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

	return state != NULL && strcmp(state, "55P03") == 0;
}

/* A read that did not start: a lock wait given up (READ_LOCKED), a column
 * or the table missing, which a change of the definition since it was
 * read explains (READ_STALE, kept in c, not logged yet), or logged and
 * classified. */
static int
read_refused(PGconn *conn, table_cursor *c, const char *what, const PGresult *r)
{
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	const char *message = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
	pgconn_subject subject = {c->job.schema, c->job.name, c->owner};
	strbuf text = STRBUF_INIT;

	if (lock_timed_out(r))
		return READ_LOCKED;
	if (state == NULL || (strcmp(state, "42703") != 0 && strcmp(state, "42P01") != 0))
		return pgconn_fail_on(conn, SRC, what, r, &subject);
	strbuf_appendf(&text, "%s: %s SQLSTATE %s", what, message ? message : "", state);
	free(c->stale_failure);
	c->stale_failure = strbuf_steal(&text);
	c->stale_rc = pgconn_classify(SRC, state, true);
	return READ_STALE;
}

/*
 * Reads the rows of a COPY TO STDOUT into the chunk. Once the rows held
 * reach max_bytes (at least one row read), the read stops there and *cut
 * is set: the rows so far are a whole prefix, in key order, of what the
 * statement would have returned, so the chunk ends at the last of them.
 */
static int
copy_rows(PGconn *conn, table_cursor *c, const char *sql, snap_chunk *chunk,
          long long max_bytes, bool *cut)
{
	PGresult *r = PQexec(conn, sql);
	pgconn_subject subject = {c->job.schema, c->job.name, c->owner};
	char *buf;
	int n;
	tm_error err;

	*cut = false;
	if (PQresultStatus(r) != PGRES_COPY_OUT) {
		int rc = read_refused(conn, c, "reading a snapshot chunk", r);

		PQclear(r);
		return rc;
	}
	PQclear(r);
	while (!*cut && (n = PQgetCopyData(conn, &buf, 0)) > 0) {
		int bad = snap_chunk_add(chunk, buf, (size_t) n, &err);

		PQfreemem(buf);
		if (bad) {
			log_error("source: %s", err.msg);
			return TM_EXIT_INTERNAL;
		}
		*cut = chunk->nrows > 0 && (long long) (chunk->data.len + chunk->keys.len) >= max_bytes;
	}
	if (*cut)
		cancel_copy(conn);
	r = PQgetResult(conn);
	/* a COPY the server ended with an error (a value it could not convert,
	 * say) is that error, not rows missing from a COPY it completed */
	if (*cut)
		n = TM_OK;
	else if (PQresultStatus(r) != PGRES_COMMAND_OK)
		n = pgconn_fail_on(conn, SRC, "reading a snapshot chunk", r, &subject);
	else if (snap_chunk_finish(chunk, &err) != 0) {
		log_error("source: %s", err.msg);
		n = TM_EXIT_INTERNAL;
	} else
		n = TM_OK;
	PQclear(r);
	while ((r = PQgetResult(conn)) != NULL)
		PQclear(r);
	return n;
}

/* ---- a table without a key: one read, into the staging table ---- */

/* COPY (SELECT cols FROM [ONLY] t) TO STDOUT: a partitioned table with its
 * partitions, any other ONLY (as chunk_sql) */
static void
whole_sql(const table_cursor *c, strbuf *sql)
{
	strbuf_append(sql, "COPY (SELECT ");
	keyless_sql_columns(sql, c->ncols, (const char *const *) c->colnames);
	strbuf_append(sql, c->partitioned ? " FROM " : " FROM ONLY ");
	strbuf_append_qualified(sql, c->job.schema, c->job.name);
	strbuf_appendf(sql, ") TO STDOUT%s", c->format == SNAP_CHUNK_BINARY ? " (FORMAT binary)" : "");
}

/* The source's COPY data, as it comes, into the staging COPY. */
static int
forward_rows(PGconn *conn, table_cursor *c, keyless_stage *stage, const char *sql)
{
	PGresult *r = PQexec(conn, sql);
	pgconn_subject subject = {c->job.schema, c->job.name, c->owner};
	char *buf;
	int n, rc = TM_OK;

	if (PQresultStatus(r) != PGRES_COPY_OUT) {
		rc = read_refused(conn, c, "reading a table without a key", r);
		PQclear(r);
		return rc;
	}
	PQclear(r);
	while ((n = PQgetCopyData(conn, &buf, 0)) > 0) {
		if (rc == TM_OK)
			rc = keyless_stage_data(stage, buf, n);
		PQfreemem(buf);
	}
	while ((r = PQgetResult(conn)) != NULL) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == TM_OK)
			rc = pgconn_fail_on(conn, SRC, "reading a table without a key", r, &subject);
		PQclear(r);
	}
	if (n == -2 && rc == TM_OK)
		rc = pgconn_fail(conn, SRC, "reading a table without a key", NULL);
	return rc;
}

/* The snapshot taken, the rows read and staged: both transactions end. */
static int
read_whole(PGconn *conn, table_cursor *c, snap_result *res)
{
	keyless_stage *stage = *c->stage;
	strbuf sql = STRBUF_INIT;
	bool behind = false;
	int rc = keyless_stage_begin(stage, c->job.table_id, c->job.target_schema,
	                             c->job.target_table, c->ncols, (const char *const *) c->colnames,
	                             c->format == SNAP_CHUNK_BINARY, &behind);

	whole_sql(c, &sql);
	if (rc == TM_OK && behind)
		log_info("snapshot of %s.%s: the source's columns changed and the target table does not "
		         "have them yet; it is read again once the change has reached the target",
		         c->job.schema, c->job.name);
	else if (rc == TM_OK)
		rc = forward_rows(conn, c, stage, sql.data);
	free(res->refused);
	res->refused = NULL;
	if (rc == TM_OK && !behind)
		rc = keyless_stage_commit(stage, &res->rows_staged, &res->refused);
	else if (rc != TM_OK)
		keyless_stage_abort(stage);
	if (res->refused != NULL) {
		log_info("snapshot of %s.%s: the target table refused a value read (%s): a change of a "
		         "column's type may not have reached it yet; it is read again once the stream "
		         "has passed the read", c->job.schema, c->job.name, res->refused);
		free(res->definition);
		res->definition = xstrdup(strbuf_str(&c->definition));
		behind = true;
	}
	snap_chunk_free(res->chunk);
	res->chunk = snap_chunk_new(c->format, c->ncols, (const char *const *) c->colnames, 0,
	                            c->key_idx);
	/* not staged: the apply thread reads it again at the high watermark */
	res->staged = rc == TM_OK && !behind;
	res->behind = rc == TM_OK && behind;
	strbuf_free(&sql);
	return rc;
}

/* A read of the key columns alone (job.keys_only): text rows of the key
 * values; NULL for any other read. */
static snap_chunk *
keys_only_chunk(table_cursor *c)
{
	int *idx;
	snap_chunk *ch;

	if (!c->job.keys_only)
		return NULL;
	c->format = SNAP_CHUNK_TEXT;
	idx = xcalloc((size_t) c->job.nkeys + 1, sizeof(int));
	for (int k = 0; k < c->job.nkeys; k++)
		idx[k] = k;
	ch = snap_chunk_new(SNAP_CHUNK_TEXT, c->job.nkeys, (const char *const *) c->job.key_columns,
	                    c->job.nkeys, idx);
	free(idx);
	return ch;
}

/* The read itself: one short REPEATABLE READ transaction (for a table
 * without a key, one as long as the table takes to read). */
static int
read_chunk(PGconn *conn, table_cursor *c, snap_result *res)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	int rc = pgconn_command(conn, SRC, "starting a snapshot read",
	                        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);

	if (rc == TM_OK)
		rc = pgconn_exec(conn, SRC, "taking the snapshot of a chunk",
		                 "SELECT pg_current_snapshot()::text", 0, NULL, &r);
	if (rc == TM_OK) {
		parse_snapshot(PQgetvalue(r, 0, 0), res);
		snap_visible_clear(&res->snap);
		snap_visible_parse(PQgetvalue(r, 0, 0), &res->snap);
		PQclear(r);
	}
	if (rc == TM_OK && c->job.nkeys == 0)
		rc = read_whole(conn, c, res);
	else if (rc == TM_OK) {
		snap_chunk_free(res->chunk);
		res->chunk = keys_only_chunk(c);
		if (res->chunk == NULL)
			res->chunk = snap_chunk_new(c->format, c->ncols, (const char *const *) c->colnames,
			                            c->job.nkeys, c->key_idx);
		chunk_sql(conn, c, &sql);
		/* a reread reads every key asked for: a request answered only in
		 * part would be forgotten whole (snapshot.c reads at most 100) */
		rc = copy_rows(conn, c, sql.data, res->chunk,
		               c->job.reread_keys != NULL ? LLONG_MAX : c->job.chunk_bytes, &res->cut);
	}
	if (rc == TM_OK)
		rc = pgconn_command(conn, SRC, "ending a snapshot read",
		                    res->cut ? "ROLLBACK" : "COMMIT", 0, NULL);
	else
		PQclear(PQexec(conn, "ROLLBACK"));
	strbuf_free(&sql);
	return rc;
}

static int
emit(PGconn *conn, char kind, const char *id)
{
	char content[80];

	snprintf(content, sizeof content, "%c %s", kind, id);
	return source_query_emit(conn, SNAP_WM_PREFIX, content, NULL);
}

/* ---- the shared state ---- */

static job_slot *
slot_of(snap_reader *r, int table_id, int range_no)
{
	for (int i = 0; i < r->njobs; i++)
		if (r->jobs[i].active && r->jobs[i].job.table_id == table_id &&
		    r->jobs[i].job.range_no == range_no)
			return &r->jobs[i];
	return NULL;
}

/* Under the lock: how many readers are at work on this table. */
static int
readers_on(const snap_reader *r, int table_id)
{
	int n = 0;

	for (int i = 0; i < r->njobs; i++)
		n += r->jobs[i].active && !r->jobs[i].read_to_end && r->jobs[i].claimed_by >= 0 &&
		     r->jobs[i].job.table_id == table_id;
	return n;
}

/* Under the lock: a job for this thread (its own first; else the waiting
 * one of the table with the fewest readers on it), or NULL. */
static job_slot *
claim(snap_reader *r, int index)
{
	job_slot *free_slot = NULL;
	int fewest = INT_MAX;
	double now = clock_now_s();

	for (int i = 0; i < r->njobs; i++) {
		job_slot *s = &r->jobs[i];
		int n;

		if (!s->active || s->read_to_end || s->not_before > now)
			continue;
		if (s->claimed_by == index)
			return s;
		if (s->claimed_by < 0 && (n = readers_on(r, s->job.table_id)) < fewest) {
			free_slot = s;
			fewest = n;
		}
	}
	if (free_slot != NULL)
		free_slot->claimed_by = index;
	return free_slot;
}

static issued *
issue(snap_reader *r, int index, const snap_job *job)
{
	issued *is = calloc(1, sizeof *is);

	if (is == NULL)
		abort();
	snprintf(is->id, sizeof is->id, "%s-%ld", r->session, ++r->seq);
	is->table_id = job->table_id;
	is->generation = job->generation;
	is->range_no = job->range_no;
	is->thread = index;
	is->next = r->issued;
	r->issued = is;
	return is;
}

static void
unissue(snap_reader *r, issued *gone)
{
	for (issued **p = &r->issued; *p != NULL; p = &(*p)->next)
		if (*p == gone) {
			*p = gone->next;
			result_free(gone->result);
			free(gone);
			return;
		}
}

static void
fail(snap_reader *r, int rc)
{
	if (r->status == TM_OK)
		r->status = rc;
	r->stop = true;
	pthread_cond_broadcast(&r->cv);
}

/* ---- one thread ---- */

/* A reader's transactions are short; should one ever hang, the server ends
 * it rather than keep a snapshot open. A chunk never waits long behind a
 * lock (a pending ALTER TABLE): it gives way (leave_locked). */
static int
open_conn(snap_reader *r, PGconn **conn)
{
	char timeout[16];
	const char *lock_timeout[] = {timeout};
	int rc = pgconn_open(r->conninfo, SRC, "snapshot", false, conn);

	snprintf(timeout, sizeof timeout, "%.0fms", LOCK_TIMEOUT_S * 1000);
	if (rc == TM_OK)
		rc = pgconn_command(*conn, SRC, "configuring the snapshot session",
		                    "SELECT set_config('idle_in_transaction_session_timeout', '60s', false),"
		                    " set_config('lock_timeout', $1, false)", 1, lock_timeout);
	return rc;
}

static void
cursor_start(table_cursor *c, const job_slot *s)
{
	cursor_clear(c);
	job_copy(&c->job, &s->job);
	c->next_after = snap_keys_copy(s->job.start_key, s->job.nkeys);
}

static snap_result *
new_result(const table_cursor *c, const issued *is)
{
	snap_result *res = calloc(1, sizeof *res);

	if (res == NULL)
		abort();
	snprintf(res->id, sizeof res->id, "%s", is->id);
	res->table_id = c->job.table_id;
	res->generation = c->job.generation;
	res->range_no = c->job.range_no;
	res->nkeys = c->job.nkeys;
	res->prev_key = snap_keys_copy(c->next_after, c->job.nkeys);
	res->estimate = c->estimate;
	return res;
}

static int
finish_result(table_cursor *c, snap_result *res)
{
	tm_error err;

	res->final = res->chunk->nrows < c->rows_limit && !res->cut;
	res->rows_limit = c->rows_limit;
	res->by_keys = c->by_keys;
	snprintf(res->order_note, sizeof res->order_note, "%s", c->order_note);
	if (res->chunk->nrows > 0)
		limit_rows(c, (long long) (res->chunk->data.len / (size_t) res->chunk->nrows) + 1);
	if (res->chunk->nrows > 0) {
		char **key;

		if (snap_chunk_key_values(res->chunk, res->chunk->nrows - 1, &key, &err) != 0) {
			log_error("snapshot of %s.%s: %s", c->job.schema, c->job.name, err.msg);
			return TM_EXIT_INTERNAL;
		}
		res->last_key = key;
		snap_keys_free(c->next_after, c->job.nkeys);
		c->next_after = snap_keys_copy(key, c->job.nkeys);
	}
	return TM_OK;
}

static bool
same_columns(const table_cursor *a, const table_cursor *b)
{
	if (a->ncols != b->ncols)
		return false;
	for (int i = 0; i < a->ncols; i++)
		if (strcmp(a->colnames[i], b->colnames[i]) != 0 ||
		    strcmp(a->coltypes[i], b->coltypes[i]) != 0)
			return false;
	return true;
}

/* Reads the chunk. A failure with the connection intact may mean the
 * table changed under the read (a column renamed, dropped or retyped: its columns
 * are read again and the chunk once more, as long as they keep changing,
 * up to READ_ATTEMPTS, after which the session is retried; the apply
 * thread throws away a chunk read under the old definition) or was
 * dropped (*gone). A failure under unchanged columns is returned as is. */
#define READ_ATTEMPTS 8

/* A read of a table without a key given up: nothing staged. */
static void
keyless_unstaged(const table_cursor *c, snap_result *res)
{
	if (res->chunk == NULL)
		res->chunk = snap_chunk_new(c->format, c->ncols, (const char *const *) c->colnames, 0,
		                            c->key_idx);
	res->staged = false;
}

static int
read_or_gone(PGconn *conn, table_cursor *c, snap_result *res, bool *gone)
{
	int rc = read_chunk(conn, c, res);

	for (int attempt = 1; rc != TM_OK && rc != READ_LOCKED && PQstatus(conn) == CONNECTION_OK;
	     attempt++) {
		table_cursor fresh;
		bool changed;

		memset(&fresh, 0, sizeof fresh);
		fresh.stage = c->stage;
		job_copy(&fresh.job, &c->job);
		fresh.next_after = snap_keys_copy(c->next_after, c->job.nkeys);
		if (load_columns(conn, &fresh, gone) != TM_OK || *gone) {
			rc = *gone ? TM_OK : rc;
			cursor_clear(&fresh);
			break;
		}
		changed = !same_columns(c, &fresh);
		if (changed && c->job.nkeys == 0) {
			/* a table without a key is staged against the target table,
			 * which gets the new columns only when the stream brings them:
			 * the apply thread reads it again after the change (a result
			 * not staged, at its high watermark) */
			log_info("snapshot of %s.%s: the table's columns changed during its read; it is "
			         "read again once the change has reached the target", c->job.schema,
			         c->job.name);
			keyless_unstaged(c, res);
			rc = TM_OK;
			cursor_clear(&fresh);
			break;
		}
		if (changed && attempt >= READ_ATTEMPTS) {
			log_warn("snapshot of %s.%s: the table keeps changing during reads; the session "
			         "starts again", c->job.schema, c->job.name);
			rc = PGCONN_RETRY_SOURCE;
		}
		if (!changed || attempt >= READ_ATTEMPTS) {
			cursor_clear(&fresh);
			break;
		}
		log_info("snapshot of %s.%s: the table changed during a read; reading again",
		         c->job.schema, c->job.name);
		fresh.loaded = true;
		cursor_clear(c);
		*c = fresh;
		rc = read_chunk(conn, c, res);
	}
	if (rc == READ_STALE) {
		/* no change of the definition explains it */
		log_error("source: %s", c->stale_failure);
		rc = c->stale_rc;
	}
	return rc;
}

/* Reads one chunk between its watermarks and publishes its result before
 * the high watermark is written. A table found gone still gets both
 * watermarks, so that the apply thread learns it at the right place. */
static int
one_chunk(snap_reader *r, PGconn *conn, table_cursor *c, issued *is, bool *final)
{
	snap_result *res = new_result(c, is);
	char id[sizeof is->id];
	bool gone = false;
	int rc = TM_OK;

	snprintf(id, sizeof id, "%s", is->id);
	if (!c->loaded) {
		rc = load_columns(conn, c, &gone);
		c->loaded = rc == TM_OK && !gone;
	}
	struct timespec t0, t1, t2;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (rc == TM_OK)
		rc = emit(conn, 'L', id);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc == TM_OK && !gone)
		rc = read_or_gone(conn, c, res, &gone);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	log_debug("snapshot read: low watermark %.1f ms, read %.1f ms",
	          (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
	          (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6);
	if (rc == TM_OK && gone) {
		log_info("snapshot of %s.%s stops: the table no longer exists on the source",
		         c->job.schema, c->job.name);
		res->table_gone = res->final = true;
	} else if (rc == TM_OK)
		rc = finish_result(c, res);
	*final = res->final;
	pthread_mutex_lock(&r->mu);
	if (rc == TM_OK) {
		/* from here on the apply thread may take and free it */
		is->result = res;
		r->outstanding[is->thread]++;
	} else
		result_free(res);
	pthread_mutex_unlock(&r->mu);
	return rc == TM_OK ? emit(conn, 'H', id) : rc;
}

/* Under the lock: waits for a change, or until the first table left
 * alone for a lock may be read again. */
static void
wait_for_work(snap_reader *r)
{
	double until = 0, now = clock_now_s();
	struct timespec ts;

	for (int i = 0; i < r->njobs; i++)
		if (r->jobs[i].active && !r->jobs[i].read_to_end && r->jobs[i].not_before > now &&
		    (until == 0 || r->jobs[i].not_before < until))
			until = r->jobs[i].not_before;
	if (until == 0) {
		pthread_cond_wait(&r->cv, &r->mu);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	until = (double) ts.tv_sec + ts.tv_nsec / 1e9 + (until - now) + 0.01;
	ts.tv_sec = (time_t) until;
	ts.tv_nsec = (long) ((until - (double) ts.tv_sec) * 1e9);
	pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

/* Under the lock: the next piece of work of thread index, or NULL. */
static job_slot *
next_work(snap_reader *r, int index, table_cursor *c)
{
	for (;;) {
		job_slot *s;

		if (r->stop)
			return NULL;
		s = claim(r, index);
		if (s != NULL && r->outstanding[index] < SNAP_READER_AHEAD) {
			if (c->job.schema == NULL || c->job.table_id != s->job.table_id ||
			    c->job.generation != s->job.generation || c->job.range_no != s->job.range_no)
				cursor_start(c, s);
			return s;
		}
		wait_for_work(r);
	}
}

/* Under the lock: a read of the table met its lock. The table is left
 * alone for a while, to be read on from where it was (by any reader),
 * and who holds the lock is named now and then; the session goes on. */
static int
leave_locked(snap_reader *r, job_slot *s, PGconn *conn, const table_cursor *c)
{
	double now = clock_now_s(), waited = 0;
	strbuf sb = STRBUF_INIT;
	bool name = false;
	int rc = TM_OK;

	if (s != NULL) {
		snap_keys_free(s->job.start_key, s->job.nkeys);
		s->job.start_key = snap_keys_copy(c->next_after, c->job.nkeys);
		s->claimed_by = -1;
		s->not_before = now + LOCKED_PAUSE_S;
		if (s->locked_since == 0)
			s->locked_since = now - LOCK_TIMEOUT_S;
		waited = now - s->locked_since;
		name = now - s->locked_warned >= LOCKED_WARN_EVERY_S;
		if (name)
			s->locked_warned = now;
	}
	if (!name)
		return TM_OK;
	pthread_mutex_unlock(&r->mu); /* s may move: submit grows the array */
	rc = lock_watch_table_holders(conn, SRC, c->job.schema, c->job.name, &sb);
	if (rc == TM_OK)
		log_warn("snapshot of %s.%s waits for a lock on the table (%.0f s so far), held by: "
		         "%s. The other tables are copied and the stream applied meanwhile; the table "
		         "is read on once the lock is released", c->job.schema, c->job.name, waited,
		         strbuf_str(&sb));
	strbuf_free(&sb);
	pthread_mutex_lock(&r->mu);
	return rc;
}

/* Under the lock: a read of a table that had met its lock went through. */
static void
lock_released(job_slot *s, const table_cursor *c)
{
	if (s->locked_since == 0)
		return;
	log_info("snapshot of %s.%s goes on: the lock it waited for is released", c->job.schema,
	         c->job.name);
	s->locked_since = s->locked_warned = 0;
}

static void *
reader_main(void *arg)
{
	reader_thread *t = arg;
	snap_reader *r = t->r;
	table_cursor c;
	PGconn *conn = NULL;
	keyless_stage *stage = NULL;
	int rc = keyless_stage_open(r->target, &stage);

	memset(&c, 0, sizeof c);
	c.stage = &stage;
	pthread_mutex_lock(&r->mu);
	for (job_slot *s; rc == TM_OK && (s = next_work(r, t->index, &c)) != NULL;) {
		issued *is = issue(r, t->index, &c.job);
		bool final = false;

		pthread_mutex_unlock(&r->mu);
		double busy = clock_now_s();

		if (conn == NULL)
			rc = open_conn(r, &conn);
		if (rc == TM_OK)
			rc = one_chunk(r, conn, &c, is, &final);
		metrics_add(r->metrics, METRICS_READER_BUSY_US,
		            (uint64_t) ((clock_now_s() - busy) * 1e6));
		pthread_mutex_lock(&r->mu);
		s = slot_of(r, c.job.table_id, c.job.range_no);
		if (s != NULL && s->job.generation != c.job.generation)
			s = NULL;
		if (rc != TM_OK)
			unissue(r, is); /* still ours: a failed chunk publishes nothing */
		if (rc == READ_LOCKED)
			rc = leave_locked(r, s, conn, &c);
		else if (rc == TM_OK && s != NULL)
			lock_released(s, &c);
		if (rc == TM_OK && final && s != NULL) {
			s->read_to_end = true;
			s->claimed_by = -1;
		}
	}
	if (rc != TM_OK)
		fail(r, rc);
	pthread_mutex_unlock(&r->mu);
	cursor_clear(&c);
	PQfinish(conn);
	keyless_stage_close(stage);
	free(t);
	return NULL;
}

/* ---- the apply thread's side ---- */

int
snap_reader_start(const char *conninfo, const char *target, int nthreads, const char *session,
                  metrics *m, snap_reader **out)
{
	snap_reader *r = calloc(1, sizeof *r);

	if (r == NULL)
		abort();
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->conninfo = xstrdup(conninfo);
	r->target = xstrdup(target);
	snprintf(r->session, sizeof r->session, "%s", session);
	r->nthreads = nthreads;
	r->metrics = m;
	r->threads = calloc((size_t) nthreads, sizeof(pthread_t));
	r->outstanding = calloc((size_t) nthreads, sizeof(int));
	if (r->threads == NULL || r->outstanding == NULL)
		abort();
	for (int i = 0; i < nthreads; i++) {
		reader_thread *t = malloc(sizeof *t);

		if (t == NULL)
			abort();
		t->r = r;
		t->index = i;
		if (pthread_create(&r->threads[i], NULL, reader_main, t) != 0) {
			log_error("cannot start a snapshot reader thread: %s", strerror(errno));
			abort();
		}
	}
	*out = r;
	return TM_OK;
}

void
snap_reader_stop(snap_reader *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	for (int i = 0; i < r->nthreads; i++)
		pthread_join(r->threads[i], NULL);
	while (r->issued != NULL)
		unissue(r, r->issued);
	for (int i = 0; i < r->njobs; i++)
		snap_job_clear(&r->jobs[i].job);
	free(r->jobs);
	free(r->threads);
	free(r->outstanding);
	free(r->conninfo);
	free(r->target);
	PQfinish(r->reread_conn);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r);
}

/* ---- reading rows again, on the caller's thread ---- */

PGconn *
snap_reader_conn(snap_reader *r)
{
	if (r->reread_conn != NULL && PQstatus(r->reread_conn) != CONNECTION_OK) {
		PQfinish(r->reread_conn);
		r->reread_conn = NULL;
	}
	if (r->reread_conn == NULL && open_conn(r, &r->reread_conn) != TM_OK) {
		PQfinish(r->reread_conn);
		r->reread_conn = NULL;
	}
	return r->reread_conn;
}

/* A read again of rows, on the apply thread, met the table's lock: the
 * session starts again, as for any failed read, saying who holds it. */
static int
reread_locked(PGconn *conn, const table_cursor *c)
{
	strbuf sb = STRBUF_INIT;

	if (lock_watch_table_holders(conn, SRC, c->job.schema, c->job.name, &sb) == TM_OK)
		log_warn("snapshot of %s.%s: rows to read again wait for a lock on the table, held "
		         "by: %s; the session starts again", c->job.schema, c->job.name,
		         strbuf_str(&sb));
	strbuf_free(&sb);
	return PGCONN_RETRY_SOURCE;
}

int
snap_reader_reread(snap_reader *r, const snap_job *job, snap_result **out)
{
	table_cursor c;
	issued is = {0};
	bool gone = false;
	int rc = TM_OK;

	memset(&c, 0, sizeof c);
	job_copy(&c.job, job);
	pthread_mutex_lock(&r->mu);
	snprintf(is.id, sizeof is.id, "%s-%ld", r->session, ++r->seq);
	pthread_mutex_unlock(&r->mu);
	*out = new_result(&c, &is);
	if (r->reread_conn == NULL)
		rc = open_conn(r, &r->reread_conn);
	if (rc == TM_OK)
		rc = load_columns(r->reread_conn, &c, &gone);
	if (rc == TM_OK)
		rc = emit(r->reread_conn, 'L', is.id);
	if (rc == TM_OK && !gone)
		rc = read_or_gone(r->reread_conn, &c, *out, &gone);
	if (rc == READ_LOCKED)
		rc = reread_locked(r->reread_conn, &c);
	(*out)->table_gone = gone;
	if (rc == TM_OK)
		rc = emit(r->reread_conn, 'H', is.id);
	if (rc != TM_OK) {
		result_free(*out);
		*out = NULL;
		if (PQstatus(r->reread_conn) != CONNECTION_OK) {
			PQfinish(r->reread_conn);
			r->reread_conn = NULL;
		}
	}
	cursor_clear(&c);
	return rc;
}

void
snap_reader_submit(snap_reader *r, const snap_job *job)
{
	job_slot *s;

	pthread_mutex_lock(&r->mu);
	s = slot_of(r, job->table_id, job->range_no);
	if (s == NULL) {
		r->jobs = realloc(r->jobs, sizeof *r->jobs * (size_t) (r->njobs + 1));
		if (r->jobs == NULL)
			abort();
		s = &r->jobs[r->njobs++];
		memset(s, 0, sizeof *s);
		s->claimed_by = -1;
	} else
		snap_job_clear(&s->job);
	job_copy(&s->job, job);
	s->active = true;
	s->read_to_end = false;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

void
snap_reader_forget(snap_reader *r, int table_id)
{
	pthread_mutex_lock(&r->mu);
	for (int i = 0; i < r->njobs; i++) {
		job_slot *s = &r->jobs[i];

		if (!s->active || s->job.table_id != table_id)
			continue;
		snap_job_clear(&s->job);
		s->active = false;
		s->claimed_by = -1;
	}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

bool
snap_reader_has(snap_reader *r, int table_id, long *generation)
{
	job_slot *s = NULL;

	pthread_mutex_lock(&r->mu);
	for (int i = 0; i < r->njobs && s == NULL; i++)
		if (r->jobs[i].active && r->jobs[i].job.table_id == table_id)
			s = &r->jobs[i];
	if (s != NULL && generation != NULL)
		*generation = s->job.generation;
	pthread_mutex_unlock(&r->mu);
	return s != NULL;
}

static issued *
find_issued(snap_reader *r, const char *id)
{
	for (issued *is = r->issued; is != NULL; is = is->next)
		if (strcmp(is->id, id) == 0)
			return is;
	return NULL;
}

bool
snap_reader_issued(snap_reader *r, const char *id, int *table_id, long *generation,
                   int *range_no)
{
	issued *is;

	pthread_mutex_lock(&r->mu);
	is = find_issued(r, id);
	if (is != NULL) {
		*table_id = is->table_id;
		*generation = is->generation;
		*range_no = is->range_no;
	}
	pthread_mutex_unlock(&r->mu);
	return is != NULL;
}

snap_result *
snap_reader_take(snap_reader *r, const char *id)
{
	snap_result *res = NULL;
	issued *is;

	pthread_mutex_lock(&r->mu);
	is = find_issued(r, id);
	if (is != NULL && is->result != NULL) {
		res = is->result;
		is->result = NULL;
		r->outstanding[is->thread]--;
		unissue(r, is);
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	return res;
}

void
snap_reader_release(snap_reader *r, snap_result *res)
{
	(void) r;
	result_free(res);
}

int
snap_reader_status(snap_reader *r)
{
	int rc;

	pthread_mutex_lock(&r->mu);
	rc = r->status;
	pthread_mutex_unlock(&r->mu);
	return rc;
}
