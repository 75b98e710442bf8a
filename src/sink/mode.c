/*
 * mode.c: table modes set from the command line (mode.h).
 */
#include "mode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "exitcode.h"
#include "ident.h"
#include "log.h"
#include "shape.h"
#include "strbuf.h"
#include "target_ddl.h"
#include "xalloc.h"

/* ---- SCHEMA.TABLE=MODE ------------------------------------------------------ */

/* "SCHEMA.TABLE=MODE" into *ms; the name is read the SQL way (a mode has
 * no '=', a quoted name may). */
static int
parse_one(const char *text, const char *option, mode_setting *ms)
{
	const char *eq = strrchr(text, '=');
	char *name;
	tm_error err;
	int rc;

	memset(ms, 0, sizeof *ms);
	if (eq == NULL || !shape_mode_parse(eq + 1, &ms->mode)) {
		log_error("%s %s: expected SCHEMA.TABLE=mirror|history|soft-delete|history,soft-delete",
		          option, text);
		return TM_EXIT_USAGE;
	}
	if ((name = strndup(text, (size_t) (eq - text))) == NULL)
		abort();
	rc = ident_parse_qualified(name, "public", &ms->schema, &ms->name, &err);
	free(name);
	if (rc != 0) {
		log_error("%s %s: %s", option, text, err.msg);
		return TM_EXIT_USAGE;
	}
	return TM_OK;
}

const mode_setting *
mode_settings_find(const mode_settings *ms, const char *schema, const char *name)
{
	for (int i = 0; i < ms->n; i++)
		if (strcmp(ms->items[i].schema, schema) == 0 && strcmp(ms->items[i].name, name) == 0)
			return &ms->items[i];
	return NULL;
}

/* A table given again: the same mode is one setting, another is refused. */
static int
add_setting(mode_settings *ms, mode_setting *one, const char *option)
{
	const mode_setting *seen = mode_settings_find(ms, one->schema, one->name);
	int rc = TM_OK;

	if (seen == NULL) {
		ms->items[ms->n++] = *one;
		return TM_OK;
	}
	if (seen->mode != one->mode) {
		log_error("%s: %s.%s is given two modes, %s and %s. Fix: give it one", option,
		          one->schema, one->name, shape_mode_name(seen->mode), shape_mode_name(one->mode));
		rc = TM_EXIT_USAGE;
	}
	free(one->schema);
	free(one->name);
	return rc;
}

int
mode_settings_parse(const char *const *tables, int n, const char *option, mode_settings *out)
{
	int rc = TM_OK;

	out->n = 0;
	out->items = xcalloc((size_t) n + 1, sizeof *out->items);
	for (int i = 0; rc == TM_OK && i < n; i++) {
		mode_setting one;

		rc = parse_one(tables[i], option, &one);
		if (rc == TM_OK)
			rc = add_setting(out, &one, option);
	}
	return rc;
}

void
mode_settings_free(mode_settings *ms)
{
	for (int i = 0; i < ms->n; i++) {
		free(ms->items[i].schema);
		free(ms->items[i].name);
	}
	free(ms->items);
	ms->items = NULL;
	ms->n = 0;
}

/* ---- a table from one mode to another ----------------------------------------- */

/* The table as the catalog has it, before the change. */
typedef struct table_now {
	PGresult *res;          /* owned; the strings below are its */
	unsigned mode;
	bool metadata;
	bool pending;           /* not copied yet (snapshot_pending) */
	bool history_kept;      /* its history table exists */
	const char *table;      /* the source's SCHEMA.TABLE, quoted where needed */
	const char *tschema;    /* the mirror */
	const char *ttable;
	const char *history;    /* the history and its view as SQL names, "" for none */
	const char *versions;
} table_now;

