/*
 * apply_rel.c: the apply's tables and relations (apply_int.h): the
 * registered tables, each source relation as the stream describes it, its
 * table's key among the stream's columns, the checks of values that no
 * longer fit the target's type (quarantine), and the relation's prepared
 * statements (built on first use, forgotten with the table's definition).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "apply_int.h"
#include "cast.h"
#include "codec.h"
#include "dml_sql.h"
#include "log.h"
#include "pgconn.h"
#include "strbuf.h"
#include "xalloc.h"

/* ---- tables ---- */

catalog_table *
apply_adopt_table(apply *a, const catalog_table *t)
{
	catalog_table *copy = malloc(sizeof *copy);

	if (copy == NULL)
		abort();
	*copy = *t;
	a->tables = realloc(a->tables, sizeof(catalog_table *) * (size_t) (a->ntables + 1));
	if (a->tables == NULL)
		abort();
	a->tables[a->ntables++] = copy;
	return copy;
}

/* A table registered under the name whose source oid is not known (a
 * catalog from before oids were recorded); a table with another oid under
 * the name is another table. */
static catalog_table *
find_table(apply *a, const char *schema, const char *name)
{
	for (int i = 0; i < a->ntables; i++)
		if (a->tables[i]->source_relid == 0 &&
		    strcmp(a->tables[i]->source_schema, schema) == 0 &&
		    strcmp(a->tables[i]->source_table, name) == 0 &&
		    strcmp(a->tables[i]->state, "dropped") != 0)
			return a->tables[i];
	return NULL;
}

static catalog_table *
find_table_id(apply *a, int table_id)
{
	for (int i = 0; i < a->ntables; i++)
		if (a->tables[i]->table_id == table_id)
			return a->tables[i];
	return NULL;
}

/* Did the source transaction being applied commit before the table
 * joined replication? Then none of its changes apply to it. */
bool
apply_before_join(const apply *a, const catalog_table *t)
{
	return a->in_source_tx && a->final_lsn < t->registered_lsn;
}

/* A table whose mode changed (`tidemark mode`): the statements built for
 * its relations are of its old shape. */
static void
forget_reshaped(apply *a, const catalog_table *old, const catalog_table *now)
{
	if (old->history == now->history && old->soft_delete == now->soft_delete &&
	    old->metadata == now->metadata)
		return;
	for (int i = 0; i < a->nrels; i++)
		if (a->rels[i]->table == old)
			apply_rel_forget_statements(a, a->rels[i]);
}

/* Was table_id asked for (ids NULL: every table was)? */
static bool
asked_for(const int *ids, int nids, int table_id)
{
	for (int i = 0; ids != NULL && i < nids; i++)
		if (ids[i] == table_id)
			return true;
	return ids == NULL;
}

/*
 * Refreshes known tables in place (relations point at them) and adds new
 * ones: every table, or those of ids. The replaced contents are gathered
 * at the front of arr and freed.
 */
static int
reload(apply *a, const int *ids, int nids)
{
	catalog_table *arr;
	int n, stale = 0;
	/* the changes held are of the tables as they were; a streamed
	 * transaction applied as it comes may meet a copy starting */
	int rc = apply_stream_barrier(a, "tables to copy (again) before its commit");

	if (rc == TM_OK)
		rc = apply_net_flush(a);
	if (rc == TM_OK)
		rc = ids == NULL ? catalog_load_tables(a->sink, a->cfg.slot, &arr, &n)
		                 : catalog_load_tables_ids(a->sink, a->cfg.slot, ids, nids, &arr, &n);
	if (rc != TM_OK)
		return rc;
	/* a table asked for that the catalog no longer lists was dropped (or
	 * became a partition) */
	for (int i = 0; i < a->ntables; i++) {
		bool listed = false;

		for (int j = 0; j < n && !listed; j++)
			listed = arr[j].table_id == a->tables[i]->table_id;
		if (!listed && asked_for(ids, nids, a->tables[i]->table_id))
			snprintf(a->tables[i]->state, sizeof a->tables[i]->state, "dropped");
	}
	for (int i = 0; i < n; i++) {
		catalog_table *old = find_table_id(a, arr[i].table_id);

		if (old != NULL) {
			catalog_table replaced = *old;

			forget_reshaped(a, old, &arr[i]);
			*old = arr[i];
			arr[stale++] = replaced;
		} else
			apply_adopt_table(a, &arr[i]);
	}
	catalog_tables_free(arr, stale);
	return apply_join_reloaded(a);
}

