/*
 * cmd_status.c: `tidemark status [--json]`: the slot and the WAL it
 * retains (source), the applied position and each table's state (target).
 * The report is built as one JSON document and printed as JSON or text.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "commands.h"
#include "log.h"
#include "lsn.h"
#include "migrate.h"
#include "pgconn.h"
#include "pipeline.h"
#include "policy.h"
#include "report.h"
#include "source_query.h"
#include "strbuf.h"
#include "xalloc.h"

/* Each table's relations UNLOGGED on the source (the table or its
 * partitions: their changes never reach the WAL), as the table's
 * "unlogged_on_source" list; the source's oid, read for it, is not
 * shown. */
static int
unlogged_part(PGconn *src, json_t *tables)
{
	uint32_t *relids = xcalloc(json_array_size(tables) + 1, sizeof *relids);
	source_unlogged *u = NULL;
	int n = 0, nu = 0, rc = TM_OK;
	size_t i;
	json_t *t;

	json_array_foreach(tables, i, t) {
		uint32_t relid = (uint32_t) json_integer_value(json_object_get(t, "source_relid"));

		if (relid != 0 && strcmp(report_str(t, "state"), "dropped") != 0)
			relids[n++] = relid;
	}
	if (n > 0)
		rc = source_query_unlogged(src, relids, n, &u, &nu);
	json_array_foreach(tables, i, t) {
		uint32_t relid = (uint32_t) json_integer_value(json_object_get(t, "source_relid"));
		json_t *names = json_array();

		for (int k = 0; k < nu; k++)
			if (u[k].table == relid)
				json_array_append_new(names, json_string(u[k].name));
		json_object_set_new(t, "unlogged_on_source", names);
		json_object_del(t, "source_relid");
	}
	source_unlogged_free(u, nu);
	free(relids);
	return rc;
}

/* What is wrong with the DDL capture's event triggers, as "capture_gaps"
 * (a list of sentences; empty when it is whole). */
static int
capture_part(PGconn *src, json_t *out)
{
	char **gaps = NULL;
	json_t *list = json_array();
	int version = -1;
	int rc = source_query_capture_gaps(src, &gaps);

	for (int i = 0; rc == TM_OK && gaps[i] != NULL; i++)
		json_array_append_new(list, json_string(gaps[i]));
	json_object_set_new(out, "capture_gaps", list);
	xstrings_free(gaps);
	if (rc == TM_OK)
		rc = source_query_capture_version(src, &version);
	/* 0: from before SOURCE_CAPTURE_VERSION_SINCE, which made it readable */
	json_object_set_new(out, "capture_version", version >= 0 ? json_integer(version) : json_null());
	json_object_set_new(out, "capture_latest", json_integer(migrate_latest(PGCONN_SOURCE)));
	return rc;
}

static int
source_part(const cli_options *o, PGconn *target, json_t *out)
{
	const char *p[] = {o->slot};
	PGconn *conn;
	PGresult *r = NULL;
	int rc = pgconn_open(o->source, PGCONN_SOURCE, "status", false, &conn);

	if (rc != TM_OK)
		return rc;
	/* another source's pipeline would look healthy: refused */
	rc = pipeline_check((pipeline_target){NULL, target}, o->slot, conn, o->source, false);
	if (rc == TM_OK)
		rc = pgconn_exec(conn, PGCONN_SOURCE, "reading the slot",
	                 "SELECT s.slot_name AS slot, s.active, s.active_pid, s.wal_status,"
	                 " s.restart_lsn::text, s.confirmed_flush_lsn::text,"
	                 " pg_current_wal_lsn()::text AS source_lsn,"
	                 " pg_wal_lsn_diff(pg_current_wal_lsn(), s.restart_lsn)::bigint"
	                 "   AS retained_wal_bytes"
	                 " FROM (SELECT 1) one LEFT JOIN pg_replication_slots s ON s.slot_name = $1",
	                 1, p, &r);
	if (rc == TM_OK && PQgetisnull(r, 0, 0)) {
		log_error("source: replication slot \"%s\" does not exist there (a misspelt --slot, or "
		          "dropped by someone else?). Fix: name the slot of this replication with --slot; "
		          "if it was dropped, or lost in a failover of the source, `tidemark resync` "
		          "creates it again and copies every table again in place", o->slot);
		rc = TM_EXIT_CONFIG;
	} else if (rc == TM_OK)
		json_object_set_new(out, "source", report_row(r, 0));
	if (rc == TM_OK)
		rc = unlogged_part(conn, json_object_get(out, "tables"));
	if (rc == TM_OK)
		rc = capture_part(conn, out);
	PQclear(r);
	PQfinish(conn);
	return rc;
}

