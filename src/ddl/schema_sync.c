#include "schema_sync.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "ddl_event.h"
#include "ddl_parse.h"
#include "dml_sql.h"
#include "keyless.h"
#include "log.h"
#include "pipeline.h"
#include "pgconn.h"
#include "policy.h"
#include "shape.h"
#include "schema_sync_int.h"
#include "sqltype.h"
#include "target_ddl.h"
#include "typesync.h"
#include "xalloc.h"

/* ---- configuration ---- */

int
schema_sync_new(const schema_sync_config *cfg, sink *s, schema_sync **out)
{
	schema_sync *ss = calloc(1, sizeof *ss);
	int rc;

	if (ss == NULL)
		abort();
	ss->cfg = *cfg;
	ss->sink = s;
	rc = schema_sync_auth_load(ss);
	if (rc != TM_OK) {
		schema_sync_free(ss);
		return rc;
	}
	*out = ss;
	return TM_OK;
}

void
schema_sync_free(schema_sync *ss)
{
	if (ss == NULL)
		return;
	free(ss->statement);
	schema_sync_rewrite_free(ss);
	schema_sync_join_reset(ss);
	free(ss);
}

/* ---- reading the catalog and the target ---- */

/* The registered table a message's table is: by oid, or by name when the
 * catalog does not know its oid (a table of another oid under the name is
 * another table). */
static int
load_table(schema_sync *ss, const tabledef *now, catalog_table **out)
{
	int rc = catalog_load_table_relid(ss->sink, ss->cfg.slot, now->relid, out);

	if (rc == TM_OK && *out == NULL)
		rc = catalog_load_table(ss->sink, ss->cfg.slot, now->schema, now->name, out);
	if (rc == TM_OK && *out != NULL && (*out)->source_relid != 0 &&
	    (*out)->source_relid != now->relid) {
		catalog_table_free(*out);
		*out = NULL;
	}
	return rc;
}

/* The table's latest schema version: *def new, *version its number. */
static int
load_version(schema_sync *ss, const catalog_table *t, tabledef **def, int *version)
{
	char id[16];
	const char *p[] = {id};
	PGresult *r = NULL;
	tm_error err;
	int rc;

	snprintf(id, sizeof id, "%d", t->table_id);
	rc = sink_query(ss->sink, "reading a schema version",
	                "SELECT version, columns::text FROM tidemark.schema_versions"
	                " WHERE table_id = $1::int ORDER BY version DESC LIMIT 1", 1, p, &r);
	if (rc != TM_OK)
		return rc;
	*def = tabledef_new(t->source_schema, t->source_table, t->source_relid);
	*version = PQntuples(r) ? atoi(PQgetvalue(r, 0, 0)) : 0;
	if (PQntuples(r) == 1) {
		json_t *cols = json_loads(PQgetvalue(r, 0, 1), 0, NULL);

		if (tabledef_columns_from_json(*def, cols, &err) != 0) {
			log_error("target: schema version %d of %s.%s is unreadable: %s", *version,
			          t->source_schema, t->source_table, err.msg);
			rc = TM_EXIT_TARGET;
		}
		json_decref(cols);
	}
	PQclear(r);
	return rc;
}

typedef struct target_cols {
	PGresult *res;       /* owned */
	int n;
	const char **names;  /* owned array, strings borrowed from res */
	const char **types;
	char *pk;            /* owned: the primary key constraint's name, or NULL */
} target_cols;

static void
target_cols_free(target_cols *tc)
{
	PQclear(tc->res);
	free(tc->names);
	free(tc->types);
	free(tc->pk);
}

static int
load_target(schema_sync *ss, const catalog_table *t, target_cols *tc)
{
	const char *p[] = {t->target_schema, t->target_table};
	PGresult *pk = NULL;
	int rc;

	memset(tc, 0, sizeof *tc);
	rc = sink_query(ss->sink, "reading the target table's columns",
	                    "SELECT a.attname, tidemark.format_type(a.atttypid, a.atttypmod)"
	                    " FROM pg_attribute a"
	                    " WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass"
	                " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", 2, p, &tc->res);
	if (rc == TM_OK)
		rc = sink_query(ss->sink, "reading the target table's key",
		                "SELECT conname FROM pg_constraint WHERE contype = 'p' AND conrelid ="
		                " format('%I.%I', $1::text, $2::text)::regclass", 2, p, &pk);
	if (rc != TM_OK)
		return rc;
	tc->n = PQntuples(tc->res);
	tc->names = calloc((size_t) tc->n + 1, sizeof(char *));
	tc->types = calloc((size_t) tc->n + 1, sizeof(char *));
	if (tc->names == NULL || tc->types == NULL)
		abort();
	for (int i = 0; i < tc->n; i++) {
		tc->names[i] = PQgetvalue(tc->res, i, 0);
		tc->types[i] = PQgetvalue(tc->res, i, 1);
	}
	tc->pk = PQntuples(pk) ? strdup(PQgetvalue(pk, 0, 0)) : NULL;
	PQclear(pk);
	return TM_OK;
}

/* ---- running a plan ---- */

/* The target names as they change while the plan runs. */
typedef struct target_name {
	char *schema;   /* owned */
	char *table;    /* owned */
} target_name;

static int
exec(schema_sync *ss, const char *what, strbuf *sql)
{
	int rc = sink_command(ss->sink, what, strbuf_str(sql), 0, NULL);

	strbuf_reset(sql);
	return rc;
}

/* A statement that may fail without failing the transaction (a NOT NULL
 * the target's rows cannot take, a generated column the target refuses):
 * under a savepoint. *refused (may be NULL: then freed here) gets the
 * target's message when it failed. */
static int
exec_tolerant(schema_sync *ss, const char *what, strbuf *sql, char **refused)
{
	char *failure = NULL;
	int rc = sink_try(ss->sink, what, strbuf_str(sql), &failure);

	if (rc == TM_OK && failure != NULL)
		log_warn("target: %s failed: %s; replication goes on without it", what, failure);
	if (refused != NULL)
		*refused = failure;
	else
		free(failure);
	strbuf_reset(sql);
	return rc;
}

static void
rename_to(char **field, const char *value)
{
	free(*field);
	*field = strdup(value);
}

/* A generated column, under a savepoint: one the target refuses is left
 * out, and the new version says why (kept_as). */
static int
add_generated(schema_sync *ss, const target_name *tn, const ddl_action *a, tabledef *now,
              strbuf *sql)
{
	tabledef_column *c = (tabledef_column *) tabledef_find(now, a->column);
	char *refused = NULL;
	tm_error err;
	int rc;

	if (target_ddl_add_generated(sql, tn->schema, tn->table, a->column, a->type, a->coll_schema,
	                             a->coll_name, a->value, &err) != 0) {
		log_error("target: cannot %s: %s", a->why, err.msg);
		return TM_EXIT_TARGET;
	}
	rc = exec_tolerant(ss, "adding a generated target column", sql, &refused);
	if (rc == TM_OK && refused != NULL && c != NULL) {
		strbuf why = STRBUF_INIT;

		strbuf_appendf(&why, "generated column left out: the target refused it: %s", refused);
		tabledef_set_kept_as(c, strbuf_str(&why));
		strbuf_free(&why);
	}
	free(refused);
	return rc;
}