static int
read_now(sink *s, int table_id, table_now *now)
{
	char id[16];
	const char *p[] = {id};
	PGresult *r = NULL;
	int rc;

	memset(now, 0, sizeof *now);
	snprintf(id, sizeof id, "%d", table_id);
	rc = sink_query(s, "reading a table's mode",
	                "SELECT mode, metadata_columns, state = 'snapshot_pending',"
	                " tidemark.relation_if_any(history_relid) IS NOT NULL,"
	                " format('%s.%s', quote_ident(source_schema), quote_ident(source_table)),"
	                " target_schema, target_table,"
	                " coalesce(tidemark.relation_if_any(history_relid)::text, ''),"
	                " coalesce(tidemark.relation_if_any(versions_relid)::text, '')"
	                " FROM tidemark.tables WHERE table_id = $1::int FOR UPDATE", 1, p, &r);
	if (rc == TM_OK && PQntuples(r) != 1) {
		log_error("target: table %d is not in the catalog (any more)", table_id);
		rc = TM_EXIT_TARGET;
	}
	if (rc != TM_OK) {
		PQclear(r);
		return rc;
	}
	now->res = r;
	if (!shape_mode_parse(PQgetvalue(r, 0, 0), &now->mode))
		now->mode = 0;
	now->metadata = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	now->pending = strcmp(PQgetvalue(r, 0, 2), "t") == 0;
	now->history_kept = strcmp(PQgetvalue(r, 0, 3), "t") == 0;
	now->table = PQgetvalue(r, 0, 4);
	now->tschema = PQgetvalue(r, 0, 5);
	now->ttable = PQgetvalue(r, 0, 6);
	now->history = PQgetvalue(r, 0, 7);
	now->versions = PQgetvalue(r, 0, 8);
	return TM_OK;
}

static int
store(sink *s, const mode_target *t)
{
	char id[16];
	const char *p[] = {id, shape_mode_name(t->mode), t->metadata ? "true" : "false"};

	snprintf(id, sizeof id, "%d", t->table_id);
	return sink_command(s, "storing a table's mode",
	                    "UPDATE tidemark.tables SET mode = $2, metadata_columns = $3::boolean"
	                    " WHERE table_id = $1::int", 3, p);
}

/* Does the mirror have tidemark's column; false also for a column of the
 * source's own under that name (it stays). */
static int
own_column(sink *s, const table_now *now, const tabledef *def, const char *column, bool *has)
{
	const char *p[] = {now->tschema, now->ttable, column};
	PGresult *r = NULL;
	int rc;

	*has = false;
	if (def != NULL && tabledef_find(def, column) != NULL)
		return TM_OK;
	rc = sink_query(s, "looking for a column of tidemark's",
	                "SELECT tidemark.column_type_sql(format('%I.%I', $1::text, $2::text)::regclass,"
	                " $3) IS NOT NULL", 3, p, &r);
	*has = rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return rc;
}

static int
drop_column(sink *s, const table_now *now, const char *column)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	target_ddl_drop_column(&sql, now->tschema, now->ttable, column);
	rc = sink_command(s, "dropping a column of tidemark's from a mirror", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
}

static void
say(json_t *done, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
say(json_t *done, const char *fmt, ...)
{
	va_list ap;
	char *text = NULL;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		abort();
	va_end(ap);
	json_array_append_new(done, json_string(text));
	free(text);
}

/* Soft deletes off: the rows kept as deleted go (the mirror holds the
 * source's rows again), then their mark. */
static int
drop_marks(sink *s, const table_now *now, const tabledef *def, json_t *done)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	bool has = false;
	int rc = own_column(s, now, def, "tidemark_deleted_at", &has);

	if (rc != TM_OK || !has)
		return rc;
	strbuf_append(&sql, "DELETE FROM ");
	strbuf_append_qualified(&sql, now->tschema, now->ttable);
	strbuf_append(&sql, " WHERE tidemark_deleted_at IS NOT NULL");
	rc = sink_query(s, "removing the rows kept as deleted", sql.data, 0, NULL, &r);
	if (rc == TM_OK)
		rc = drop_column(s, now, "tidemark_deleted_at");
	if (rc == TM_OK)
		say(done, "removed the %s row(s) kept as deleted, and the column tidemark_deleted_at",
		    PQcmdTuples(r));
	PQclear(r);
	strbuf_free(&sql);
	return rc;
}

