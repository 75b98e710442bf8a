#include "dml_sql.h"

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

void
dml_sql_upsert(strbuf *sql, const dml_sql_table *t)
{
	bool any_nonkey = false;

	strbuf_append(sql, "INSERT INTO ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " (");
	for (int i = 0; i < t->ncols; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, t->cols[i]);
	}
	strbuf_append(sql, ") VALUES (");
	for (int i = 0; i < t->ncols; i++)
		strbuf_appendf(sql, "%s$%d", i > 0 ? ", " : "", i + 1);
	strbuf_append(sql, ") ON CONFLICT (");
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
	if (!any_nonkey)
		strbuf_append(sql, "NOTHING");
}

void
dml_sql_delete(strbuf *sql, const dml_sql_table *t)
{
	strbuf_append(sql, "DELETE FROM ");
	strbuf_append_qualified(sql, t->schema, t->name);
	append_key_match(sql, t, 1);
}

void
dml_sql_update_present(strbuf *sql, const dml_sql_table *t, const bool *present, int *nparams)
{
	int n = 0;

	strbuf_append(sql, "UPDATE ");
	strbuf_append_qualified(sql, t->schema, t->name);
	strbuf_append(sql, " SET ");
	for (int i = 0; i < t->ncols; i++) {
		if (!present[i])
			continue;
		if (n > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, t->cols[i]);
		strbuf_appendf(sql, " = $%d", ++n);
	}
	if (n == 0) {
		/* nothing sent but unchanged values: keep the row, match the key */
		strbuf_append_ident(sql, t->cols[t->key_idx[0]]);
		strbuf_append(sql, " = ");
		strbuf_append_ident(sql, t->cols[t->key_idx[0]]);
	}
	append_key_match(sql, t, n + 1);
	*nparams = n + t->nkeys;
}

void
dml_sql_update_moved(strbuf *sql, const dml_sql_table *t, const bool *present, int *nparams)
{
	int n;

	strbuf_append(sql, "WITH moved AS (");
	dml_sql_update_present(sql, t, present, &n);
	strbuf_append(sql, " RETURNING 1) INSERT INTO tidemark.snapshot_rereads"
	                   " (table_id, key, requested_lsn) SELECT ");
	strbuf_appendf(sql, "$%d::integer, ARRAY[", ++n);
	for (int k = 0; k < t->nkeys; k++)
		strbuf_appendf(sql, "%s$%d::text", k > 0 ? ", " : "", ++n);
	strbuf_appendf(sql, "], $%d::pg_lsn WHERE NOT EXISTS (SELECT FROM moved)", ++n);
	strbuf_append(sql, " ON CONFLICT (table_id, key) DO UPDATE SET requested_lsn ="
	                   " greatest(snapshot_rereads.requested_lsn, EXCLUDED.requested_lsn)");
	*nparams = n;
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
