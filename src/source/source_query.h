/*
 * source_query.h: ordinary (non-replication) SQL on the source: server
 * checks, table definitions, publication and slot management, watermark and
 * marker messages. Every failure is logged here with its fix.
 */
#ifndef TIDEMARK_SOURCE_QUERY_H
#define TIDEMARK_SOURCE_QUERY_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "ddl_partition.h"
#include "lsn.h"
#include "slot_wal.h"
#include "source_wait.h"
#include "pub_state.h"
#include "tabledef.h"

/* Server version >= 15, wal_level = logical, replication privilege. */
int source_query_check_server(PGconn *conn);

/* Superuser? (needed to create the DDL capture event trigger) */
int source_query_is_superuser(PGconn *conn, bool *out);

/* Reads a table's definition; the key is the replica identity index, the
 * primary key, or with REPLICA IDENTITY FULL a unique index on NOT NULL
 * columns, else none (a FULL table without any key: no key column). A
 * table without a key and without FULL is a configuration error naming
 * the fix. *out is new (caller frees with tabledef_free). */
int source_query_table_def(PGconn *conn, const char *schema, const char *name, tabledef **out);
/* The same, with the position its history starts at (*at): the source's
 * WAL insert position, read in the transaction that read the definition,
 * under a lock that DDL on the table waits for (ACCESS SHARE, the lock any
 * SELECT takes: writers never wait for it). A DDL transaction that took
 * its lock first committed before *at and is in the definition; one that
 * waited commits after *at, and is not. A wait for the lock is watched
 * as watch says (source_wait.h). */
int source_query_table_def_at(PGconn *conn, const source_wait_watch *watch, const char *schema,
                              const char *name, tabledef **out, tm_lsn *at);
/* The same by oid; *out NULL (and TM_OK, nothing logged) when no such
 * table exists any more or it is a partition (a partitioned table is
 * replicated as one table, its root). What keeps it from being replicated
 * (no key, say) is a warning, and TM_EXIT_CONFIG. */
int source_query_table_def_oid(PGconn *conn, uint32_t relid, tabledef **out);

/* ---- partitioned tables (source_query_part.c) ---- */

/* Adds the partitions of a partitioned table, at every level, to out's
 * members (nothing for another table). */
int source_query_partitions(PGconn *conn, uint32_t relid, ddl_part_root *out);
/* "schema.name" of the table with this oid, quoted where needed (*out
 * new; NULL when there is none). */
int source_query_table_name(PGconn *conn, uint32_t relid, char **out);
/* Does the table relid (its partitions too) have a row the role can read?
 * *has false when the table is gone. */
int source_query_has_rows(PGconn *conn, uint32_t relid, bool *has);
/* Is the table with this oid partitioned? (false when it does not exist) */
int source_query_partitioned(PGconn *conn, uint32_t relid, bool *partitioned);
/* The partitions of schema whose root is in another schema: *out a new
 * NULL-terminated array of new strings, three per partition (its
 * qualified name, the root's schema and the root's name). */
int source_query_foreign_partitions(PGconn *conn, const char *schema, char ***out);
/* The inheritance children (INHERITS, not partitions) of the table with
 * this oid: *out a new NULL-terminated array of new strings, two per child
 * (its schema and name). */
int source_query_inheritance_children(PGconn *conn, uint32_t relid, char ***out);
/* Sets publish_via_partition_root on an existing publication without it. */
int source_query_fix_via_root(PGconn *conn, const char *publication);
/* TM_EXIT_CONFIG, logged with the fix, when the publication is gone, or
 * sends partitions' changes as their own (publish_via_partition_root off)
 * while it covers partitioned tables. */
int source_query_check_via_root(PGconn *conn, const char *publication);
/* Logs that the publication is gone, with the fix. */
void source_query_publication_missing(const char *publication);
/* Does the publication exist? */
int source_query_publication_exists(PGconn *conn, const char *publication, bool *exists);
/* TM_EXIT_CONFIG, said with the fix, when the publication leaves out an
 * action (insert, update, delete, truncate), publishes generated columns,
 * or has a table with a row filter or a column list. */
int source_query_check_whole(PGconn *conn, const char *publication);
/*
 * SQL: does publication p (a row of pg_publication) publish table c (a row
 * of pg_class, not a partition) itself: FOR ALL TABLES unless the table is
 * in its EXCEPT list (PostgreSQL 19: pg_publication_rel.prexcept, read
 * through the row's JSON so that older servers parse it), by name, or
 * through its schema.
 */
