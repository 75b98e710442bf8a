/*
 * cmd_schema.c: `tidemark schema SCHEMA.TABLE [--json]`: a table's schema
 * versions, each with the log position from which it applies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "commands.h"
#include "ident.h"
#include "log.h"
#include "pgconn.h"
#include "policy.h"
#include "report.h"

/* " collate X", " generated always as (...) stored", and on a line of its
 * own how the target column differs: "on the target: T; why" */
static void
print_target(json_t *c)
{
	const char *type = report_str(c, "type"), *target = report_str(c, "target_type");
	json_t *coll = json_object_get(c, "collation");

	if (json_is_object(coll) && !json_is_true(json_object_get(coll, "default")))
		printf(" collate %s.%s", report_str(coll, "schema"), report_str(coll, "name"));
	if (json_is_string(json_object_get(c, "generated")))
		printf(" generated always as (%s) stored", report_str(c, "generated"));
	if ((json_is_string(json_object_get(c, "target_type")) && strcmp(type, target) != 0) ||
	    json_is_string(json_object_get(c, "kept_as")))
		printf("\n%37s on the target: %s%s%s", "", target,
		       json_is_string(json_object_get(c, "kept_as")) ? "; " : "",
		       json_is_string(json_object_get(c, "kept_as")) ? report_str(c, "kept_as") : "");
}

static void
print_version(json_t *v)
{
	size_t i;
	json_t *c;

	printf("version %lld, from %s (recorded %s)\n",
	       (long long) json_integer_value(json_object_get(v, "version")),
	       report_str(v, "valid_from"), report_str(v, "recorded_at"));
	json_array_foreach(json_object_get(v, "columns"), i, c) {
		printf("  %3lld  %-30s %s%s%s", (long long) json_integer_value(json_object_get(c, "attnum")),
		       report_str(c, "name"), report_str(c, "type"),
		       json_is_true(json_object_get(c, "not_null")) ? " not null" : "",
		       json_is_true(json_object_get(c, "key")) ? " key" : "");
		print_target(c);
		printf("\n");
	}
}

/* {"same": true|false|null, "reason": ...} from the first row */
static json_t *
key_order_json(PGresult *r)
{
	return json_pack("{s:o, s:o}", "same",
	                 PQgetisnull(r, 0, 5) ? json_null()
	                                      : json_boolean(strcmp(PQgetvalue(r, 0, 5), "t") == 0),
	                 "reason", PQgetisnull(r, 0, 6) ? json_null() : json_string(PQgetvalue(r, 0, 6)));
}

/* {"policy": P, "set_by": ...}: the schema-change policy in force for the
 * table (policy.h); null on a catalog from before stored policies. */
static int
policy_json(PGconn *conn, const char *const *p, json_t **out)
{
	PGresult *r = NULL;
	int rc = TM_OK;

	*out = json_null();
	if (!policy_catalog_has(conn))
		return TM_OK;
	rc = pgconn_exec(conn, PGCONN_TARGET, "reading the table's policy",
	                 "SELECT f.policy, f.set_by FROM tidemark.tables t,"
	                 " tidemark.policy_in_force(t.slot_name, t.table_id) f WHERE t.slot_name = $1"
	                 " AND t.source_schema = $2 AND t.source_table = $3", 3, p, &r);
	if (rc == TM_OK && PQntuples(r) == 1) {
		json_decref(*out);
		*out = report_row(r, 0);
	}
	PQclear(r);
	return rc;
}

