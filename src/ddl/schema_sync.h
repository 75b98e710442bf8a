/*
 * schema_sync.h: following the source's schema changes on the target.
 *
 * Each DDL capture message (prefix "tidemark.ddl", see
 * migrations/source/001_capture.sql) arrives in the stream inside the
 * transaction that ran the DDL, at its position. Here, inside the target
 * transaction that applies that source transaction:
 *   - a replicated table's change is planned (src/ddl/ddl_track.h) and run on
 *     the target with quoted identifiers only; a new schema version is
 *     recorded, valid from the message's position;
 *   - a table created in a replicated schema is created on the target and
 *     copied (snapshot);
 *   - a dropped table is marked dropped (its target table is kept, or
 *     dropped with drop_tables);
 *   - a partitioned table is one target table, its root: its partitions are
 *     never registered, and what changes its rows without row changes in
 *     the stream (a table attached, a partition detached, dropped or
 *     truncated) makes it be copied again (src/ddl/ddl_partition.h);
 *   - every message lands in tidemark.ddl_log with what was done.
 * Rows before the DDL's position were applied under the old schema, rows
 * after it under the new one, because the target changes at that very
 * position of the stream, in the same transaction.
 *
 * Types (typesync.h): the types a table needs are made ready before its
 * change is planned; a message's own types (ALTER TYPE, ALTER DOMAIN, ...)
 * are followed first. Such a message is a group boundary: before it
 * (cfg.type_boundary), and after its source transaction
 * (result.commit_after), so that rows using a value ALTER TYPE ... ADD
 * VALUE added are written in a later target transaction (PostgreSQL
 * refuses them in the one that added it, SQLSTATE 55P04).
 */
#ifndef TIDEMARK_SCHEMA_SYNC_H
#define TIDEMARK_SCHEMA_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "ddl_partition.h"
#include "ddl_track.h"
#include "lsn.h"
#include "metrics.h"
#include "pgoutput.h"
#include "sink.h"

typedef struct schema_sync schema_sync;

/* What schema_sync asks the source (run's control connection), for
 * partitioned tables. Any member may be NULL: then it is not asked. */
typedef struct schema_sync_source {
	void *ctx;
	/* The table with this oid as it is now: *out new, or NULL when it is
	 * gone, is a partition, or cannot be replicated (then said why). */
	int (*table_def)(void *ctx, uint32_t relid, tabledef **out);
	/* Adds a partitioned table's partitions to out (none for another). */
	int (*partitions)(void *ctx, uint32_t relid, ddl_part_root *out);
	/* "schema.name" of the table (new string), NULL when gone. */
	int (*table_name)(void *ctx, uint32_t relid, char **out);
	/* For schema_sync_catch_up: the ordinary and partitioned tables of a
	 * schema (new NULL-terminated array of new strings), and a table's
	 * definition by name (*out new, NULL when it cannot be replicated). */
	int (*schema_tables)(void *ctx, const char *schema, char ***names);
	int (*table_def_named)(void *ctx, const char *schema, const char *name, tabledef **out);
	/* Makes the publication publish the table with this oid by name (it
	 * left the schemas the publication covers: SET SCHEMA). *recopy: its
	 * changes since the move may have gone unpublished (false when the
	 * table is gone, or the publication covers all tables). */
	int (*publish)(void *ctx, uint32_t relid, bool *recopy);
	/* A table that joins is published: when it is not, adds its schema
	 * back to the publication (by_schema: a replicated schema, dropped and
	 * created again), or the table by name (one created again under the
	 * name of a replicated table); *added said. */
	int (*publish_joining)(void *ctx, const tabledef *def, bool by_schema, bool *added);
} schema_sync_source;

/* The policy for a change that cannot widen is the one in force in the
 * catalog for the table when the change comes (policy.h): stored, or given
 * to this run (policy_record_run). */