static int
run_column_action(schema_sync *ss, target_name *tn, const ddl_action *a, tabledef *now,
                  strbuf *sql)
{
	tm_error err;
	int rc;

	switch (a->kind) {
	case DDL_ACT_RENAME_COLUMN:
		target_ddl_rename_column(sql, tn->schema, tn->table, a->column, a->name);
		return exec(ss, "renaming a target column", sql);
	case DDL_ACT_DROP_COLUMN:
		target_ddl_drop_column(sql, tn->schema, tn->table, a->column);
		return exec(ss, "dropping a target column", sql);
	case DDL_ACT_KEEP_COLUMN:
	case DDL_ACT_DROP_NOT_NULL:
		target_ddl_not_null(sql, tn->schema, tn->table, a->column, false);
		return exec(ss, "dropping NOT NULL on a target column", sql);
	case DDL_ACT_SET_NOT_NULL:
		target_ddl_not_null(sql, tn->schema, tn->table, a->column, true);
		return exec_tolerant(ss, "setting NOT NULL on a target column", sql, NULL);
	case DDL_ACT_ADD_GENERATED:
		return add_generated(ss, tn, a, now, sql);
	case DDL_ACT_DROP_EXPRESSION:
		target_ddl_drop_expression(sql, tn->schema, tn->table, a->column);
		return exec(ss, "making a generated target column an ordinary one", sql);
	case DDL_ACT_SET_COLLATION:
		if (target_ddl_set_collation(sql, tn->schema, tn->table, a->column, a->type,
		                             a->coll_schema, a->coll_name, &err) != 0)
			break;
		return exec(ss, "changing a target column's collation", sql);
	case DDL_ACT_ADD_COLUMN:
		if (target_ddl_add_column(sql, tn->schema, tn->table, a->column, a->type, a->coll_schema,
		                          a->coll_name, a->value, &err) != 0)
			break;
		if ((rc = exec(ss, "adding a target column", sql)) != TM_OK)
			return rc;
		if (a->value == NULL)
			return TM_OK;
		/* the default only gave existing rows their value */
		target_ddl_drop_default(sql, tn->schema, tn->table, a->column);
		return exec(ss, "dropping the column's default", sql);
	default:
		return TM_OK;
	}
	log_error("target: cannot %s: %s", a->why, err.msg);
	return TM_EXIT_TARGET;
}

/* SET SCHEMA: the target table moves to the target schema of the new
 * source schema (the pipeline's mapping), if that is another one. */
static int
move_to_schema(schema_sync *ss, target_name *tn, const char *source_schema, strbuf *sql)
{
	char *tschema = NULL;
	int rc = pipeline_target_schema(ss->sink, ss->cfg.slot, source_schema, &tschema);

	if (rc == TM_OK && strcmp(tschema, tn->schema) != 0) {
		target_ddl_create_schema(sql, tschema);
		rc = exec(ss, "creating a target schema", sql);
		if (rc == TM_OK) {
			target_ddl_set_schema(sql, tn->schema, tn->table, tschema);
			rc = exec(ss, "moving a target table", sql);
		}
		if (rc == TM_OK)
			rename_to(&tn->schema, tschema);
	}
	free(tschema);
	return rc;
}

static int
run_table_action(schema_sync *ss, target_name *tn, const ddl_action *a, const target_cols *tc,
                 tabledef *now, strbuf *sql)
{
	int rc;

	switch (a->kind) {
	case DDL_ACT_RENAME_TABLE:
		/* the name of a table dropped earlier: the kept one moves aside */
		rc = catalog_retire_dropped(ss->sink, ss->cfg.slot, now->schema, a->name);
		target_ddl_rename_table(sql, tn->schema, tn->table, a->name);
		rename_to(&tn->table, a->name);
		return rc == TM_OK ? exec(ss, "renaming a target table", sql) : rc;
	case DDL_ACT_SET_SCHEMA:
		rc = catalog_retire_dropped(ss->sink, ss->cfg.slot, a->name, now->name);
		return rc == TM_OK ? move_to_schema(ss, tn, a->name, sql) : rc;
	case DDL_ACT_SET_KEY:
		target_ddl_set_key(sql, tn->schema, tn->table, tc->pk, a->nkeys, a->keys);
		return exec(ss, "changing a target table's key", sql);
	default:
		return run_column_action(ss, tn, a, now, sql);
	}
}

/* ---- recording ---- */

/* The table's new names, key and oid; its new version, valid from pos. */
/* In record_version's UPDATE: the key changed while the table is copied. */
#define KEY_CHANGED_MID_COPY                                                                \
	"key_columns IS DISTINCT FROM k.keys AND state IN ('snapshot_pending', 'snapshotting')"

static int
record_version(schema_sync *ss, const catalog_table *t, const tabledef *now,
               const target_name *tn, int version, tm_lsn pos)
{
	json_t *cols = tabledef_columns_to_json(now);
	char *cols_text = json_dumps(cols, JSON_COMPACT);
	char *keys = tabledef_keys_json(now);
	char id[16], ver[16], relid[16], lsn[LSN_TEXT_MAX];
	const char *p[] = {id, now->schema, now->name, tn->schema, tn->table, keys, relid, ver,
	                   lsn_format(pos, lsn), cols_text};
	int rc;

	snprintf(id, sizeof id, "%d", t->table_id);
	snprintf(ver, sizeof ver, "%d", version);
	snprintf(relid, sizeof relid, "%u", now->relid);
	rc = sink_command(ss->sink, "recording a schema version",
	                  "WITH k AS (SELECT ARRAY(SELECT jsonb_array_elements_text($6::jsonb)) AS keys),"
	                  " t AS (UPDATE tidemark.tables SET source_schema = $2, source_table = $3,"
	                  "   target_schema = $4, target_table = $5, key_columns = k.keys,"
	                  /* a copy under way under another key starts again in the new order */
	                  "   snapshot_last_key = CASE WHEN " KEY_CHANGED_MID_COPY " THEN NULL"
	                  "     ELSE snapshot_last_key END,"
	                  "   snapshot_requested_at = CASE WHEN " KEY_CHANGED_MID_COPY
	                  "     THEN clock_timestamp() ELSE snapshot_requested_at END,"
	                  "   source_relid = $7::oid FROM k WHERE table_id = $1::int RETURNING table_id)"
	                  " INSERT INTO tidemark.schema_versions (table_id, version, valid_from_lsn, columns)"
	                  " SELECT table_id, $8::int, $9::pg_lsn, $10::jsonb FROM t", 10, p);
	if (rc == TM_OK)
		rc = catalog_vacate_name(ss->sink, ss->cfg.slot, t->source_schema, t->source_table,
		                         now->schema, now->name);
	json_decref(cols);
	free(cols_text);
	free(keys);
	return rc;
}

int
schema_sync_request_snapshot(schema_sync *ss, int table_id)
{
	metrics_stage_schema_change(ss->cfg.metrics, "copy_again");
	return catalog_request_copy(ss->sink, table_id);
}

void
schema_sync_note_list(strbuf *sb, const char *text)
{
	if (sb->len > 0)
		strbuf_append(sb, "; ");
	strbuf_append(sb, text);
}

/* ---- a key that comes or goes (tables without a key: keyless.h) ---- */

