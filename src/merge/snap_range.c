#include "snap_range.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "log.h"
#include "part_tree_sql.h"
#include "pgconn.h"
#include "snap_reader.h"
#include "snap_split.h"
#include "snap_table.h"
#include "strbuf.h"

#define SRC PGCONN_SOURCE

/* What the source says of the table and its first key column. */
typedef struct split_facts {
	long long rows;          /* -1: never analyzed */
	long long bytes;
	bool partitioned;
	strbuf type;             /* the column's base type, qualified (codec.h) */
	strbuf collation;        /* COLLATE "schema"."name", or empty */
} split_facts;

/* A relation's rows and bytes as the catalog and the statistics counters
 * have them, without opening it: this runs on the apply loop's thread,
 * which must not wait for a lock the source's DDL holds (its rows: the
 * last ANALYZE's or VACUUM's count, else the live rows counted since). */
#define FACT_ROWS(rel)                                                                         \
	"CASE WHEN " rel ".reltuples >= 0 THEN " rel ".reltuples::bigint"                         \
	" ELSE pg_stat_get_live_tuples(" rel ".oid) END"
#define FACT_BYTES(rel) rel ".relpages::bigint * current_setting('block_size')::bigint"

static int
read_facts(PGconn *conn, const snap_range_source *src, split_facts *f)
{
	const char *p[] = {src->schema, src->name, src->key_column};
	PGresult *r = NULL;
	int rc = pgconn_exec(
		conn, SRC, "reading the size of a table to copy",
		"SELECT CASE WHEN c.relkind <> 'p' THEN " FACT_ROWS("c") " ELSE"
		"   (SELECT sum(" FACT_ROWS("l") ")::bigint FROM " PART_TREE_SQL("c.oid") " t"
		"   JOIN pg_class l ON l.oid = t.relid WHERE t.isleaf) END,"
		" CASE WHEN c.relkind <> 'p' THEN " FACT_BYTES("c") " ELSE"
		"   (SELECT sum(" FACT_BYTES("l") ")::bigint FROM " PART_TREE_SQL("c.oid") " t"
		"   JOIN pg_class l ON l.oid = t.relid WHERE t.isleaf) END, c.relkind = 'p',"
		CODEC_KEY_TYPE_COLUMNS ","
		" (SELECT cn.nspname FROM pg_collation co JOIN pg_namespace cn"
		"   ON cn.oid = co.collnamespace WHERE co.oid = a.attcollation),"
		" (SELECT co.collname FROM pg_collation co WHERE co.oid = a.attcollation)"
		" FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
		" JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = $3"
		" WHERE n.nspname = $1 AND c.relname = $2",
		3, p, &r);

	if (rc != TM_OK)
		return rc;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return TM_EXIT_INTERNAL; /* gone meanwhile: the read finds out */
	}
	f->rows = PQgetisnull(r, 0, 0) ? -1 : atoll(PQgetvalue(r, 0, 0));
	f->bytes = PQgetisnull(r, 0, 1) ? 0 : atoll(PQgetvalue(r, 0, 1));
	f->partitioned = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
	strbuf_append_qualified(&f->type, PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 4));
	if (!PQgetisnull(r, 0, 5) && !PQgetisnull(r, 0, 6)) {
		strbuf_append(&f->collation, " COLLATE ");
		strbuf_append_qualified(&f->collation, PQgetvalue(r, 0, 5), PQgetvalue(r, 0, 6));
	}
	PQclear(r);
	return TM_OK;
}

/* The histogram's bounds of the first key column, as values of its type,
 * sorted and distinct on the source under the column's collation. */
static int
histogram(PGconn *conn, const snap_range_source *src, const split_facts *f, PGresult **r)
{
	const char *p[] = {src->schema, src->name, src->key_column, f->partitioned ? "t" : "f"};
	strbuf sql = STRBUF_INIT;
	int rc;

	strbuf_appendf(&sql, "SELECT concat(b) FROM (SELECT DISTINCT v::%s%s AS b FROM pg_stats s,"
	               " unnest(s.histogram_bounds::text::text[]) v WHERE s.schemaname = $1"
	               " AND s.tablename = $2 AND s.attname = $3 AND s.inherited = $4::bool) q"
	               " WHERE b IS NOT NULL ORDER BY b", strbuf_str(&f->type),
	               strbuf_str(&f->collation));
	rc = pgconn_exec(conn, SRC, "reading the key's statistics", sql.data, 4, p, r);
	strbuf_free(&sql);
	return rc;
}

