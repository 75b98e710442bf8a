#include "catalog.h"
#include "shape.h"
#include "xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ident.h"
#include "log.h"
#include "pgconn.h"
#include "ddl_parse.h"
#include "dml_sql.h"
#include "strbuf.h"
#include "target_ddl.h"
#include "target_fit.h"
#include "typesync.h"

int
catalog_ensure_progress(sink *s, const char *slot)
{
	const char *p[] = {slot};

	return sink_command(s, "registering the replication",
	                    "INSERT INTO tidemark.progress (slot_name) VALUES ($1)"
	                    " ON CONFLICT (slot_name) DO NOTHING", 1, p);
}

int
catalog_new_slot_generation(sink *s, const char *slot)
{
	const char *p[] = {slot};

	/* the old position is of the old slot: the new one starts where it is
	 * made (a fresh start for the start-up check, consistency.h) */
	return sink_command(s, "recording a new slot",
	                    "UPDATE tidemark.progress SET slot_generation = slot_generation + 1,"
	                    " applied_lsn = NULL WHERE slot_name = $1", 1, p);
}

int
catalog_warn_interrupted(sink *s, const char *slot)
{
	catalog_table *all = NULL;
	int n = 0;
	int rc = catalog_load_tables(s, slot, &all, &n);

	for (int i = 0; rc == TM_OK && i < n; i++)
		if (all[i].interrupted)
			log_warn("target: %s.%s was registered for an earlier slot of this replication "
			         "(before teardown, or before the slot was dropped): its changes are not "
			         "captured and it is not copied. Fix: tidemark setup naming it (--table "
			         "'%s.%s'); it is then copied again", all[i].source_schema,
			         all[i].source_table, all[i].source_schema, all[i].source_table);
	catalog_tables_free(all, n);
	return rc;
}

int
catalog_read_progress(sink *s, const char *slot, tm_lsn *applied)
{
	const char *p[] = {slot};
	PGresult *r;
	int rc = sink_query(s, "reading the applied position",
	                    "SELECT applied_lsn FROM tidemark.progress WHERE slot_name = $1", 1, p, &r);

	if (rc != TM_OK)
		return rc;
	*applied = LSN_INVALID;
	if (PQntuples(r) == 0) {
		log_error("target: no replication \"%s\" is registered here. Fix: run `tidemark setup` "
		          "(with the same --slot)", slot);
		rc = TM_EXIT_CONFIG;
	} else if (!PQgetisnull(r, 0, 0))
		lsn_parse(PQgetvalue(r, 0, 0), applied);
	PQclear(r);
	return rc;
}

int
catalog_save_progress(sink *s, const char *slot, tm_lsn applied, pg_timestamp commit_time)
{
	static const char *const sql =
		"UPDATE tidemark.progress SET applied_lsn = $2::pg_lsn,"
		" source_commit_time = CASE WHEN $3::bigint = 0 THEN source_commit_time"
		"   ELSE to_timestamp($3::bigint / 1000000.0) END,"
		" applied_at = now() WHERE slot_name = $1";
	char lsn[LSN_TEXT_MAX], ts[32];
	const char *p[] = {slot, lsn, ts};

	lsn_format(applied, lsn);
	snprintf(ts, sizeof ts, "%lld",
	         commit_time ? (long long) pgoutput_timestamp_to_unix_us(commit_time) : 0LL);
	return sink_send(s, sink_stmt_get(s, sql, 3), p, NULL);
}

int
catalog_flush_progress(sink *s, const char *slot)
{
	const char *p[] = {slot};
	tm_lsn end;
	int rc = sink_begin(s);

	if (rc == TM_OK)
		rc = sink_command(s, "waiting for the target's disk",
		                  "SELECT set_config('synchronous_commit', 'on', true)", 0, NULL);
	if (rc == TM_OK)
		rc = sink_command(s, "waiting for the target's disk",
		                  "UPDATE tidemark.progress SET applied_lsn = applied_lsn"
		                  " WHERE slot_name = $1", 1, p);
	if (rc == TM_OK)
		return sink_commit(s, &end);
	sink_rollback(s);
	return rc;
}

/* One generated column, under a savepoint: left out (with its reason in
 * kept_as) when the target refuses it. */
static int
add_generated(sink *s, const char *tschema, tabledef *def, tabledef_column *c)
{
	strbuf sql = STRBUF_INIT, expr = STRBUF_INIT;
	char *refused = NULL;
	tm_error err;
	int rc = TM_OK;

	if (c->kept_as == NULL && ddl_parse_generation_expr(c->generated, &expr, &err) == 0 &&
	    target_ddl_add_generated(&sql, tschema, def->name, c->name, c->target_type,
	                             c->collate ? c->collation->schema : NULL,
	                             c->collate ? c->collation->name : NULL, strbuf_str(&expr),
	                             &err) == 0)
		rc = sink_try(s, "adding a generated column", strbuf_str(&sql), &refused);
	if (rc == TM_OK && refused != NULL) {
		strbuf why = STRBUF_INIT;

		strbuf_appendf(&why, "generated column left out: the target refused it: %s", refused);
		log_warn("target: table %s.%s, column %s: %s", tschema, def->name, c->name,
		         strbuf_str(&why));
		tabledef_set_kept_as(c, strbuf_str(&why));
		strbuf_free(&why);
	}
	free(refused);
	strbuf_free(&sql);
	strbuf_free(&expr);
	return rc;
}

/* The existing target table's columns, and whether it has a unique index
 * on exactly the key columns (keys: their names as a JSON array). */
static int
read_existing(sink *s, const char *tschema, const char *name, const char *keys, PGresult **r)
{
	const char *p[] = {tschema, name, keys};

	return sink_query(
		s, "reading the target table that exists already",
		"WITH rel AS (SELECT format('%I.%I', $1::text, $2::text)::regclass AS oid),"
		" idx AS (SELECT i.*, ARRAY(SELECT k.attname::text FROM pg_attribute k"
		"     WHERE k.attrelid = i.indrelid"
		"     AND k.attnum = ANY ((i.indkey::int2[])[0:i.indnkeyatts - 1]) ORDER BY 1)"
		"   = ARRAY(SELECT jsonb_array_elements_text($3::jsonb) ORDER BY 1) AS on_key"
		"   FROM pg_index i, rel WHERE i.indrelid = rel.oid AND i.indisunique)"
		" SELECT a.attname, format_type(a.atttypid, a.atttypmod),"
		"  a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = '',"
		"  EXISTS (SELECT FROM idx WHERE idx.on_key AND idx.indimmediate AND idx.indisvalid"
		"   AND idx.indpred IS NULL AND idx.indexprs IS NULL),"
		"  a.attidentity = 'a',"
		"  (SELECT string_agg(quote_ident(c.relname), ', ' ORDER BY c.relname) FROM idx"
		"   JOIN pg_class c ON c.oid = idx.indexrelid WHERE NOT idx.on_key),"
		"  (SELECT string_agg(quote_ident(f.conname), ', ' ORDER BY f.conname)"
		"   FROM pg_constraint f WHERE f.contype = 'f'"
		"   AND (f.conrelid = rel.oid OR f.confrelid = rel.oid))"
		" FROM rel JOIN pg_attribute a ON a.attrelid = rel.oid"
		" WHERE a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", 3, p, r);
}