int
schema_sync_empty_for_copy(schema_sync *ss, const char *schema, const char *table)
{
	const char *schemas[] = {schema}, *names[] = {table};
	strbuf sql = STRBUF_INIT;
	char *keys = NULL;
	int rc = catalog_referencing_tables(ss->sink, schema, table, &keys);

	if (rc == TM_OK && keys != NULL) {
		log_error("target: %s.%s must be emptied to be copied again, but foreign keys of the "
		          "target's own reference it (from %s): TRUNCATE refuses it, and a DELETE "
		          "would act on their rows. Fix: drop those keys, run again, and add them "
		          "back once the table is copied", schema, table, keys);
		rc = TM_EXIT_TARGET;
	}
	free(keys);
	if (rc != TM_OK)
		return rc;
	dml_sql_truncate(&sql, 1, schemas, names);
	rc = sink_command(ss->sink, "emptying a target table to copy it again", strbuf_str(&sql), 0,
	                  NULL);
	strbuf_free(&sql);
	return rc;
}

/* The key is dropped: the target's primary key goes, and the rows are
 * matched by all their columns from now on. */
static int
drop_key(schema_sync *ss, const target_name *tn, const target_cols *tc,
         const ddl_event_table *now, strbuf *sql)
{
	int rc = TM_OK;

	if (tc->pk != NULL) {
		target_ddl_set_key(sql, tn->schema, tn->table, tc->pk, 0, NULL);
		rc = exec(ss, "dropping a target table's key", sql);
	}
	/* without FULL: said at the commit, if the table still has no key then
	 * (schema_sync_keyless_note) */
	if (rc == TM_OK && now->replident == 'f')
		log_info("%s.%s has no key any more: it is replicated without one (updates and deletes "
		         "match whole rows)", now->def->schema, now->def->name);
	return rc;
}

/*
 * The target table takes the key its old one gave way to. If it does not
 * (its rows lack values the source computed for them, ADD COLUMN id
 * serial, which the copy brings; or they differ from the source's), the
 * table is emptied and copied again.
 */
static int
give_key(schema_sync *ss, const target_name *tn, const ddl_action *a,
         const ddl_event_table *now, strbuf *sql, bool *resnapshot)
{
	char *refused = NULL;
	bool ok;
	int rc;

	target_ddl_set_key(sql, tn->schema, tn->table, NULL, a->nkeys, a->keys);
	rc = exec_tolerant(ss, "giving a target table its key", sql, &refused);
	ok = refused == NULL;
	free(refused);
	if (rc != TM_OK || ok)
		return rc;
	if (schema_sync_was_rewritten(ss, ss->rewrite_xid, now->def->relid))
		log_info("target: %s.%s does not take the source's new key before the source's "
		         "rewritten rows are copied: it is emptied and copied again", tn->schema,
		         tn->table);
	else
		log_warn("target: %s.%s does not take the source's new key (its rows differ from the "
		         "source's): it is emptied and copied again", tn->schema, tn->table);
	rc = schema_sync_empty_for_copy(ss, tn->schema, tn->table);
	target_ddl_set_key(sql, tn->schema, tn->table, NULL, a->nkeys, a->keys);
	if (rc == TM_OK)
		rc = exec(ss, "giving a target table its key", sql);
	*resnapshot = true;
	return rc;
}

/*
 * A table without a key gets one. While it is being copied, its target
 * rows are replaced by the copy anyway (the key change starts it again):
 * emptied first. Otherwise the target holds what the source held when the
 * key came, which the key accepts; if it does not, give_key.
 */
static int
add_key(schema_sync *ss, const target_name *tn, const ddl_action *a, const catalog_table *t,
        const ddl_event_table *now, strbuf *sql, bool *resnapshot)
{
	bool copying = strcmp(t->state, "streaming") != 0;
	int rc = keyless_pending_clear(ss->sink, t->table_id);

	if (rc == TM_OK && copying) {
		rc = schema_sync_empty_for_copy(ss, tn->schema, tn->table);
		target_ddl_set_key(sql, tn->schema, tn->table, NULL, a->nkeys, a->keys);
		return rc == TM_OK ? exec(ss, "giving a target table its key", sql) : rc;
	}
	return rc == TM_OK ? give_key(ss, tn, a, now, sql, resnapshot) : rc;
}

static int
run_key_action(schema_sync *ss, target_name *tn, const ddl_action *a, const target_cols *tc,
               const catalog_table *t, ddl_event_table *now, strbuf *sql, bool *resnapshot)
{
	if (a->nkeys == 0)
		return drop_key(ss, tn, tc, now, sql);
	if (t->nkeys == 0)
		return add_key(ss, tn, a, t, now, sql, resnapshot);
	/* the old key went first (run_plan) */
	if (tc->pk == NULL)
		return give_key(ss, tn, a, now, sql, resnapshot);
	return run_table_action(ss, tn, a, tc, now->def, sql);
}

static bool
plan_sets_key(const ddl_plan *plan)
{
	for (int i = 0; i < plan->n; i++)
		if (plan->actions[i].kind == DDL_ACT_SET_KEY)
			return true;
	return false;
}

/*
 * The plan, in its order; but a key that changes goes first: a column of
 * the old key may be dropped, or kept with its NOT NULL dropped, by the
 * same change (ALTER TABLE t DROP COLUMN id, ADD PRIMARY KEY (a, b)), and
 * the target refuses both while the column is in its primary key. The new
 * key comes in the plan's place, after the columns it needs are added.
 */
static int
run_plan(schema_sync *ss, const ddl_plan *plan, target_name *tn, const target_cols *tc,
         const catalog_table *t, ddl_event_table *now, const ddl_track_session *session,
         sync_note *note, bool *resnapshot)
{
	strbuf sql = STRBUF_INIT;
	target_cols keyless_tc = *tc;
	int rc = TM_OK;

	if (tc->pk != NULL && plan_sets_key(plan)) {
		target_ddl_set_key(&sql, tn->schema, tn->table, tc->pk, 0, NULL);
		rc = exec(ss, "dropping a target table's old key", &sql);
		keyless_tc.pk = NULL;
		tc = &keyless_tc;
	}
	for (int i = 0; rc == TM_OK && i < plan->n; i++) {
		const ddl_action *a = &plan->actions[i];

		if (a->kind == DDL_ACT_RESNAPSHOT)
			*resnapshot = true;
		else if (a->kind == DDL_ACT_SET_KEY)
			rc = run_key_action(ss, tn, a, tc, t, now, &sql, resnapshot);
		else if (a->kind == DDL_ACT_ALTER_TYPE)
			rc = schema_sync_alter_type(ss, tn->schema, tn->table, a, session, note, resnapshot);
		else
			rc = run_table_action(ss, tn, a, tc, now->def, &sql);
		if (rc == TM_OK)
			schema_sync_note_list(&note->actions, a->why);
		if (rc == TM_OK && a->kind != DDL_ACT_RESNAPSHOT) /* counted when asked for */
			metrics_stage_ddl_action(ss->cfg.metrics, (int) a->kind);
	}
	strbuf_free(&sql);
	return rc;
}

/* The types and collations the new definition needs, made ready on the
 * target; each column's target type resolved (typesync.h). */