#define SOURCE_QUERY_PUBLISHES(p, c)                                                        \
	"(((" p ".puballtables) AND NOT EXISTS (SELECT FROM pg_publication_rel x"              \
	"   WHERE x.prpubid = " p ".oid AND x.prrelid = " c ".oid"                              \
	"   AND coalesce((to_jsonb(x) ->> 'prexcept')::boolean, false)))"                       \
	" OR EXISTS (SELECT FROM pg_publication_rel x WHERE x.prpubid = " p ".oid"             \
	"   AND x.prrelid = " c ".oid AND NOT coalesce((to_jsonb(x) ->> 'prexcept')::boolean,"   \
	"   false))"                                                                            \
	" OR EXISTS (SELECT FROM pg_publication_namespace x WHERE x.pnpubid = " p ".oid"       \
	"   AND x.pnnspid = " c ".relnamespace))"

/* Which of the tables (by oid; those gone are left out) the publication
 * does not publish (excepted_only: only when it is FOR ALL TABLES, whose
 * EXCEPT list leaves them out): *out a new NULL-terminated array of new
 * "schema.name" strings (quoted as SQL needs). */
int source_query_unpublished(PGconn *conn, const char *publication, const uint32_t *relids, int n,
                             bool excepted_only, char ***out);

/* The DDL capture's event triggers (migrations/source) that are missing,
 * disabled, or enabled for sessions of one replication role only (not
 * ALWAYS), each a new "name is ..." string of *out, a new NULL-terminated
 * array (empty when the capture is whole). */
int source_query_capture_gaps(PGconn *conn, char ***out);

/* The source migration that made the capture's version readable by any
 * role (tidemark.capture_version). */
#define SOURCE_CAPTURE_VERSION_SINCE 18

/* The version of the DDL capture installed on the source (the latest
 * source migration `setup` applied there): *version is it; 0 when the
 * capture predates SOURCE_CAPTURE_VERSION_SINCE; -1 when no capture is
 * installed. */
int source_query_capture_version(PGconn *conn, int *version);
/* A version as the messages say it: "migration N", or for 0 "from before
 * migration 18"; written into buf (n bytes), which is returned. */
const char *source_query_capture_version_name(int version, char *buf, size_t n);

/* A relation unlogged on the source (source_query_unlogged): its changes
 * are not written to the WAL, so the stream never has them. */
typedef struct source_unlogged {
	uint32_t table;          /* the replicated table's oid */
	char *name;              /* owned: the relation, "schema.name" quoted as SQL needs */
	char *partition_of;      /* owned: "" for the table itself; for a partition,
	                          * the table's name */
} source_unlogged;

/* The relations among the tables (by oid; those gone are left out) and
 * their partitions that are UNLOGGED on the source: *out a new array of
 * *nout (source_unlogged_free). */
int source_query_unlogged(PGconn *conn, const uint32_t *relids, int n, source_unlogged **out,
                          int *nout);
void source_unlogged_free(source_unlogged *u, int n);

/* The publication's state as pub_state.h describes it, for the tables
 * with these oids (those gone are left out); *out is filled
 * (pub_state_free, also after a failure). */
int source_query_pub_state(PGconn *conn, const char *publication, const uint32_t *relids, int n,
                           pub_state *out);

/* A table's replica identity (pg_class.relreplident: d, n, f, i) and
 * whether it has a key tidemark can match rows by; *replident is 0 when
 * the table does not exist. */
int source_query_replica_identity(PGconn *conn, const char *schema, const char *name,
                                  char *replident, bool *has_key);

/* Names of the ordinary and partitioned tables of a schema but the
 * UNLOGGED ones (whose changes are not in the WAL) and those without a
 * column the stream carries; when unlogged (no_columns) is not NULL, those
 * (new NULL-terminated arrays of new strings, all freed by the caller). */
int source_query_schema_tables(PGconn *conn, const char *schema, char ***names,
                               char ***unlogged, char ***no_columns);

/* Creates the publication if missing and adds the tables and schemas it
 * lacks. tables: "schema"/"name" pairs as tabledefs. */
int source_query_ensure_publication(PGconn *conn, const char *publication,
                                    tabledef *const *tables, int ntables,
                                    const char *const *schemas, int nschemas);

/* What source_query_publish_table found. */
typedef enum source_publish {
	SOURCE_PUBLISH_GONE,        /* no such table (any more), or no such publication */
	SOURCE_PUBLISH_ALL_TABLES,  /* the publication is FOR ALL TABLES */
	SOURCE_PUBLISH_MEMBER,      /* already published by name */
	SOURCE_PUBLISH_ADDED,       /* added by name now */
} source_publish;