/*
 * A table of that name is on the target already (made by hand, kept from
 * an earlier pipeline): tidemark writes into it, so it must take the
 * source's rows (target_fit.h). One that does not is refused with the fix
 * before anything is written to it; built-in columns of another type are
 * said.
 */
static int
check_existing(sink *s, const char *tschema, const tabledef *def)
{
	char *keys = tabledef_keys_json(def);
	PGresult *r = NULL;
	strbuf why = STRBUF_INIT, differ = STRBUF_INIT;
	int rc = read_existing(s, tschema, def->name, keys, &r);
	target_fit_column *cols = NULL;
	target_fit_table t = {NULL, 0, false, NULL, NULL};

	if (rc == TM_OK) {
		t.ncols = PQntuples(r);
		cols = xcalloc((size_t) t.ncols + 1, sizeof *cols);
		for (int i = 0; i < t.ncols; i++) {
			cols[i].name = PQgetvalue(r, i, 0);
			cols[i].type = PQgetvalue(r, i, 1);
			cols[i].required = strcmp(PQgetvalue(r, i, 2), "t") == 0;
			cols[i].identity_always = strcmp(PQgetvalue(r, i, 4), "t") == 0;
		}
		t.cols = cols;
		t.key_index = t.ncols > 0 && strcmp(PQgetvalue(r, 0, 3), "t") == 0;
		t.other_unique = t.ncols > 0 ? PQgetvalue(r, 0, 5) : NULL;
		t.foreign_keys = t.ncols > 0 ? PQgetvalue(r, 0, 6) : NULL;
	}
	if (rc == TM_OK && !target_fit_check(def, &t, &why, &differ)) {
		log_error("target: table %s.%s exists already on the target, and tidemark cannot "
		          "replicate %s.%s into it: %s Fix: ALTER TABLE the target's table to fit (or "
		          "drop it: tidemark then creates it), or put the pipeline's tables elsewhere "
		          "(setup --target-schema / --map-schema), or leave the table out (setup "
		          "--exclude-table '%s.%s')", tschema, def->name, def->schema, def->name,
		          why.data, def->schema, def->name);
		rc = TM_EXIT_CONFIG;
	} else if (rc == TM_OK && differ.len > 0)
		log_warn("target: table %s.%s exists already on the target, with other types than the "
		         "source's for %s: values are converted by the target, and one it refuses goes "
		         "by the table's policy", tschema, def->name, differ.data);
	free(cols);
	PQclear(r);
	strbuf_free(&why);
	strbuf_free(&differ);
	free(keys);
	return rc;
}

/* The target table, when it is new: every column but the generated ones,
 * then those, one by one. */
static int
create_target_table(sink *s, const char *tschema, tabledef *def)
{
	strbuf sql = STRBUF_INIT;
	tm_error err;
	bool exists = false;
	int rc;

	target_ddl_create_schema(&sql, tschema);
	rc = sink_command(s, "creating the target schema", sql.data, 0, NULL);
	strbuf_reset(&sql);
	if (rc == TM_OK)
		rc = catalog_target_has(s, tschema, def->name, &exists);
	if (rc == TM_OK && exists)
		rc = check_existing(s, tschema, def);
	if (rc == TM_OK && !exists &&
	    target_ddl_create_table(&sql, tschema, def->name, def, &err) != 0) {
		log_error("target: cannot create table %s.%s: %s", tschema, def->name, err.msg);
		rc = TM_EXIT_TARGET;
	}
	if (rc == TM_OK && !exists)
		rc = sink_command(s, "creating the target table", sql.data, 0, NULL);
	for (int i = 0; rc == TM_OK && !exists && i < def->ncols; i++)
		if (def->cols[i].generated != NULL)
			rc = add_generated(s, tschema, def, &def->cols[i]);
	strbuf_free(&sql);
	return rc;
}

/* The first of def's columns named like one of tidemark's own, NULL for
 * none (shape.h). */
static const char *
reserved_column(const tabledef *def)
{
	for (int i = 0; i < def->ncols; i++)
		if (shape_reserved_column(def->cols[i].name))
			return def->cols[i].name;
	return NULL;
}

/* A table joins: metadata columns if the pipeline has them, unless one of
 * its columns has their name (then a plain mirror, said). */
static int
insert_table_row(sink *s, const char *slot, const tabledef *def, tm_lsn valid_from, bool *added)
{
	char *keys = tabledef_keys_json(def);
	json_t *cols = tabledef_columns_to_json(def);
	char *cols_text = json_dumps(cols, JSON_COMPACT);
	char lsn[LSN_TEXT_MAX], relid[16];
	const char *p[] = {slot, def->schema, def->name, keys, cols_text, lsn_format(valid_from, lsn),
	                   relid, NULL};
	PGresult *r = NULL;
	int rc;

	snprintf(relid, sizeof relid, "%u", def->relid);
	p[7] = reserved_column(def) != NULL ? "false" : "true";
	rc = sink_query(
		s, "registering a table",
		"WITH t AS (INSERT INTO tidemark.tables (slot_name, source_schema, source_table,"
		"   target_schema, target_table, key_columns, source_relid, registered_lsn,"
		"   slot_generation, metadata_columns)"
		"  SELECT $1, $2, $3, tidemark.map_schema($1, $2), $3,"
		"   ARRAY(SELECT jsonb_array_elements_text($4::jsonb)), $7::oid, $6::pg_lsn,"
		"   (SELECT slot_generation FROM tidemark.progress WHERE slot_name = $1),"
		"   coalesce((SELECT metadata_columns FROM tidemark.progress WHERE slot_name = $1),"
		"     false) AND $8::boolean"
		"  ON CONFLICT (slot_name, source_schema, source_table) DO NOTHING RETURNING table_id)"
		" INSERT INTO tidemark.schema_versions (table_id, version, valid_from_lsn, columns)"
		" SELECT table_id, 1, $6::pg_lsn, $5::jsonb FROM t RETURNING table_id,"
		"  (SELECT metadata_columns FROM tidemark.progress WHERE slot_name = $1)",
		8, p, &r);

	if (rc == TM_OK)
		*added = PQntuples(r) > 0;
	if (rc == TM_OK && *added && strcmp(PQgetvalue(r, 0, 1), "t") == 0 &&
	    reserved_column(def) != NULL)
		log_warn("table %s.%s has a column named %s, which the metadata columns use: it is "
		         "replicated without them (a plain mirror). Fix, for the metadata columns: "
		         "rename the column on the source, then `tidemark mode %s.%s=mirror "
		         "--metadata-columns`", def->schema, def->name, reserved_column(def),
		         def->schema, def->name);
	PQclear(r);
	if (rc == TM_OK && !*added) {
		const char *up[] = {slot, def->schema, def->name, relid};

		rc = sink_command(s, "recording a table's source oid",
		                  "UPDATE tidemark.tables SET source_relid = $4::oid WHERE slot_name = $1"
		                  " AND source_schema = $2 AND source_table = $3 AND state <> 'dropped'"
		                  " AND source_relid IS DISTINCT FROM $4::oid", 4, up);
	}
	free(keys);
	free(cols_text);
	json_decref(cols);
	return rc;
}