/* The sample's statement, which reads the table: under a lock_timeout of
 * SNAP_RANGE_LOCK_WAIT_MS, since it runs on the apply loop's thread (a
 * table locked by DDL is then copied in one range, said); the session's
 * own lock_timeout (snap_reader.c sets one) is put back after it. */
static int
sample_nowait(PGconn *conn, const snap_range_source *src, const char *sql,
              const char *const *p, PGresult **r)
{
	PGresult *old = NULL, *res;
	const char *state, *back[1];
	int rc = pgconn_exec(conn, SRC, "limiting the sample's wait for a lock",
	                     "SELECT o, set_config('lock_timeout', '" SNAP_RANGE_LOCK_WAIT_MS "', false)"
	                     " FROM (SELECT current_setting('lock_timeout') AS o) s",
	                     0, NULL, &old);

	if (rc != TM_OK)
		return rc;
	res = PQexecParams(conn, sql, 1, NULL, p, NULL, NULL, 0);
	state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK)
		*r = res;
	else if (state != NULL && strcmp(state, "55P03") == 0) {
		log_info("snapshot of %s.%s: copied in one range (its sample would wait for a lock)",
		         src->schema, src->name);
		PQclear(res);
		rc = TM_EXIT_SOURCE;
	} else {
		rc = pgconn_fail(conn, SRC, "sampling the key of a table to copy", res);
		PQclear(res);
	}
	back[0] = PQgetvalue(old, 0, 0);
	if (pgconn_command(conn, SRC, "putting lock_timeout back",
	                   "SELECT set_config('lock_timeout', $1, false)", 1, back) != TM_OK &&
	    rc == TM_OK) {
		PQclear(*r);
		*r = NULL;
		rc = TM_EXIT_SOURCE;
	}
	PQclear(old);
	return rc;
}

/* A sample's distinct values of the first key column, in its order. */
static int
sample(PGconn *conn, const snap_range_source *src, const split_facts *f, PGresult **r)
{
	strbuf sql = STRBUF_INIT;
	double pct = f->rows > 0 ? 100.0 * SNAP_RANGE_SAMPLE_ROWS / (double) f->rows
	                         : 100.0 * (SNAP_RANGE_SAMPLE_ROWS / 100) * 8192.0 / (double) f->bytes;
	char pcts[32];
	const char *p[] = {pcts};
	int rc;

	snprintf(pcts, sizeof pcts, "%.6f", pct > 100 ? 100 : pct < 0.0001 ? 0.0001 : pct);
	strbuf_append(&sql, "SELECT concat(k) FROM (SELECT DISTINCT ");
	strbuf_append_ident(&sql, src->key_column);
	strbuf_append(&sql, " AS k FROM ONLY ");
	strbuf_append_qualified(&sql, src->schema, src->name);
	strbuf_append(&sql, " TABLESAMPLE SYSTEM ($1::float8)) q WHERE k IS NOT NULL ORDER BY k");
	rc = sample_nowait(conn, src, sql.data, p, r);
	strbuf_free(&sql);
	return rc;
}

static void
pick(PGresult *r, int nranges, char ***bounds, int *n)
{
	int *idx = xcalloc((size_t) nranges + 1, sizeof(int));

	*n = snap_split_pick(PQntuples(r), nranges, idx);
	*bounds = *n > 0 ? xcalloc((size_t) *n + 1, sizeof(char *)) : NULL;
	for (int i = 0; i < *n; i++)
		(*bounds)[i] = xstrdup(PQgetvalue(r, idx[i], 0));
	free(idx);
}