static int
sync_types(schema_sync *ss, tabledef *def, sync_note *note, schema_sync_result *res)
{
	typesync_result ts = {false, STRBUF_INIT};
	int rc = typesync_table(ss->sink, ss->cfg.slot, def, &ts);

	if (rc == TM_OK && ts.actions.len > 0)
		schema_sync_note_list(&note->actions, strbuf_str(&ts.actions));
	res->commit_after |= ts.values_added;
	typesync_result_free(&ts);
	return rc;
}

/* A column the target kept as text before (made by a tidemark that kept
 * such types as text) stays text: the new version says so, rather than
 * name a type the target column does not have. And the other way round, a
 * column of a type now kept as text by design (sqltype_names_objects) that
 * an older tidemark made with the source's type keeps it (README: Types). */
static void
keep_fallbacks(const tabledef *old, tabledef *now)
{
	for (int i = 0; i < now->ncols; i++) {
		tabledef_column *n = &now->cols[i];
		const tabledef_column *o = NULL;

		for (int j = 0; j < old->ncols && o == NULL; j++)
			if (old->cols[j].attnum == n->attnum)
				o = &old->cols[j];
		if (o == NULL || o->type_oid != n->type_oid || strcmp(o->target_type, n->target_type) == 0)
			continue;
		if (n->type_ref == 0 && sqltype_names_objects(n->type_sql) &&
		    strcmp(o->target_type, o->type_sql) == 0) {
			tabledef_set_target_type(n, o->target_type);
			tabledef_set_kept_as(n, NULL);
			continue;
		}
		if (n->type_ref == 0 ||
		    (strcmp(o->target_type, "text") != 0 && strcmp(o->target_type, "text[]") != 0))
			continue;
		tabledef_set_target_type(n, o->target_type);
		tabledef_set_kept_as(n, o->kept_as != NULL ? o->kept_as
		                                           : "kept as text: the column was made when "
		                                             "tidemark kept such types as text");
	}
}

/* A table kept in another shape than a plain mirror cannot take a column
 * named like one of tidemark's own (shape.h): said with the fix, before
 * anything of the change is done. */
static int
check_reserved(const catalog_table *t, const tabledef *def)
{
	if (!t->history && !t->soft_delete && !t->metadata)
		return TM_OK;
	for (int i = 0; i < def->ncols; i++)
		if (shape_reserved_column(def->cols[i].name)) {
			log_error("table %s.%s now has a column named %s on the source, which tidemark's "
			          "own columns use in its mode (%s%s): nothing from this schema change on "
			          "was applied. Fix: `tidemark mode '%s.%s=mirror' --no-metadata-columns` "
			          "(a plain mirror takes any column name; a history is kept), then start "
			          "tidemark run again", t->source_schema, t->source_table,
			          def->cols[i].name, shape_mode_name(shape_mode_of(t)),
			          t->metadata ? ", metadata columns" : "", t->source_schema,
			          t->source_table);
			return TM_EXIT_TARGET;
		}
	return TM_OK;
}

/* A table in another mode than mirror: its history follows the mirror
 * (shape.h), said in the audit log with the rest. */
static int
follow_shape(schema_sync *ss, const catalog_table *t, const ddl_plan *plan, sync_note *note)
{
	const char **renames;
	char *done = NULL;
	int n = 0, rc;

	if (!t->history && !t->soft_delete && !t->metadata)
		return TM_OK;
	renames = calloc((size_t) plan->n * 2 + 1, sizeof(char *));
	if (renames == NULL)
		abort();
	for (int i = 0; i < plan->n; i++)
		if (plan->actions[i].kind == DDL_ACT_RENAME_COLUMN) {
			renames[2 * n] = plan->actions[i].column;
			renames[2 * n++ + 1] = plan->actions[i].name;
		}
	rc = shape_sync(ss->sink, t->table_id, renames, n, &done);
	if (rc == TM_OK && done[0] != '\0')
		schema_sync_note_list(&note->actions, done);
	free(done);
	free(renames);
	return rc;
}

/* One replicated table's change: plan, run, record. *why: the plan could
 * not be made (then nothing was run but the types, TM_OK). */
static int
follow_table(schema_sync *ss, const ddl_event *e, catalog_table *t, ddl_event_table *now,
             bool rewritten, tm_lsn pos, sync_note *note, schema_sync_result *res, char **why)
{
	tabledef *old = NULL;
	target_cols tc;
	ddl_plan plan;
	tm_error err;
	int version = 0;
	bool resnapshot = false, text = false;
	ddl_using_list using = {0, NULL};
	ddl_track_session session = schema_sync_session(e);
	target_name tn = {strdup(t->target_schema), strdup(t->target_table)};
	ddl_policy policy = DDL_POLICY_WIDEN;
	char *policy_by = NULL;
	int rc = load_version(ss, t, &old, &version);

	memset(&tc, 0, sizeof tc);
	memset(&plan, 0, sizeof plan);
	if (rc == TM_OK)
		rc = sync_types(ss, now->def, note, res);
	if (rc == TM_OK)
		keep_fallbacks(old, now->def);
	if (rc == TM_OK)
		rc = load_target(ss, t, &tc);
	if (rc == TM_OK)
		rc = policy_in_force(ss->sink, ss->cfg.slot, t->table_id, &policy, &policy_by);
	if (rc == TM_OK)
		text = schema_sync_using(ss, e, old, now->def, &using);
	if (rc == TM_OK) {
		ddl_track_input in = {old, now, {tc.n, tc.names, tc.types}, policy, rewritten,
		                      ss->cfg.drop_columns, text ? &using : NULL,
		                      schema_sync_converted(ss, e, now->def->relid), session};

		if (ddl_track_plan(&in, &plan, &err) != 0) {
			*why = strdup(err.msg);
			ddl_plan_free(&plan);
			target_cols_free(&tc);
			tabledef_free(old);
			free(tn.schema);
			free(tn.table);
			return TM_OK;
		}
	}
	if (rc == TM_OK && plan.stop) {
		log_error("%s (the stop policy, set by: %s). To resume, choose another policy for the "
		          "table, kept: `tidemark policy '%s.%s=widen'` (or follow, or quarantine), or "
		          "for one run: `tidemark run --table-policy '%s.%s=widen'`; then start "
		          "tidemark run again: nothing after this point was applied",
		          plan.stop_reason, policy_by, t->source_schema, t->source_table,
		          t->source_schema, t->source_table);
		rc = TM_EXIT_POLICY;
	}
	if (rc == TM_OK)
		rc = check_reserved(t, now->def);
	if (rc == TM_OK) {
		schema_sync_note_list(&note->classes, plan.summary);
		rc = run_plan(ss, &plan, &tn, &tc, t, now, &session, note, &resnapshot);
	}
	if (rc == TM_OK) {
		bool recopy = false;

		rc = schema_sync_moved_out(ss, t, now->def, note, &recopy);
		resnapshot |= recopy;
	}
	if (rc == TM_OK)
		rc = record_version(ss, t, now->def, &tn, version + 1, pos);
	if (rc == TM_OK)
		rc = follow_shape(ss, t, &plan, note);
	if (rc == TM_OK && resnapshot)
		rc = schema_sync_request_snapshot(ss, t->table_id);
	if (rc == TM_OK)
		note->version = version + 1;
	ddl_plan_free(&plan);
	ddl_using_list_free(&using);
	target_cols_free(&tc);
	tabledef_free(old);
	free(policy_by);
	free(tn.schema);
	free(tn.table);
	return rc;
}