int
apply_reload_tables(apply *a)
{
	return reload(a, NULL, 0);
}

int
apply_reload_tables_ids(apply *a, const int *ids, int nids)
{
	return nids > 0 ? reload(a, ids, nids) : TM_OK;
}

void
apply_rel_forget_statements(apply *a, apply_rel *r)
{
	apply_rel_release_statements(a, r);
	for (int i = 0; i < r->npartials; i++)
		free(r->partials[i].present);
	free(r->partials);
	r->partials = NULL;
	r->npartials = 0;
	apply_net_forget_rel(r);
	apply_shape_forget(r);
}

void
apply_rel_release_statements(apply *a, apply_rel *r)
{
	sink_stmt_release(a->sink, r->upsert);
	sink_stmt_release(a->sink, r->upsert_plain);
	sink_stmt_release(a->sink, r->delete);
	sink_stmt_release(a->sink, r->upsert_rows);
	sink_stmt_release(a->sink, r->history_rows);
	sink_stmt_release(a->sink, r->delete_rows);
	r->upsert = r->upsert_plain = r->delete = NULL;
	r->upsert_rows = r->history_rows = r->delete_rows = NULL;
	for (int i = 0; i < r->npartials; i++) {
		sink_stmt_release(a->sink, r->partials[i].stmt);
		sink_stmt_release(a->sink, r->partials[i].rows);
		r->partials[i].stmt = r->partials[i].rows = NULL;
	}
}

/* Forgets what was worked out from the relation's table (its key among
 * the columns, the checks, the statements); keeps the stream's columns. */
static void
rel_forget_table(apply *a, apply_rel *r)
{
	free(r->key_idx);
	for (int k = 0; r->key_types != NULL && k < r->nkeys; k++)
		free(r->key_types[k]);
	free(r->key_types);
	r->key_types = NULL;
	free(r->src_types);
	free(r->check);
	free(r->checked);
	r->src_types = r->check = NULL;
	r->checked = NULL;
	r->nchecked = 0;
	apply_rel_forget_statements(a, r);
	r->key_idx = NULL;
	r->nkeys = 0;
	r->keys_ok = false;
	r->uncaptured = false;
}

void
apply_rel_clear(apply *a, apply_rel *r)
{
	rel_forget_table(a, r);
	for (int i = 0; i < r->ncols; i++)
		free(r->colnames[i]);
	free(r->colnames);
	free(r->coltypes);
	free(r->colkeys);
	r->coltypes = NULL;
	r->colkeys = NULL;
	free(r->nspname);
	free(r->relname);
	r->colnames = NULL;
	r->ncols = 0;
}

/* ---- relations ---- */

apply_rel *
apply_find_rel(apply *a, uint32_t relid)
{
	for (int i = 0; i < a->nrels; i++)
		if (a->rels[i]->relid == relid)
			return a->rels[i];
	return NULL;
}

static apply_rel *
new_rel(apply *a, uint32_t relid)
{
	apply_rel *r = calloc(1, sizeof *r);

	if (r == NULL)
		abort();
	r->relid = relid;
	a->rels = realloc(a->rels, sizeof(apply_rel *) * (size_t) (a->nrels + 1));
	if (a->rels == NULL)
		abort();
	a->rels[a->nrels++] = r;
	return r;
}

/* Finds the catalog's key columns among the stream's columns
 * (r->keys_ok tells whether each is there). */
