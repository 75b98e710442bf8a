#include "dml_sql.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "be32.h"
#include "codec.h"

static bool
is_key(const dml_sql_table *t, int col)
{
	for (int k = 0; k < t->nkeys; k++)
		if (t->key_idx[k] == col)
			return true;
	return false;
}

static void
append_key_list(strbuf *sql, const dml_sql_table *t)
{
	for (int k = 0; k < t->nkeys; k++) {
		if (k > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, t->cols[t->key_idx[k]]);
	}
}

/* k1 = $first AND k2 = $(first+1) ... */
static void
append_key_match(strbuf *sql, const dml_sql_table *t, int first)
{
	strbuf_append(sql, " WHERE ");
	for (int k = 0; k < t->nkeys; k++) {
		if (k > 0)
			strbuf_append(sql, " AND ");
		const char *type = t->key_types != NULL ? t->key_types[k] : NULL;

		codec_append_key_operand(sql, NULL, t->cols[t->key_idx[k]], type);
		strbuf_append(sql, " = ");
		codec_append_key_param(sql, first + k, type);
	}
}

static bool
has_history(const dml_sql_table *t)
{
	return t->shape != NULL && t->shape->history != NULL;
}

static bool
soft_deletes(const dml_sql_table *t)
{
	return t->shape != NULL && t->shape->soft_delete;
}

static bool
has_metadata(const dml_sql_table *t)
{
	return t->shape != NULL && t->shape->metadata;
}

void
dml_sql_history_open(strbuf *sql)
{
	strbuf_append(sql, "WITH m AS (");
}

static void
append_hist_cols(strbuf *sql, const dml_sql_table *t, const char *alias)
{
	for (int i = 0; i < t->shape->nhist; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		if (alias != NULL)
			strbuf_appendf(sql, "%s.", alias);
		strbuf_append_ident(sql, t->shape->hist_cols[i]);
	}
}

static bool
hist_text(const dml_sql_table *t, int i)
{
	return t->shape->hist_text != NULL && t->shape->hist_text[i];
}

/* history column i's value from the mirror's column (alias.c, or c) */
static void
append_hist_value(strbuf *sql, const dml_sql_table *t, const char *alias, int i)
{
	if (hist_text(t, i))
		strbuf_append(sql, "tidemark.output_text(");
	if (alias != NULL)
		strbuf_appendf(sql, "%s.", alias);
	strbuf_append_ident(sql, t->shape->hist_cols[i]);
	if (hist_text(t, i))
		strbuf_appendc(sql, ')');
}

/* the history's values from the mirror's row, after a leading ", " */
static void
append_hist_values(strbuf *sql, const dml_sql_table *t, const char *alias)
{
	for (int i = 0; i < t->shape->nhist; i++) {
		strbuf_append(sql, ", ");
		append_hist_value(sql, t, alias, i);
	}
}

/* INSERT INTO hist (tidemark_op, tidemark_seq[, tidemark_lsn,
 * tidemark_commit_time], columns): without the position, the history's
 * defaults take it from the session */
static void
append_history_insert(strbuf *sql, const dml_sql_table *t, bool position)
{
	strbuf_append(sql, "INSERT INTO ");
	strbuf_append_qualified(sql, t->schema, t->shape->history);
	strbuf_append(sql, " (tidemark_op, tidemark_seq");
	if (position)
		strbuf_append(sql, ", tidemark_lsn, tidemark_commit_time");
	if (t->shape->nhist > 0)
		strbuf_append(sql, ", ");
	append_hist_cols(sql, t, NULL);
	strbuf_append(sql, ")");
}

/* RETURNING the history's columns (a row with none still returns one) */
static void
append_returning(strbuf *sql, const dml_sql_table *t)
{
	strbuf_append(sql, " RETURNING ");
	if (t->shape->nhist == 0)
		strbuf_append(sql, "1 AS tidemark_row");
	append_hist_cols(sql, t, NULL);
}

/* the entry's leading values: four parameters from $first on (op, seq,
 * position, commit time) */
static void
append_entry_params(strbuf *sql, int first)
{
	strbuf_appendf(sql, " SELECT $%d::text, $%d::bigint, $%d::pg_lsn, $%d::timestamptz", first,
	               first + 1, first + 2, first + 3);
}