/* Does the target's catalog have this table (made by a later migration
 * than the catalog may be at)? */
static bool
catalog_has(PGconn *conn, const char *table)
{
	const char *p[] = {table};
	PGresult *r = NULL;
	bool have = pgconn_exec(conn, PGCONN_TARGET, "looking for a catalog table",
	                        "SELECT to_regclass($1) IS NOT NULL", 1, p, &r) == TM_OK &&
	            strcmp(PQgetvalue(r, 0, 0), "t") == 0;

	PQclear(r);
	return have;
}

/* Rows waiting to be read again, per table (0 on a catalog made before
 * tidemark.snapshot_rereads existed). */
static const char *
rereads_column(PGconn *conn)
{
	return catalog_has(conn, "tidemark.snapshot_rereads")
	           ? " (SELECT count(*) FROM tidemark.snapshot_rereads r"
	             "   WHERE r.table_id = t.table_id) AS rows_to_read_again"
	           : " 0 AS rows_to_read_again";
}

/* Does the catalog know resyncs and sweeps (migrations/target/013_resync.sql)? */
static bool
has_resyncs(PGconn *conn)
{
	return catalog_has(conn, "tidemark.resyncs");
}

/* The latest resync of the replication, or null. */
static int
resync_part(PGconn *conn, const cli_options *o, json_t *out)
{
	const char *p[] = {o->slot};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, PGCONN_TARGET, "reading the resync",
	                     "SELECT r.reason, r.started_at::text, r.finished_at::text,"
	                     " r.from_lsn::text, r.resume_lsn::text, r.new_slot, r.tables,"
	                     " (SELECT count(*) FROM tidemark.tables t WHERE t.slot_name = r.slot_name"
	                     "   AND t.snapshot_requested_at >= r.requested_at AND t.state = 'streaming'"
	                     "   AND NOT EXISTS (SELECT FROM tidemark.snapshot_sweeps w"
	                     "     WHERE w.table_id = t.table_id)) AS tables_copied"
	                     " FROM tidemark.resyncs r WHERE r.slot_name = $1", 1, p, &r);

	if (rc == TM_OK)
		json_object_set_new(out, "resync", PQntuples(r) ? report_row(r, 0) : json_null());
	PQclear(r);
	return rc;
}

/* The schema-change policy in force per table, and what set it (policy.h):
 * unknown on a catalog from before stored policies. */
static const char *
policy_columns(PGconn *conn)
{
	return policy_catalog_has(conn)
	           ? ", (tidemark.policy_in_force(slot_name, t.table_id)).policy,"
	             " (tidemark.policy_in_force(slot_name, t.table_id)).set_by AS policy_set_by"
	           : ", NULL::text AS policy, NULL::text AS policy_set_by";
}