static void
resolve_keys(apply_rel *r)
{
	const catalog_table *t = r->table;

	free(r->key_idx);
	r->key_idx = xcalloc((size_t) t->nkeys + 1, sizeof(int));
	r->nkeys = t->nkeys;
	r->keys_ok = true;
	for (int k = 0; k < t->nkeys && r->keys_ok; k++) {
		int found = -1;

		for (int i = 0; i < r->ncols && found < 0; i++)
			if (strcmp(r->colnames[i], t->key_columns[k]) == 0)
				found = i;
		r->keys_ok = found >= 0;
		r->key_idx[k] = found >= 0 ? found : 0;
	}
}

/* ---- values that no longer fit the target's type (quarantine) ---- */

/* The row of a query's result whose first column is name; -1 if none. */
static int
row_named(PGresult *r, const char *name)
{
	for (int i = 0; r != NULL && i < PQntuples(r); i++)
		if (strcmp(PQgetvalue(r, i, 0), name) == 0)
			return i;
	return -1;
}

/* name -> type text pairs of a query's two columns */
static const char *
type_of(PGresult *r, const char *name)
{
	int i = row_named(r, name);

	return i >= 0 ? PQgetvalue(r, i, 1) : NULL;
}

/* The type oid the schema version gives a column (the query's fourth
 * column; 0: not recorded, as by an older tidemark). */
static uint32_t
type_oid_of(PGresult *r, const char *name)
{
	int i = row_named(r, name);

	return i >= 0 && !PQgetisnull(r, i, 3) ? (uint32_t) strtoul(PQgetvalue(r, i, 3), NULL, 10)
	                                       : 0;
}

/* Are the columns the stream marks as the replica identity the table's
 * key? They are where the identity is the default (the primary key) or an
 * index, which is then the key tidemark takes (migrations/source:
 * table_keycols); a FULL identity marks every column, and none is marked
 * under NOTHING, so those say nothing of the key. */
static bool
same_key(const apply_rel *r)
{
	int marked = 0;

	if ((r->replident != 'd' && r->replident != 'i') || !r->keys_ok)
		return true;
	for (int i = 0; i < r->ncols; i++)
		marked += r->colkeys[i];
	if (marked == 0)
		return true;
	for (int k = 0; k < r->nkeys; k++)
		if (!r->colkeys[r->key_idx[k]])
			return false;
	return marked == r->nkeys;
}

/*
 * pgoutput's Relation message describes the columns the rows it sends have;
 * the schema version in force must list the same, by name and type, with
 * the same key. A difference means a schema change the capture did not
 * report (DDL while its event trigger was disabled, or the capture not
 * installed): the table is then set aside and copied again
 * (apply_set_aside), as its rows no longer fit what the target was made
 * for. Returns whether they differ; *streamed is the version's count of
 * the columns the stream sends.
 */
static bool
cross_check(const apply_rel *r, PGresult *version, int *streamed)
{
	bool same;

	*streamed = 0;
	/* generated columns (third column) are never sent by the stream */
	for (int i = 0; i < PQntuples(version); i++)
		*streamed += PQgetisnull(version, i, 2);
	same = *streamed == r->ncols && same_key(r);
	for (int i = 0; same && i < r->ncols; i++) {
		uint32_t oid = type_oid_of(version, r->colnames[i]);

		same = type_of(version, r->colnames[i]) != NULL &&
		       (oid == 0 || r->coltypes[i] == 0 || oid == r->coltypes[i]);
	}
	return !same && PQntuples(version) > 0;
}

/* Each key column's base type on the target (codec.h), from the target's
 * columns (name, type text, base type schema, base type name). */