void
snap_range_bounds(PGconn *conn, const snap_range_source *src, char ***bounds, int *n)
{
	split_facts f = {.type = STRBUF_INIT, .collation = STRBUF_INIT};
	PGresult *r = NULL;
	int nranges = 1;
	bool sampled = false;

	*bounds = NULL;
	*n = 0;
	if (conn != NULL && read_facts(conn, src, &f) == TM_OK)
		nranges = snap_split_count(f.rows, f.bytes, src->chunk_rows, src->chunk_bytes,
		                           src->readers);
	log_debug("snapshot of %s.%s: about %lld rows, %lld bytes: %d range(s)", src->schema,
	          src->name, f.rows, f.bytes, nranges);
	if (nranges > 1 && histogram(conn, src, &f, &r) == TM_OK && PQntuples(r) < nranges) {
		PQclear(r);
		r = NULL;
		/* no statistics (or too few values in them): a sample, of a table
		 * itself (a partitioned one is copied whole) */
		if (!f.partitioned)
			sampled = sample(conn, src, &f, &r) == TM_OK;
	}
	if (r != NULL)
		pick(r, nranges, bounds, n);
	if (*n > 0)
		log_info("snapshot of %s.%s: copied in %d key ranges (of about %lld rows, %lld MB; "
		         "bounds from %s)", src->schema, src->name, *n + 1, f.rows,
		         f.bytes / (1024 * 1024), sampled ? "a sample" : "the key's statistics");
	PQclear(r);
	strbuf_free(&f.type);
	strbuf_free(&f.collation);
}

/* ---- the catalog ---- */

snap_range *
snap_range_from_bounds(char *const *bounds, int n)
{
	snap_range *out = xcalloc((size_t) n + 1, sizeof *out);

	for (int i = 0; i <= n; i++) {
		out[i].no = n == 0 ? -1 : i;
		out[i].lower = i > 0 ? xstrdup(bounds[i - 1]) : NULL;
		out[i].upper = i < n ? xstrdup(bounds[i]) : NULL;
	}
	return out;
}

void
snap_range_clear(snap_range *r, int nkeys)
{
	free(r->lower);
	free(r->upper);
	snap_keys_free(r->applied_key, nkeys);
	snap_window_free(r->window);
	free(r->at_low);
	memset(r, 0, sizeof *r);
}

void
snap_ranges_free(snap_range *r, int n, int nkeys)
{
	for (int i = 0; r != NULL && i < n; i++)
		snap_range_clear(&r[i], nkeys);
	free(r);
}

int
snap_range_load(sink *s, int table_id, int nkeys, snap_range **out, int *n)
{
	char id[16];
	const char *p[] = {id};
	PGresult *r = NULL;
	int rc;

	*out = NULL;
	*n = 0;
	snprintf(id, sizeof id, "%d", table_id);
	rc = sink_command(s, "forgetting the key ranges of an earlier copy",
	                  "DELETE FROM tidemark.snapshot_ranges r USING tidemark.tables t"
	                  " WHERE r.table_id = $1::int AND t.table_id = r.table_id"
	                  " AND (r.requested_at IS DISTINCT FROM t.snapshot_requested_at"
	                  "   OR r.key_columns <> t.key_columns)", 1, p);
	if (rc == TM_OK)
		rc = sink_query(s, "reading the key ranges of a copy",
		                "SELECT range_no, lower_bound, upper_bound,"
		                " array_to_json(last_key)::text, done FROM tidemark.snapshot_ranges"
		                " WHERE table_id = $1::int ORDER BY range_no", 1, p, &r);
	if (rc != TM_OK || PQntuples(r) == 0) {
		PQclear(r);
		return rc;
	}
	*n = PQntuples(r);
	*out = xcalloc((size_t) *n + 1, sizeof **out);
	for (int i = 0; i < *n; i++) {
		snap_range *g = &(*out)[i];

		g->no = atoi(PQgetvalue(r, i, 0));
		g->lower = PQgetisnull(r, i, 1) ? NULL : xstrdup(PQgetvalue(r, i, 1));
		g->upper = PQgetisnull(r, i, 2) ? NULL : xstrdup(PQgetvalue(r, i, 2));
		g->applied_key = snap_table_keys_from_json(PQgetvalue(r, i, 3), nkeys);
		g->done = strcmp(PQgetvalue(r, i, 4), "t") == 0;
	}
	PQclear(r);
	return TM_OK;
}