/* ... its end: RETURNING the columns, the history's INSERT from them;
 * entry: the leading values, written (as append_entry_params does) */
static void
close_history(strbuf *sql, const dml_sql_table *t, const char *entry, bool position)
{
	append_returning(sql, t);
	strbuf_append(sql, ") ");
	append_history_insert(sql, t, position);
	strbuf_append(sql, entry);
	append_hist_values(sql, t, "m");
	strbuf_append(sql, " FROM m");
}

void
dml_sql_history_close(strbuf *sql, const dml_sql_table *t, const char *op, const char *seq)
{
	strbuf entry = STRBUF_INIT;

	strbuf_appendf(&entry, " SELECT %s, %s", op, seq);
	close_history(sql, t, strbuf_str(&entry), false);
	strbuf_free(&entry);
}

/* the history's entry values: the parameters after the n of a statement */
static void
close_with_params(strbuf *sql, const dml_sql_table *t, int n)
{
	strbuf entry = STRBUF_INIT;

	append_entry_params(&entry, n + 1);
	close_history(sql, t, strbuf_str(&entry), true);
	strbuf_free(&entry);
}

/* , tidemark_lsn = ..., tidemark_synced_at = ... (from the row's defaults,
 * which read the session's position) */
static void
append_metadata_set(strbuf *sql, const dml_sql_table *t, const char *from)
{
	if (!has_metadata(t))
		return;
	if (from != NULL)
		strbuf_appendf(sql, ", tidemark_lsn = %s.tidemark_lsn, tidemark_synced_at ="
		                    " %s.tidemark_synced_at", from, from);
	else
		strbuf_append(sql, ", tidemark_lsn = DEFAULT, tidemark_synced_at = DEFAULT");
}

/* ON CONFLICT (keys) DO UPDATE SET c = EXCLUDED.c ... (and a shape's) */
static void
append_upsert_tail(strbuf *sql, const dml_sql_table *t)
{
	bool any_nonkey = false;

	strbuf_append(sql, " ON CONFLICT (");
	append_key_list(sql, t);
	strbuf_append(sql, ") DO ");
	for (int i = 0; i < t->ncols; i++) {
		if (is_key(t, i))
			continue;
		strbuf_append(sql, any_nonkey ? ", " : "UPDATE SET ");
		strbuf_append_ident(sql, t->cols[i]);
		strbuf_append(sql, " = EXCLUDED.");
		strbuf_append_ident(sql, t->cols[i]);
		any_nonkey = true;
	}
	if (!any_nonkey && (t->shape != NULL)) {
		/* a shaped row is always written: it returns its row, or its
		 * metadata and mark change */
		strbuf_append(sql, "UPDATE SET ");
		strbuf_append_ident(sql, t->cols[t->key_idx[0]]);
		strbuf_append(sql, " = EXCLUDED.");
		strbuf_append_ident(sql, t->cols[t->key_idx[0]]);
		any_nonkey = true;
	}
	if (!any_nonkey)
		strbuf_append(sql, "NOTHING");
	append_metadata_set(sql, t, "EXCLUDED");
	if (soft_deletes(t))
		strbuf_append(sql, ", tidemark_deleted_at = NULL");
}