static void
load_key_types(apply_rel *r, PGresult *tgt)
{
	r->key_types = xcalloc((size_t) r->nkeys + 1, sizeof(char *));
	for (int k = 0; k < r->nkeys; k++)
		for (int i = 0; i < PQntuples(tgt); i++)
			if (strcmp(PQgetvalue(tgt, i, 0), r->colnames[r->key_idx[k]]) == 0) {
				strbuf type = STRBUF_INIT;

				strbuf_append_qualified(&type, PQgetvalue(tgt, i, 2), PQgetvalue(tgt, i, 3));
				r->key_types[k] = strbuf_steal(&type);
			}
}

/*
 * For each column: the source type in force (the table's latest schema
 * version) and the target column's type. Where a source value may not fit
 * the target type (the quarantine policy kept the target's type), every
 * value is checked before it is applied.
 */
static int
load_checks(apply *a, apply_rel *r)
{
	char id[16];
	const char *p1[] = {id};
	const char *p2[] = {r->table->target_schema, r->table->target_table};
	PGresult *src = NULL, *tgt = NULL;
	int rc;

	snprintf(id, sizeof id, "%d", r->table->table_id);
	rc = sink_query(a->sink, "reading the source types in force",
	                /* the source's type, or its counterpart on the target */
	                "SELECT c->>'name', coalesce(c->>'target_type', c->>'type'), c->>'generated',"
	                " c->>'type_oid'"
	                " FROM tidemark.schema_versions v,"
	                " jsonb_array_elements(v.columns) c WHERE v.table_id = $1::int"
	                " AND v.version = (SELECT max(version) FROM tidemark.schema_versions"
	                "   WHERE table_id = $1::int)", 1, p1, &src);
	if (rc == TM_OK)
		rc = sink_query(a->sink, "reading the target types",
		                "SELECT a.attname, tidemark.format_type(a.atttypid, a.atttypmod),"
		                CODEC_KEY_TYPE_COLUMNS " FROM pg_attribute a"
		                " WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass"
		                " AND a.attnum > 0 AND NOT a.attisdropped", 2, p2, &tgt);
	r->src_types = calloc((size_t) r->ncols + 1, sizeof(sqltype));
	r->check = calloc((size_t) r->ncols + 1, sizeof(sqltype));
	r->checked = calloc((size_t) r->ncols + 1, sizeof(bool));
	if (r->src_types == NULL || r->check == NULL || r->checked == NULL)
		abort();
	/* rows of a transaction from before the table joined follow another
	 * definition, and are not applied */
	r->uncaptured = rc == TM_OK && !apply_before_join(a, r->table) &&
	                cross_check(r, src, &r->version_cols);
	if (rc == TM_OK && r->keys_ok)
		load_key_types(r, tgt);
	for (int i = 0; rc == TM_OK && i < r->ncols; i++) {
		const char *st = type_of(src, r->colnames[i]), *tt = type_of(tgt, r->colnames[i]);

		if (st == NULL || tt == NULL || sqltype_parse(st, &r->src_types[i], NULL) != 0 ||
		    sqltype_parse(tt, &r->check[i], NULL) != 0)
			continue;
		r->checked[i] = cast_classify(&r->src_types[i], &r->check[i]) > CAST_WIDEN;
		r->nchecked += r->checked[i];
	}
	PQclear(src);
	PQclear(tgt);
	return rc;
}

static json_t *
values_json(const apply_rel *r, const pgoutput_tuple *t, bool keys_only)
{
	json_t *o = json_object();

	for (int i = 0; i < r->ncols && i < t->ncols; i++) {
		const pgoutput_value *v = &t->values[i];
		bool key = false;

		for (int k = 0; k < r->nkeys; k++)
			key |= r->key_idx[k] == i;
		if (keys_only && !key)
			continue;
		if (v->kind == PGOUTPUT_VALUE_TEXT)
			json_object_set_new(o, r->colnames[i], json_stringn(v->data, v->len));
		else if (v->kind == PGOUTPUT_VALUE_NULL)
			json_object_set_new(o, r->colnames[i], json_null());
	}
	return o;
}

