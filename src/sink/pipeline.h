/*
 * pipeline.h: a pipeline is one replication into the target database,
 * named by its slot (a row of tidemark.progress). It belongs to one source
 * database, which setup records (migrations/target/012_pipelines.sql) and
 * every command that meets the source checks before it changes anything:
 * a second source is never streamed from the first one's position, nor
 * merged into its tables. Several pipelines share one target database side
 * by side; each one's tables go to the target schema its mapping says
 * (schema_map.h).
 */
#ifndef TIDEMARK_PIPELINE_H
#define TIDEMARK_PIPELINE_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "pgconn.h"
#include "schema_map.h"
#include "sink.h"

/* Which source database a connection is on. Strings owned. */
typedef struct pipeline_source {
	char *system_id; /* pg_control_system().system_identifier: a promoted
	                  * physical standby has its primary's */
	char *database;
	char *database_oid; /* its oid as text; NULL when not known (recorded by
	                  * an older tidemark): the name decides then */
	char *address;   /* host, port, database and user of the connection
	                  * string: for messages, never a password */
} pipeline_source;

/* A pipeline as the target records it. Strings owned; NULL when unknown. */
typedef struct pipeline_info {
	bool exists;     /* the target has a progress row for the slot */
	bool recorded;   /* and it records its source (set up by a tidemark
	                  * that records them) */
	pipeline_source source;
	schema_map map;  /* the target schemas of its source schemas */
} pipeline_info;

/* A target, through the apply connection (run) or a plain one. */
typedef struct pipeline_target {
	sink *sink;
	PGconn *conn;
} pipeline_target;

/* Which server and database conn (of side, for the errors) is connected
 * to; *out filled (pipeline_source_clear). */
int pipeline_source_read(PGconn *conn, pgconn_side side, const char *conninfo,
                         pipeline_source *out);
void pipeline_source_clear(pipeline_source *p);
/* The same database of the same server: by oid where both are known (a
 * database keeps its oid when renamed), else by name. */
bool pipeline_source_same(const pipeline_source *a, const pipeline_source *b);

/* Reads slot's pipeline; a target without a catalog, or with one from
 * before pipelines were recorded, gives what it has (exists, recorded
 * false). */
int pipeline_load(pipeline_target t, const char *slot, pipeline_info *out);
void pipeline_info_clear(pipeline_info *p);

/*
 * The check of a command that meets both sides (run, status, verify,
 * teardown): the pipeline's recorded source against src. With record, a
 * pipeline set up before sources were recorded takes src as its own
 * (said in the log). Another source is refused (TM_EXIT_CONFIG) naming
 * both and the fix; one that looks like the pipeline's server upgraded in
 * place (the database's and the tables' oids kept: resume_check.h) is
 * refused with the fix `tidemark resync --source-upgraded`.
 */
int pipeline_check(pipeline_target t, const char *slot, PGconn *src, const char *src_conninfo,
                   bool record);

/*
 * setup's checks, read-only, before it changes anything on either side:
 * the pipeline's source; the mapping asked (want) joined to the recorded
 * one (into *merged: caller clears) without moving a replicated table; no
 * table's target name taken by another table of this or another pipeline;
 * the slot on the source not another database's or another target's.
 * names: the n tables to set up, as source schema, name pairs.
 * TM_OK or TM_EXIT_CONFIG, logged with the fix.
 */
int pipeline_check_setup(PGconn *target, PGconn *src, const char *slot,
                         const pipeline_source *ps, const schema_map *want, char *const *names,
                         int n, schema_map *merged);

/*
 * resync --source-upgraded: src, whose server is not the one recorded,
 * becomes the pipeline's source when it looks like that server upgraded
 * in place (resume_upgrade_check), in one target transaction: where
 * pg_upgrade kept the slot, the stored position moves to the slot's, so
 * that the stream resumes there with nothing copied again; the recorded
 * timeline and the publication's readings are forgotten. Logged. Nothing
 * when src is the pipeline's source already. TM_EXIT_CONFIG, logged with
 * why, when it does not look like an upgrade.
 */
int pipeline_take_upgrade(sink *s, const char *slot, PGconn *src, const char *src_conninfo);

/* Records the pipeline's source and mapping (setup, after the progress row
 * exists). */
int pipeline_save(sink *s, const char *slot, const pipeline_source *ps, const schema_map *map);

/* The target schema of one of slot's source schemas (tidemark.map_schema):
 * *out a new string. */
int pipeline_target_schema(sink *s, const char *slot, const char *source_schema, char **out);

#endif
