/*
 * cmd_teardown.c: `tidemark teardown`: removes what setup made on the
 * source (slot, publication, DDL capture objects), and on request the
 * pipeline's part of the tidemark catalog on the target (all of it when no
 * other pipeline is left there). Replicated target tables are kept.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"
#include "pgconn.h"
#include "pipeline.h"
#include "strbuf.h"

/* Other logical slots of this database: maybe other pipelines, which need
 * the capture objects. *r: one row, their names or "" (caller PQclear). */
static int
other_slots(PGconn *conn, const char *slot, PGresult **r)
{
	const char *p[] = {slot};

	return pgconn_exec(conn, PGCONN_SOURCE, "looking for other pipelines' slots",
	                   "SELECT coalesce(string_agg(quote_literal(slot_name), ', '"
	                   "   ORDER BY slot_name), '') FROM pg_replication_slots"
	                   " WHERE database = current_database() AND plugin = 'pgoutput'"
	                   " AND slot_name <> $1", 1, p, r);
}

static int
drop_capture(PGconn *conn, const cli_options *o)
{
	PGresult *r = NULL;
	int rc = other_slots(conn, o->slot, &r);

	if (rc == TM_OK && PQgetvalue(r, 0, 0)[0] != '\0')
		log_info("source: DDL capture objects kept: slot(s) %s of this database may be other "
		         "pipelines', which need them (the teardown of the last one removes them)",
		         PQgetvalue(r, 0, 0));
	else if (rc == TM_OK)
		rc = pgconn_script(conn, PGCONN_SOURCE, "dropping the DDL capture objects",
		                   "DROP EVENT TRIGGER IF EXISTS tidemark_ddl_end;"
		                   "DROP EVENT TRIGGER IF EXISTS tidemark_sql_drop;"
		                   "DROP EVENT TRIGGER IF EXISTS tidemark_table_rewrite;"
		                   "DROP EVENT TRIGGER IF EXISTS tidemark_partition_truncate;"
		                   /* with the truncate triggers of partitioned tables */
		                   "DROP SCHEMA IF EXISTS tidemark CASCADE");
	PQclear(r);
	return rc;
}

static int
drop_source(PGconn *conn, const cli_options *o)
{
	const char *p[] = {o->slot};
	strbuf sql = STRBUF_INIT;
	int rc = pgconn_command(conn, PGCONN_SOURCE, "dropping the replication slot",
	                        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
	                        " WHERE slot_name = $1", 1, p);

	strbuf_append(&sql, "DROP PUBLICATION IF EXISTS ");
	strbuf_append_ident(&sql, o->publication);
	if (rc == TM_OK)
		rc = pgconn_command(conn, PGCONN_SOURCE, "dropping the publication", sql.data, 0, NULL);
	if (rc == TM_OK)
		rc = drop_capture(conn, o);
	if (rc == TM_OK)
		log_info("source: slot \"%s\" and publication \"%s\" removed", o->slot, o->publication);
	strbuf_free(&sql);
	return rc;
}

/* The pipeline's rows in every catalog table that names pipelines (the
 * rest goes with them, by foreign key), its progress row last. */
static int
forget_pipeline(PGconn *conn, const char *slot)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, PGCONN_TARGET, "listing the catalog's tables",
	                     "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
	                     " WHERE c.relnamespace = 'tidemark'::regnamespace AND c.relkind = 'r'"
	                     " AND a.attname = 'slot_name' AND NOT a.attisdropped"
	                     " ORDER BY c.relname = 'progress', c.relname", 0, NULL, &r);

	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++) {
		strbuf sql = STRBUF_INIT;

		strbuf_append(&sql, "DELETE FROM tidemark.");
		strbuf_append_ident(&sql, PQgetvalue(r, i, 0));
		strbuf_append(&sql, " WHERE slot_name = $1");
		rc = pgconn_command(conn, PGCONN_TARGET, "removing the pipeline from the catalog",
		                    strbuf_str(&sql), 1, p);
		strbuf_free(&sql);
	}
	PQclear(r);
	return rc;
}

static int
drop_target(PGconn *conn, const cli_options *o)
{
	const char *p[] = {o->slot};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, PGCONN_TARGET, "looking for other pipelines",
	                     "SELECT CASE WHEN to_regclass('tidemark.progress') IS NOT NULL THEN"
	                     " (SELECT coalesce(string_agg(quote_literal(slot_name), ', '), '')"
	                     "   FROM tidemark.progress WHERE slot_name <> $1) ELSE '' END", 1, p, &r);

	if (rc == TM_OK && PQgetvalue(r, 0, 0)[0] != '\0') {
		rc = forget_pipeline(conn, o->slot);
		if (rc == TM_OK)
			log_info("target: pipeline \"%s\" removed from the tidemark catalog, which other "
			         "pipelines (%s) keep using (replicated tables kept)", o->slot,
			         PQgetvalue(r, 0, 0));
	} else if (rc == TM_OK) {
		rc = pgconn_script(conn, PGCONN_TARGET, "dropping the tidemark catalog",
		                   "DROP SCHEMA IF EXISTS tidemark CASCADE");
		if (rc == TM_OK)
			log_info("target: tidemark catalog removed (replicated tables kept)");
	}
	PQclear(r);
	return rc;
}

int
cmd_teardown(const cli_options *o)
{
	PGconn *src = NULL, *target = NULL;
	int rc = cli_require(o, true, o->drop_target);

	if (rc == TM_OK)
		rc = pgconn_open(o->source, PGCONN_SOURCE, "teardown", false, &src);
	/* with a target: it must be this source's pipeline that is removed */
	if (rc == TM_OK && o->target != NULL)
		rc = pgconn_open(o->target, PGCONN_TARGET, "teardown", false, &target);
	if (rc == TM_OK && target != NULL)
		rc = pipeline_check((pipeline_target){NULL, target}, o->slot, src, o->source, false);
	if (rc == TM_OK)
		rc = drop_source(src, o);
	if (rc == TM_OK && o->drop_target)
		rc = drop_target(target, o);
	PQfinish(src);
	PQfinish(target);
	return rc;
}
