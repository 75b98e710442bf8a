/*
 * cmd_snapshot.c: `tidemark snapshot SCHEMA.TABLE...`: marks tables to be
 * copied again. A running `run` notices within seconds (or the next one
 * starts with them) and copies them chunk by chunk while the stream goes
 * on; rows the source no longer has are removed from the target.
 */
#include <stdio.h>
#include <stdlib.h>

#include "catalog.h"
#include "commands.h"
#include "ident.h"
#include "log.h"
#include "pgconn.h"

static int
request_one(PGconn *conn, const cli_options *o, const char *text)
{
	char *schema, *name;
	tm_error err;
	PGresult *r;
	int rc;

	if (ident_parse_qualified(text, "public", &schema, &name, &err) != 0) {
		log_error("%s: %s", text, err.msg);
		return TM_EXIT_USAGE;
	}
	{
		const char *p[] = {o->slot, schema, name};

		rc = pgconn_exec(conn, PGCONN_TARGET, "requesting a snapshot",
		                 "UPDATE tidemark.tables SET state = 'snapshot_pending',"
		                 " snapshot_last_key = NULL, snapshot_rows = 0, snapshot_chunks = 0,"
		                 " snapshot_started_at = NULL, snapshot_finished_at = NULL,"
		                 " snapshot_requested_at = clock_timestamp()"
		                 " WHERE slot_name = $1 AND source_schema = $2 AND source_table = $3"
		                 " AND state <> 'dropped' RETURNING table_id", 3, p, &r);
	}
	if (rc == TM_OK) {
		if (PQntuples(r) == 0) {
			log_error("%s.%s is not replicated through slot \"%s\" (see tidemark status)", schema,
			          name, o->slot);
			rc = TM_EXIT_CONFIG;
		} else
			printf("tidemark: %s.%s will be copied again by `tidemark run`\n", schema, name);
		PQclear(r);
	}
	free(schema);
	free(name);
	return rc;
}

int
cmd_snapshot(const cli_options *o)
{
	PGconn *conn;
	int rc = cli_require(o, false, true);

	if (rc != TM_OK)
		return rc;
	if (o->ntables == 0) {
		fprintf(stderr, "tidemark snapshot: name at least one table\n");
		return TM_EXIT_USAGE;
	}
	rc = pgconn_open(o->target, PGCONN_TARGET, "snapshot", false, &conn);
	if (rc == TM_OK)
		rc = catalog_check_registered_conn(conn, o->slot);
	for (int i = 0; rc == TM_OK && i < o->ntables; i++)
		rc = request_one(conn, o, o->tables[i]);
	PQfinish(conn);
	return rc;
}
