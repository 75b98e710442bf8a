/*
 * cmd_teardown.c: `tidemark teardown`: removes what setup made on the
 * source (slot, publication, DDL capture objects), and on request the
 * tidemark catalog on the target. Replicated target tables are kept.
 */
#include <stdio.h>

#include "commands.h"
#include "log.h"
#include "pgconn.h"
#include "strbuf.h"

static int
drop_source(const cli_options *o)
{
	const char *p[] = {o->slot};
	strbuf sql = STRBUF_INIT;
	PGconn *conn;
	int rc = pgconn_open(o->source, PGCONN_SOURCE, "teardown", false, &conn);

	if (rc == TM_OK)
		rc = pgconn_command(conn, PGCONN_SOURCE, "dropping the replication slot",
		                    "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
		                    " WHERE slot_name = $1", 1, p);
	strbuf_append(&sql, "DROP PUBLICATION IF EXISTS ");
	strbuf_append_ident(&sql, o->publication);
	if (rc == TM_OK)
		rc = pgconn_command(conn, PGCONN_SOURCE, "dropping the publication", sql.data, 0, NULL);
	if (rc == TM_OK)
		rc = pgconn_script(conn, PGCONN_SOURCE, "dropping the DDL capture objects",
		                   "DROP EVENT TRIGGER IF EXISTS tidemark_ddl_end;"
		                   "DROP EVENT TRIGGER IF EXISTS tidemark_sql_drop;"
		                   "DROP EVENT TRIGGER IF EXISTS tidemark_table_rewrite;"
		                   "DROP EVENT TRIGGER IF EXISTS tidemark_partition_truncate;"
		                   /* with the truncate triggers of partitioned tables */
		                   "DROP SCHEMA IF EXISTS tidemark CASCADE");
	if (rc == TM_OK)
		log_info("source: slot \"%s\", publication \"%s\" and capture objects removed", o->slot,
		         o->publication);
	strbuf_free(&sql);
	PQfinish(conn);
	return rc;
}

static int
drop_target(const cli_options *o)
{
	PGconn *conn;
	int rc = pgconn_open(o->target, PGCONN_TARGET, "teardown", false, &conn);

	if (rc == TM_OK)
		rc = pgconn_script(conn, PGCONN_TARGET, "dropping the tidemark catalog",
		                   "DROP SCHEMA IF EXISTS tidemark CASCADE");
	if (rc == TM_OK)
		log_info("target: tidemark catalog removed (replicated tables kept)");
	PQfinish(conn);
	return rc;
}

int
cmd_teardown(const cli_options *o)
{
	int rc = cli_require(o, true, o->drop_target);

	if (rc == TM_OK)
		rc = drop_source(o);
	if (rc == TM_OK && o->drop_target)
		rc = drop_target(o);
	return rc;
}
