#include "keyless_sql.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"

keyless_match
keyless_sql_match_parse(const char *word)
{
	if (word != NULL && strcmp(word, "image") == 0)
		return KEYLESS_MATCH_IMAGE;
	if (word != NULL && strcmp(word, "equal") == 0)
		return KEYLESS_MATCH_EQUAL;
	return KEYLESS_MATCH_TEXT;
}

void
keyless_sql_columns(strbuf *sql, int ncols, const char *const *cols)
{
	for (int i = 0; i < ncols; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, cols[i]);
	}
}

void
keyless_sql_column_list(strbuf *sql, int ncols, const char *const *cols)
{
	if (ncols == 0)
		return;
	strbuf_append(sql, " (");
	keyless_sql_columns(sql, ncols, cols);
	strbuf_appendc(sql, ')');
}

void
keyless_sql_has_columns_params(const char *schema, const char *name, int ncols,
                               const char *const *cols, char **table, char **names)
{
	strbuf qualified = STRBUF_INIT;
	json_t *arr = json_array();

	strbuf_append_qualified(&qualified, schema, name);
	*table = strbuf_steal(&qualified);
	for (int i = 0; i < ncols; i++)
		json_array_append_new(arr, json_string(cols[i]));
	*names = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
}

void
keyless_sql_insert(strbuf *sql, const keyless_sql_table *t)
{
	strbuf_append(sql, "INSERT INTO ");
	strbuf_append_qualified(sql, t->schema, t->name);
	if (t->ncols == 0) {
		strbuf_append(sql, " DEFAULT VALUES");
		return;
	}
	strbuf_append(sql, " (");
	keyless_sql_columns(sql, t->ncols, t->cols);
	strbuf_append(sql, ") VALUES (");
	for (int i = 0; i < t->ncols; i++)
		strbuf_appendf(sql, "%s$%d", i > 0 ? ", " : "", i + 1);
	strbuf_appendc(sql, ')');
}

/* Column i equal to $n (or NULL). */
static void
append_column_match(strbuf *sql, const keyless_sql_table *t, int i, char old, int *n)
{
	const char *col = t->cols[i];

	if (old == 'n') {
		strbuf_append_ident(sql, col);
		strbuf_append(sql, " IS NULL");
		return;
	}
	++*n;
	if (t->match[i] != KEYLESS_MATCH_TEXT) {
		strbuf_append_ident(sql, col);
		strbuf_appendf(sql, " = $%d", *n);
	}
	if (t->match[i] == KEYLESS_MATCH_IMAGE)
		return;
	if (t->match[i] == KEYLESS_MATCH_EQUAL)
		strbuf_append(sql, " AND ");
	codec_append_key_text(sql, NULL, col);
	if (t->match[i] == KEYLESS_MATCH_EQUAL)
		strbuf_appendf(sql, " = concat($%d)", *n);
	else if (t->types != NULL && t->types[i] != NULL)
		strbuf_appendf(sql, " = concat($%d::%s)", *n, t->types[i]);
	else
		strbuf_appendf(sql, " = $%d::text", *n);
}

/* WHERE ctid = (SELECT ctid FROM t WHERE ... LIMIT 1), parameters from
 * first + 1 on. */
static void
append_one_row(strbuf *sql, const keyless_sql_table *t, const char *old, int *n)
{
	int matched = 0;

	strbuf_append(sql, " WHERE ctid = (SELECT ctid FROM ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " WHERE ");
	for (int i = 0; i < t->ncols; i++) {
		if (old[i] == '-')
			continue;
		if (matched++ > 0)
			strbuf_append(sql, " AND ");
		append_column_match(sql, t, i, old[i], n);
	}
	if (matched == 0)
		strbuf_append(sql, "true");
	strbuf_append(sql, " LIMIT 1)");
}

void
keyless_sql_delete(strbuf *sql, const keyless_sql_table *t, const char *old, int *nparams)
{
	int n = 0;

	strbuf_append(sql, "DELETE FROM ");
	strbuf_append_qualified(sql, t->schema, t->name);
	append_one_row(sql, t, old, &n);
	*nparams = n;
}

void
keyless_sql_update(strbuf *sql, const keyless_sql_table *t, const bool *set, const char *old,
                   int *nparams)
{
	int n = 0;

	strbuf_append(sql, "UPDATE ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " SET ");
	for (int i = 0; i < t->ncols; i++) {
		if (!set[i])
			continue;
		if (n > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, t->cols[i]);
		strbuf_appendf(sql, " = $%d", ++n);
	}
	if (n == 0 && t->ncols > 0) {
		/* only unchanged values: the row stays as it is */
		strbuf_append_ident(sql, t->cols[0]);
		strbuf_append(sql, " = ");
		strbuf_append_ident(sql, t->cols[0]);
	}
	append_one_row(sql, t, old, &n);
	*nparams = n;
}

void
keyless_sql_stage_name(strbuf *sql, int table_id)
{
	char name[32];

	snprintf(name, sizeof name, "keyless %d", table_id);
	strbuf_append_qualified(sql, "tidemark", name);
}

void
keyless_sql_load(strbuf *sql, const char *schema, const char *name, int ncols,
                 const char *const *cols, int table_id)
{
	strbuf_append(sql, "INSERT INTO ");
	strbuf_append_qualified(sql, schema, name);
	keyless_sql_column_list(sql, ncols, cols);
	strbuf_append(sql, " SELECT ");
	keyless_sql_columns(sql, ncols, cols);
	strbuf_append(sql, " FROM ");
	keyless_sql_stage_name(sql, table_id);
}

/* ARRAY[$a::text, ...] of ncols parameters after *n. */
static void
append_row_array(strbuf *sql, int ncols, int *n)
{
	strbuf_append(sql, "ARRAY[");
	for (int i = 0; i < ncols; i++)
		strbuf_appendf(sql, "%s$%d::text", i > 0 ? ", " : "", ++*n);
	strbuf_append(sql, "]::text[]");
}

void
keyless_sql_record(strbuf *sql, int ncols, char op, int *nparams)
{
	int n = 4;

	strbuf_append(sql, "INSERT INTO tidemark.keyless_pending (table_id, lsn, xid, op, old, new,"
	                   " unchanged) VALUES ($1::integer, $2::pg_lsn, $3::bigint, $4::\"char\", ");
	if (op == 'u' || op == 'd')
		append_row_array(sql, ncols, &n);
	else
		strbuf_append(sql, "NULL");
	strbuf_append(sql, ", ");
	if (op == 'i' || op == 'u')
		append_row_array(sql, ncols, &n);
	else
		strbuf_append(sql, "NULL");
	if (op == 'u')
		strbuf_appendf(sql, ", $%d::int2[])", ++n);
	else
		strbuf_append(sql, ", NULL)");
	*nparams = n;
}
