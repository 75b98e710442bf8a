/*
 * catalog.h: tidemark's catalog on the target (migrations/target/): the
 * applied position, the replicated tables with their snapshot state, the
 * replicated schemas and the schema versions. All access goes through the
 * sink, so that writes made while applying share the target transaction of
 * the rows they describe.
 */
#ifndef TIDEMARK_CATALOG_H
#define TIDEMARK_CATALOG_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "ddl_partition.h"
#include "lsn.h"
#include "pgoutput.h"
#include "sink.h"
#include "tabledef.h"

typedef struct catalog_table {
	int table_id;
	uint32_t source_relid;   /* 0 when not known */
	char *source_schema;     /* owned, like every string here */
	char *source_table;
	char *target_schema;
	char *target_table;
	int nkeys;
	char **key_columns;      /* owned array */
	char state[24];          /* snapshot_pending, snapshotting, streaming, dropped */
	int nlast_key;
	char **snapshot_last_key;/* owned array; NULL before the first chunk */
	long long snapshot_rows;
	int snapshot_chunks;
	long long snapshot_estimate;
	bool snapshot_requested;
	/* Does the target order the key as the source does (tidemark.tables.
	 * key_order_same, migrations/target/005_target_types.sql)? true only
	 * when known to: every key column has the source's very type and a
	 * collation that sorts alike. When false, no decision about which rows
	 * a key range holds may rest on the target's ordering. */
	bool key_order_same;
	char *key_order_reason;  /* why not (NULL when the same; "not known yet"
	                          * before run has worked it out) */
	/* How the publication published it at run's last reading
	 * (tidemark.tables.publication_token, migrations/target/
	 * 023_publication_tokens.sql, pub_state.h); NULL: not read yet. */
	char *publication_token;
	/* Where the table's history starts (tidemark.tables.registered_lsn,
	 * migrations/target/010_registration.sql): a source transaction that
	 * committed before it (Begin's final LSN is lower) changes nothing of
	 * the table on the target, neither rows nor definition. 0: from the
	 * start. */
	tm_lsn registered_lsn;
	/* Registered for an earlier slot than the replication's (before
	 * `teardown`, or before the slot was dropped): the source's changes
	 * between the two slots were never captured, so it is registered
	 * again by the next setup that names it. */
	bool interrupted;
	/* The table's mode and metadata columns (tidemark.tables.mode,
	 * metadata_columns, migrations/target/014_table_modes.sql; shape.h). */
	bool history;            /* a history beside the mirror: <target_table>_history */
	bool soft_delete;        /* deletes mark the mirror's row (tidemark_deleted_at) */
	bool metadata;           /* the mirror has tidemark_lsn and tidemark_synced_at */
} catalog_table;

/* Creates the progress row of a slot if missing. */
int catalog_ensure_progress(sink *s, const char *slot);
/* The slot is made again (setup found none): the tables registered so
 * far become interrupted (catalog_table.interrupted), and the applied
 * position, of the old slot, is forgotten (the new slot's start). */
int catalog_new_slot_generation(sink *s, const char *slot);
/* Names each interrupted table with the fix (setup, and run at its start). */
int catalog_warn_interrupted(sink *s, const char *slot);

/* Is the replication of this slot set up in the target database (a
 * catalog, and its progress row)? TM_OK, or TM_EXIT_CONFIG logged with the
 * fix: run setup, or name a registered slot. slot NULL: is there a catalog
 * at all? Through the sink or a plain target connection. */
int catalog_check_registered(sink *s, const char *slot);
int catalog_check_registered_conn(PGconn *conn, const char *slot);

/* The applied position (LSN_INVALID when nothing was applied yet). */
int catalog_read_progress(sink *s, const char *slot, tm_lsn *applied);

/* Queues the position update (inside the caller's transaction). */
int catalog_save_progress(sink *s, const char *slot, tm_lsn applied, pg_timestamp commit_time);

/* A transaction of its own that changes nothing and whose commit waits for
 * the target's disk (synchronous_commit on): once it returns, every commit
 * made before it is flushed. */
int catalog_flush_progress(sink *s, const char *slot);

/* Registers a table: the types and collations its columns need (see
 * typesync.h), target schema and table created if missing (generated
 * columns with their expression, each under a savepoint: one the target
 * refuses is left out, with its reason in the schema version), catalog row
 * (its key's order not known yet: key_order.h) and first schema version
 * (valid from valid_from, which is also its registration position:
 * catalog_table.registered_lsn). *added tells whether it was new;
 * *values_added (may be NULL) whether ALTER TYPE ... ADD VALUE ran (see
 * apply_type_boundary). Runs in the caller's transaction, if any. */