static void
truncate_note(strbuf *sb, size_t len)
{
	if (sb->data != NULL && sb->len > len) {
		sb->len = len;
		sb->data[len] = '\0';
	}
}

/*
 * A change the target cannot follow (it refused a statement, or no plan
 * could be made): the table alone is set aside, the others go on. Its
 * target table is kept aside as "name (set aside)", made again from the
 * new definition, which becomes its version from pos, and copied again
 * (catalog_restart_table); the rest of the transaction applies to the new
 * table. Should even that fail, the table is no longer replicated, with
 * the fix.
 */
static int
set_aside(schema_sync *ss, catalog_table *t, ddl_event_table *now, tm_lsn pos, const char *why,
          sync_note *note, schema_sync_result *res)
{
	char *aside = NULL, *failure = NULL;
	strbuf text = STRBUF_INIT;
	int rc = sink_region_begin(ss->sink);

	if (rc == TM_OK)
		rc = sink_region_end(ss->sink,
		                     catalog_restart_table(ss->sink, ss->cfg.slot, t, now->def, pos, false,
		                                           &aside), &failure);
	if (rc == TM_OK && failure == NULL) {
		strbuf_appendf(&text, "the change cannot be followed on the target (%s): the table is "
		               "set aside: its target table is kept as \"%s\", made again from the "
		               "source's definition and copied again", why, aside ? aside : "");
		log_warn("%s.%s: %s; the other tables go on. Nothing to do but drop the kept table "
		         "when it is no longer wanted", t->source_schema, t->source_table,
		         strbuf_str(&text));
	} else if (rc == TM_OK) {
		strbuf_appendf(&text, "the change cannot be followed on the target (%s), nor can the "
		               "table be made again (%s): it is no longer replicated", why, failure);
		log_error("%s.%s: %s. Fix: tidemark setup --table '%s.%s' again (it is registered "
		          "anew and copied)", t->source_schema, t->source_table, strbuf_str(&text),
		          t->source_schema, t->source_table);
		rc = catalog_retire_table(ss->sink, t->table_id);
	}
	if (rc == TM_OK) {
		schema_sync_note_list(&note->actions, strbuf_str(&text));
		schema_sync_result_add(res, t->table_id);
	}
	strbuf_free(&text);
	free(aside);
	free(failure);
	return rc;
}

/* The change made again with the target's views over the table lifted
 * (target migration 019): saved and dropped, the change, the views made
 * again (also when no plan could be made, *why: then they are as they
 * were). *lifted: there were views (else nothing was done). */
static int
follow_lifting_views(schema_sync *ss, const ddl_event *e, catalog_table *t,
                     ddl_event_table *now, bool rewritten, tm_lsn pos, sync_note *note,
                     schema_sync_result *res, char **why, bool *lifted)
{
	const char *table[] = {t->target_schema, t->target_table};
	char *saved = NULL; /* owned: the views as views_lift returned them */
	PGresult *r = NULL;
	int rc = sink_query(ss->sink, "lifting the views over a table",
	                    "SELECT tidemark.views_lift(format('%I.%I', $1::text, $2::text)::regclass)",
	                    2, table, &r);

	*lifted = rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "[]") != 0;
	if (*lifted)
		saved = xstrdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (*lifted)
		rc = follow_table(ss, e, t, now, rewritten, pos, note, res, why);
	if (rc == TM_OK && *lifted)
		rc = sink_command(ss->sink, "making the views over a table again",
		                  "SELECT tidemark.views_restore($1::jsonb)", 1,
		                  (const char *const[]) {saved});
	free(saved);
	return rc;
}

/* A change the target refused: made again with the views over the table
 * lifted, when it has views (they are what refuses a column's new type or
 * its drop). True when that went through; otherwise what it noted is for
 * the caller to take back (note_rewind). */
static bool
retry_lifting_views(schema_sync *ss, const ddl_event *e, catalog_table *t, ddl_event_table *now,
                    bool rewritten, tm_lsn pos, sync_note *note, schema_sync_result *res, int *rc)
{
	char *why = NULL, *failure = NULL;
	bool lifted = false;

	*rc = sink_region_begin(ss->sink);
	if (*rc == TM_OK)
		*rc = sink_region_end(ss->sink,
		                      follow_lifting_views(ss, e, t, now, rewritten, pos, note, res, &why,
		                                           &lifted), &failure);
	lifted = *rc == TM_OK && lifted && why == NULL && failure == NULL;
	if (lifted) {
		schema_sync_note_list(&note->actions, "the target's views over the table were dropped "
		                                      "and made again around the change");
		log_info("target: %s.%s: the views over the table were dropped and made again around "
		         "the change", t->target_schema, t->target_table);
	}
	free(why);
	free(failure);
	return lifted;
}

/* How far a table's change had noted, to take back what a failed try
 * noted. */
typedef struct note_mark {
	size_t actions, classes;
	int version;
} note_mark;

static void
note_rewind(sync_note *note, const note_mark *m)
{
	truncate_note(&note->actions, m->actions);
	truncate_note(&note->classes, m->classes);
	note->version = m->version;
}

/* One replicated table's change, under a savepoint: set aside when the
 * target cannot follow it, even with its views lifted. */
static int
sync_table(schema_sync *ss, const ddl_event *e, catalog_table *t, ddl_event_table *now,
           bool rewritten, tm_lsn pos, sync_note *note, schema_sync_result *res)
{
	const note_mark mark = {note->actions.len, note->classes.len, note->version};
	char *why = NULL, *failure = NULL;
	int rc = sink_region_begin(ss->sink);

	if (rc == TM_OK)
		rc = sink_region_end(ss->sink,
		                     follow_table(ss, e, t, now, rewritten, pos, note, res, &why),
		                     &failure);
	if (rc == TM_OK && failure != NULL && why == NULL) {
		note_rewind(note, &mark);
		if (retry_lifting_views(ss, e, t, now, rewritten, pos, note, res, &rc)) {
			free(failure);
			failure = NULL;
		}
	}
	if (rc == TM_OK && (why != NULL || failure != NULL)) {
		note_rewind(note, &mark);
		schema_sync_note_list(&note->classes, "set aside");
		rc = set_aside(ss, t, now, pos, failure != NULL ? failure : why, note, res);
	}
	if (rc == TM_OK)
		schema_sync_keyless_note(ss, t, now);
	free(why);
	free(failure);
	return rc;
}

/* ---- the message ---- */

void
schema_sync_result_add(schema_sync_result *res, int table_id)
{
	for (int i = 0; i < res->nchanged; i++)
		if (res->changed[i] == table_id)
			return;
	if (res->nchanged == res->changed_cap) {
		res->changed_cap = res->changed_cap ? 2 * res->changed_cap : 16;
		res->changed = xrealloc(res->changed, sizeof(int) * (size_t) res->changed_cap);
	}
	res->changed[res->nchanged++] = table_id;
}

void
schema_sync_result_free(schema_sync_result *res)
{
	free(res->changed);
	memset(res, 0, sizeof *res);
}

void
schema_sync_note_table(sync_note *note, const char *schema, const char *name)
{
	schema_sync_note_list(&note->tables, schema);
	strbuf_appendc(&note->tables, '.');
	strbuf_append(&note->tables, name);
}