static int
target_part(const cli_options *o, PGconn *conn, json_t *out)
{
	const char *p[] = {o->slot};
	PGresult *r;
	json_t *tables = json_array();
	strbuf sql = STRBUF_INIT;
	int rc = catalog_check_registered_conn(conn, o->slot);

	json_object_set_new(out, "tables", tables);
	if (rc != TM_OK)
		return rc;
	rc = pgconn_exec(conn, PGCONN_TARGET, "reading the applied position",
	                 "SELECT applied_lsn::text, source_commit_time::text, applied_at::text,"
	                 " round(extract(epoch FROM now() - source_commit_time)::numeric, 1)::float8"
	                 "   AS seconds_since_last_commit"
	                 " FROM tidemark.progress WHERE slot_name = $1", 1, p, &r);
	if (rc == TM_OK) {
		json_object_set_new(out, "target", PQntuples(r) ? report_row(r, 0) : json_null());
		PQclear(r);
		strbuf_append(&sql,
		              "SELECT format('%s.%s', quote_ident(source_schema), quote_ident(source_table))"
		              "   AS table, state, snapshot_rows AS rows_copied, snapshot_chunks AS chunks_done,"
		              " CASE WHEN snapshot_estimate > 0 THEN snapshot_estimate END AS rows_estimate,"
		              " round((snapshot_rows / greatest(extract(epoch FROM coalesce(snapshot_finished_at,"
		              "   now()) - snapshot_started_at), 0.001))::numeric, 0)::float8 AS rows_per_second,"
		              " snapshot_started_at::text, snapshot_finished_at::text,"
		              " to_json(key_columns) AS key,"
		              " CASE WHEN cardinality(key_columns) = 0 THEN 'one read' ELSE 'chunks' END"
		              "   AS copy,");
		strbuf_append(&sql, rereads_column(conn));
		strbuf_append(&sql, has_resyncs(conn)
		              ? ", (SELECT keys_checked FROM tidemark.snapshot_sweeps w"
		                "   WHERE w.table_id = t.table_id) AS sweep_keys_checked"
		              : ", NULL::bigint AS sweep_keys_checked");
		strbuf_append(&sql, policy_columns(conn));
		/* through the row's JSON: a catalog before migration 014 has no modes */
		strbuf_append(&sql, ", coalesce(to_jsonb(t) ->> 'mode', 'mirror') AS mode,"
		              " coalesce((to_jsonb(t) ->> 'metadata_columns')::boolean, false)"
		              "   AS metadata_columns, coalesce(source_relid, 0)::bigint AS source_relid");
		strbuf_append(&sql, " FROM tidemark.tables t WHERE slot_name = $1 ORDER BY 1");
		rc = pgconn_exec(conn, PGCONN_TARGET, "reading the tables", sql.data, 1, p, &r);
	}
	strbuf_free(&sql);
	if (rc == TM_OK) {
		json_t *rows = report_rows(r);

		json_array_extend(tables, rows);
		json_decref(rows);
		PQclear(r);
	}
	if (rc == TM_OK && has_resyncs(conn))
		rc = resync_part(conn, o, out);
	return rc;
}

static long long
num(json_t *o, const char *key)
{
	return (long long) json_integer_value(json_object_get(o, key));
}

static void
print_table(json_t *t)
{
	const char *state = report_str(t, "state");
	long long rows = num(t, "rows_copied");
	size_t i;
	json_t *u;
	long long est = num(t, "rows_estimate");

	bool keyless = strcmp(report_str(t, "copy"), "one read") == 0;

	printf("  %-40s ", report_str(t, "table"));
	if (strcmp(state, "snapshot_pending") == 0)
		printf("snapshot not started%s\n", keyless ? " (no key; copy: one read)" : "");
	else if (strcmp(state, "snapshotting") == 0 && keyless)
		printf("snapshot under way (no key; copy: one read of the whole table)\n");
	else if (strcmp(state, "snapshotting") == 0) {
		printf("snapshot chunk %lld", num(t, "chunks_done") + 1);
		if (est > 0)
			printf(" (about %.0f%% of ~%lld rows)", 100.0 * (double) rows / (double) est, est);
		printf(", %lld rows copied, %.0f rows/s\n", rows,
		       json_real_value(json_object_get(t, "rows_per_second")));
	} else if (strcmp(state, "streaming") == 0 && keyless)
		printf("streaming, snapshot done (%lld rows copied; no key: copy: one read, updates and "
		       "deletes match whole rows)\n", rows);
	else if (strcmp(state, "streaming") == 0)
		printf("streaming, snapshot done (%lld rows copied)\n", rows);
	else
		printf("%s\n", state);
	if (json_is_integer(json_object_get(t, "sweep_keys_checked")))
		printf("  %-40s removing the rows the source no longer has: %lld keys looked up so far\n",
		       "", num(t, "sweep_keys_checked"));
	if (json_is_string(json_object_get(t, "policy")))
		printf("  %-40s schema-change policy %s (set by: %s)\n", "", report_str(t, "policy"),
		       report_str(t, "policy_set_by"));
	printf("  %-40s mode %s%s\n", "", report_str(t, "mode"),
	       json_is_true(json_object_get(t, "metadata_columns")) ? ", metadata columns" : "");
	json_array_foreach(json_object_get(t, "unlogged_on_source"), i, u)
		printf("  %-40s %s is UNLOGGED on the source: its changes are not in the WAL and do not "
		       "reach the target (fix: ALTER TABLE %s SET LOGGED there; the table is then copied "
		       "again)\n", "", json_string_value(u), json_string_value(u));
	if (num(t, "rows_to_read_again") > 0)
		printf("  %-40s %lld row(s) to read again (moved by key changes while being copied)\n", "",
		       num(t, "rows_to_read_again"));
}

