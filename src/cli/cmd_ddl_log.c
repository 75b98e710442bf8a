/*
 * cmd_ddl_log.c: `tidemark ddl-log [--table SCHEMA.TABLE] [--since POSITION]
 * [--json] [--all]`: the DDL audit log of one pipeline, or of all.
 */
#include <stdio.h>
#include <stdlib.h>

#include "catalog.h"
#include "commands.h"
#include "ident.h"
#include "log.h"
#include "lsn.h"
#include "pgconn.h"
#include "report.h"

static void
print_entry(json_t *e)
{
	if (json_is_string(json_object_get(e, "pipeline")))
		printf("pipeline %s  ", report_str(e, "pipeline"));
	printf("%s  xid %lld  %s  %s  %s\n", report_str(e, "position"),
	       (long long) json_integer_value(json_object_get(e, "xid")), report_str(e, "ddl_time"),
	       report_str(e, "source_user"), report_str(e, "command_tag"));
	printf("  statement:      %s\n", report_str(e, "statement"));
	printf("  classification: %s\n", report_str(e, "classification"));
	printf("  tables:         %s\n", report_str(e, "tables"));
	if (json_is_integer(json_object_get(e, "schema_version")))
		printf("  schema version: %lld\n",
		       (long long) json_integer_value(json_object_get(e, "schema_version")));
	printf("  on the target:  %s\n", report_str(e, "target_action"));
	printf("  fingerprint:    %s\n\n", report_str(e, "fingerprint"));
}

static int
list(PGconn *conn, const cli_options *o, const char *table, const char *since)
{
	const char *p[] = {o->slot, table, since, o->all ? "t" : "f"};
	PGresult *r;
	json_t *rows;
	int rc = pgconn_exec(conn, PGCONN_TARGET, "reading the DDL audit log",
	                     "SELECT CASE WHEN $4::bool THEN slot_name END AS pipeline,"
	                     " position::text, xid, commit_time::text, ddl_time::text,"
	                     " source_user, command_tag, statement, fingerprint, classification,"
	                     " array_to_string(tables, ', ') AS tables, schema_version, target_action"
	                     " FROM tidemark.ddl_log WHERE ($4::bool OR slot_name = $1)"
	                     " AND ($2::text IS NULL OR $2 = ANY (tables))"
	                     " AND ($3::pg_lsn IS NULL OR position >= $3::pg_lsn)"
	                     " ORDER BY slot_name, position, ddl_id", 4, p, &r);

	if (rc != TM_OK)
		return rc;
	rows = report_rows(r);
	if (o->json)
		report_print_json(rows);
	else {
		size_t i;
		json_t *e;

		json_array_foreach(rows, i, e)
			print_entry(e);
		printf("%d DDL command(s)\n", PQntuples(r));
	}
	json_decref(rows);
	PQclear(r);
	return TM_OK;
}

int
cmd_ddl_log(const cli_options *o)
{
	char *schema = NULL, *name = NULL, *table = NULL;
	tm_lsn since;
	tm_error err;
	PGconn *conn;
	int rc = cli_require(o, false, true);

	if (rc != TM_OK)
		return rc;
	if (o->since != NULL && !lsn_parse(o->since, &since)) {
		fprintf(stderr, "tidemark ddl-log: --since takes a position such as 0/16B3740\n");
		return TM_EXIT_USAGE;
	}
	if (o->ntables > 0) {
		if (ident_parse_qualified(o->tables[0], "public", &schema, &name, &err) != 0) {
			log_error("%s: %s", o->tables[0], err.msg);
			return TM_EXIT_USAGE;
		}
		if (asprintf(&table, "%s.%s", schema, name) < 0)
			abort();
	}
	rc = pgconn_open(o->target, PGCONN_TARGET, "ddl-log", false, &conn);
	if (rc == TM_OK)
		rc = catalog_check_registered_conn(conn, o->all ? NULL : o->slot);
	if (rc == TM_OK)
		rc = list(conn, o, table, o->since);
	PQfinish(conn);
	free(schema);
	free(name);
	free(table);
	return rc;
}