int
catalog_target_has(sink *s, const char *schema, const char *name, bool *has)
{
	const char *p[] = {schema, name};
	PGresult *r = NULL;
	int rc = sink_query(s, "looking for a target table",
	                    "SELECT to_regclass(format('%I.%I', $1::text, $2::text)) IS NOT NULL", 2,
	                    p, &r);

	*has = rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return rc;
}

/* Renames target table tschema.ttable (when it exists: *kept) to the
 * first free "ttable (label)", "ttable (label 2)", ... (aside). */
static int
rename_aside(sink *s, const char *tschema, const char *ttable, const char *label,
             char aside[IDENT_NAME_BYTES + 1], bool *kept)
{
	strbuf sql = STRBUF_INIT;
	bool taken = true;
	int rc = catalog_target_has(s, tschema, ttable, kept);

	for (int n = 1; rc == TM_OK && taken; n++) {
		ident_aside_label(ttable, label, n, aside);
		rc = catalog_target_has(s, tschema, aside, &taken);
	}
	if (rc == TM_OK && *kept) {
		target_ddl_rename_table(&sql, tschema, ttable, aside);
		rc = sink_command(s, "moving a target table aside", sql.data, 0, NULL);
	}
	strbuf_free(&sql);
	return rc;
}

/* Moves a dropped table's kept target table and catalog row aside, under
 * "name (dropped)" (or "(dropped 2)", ...). */
static int
move_aside(sink *s, const char *id, const char *tschema, const char *ttable, const char *sname)
{
	char aside[IDENT_NAME_BYTES + 1], src_aside[IDENT_NAME_BYTES + 1];
	bool kept = false;
	int rc = rename_aside(s, tschema, ttable, "dropped", aside, &kept);

	if (rc == TM_OK && kept)
		log_info("target: %s.%s, dropped on the source and kept here, is now \"%s\": a new "
		         "table of its name is replicated", tschema, ttable, aside);
	ident_aside_name(sname, 1, src_aside);
	if (rc == TM_OK) {
		const char *p[] = {id, aside, src_aside};

		/* the row stays for the audit log, under a name no source table has */
		rc = sink_command(s, "moving a dropped table's record aside",
		                  "UPDATE tidemark.tables SET target_table = $2,"
		                  " source_table = $3 || ' ' || table_id WHERE table_id = $1::int", 3, p);
	}
	return rc;
}

int
catalog_retire_dropped(sink *s, const char *slot, const char *schema, const char *name)
{
	const char *p[] = {slot, schema, name};
	PGresult *r = NULL;
	int rc = sink_query(s, "looking for a dropped table of the same name",
	                    "SELECT table_id, target_schema, target_table FROM tidemark.tables"
	                    " WHERE slot_name = $1 AND source_schema = $2 AND source_table = $3"
	                    " AND state = 'dropped'", 3, p, &r);

	if (rc == TM_OK && PQntuples(r) == 1)
		rc = move_aside(s, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), name);
	PQclear(r);
	return rc;
}

/* The table's target schema (the pipeline's mapping), when no other table
 * of the catalog has its target name: *tschema a new string. */
static int
target_name_for(sink *s, const char *slot, const tabledef *def, char **tschema)
{
	const char *p[] = {slot, def->schema, def->name};
	PGresult *r = NULL;
	int rc = sink_query(s, "finding the table's target name",
	                    "SELECT m.ts, t.slot_name, t.source_schema, t.source_table"
	                    " FROM (SELECT tidemark.map_schema($1, $2) AS ts) m"
	                    " LEFT JOIN tidemark.tables t ON t.target_schema = m.ts"
	                    "  AND t.target_table = $3 AND t.state <> 'dropped'"
	                    "  AND NOT (t.slot_name = $1 AND t.source_schema = $2"
	                    "   AND t.source_table = $3)", 3, p, &r);

	*tschema = NULL;
	if (rc == TM_OK && !PQgetisnull(r, 0, 1)) {
		log_error("target: %s.%s would be %s.%s on the target, which pipeline \"%s\" fills from "
		          "its %s.%s already. Fix: leave the table out (setup --exclude-table '%s.%s'), "
		          "or rename it on the source; a pipeline's tables go to the schemas of its "
		          "--target-schema / --map-schema", def->schema, def->name, PQgetvalue(r, 0, 0),
		          def->name, PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 3),
		          def->schema, def->name);
		rc = TM_EXIT_CONFIG;
	} else if (rc == TM_OK)
		*tschema = xstrdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

int
catalog_add_table(sink *s, const char *slot, const tabledef *def, tm_lsn valid_from, bool *added,
                  bool *values_added)
{
	tabledef *t = tabledef_copy(def);
	typesync_result ts = {false, STRBUF_INIT};
	char *tschema = NULL;
	int rc = catalog_retire_dropped(s, slot, t->schema, t->name);

	if (rc == TM_OK)
		rc = target_name_for(s, slot, t, &tschema);
	if (rc == TM_OK)
		rc = typesync_table(s, slot, t, &ts);
	if (rc == TM_OK)
		rc = create_target_table(s, tschema, t);
	if (rc == TM_OK)
		rc = insert_table_row(s, slot, t, valid_from, added);
	if (rc == TM_OK && *added)
		rc = catalog_vacate_name(s, slot, t->schema, t->name, t->schema, t->name);
	/* its metadata columns (a pipeline's tables all have them or none) */
	if (rc == TM_OK && *added)
		rc = shape_sync_named(s, slot, def->schema, def->name);
	if (values_added != NULL)
		*values_added = ts.values_added;
	typesync_result_free(&ts);
	tabledef_free(t);
	free(tschema);
	return rc;
}