static void
print_resync(json_t *rs)
{
	if (!json_is_object(rs))
		return;
	if (json_is_null(json_object_get(rs, "finished_at")))
		printf("resync in progress since %s (%s): %lld of %lld table(s) copied again in place; "
		       "the stream resumed at %s%s\n", report_str(rs, "started_at"),
		       report_str(rs, "reason"), num(rs, "tables_copied"), num(rs, "tables"),
		       report_str(rs, "resume_lsn"),
		       json_is_true(json_object_get(rs, "new_slot")) ? " (slot created again)" : "");
	else
		printf("last resync: %s to %s (%s), %lld table(s) copied again\n",
		       report_str(rs, "started_at"), report_str(rs, "finished_at"),
		       report_str(rs, "reason"), num(rs, "tables"));
}

static void
print_text(json_t *doc)
{
	json_t *src = json_object_get(doc, "source");
	json_t *tgt = json_object_get(doc, "target");
	char name[48];
	size_t i;
	json_t *t;

	printf("slot %s: %s, wal_status %s, retains %lld bytes of WAL; source at %s\n",
	       report_str(src, "slot"), json_is_true(json_object_get(src, "active")) ? "active" : "inactive",
	       report_str(src, "wal_status"), num(src, "retained_wal_bytes"), report_str(src, "source_lsn"));
	printf("applied up to %s (source commit time %s), lag %lld bytes, %.1f s\n",
	       report_str(tgt, "applied_lsn"), report_str(tgt, "source_commit_time"),
	       num(doc, "lag_bytes"), json_number_value(json_object_get(doc, "lag_seconds")));
	print_resync(json_object_get(doc, "resync"));
	if (json_is_integer(json_object_get(doc, "capture_version")) &&
	    num(doc, "capture_version") < num(doc, "capture_latest"))
		printf("DDL capture: installed by an older tidemark (%s; this one's: %lld): the later "
		       "fixes are not in force (fix: `tidemark setup` again as a superuser)\n",
		       source_query_capture_version_name((int) num(doc, "capture_version"), name,
		                                         sizeof name),
		       num(doc, "capture_latest"));
	json_array_foreach(json_object_get(doc, "capture_gaps"), i, t)
		printf("DDL capture: event trigger %s: schema changes are not captured (fix: "
		       "`tidemark setup` again as a superuser, or ALTER EVENT TRIGGER ... ENABLE "
		       "ALWAYS)\n", json_string_value(t));
	printf("tables:\n");
	json_array_foreach(json_object_get(doc, "tables"), i, t)
		print_table(t);
}

static void
add_lag(json_t *doc)
{
	tm_lsn src = 0, applied = 0;

	json_t *since = json_object_get(json_object_get(doc, "target"), "seconds_since_last_commit");

	if (lsn_parse(report_str(json_object_get(doc, "source"), "source_lsn"), &src) &&
	    lsn_parse(report_str(json_object_get(doc, "target"), "applied_lsn"), &applied)) {
		json_object_set_new(doc, "lag_bytes",
		                    json_integer(src > applied ? (json_int_t) (src - applied) : 0));
		/* behind: the age of the last applied commit; caught up: none */
		json_object_set_new(doc, "lag_seconds",
		                    src > applied && json_is_number(since)
		                        ? json_real(json_number_value(since)) : json_real(0));
	} else {
		json_object_set_new(doc, "lag_bytes", json_null());
		json_object_set_new(doc, "lag_seconds", json_null());
	}
}

