/*
 * verify.c: a table's plan (what is compared, how) and the pass over its
 * key ranges. See verify.h.
 */
#include "verify.h"
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "log.h"
#include "shape.h"
#include "source_query.h"
#include "verify_int.h"
#include "xalloc.h"

static void
free_strings(char **arr, int n)
{
	if (arr == NULL)
		return;
	for (int i = 0; i < n; i++)
		free(arr[i]);
	free(arr);
}

/* ---- planning a table ---- */

/* The target table's columns, name and format_type(), in attnum order. */
static int
target_columns(verify_table *vt, PGresult **out)
{
	const char *p[] = {vt->target_schema, vt->target_name};
	int rc = pgconn_exec(vt->target, PGCONN_TARGET, vt->what,
	                     "SELECT a.attname, format_type(a.atttypid, a.atttypmod)"
	                     " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
	                     " JOIN pg_namespace n ON n.oid = c.relnamespace"
	                     " WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0"
	                     " AND NOT a.attisdropped ORDER BY a.attnum", 2, p, out);

	if (rc == TM_OK && PQntuples(*out) == 0) {
		log_error("target: table %s.%s (the target of %s) does not exist", vt->target_schema,
		          vt->target_name, vt->display);
		PQclear(*out);
		rc = TM_EXIT_TARGET;
	}
	return rc;
}

/* A column tidemark adds to the mirror in the table's mode: expected on
 * the target, and not the source's even when the source has one of that
 * name. */
static bool
is_own_column(const verify_table *vt, const char *name)
{
	return shape_mirror_column(vt->shape_mode, vt->shape_metadata, name);
}

static int
find_target_column(const verify_table *vt, const PGresult *r, const char *name)
{
	if (is_own_column(vt, name))
		return -1;
	for (int i = 0; i < PQntuples(r); i++)
		if (strcmp(PQgetvalue(r, i, 0), name) == 0)
			return i;
	return -1;
}

static bool
is_compared(const verify_table *vt, const char *name)
{
	for (int i = 0; i < vt->ncols; i++)
		if (strcmp(vt->cols[i].name, name) == 0)
			return true;
	return false;
}

/* Compared: the source's columns that the target has by name; the others
 * of either side are noted as not compared (names for now, shown later),
 * but for the target's own columns of the table's mode. */
static void
match_columns(verify_table *vt, const tabledef *def, const PGresult *tcols)
{
	int nt = PQntuples(tcols);

	vt->cols = xcalloc((size_t) def->ncols, sizeof(verify_sql_column));
	vt->skipped = xcalloc((size_t) (def->ncols + nt), sizeof(char *));
	vt->skipped_on_target = xcalloc((size_t) (def->ncols + nt), sizeof(bool));
	for (int i = 0; i < def->ncols; i++) {
		const tabledef_column *c = &def->cols[i];
		int t = find_target_column(vt, tcols, c->name);

		if (t < 0)
			vt->skipped[vt->nskipped++] = xstrdup(c->name);
		else
			verify_sql_column_init(&vt->cols[vt->ncols++], c->name, c->type_sql,
			                       PQgetvalue(tcols, t, 1));
	}
	for (int t = 0; t < nt; t++)
		if (!is_compared(vt, PQgetvalue(tcols, t, 0)) &&
		    !is_own_column(vt, PQgetvalue(tcols, t, 0))) {
			vt->skipped_on_target[vt->nskipped] = true;
			vt->skipped[vt->nskipped++] = xstrdup(PQgetvalue(tcols, t, 0));
		}
}

/* A soft-delete mirror must have its marking column: without it, its live
 * rows cannot be told from the others. */
