/*
 * cmd_schema.c: `tidemark schema SCHEMA.TABLE [--json]`: a table's schema
 * versions, each with the log position from which it applies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "ident.h"
#include "log.h"
#include "pgconn.h"
#include "report.h"

static void
print_version(json_t *v)
{
	size_t i;
	json_t *c;

	printf("version %lld, from %s (recorded %s)\n",
	       (long long) json_integer_value(json_object_get(v, "version")),
	       report_str(v, "valid_from"), report_str(v, "recorded_at"));
	json_array_foreach(json_object_get(v, "columns"), i, c)
		printf("  %3lld  %-30s %s%s%s\n", (long long) json_integer_value(json_object_get(c, "attnum")),
		       report_str(c, "name"), report_str(c, "type"),
		       json_is_true(json_object_get(c, "not_null")) ? " not null" : "",
		       json_is_true(json_object_get(c, "key")) ? " key" : "");
}

static int
show(PGconn *conn, const cli_options *o, const char *schema, const char *name)
{
	const char *p[] = {o->slot, schema, name};
	PGresult *r;
	json_t *doc;
	int rc = pgconn_exec(conn, PGCONN_TARGET, "reading schema versions",
	                     "SELECT v.version, v.valid_from_lsn::text AS valid_from,"
	                     " v.created_at::text AS recorded_at, v.columns,"
	                     " format('%I.%I', t.target_schema, t.target_table) AS target,"
	                     " cardinality(t.key_columns) AS key_columns"
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
	doc = json_pack("{s:s, s:s, s:o}", "table", name, "schema", schema, "versions", report_rows(r));
	if (o->json)
		report_print_json(doc);
	else {
		size_t i;
		json_t *v;

		printf("%s.%s (on the target: %s)%s\n", schema, name, PQgetvalue(r, 0, 4),
		       strcmp(PQgetvalue(r, 0, 5), "0") == 0
		           ? "; no key: rows matched by all their columns, copy: one read" : "");
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
		rc = show(conn, o, schema, name);
	PQfinish(conn);
	free(schema);
	free(name);
	return rc;
}