/* Metadata columns off: dropped from the mirror. */
static int
drop_metadata(sink *s, const table_now *now, const tabledef *def, json_t *done)
{
	static const char *const cols[] = {"tidemark_lsn", "tidemark_synced_at"};
	strbuf names = STRBUF_INIT;
	int rc = TM_OK;

	for (size_t i = 0; rc == TM_OK && i < sizeof cols / sizeof cols[0]; i++) {
		bool has = false;

		rc = own_column(s, now, def, cols[i], &has);
		if (rc == TM_OK && has)
			rc = drop_column(s, now, cols[i]);
		if (rc == TM_OK && has)
			strbuf_appendf(&names, "%s%s", names.len > 0 ? " and " : "", cols[i]);
	}
	if (rc == TM_OK && names.len > 0)
		say(done, "dropped the columns %s from the mirror", names.data);
	strbuf_free(&names);
	return rc;
}

/* What is turned off: removed or kept (mode.h). */
static int
turn_off(sink *s, const mode_target *t, const table_now *now, json_t *done)
{
	unsigned off = now->mode & ~t->mode;
	int rc = TM_OK;

	if ((off & SHAPE_SOFT_DELETE) != 0)
		rc = drop_marks(s, now, t->def, done);
	if (rc == TM_OK && now->metadata && !t->metadata)
		rc = drop_metadata(s, now, t->def, done);
	if (rc == TM_OK && (off & SHAPE_HISTORY) != 0 && now->history_kept)
		say(done, "the history %s and its view %s are kept, no longer written; history turned "
		    "on again goes on in them, without the changes made in between", now->history,
		    now->versions[0] != '\0' ? now->versions : "(none)");
	/* its statements are of the old shape: they fail once a column is gone */
	if (rc == TM_OK && (off != 0 || (now->metadata && !t->metadata)))
		say(done, "restart a running `tidemark run`: it writes the table in its old mode until "
		    "it starts again");
	return rc;
}

/* What is turned on: made by shape_sync (*synced: what it did, which it
 * logs itself), said here; a history that starts now asks for a copy, for
 * its 'copy' entries. */
static int
turn_on(sink *s, const mode_target *t, const table_now *now, json_t *done, char **synced,
        bool *copy)
{
	unsigned on = t->mode & ~now->mode;
	int rc = (on & SHAPE_HISTORY) != 0 ? catalog_history_behind(s, t->table_id) : TM_OK;

	*copy = false;
	if (rc == TM_OK)
		rc = shape_sync(s, t->table_id, NULL, 0, synced);
	if (rc == TM_OK && (on & SHAPE_SOFT_DELETE) != 0)
		say(done, "a row deleted on the source stays from now on, marked with "
		    "tidemark_deleted_at");
	if (rc == TM_OK && t->metadata && !now->metadata)
		say(done, "the mirror has the columns tidemark_lsn and tidemark_synced_at%s",
		    now->pending ? "" : " (tidemark_lsn is NULL in the rows not written since)");
	if (rc != TM_OK || (t->mode & SHAPE_HISTORY) == 0)
		return rc;
	if (rc == TM_OK && (on & SHAPE_HISTORY) != 0 && now->history_kept)
		say(done, "the history %s goes on: the changes made while history was off are "
		    "missing from it", now->history);
	*copy = !now->pending && ((on & SHAPE_HISTORY) != 0 || !now->history_kept);
	if (*copy)
		rc = catalog_request_copy(s, t->table_id);
	if (rc == TM_OK && *copy)
		say(done, "the table is copied again, so that its history holds every row ('copy' "
		    "entries); a running `tidemark run` picks the change up at its next copy "
		    "request");
	return rc;
}