/* A table that joins must be published: a schema dropped and created
 * again is in no publication until added back, and a table created again
 * under the name of one the pipeline replicated by name is not in it. The
 * table is copied after that, so its changes from before are in the copy.
 * *by_schema_out: it joins as a table of a replicated schema. */
static int
publish_joining(schema_sync *ss, const tabledef *def, sync_note *note, bool *by_schema_out)
{
	bool by_schema = false, excluded = false, added = false;
	int rc = catalog_schema_covers(ss->sink, ss->cfg.slot, def->schema, def->name, &by_schema,
	                               &excluded);

	*by_schema_out = by_schema;
	if (rc != TM_OK || ss->cfg.source.publish_joining == NULL)
		return rc;
	rc = ss->cfg.source.publish_joining(ss->cfg.source.ctx, def, by_schema, &added);
	if (rc == TM_OK && added && by_schema) {
		log_warn("schema %s was no longer in the publication (dropped and created again?): "
		         "added back, so that its tables are published; %s.%s is copied", def->schema,
		         def->schema, def->name);
		schema_sync_note_list(&note->actions, "schema added back to the publication");
	} else if (rc == TM_OK && added) {
		log_warn("table %s.%s takes the name of a replicated table (dropped, or renamed away): "
		         "added to the publication by name, and copied", def->schema, def->name);
		schema_sync_note_list(&note->actions, "added to the publication by name");
	}
	return rc;
}

int
schema_sync_add_table(schema_sync *ss, const tabledef *def, tm_lsn pos, sync_note *note,
                      schema_sync_result *res, bool *added)
{
	bool values_added = false, by_schema = true;
	int rc;

	*added = false;
	if (def->persistence == 'u') {
		log_warn("new table %s.%s in a replicated schema is UNLOGGED: its changes are not written "
		         "to the WAL, so it is not replicated; it joins (and is copied) when it is made "
		         "LOGGED (ALTER TABLE \"%s\".\"%s\" SET LOGGED)", def->schema, def->name,
		         def->schema, def->name);
		schema_sync_note_list(&note->actions, "new unlogged table: not replicated until logged");
		return TM_OK;
	}
	if (tabledef_nstored(def) == 0) {
		log_warn("new table %s.%s in a replicated schema has no columns (or only generated "
		         "ones): its rows would carry nothing but their number, so it is not "
		         "replicated; it joins (and is copied) when it is given one", def->schema,
		         def->name);
		schema_sync_note_list(&note->actions, "new table without columns: not replicated");
		return TM_OK;
	}
	if (tabledef_nkeys(def) == 0 && def->replident != 'f') {
		log_warn("new table %s.%s in a replicated schema has no primary key (a DEFERRABLE one "
		         "does not count, nor one over a generated column, which logical decoding does "
		         "not send), no replica identity index and no REPLICA IDENTITY FULL: it is not "
		         "replicated. Fix: ALTER TABLE \"%s\".\"%s\" REPLICA IDENTITY FULL; (it is then "
		         "replicated without a key, rows matched by all their columns) or give it a "
		         "primary key that is not deferrable, or leave it out "
		         "for good with `tidemark setup --exclude-table '%s.%s'`", def->schema, def->name,
		         def->schema, def->name, def->schema, def->name);
		schema_sync_note_list(&note->actions, "new table without a key: not replicated");
		return TM_OK;
	}
	rc = catalog_add_table(ss->sink, ss->cfg.slot, def, pos, added, &values_added);
	/* values added to an enum: later source transactions may use them */
	res->commit_after |= values_added;
	if (rc == TM_OK && *added)
		rc = publish_joining(ss, def, note, &by_schema);
	if (rc == TM_OK && *added) {
		log_info("new table %s.%s %s: created on the target, to be copied%s",
		         def->schema, def->name,
		         by_schema ? "in replicated schema" : "under a replicated table's name",
		         tabledef_nkeys(def) == 0 ? " (no key: REPLICA IDENTITY FULL, rows matched "
		                                    "by all their columns)" : "");
		schema_sync_note_list(&note->actions, "created the table on the target; its rows are copied");
		schema_sync_note_list(&note->classes, "create table");
		metrics_stage_schema_change(ss->cfg.metrics, "create_table");
		note->version = 1;
		res->any_new_table = true;
	}
	return rc;
}

/* A table created (or moved) into a replicated schema, or under the name
 * of a table the pipeline replicated, dropped or renamed away: it joins at the
 * commit of its transaction (schema_sync_join.c). */
static int
new_table(schema_sync *ss, const ddl_event *e, const ddl_event_table *et, tm_lsn pos,
          sync_note *note)
{
	bool replicated = false, excluded = false;
	int rc = catalog_schema_covers(ss->sink, ss->cfg.slot, et->def->schema, et->def->name,
	                               &replicated, &excluded);

	if (rc == TM_OK && excluded)
		schema_sync_note_list(&note->actions, "table excluded (setup --exclude-table): not replicated");
	/* the name of a table the pipeline replicated (--table), dropped or
	 * renamed away: the new one takes its place (a table rebuilt and
	 * swapped in by rename) */
	if (rc == TM_OK && !replicated && !excluded)
		rc = catalog_dropped_named(ss->sink, ss->cfg.slot, et->def->schema, et->def->name,
		                           &replicated);
	if (rc == TM_OK && replicated)
		schema_sync_join_note(ss, e, et, pos, note);
	return rc;
}

/* A message of a transaction that committed before the table joined
 * replication: its definition then already had the change. */
static void
note_before_join(const catalog_table *t, sync_note *note)
{
	char at[LSN_TEXT_MAX];
	strbuf text = STRBUF_INIT;

	strbuf_appendf(&text, "before %s.%s joined replication (at %s): nothing to do, its "
	               "definition and copy start later", t->source_schema, t->source_table,
	               lsn_format(t->registered_lsn, at));
	schema_sync_note_list(&note->actions, strbuf_str(&text));
	strbuf_free(&text);
}

/* One table of a ddl message that is not a partition of a replicated root. */
static int
on_ddl_table(schema_sync *ss, const ddl_event *e, ddl_event_table *et, tm_lsn pos,
             sync_note *note, schema_sync_result *res)
{
	catalog_table *t = NULL;
	int rc = load_table(ss, et->def, &t);

	if (rc == TM_OK && t == NULL)
		rc = new_table(ss, e, et, pos, note);
	else if (rc == TM_OK && schema_sync_before_join(ss, t))
		note_before_join(t, note);
	else if (rc == TM_OK) {
		/* a partitioned table's rows are its partitions': their rewrite is
		 * its own, and so are the values they store for added columns */
		bool rewritten = schema_sync_was_rewritten(ss, e->xid, et->def->relid) ||
		                 schema_sync_part_rewritten(ss, e, et->def->relid);
		ddl_event_table now = *et;

		now.cols = ddl_partition_root_columns(e, et);
		rc = sync_table(ss, e, t, &now, rewritten, pos, note, res);
		free(now.cols);
		if (rc == TM_OK)
			schema_sync_result_add(res, t->table_id);
	}
	catalog_table_free(t);
	return rc;
}

/* The message's own types (ALTER TYPE, ALTER DOMAIN, ...): a group
 * boundary before and after (see schema_sync.h), then followed. */