static int
check_deleted_column(const verify_table *vt, const PGresult *tcols)
{
	if (!vt->soft_delete)
		return TM_OK;
	for (int i = 0; i < PQntuples(tcols); i++)
		if (strcmp(PQgetvalue(tcols, i, 0), SHAPE_DELETED_AT) == 0)
			return TM_OK;
	log_error("target: table %s.%s (the target of %s) is in soft-delete mode but has no column "
	          "%s. Fix: `tidemark mode` with the table's mode makes it again", vt->target_schema,
	          vt->target_name, vt->display, SHAPE_DELETED_AT);
	return TM_EXIT_TARGET;
}

static int
match_keys(verify_table *vt, const catalog_table *ct)
{
	vt->nkeys = ct->nkeys;
	vt->keys = xcalloc((size_t) ct->nkeys, sizeof(char *));
	vt->key_idx = xcalloc((size_t) ct->nkeys, sizeof(int));
	for (int k = 0; k < ct->nkeys; k++) {
		vt->keys[k] = xstrdup(ct->key_columns[k]);
		vt->key_idx[k] = -1;
		for (int i = 0; i < vt->ncols; i++)
			if (strcmp(vt->cols[i].name, vt->keys[k]) == 0)
				vt->key_idx[k] = i;
		if (vt->key_idx[k] < 0) {
			log_error("%s: key column \"%s\" is not on both the source and the target: the "
			          "table cannot be compared", vt->display, vt->keys[k]);
			return TM_EXIT_TARGET;
		}
	}
	return vt->nkeys > 0 ? TM_OK : TM_EXIT_TARGET;
}

/* Replaces each of n names by its quote_ident() spelling (asked of the
 * target: the one rule PostgreSQL applies, keywords included). */
static int
quote_names(verify_table *vt, char **names, int n)
{
	verify_query q;
	int rc;

	if (n == 0)
		return TM_OK;
	verify_query_init(&q, vt, false);
	q.strict = true;
	strbuf_append(&q.sql, "SELECT ");
	for (int i = 0; i < n; i++) {
		strbuf_appendf(&q.sql, "%squote_ident($%d)", i > 0 ? ", " : "", i + 1);
		verify_query_param(&q, names[i]);
	}
	rc = verify_query_run(&q, NULL);
	for (int i = 0; rc == TM_OK && i < n; i++) {
		free(names[i]);
		names[i] = xstrdup(PQgetvalue(q.res, 0, i));
	}
	verify_query_clear(&q);
	return rc;
}

/* New copies of n names, to be quoted. */
static char **
copy_names(int n, char *const *names)
{
	char **copy = xcalloc((size_t) n, sizeof(char *));

	for (int i = 0; i < n; i++)
		copy[i] = xstrdup(names[i]);
	return copy;
}

