/*
 * typesync_cols.c: collations on the target, how each column of a table
 * looks there, and whether the table's key sorts alike on both sides (see
 * typesync.h). Types themselves are in typesync.c.
 */
#include "typesync_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddl_parse.h"
#include "log.h"
#include "pgconn.h"
#include "sqltype.h"
#include "target_ddl.h"
#include "type_ddl.h"
#include "xalloc.h"

/* ---- type names ---- */

bool
ts_same_type_text(const char *a, const char *b)
{
	sqltype x, y;

	if (a == NULL || b == NULL || sqltype_parse(a, &x, NULL) != 0 || sqltype_parse(b, &y, NULL) != 0)
		return false;
	return strcmp(x.schema, y.schema) == 0 && strcmp(x.name, y.name) == 0 &&
	       x.nmods == y.nmods && memcmp(x.mods, y.mods, sizeof x.mods) == 0 &&
	       strcmp(x.fields, y.fields) == 0 && x.ndims == y.ndims;
}

void
ts_type_text(const ts *x, const char *type_sql, uint32_t type_ref, strbuf *out, const char **why,
             bool *fallback)
{
	const ts_type *r = type_ref != 0 ? ts_find(x, type_ref) : NULL;
	sqltype t;

	*why = NULL;
	*fallback = false;
	if (type_ref == 0 && sqltype_names_objects(type_sql)) {
		*fallback = true;
		*why = "its values name objects of the source database, which the target has under "
		       "other oids or not at all";
		strbuf_append(out, strchr(type_sql, '[') != NULL ? "text[]" : "text");
		return;
	}
	if (type_ref == 0) {
		strbuf_append(out, type_sql);
		return;
	}
	if (sqltype_parse(type_sql, &t, NULL) != 0 || r == NULL || r->name == NULL) {
		*fallback = true;
		*why = r != NULL && r->reason != NULL ? r->reason : "its definition is unknown";
		strbuf_append(out, sqltype_parse(type_sql, &t, NULL) == 0 && t.ndims > 0 ? "text[]"
		                                                                        : "text");
		return;
	}
	*why = r->reason;
	if (strcmp(t.schema, r->schema) == 0 && strcmp(t.name, r->name) == 0) {
		strbuf_append(out, type_sql);
		return;
	}
	snprintf(t.schema, sizeof t.schema, "%s", r->schema);
	snprintf(t.name, sizeof t.name, "%s", r->name);
	t.quoted = t.schema_quoted = true;
	sqltype_render(&t, out);
}

/* ---- collations ---- */

static ts_coll *
coll_find(ts *x, const srctype_collation *c)
{
	for (int i = 0; i < x->ncolls; i++)
		if (strcmp(x->colls[i].schema, c->schema) == 0 && strcmp(x->colls[i].name, c->name) == 0)
			return &x->colls[i];
	return NULL;
}

static ts_coll *
coll_add(ts *x, const srctype_collation *c, const char *why)
{
	ts_coll *k;

	x->colls = xrealloc(x->colls, sizeof(ts_coll) * (size_t) (x->ncolls + 1));
	k = &x->colls[x->ncolls++];
	k->schema = xstrdup(c->schema);
	k->name = xstrdup(c->name);
	k->why = xstrdup(why);
	return k;
}

static int
collation_exists(ts *x, const srctype_collation *c, bool *exists)
{
	const char *p[] = {c->schema, c->name};
	PGresult *r = NULL;
	int rc = sink_query(x->sink, "looking for a collation on the target",
	                    "SELECT 1 FROM pg_collation c JOIN pg_namespace n ON n.oid = c.collnamespace"
	                    " WHERE n.nspname = $1 AND c.collname = $2"
	                    " AND c.collencoding IN (-1, pg_char_to_encoding(getdatabaseencoding()))",
	                    2, p, &r);

	*exists = rc == TM_OK && PQntuples(r) > 0;
	PQclear(r);
	return rc;
}