int catalog_add_table(sink *s, const char *slot, const tabledef *def, tm_lsn valid_from,
                      bool *added, bool *values_added);

/*
 * A registered table whose history starts again at valid_from (set up
 * again after `teardown`, or set aside because a change could not be
 * followed): def becomes its schema version from valid_from, which is its
 * new registration position, its key and source oid are def's, and it is
 * copied again from the start. With keep_target its target table stays
 * (the caller knows it has def's columns); else it is moved aside as
 * "name (set aside)" ("(set aside 2)", ...: *aside, a new string, may be
 * NULL) and created again from def. In the caller's transaction.
 */
int catalog_restart_table(sink *s, const char *slot, const catalog_table *t, const tabledef *def,
                          tm_lsn valid_from, bool keep_target, char **aside);

/* Runs sql, whose one parameter is a table's id ($1::int), in the caller's
 * transaction. */
int catalog_table_command(sink *s, int table_id, const char *what, const char *sql);

/* Takes a table out of replication (state dropped; its target table is
 * kept). In the caller's transaction. */
int catalog_retire_table(sink *s, int table_id);

/* The table's history (if it is in history mode) lacks what its mirror
 * holds (history turned on, or the table made again, empty): until its
 * copy ends, the history is indexed by key and the copy compares its rows
 * with the latest entries rather than with the mirror's, so that a row the
 * history has gets no second 'copy' entry (015_history_append_only.sql).
 * In the caller's transaction. */
int catalog_history_behind(sink *s, int table_id);

/* Applies a source TRUNCATE of ntables target tables (target migration
 * 021): one TRUNCATE, or, where keys of tables of the target's own
 * reference them, a DELETE of every row, whose ON DELETE actions apply
 * (said in a warning). Under the short lock wait of target DDL. In the
 * caller's transaction. */
int catalog_empty_tables(sink *s, int ntables, const char *const *schemas,
                         const char *const *names);

/* The tables of the target's own whose foreign keys reference the target
 * table schema.table (outside it and its partitions; the same test as a
 * TRUNCATE's, tidemark.referencing_tables of migration 021): *out a new
 * ", " list of them, or NULL when there are none. */
int catalog_referencing_tables(sink *s, const char *schema, const char *table, char **out);

/* Asks for the table to be copied again from the start (state
 * snapshot_pending; `run` copies it). In the caller's transaction. */
int catalog_request_copy(sink *s, int table_id);

/* A copied table whose target table is UNLOGGED (made so by hand, to
 * load faster): a crash of the target empties it, while the position
 * stored with the data, which is logged, says its rows are applied. */
typedef struct catalog_unlogged {
	int table_id;
	uint32_t source_relid; /* 0 when not known */
	char *target;          /* owned: the target table, quoted and qualified */
	bool empty;            /* it has no row now */
} catalog_unlogged;

/* The slot's copied tables (streaming or being copied) that are UNLOGGED
 * on the target; *out (n of them, owned: catalog_unlogged_free) */
int catalog_unlogged_tables(sink *s, const char *slot, catalog_unlogged **out, int *n);
void catalog_unlogged_free(catalog_unlogged *u, int n);

/* Does the table's latest schema version describe def's columns (names,
 * attnums, types, NOT NULL and key), so that its target table has them? */
int catalog_version_matches(sink *s, int table_id, const tabledef *def, bool *same);

/* Records whether table_id's key sorts alike on the target (reason NULL)
 * or why not (key_order.h), and logs a warning, naming table, when it does
 * not. */
int catalog_set_key_order(sink *s, int table_id, const char *table, const char *reason);
/* ... or that it is not known (key_order_same NULL: treated as differing
 * until compared again). */
int catalog_key_order_unknown_again(sink *s, int table_id);

/* Notes how the publication publishes the table (pub_state_token). */
int catalog_set_publication_token(sink *s, int table_id, const char *token);

/* The tables of the slot whose key order is not known yet (registered
 * before migration 005): *ids new array of table ids. */
int catalog_key_order_unknown(sink *s, const char *slot, int **ids, int *n);

int catalog_add_schema(sink *s, const char *slot, const char *schema);
/* A replicated schema renamed on the source: the schema list, its mapping
 * and its excluded tables take the new name (no-op when from is not one). */
int catalog_rename_schema(sink *s, const char *slot, const char *from, const char *to);