/* Makes the publication publish the table with this oid by name
 * (ALTER PUBLICATION ... ADD TABLE ONLY, under the name the table has now)
 * unless it already does or is FOR ALL TABLES. A role that may not
 * (neither the publication's nor the table's owner) is TM_EXIT_CONFIG,
 * logged with the statement and the ownership that allow it, and why
 * ("table s.t <why> the publication ..."). */
int source_query_publish_table(PGconn *conn, const char *publication, uint32_t relid,
                               const char *why, source_publish *out);
/* The same for schema_sync_source.publish: *recopy when the table is
 * published by name now (its changes since the move may be missing). */
int source_query_keep_published(PGconn *conn, const char *publication, uint32_t relid,
                                bool *recopy);

/*
 * A table that joins (schema_sync_source.publish_joining): when the
 * publication does not publish it, adds its schema back (by_schema: a
 * replicated schema dropped and created again, which DROP SCHEMA took out
 * of its publications; ADD TABLES IN SCHEMA is a superuser's right), or
 * the table by name (created again under the name of a replicated table);
 * *added said. A role that may not is TM_EXIT_CONFIG, logged with the
 * statement.
 */
int source_query_publish_joining(PGconn *conn, const char *publication, const tabledef *def,
                                 bool by_schema, bool *added);

/* Creates the logical slot (pgoutput) if missing: on PostgreSQL 17 and
 * later a failover slot (failover => true), which a standby with
 * sync_replication_slots keeps in step, so that it survives a promotion.
 * *created tells which; *lsn is the slot's consistent point when created,
 * else its confirmed_flush_lsn. The creation waits for every transaction
 * that holds an xid to end: reported through conninfo (source_wait_exec). */
int source_query_ensure_slot(PGconn *conn, const char *conninfo, const char *slot, bool *created,
                             tm_lsn *lsn);

/* The slot and the server as start-up and resync compare them with the
 * target (consistency.h). */
typedef struct source_slot_state {
	int server_version;       /* server_version_num */
	bool in_recovery;         /* a standby, not a primary */
	tm_lsn wal_end;           /* pg_current_wal_lsn() (a standby: its replay position) */
	bool exists;
	bool ours;                /* a pgoutput slot of this database */
	bool invalidated;         /* wal_status 'lost', or an invalidation_reason (17+) */
	char reason[64];          /* invalidation_reason (17+), "wal_removed" for 'lost' before */
	tm_lsn confirmed;         /* confirmed_flush_lsn */
	int active_pid;           /* 0: not in use */
	bool failover;            /* 17+: a failover slot */
	bool synced;              /* 17+: synced from a primary (on a standby, or promoted) */
} source_slot_state;

int source_query_slot_state(PGconn *conn, const char *slot, source_slot_state *out);

/* What the slot keeps of the source's WAL (slot_wal.h). */
int source_query_slot_wal(PGconn *conn, const char *slot, slot_wal *out);
/* What an invalidation reason means, in a few words (for messages). */
const char *source_query_invalidation_text(const char *reason);

/* Drops an inactive slot (a lost one, before resync creates it again). */
int source_query_drop_slot(PGconn *conn, const char *slot);
/* Does the replication slot exist? */
int source_query_slot_exists(PGconn *conn, const char *slot, bool *exists);

/* pg_current_wal_lsn() */
int source_query_current_lsn(PGconn *conn, tm_lsn *out);

/* The key that signs the DDL capture messages, as hex (*hex: new string;
 * NULL when the source has none). */
int source_query_capture_key(PGconn *conn, char **hex);

/* The source's next transaction id, 64-bit with its epoch (the xmax of a
 * snapshot taken now; no transaction id is used up). */
int source_query_next_xid(PGconn *conn, uint64_t *out);
/* pg_xact_status of the 64-bit xid: "committed", "aborted", "in progress",
 * or "unknown" (too old to be known). */
int source_query_xact_status(PGconn *conn, uint64_t xid, char *out, size_t outlen);

/* A transactional logical message in its own transaction; *lsn: its LSN. */
int source_query_emit(PGconn *conn, const char *prefix, const char *content, tm_lsn *lsn);

/* Explains, as a log line, who holds an active slot (or why it is lost). */
void source_query_explain_slot(PGconn *conn, const char *slot);

#endif