/* Creates the source user's collation c on the target; *why when it cannot. */
static int
create_collation(ts *x, const srctype_collation *c, char *why, size_t why_size)
{
	strbuf sql = STRBUF_INIT;
	char *refused = NULL;
	tm_error err;
	int rc = TM_OK;

	if (type_ddl_create_collation(&sql, c, &err) != 0) {
		snprintf(why, why_size, "%s", err.msg);
		strbuf_free(&sql);
		return TM_OK;
	}
	{
		strbuf schema = STRBUF_INIT;

		target_ddl_create_schema(&schema, c->schema);
		rc = sink_try(x->sink, "creating a target schema", strbuf_str(&schema), &refused);
		strbuf_free(&schema);
	}
	if (rc == TM_OK && refused == NULL)
		rc = sink_try(x->sink, "creating a collation", strbuf_str(&sql), &refused);
	if (rc == TM_OK && refused != NULL)
		snprintf(why, why_size, "CREATE COLLATION failed on the target: %s", refused);
	else if (rc == TM_OK)
		ts_note(x, "created collation %s.%s", c->schema, c->name);
	free(refused);
	strbuf_free(&sql);
	return rc;
}

int
ts_collation(ts *x, const srctype_collation *c, bool *use, const char **why)
{
	ts_coll *k;
	char reason[512];
	bool exists = false;
	int rc = TM_OK;

	*use = false;
	*why = NULL;
	if (c == NULL || c->is_default)
		return TM_OK;
	if ((k = coll_find(x, c)) == NULL) {
		reason[0] = '\0';
		rc = collation_exists(x, c, &exists);
		if (rc == TM_OK && !exists && c->builtin)
			snprintf(reason, sizeof reason, "collation %s.%s does not exist on the target",
			         c->schema, c->name);
		else if (rc == TM_OK && !exists)
			rc = create_collation(x, c, reason, sizeof reason);
		if (rc != TM_OK)
			return rc;
		k = coll_add(x, c, reason[0] ? reason : NULL);
	}
	*use = k->why == NULL;
	*why = k->why;
	return TM_OK;
}

/* ---- the columns of a table ---- */

static void
add_reason(strbuf *sb, const char *fmt, const char *a, const char *b)
{
	if (sb->len > 0)
		strbuf_append(sb, "; ");
	strbuf_appendf(sb, fmt, a, b ? b : "");
}

/* One column's target_type, collate and kept_as; said as a warning, or as
 * information where the only reason is a built-in type kept as text by
 * design (sqltype_names_objects), not for want of a type. */
static int
column_on_target(ts *x, const tabledef *def, tabledef_column *c)
{
	strbuf type = STRBUF_INIT, kept = STRBUF_INIT, expr = STRBUF_INIT;
	const char *why = NULL;
	bool fallback = false, use = false, by_design;
	tm_error err;
	int rc;

	ts_type_text(x, c->type_sql, c->type_ref, &type, &why, &fallback);
	by_design = fallback && c->type_ref == 0;
	if (c->type_ref != 0 || fallback) {
		tabledef_set_target_type(c, strbuf_str(&type));
		if (fallback)
			add_reason(&kept, "kept as %s: %s", strbuf_str(&type), why);
		else if (why != NULL)
			add_reason(&kept, "type %s differs on the target: %s", c->type_sql, why);
	}
	rc = ts_collation(x, c->collation, &use, &why);
	c->collate = use;
	by_design = by_design && why == NULL;
	if (why != NULL)
		add_reason(&kept, "the target's default collation instead of %s: %s", c->collation->name,
		           why);
	if (c->generated != NULL && ddl_parse_generation_expr(c->generated, &expr, &err) != 0) {
		by_design = false;
		add_reason(&kept, "generated column left out: its expression is refused (%s)%s", err.msg,
		           NULL);
	}
	tabledef_set_kept_as(c, kept.len > 0 ? strbuf_str(&kept) : NULL);
	if (kept.len > 0)
		log_msg(by_design ? LOG_INFO : LOG_WARN, "target: table %s.%s, column %s (source type %s):"
		        " %s", def->schema, def->name, c->name, c->type_sql, strbuf_str(&kept));
	strbuf_free(&type);
	strbuf_free(&kept);
	strbuf_free(&expr);
	return rc;
}

int
typesync_table(sink *s, const char *slot, tabledef *def, typesync_result *res)
{
	srctype_list order = {0, NULL};
	tm_error err;
	ts x;
	int rc = TM_OK;

	ts_init(&x, s, slot, res);
	srctype_list_copy(&order, &def->types);
	if (srctype_list_order(&order, &err) != 0)
		log_warn("target: the types of %s.%s cannot be created: %s", def->schema, def->name,
		         err.msg);
	else
		for (int i = 0; rc == TM_OK && i < order.n; i++)
			rc = ts_sync_type(&x, &order.types[i]);
	for (int i = 0; rc == TM_OK && i < def->ncols; i++)
		rc = column_on_target(&x, def, &def->cols[i]);
	srctype_list_clear(&order);
	ts_clear(&x);
	return rc;
}