/* Does the target have a relation schema.name? */
int catalog_target_has(sink *s, const char *schema, const char *name, bool *has);

/* Keeps the source's capture key (hex) for this replication; messages from
 * signed_from on must be signed with it. A key already kept keeps its
 * position. */
int catalog_set_capture_key(sink *s, const char *slot, const char *hex, tm_lsn signed_from);
/* Capture messages of this replication from bound_from on must be signed
 * in the bound form (ddl_auth.h): the source's capture writes it from
 * there. Kept once per key (a key kept again keeps its position). */
int catalog_set_capture_bound(sink *s, const char *slot, tm_lsn bound_from);
/* The capture key kept for this replication: *hex a new string, or NULL
 * when there is none. */
int catalog_read_capture_key(sink *s, const char *slot, char **hex, tm_lsn *signed_from);

/* Loads the slot's tables (not dropped). *out: new array (catalog_tables_free). */
int catalog_load_tables(sink *s, const char *slot, catalog_table **out, int *n);
/* The same for the tables with these ids only. */
int catalog_load_tables_ids(sink *s, const char *slot, const int *ids, int nids,
                            catalog_table **out, int *n);
/* Loads one table by source name; *out NULL when not registered. */
int catalog_load_table(sink *s, const char *slot, const char *schema, const char *name,
                       catalog_table **out);
/* Loads one table by its source oid; *out NULL when no registered table has it. */
int catalog_load_table_relid(sink *s, const char *slot, uint32_t relid, catalog_table **out);
void catalog_table_free(catalog_table *t);
void catalog_tables_free(catalog_table *arr, int n);
/* The source oids of the tables that are not dropped (those known): a new
 * array (free), *m of them. */
uint32_t *catalog_source_relids(const catalog_table *tables, int n, int *m);

/* Queues a quarantined row change (inside the caller's transaction). */
int catalog_quarantine(sink *s, const char *slot, int table_id, const char *source_table,
                       tm_lsn position, const char *change, const char *key_json,
                       const char *row_json, const char *reason);

/* Did the pipeline replicate a table of this name that was dropped, or
 * that left the name by a rename? (A table created under the name, or
 * renamed to it, takes its place.) */
int catalog_dropped_named(sink *s, const char *slot, const char *schema, const char *name,
                          bool *was);
/* A table of this name dropped on the source earlier (kept on the target):
 * out of the way of a table that takes the name (created, renamed or moved
 * to it), its target table and catalog row renamed "name (dropped)" (or
 * "(dropped 2)", ...). Nothing when there is none. */
int catalog_retire_dropped(sink *s, const char *slot, const char *schema, const char *name);
/* A replicated table renamed from old_schema.old_name to schema.name: the
 * old name is noted as left (catalog_dropped_named), the new one as held
 * (also called with the same names for a table that joins). */
int catalog_vacate_name(sink *s, const char *slot, const char *old_schema, const char *old_name,
                        const char *schema, const char *name);
/* Does a --schema of this replication cover table schema.name (a table
 * of a replicated schema that is not excluded)? *excluded: it was left
 * out with setup --exclude-table. */
int catalog_schema_covers(sink *s, const char *slot, const char *schema, const char *name,
                          bool *covered, bool *excluded);
/* Leaves schema.name out of the replication's schemas (setup
 * --exclude-table). */
int catalog_exclude_table(sink *s, const char *slot, const char *schema, const char *name);

/* ---- partitions of replicated partitioned tables (catalog_part.c) ---- */

/* The replicated tables whose source oid is among roots, and those with a
 * recorded partition among members, each with its recorded partitions.
 * *out: new array (catalog_partition_roots_free). */
int catalog_partition_roots(sink *s, const char *slot, const uint32_t *roots, int nroots,
                            const uint32_t *members, int nmembers, ddl_part_root **out, int *n);
void catalog_partition_roots_free(ddl_part_root *arr, int n);
/* Records (or updates) partitions of the table; in the caller's transaction. */
int catalog_partitions_record(sink *s, int table_id, const ddl_part_member *m, int n);
int catalog_partitions_forget(sink *s, int table_id, const uint32_t *relids, int n);
/* The table's partitions are exactly these from now on (setup). */
int catalog_partitions_replace(sink *s, int table_id, const ddl_part_member *m, int n);
/* Registered tables that are among tree's partitions stop being replicated
 * on their own (state dropped; their target tables are kept). */
int catalog_partitions_retire(sink *s, const char *slot, const ddl_part_root *tree);

#endif
