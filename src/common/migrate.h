/*
 * migrate.h: the versioned SQL under migrations/, compiled into the binary
 * (cmake/embed_migrations.cmake), applied each once and recorded in
 * tidemark.migrations on the server it belongs to.
 */
#ifndef TIDEMARK_MIGRATE_H
#define TIDEMARK_MIGRATE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "pgconn.h"

typedef struct migrate_script {
	int version;
	const char *name;
	const char *sql;
} migrate_script;

/* Terminated by an entry with name == NULL; sorted by version. */
extern const migrate_script migrate_source_scripts[];
extern const migrate_script migrate_target_scripts[];

/* The highest version among the scripts of `side` (0 when none). */
int migrate_latest(pgconn_side side);

/* Applies the scripts of `side` not yet recorded on conn, each in its own
 * transaction with its record, under an advisory lock. Returns a status;
 * *napplied (may be NULL): how many scripts it applied. */
int migrate_apply(PGconn *conn, pgconn_side side, int *napplied);
/* The same over a connection of its own (role "setup"). */
int migrate_apply_to(const char *conninfo, pgconn_side side);

#endif