/* The table's row: registered again from valid_from with def's key and
 * oid, to be copied from the start; its new version from valid_from. */
static int
record_restart(sink *s, const catalog_table *t, const tabledef *def, tm_lsn valid_from)
{
	char *keys = tabledef_keys_json(def);
	json_t *cols = tabledef_columns_to_json(def);
	char *cols_text = json_dumps(cols, JSON_COMPACT);
	char id[16], relid[16], lsn[LSN_TEXT_MAX];
	const char *p[] = {id, def->schema, def->name, keys, relid, lsn_format(valid_from, lsn),
	                   cols_text};
	int rc;

	snprintf(id, sizeof id, "%d", t->table_id);
	snprintf(relid, sizeof relid, "%u", def->relid);
	rc = sink_command(
		s, "registering a table again",
		"WITH t AS (UPDATE tidemark.tables SET source_schema = $2, source_table = $3,"
		"   key_columns = ARRAY(SELECT jsonb_array_elements_text($4::jsonb)),"
		"   source_relid = $5::oid, registered_lsn = $6::pg_lsn, state = 'snapshot_pending',"
		"   snapshot_last_key = NULL, snapshot_rows = 0, snapshot_chunks = 0,"
		"   snapshot_started_at = NULL, snapshot_finished_at = NULL,"
		"   snapshot_requested_at = clock_timestamp(), key_order_same = NULL,"
		"   key_order_reason = NULL, slot_generation = (SELECT p.slot_generation"
		"     FROM tidemark.progress p WHERE p.slot_name = tables.slot_name)"
		"   WHERE table_id = $1::int RETURNING table_id)"
		" INSERT INTO tidemark.schema_versions (table_id, version, valid_from_lsn, columns)"
		" SELECT table_id, (SELECT coalesce(max(version), 0) + 1 FROM tidemark.schema_versions"
		"   WHERE table_id = $1::int), $6::pg_lsn, $7::jsonb FROM t",
		7, p);
	if (rc == TM_OK)
		rc = sink_command(s, "forgetting the rows to read again",
		                  "DELETE FROM tidemark.snapshot_rereads WHERE table_id = $1::int", 1, p);
	if (rc == TM_OK)
		rc = sink_command(s, "forgetting the changes kept for a copy",
		                  "DELETE FROM tidemark.keyless_pending WHERE table_id = $1::int", 1, p);
	free(keys);
	free(cols_text);
	json_decref(cols);
	return rc;
}

int
catalog_history_behind(sink *s, int table_id)
{
	return catalog_table_command(s, table_id, "marking the history behind its mirror",
	                             "UPDATE tidemark.tables SET history_behind = true"
	                             " WHERE table_id = $1::int AND mode LIKE 'history%'");
}

static void
warn_emptied_by_delete(int ntables, const char *const *schemas, const char *const *names,
                       const char *referencing)
{
	strbuf tables = STRBUF_INIT;

	for (int i = 0; i < ntables; i++)
		strbuf_appendf(&tables, "%s%s.%s", i > 0 ? ", " : "", schemas[i], names[i]);
	log_warn("target: a source TRUNCATE of %s is applied as a DELETE of every row: keys of the "
	         "target's own reference them (%s), and their ON DELETE actions apply",
	         tables.data, referencing);
	strbuf_free(&tables);
}

int
catalog_empty_tables(sink *s, int ntables, const char *const *schemas, const char *const *names)
{
	const char **p = xcalloc((size_t) ntables * 2, sizeof(char *));
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	int rc;

	for (int i = 0; i < ntables; i++) {
		p[i] = schemas[i];
		p[ntables + i] = names[i];
	}
	dml_sql_empty_tables(&sql, ntables);
	rc = sink_lock_wait(s, true);
	if (rc == TM_OK)
		rc = sink_query(s, "applying a TRUNCATE", sql.data, ntables * 2, p, &r);
	if (rc == TM_OK && !PQgetisnull(r, 0, 0))
		warn_emptied_by_delete(ntables, schemas, names, PQgetvalue(r, 0, 0));
	if (rc == TM_OK)
		rc = sink_lock_wait(s, false);
	PQclear(r);
	strbuf_free(&sql);
	free(p);
	return rc;
}

int
catalog_referencing_tables(sink *s, const char *schema, const char *table, char **out)
{
	const char *p[] = {schema, table};
	PGresult *r = NULL;
	int rc = sink_query(s, "looking for keys that reference a target table",
	                    "SELECT tidemark.referencing_tables(ARRAY[format('%I.%I', $1::text,"
	                    " $2::text)::regclass])", 2, p, &r);

	*out = rc == TM_OK && !PQgetisnull(r, 0, 0) ? xstrdup(PQgetvalue(r, 0, 0)) : NULL;
	PQclear(r);
	return rc;
}

/* The kept table's privileges, comments, indexes, triggers and policies
 * on the one made again in its place (target migrations 019 and 020), so
 * that its readers keep reading it as they did; what it does not take
 * stays on the kept table and is said, and the table is made all the same. */
static int
carry_to_made(sink *s, const char *tschema, const char *kept, const char *made)
{
	const char *p[] = {tschema, kept, made};
	PGresult *r = NULL;
	int rc = sink_query(s, "giving a table made again what the kept one has",
	                    "SELECT unnest(tidemark.objects_carry(format('%I.%I', $1::text,"
	                    " $2::text)::regclass, format('%I.%I', $1::text, $3::text)::regclass))",
	                    3, p, &r);

	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++)
		log_warn("target: %s.%s, made again, lacks what the kept table \"%s\" has, which stays "
		         "there: %s", tschema, made, kept, PQgetvalue(r, i, 0));
	PQclear(r);
	return rc;
}