static int
on_types(schema_sync *ss, const ddl_event *e, sync_note *note, schema_sync_result *res)
{
	typesync_result ts = {false, STRBUF_INIT};
	int rc = TM_OK;

	if (e->types.n == 0)
		return TM_OK;
	if (ss->cfg.type_boundary != NULL)
		rc = ss->cfg.type_boundary(ss->cfg.boundary_ctx);
	res->commit_after = true;
	if (rc == TM_OK)
		rc = typesync_follow(ss->sink, ss->cfg.slot, &e->types, &ts);
	if (rc == TM_OK)
		metrics_stage_schema_change(ss->cfg.metrics, "type");
	for (int i = 0; rc == TM_OK && i < e->types.n; i++) {
		strbuf name = STRBUF_INIT;

		strbuf_appendf(&name, "type %s.%s (%s)", e->types.types[i].schema,
		               e->types.types[i].name, e->types.types[i].kind_name);
		schema_sync_note_list(&note->classes, strbuf_str(&name));
		strbuf_free(&name);
	}
	if (rc == TM_OK && ts.actions.len > 0)
		schema_sync_note_list(&note->actions, strbuf_str(&ts.actions));
	typesync_result_free(&ts);
	return rc;
}

static int
on_ddl(schema_sync *ss, ddl_event *e, tm_lsn pos, sync_note *note, schema_sync_result *res)
{
	ddl_part_root *roots = NULL;
	int nroots = 0;
	int rc = on_types(ss, e, note, res);

	if (rc == TM_OK)
		rc = schema_sync_schema_renamed(ss, e, note);
	if (rc == TM_OK)
		rc = schema_sync_part_roots(ss, e, &roots, &nroots);

	if (rc == TM_OK)
		rc = schema_sync_part_follow(ss, e, roots, nroots, pos, note, res);
	for (int i = 0; rc == TM_OK && i < e->ntables; i++) {
		ddl_event_table *et = &e->tables[i];
		bool done = false;

		if (et->partition_root != 0 &&
		    ((rc = schema_sync_part_listed(ss, e, et, roots, nroots, note, res, &done)) != TM_OK ||
		     done))
			continue;
		schema_sync_note_table(note, et->def->schema, et->def->name);
		rc = on_ddl_table(ss, e, et, pos, note, res);
	}
	if (rc == TM_OK)
		rc = schema_sync_join_partitions(ss, e, pos, note, res);
	catalog_partition_roots_free(roots, nroots);
	return rc;
}

static int
drop_target_table(schema_sync *ss, const ddl_event_dropped *d, const char *schema,
                  const char *table, sync_note *note)
{
	strbuf sql = STRBUF_INIT;
	char *refused = NULL;
	int rc = TM_OK;

	metrics_stage_schema_change(ss->cfg.metrics, "drop_table");
	if (!ss->cfg.drop_tables) {
		log_info("table %s was dropped on the source; the target keeps it, no longer "
		         "replicated", d->identity);
		schema_sync_note_list(&note->actions, "table dropped on the source: the target keeps it");
		return TM_OK;
	}
	/* without CASCADE: views of the target's own over it are not dropped
	 * with it; the table is kept instead, and that is said */
	strbuf_append(&sql, "DROP TABLE IF EXISTS ");
	strbuf_append_qualified(&sql, schema, table);
	rc = sink_try(ss->sink, "dropping a target table", strbuf_str(&sql), &refused);
	if (rc == TM_OK && refused != NULL) {
		log_warn("table %s was dropped on the source; the target keeps it, no longer replicated, "
		         "as it could not be dropped: %s. Fix: drop what depends on it, then the table",
		         d->identity, refused);
		schema_sync_note_list(&note->actions, "table dropped on the source: the target keeps "
		                                      "it, as it could not be dropped");
	} else if (rc == TM_OK) {
		log_info("table %s was dropped on the source, and on the target", d->identity);
		schema_sync_note_list(&note->actions, "table dropped on the source and on the target");
	}
	free(refused);
	strbuf_free(&sql);
	return rc;
}

static int
on_drop(schema_sync *ss, const ddl_event *e, tm_lsn pos, sync_note *note,
        schema_sync_result *res)
{
	ddl_part_root *roots = NULL;
	int nroots = 0;
	int rc = schema_sync_part_roots(ss, e, &roots, &nroots);

	/* a partition's rows leave its root */
	if (rc == TM_OK)
		rc = schema_sync_part_follow(ss, e, roots, nroots, pos, note, res);
	if (rc == TM_OK)
		rc = schema_sync_join_partitions(ss, e, pos, note, res);
	catalog_partition_roots_free(roots, nroots);

	for (int i = 0; rc == TM_OK && i < e->ndropped; i++) {
		const ddl_event_dropped *d = &e->dropped[i];
		char relid[16], commit[LSN_TEXT_MAX];
		const char *p[] = {ss->cfg.slot, relid, lsn_format(ss->cur_commit, commit)};
		PGresult *r = NULL;

		schema_sync_note_list(&note->tables, d->identity ? d->identity : "?");
		if (strcmp(d->object_type, "table") != 0 || schema_sync_join_dropped(ss, d->objid, note))
			continue;
		snprintf(relid, sizeof relid, "%u", d->objid);
		/* a table that joined after this transaction is another one */
		rc = sink_query(ss->sink, "marking a dropped table",
		                "UPDATE tidemark.tables SET state = 'dropped' WHERE slot_name = $1"
		                " AND source_relid = $2::oid AND state <> 'dropped'"
		                " AND coalesce(registered_lsn, '0/0') <= $3::pg_lsn"
		                " RETURNING table_id, target_schema, target_table", 3, p, &r);
		if (rc == TM_OK && PQntuples(r) > 0) {
			schema_sync_result_add(res, atoi(PQgetvalue(r, 0, 0)));
			rc = drop_target_table(ss, d, PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), note);
		}
		PQclear(r);
	}
	schema_sync_note_list(&note->classes, "drop");
	return rc;
}

/* table_rewrite's reason for ALTER TABLE ... SET LOGGED / SET UNLOGGED */
#define REWRITE_PERSISTENCE 1

/* The source made a replicated table (or a partition of one) unlogged or
 * logged again. An unlogged table's changes are not written to the WAL, so
 * the stream never has them: the table is copied again at each change of
 * persistence, the one back to logged bringing the target up to date. */
static int
persistence_changed(schema_sync *ss, const ddl_event *e, sync_note *note,
                    schema_sync_result *res)
{
	ddl_part_root *roots = NULL;
	int n = 0;
	int rc = catalog_partition_roots(ss->sink, ss->cfg.slot, &e->rewrite_relid, 1,
	                                 &e->rewrite_relid, 1, &roots, &n);

	for (int i = 0; rc == TM_OK && i < n; i++) {
		const char *what = "its persistence changed on the source (SET UNLOGGED or SET LOGGED; "
		                   "the changes of an unlogged table are not in the WAL): it is copied "
		                   "again";

		rc = schema_sync_request_snapshot(ss, roots[i].table_id);
		schema_sync_result_add(res, roots[i].table_id);
		log_warn("%s.%s: %s", roots[i].schema ? roots[i].schema : "?",
		         roots[i].name ? roots[i].name : "?", what);
		if (roots[i].schema != NULL && roots[i].name != NULL)
			schema_sync_note_table(note, roots[i].schema, roots[i].name);
		schema_sync_note_list(&note->actions, what);
	}
	catalog_partition_roots_free(roots, n);
	return rc;
}