typedef struct schema_sync_config {
	const char *slot;              /* borrowed */
	bool drop_columns;             /* drop source-dropped columns on the target */
	bool drop_tables;              /* drop source-dropped tables on the target */
	schema_sync_source source;
	/* Called before a message that changes types changes anything on the
	 * target (may be NULL): see apply_type_boundary. */
	int (*type_boundary)(void *ctx);
	void *boundary_ctx;
	metrics *metrics;              /* borrowed; NULL: none. Each change done on the
	                                * target is staged by its action */
} schema_sync_config;

/* Loads the capture key; *out new (schema_sync_free). */
int schema_sync_new(const schema_sync_config *cfg, sink *s, schema_sync **out);
void schema_sync_free(schema_sync *ss);

/* The source transaction the next messages arrive in: its 64-bit xid (the
 * Begin's, widened: ddl_auth_widen_xid) and its commit position (as
 * schema_sync_set_commit). A capture message written in another one is
 * ignored (ddl_auth.h). */
void schema_sync_in_transaction(schema_sync *ss, uint64_t xid, tm_lsn commit_lsn);

/* The result of one message: tables whose definition changed (their rows
 * and statements must be looked at again). Free with
 * schema_sync_result_free, after each message. */
typedef struct schema_sync_result {
	int nchanged;
	int changed_cap;
	int *changed;                  /* owned: the table ids, every one */
	bool any_new_table;
	bool commit_after;             /* the target transaction must commit right
	                                * after this source transaction (types
	                                * changed: see apply_type_boundary) */
} schema_sync_result;

/*
 * The source transaction the next messages belong to, by its commit
 * position (Begin's final LSN): a transaction that committed before a
 * table joined replication (catalog_table.registered_lsn) changes nothing
 * of it, neither its definition nor its registration. Another position
 * than the last forgets what the previous transaction gathered.
 */
void schema_sync_set_commit(schema_sync *ss, tm_lsn commit_lsn);

/*
 * The transaction being applied commits (end_lsn: the end of its commit
 * record), inside the target transaction that applies it. The tables
 * created in it in a replicated schema (or moved into one) join
 * replication now, with the definition they have at its end, from end_lsn
 * on: their rows of the transaction, written while they may have had no
 * key yet, are copied. One that ends without a key and without REPLICA
 * IDENTITY FULL is not replicated, and a replicated table that ends so
 * is said to be (the source refuses its updates and deletes).
 */
int schema_sync_commit(schema_sync *ss, tm_lsn end_lsn, schema_sync_result *res);

/* Did a capture message of the transaction being applied describe the
 * relation as a table not registered yet? (Whether it joins is decided
 * at the commit, by schema_sync_commit.) */
bool schema_sync_described(const schema_sync *ss, uint32_t relid);
/* That, and the transaction created the table (CREATE TABLE, CREATE
 * TABLE AS, SELECT INTO) and did not rewrite it: every row it has at the
 * commit came through the stream in the transaction. */
bool schema_sync_created(const schema_sync *ss, uint32_t relid);

/*
 * Handles one capture message met at position inside the open target
 * transaction. commit_time: the source transaction's. Returns a status;
 * TM_EXIT_POLICY when the stop policy applies (nothing of the transaction
 * may then be committed).
 */
int schema_sync_message(schema_sync *ss, const pgoutput_msg *m, tm_lsn position,
                        pg_timestamp commit_time, schema_sync_result *res);
void schema_sync_result_free(schema_sync_result *res);

/*
 * Brings the target's tables to the source's definitions as they are now,
 * valid from pos, inside the open target transaction: the schema changes
 * of a stretch the stream will never deliver (a resync: between the
 * target's position and where the stream resumes, see resync.h). Each
 * replicated table whose definition differs from its version in force is
 * planned and changed as a captured DDL would be (its policy applies); a
 * table gone from the source is marked dropped (the target keeps it); a
 * table of a replicated schema not yet replicated is registered (created
 * on the target, to be copied). Needs cfg.source's table_def,
 * schema_tables and table_def_named. *nchanged: the tables it changed,
 * added or marked dropped.
 */
int schema_sync_catch_up(schema_sync *ss, tm_lsn pos, int *nchanged);

#endif