int
catalog_restart_table(sink *s, const char *slot, const catalog_table *t, const tabledef *def,
                      tm_lsn valid_from, bool keep_target, char **aside)
{
	tabledef *d = tabledef_copy(def);
	typesync_result ts = {false, STRBUF_INIT};
	char moved[IDENT_NAME_BYTES + 1] = "";
	bool kept = false;
	int rc = keep_target ? TM_OK
	                     : rename_aside(s, t->target_schema, t->target_table, "set aside", moved,
	                                    &kept);

	if (aside != NULL)
		*aside = kept ? xstrdup(moved) : NULL;
	if (rc == TM_OK)
		rc = typesync_table(s, slot, d, &ts);
	/* the target table keeps its names (they follow the source's renames) */
	free(d->name);
	d->name = xstrdup(t->target_table);
	if (rc == TM_OK && !keep_target)
		rc = create_target_table(s, t->target_schema, d);
	if (rc == TM_OK && kept)
		rc = carry_to_made(s, t->target_schema, moved, t->target_table);
	free(d->name);
	d->name = xstrdup(def->name);
	if (rc == TM_OK)
		rc = record_restart(s, t, d, valid_from);
	/* a table made again is empty: its copy compares with the history */
	if (rc == TM_OK && !keep_target)
		rc = catalog_history_behind(s, t->table_id);
	/* a table made again gets its mode's columns; its history is kept */
	if (rc == TM_OK)
		rc = shape_sync(s, t->table_id, NULL, 0, NULL);
	typesync_result_free(&ts);
	tabledef_free(d);
	return rc;
}

int
catalog_table_command(sink *s, int table_id, const char *what, const char *sql)
{
	char id[16];
	const char *p[] = {id};

	snprintf(id, sizeof id, "%d", table_id);
	return sink_command(s, what, sql, 1, p);
}

int
catalog_retire_table(sink *s, int table_id)
{
	return catalog_table_command(s, table_id, "taking a table out of replication",
	                             "UPDATE tidemark.tables SET state = 'dropped'"
	                             " WHERE table_id = $1::int");
}

int
catalog_request_copy(sink *s, int table_id)
{
	return catalog_table_command(s, table_id, "asking for the table to be copied again",
	                             "UPDATE tidemark.tables SET state = 'snapshot_pending',"
	                             " snapshot_last_key = NULL, snapshot_rows = 0, snapshot_chunks = 0,"
	                             " snapshot_started_at = NULL, snapshot_finished_at = NULL,"
	                             " snapshot_requested_at = clock_timestamp()"
	                             " WHERE table_id = $1::int");
}

/* Has the target table (quoted, qualified) no row? */
static int
target_empty(sink *s, const char *target, bool *empty)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	int rc;

	strbuf_appendf(&sql, "SELECT NOT EXISTS (SELECT 1 FROM %s)", target);
	rc = sink_query(s, "reading whether an unlogged target table has rows", strbuf_str(&sql), 0,
	                NULL, &r);
	*empty = rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	strbuf_free(&sql);
	return rc;
}

int
catalog_unlogged_tables(sink *s, const char *slot, catalog_unlogged **out, int *n)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	int rc = sink_query(s, "listing the target tables that are unlogged",
	                    "SELECT t.table_id, coalesce(t.source_relid, 0), c.oid::regclass::text"
	                    " FROM tidemark.tables t JOIN pg_class c ON c.oid ="
	                    "   to_regclass(format('%I.%I', t.target_schema, t.target_table))"
	                    " WHERE t.slot_name = $1 AND t.state IN ('streaming', 'snapshotting')"
	                    "   AND c.relpersistence = 'u' ORDER BY t.table_id",
	                    1, p, &r);

	*out = NULL;
	*n = 0;
	if (rc != TM_OK) {
		PQclear(r);
		return rc;
	}
	*out = xcalloc((size_t) PQntuples(r) + 1, sizeof **out);
	for (int i = 0; i < PQntuples(r); i++) {
		catalog_unlogged *u = &(*out)[(*n)++];

		u->table_id = atoi(PQgetvalue(r, i, 0));
		u->source_relid = (uint32_t) strtoul(PQgetvalue(r, i, 1), NULL, 10);
		u->target = xstrdup(PQgetvalue(r, i, 2));
	}
	PQclear(r);
	for (int i = 0; rc == TM_OK && i < *n; i++)
		rc = target_empty(s, (*out)[i].target, &(*out)[i].empty);
	return rc;
}

void
catalog_unlogged_free(catalog_unlogged *u, int n)
{
	for (int i = 0; u != NULL && i < n; i++)
		free(u[i].target);
	free(u);
}

/* Are two columns alike where the target table's column depends on them? */
static bool
column_alike(const tabledef_column *a, const tabledef_column *b)
{
	return a->attnum == b->attnum && strcmp(a->name, b->name) == 0 &&
	       strcmp(a->type_sql, b->type_sql) == 0 && a->not_null == b->not_null &&
	       a->is_key == b->is_key && (a->generated == NULL) == (b->generated == NULL) &&
	       (a->generated == NULL || strcmp(a->generated, b->generated) == 0);
}

int
catalog_version_matches(sink *s, int table_id, const tabledef *def, bool *same)
{
	char id[16];
	const char *p[] = {id};
	PGresult *r = NULL;
	tabledef *v = tabledef_new(def->schema, def->name, def->relid);
	tm_error err;
	int rc;

	snprintf(id, sizeof id, "%d", table_id);
	*same = false;
	rc = sink_query(s, "reading a schema version",
	                "SELECT columns::text FROM tidemark.schema_versions WHERE table_id = $1::int"
	                " ORDER BY version DESC LIMIT 1", 1, p, &r);
	if (rc == TM_OK && PQntuples(r) == 1) {
		json_t *cols = json_loads(PQgetvalue(r, 0, 0), 0, NULL);

		*same = tabledef_columns_from_json(v, cols, &err) == 0 && v->ncols == def->ncols;
		for (int i = 0; *same && i < def->ncols; i++)
			*same = column_alike(&v->cols[i], &def->cols[i]);
		json_decref(cols);
	}
	PQclear(r);
	tabledef_free(v);
	return rc;
}

int
catalog_set_key_order(sink *s, int table_id, const char *table, const char *reason)
{
	char id[16];
	const char *p[] = {id, reason};

	snprintf(id, sizeof id, "%d", table_id);
	if (reason != NULL)
		log_warn("target: %s does not sort its key as the source does (%s): which rows a "
		         "chunk of its copy holds is never judged by the target's order, and rows the "
		         "target holds but the source does not are not removed by a copy (tidemark "
		         "verify finds them)", table, reason);
	return sink_command(s, "recording the key's order",
	                    "UPDATE tidemark.tables SET key_order_same = $2::text IS NULL,"
	                    " key_order_reason = $2 WHERE table_id = $1::int", 2, p);
}