static int
show(PGconn *conn, const cli_options *o, const char *schema, const char *name)
{
	const char *p[] = {o->slot, schema, name};
	PGresult *r;
	json_t *doc, *policy;
	int rc = pgconn_exec(conn, PGCONN_TARGET, "reading schema versions",
	                     "SELECT v.version, v.valid_from_lsn::text AS valid_from,"
	                     " v.created_at::text AS recorded_at, v.columns,"
	                     " format('%I.%I', t.target_schema, t.target_table) AS target,"
	                     /* through the row's JSON: a catalog before migration 005 lacks them */
	                     " (to_jsonb(t) ->> 'key_order_same')::boolean AS key_order_same,"
	                     " to_jsonb(t) ->> 'key_order_reason' AS key_order_reason,"
	                     " cardinality(t.key_columns) AS key_columns,"
	                     /* and before migration 014 the modes */
	                     " coalesce(to_jsonb(t) ->> 'mode', 'mirror') AS mode,"
	                     " coalesce((to_jsonb(t) ->> 'metadata_columns')::boolean, false)"
	                     "   AS metadata_columns"
	                     " FROM tidemark.tables t JOIN tidemark.schema_versions v USING (table_id)"
	                     " WHERE t.slot_name = $1 AND t.source_schema = $2 AND t.source_table = $3"
	                     " ORDER BY v.version", 3, p, &r);

	if (rc != TM_OK)
		return rc;
	if (PQntuples(r) == 0) {
		log_error("%s.%s is not replicated through slot \"%s\"", schema, name, o->slot);
		PQclear(r);
		return TM_EXIT_CONFIG;
	}
	if ((rc = policy_json(conn, p, &policy)) != TM_OK) {
		PQclear(r);
		return rc;
	}
	doc = json_pack("{s:s, s:s, s:o, s:o, s:s, s:b, s:o}", "table", name, "schema", schema,
	                "key_order", key_order_json(r), "policy", policy, "mode", PQgetvalue(r, 0, 8),
	                "metadata_columns", strcmp(PQgetvalue(r, 0, 9), "t") == 0, "versions",
	                report_rows(r));
	if (o->json)
		report_print_json(doc);
	else {
		size_t i;
		json_t *v;

		printf("%s.%s (on the target: %s)%s\n", schema, name, PQgetvalue(r, 0, 4),
		       strcmp(PQgetvalue(r, 0, 7), "0") == 0
		           ? "; no key: rows matched by all their columns, copy: one read" : "");
		if (strcmp(PQgetvalue(r, 0, 7), "0") != 0)
			printf("key order on the target: %s%s\n",
			       PQgetisnull(r, 0, 5) ? "not known yet"
			       : strcmp(PQgetvalue(r, 0, 5), "t") == 0 ? "the same as the source's"
			                                              : "differs: ",
			       PQgetisnull(r, 0, 6) ? "" : PQgetvalue(r, 0, 6));
		if (json_is_object(policy))
			printf("schema-change policy: %s (set by: %s)\n", report_str(policy, "policy"),
			       report_str(policy, "set_by"));
		printf("mode: %s%s\n", PQgetvalue(r, 0, 8),
		       strcmp(PQgetvalue(r, 0, 9), "t") == 0 ? ", metadata columns" : "");
		json_array_foreach(json_object_get(doc, "versions"), i, v)
			print_version(v);
	}
	json_decref(doc);
	PQclear(r);
	return TM_OK;
}

int
cmd_schema(const cli_options *o)
{
	char *schema, *name;
	tm_error err;
	PGconn *conn;
	int rc = cli_require(o, false, true);

	if (rc != TM_OK)
		return rc;
	if (o->ntables != 1) {
		fprintf(stderr, "tidemark schema: name one table\n");
		return TM_EXIT_USAGE;
	}
	if (ident_parse_qualified(o->tables[0], "public", &schema, &name, &err) != 0) {
		log_error("%s: %s", o->tables[0], err.msg);
		return TM_EXIT_USAGE;
	}
	rc = pgconn_open(o->target, PGCONN_TARGET, "schema", false, &conn);
	if (rc == TM_OK)
		rc = catalog_check_registered_conn(conn, o->slot);
	if (rc == TM_OK)
		rc = show(conn, o, schema, name);
	PQfinish(conn);
	free(schema);
	free(name);
	return rc;
}