static int
quarantine(apply *a, const apply_rel *r, const char *change, const pgoutput_tuple *t,
           const char *reason)
{
	json_t *key = values_json(r, t, true), *row = values_json(r, t, false);
	char *key_text = json_dumps(key, JSON_COMPACT), *row_text = json_dumps(row, JSON_COMPACT);
	char table[256];
	int rc;

	snprintf(table, sizeof table, "%s.%s", r->nspname, r->relname);
	rc = catalog_quarantine(a->sink, a->cfg.slot, r->table->table_id, table, a->final_lsn, change,
	                        key_text, row_text, reason);
	free(key_text);
	free(row_text);
	json_decref(key);
	json_decref(row);
	return rc;
}

/* Checks a row's values; true when it went to quarantine instead. */
bool
apply_quarantined(apply *a, const apply_rel *r, const char *change, const pgoutput_tuple *t,
                  int *rc)
{
	char reason[256];

	for (int i = 0; r->nchecked > 0 && i < r->ncols && i < t->ncols; i++) {
		const pgoutput_value *v = &t->values[i];
		char why[200];

		if (!r->checked[i] || v->kind != PGOUTPUT_VALUE_TEXT)
			continue;
		if (cast_value_fits_from(&r->src_types[i], &r->check[i], v->data, v->len, why,
		                         sizeof why))
			continue;
		snprintf(reason, sizeof reason, "column %s: %s", r->colnames[i], why);
		*rc = quarantine(a, r, change, t, reason);
		metrics_stage(a->cfg.metrics, METRICS_QUARANTINED, 1);
		return true;
	}
	return false;
}

catalog_table *
apply_table_relid(apply *a, uint32_t relid)
{
	for (int i = 0; i < a->ntables; i++)
		if (a->tables[i]->source_relid == relid && strcmp(a->tables[i]->state, "dropped") != 0)
			return a->tables[i];
	return NULL;
}

int
apply_use_table(apply *a, apply_rel *r, catalog_table *t)
{
	rel_forget_table(a, r);
	r->table = t;
	r->unmatched = false;
	resolve_keys(r);
	return load_checks(a, r);
}

/* At a Relation message: the registered table it is, if any. */
static int
attach_table(apply *a, apply_rel *r)
{
	catalog_table *t = apply_table_relid(a, r->relid);

	if (t == NULL)
		t = find_table(a, r->nspname, r->relname);
	r->table = NULL;
	r->unmatched = t == NULL;
	r->changed_in_tx = false;
	return t != NULL ? apply_use_table(a, r, t) : TM_OK;
}

int
apply_relation(apply *a, const pgoutput_msg *m)
{
	apply_rel *r = apply_find_rel(a, m->u.relation.relid);
	int rc = apply_net_flush(a); /* held changes have the columns described before */

	if (rc != TM_OK)
		return rc;
	if (r == NULL)
		r = new_rel(a, m->u.relation.relid);
	apply_keep_described(a, r, m);
	apply_rel_clear(a, r);
	r->nspname = xstrdup(m->u.relation.nspname);
	r->relname = xstrdup(m->u.relation.relname);
	r->ncols = m->u.relation.ncols;
	r->described_before = false;
	r->described_in = a->final_lsn;
	r->colnames = xcalloc((size_t) r->ncols + 1, sizeof(char *));
	r->coltypes = xcalloc((size_t) r->ncols + 1, sizeof(uint32_t));
	r->colkeys = xcalloc((size_t) r->ncols + 1, sizeof(bool));
	r->replident = m->u.relation.replident;
	for (int i = 0; i < r->ncols; i++) {
		r->colnames[i] = xstrdup(m->u.relation.cols[i].name);
		r->coltypes[i] = m->u.relation.cols[i].type_oid;
		r->colkeys[i] = m->u.relation.cols[i].is_key;
	}
	return attach_table(a, r);
}

/* ---- statements ---- */