int
catalog_set_publication_token(sink *s, int table_id, const char *token)
{
	char id[16];
	const char *p[] = {id, token};

	snprintf(id, sizeof id, "%d", table_id);
	return sink_command(s, "noting how the publication publishes a table",
	                    "UPDATE tidemark.tables SET publication_token = $2"
	                    " WHERE table_id = $1::int", 2, p);
}

int
catalog_key_order_unknown_again(sink *s, int table_id)
{
	return catalog_table_command(s, table_id, "recording that the key's order is not known",
	                             "UPDATE tidemark.tables SET key_order_same = NULL,"
	                             " key_order_reason = NULL WHERE table_id = $1::int");
}

int
catalog_key_order_unknown(sink *s, const char *slot, int **ids, int *n)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	int rc = sink_query(s, "reading the tables whose key order is not known",
	                    "SELECT table_id FROM tidemark.tables WHERE slot_name = $1"
	                    " AND state <> 'dropped' AND key_order_same IS NULL ORDER BY table_id",
	                    1, p, &r);

	*n = 0;
	*ids = NULL;
	if (rc == TM_OK) {
		*n = PQntuples(r);
		*ids = xcalloc((size_t) *n + 1, sizeof(int));
		for (int i = 0; i < *n; i++)
			(*ids)[i] = atoi(PQgetvalue(r, i, 0));
	}
	PQclear(r);
	return rc;
}

int
catalog_set_capture_key(sink *s, const char *slot, const char *hex, tm_lsn signed_from)
{
	char from[LSN_TEXT_MAX];
	const char *p[] = {slot, hex, lsn_format(signed_from, from)};

	return sink_command(s, "keeping the capture key",
	                    "INSERT INTO tidemark.capture_keys (slot_name, key, signed_from)"
	                    " VALUES ($1, decode($2, 'hex'), $3::pg_lsn) ON CONFLICT (slot_name) DO UPDATE"
	                    " SET key = EXCLUDED.key, signed_from = CASE WHEN capture_keys.key ="
	                    " EXCLUDED.key THEN capture_keys.signed_from ELSE EXCLUDED.signed_from END",
	                    3, p);
}

int
catalog_set_capture_bound(sink *s, const char *slot, tm_lsn bound_from)
{
	char from[LSN_TEXT_MAX];
	const char *p[] = {slot, lsn_format(bound_from, from)};

	return sink_command(s, "keeping where bound capture messages start",
	                    "UPDATE tidemark.capture_keys SET bound_from = $2::pg_lsn"
	                    " WHERE slot_name = $1 AND (bound_from IS NULL OR bound_from < signed_from)",
	                    2, p);
}

int
catalog_read_capture_key(sink *s, const char *slot, char **hex, tm_lsn *signed_from)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	int rc = sink_query(s, "reading the capture key",
	                    "SELECT encode(key, 'hex'), signed_from::text FROM tidemark.capture_keys"
	                    " WHERE slot_name = $1", 1, p, &r);

	*hex = NULL;
	if (rc == TM_OK && PQntuples(r) == 1) {
		*hex = xstrdup(PQgetvalue(r, 0, 0));
		lsn_parse(PQgetvalue(r, 0, 1), signed_from);
	}
	PQclear(r);
	return rc;
}

int
catalog_add_schema(sink *s, const char *slot, const char *schema)
{
	const char *p[] = {slot, schema};

	return sink_command(s, "registering a schema",
	                    "INSERT INTO tidemark.schemas (slot_name, source_schema) VALUES ($1, $2)"
	                    " ON CONFLICT DO NOTHING", 2, p);
}

/*
 * A replicated schema renamed on the source (ALTER SCHEMA ... RENAME TO):
 * the pipeline's schema list, its --map-schema and its excluded tables
 * follow the new name. The publication names the schema by oid, so it
 * still publishes every table of it: nothing to copy again.
 */
int
catalog_rename_schema(sink *s, const char *slot, const char *from, const char *to)
{
	/* each moves its rows of the old name to the new one */
	static const char *const steps[][2] = {
		{"renaming a replicated schema",
		 "WITH d AS (DELETE FROM tidemark.schemas WHERE slot_name = $1 AND source_schema = $2"
		 "   RETURNING slot_name)"
		 " INSERT INTO tidemark.schemas (slot_name, source_schema)"
		 " SELECT slot_name, $3 FROM d ON CONFLICT DO NOTHING"},
		{"renaming a schema's mapping",
		 "WITH d AS (DELETE FROM tidemark.schema_map WHERE slot_name = $1 AND source_schema = $2"
		 "   RETURNING slot_name, target_schema)"
		 " INSERT INTO tidemark.schema_map (slot_name, source_schema, target_schema)"
		 " SELECT slot_name, $3, target_schema FROM d"
		 " ON CONFLICT (slot_name, source_schema) DO UPDATE SET target_schema = excluded.target_schema"},
		{"renaming a schema's excluded tables",
		 "WITH d AS (DELETE FROM tidemark.excluded_tables WHERE slot_name = $1"
		 "   AND source_schema = $2 RETURNING slot_name, source_table, excluded_at)"
		 " INSERT INTO tidemark.excluded_tables (slot_name, source_schema, source_table,"
		 " excluded_at) SELECT slot_name, $3, source_table, excluded_at FROM d"
		 " ON CONFLICT DO NOTHING"},
	};
	const char *p[] = {slot, from, to};
	int rc = TM_OK;

	for (size_t i = 0; rc == TM_OK && i < sizeof steps / sizeof steps[0]; i++)
		rc = sink_command(s, steps[i][0], steps[i][1], 3, p);
	return rc;
}

int
catalog_dropped_named(sink *s, const char *slot, const char *schema, const char *name, bool *was)
{
	const char *p[] = {slot, schema, name};
	PGresult *r = NULL;
	int rc = sink_query(s, "looking for a dropped table of the name",
	                    "SELECT EXISTS (SELECT FROM tidemark.tables WHERE slot_name = $1"
	                    " AND source_schema = $2 AND source_table = $3 AND state = 'dropped')"
	                    " OR EXISTS (SELECT FROM tidemark.vacated_names WHERE slot_name = $1"
	                    " AND source_schema = $2 AND source_table = $3)",
	                    3, p, &r);

	*was = rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return rc;
}