static json_t *
change_json(const mode_target *t, const table_now *now, const char *synced, json_t *done,
            bool copy)
{
	return json_pack("{s:s, s:s, s:s, s:b, s:b, s:b, s:s, s:O}", "table", now->table, "mode",
	                 shape_mode_name(t->mode), "was", shape_mode_name(now->mode),
	                 "metadata_columns", t->metadata, "was_metadata_columns", now->metadata,
	                 "copy_again", copy, "synced", synced, "done", done);
}

int
mode_change(sink *s, const mode_target *t, json_t **change)
{
	table_now now;
	json_t *done = json_array();
	char *synced = NULL;
	bool copy = false;
	int rc = read_now(s, t->table_id, &now);

	*change = NULL;
	if (rc == TM_OK && (now.mode != t->mode || now.metadata != t->metadata))
		rc = store(s, t);
	if (rc == TM_OK)
		rc = turn_off(s, t, &now, done);
	if (rc == TM_OK)
		rc = turn_on(s, t, &now, done, &synced, &copy);
	if (rc == TM_OK && (now.mode != t->mode || now.metadata != t->metadata || synced[0] != '\0'))
		*change = change_json(t, &now, synced, done, copy);
	json_decref(done);
	free(synced);
	PQclear(now.res);
	return rc;
}

/* ---- the pipeline's default, the catalog ---------------------------------------- */

int
mode_set_default(sink *s, const char *slot, bool metadata)
{
	const char *p[] = {slot, metadata ? "true" : "false"};

	return sink_command(s, "storing the pipeline's metadata columns",
	                    "UPDATE tidemark.progress SET metadata_columns = $2::boolean"
	                    " WHERE slot_name = $1", 2, p);
}

int
mode_load_def(sink *s, int table_id, const char *schema, const char *name, tabledef **def)
{
	char id[16];
	const char *p[] = {id};
	PGresult *r = NULL;
	json_t *cols;
	tm_error err;
	int rc;

	snprintf(id, sizeof id, "%d", table_id);
	*def = tabledef_new(schema, name, 0);
	rc = sink_query(s, "reading a table's schema version",
	                "SELECT columns::text FROM tidemark.schema_versions WHERE table_id = $1::int"
	                " ORDER BY version DESC LIMIT 1", 1, p, &r);
	if (rc != TM_OK || PQntuples(r) == 0) {
		PQclear(r);
		return rc;
	}
	cols = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	if (tabledef_columns_from_json(*def, cols, &err) != 0) {
		log_error("target: the latest schema version of %s.%s is unreadable: %s", schema, name,
		          err.msg);
		rc = TM_EXIT_TARGET;
	}
	json_decref(cols);
	PQclear(r);
	return rc;
}

int
mode_check_catalog(sink *s)
{
	PGresult *r = NULL;
	int rc = sink_query(s, "looking for table modes",
	                    "SELECT to_regprocedure('tidemark.shape_sync(integer, text[])')"
	                    " IS NOT NULL", 0, NULL, &r);

	if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
		log_error("target: the tidemark catalog has no table modes yet (it is older, or "
		          "missing). Fix: `tidemark setup` again with the same options (or start "
		          "`tidemark run`, which brings the catalog up to date)");
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

int
mode_refind_histories(sink *s, const char *slot)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	bool has;
	int rc = sink_query(s, "looking for tidemark.history_refind",
	                    "SELECT to_regprocedure('tidemark.history_refind(text)') IS NOT NULL", 0,
	                    NULL, &r);

	has = rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	r = NULL;
	if (rc == TM_OK && has)
		rc = sink_query(s, "finding the histories again by their names",
		                "SELECT mirror, history, versions FROM tidemark.history_refind($1)", 1, p,
		                &r);
	for (int i = 0; rc == TM_OK && has && i < PQntuples(r); i++)
		log_warn("target: the history of %s is %s again, its versions view %s: the oids "
		         "recorded named another relation or none, as after the target was copied "
		         "with pg_dump and pg_restore; found by their names beside the table",
		         PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
	PQclear(r);
	return rc;
}