static void
append_insert_head(strbuf *sql, const dml_sql_table *t)
{
	strbuf_append(sql, "INSERT INTO ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " (");
	for (int i = 0; i < t->ncols; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, t->cols[i]);
	}
	strbuf_append(sql, ")");
}

void
dml_sql_upsert(strbuf *sql, const dml_sql_table *t)
{
	if (has_history(t))
		dml_sql_history_open(sql);
	append_insert_head(sql, t);
	strbuf_append(sql, " VALUES (");
	for (int i = 0; i < t->ncols; i++)
		strbuf_appendf(sql, "%s$%d", i > 0 ? ", " : "", i + 1);
	strbuf_append(sql, ")");
	append_upsert_tail(sql, t);
	if (has_history(t))
		close_with_params(sql, t, t->ncols);
}

/* unnest($1::text[], .. $n::text[]) AS u (c1, .. cn) */
static void
append_unnest_from(strbuf *sql, int n)
{
	strbuf_append(sql, "unnest(");
	for (int i = 0; i < n; i++)
		strbuf_appendf(sql, "%s$%d::text[]", i > 0 ? ", " : "", i + 1);
	strbuf_append(sql, ") AS u (");
	for (int i = 0; i < n; i++)
		strbuf_appendf(sql, "%sc%d", i > 0 ? ", " : "", i + 1);
	strbuf_append(sql, ")");
}

/* SELECT u.c1::T1, .. FROM unnest($1::text[], ..) AS u (c1, ..): every
 * array of text, each element cast to its column's type (an array of a
 * composite or of arrays would not unnest into one column of it) */
static void
append_unnest(strbuf *sql, int n, const char *const *types)
{
	strbuf_append(sql, " SELECT ");
	for (int i = 0; i < n; i++)
		strbuf_appendf(sql, "%su.c%d::%s", i > 0 ? ", " : "", i + 1, types[i]);
	strbuf_append(sql, " FROM ");
	append_unnest_from(sql, n);
}

/* WHERE t.k1 = u.c<first>::K1 AND ...: the key compared as append_key_match
 * compares it with a parameter (the same operand, the element cast to the
 * type the parameter is: the key's base type, or the column's type, which
 * an untyped parameter takes), so that both match the same rows */
static void
append_key_match_rows(strbuf *sql, const dml_sql_table *t, const char *const *types, int first)
{
	strbuf_append(sql, " WHERE ");
	for (int k = 0; k < t->nkeys; k++) {
		const char *type = t->key_types != NULL ? t->key_types[k] : NULL;

		if (k > 0)
			strbuf_append(sql, " AND ");
		codec_append_key_operand(sql, "t", t->cols[t->key_idx[k]], type);
		strbuf_appendf(sql, " = u.c%d::%s", first + k,
		               type != NULL ? type : types[t->key_idx[k]]);
	}
}

void
dml_sql_upsert_rows(strbuf *sql, const dml_sql_table *t, const char *const *types)
{
	append_insert_head(sql, t);
	append_unnest(sql, t->ncols, types);
	append_upsert_tail(sql, t);
}

/* the stream's column named col goes into a history column of text
 * (hist_text): as the stream sent it */
static bool
hist_text_named(const dml_sql_table *t, const char *col)
{
	for (int i = 0; i < t->shape->nhist; i++)
		if (strcmp(t->shape->hist_cols[i], col) == 0)
			return hist_text(t, i);
	return false;
}

/* INSERT INTO h (tidemark_op, tidemark_seq, tidemark_lsn,
 * tidemark_commit_time, c1, ...): the entries' columns in the order of
 * their arrays and of their COPY fields */
static void
append_history_columns(strbuf *sql, const dml_sql_table *t)
{
	strbuf_append_qualified(sql, t->schema, t->shape->history);
	strbuf_append(sql, " (tidemark_op, tidemark_seq, tidemark_lsn, tidemark_commit_time");
	for (int i = 0; i < t->ncols; i++) {
		strbuf_append(sql, ", ");
		strbuf_append_ident(sql, t->cols[i]);
	}
	strbuf_append(sql, ")");
}

void
dml_sql_history_copy_in(strbuf *sql, const dml_sql_table *t)
{
	strbuf_append(sql, "COPY ");
	append_history_columns(sql, t);
	strbuf_append(sql, " FROM STDIN");
}

void
dml_sql_history_rows(strbuf *sql, const dml_sql_table *t, const char *const *types)
{
	const char **all = calloc((size_t) t->ncols + 5, sizeof(char *));

	if (all == NULL)
		abort();
	all[0] = "text";
	all[1] = "bigint";
	all[2] = "pg_lsn";
	all[3] = "timestamptz";
	for (int i = 0; i < t->ncols; i++)
		all[4 + i] = hist_text_named(t, t->cols[i]) ? "pg_catalog.text" : types[i];
	strbuf_append(sql, "INSERT INTO ");
	append_history_columns(sql, t);
	append_unnest(sql, t->ncols + 4, all);
	free(all);
}

/* c = $i, ... for the columns with present[i] (types: of many rows, c =
 * u.ci::T, the target aliased t); returns how many */
static int
append_set_present(strbuf *sql, const dml_sql_table *t, const bool *present,
                   const char *const *types)
{
	int n = 0;

	for (int i = 0; i < t->ncols; i++) {
		if (!present[i])
			continue;
		if (n > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, t->cols[i]);
		if (types != NULL)
			strbuf_appendf(sql, " = u.c%d::%s", ++n, types[i]);
		else
			strbuf_appendf(sql, " = $%d", ++n);
	}
	if (n == 0) {
		/* nothing sent but unchanged values: keep the row, match the key */
		strbuf_append_ident(sql, t->cols[t->key_idx[0]]);
		strbuf_append(sql, types != NULL ? " = t." : " = ");
		strbuf_append_ident(sql, t->cols[t->key_idx[0]]);
	}
	return n;
}

void
dml_sql_delete_rows(strbuf *sql, const dml_sql_table *t, const char *const *types)
{
	strbuf_append(sql, "DELETE FROM ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " AS t USING ");
	append_unnest_from(sql, t->nkeys);
	append_key_match_rows(sql, t, types, 1);
}

void
dml_sql_update_rows(strbuf *sql, const dml_sql_table *t, const bool *present,
                    const char *const *types, int *narrays)
{
	int n;

	strbuf_append(sql, "UPDATE ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " AS t SET ");
	n = append_set_present(sql, t, present, types);
	*narrays = n + t->nkeys;
	strbuf_append(sql, " FROM ");
	append_unnest_from(sql, *narrays);
	append_key_match_rows(sql, t, types, n + 1);
}

/*
 * A text[] parameter in binary format, as array_recv reads it (every
 * integer big-endian):
 *
 *   int32 ndim        1 (0 for an empty array, which ends there)
 *   int32 flags       0 (the server finds the NULLs itself)
 *   uint32 elemtype   25, text: the parameter's type is text[]
 *   int32 dim, lbound the element count, then 1
 *   per element       int32 length (-1: NULL), then that many bytes
 *
 * The server reads each element with textrecv: the bytes as they are,
 * converted from the client's encoding as a text parameter is. Against an
 * array literal this saves quoting here and, on the server, array_in's
 * scan of every character: several times cheaper for values of kilobytes.
 */
#define ARRAY_HEADER 20
#define TEXT_OID 25

static void
append_int32(strbuf *sb, uint32_t v)
{
	char b[4];

	be32_put(b, v);
	strbuf_appendn(sb, b, 4);
}

void
dml_sql_array_element(strbuf *sb, const char *v, size_t len)
{
	if (sb->len == 0)
		strbuf_appendn(sb, (const char[ARRAY_HEADER]){0}, ARRAY_HEADER);
	if (v == NULL) {
		append_int32(sb, UINT32_MAX); /* -1 */
		return;
	}
	append_int32(sb, (uint32_t) len);
	strbuf_appendn(sb, v, len);
}

size_t
dml_sql_array_end(strbuf *sb)
{
	uint32_t n = 0;

	if (sb->len == 0) {
		append_int32(sb, 0);
		append_int32(sb, 0);
		append_int32(sb, TEXT_OID);
		return 0;
	}
	/* the elements counted by their lengths */
	for (size_t off = ARRAY_HEADER; off + 4 <= sb->len; n++) {
		uint32_t len = be32_get(sb->data + off);

		off += 4 + (len == UINT32_MAX ? 0 : len);
	}
	be32_put(sb->data, 1);
	be32_put(sb->data + 4, 0);
	be32_put(sb->data + 8, TEXT_OID);
	be32_put(sb->data + 12, n);
	be32_put(sb->data + 16, 1);
	return n;
}

void
dml_sql_copy_field(strbuf *sb, bool last, const char *v, size_t len)
{
	if (v == NULL)
		strbuf_appendn(sb, "\\N", 2);
	else
		strbuf_append_copy_text(sb, v, len);
	strbuf_appendc(sb, last ? '\n' : '\t');
}

void
dml_sql_delete(strbuf *sql, const dml_sql_table *t)
{
	if (has_history(t))
		dml_sql_history_open(sql);
	if (soft_deletes(t)) {
		strbuf_append(sql, "UPDATE ");
		strbuf_append_qualified(sql, t->schema, t->name);
		strbuf_append(sql, " SET tidemark_deleted_at = " DML_SQL_COMMIT_TIME);
		append_metadata_set(sql, t, NULL);
		append_key_match(sql, t, 1);
		strbuf_append(sql, " AND tidemark_deleted_at IS NULL");
	} else {
		strbuf_append(sql, "DELETE FROM ");
		strbuf_append_qualified(sql, t->schema, t->name);
		append_key_match(sql, t, 1);
	}
	if (has_history(t))
		close_with_params(sql, t, t->nkeys);
}

void
dml_sql_history_of_key(strbuf *sql, const dml_sql_table *t)
{
	append_history_insert(sql, t, true);
	append_entry_params(sql, t->nkeys + 1);
	append_hist_values(sql, t, NULL);
	strbuf_append(sql, " FROM ");
	strbuf_append_qualified(sql, t->schema, t->name);
	append_key_match(sql, t, 1);
	if (soft_deletes(t))
		strbuf_append(sql, " AND tidemark_deleted_at IS NULL");
}

bool
dml_sql_truncate_shaped(strbuf *sql, const dml_sql_table *t)
{
	if (!has_history(t) && !soft_deletes(t))
		return false;
	if (has_history(t) && !soft_deletes(t)) {
		append_history_insert(sql, t, false);
		strbuf_append(sql, " SELECT 'delete', $1::bigint + row_number() OVER ()");
		append_hist_values(sql, t, NULL);
		strbuf_append(sql, " FROM ");
		strbuf_append_qualified(sql, t->schema, t->name);
		return true;
	}
	if (has_history(t))
		dml_sql_history_open(sql);
	strbuf_append(sql, "UPDATE ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " SET tidemark_deleted_at = " DML_SQL_COMMIT_TIME);
	append_metadata_set(sql, t, NULL);
	strbuf_append(sql, " WHERE tidemark_deleted_at IS NULL");
	if (has_history(t))
		dml_sql_history_close(sql, t, "'delete'", "$1::bigint + row_number() OVER ()");
	else
		strbuf_append(sql, " AND $1::bigint IS NOT NULL");
	return true;
}

void
dml_sql_history_next_seq(strbuf *sql, const dml_sql_table *t)
{
	strbuf_append(sql, "(SELECT coalesce(max(tidemark_seq), 0) FROM ");
	strbuf_append_qualified(sql, t->schema, t->shape->history);
	strbuf_append(sql, " WHERE tidemark_lsn = current_setting('tidemark.lsn')::pg_lsn)"
	                   " + row_number() OVER ()");
}

void
dml_sql_history_row_text(strbuf *sql, const dml_sql_table *t, const char *alias)
{
	strbuf_append(sql, "ROW(");
	append_hist_cols(sql, t, alias);
	strbuf_append(sql, ")::text");
}

/* AND NOT EXISTS (the key's latest entry, of the same values) */
static void
append_not_latest(strbuf *sql, const dml_sql_table *t)
{
	strbuf_append(sql, " AND NOT EXISTS (SELECT 1 FROM (SELECT h.tidemark_op");
	if (t->shape->nhist > 0)
		strbuf_append(sql, ", ");
	append_hist_cols(sql, t, "h");
	strbuf_append(sql, " FROM ");
	strbuf_append_qualified(sql, t->schema, t->shape->history);
	strbuf_append(sql, " h WHERE ");
	for (int k = 0; k < t->nkeys; k++) {
		if (k > 0)
			strbuf_append(sql, " AND ");
		strbuf_append(sql, "h.");
		strbuf_append_ident(sql, t->cols[t->key_idx[k]]);
		strbuf_append(sql, " = m.");
		strbuf_append_ident(sql, t->cols[t->key_idx[k]]);
	}
	strbuf_append(sql, " ORDER BY h.tidemark_lsn DESC, h.tidemark_seq DESC LIMIT 1) l"
	                   " WHERE l.tidemark_op <> 'delete'");
	for (int i = 0; i < t->shape->nhist; i++) {
		strbuf_append(sql, " AND l.");
		strbuf_append_ident(sql, t->shape->hist_cols[i]);
		strbuf_append(sql, "::text IS NOT DISTINCT FROM ");
		append_hist_value(sql, t, "m", i);
		strbuf_append(sql, "::text");
	}
	strbuf_appendc(sql, ')');
}

void
dml_sql_history_copy(strbuf *sql, const dml_sql_table *t, const char *cond,
                     dml_sql_copy_against against, const char *before)
{
	append_history_insert(sql, t, false);
	strbuf_append(sql, " SELECT 'copy', ");
	dml_sql_history_next_seq(sql, t);
	append_hist_values(sql, t, "m");
	strbuf_append(sql, " FROM ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_appendf(sql, " m WHERE true%s", cond != NULL ? cond : "");
	if (soft_deletes(t))
		strbuf_append(sql, " AND m.tidemark_deleted_at IS NULL");
	if (against == DML_SQL_COPY_LATEST)
		append_not_latest(sql, t);
	else if (against == DML_SQL_COPY_BEFORE) {
		strbuf_appendf(sql, " AND NOT EXISTS (SELECT 1 FROM %s b WHERE b.r = ", before);
		dml_sql_history_row_text(sql, t, "m");
		strbuf_appendc(sql, ')');
	}
}

void
dml_sql_update_present(strbuf *sql, const dml_sql_table *t, const bool *present, int *nparams)
{
	int n;

	if (has_history(t))
		dml_sql_history_open(sql);
	strbuf_append(sql, "UPDATE ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " SET ");
	n = append_set_present(sql, t, present, NULL);
	append_metadata_set(sql, t, NULL);
	append_key_match(sql, t, n + 1);
	*nparams = n + t->nkeys;
	if (has_history(t)) {
		close_with_params(sql, t, *nparams);
		*nparams += DML_SQL_HISTORY_PARAMS;
	}
}

void
dml_sql_update_moved(strbuf *sql, const dml_sql_table *t, const bool *present, int *nparams)
{
	dml_sql_table plain = *t;
	dml_sql_shape no_history = {false, false, NULL, 0, NULL, NULL};
	bool hist = has_history(t);
	int n;

	/* the history's statement comes beside the update, at the top level
	 * (a data-modifying WITH cannot nest) */
	if (hist) {
		no_history.metadata = t->shape->metadata;
		no_history.soft_delete = t->shape->soft_delete;
		plain.shape = &no_history;
	}
	strbuf_append(sql, "WITH moved AS (");
	dml_sql_update_present(sql, &plain, present, &n);
	if (hist) {
		int last = n + 1 + t->nkeys + 1; /* id, new key, lsn; then the entry's */

		append_returning(sql, t);
		strbuf_append(sql, "), h AS (");
		append_history_insert(sql, t, true);
		append_entry_params(sql, last + 1);
		append_hist_values(sql, t, "moved");
		strbuf_append(sql, " FROM moved RETURNING 1)");
	} else
		strbuf_append(sql, " RETURNING 1)");
	strbuf_append(sql, " INSERT INTO tidemark.snapshot_rereads"
	                   " (table_id, key, requested_lsn) SELECT ");
	strbuf_appendf(sql, "$%d::integer, ARRAY[", ++n);
	for (int k = 0; k < t->nkeys; k++)
		strbuf_appendf(sql, "%s$%d::text", k > 0 ? ", " : "", ++n);
	strbuf_appendf(sql, "], $%d::pg_lsn WHERE NOT EXISTS (SELECT FROM moved)", ++n);
	strbuf_append(sql, " ON CONFLICT (table_id, key) DO UPDATE SET requested_lsn ="
	                   " greatest(snapshot_rereads.requested_lsn, EXCLUDED.requested_lsn)");
	*nparams = hist ? n + DML_SQL_HISTORY_PARAMS : n;
}

void
dml_sql_truncate(strbuf *sql, int ntables, const char *const *schemas, const char *const *names)
{
	strbuf_append(sql, "TRUNCATE ");
	for (int i = 0; i < ntables; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		strbuf_append_qualified(sql, schemas[i], names[i]);
	}
}

static void
append_param_array(strbuf *sql, int first, int n)
{
	strbuf_append(sql, "ARRAY[");
	for (int i = 0; i < n; i++)
		strbuf_appendf(sql, "%s$%d", i > 0 ? ", " : "", first + i);
	strbuf_append(sql, "]::text[]");
}

void
dml_sql_empty_tables(strbuf *sql, int ntables)
{
	strbuf_append(sql, "SELECT tidemark.empty_tables(");
	append_param_array(sql, 1, ntables);
	strbuf_append(sql, ", ");
	append_param_array(sql, ntables + 1, ntables);
	strbuf_append(sql, ")");
}
