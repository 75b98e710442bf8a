#include "key_order.h"

#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "pgconn.h"
#include "strbuf.h"
#include "xalloc.h"

/* Each key's descriptor among the rows (attname, descriptor). */
static char **
pick(const PGresult *r, int nkeys, char *const *keys)
{
	char **out = xcalloc((size_t) nkeys + 1, sizeof(char *));

	for (int k = 0; k < nkeys; k++)
		for (int i = 0; i < PQntuples(r) && out[k] == NULL; i++)
			if (strcmp(PQgetvalue(r, i, 0), keys[k]) == 0)
				out[k] = xstrdup(PQgetvalue(r, i, 1));
	return out;
}

int
key_order_source(PGconn *conn, const char *schema, const char *name, int nkeys,
                 char *const *keys, char ***out)
{
	const char *p[] = {schema, name};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, PGCONN_SOURCE, "reading how the source orders a table's key",
	                     CODEC_ORDER_SQL, 2, p, &r);

	*out = rc == TM_OK ? pick(r, nkeys, keys) : NULL;
	PQclear(r);
	return rc;
}

int
key_order_target(sink *s, const char *schema, const char *name, int nkeys, char *const *keys,
                 char ***out)
{
	const char *p[] = {schema, name};
	PGresult *r = NULL;
	int rc = sink_query(s, "reading how the target orders a table's key", CODEC_ORDER_SQL, 2, p,
	                    &r);

	*out = rc == TM_OK ? pick(r, nkeys, keys) : NULL;
	PQclear(r);
	return rc;
}

static void
descriptors_free(char **d, int n)
{
	for (int i = 0; d != NULL && i < n; i++)
		free(d[i]);
	free(d);
}

/* Does the table's name at the stream's position name it on the source
 * now (the same relation, when its oid is known)? */
static int
source_names_table(PGconn *conn, const catalog_table *t, bool *same)
{
	char relid[16];
	const char *p[] = {t->source_schema, t->source_table, relid};
	PGresult *r = NULL;
	int rc;

	snprintf(relid, sizeof relid, "%u", t->source_relid);
	rc = pgconn_exec(conn, PGCONN_SOURCE, "finding a table on the source by its name",
	                 "SELECT $3::oid = 0 OR c.oid = $3::oid FROM pg_class c"
	                 " JOIN pg_namespace n ON n.oid = c.relnamespace"
	                 " WHERE n.nspname = $1 AND c.relname = $2", 3, p, &r);
	*same = rc == TM_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return rc;
}

static bool
all_known(char *const *d, int n)
{
	for (int i = 0; i < n; i++)
		if (d == NULL || d[i] == NULL)
			return false;
	return true;
}

int
key_order_record(PGconn *source, sink *s, const catalog_table *t, bool behind, bool *deferred)
{
	char **src = NULL, **tgt = NULL;
	char reason[CODEC_ORDER_REASON_MAX];
	strbuf name = STRBUF_INIT;
	bool same = false, alike;
	int rc = source_names_table(source, t, &same);

	if (rc == TM_OK && same)
		rc = key_order_source(source, t->source_schema, t->source_table, t->nkeys,
		                      t->key_columns, &src);
	if (rc == TM_OK && (!same || !all_known(src, t->nkeys))) {
		descriptors_free(src, t->nkeys);
		return catalog_key_order_unknown_again(s, t->table_id);
	}
	if (rc == TM_OK)
		rc = key_order_target(s, t->target_schema, t->target_table, t->nkeys, t->key_columns,
		                      &tgt);
	strbuf_append_qualified(&name, t->source_schema, t->source_table);
	alike = rc == TM_OK &&
	        codec_order_compare(t->nkeys, (const char *const *) t->key_columns,
	                            (const char *const *) src, (const char *const *) tgt, reason,
	                            sizeof reason);
	if (rc == TM_OK && !alike && behind) {
		*deferred = true; /* perhaps the source's later changes: judged when caught up */
		rc = catalog_key_order_unknown_again(s, t->table_id);
	} else if (rc == TM_OK)
		rc = catalog_set_key_order(s, t->table_id, strbuf_str(&name), alike ? NULL : reason);
	strbuf_free(&name);
	descriptors_free(src, t->nkeys);
	descriptors_free(tgt, t->nkeys);
	return rc;
}
