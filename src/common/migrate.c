#include "migrate.h"

#include <stdio.h>
#include <stdlib.h>

#include "log.h"

/* Serialises concurrent `setup` runs against one server. */
#define MIGRATE_LOCK_KEY "7469646d61726b" /* "tidemark" */

static const char *const bootstrap_sql =
	"CREATE SCHEMA IF NOT EXISTS tidemark;"
	"CREATE TABLE IF NOT EXISTS tidemark.migrations ("
	"  version integer PRIMARY KEY,"
	"  name text NOT NULL,"
	"  applied_at timestamptz NOT NULL DEFAULT now())";

static int
script_applied(PGconn *conn, pgconn_side side, const migrate_script *s, int *applied)
{
	char ver[16];
	const char *params[] = {ver};
	PGresult *res;
	int rc;

	snprintf(ver, sizeof ver, "%d", s->version);
	rc = pgconn_exec(conn, side, "reading tidemark.migrations",
	                 "SELECT 1 FROM tidemark.migrations WHERE version = $1", 1, params, &res);
	if (rc != TM_OK)
		return rc;
	*applied = PQntuples(res) > 0;
	PQclear(res);
	return TM_OK;
}

static int
script_run(PGconn *conn, pgconn_side side, const migrate_script *s)
{
	char ver[16];
	char what[160];
	const char *params[] = {ver, s->name};
	int rc;

	snprintf(ver, sizeof ver, "%d", s->version);
	snprintf(what, sizeof what, "applying migration %s", s->name);
	rc = pgconn_command(conn, side, "starting a migration", "BEGIN", 0, NULL);
	if (rc == TM_OK)
		rc = pgconn_script(conn, side, what, s->sql);
	if (rc == TM_OK)
		rc = pgconn_command(conn, side, "recording a migration",
		                    "INSERT INTO tidemark.migrations (version, name) VALUES ($1, $2)",
		                    2, params);
	if (rc == TM_OK)
		rc = pgconn_command(conn, side, "committing a migration", "COMMIT", 0, NULL);
	if (rc != TM_OK) {
		PQclear(PQexec(conn, "ROLLBACK"));
		return rc;
	}
	log_info("%s: applied migration %s", pgconn_side_name(side), s->name);
	return TM_OK;
}

int
migrate_latest(pgconn_side side)
{
	const migrate_script *scripts =
		side == PGCONN_SOURCE ? migrate_source_scripts : migrate_target_scripts;
	int latest = 0;

	for (const migrate_script *s = scripts; s->name != NULL; s++)
		if (s->version > latest)
			latest = s->version;
	return latest;
}

int
migrate_apply(PGconn *conn, pgconn_side side, int *napplied)
{
	const migrate_script *scripts =
		side == PGCONN_SOURCE ? migrate_source_scripts : migrate_target_scripts;
	const char *lock_params[] = {MIGRATE_LOCK_KEY};
	int rc;

	if (napplied != NULL)
		*napplied = 0;
	rc = pgconn_command(conn, side, "taking the migration lock",
	                    "SELECT pg_advisory_lock(('x' || $1)::bit(64)::bigint)", 1, lock_params);
	if (rc != TM_OK)
		return rc;
	rc = pgconn_script(conn, side, "creating the tidemark schema", bootstrap_sql);
	for (const migrate_script *s = scripts; rc == TM_OK && s->name != NULL; s++) {
		int applied = 0;

		rc = script_applied(conn, side, s, &applied);
		if (rc == TM_OK && !applied)
			rc = script_run(conn, side, s);
		if (rc == TM_OK && !applied && napplied != NULL)
			(*napplied)++;
	}
	PQclear(PQexecParams(conn, "SELECT pg_advisory_unlock(('x' || $1)::bit(64)::bigint)", 1, NULL,
	                     lock_params, NULL, NULL, 0));
	return rc;
}

int
migrate_apply_to(const char *conninfo, pgconn_side side)
{
	PGconn *conn = NULL;
	int rc = pgconn_open(conninfo, side, "setup", false, &conn);

	if (rc == TM_OK)
		rc = migrate_apply(conn, side, NULL);
	PQfinish(conn);
	return rc;
}