int
verify_display_name(PGconn *target, const char *schema, const char *name, char **out)
{
	const char *p[] = {schema, name};
	PGresult *r;
	int rc = pgconn_exec(target, PGCONN_TARGET, "quoting a table name",
	                     "SELECT quote_ident($1) || '.' || quote_ident($2)", 2, p, &r);

	if (rc == TM_OK) {
		*out = xstrdup(PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	return rc;
}

/* Display names: the table, the compared and the skipped columns. */
static int
display_names(verify_table *vt)
{
	int rc;

	vt->col_display = xcalloc((size_t) vt->ncols, sizeof(char *));
	for (int i = 0; i < vt->ncols; i++)
		vt->col_display[i] = xstrdup(vt->cols[i].name);
	vt->skipped_display = copy_names(vt->nskipped, vt->skipped);
	free(vt->display);
	vt->display = NULL;
	rc = verify_display_name(vt->target, vt->source_schema, vt->source_name, &vt->display);
	if (rc == TM_OK)
		rc = quote_names(vt, vt->col_display, vt->ncols);
	if (rc == TM_OK)
		rc = quote_names(vt, vt->skipped_display, vt->nskipped);
	vt->key_display = xcalloc((size_t) vt->nkeys, sizeof(char *));
	for (int k = 0; rc == TM_OK && k < vt->nkeys; k++)
		vt->key_display[k] = vt->col_display[vt->key_idx[k]];
	return rc;
}

static verify_table *
table_new(PGconn *source, PGconn *target, const catalog_table *ct, long chunk_rows)
{
	verify_table *vt = xcalloc(1, sizeof *vt);
	strbuf what = STRBUF_INIT;

	vt->source = source;
	vt->target = target;
	vt->source_schema = xstrdup(ct->source_schema);
	vt->source_name = xstrdup(ct->source_table);
	vt->target_schema = xstrdup(ct->target_schema);
	vt->target_name = xstrdup(ct->target_table);
	vt->shape_mode = shape_mode_of(ct);
	vt->shape_metadata = ct->metadata;
	vt->soft_delete = ct->soft_delete;
	strbuf_append_qualified(&what, ct->source_schema, ct->source_table);
	vt->display = strbuf_steal(&what);
	strbuf_appendf(&what, "comparing %s", vt->display);
	vt->what = strbuf_steal(&what);
	vt->chunk_rows = chunk_rows > 0 ? chunk_rows : VERIFY_DEFAULT_CHUNK_ROWS;
	snprintf(vt->limit, sizeof vt->limit, "%ld", vt->chunk_rows);
	snprintf(vt->last_offset, sizeof vt->last_offset, "%ld", vt->chunk_rows - 1);
	vt->limits = verify_plan_default_limits;
	return vt;
}

/* Each key column's base type on one side (codec.h). */
static int
key_types(PGconn *conn, pgconn_side side, const verify_table *vt, char ***out)
{
	const char *p[] = {side == PGCONN_SOURCE ? vt->source_schema : vt->target_schema,
	                   side == PGCONN_SOURCE ? vt->source_name : vt->target_name};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, side, vt->what,
	                     "SELECT a.attname," CODEC_KEY_TYPE_COLUMNS
	                     " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
	                     " JOIN pg_namespace n ON n.oid = c.relnamespace"
	                     " WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0"
	                     " AND NOT a.attisdropped", 2, p, &r);

	*out = xcalloc((size_t) vt->nkeys + 1, sizeof(char *));
	for (int k = 0; rc == TM_OK && k < vt->nkeys; k++)
		for (int i = 0; i < PQntuples(r) && (*out)[k] == NULL; i++)
			if (strcmp(PQgetvalue(r, i, 0), vt->keys[k]) == 0) {
				strbuf type = STRBUF_INIT;

				strbuf_append_qualified(&type, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
				(*out)[k] = strbuf_steal(&type);
			}
	PQclear(r);
	return rc;
}

int
verify_table_open(PGconn *source, PGconn *target, const catalog_table *ct, long chunk_rows,
                  verify_table **out)
{
	verify_table *vt = table_new(source, target, ct, chunk_rows);
	tabledef *def = NULL;
	PGresult *tcols = NULL;
	int rc = source_query_table_def(source, ct->source_schema, ct->source_table, &def);

	if (rc == TM_OK)
		rc = source_query_partitioned(source, def->relid, &vt->source_partitioned);
	if (rc == TM_OK)
		rc = target_columns(vt, &tcols);
	if (rc == TM_OK)
		rc = check_deleted_column(vt, tcols);
	if (rc == TM_OK) {
		match_columns(vt, def, tcols);
		vt->multiset = ct->nkeys == 0;
		rc = vt->multiset ? TM_OK : match_keys(vt, ct);
	}
	if (rc == TM_OK)
		rc = key_types(source, PGCONN_SOURCE, vt, &vt->source_key_types);
	if (rc == TM_OK)
		rc = key_types(target, PGCONN_TARGET, vt, &vt->target_key_types);
	if (rc == TM_OK)
		rc = display_names(vt);
	if (rc == TM_OK)
		verify_diffs_init(&vt->diffs, vt->nkeys);
	PQclear(tcols);
	tabledef_free(def);
	if (rc != TM_OK) {
		verify_table_free(vt);
		return rc;
	}
	*out = vt;
	return TM_OK;
}

void
verify_table_free(verify_table *vt)
{
	if (vt == NULL)
		return;
	verify_check_clear(vt);
	verify_diffs_clear(&vt->diffs);
	for (int i = 0; i < vt->ncols; i++)
		verify_sql_column_clear(&vt->cols[i]);
	free(vt->cols);
	free_strings(vt->col_display, vt->ncols);
	free_strings(vt->skipped, vt->nskipped);
	free_strings(vt->skipped_display, vt->nskipped);
	free(vt->skipped_on_target);
	free_strings(vt->keys, vt->nkeys);
	free_strings(vt->source_key_types, vt->nkeys);
	free_strings(vt->target_key_types, vt->nkeys);
	free(vt->key_idx);
	free(vt->key_display); /* its strings are col_display's */
	free(vt->source_schema);
	free(vt->source_name);
	free(vt->target_schema);
	free(vt->target_name);
	free(vt->display);
	free(vt->what);
	free(vt);
}

/* ---- the pass ---- */

/* A source page: its sum and its last row's key. */
typedef struct page {
	verify_plan_sum sum;
	char **last;   /* owned; NULL when the page is not full: the last page */
	bool plain;
} page;

static int
read_sum(verify_table *vt, const verify_query *q, verify_plan_sum *sum)
{
	const PGresult *r = q->res;

	if (PQntuples(r) == 1 &&
	    verify_plan_sum_read(sum, PQgetvalue(r, 0, VERIFY_SQL_COL_ROWS),
	                         PQgetvalue(r, 0, VERIFY_SQL_COL_HASH)))
		return TM_OK;
	log_error("%s: %s: a range sum is not a count and a number", pgconn_side_name(q->side),
	          vt->what);
	return TM_EXIT_INTERNAL;
}

/* The key at row, columns first ..; NULL when the first is NULL. */
static char **
copy_key(const PGresult *r, int row, int first, int nkeys)
{
	char **key;

	if (PQgetisnull(r, row, first))
		return NULL;
	key = xcalloc((size_t) nkeys, sizeof(char *));
	for (int i = 0; i < nkeys; i++)
		key[i] = xstrdup(PQgetvalue(r, row, first + i));
	return key;
}

static void
page_query(verify_query *q, verify_table *vt, char *const *after, bool plain)
{
	verify_query_init(q, vt, true);
	verify_query_build(q, vt, verify_sql_page, after, NULL, plain);
	verify_query_param(q, vt->limit);
	verify_query_param(q, vt->last_offset);
}

static int
page_result(verify_table *vt, const verify_query *q, page *out)
{
	int rc = read_sum(vt, q, &out->sum);

	if (rc == TM_OK) {
		out->last = copy_key(q->res, 0, VERIFY_SQL_COL_LAST_KEY, vt->nkeys);
		out->plain = q->plain;
		vt->stats.pages++;
		vt->stats.source_rows += out->sum.rows;
	}
	return rc;
}

/* Reads a page on its own: the first one, or one again as plain text. */
static int
read_page(verify_table *vt, char *const *after, bool plain, page *out)
{
	verify_query q;
	int rc;

	page_query(&q, vt, after, plain);
	rc = verify_query_run(&q, NULL);
	if (rc == TM_OK && q.data_error) {
		verify_query_clear(&q);
		vt->stats.plain_ranges++;
		return read_page(vt, after, true, out);
	}
	if (rc == TM_OK)
		rc = page_result(vt, &q, out);
	verify_query_clear(&q);
	return rc;
}

/* A key range (lo, hi], each bound NULL when open, and when it is being
 * split, the keys that end its parts (all borrowed). */
typedef struct range {
	char *const *lo;
	char *const *hi;
	int nsplits;
	char **const *splits;
} range;

typedef void (*range_statement)(verify_query *q, verify_table *vt, const range *r, bool plain);

static void
statement_sum(verify_query *q, verify_table *vt, const range *r, bool plain)
{
	verify_query_build(q, vt, verify_sql_range_sum, r->lo, r->hi, plain);
}

static void
statement_rows(verify_query *q, verify_table *vt, const range *r, bool plain)
{
	verify_query_build(q, vt, verify_sql_rows, r->lo, r->hi, plain);
}

static void
statement_parts(verify_query *q, verify_table *vt, const range *r, bool plain)
{
	verify_sql_table t = verify_side_table(vt, q->side == PGCONN_SOURCE);

	verify_sql_part_sums(&q->sql, &t, verify_query_flags(q, r->lo, r->hi, plain), r->nsplits);
	verify_query_key(q, r->lo, vt->nkeys);
	verify_query_key(q, r->hi, vt->nkeys);
	for (int i = 0; i < r->nsplits; i++)
		verify_query_key(q, r->splits[i], vt->nkeys);
}

/*
 * Runs one kind of statement over a range on both sides at once; after a
 * data exception on either, again as plain text (*plain). On TM_OK the
 * caller reads and clears qs and qt.
 */
static int
run_pair(verify_table *vt, range_statement statement, const range *r, bool *plain,
         verify_query *qs, verify_query *qt)
{
	for (;;) {
		int rc;

		verify_query_init(qs, vt, true);
		verify_query_init(qt, vt, false);
		statement(qs, vt, r, *plain);
		statement(qt, vt, r, *plain);
		rc = verify_query_run(qs, qt);
		if (rc != TM_OK || !(qs->data_error || qt->data_error))
			return rc;
		verify_query_clear(qs);
		verify_query_clear(qt);
		*plain = true;
		vt->stats.plain_ranges++;
	}
}

static int
sum_range(verify_table *vt, const range *r, bool *plain, verify_plan_sum *s, verify_plan_sum *t)
{
	verify_query qs, qt;
	int rc = run_pair(vt, statement_sum, r, plain, &qs, &qt);

	if (rc == TM_OK)
		rc = read_sum(vt, &qs, s);
	if (rc == TM_OK)
		rc = read_sum(vt, &qt, t);
	if (rc == TM_OK)
		vt->stats.ranges++;
	verify_query_clear(&qs);
	verify_query_clear(&qt);
	return rc;
}

/* Each part's sum from a part sums result. */
static int
read_part_sums(verify_table *vt, const verify_query *q, int nparts, verify_plan_sum *sums)
{
	const PGresult *r = q->res;

	for (int i = 0; i < nparts; i++)
		if (PQntuples(r) != 1 || PQnfields(r) != 2 * nparts ||
		    !verify_plan_sum_read(&sums[i], PQgetvalue(r, 0, 2 * i + VERIFY_SQL_COL_ROWS),
		                          PQgetvalue(r, 0, 2 * i + VERIFY_SQL_COL_HASH))) {
			log_error("%s: %s: a part sum is not a count and a number",
			          pgconn_side_name(q->side), vt->what);
			return TM_EXIT_INTERNAL;
		}
	vt->stats.ranges += nparts;
	return TM_OK;
}

/* Sums every part of a range being split, on both sides. */
static int
sum_parts(verify_table *vt, const range *r, bool *plain, verify_plan_sum *s, verify_plan_sum *t)
{
	verify_query qs, qt;
	int rc = run_pair(vt, statement_parts, r, plain, &qs, &qt);

	if (rc == TM_OK)
		rc = read_part_sums(vt, &qs, r->nsplits + 1, s);
	if (rc == TM_OK)
		rc = read_part_sums(vt, &qt, r->nsplits + 1, t);
	verify_query_clear(&qs);
	verify_query_clear(&qt);
	return rc;
}

/* Reads the rows of a range on both sides and notes how they differ. */
static int
compare_rows(verify_table *vt, const range *r, bool plain)
{
	verify_query qs, qt;
	verify_rows rs, rt;
	int rc = run_pair(vt, statement_rows, r, &plain, &qs, &qt);

	if (rc == TM_OK) {
		verify_rows_init(&rs, vt->nkeys, vt->ncols);
		verify_rows_init(&rt, vt->nkeys, vt->ncols);
		verify_rows_from_result(&rs, qs.res);
		verify_rows_from_result(&rt, qt.res);
		verify_diff_rows(&rs, &rt, vt->key_idx, &vt->diffs);
		vt->stats.rows_read += rs.nrows + rt.nrows;
		verify_rows_clear(&rs);
		verify_rows_clear(&rt);
	}
	verify_query_clear(&qs);
	verify_query_clear(&qt);
	return rc;
}

/* The keys that end the parts of a split (every part_rows-th row of the
 * step's side, before its last row), new in r->splits; none when the rows
 * moved since they were counted. *unusable: the target holds keys the
 * source's key type cannot (they cannot bound a range on the source). */
static int
read_splits(verify_table *vt, range *r, const verify_plan_step *step, long long rows,
            bool *unusable)
{
	verify_query q;
	char every[24], before[24];
	int rc;

	snprintf(every, sizeof every, "%lld", step->part_rows);
	snprintf(before, sizeof before, "%lld", rows);
	verify_query_init(&q, vt, !step->split_on_target);
	verify_query_build(&q, vt, verify_sql_split, r->lo, r->hi, true);
	q.strict = false;
	verify_query_param(&q, every);
	verify_query_param(&q, before);
	rc = verify_query_run(&q, NULL);
	*unusable = q.data_error;
	if (rc == TM_OK && !q.data_error) {
		char ***keys = xcalloc((size_t) PQntuples(q.res), sizeof(char **));

		for (int i = 0; i < PQntuples(q.res); i++)
			keys[i] = copy_key(q.res, i, 0, vt->nkeys);
		r->nsplits = PQntuples(q.res);
		r->splits = keys;
	}
	verify_query_clear(&q);
	return rc;
}

static void
free_splits(range *r, int nkeys)
{
	for (int i = 0; i < r->nsplits; i++)
		free_strings((char **) r->splits[i], nkeys);
	free((void *) r->splits);
	r->splits = NULL;
	r->nsplits = 0;
}

static int bisect(verify_table *vt, const range *r, const verify_plan_sum *s,
                  const verify_plan_sum *t, bool plain, int depth);

/* Sums a range again (trying converted values first) and goes on with it:
 * when its rows moved since they were counted and it could not be split. */
static int
sum_and_bisect(verify_table *vt, const range *r, int depth)
{
	verify_plan_sum s, t;
	bool plain = false;
	int rc = sum_range(vt, r, &plain, &s, &t);

	return rc == TM_OK ? bisect(vt, r, &s, &t, plain, depth) : rc;
}

/* Sums the parts of a split range and goes on with each. */
static int
split_and_bisect(verify_table *vt, range *r, int depth)
{
	int nparts = r->nsplits + 1;
	verify_plan_sum *s = xcalloc((size_t) nparts, sizeof *s);
	verify_plan_sum *t = xcalloc((size_t) nparts, sizeof *t);
	bool plain = false;
	int rc = sum_parts(vt, r, &plain, s, t);

	for (int i = 0; rc == TM_OK && i < nparts; i++) {
		range part = {i == 0 ? r->lo : r->splits[i - 1], i == r->nsplits ? r->hi : r->splits[i],
		              0, NULL};

		rc = bisect(vt, &part, &s[i], &t[i], plain, depth);
	}
	free(s);
	free(t);
	return rc;
}

static int
bisect(verify_table *vt, const range *r, const verify_plan_sum *s, const verify_plan_sum *t,
       bool plain, int depth)
{
	verify_plan_step step = verify_plan_next(s, t, depth, &vt->limits);
	range split = {r->lo, r->hi, 0, NULL};
	bool unusable;
	int rc;

	if (step.action == VERIFY_PLAN_EQUAL)
		return TM_OK;
	if (step.action == VERIFY_PLAN_FETCH)
		return compare_rows(vt, r, plain);
	rc = read_splits(vt, &split, &step, step.split_on_target ? t->rows : s->rows, &unusable);
	if (rc == TM_OK && unusable)
		rc = compare_rows(vt, r, plain);
	else if (rc == TM_OK && split.nsplits == 0)
		rc = sum_and_bisect(vt, r, depth + 1);
	else if (rc == TM_OK)
		rc = split_and_bisect(vt, &split, depth + 1);
	free_splits(&split, vt->nkeys);
	return rc;
}

/*
 * Sums the target's side of the current page, (prev, hi], while the source
 * reads the next page (when this one is not the last: a last page has no
 * upper bound on the target).
 */
static int
pass_step(verify_table *vt, char *const *prev, char *const *hi, page *cur, page *next,
          verify_plan_sum *tsum)
{
	verify_query qt, qs;
	int rc;

	verify_query_init(&qt, vt, false);
	verify_query_build(&qt, vt, verify_sql_range_sum, prev, hi, cur->plain);
	if (hi != NULL)
		page_query(&qs, vt, hi, false);
	rc = verify_query_run(&qt, hi != NULL ? &qs : NULL);
	if (rc == TM_OK && hi != NULL)
		rc = qs.data_error ? read_page(vt, hi, true, next) : page_result(vt, &qs, next);
	if (rc == TM_OK && qt.data_error) {
		range r = {prev, hi, 0, NULL};

		cur->plain = true;
		rc = sum_range(vt, &r, &cur->plain, &cur->sum, tsum);
	} else if (rc == TM_OK) {
		rc = read_sum(vt, &qt, tsum);
		vt->stats.ranges++;
	}
	verify_query_clear(&qt);
	if (hi != NULL)
		verify_query_clear(&qs);
	return rc;
}

int
verify_table_differences(const verify_table *vt)
{
	return vt->multiset ? vt->multiset_differs : vt->diffs.n;
}

/* The target's rows kept as deleted (soft-delete), into the stats. */
static int
count_kept_deleted(verify_table *vt)
{
	verify_sql_table t = verify_side_table(vt, false);
	verify_query q;
	int rc;

	verify_query_init(&q, vt, false);
	q.strict = true;
	verify_sql_marked_count(&q.sql, &t);
	rc = verify_query_run(&q, NULL);
	if (rc == TM_OK)
		vt->stats.kept_deleted = atoll(PQgetvalue(q.res, 0, 0));
	verify_query_clear(&q);
	return rc;
}

static int
keyed_pass(verify_table *vt)
{
	double start = clock_now_s();
	page cur = {0}, next = {0};
	char **prev = NULL;
	int rc = read_page(vt, NULL, false, &cur);

	while (rc == TM_OK) {
		char *const *hi = cur.last;
		range r = {prev, hi, 0, NULL};
		verify_plan_sum tsum;

		rc = pass_step(vt, prev, hi, &cur, &next, &tsum);
		if (rc == TM_OK) {
			vt->stats.target_rows += tsum.rows;
			rc = bisect(vt, &r, &cur.sum, &tsum, cur.plain, 0);
		}
		if (hi == NULL)
			break;
		free_strings(prev, vt->nkeys);
		prev = cur.last;
		cur = next;
		memset(&next, 0, sizeof next);
	}
	free_strings(prev, vt->nkeys);
	free_strings(cur.last, vt->nkeys);
	free_strings(next.last, vt->nkeys);
	vt->stats.candidates = vt->diffs.n;
	vt->stats.seconds += clock_now_s() - start;
	return rc;
}

int
verify_table_pass(verify_table *vt)
{
	int rc = vt->multiset ? verify_multiset_pass(vt) : keyed_pass(vt);

	if (rc == TM_OK && vt->soft_delete)
		rc = count_kept_deleted(vt);
	return rc;
}