int
catalog_vacate_name(sink *s, const char *slot, const char *old_schema, const char *old_name,
                    const char *schema, const char *name)
{
	const char *left[] = {slot, old_schema, old_name};
	const char *held[] = {slot, schema, name};
	int rc = TM_OK;

	if (strcmp(old_schema, schema) != 0 || strcmp(old_name, name) != 0)
		rc = sink_command(s, "noting the name a table left",
		                  "INSERT INTO tidemark.vacated_names (slot_name, source_schema,"
		                  " source_table) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", 3, left);
	if (rc == TM_OK)
		rc = sink_command(s, "forgetting a name held again",
		                  "DELETE FROM tidemark.vacated_names WHERE slot_name = $1"
		                  " AND source_schema = $2 AND source_table = $3", 3, held);
	return rc;
}

int
catalog_schema_covers(sink *s, const char *slot, const char *schema, const char *name,
                      bool *covered, bool *excluded)
{
	const char *p[] = {slot, schema, name};
	PGresult *r;
	int rc = sink_query(s, "reading the replicated schemas",
	                    "SELECT EXISTS (SELECT FROM tidemark.schemas"
	                    "   WHERE slot_name = $1 AND source_schema = $2),"
	                    " EXISTS (SELECT FROM tidemark.excluded_tables"
	                    "   WHERE slot_name = $1 AND source_schema = $2 AND source_table = $3)",
	                    3, p, &r);

	if (rc == TM_OK) {
		*excluded = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
		*covered = strcmp(PQgetvalue(r, 0, 0), "t") == 0 && !*excluded;
		PQclear(r);
	}
	return rc;
}

int
catalog_exclude_table(sink *s, const char *slot, const char *schema, const char *name)
{
	const char *p[] = {slot, schema, name};

	return sink_command(s, "leaving a table out",
	                    "INSERT INTO tidemark.excluded_tables (slot_name, source_schema,"
	                    " source_table) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", 3, p);
}

#define TABLE_COLUMNS                                                                     \
	"table_id, source_schema, source_table, target_schema, target_table,"                 \
	" array_to_json(key_columns)::text, state, array_to_json(snapshot_last_key)::text,"   \
	" snapshot_rows, snapshot_chunks, coalesce(snapshot_estimate, -1),"                    \
	" snapshot_requested_at IS NOT NULL, coalesce(source_relid, 0),"                    \
	/* read through the row's JSON: a catalog before migration 005 has no    \
	 * such columns (a command run before `run` has brought it up to date) */ \
	" coalesce((to_jsonb(tables) ->> 'key_order_same')::boolean, false),"                 \
	" CASE WHEN to_jsonb(tables) ->> 'key_order_same' IS NULL THEN 'not known yet'"        \
	"   ELSE to_jsonb(tables) ->> 'key_order_reason' END,"                                   \
	" coalesce(to_jsonb(tables) ->> 'registered_lsn', '0/0'),"                              \
	" coalesce((to_jsonb(tables) ->> 'slot_generation')::int, 1) < coalesce((SELECT"       \
	"   (to_jsonb(p) ->> 'slot_generation')::int FROM tidemark.progress p"                  \
	"   WHERE p.slot_name = tables.slot_name), 1),"                                           \
	" coalesce(to_jsonb(tables) ->> 'mode', 'mirror'),"                                    \
	" coalesce((to_jsonb(tables) ->> 'metadata_columns')::boolean, false),"                \
	" to_jsonb(tables) ->> 'publication_token'"

/* A JSON array of strings (or JSON null) into a new array of new strings. */
static char **
strings_from_json(const char *text, int *n)
{
	json_t *arr = json_loads(text, JSON_DECODE_ANY, NULL);
	char **out = NULL;
	size_t i;
	json_t *v;

	*n = 0;
	if (!json_is_array(arr)) {
		json_decref(arr);
		return NULL;
	}
	out = calloc(json_array_size(arr) + 1, sizeof(char *));
	if (out == NULL)
		abort();
	json_array_foreach(arr, i, v)
		out[(*n)++] = xstrdup(json_is_string(v) ? json_string_value(v) : "");
	json_decref(arr);
	return out;
}

static void
table_from_row(PGresult *r, int row, catalog_table *t)
{
	memset(t, 0, sizeof *t);
	t->table_id = atoi(PQgetvalue(r, row, 0));
	t->source_schema = xstrdup(PQgetvalue(r, row, 1));
	t->source_table = xstrdup(PQgetvalue(r, row, 2));
	t->target_schema = xstrdup(PQgetvalue(r, row, 3));
	t->target_table = xstrdup(PQgetvalue(r, row, 4));
	t->key_columns = strings_from_json(PQgetvalue(r, row, 5), &t->nkeys);
	snprintf(t->state, sizeof t->state, "%s", PQgetvalue(r, row, 6));
	if (!PQgetisnull(r, row, 7))
		t->snapshot_last_key = strings_from_json(PQgetvalue(r, row, 7), &t->nlast_key);
	t->snapshot_rows = atoll(PQgetvalue(r, row, 8));
	t->snapshot_chunks = atoi(PQgetvalue(r, row, 9));
	t->snapshot_estimate = atoll(PQgetvalue(r, row, 10));
	t->snapshot_requested = strcmp(PQgetvalue(r, row, 11), "t") == 0;
	t->source_relid = (uint32_t) strtoul(PQgetvalue(r, row, 12), NULL, 10);
	t->key_order_same = strcmp(PQgetvalue(r, row, 13), "t") == 0;
	t->key_order_reason = PQgetisnull(r, row, 14) ? NULL : xstrdup(PQgetvalue(r, row, 14));
	lsn_parse(PQgetvalue(r, row, 15), &t->registered_lsn);
	t->interrupted = strcmp(PQgetvalue(r, row, 16), "t") == 0;
	t->history = strncmp(PQgetvalue(r, row, 17), "history", 7) == 0;
	t->soft_delete = strstr(PQgetvalue(r, row, 17), "soft-delete") != NULL;
	t->metadata = strcmp(PQgetvalue(r, row, 18), "t") == 0;
	t->publication_token = PQgetisnull(r, row, 19) ? NULL : xstrdup(PQgetvalue(r, row, 19));
}

static int
load_tables(sink *s, const char *slot, const char *ids, catalog_table **out, int *n)
{
	const char *p[] = {slot, ids};
	PGresult *r;
	int rc = sink_query(s, "reading the replicated tables",
	                    "SELECT " TABLE_COLUMNS " FROM tidemark.tables"
	                    " WHERE slot_name = $1 AND state <> 'dropped'"
	                    " AND ($2::int[] IS NULL OR table_id = ANY ($2::int[])) ORDER BY table_id",
	                    2, p, &r);

	if (rc != TM_OK)
		return rc;
	*n = PQntuples(r);
	*out = calloc((size_t) *n + 1, sizeof(catalog_table));
	if (*out == NULL)
		abort();
	for (int i = 0; i < *n; i++)
		table_from_row(r, i, &(*out)[i]);
	PQclear(r);
	return TM_OK;
}