int
snap_range_store(sink *s, int table_id, char *const *bounds, int n)
{
	char id[16];
	char *json = snap_table_keys_json(bounds, n);
	const char *p[] = {id, json};
	int rc;

	snprintf(id, sizeof id, "%d", table_id);
	rc = sink_command(s, "forgetting the key ranges of an earlier copy",
	                  "DELETE FROM tidemark.snapshot_ranges WHERE table_id = $1::int", 1, p);
	if (rc == TM_OK)
		rc = sink_command(s, "storing the key ranges of a copy",
		                  "WITH b AS (SELECT ARRAY(SELECT jsonb_array_elements_text($2::jsonb)) AS a)"
		                  " INSERT INTO tidemark.snapshot_ranges (table_id, range_no, requested_at,"
		                  "   key_columns, lower_bound, upper_bound)"
		                  " SELECT t.table_id, i, t.snapshot_requested_at, t.key_columns,"
		                  "   b.a[i], b.a[i + 1] FROM tidemark.tables t, b,"
		                  "   generate_series(0, cardinality(b.a)) i WHERE t.table_id = $1::int",
		                  2, p);
	free(json);
	return rc;
}

int
snap_range_save(sink *s, int table_id, const char *request, int range_no, char *const *last_key, int nkeys, long rows, bool range_done, bool table_done,
                long long estimate)
{
	static const char *const sql =
		"WITH r AS (UPDATE tidemark.snapshot_ranges SET"
		"   last_key = CASE WHEN $2::jsonb IS NULL THEN last_key"
		"     ELSE ARRAY(SELECT jsonb_array_elements_text($2::jsonb)) END,"
		"   rows_copied = rows_copied + $3::bigint, chunks = chunks + 1, done = $7::bool"
		"   WHERE table_id = $1::int AND range_no = $8::int AND EXISTS (SELECT FROM"
		"     tidemark.tables t WHERE t.table_id = $1::int"
		"     AND coalesce(t.snapshot_requested_at::text, '') = $6"
		"     AND t.snapshot_requested_at IS NOT DISTINCT FROM snapshot_ranges.requested_at))"
		" UPDATE tidemark.tables SET"
		/* a table copied whole: its progress is here */
		" snapshot_last_key = CASE WHEN $8::int >= 0 OR $2::jsonb IS NULL THEN snapshot_last_key"
		"   ELSE ARRAY(SELECT jsonb_array_elements_text($2::jsonb)) END,"
		" snapshot_rows = snapshot_rows + $3::bigint, snapshot_chunks = snapshot_chunks + 1,"
		" state = CASE WHEN $4::bool THEN 'streaming' ELSE 'snapshotting' END,"
		" snapshot_started_at = coalesce(snapshot_started_at, now()),"
		" snapshot_finished_at = CASE WHEN $4::bool THEN now() END,"
		" history_behind = CASE WHEN $4::bool AND history_behind"
		"   THEN tidemark.history_caught_up(history_relid) ELSE history_behind END,"
		" snapshot_estimate = coalesce(snapshot_estimate, nullif($5::bigint, -1))"
		" WHERE table_id = $1::int AND coalesce(snapshot_requested_at::text, '') = $6";
	char id[16], nrows[24], est[24], no[16];
	char *key = snap_table_keys_json(last_key, nkeys);
	const char *p[] = {id, key, nrows, table_done ? "true" : "false", est, request,
	                   range_done ? "true" : "false", no};
	int rc;

	snprintf(id, sizeof id, "%d", table_id);
	snprintf(nrows, sizeof nrows, "%ld", rows);
	snprintf(est, sizeof est, "%lld", estimate > 0 ? estimate : -1LL);
	snprintf(no, sizeof no, "%d", range_no);
	/* the copy's end may drop a history's index by key, which takes the
	 * history's ACCESS EXCLUSIVE lock: no longer a wait than a schema
	 * change's, so that the history's readers do not queue behind it */
	rc = table_done ? sink_lock_wait(s, true) : TM_OK;
	if (rc == TM_OK)
		rc = sink_send(s, sink_stmt_get(s, sql, 8), p, NULL);
	if (rc == TM_OK && table_done)
		rc = sink_lock_wait(s, false);
	free(key);
	return rc;
}