dml_sql_table
apply_rel_sql_table(const apply_rel *r)
{
	dml_sql_table t = {r->table->target_schema, r->table->target_table, r->ncols,
	                   (const char *const *) r->colnames, r->nkeys, r->key_idx,
	                   (const char *const *) r->key_types, apply_shape_of(r)};

	return t;
}

/* The history's op and seq after a statement's own parameters. */
static int
shape_nparams(const apply_rel *r)
{
	return apply_shaped(r) && r->table->history ? DML_SQL_HISTORY_PARAMS : 0;
}

/* The statement build makes of r's table (plain: without its shape), held
 * in *slot once made. */
static sink_stmt *
stmt_held(apply *a, apply_rel *r, sink_stmt **slot,
          void (*build)(strbuf *, const dml_sql_table *), bool plain, int nparams)
{
	if (*slot == NULL) {
		strbuf sql = STRBUF_INIT;
		dml_sql_table t = apply_rel_sql_table(r);

		if (plain)
			t.shape = NULL;
		build(&sql, &t);
		*slot = sink_stmt_hold(a->sink, sql.data, nparams);
		strbuf_free(&sql);
	}
	return *slot;
}

sink_stmt *
apply_stmt_upsert(apply *a, apply_rel *r)
{
	return stmt_held(a, r, &r->upsert, dml_sql_upsert, false, r->ncols + shape_nparams(r));
}

sink_stmt *
apply_stmt_upsert_plain(apply *a, apply_rel *r)
{
	return stmt_held(a, r, &r->upsert_plain, dml_sql_upsert, true, r->ncols);
}

sink_stmt *
apply_stmt_delete(apply *a, apply_rel *r)
{
	return stmt_held(a, r, &r->delete, dml_sql_delete, false, r->nkeys + shape_nparams(r));
}

/* The statements of the updates of the columns with present[i] (moved:
 * of a key change), found or made (without their statements yet). */
static apply_partial *
partial_of(apply_rel *r, const bool *present, bool moved)
{
	apply_partial *p;

	for (int i = 0; i < r->npartials; i++)
		if (r->partials[i].key_changed == moved &&
		    memcmp(r->partials[i].present, present, sizeof(bool) * (size_t) r->ncols) == 0)
			return &r->partials[i];
	r->partials = realloc(r->partials, sizeof *p * (size_t) (r->npartials + 1));
	if (r->partials == NULL)
		abort();
	p = &r->partials[r->npartials++];
	p->present = xcalloc((size_t) r->ncols + 1, sizeof(bool));
	memcpy(p->present, present, sizeof(bool) * (size_t) r->ncols);
	p->key_changed = moved;
	p->stmt = p->rows = NULL;
	return p;
}

/* The update of the columns with present[i]; for a key change (moved),
 * the form that asks for the row to be read again when the target has no
 * row under the old key (dml_sql_update_moved). */
sink_stmt *
apply_stmt_partial(apply *a, apply_rel *r, const bool *present, bool moved)
{
	apply_partial *p = partial_of(r, present, moved);

	if (p->stmt == NULL) {
		strbuf sql = STRBUF_INIT;
		dml_sql_table t = apply_rel_sql_table(r);
		int nparams;

		if (moved)
			dml_sql_update_moved(&sql, &t, present, &nparams);
		else
			dml_sql_update_present(&sql, &t, present, &nparams);
		p->stmt = sink_stmt_hold(a->sink, sql.data, nparams);
		strbuf_free(&sql);
	}
	return p->stmt;
}

sink_stmt *
apply_stmt_partial_rows(apply *a, apply_rel *r, const bool *present, const char *const *types)
{
	apply_partial *p = partial_of(r, present, false);

	if (p->rows == NULL) {
		strbuf sql = STRBUF_INIT;
		dml_sql_table t = apply_rel_sql_table(r);
		int narrays;

		dml_sql_update_rows(&sql, &t, present, types, &narrays);
		p->rows = sink_stmt_hold(a->sink, sql.data, narrays);
		strbuf_free(&sql);
	}
	return p->rows;
}