/* --all: every pipeline of the target, from the target alone. */
static void
print_pipeline(json_t *p)
{
	json_t *tschema = json_object_get(p, "target_schema");

	printf("pipeline %s: ", report_str(p, "pipeline"));
	if (json_is_string(json_object_get(p, "source_database")))
		printf("database %s of server %s (%s)", report_str(p, "source_database"),
		       report_str(p, "source_system_id"), report_str(p, "source_address"));
	else
		printf("source not recorded yet (set up before sources were recorded)");
	if (json_is_string(tschema))
		printf(", tables into schema %s", json_string_value(tschema));
	if (json_is_object(json_object_get(p, "schema_map"))) {
		const char *from;
		json_t *to;

		json_object_foreach(json_object_get(p, "schema_map"), from, to)
			printf(", %s into %s", from, json_string_value(to));
	}
	printf("\n  applied up to %s (source commit time %s), %lld table(s), %lld being copied\n",
	       report_str(p, "applied_lsn"), report_str(p, "source_commit_time"), num(p, "tables"),
	       num(p, "tables_copying"));
}

static int
pipelines_part(PGconn *conn, bool json)
{
	PGresult *r = NULL;
	int rc = catalog_check_registered_conn(conn, NULL);

	if (rc == TM_OK)
		rc = pgconn_exec(conn, PGCONN_TARGET, "looking for tidemark.schema_map",
		                 "SELECT to_regclass('tidemark.schema_map') IS NOT NULL", 0, NULL, &r);
	if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
		log_error("target: the catalog is from an older tidemark that did not record pipelines. "
		          "Fix: `tidemark run` (or `setup`) brings it up to date; until then `status` "
		          "without --all shows one pipeline");
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	r = NULL;
	if (rc == TM_OK)
		rc = pgconn_exec(
			conn, PGCONN_TARGET, "reading the pipelines",
			"SELECT p.slot_name AS pipeline, p.source_database, p.source_system_id,"
			" p.source_address, p.target_schema,"
			" (SELECT json_object_agg(m.source_schema, m.target_schema ORDER BY m.source_schema)"
			"   FROM tidemark.schema_map m WHERE m.slot_name = p.slot_name) AS schema_map,"
			" p.applied_lsn::text, p.source_commit_time::text, p.applied_at::text,"
			" (SELECT count(*) FROM tidemark.tables t WHERE t.slot_name = p.slot_name"
			"   AND t.state <> 'dropped') AS tables,"
			" (SELECT count(*) FROM tidemark.tables t WHERE t.slot_name = p.slot_name"
			"   AND t.state IN ('snapshot_pending', 'snapshotting')) AS tables_copying"
			" FROM tidemark.progress p ORDER BY 1", 0, NULL, &r);
	if (rc == TM_OK) {
		json_t *rows = report_rows(r);
		size_t i;
		json_t *p;

		if (json)
			report_print_json(rows);
		else
			json_array_foreach(rows, i, p)
				print_pipeline(p);
		json_decref(rows);
	}
	PQclear(r);
	return rc;
}

int
cmd_status(const cli_options *o)
{
	json_t *doc = json_object();
	PGconn *target = NULL;
	int rc = cli_require(o, !o->all, true);

	if (rc == TM_OK)
		rc = pgconn_open(o->target, PGCONN_TARGET, "status", false, &target);
	if (rc == TM_OK && o->all) {
		rc = pipelines_part(target, o->json);
		PQfinish(target);
		json_decref(doc);
		return rc;
	}
	if (rc == TM_OK)
		rc = target_part(o, target, doc);
	if (rc == TM_OK)
		rc = source_part(o, target, doc);
	PQfinish(target);
	if (rc == TM_OK) {
		add_lag(doc);
		if (o->json)
			report_print_json(doc);
		else
			print_text(doc);
	}
	json_decref(doc);
	return rc;
}