static int
on_rewrite(schema_sync *ss, const ddl_event *e, sync_note *note, schema_sync_result *res)
{
	schema_sync_note_rewrite(ss, e);
	schema_sync_join_rewritten(ss, e->rewrite_relid);
	schema_sync_note_list(&note->classes, "table rewrite");
	schema_sync_note_list(&note->actions, "noted: the source rewrote the table's rows");
	if (e->rewrite_relid == 0 || (e->rewrite_reason & REWRITE_PERSISTENCE) == 0)
		return TM_OK;
	return persistence_changed(ss, e, note, res);
}

/* A long statement text comes once per transaction (statement_seq points
 * at the message that has it): later messages get it from here. */
static void
remember_statement(schema_sync *ss, ddl_event *e)
{
	if (e->statement != NULL) {
		free(ss->statement);
		ss->statement = strdup(e->statement);
		ss->statement_xid = e->xid;
	} else if (ss->statement != NULL && ss->statement_xid == e->xid)
		e->statement = strdup(ss->statement);
}

/* The classification of the statement text itself, its fingerprints and
 * the text to record (ddl_parse_audit_text: never one that may hold a
 * secret). */
static void
parse_statement(schema_sync *ss, const ddl_event *e, strbuf *classes, strbuf *fingerprint,
                strbuf *text)
{
	const ddl_parse_result *pr = schema_sync_parse(ss, e->statement);

	if (e->statement == NULL)
		return;
	if (pr == NULL) {
		strbuf_append(text, "/* statement not recorded: it could not be parsed */");
		return;
	}
	ddl_parse_audit_text(e->statement, pr, text, fingerprint);
	for (size_t i = 0; i < pr->n_changes; i++) {
		strbuf_append(classes, classes->len ? ", " : "");
		strbuf_append(classes, ddl_parse_kind_name(pr->changes[i].kind));
	}
}

static int
log_event(schema_sync *ss, const ddl_event *e, tm_lsn pos, pg_timestamp commit_time,
          const sync_note *note)
{
	strbuf parsed = STRBUF_INIT, fp = STRBUF_INIT, cls = STRBUF_INIT, text = STRBUF_INIT;
	char lsn[LSN_TEXT_MAX], xid[24], ctime[32], ver[16];
	const char *p[12];
	int rc;

	parse_statement(ss, e, &parsed, &fp, &text);
	strbuf_append(&cls, note->classes.len ? strbuf_str(&note->classes) : "unclassified");
	if (parsed.len > 0)
		strbuf_appendf(&cls, " (statement: %s)", strbuf_str(&parsed));
	snprintf(xid, sizeof xid, "%lld", e->xid);
	snprintf(ctime, sizeof ctime, "%lld",
	         commit_time ? (long long) pgoutput_timestamp_to_unix_us(commit_time) : 0LL);
	snprintf(ver, sizeof ver, "%d", note->version);
	p[0] = ss->cfg.slot;
	p[1] = lsn_format(pos, lsn);
	p[2] = xid;
	p[3] = ctime;
	p[4] = e->time;
	p[5] = e->user;
	p[6] = e->command_tag;
	p[7] = e->statement ? strbuf_str(&text) : NULL;
	p[8] = fp.len ? fp.data : NULL;
	p[9] = strbuf_str(&cls);
	p[10] = strbuf_str(&note->tables);
	p[11] = note->version ? ver : NULL;
	rc = sink_command(ss->sink, "writing the DDL audit log",
	                  "INSERT INTO tidemark.ddl_log (slot_name, position, xid, commit_time,"
	                  " ddl_time, source_user, command_tag, statement, fingerprint,"
	                  " classification, tables, schema_version, target_action)"
	                  " VALUES ($1, $2::pg_lsn, $3::bigint,"
	                  " CASE WHEN $4::bigint = 0 THEN NULL ELSE to_timestamp($4::bigint / 1e6) END,"
	                  " $5::timestamptz, $6, $7, $8, $9, $10,"
	                  " string_to_array(nullif($11, ''), '; '), $12::int, $13)",
	                  13, (const char *const[]) {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7],
	                                              p[8], p[9], p[10], p[11],
	                                              note->actions.len ? strbuf_str(&note->actions)
	                                                                : "nothing"});
	strbuf_free(&parsed);
	strbuf_free(&fp);
	strbuf_free(&cls);
	strbuf_free(&text);
	return rc;
}

/* What e does to the target, by its kind; *logged: false when it is not
 * to be recorded in the ddl-log. */
static int
on_event(schema_sync *ss, ddl_event *e, tm_lsn position, sync_note *note,
         schema_sync_result *res, bool *logged)
{
	int rc;

	if (e->kind == DDL_EVENT_REWRITE)
		return on_rewrite(ss, e, note, res);
	if (e->kind == DDL_EVENT_DROP)
		return on_drop(ss, e, position, note, res);
	if (e->kind == DDL_EVENT_TRUNCATE)
		return schema_sync_part_truncate(ss, e, note, res, logged);
	rc = on_ddl(ss, e, position, note, res);
	schema_sync_command_done(ss);
	return rc;
}

int
schema_sync_message(schema_sync *ss, const pgoutput_msg *m, tm_lsn position,
                    pg_timestamp commit_time, schema_sync_result *res)
{
	sync_note note = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, 0};
	const char *body;
	size_t body_len;
	ddl_event *e = NULL;
	tm_error err;
	bool logged = true;
	int rc = TM_OK;

	memset(res, 0, sizeof *res);
	if ((body = schema_sync_auth_body(ss, m, &body_len)) == NULL)
		return TM_OK;
	if (ddl_event_parse(body, body_len, &e, &err) != 0) {
		log_warn("a DDL capture message at %X/%X is not readable and is skipped: %s",
		         (unsigned) (position >> 32), (unsigned) position, err.msg);
		return TM_OK;
	}
	if (!schema_sync_auth_matches(ss, e, m)) {
		ddl_event_free(e);
		return TM_OK;
	}
	if (e->error != NULL)
		log_warn("the DDL capture on the source reported: %s", e->error);
	remember_statement(ss, e);
	rc = sink_lock_wait(ss->sink, true);
	if (rc == TM_OK)
		rc = on_event(ss, e, position, &note, res, &logged);
	if (rc == TM_OK && logged)
		rc = log_event(ss, e, position, commit_time, &note);
	if (rc == TM_OK)
		rc = sink_lock_wait(ss->sink, false);
	strbuf_free(&note.tables);
	strbuf_free(&note.classes);
	strbuf_free(&note.actions);
	ddl_event_free(e);
	return rc;
}

/* ---- for the catch-up (schema_sync_catchup.c) ---- */

int
schema_sync_load_version(schema_sync *ss, const catalog_table *t, tabledef **def, int *version)
{
	return load_version(ss, t, def, version);
}

int
schema_sync_follow_table(schema_sync *ss, catalog_table *t, ddl_event_table *now, tm_lsn pos,
                         sync_note *note, schema_sync_result *res)
{
	/* a definition, not a statement: no USING, no session settings
	 * recorded, no rewrite of any transaction */
	ddl_event none;

	memset(&none, 0, sizeof none);
	none.kind = DDL_EVENT_DDL;
	none.xid = -1;
	return sync_table(ss, &none, t, now, false, pos, note, res);
}