int
catalog_load_tables(sink *s, const char *slot, catalog_table **out, int *n)
{
	return load_tables(s, slot, NULL, out, n);
}

int
catalog_load_tables_ids(sink *s, const char *slot, const int *ids, int nids,
                        catalog_table **out, int *n)
{
	strbuf list = STRBUF_INIT;
	int rc;

	strbuf_appendc(&list, '{');
	for (int i = 0; i < nids; i++)
		strbuf_appendf(&list, "%s%d", i ? "," : "", ids[i]);
	strbuf_appendc(&list, '}');
	rc = load_tables(s, slot, strbuf_str(&list), out, n);
	strbuf_free(&list);
	return rc;
}

int
catalog_load_table_relid(sink *s, const char *slot, uint32_t relid, catalog_table **out)
{
	char oid[16];
	const char *p[] = {slot, oid};
	PGresult *r = NULL;
	int rc;

	snprintf(oid, sizeof oid, "%u", relid);
	*out = NULL;
	rc = sink_query(s, "finding a table by its source oid",
	                "SELECT source_schema, source_table FROM tidemark.tables"
	                " WHERE slot_name = $1 AND source_relid = $2::oid AND state <> 'dropped'",
	                2, p, &r);
	if (rc == TM_OK && PQntuples(r) == 1)
		rc = catalog_load_table(s, slot, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), out);
	PQclear(r);
	return rc;
}

int
catalog_load_table(sink *s, const char *slot, const char *schema, const char *name,
                   catalog_table **out)
{
	const char *p[] = {slot, schema, name};
	PGresult *r;
	int rc = sink_query(s, "reading a replicated table",
	                    "SELECT " TABLE_COLUMNS " FROM tidemark.tables WHERE slot_name = $1"
	                    " AND source_schema = $2 AND source_table = $3 AND state <> 'dropped'",
	                    3, p, &r);

	if (rc != TM_OK)
		return rc;
	*out = NULL;
	if (PQntuples(r) == 1) {
		*out = calloc(1, sizeof(catalog_table));
		if (*out == NULL)
			abort();
		table_from_row(r, 0, *out);
	}
	PQclear(r);
	return TM_OK;
}

static void
free_strings(char **arr, int n)
{
	for (int i = 0; i < n; i++)
		free(arr[i]);
	free(arr);
}

static void
table_clear(catalog_table *t)
{
	free(t->source_schema);
	free(t->source_table);
	free(t->target_schema);
	free(t->target_table);
	free_strings(t->key_columns, t->nkeys);
	free_strings(t->snapshot_last_key, t->nlast_key);
	free(t->key_order_reason);
	free(t->publication_token);
}

void
catalog_table_free(catalog_table *t)
{
	if (t == NULL)
		return;
	table_clear(t);
	free(t);
}

void
catalog_tables_free(catalog_table *arr, int n)
{
	if (arr == NULL)
		return;
	for (int i = 0; i < n; i++)
		table_clear(&arr[i]);
	free(arr);
}

uint32_t *
catalog_source_relids(const catalog_table *tables, int n, int *m)
{
	uint32_t *relids = xcalloc((size_t) n + 1, sizeof *relids);

	*m = 0;
	for (int i = 0; i < n; i++)
		if (tables[i].source_relid != 0 && strcmp(tables[i].state, "dropped") != 0)
			relids[(*m)++] = tables[i].source_relid;
	return relids;
}

int
catalog_quarantine(sink *s, const char *slot, int table_id, const char *source_table,
                   tm_lsn position, const char *change, const char *key_json,
                   const char *row_json, const char *reason)
{
	static const char *const sql =
		"INSERT INTO tidemark.quarantine (slot_name, table_id, source_table, position, change,"
		" key, row_data, reason) VALUES ($1, $2::int, $3, $4::pg_lsn, $5, $6::jsonb, $7::jsonb, $8)";
	char id[16], lsn[LSN_TEXT_MAX];
	const char *p[] = {slot, id, source_table, lsn_format(position, lsn), change, key_json,
	                   row_json, reason};

	snprintf(id, sizeof id, "%d", table_id);
	log_warn("%s of %s at %s quarantined: %s (key %s)", change, source_table, lsn, reason,
	         key_json);
	return sink_send(s, sink_stmt_get(s, sql, 8), p, NULL);
}

/* ---- is this replication registered here? ---- */

typedef int (*query_fn)(void *ctx, const char *what, const char *sql, int n,
                        const char *const *p, PGresult **r);

static int
sink_query_fn(void *ctx, const char *what, const char *sql, int n, const char *const *p,
              PGresult **r)
{
	return sink_query(ctx, what, sql, n, p, r);
}

static int
conn_query_fn(void *ctx, const char *what, const char *sql, int n, const char *const *p,
              PGresult **r)
{
	return pgconn_exec(ctx, PGCONN_TARGET, what, sql, n, p, r);
}

static int
check_registered(query_fn q, void *ctx, const char *slot)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	int rc = q(ctx, "looking for tidemark's catalog",
	           "SELECT to_regclass('tidemark.progress') IS NOT NULL, current_database()", 0, NULL,
	           &r);

	if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
		log_error("target: database \"%s\" holds no tidemark catalog: nothing was set up here. "
		          "Fix: run `tidemark setup` first (with this --target)", PQgetvalue(r, 0, 1));
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	r = NULL;
	if (rc == TM_OK && slot != NULL)
		rc = q(ctx, "looking for the replication",
		       "SELECT EXISTS (SELECT FROM tidemark.progress WHERE slot_name = $1),"
		       " coalesce(string_agg(quote_literal(slot_name), ', ' ORDER BY slot_name), '')"
		       " FROM tidemark.progress", 1, p, &r);
	if (rc == TM_OK && slot != NULL && strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
		log_error("target: no replication \"%s\" is registered here%s%s. Fix: name the one you "
		          "mean with --slot, or run `tidemark setup` with --slot %s", slot,
		          PQgetvalue(r, 0, 1)[0] ? "; registered: " : "", PQgetvalue(r, 0, 1), slot);
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

int
catalog_check_registered(sink *s, const char *slot)
{
	return check_registered(sink_query_fn, s, slot);
}

int
catalog_check_registered_conn(PGconn *conn, const char *slot)
{
	return check_registered(conn_query_fn, conn, slot);
}
