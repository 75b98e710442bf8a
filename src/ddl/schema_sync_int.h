/*
 * schema_sync_int.h: what schema_sync.c (the message, a table's change,
 * the audit log) and schema_sync_part.c (partitioned tables) share. Not
 * for other modules: they use schema_sync.h.
 */
#ifndef TIDEMARK_SCHEMA_SYNC_INT_H
#define TIDEMARK_SCHEMA_SYNC_INT_H

#include <stdint.h>

#include "catalog.h"
#include "ddl_auth.h"
#include "ddl_event.h"
#include "ddl_parse.h"
#include "catalog.h"
#include "ddl_partition.h"
#include "ddl_using.h"
#include "schema_sync.h"
#include "strbuf.h"


/* A table the source rewrote in the transaction (schema_sync_rewrite.c). */
typedef struct sync_rewrite {
	uint32_t relid;
	int reasons;          /* table_rewrite reasons (a bit mask) in the transaction */
	int command_reasons;  /* those of the command the next ddl message ends */
} sync_rewrite;

/* A table that joins replication at the commit of the source transaction
 * being applied (schema_sync_join.c): created (or moved, renamed) into a
 * replicated schema in it; its definition is the last one captured. */
typedef struct sync_join {
	ddl_event_table table;   /* owned: def and cols copied */
	tm_lsn position;         /* the last capture message about it */
	bool dropped;            /* dropped again in the same transaction */
	bool decided;            /* the commit came (the entry stays for
	                          * schema_sync_described until the next one) */
	bool created;            /* created by the transaction */
	bool rewritten;          /* the source rewrote it in the transaction, or rows came
	                          * into it or left it without row changes (a partition
	                          * attached, detached, dropped or truncated) */
	bool partition;          /* a partition at its last message: no table of its own */
	ddl_part_root tree;      /* a partitioned table: its partitions as the
	                          * transaction's messages listed them (owned) */
} sync_join;

/* A replicated table whose key went in the transaction: said at its
 * commit when it still has none without REPLICA IDENTITY FULL. */
typedef struct sync_keyless {
	int table_id;
	char *schema;            /* owned */
	char *name;              /* owned */
	bool keyless;            /* as of the last capture message */
	char replident;
} sync_keyless;

struct schema_sync {
	schema_sync_config cfg;
	sink *sink;                       /* borrowed */
	long long rewrite_xid;            /* the transaction the rewrites belong to */
	int nrewrites, rewrites_cap;
	sync_rewrite *rewrites;           /* owned: tables the source rewrote in it */
	long long truncate_xid;           /* the transaction the truncations belong to */
	int ntruncated, truncated_cap;
	uint32_t *truncated;              /* owned: partitioned tables truncated, or copied
	                                   * again for a truncated partition, in it */
	char *parsed_text;                /* owned: the last statement text parsed (every
	                                   * message of a client string carries all of it) */
	ddl_parse_result parsed;          /* owned: its parse, when parsed_ok */
	bool parsed_ok;                   /* false: the text could not be parsed */
	long long statement_xid;          /* the transaction of the statement text: */
	char *statement;                  /* owned: long texts are sent once per transaction */
	uint8_t key[DDL_AUTH_KEY_MAX];    /* the capture key (see ddl_auth.h) */
	int key_len;                      /* -1: none kept on the target */
	tm_lsn signed_from;               /* messages from here on must be signed */
	int njoins;
	sync_join *joins;                 /* owned: tables joining at its commit */
	int nkeyless;
	sync_keyless *keyless;            /* owned: tables whose key went in it */
	bool bound_known;                 /* bound_from is known: */
	tm_lsn bound_from;                /* messages from here on must be bound */
	uint64_t cur_xid;                 /* the transaction messages arrive in */
	tm_lsn cur_commit;                /* its commit position (schema_sync_set_commit) */
	ddl_auth_tx tx;                   /* the seqs accepted in it */
	ddl_auth_msg msg;                 /* the message being followed, as signed */
};

/* ---- which capture messages are followed (schema_sync_auth.c) ---- */

/* The capture key kept by setup, if any, and where bound messages start. */
int schema_sync_auth_load(schema_sync *ss);
/* The body of a DDL capture message that tidemark's capture wrote in the
 * transaction it arrives in; NULL (with a warning naming its position) for
 * anything else. */
const char *schema_sync_auth_body(schema_sync *ss, const pgoutput_msg *m, size_t *len);
/* Does the parsed message carry the xid and seq its signature covers? */
bool schema_sync_auth_matches(const schema_sync *ss, const ddl_event *e, const pgoutput_msg *m);

/* What one message's sync did, for the audit log. */
typedef struct sync_note {
	strbuf tables;       /* "schema.table, ..." */
	strbuf classes;      /* classifications */
	strbuf actions;      /* what was done on the target */
	int version;         /* the last version recorded, 0 if none */
} sync_note;

/* Appends text to a "; "-separated list. */
void schema_sync_note_list(strbuf *sb, const char *text);
/* Empties a target table for its copy (TRUNCATE, in the change's
 * transaction). A table that foreign keys of the target's own reference
 * is not emptied (TRUNCATE refuses it, and a DELETE would act on their
 * rows): TM_EXIT_TARGET, with the fix. */
int schema_sync_empty_for_copy(schema_sync *ss, const char *schema, const char *table);
/* "schema.name" to the note's tables. */
void schema_sync_note_table(sync_note *note, const char *schema, const char *name);
void schema_sync_result_add(schema_sync_result *res, int table_id);
/* Asks for the table to be copied again from the start. */
int schema_sync_request_snapshot(schema_sync *ss, int table_id);

/* ---- rewrites and conversions (schema_sync_rewrite.c) ---- */

/* Did the source rewrite the table in transaction xid? */
bool schema_sync_was_rewritten(const schema_sync *ss, long long xid, uint32_t relid);
/* Did it, in the command this ddl message ends, to convert column values
 * (reason 4)? A partitioned table: any of its partitions (e's tables). */
bool schema_sync_converted(const schema_sync *ss, const ddl_event *e, uint32_t relid);
/* A rewrite message: the table is noted for its transaction and command. */
void schema_sync_note_rewrite(schema_sync *ss, const ddl_event *e);
/* A ddl message was handled: the next rewrites are the next command's. */
void schema_sync_command_done(schema_sync *ss);
/* Adds relid to the transaction's list of truncated tables; false when it
 * was already there. */
bool schema_sync_truncated_first(schema_sync *ss, long long xid, uint32_t relid);
/* The parse of a statement text (borrowed: valid until the next call with
 * another text), or NULL when there is none or it cannot be parsed. The
 * last text's parse is kept: each message of a migration sent as one
 * string carries the whole string, parsed once instead of once a message. */
const ddl_parse_result *schema_sync_parse(schema_sync *ss, const char *statement);
/* What the message's statement text says of the conversions of a table's
 * columns (ddl_using.h); *out new (ddl_using_list_free). Returns false,
 * with *out empty, when there is no text to read. */
bool schema_sync_using(schema_sync *ss, const ddl_event *e, const tabledef *old,
                       const tabledef *now, ddl_using_list *out);
/* The session settings of the message, for ddl_track. */
ddl_track_session schema_sync_session(const ddl_event *e);
/* Runs one ALTER_TYPE action on the target table: under the source
 * session's settings when the action asks (restored after), and, in a plan
 * that copies the table again, emptying the table first when its rows
 * refuse the conversion. *recopy: the table must be copied again (a
 * setting the target refuses). */
int schema_sync_alter_type(schema_sync *ss, const char *schema, const char *table,
                           const ddl_action *a, const ddl_track_session *session,
                           sync_note *note, bool *recopy);
/* Frees what schema_sync_rewrite.c keeps. */
void schema_sync_rewrite_free(schema_sync *ss);
/* A table created, moved or detached into a replicated schema: registered
 * (created on the target, to be copied). *added tells whether it was. */
int schema_sync_add_table(schema_sync *ss, const tabledef *def, tm_lsn pos, sync_note *note,
                          schema_sync_result *res, bool *added);

/* The table's version in force: *def new, *version its number (0: none). */
int schema_sync_load_version(schema_sync *ss, const catalog_table *t, tabledef **def,
                             int *version);
/* A replicated table's change to the definition now (not rewritten): planned
 * under its policy, run on the target, a new version valid from pos. */
int schema_sync_follow_table(schema_sync *ss, catalog_table *t, ddl_event_table *now, tm_lsn pos,
                             sync_note *note, schema_sync_result *res);
/* ---- a table moved out of the replicated schemas (schema_sync_move.c) ---- */

/* After t's change to now: when SET SCHEMA moved it from a schema the
 * pipeline replicates (published by schema) into one it does not, the
 * publication is made to publish it by name and *recopy is set (its
 * changes between the move and that were not published). */
int schema_sync_moved_out(schema_sync *ss, const catalog_table *t, const tabledef *now,
                          sync_note *note, bool *recopy);
/* Before an ALTER SCHEMA message's tables are followed: when it renamed a
 * schema the pipeline replicates, the catalog takes the new name. */
int schema_sync_schema_renamed(schema_sync *ss, const ddl_event *e, sync_note *note);
/* ---- tables that join at a transaction's commit (schema_sync_join.c) ---- */

/* A table not registered yet, met in a ddl message: it joins replication
 * at the commit of its transaction with its last captured definition
 * (noted, decided then). */
void schema_sync_join_note(schema_sync *ss, const ddl_event *e, const ddl_event_table *et,
                           tm_lsn pos, sync_note *note);
/* A table to join at this commit was rewritten (a rewrite message). */
void schema_sync_join_rewritten(schema_sync *ss, uint32_t relid);
/* A table dropped: when it was to join at this commit, it does not. */
bool schema_sync_join_dropped(schema_sync *ss, uint32_t relid, sync_note *note);
/* A table listed as a partition: when it was to join at this commit by
 * itself (made in the transaction, then attached), it does not. */
void schema_sync_join_partitioned(schema_sync *ss, uint32_t relid);
/* After a ddl or drop message: what it did to the partitions of the
 * partitioned tables that join at this commit. A partition attached with
 * rows, detached or dropped moves rows into or out of the root without row
 * changes, so the root's rows of the transaction are copied, not applied;
 * a partition detached into a replicated schema is a table of its own. */
int schema_sync_join_partitions(schema_sync *ss, const ddl_event *e, tm_lsn pos,
                                sync_note *note, schema_sync_result *res);
/* The table to join at this commit with this relid, or NULL. */
const sync_join *schema_sync_join_find(const schema_sync *ss, uint32_t relid);
/* A replicated table's key state after a message (table without a key:
 * said at the commit when it still has none and is not FULL). */
void schema_sync_keyless_note(schema_sync *ss, const catalog_table *t,
                              const ddl_event_table *now);
/* Forgets what the transaction gathered. */
void schema_sync_join_reset(schema_sync *ss);
/* Did the transaction being applied commit before the table joined
 * replication (registered_lsn)? Then it changes nothing of the table. */
bool schema_sync_before_join(const schema_sync *ss, const catalog_table *t);

/* ---- partitioned tables (schema_sync_part.c) ---- */

/* The replicated partitioned tables a message concerns, with their
 * recorded partitions: *roots new (catalog_partition_roots_free). */
int schema_sync_part_roots(schema_sync *ss, const ddl_event *e, ddl_part_root **roots, int *n);
/* Follows what a ddl or drop message did to each root's hierarchy:
 * partitions recorded or forgotten, the root copied again when rows came
 * or went without row changes, a detached partition in a replicated
 * schema registered as a table of its own. */
int schema_sync_part_follow(schema_sync *ss, const ddl_event *e, ddl_part_root *roots, int n,
                            tm_lsn pos, sync_note *note, schema_sync_result *res);
/* A partition listed in a ddl message. *done: nothing more to do for it
 * (its root is replicated, or it is not replicated at all); else it is a
 * replicated table of its own whose root is not replicated. */
int schema_sync_part_listed(schema_sync *ss, const ddl_event *e, const ddl_event_table *et,
                            const ddl_part_root *roots, int n, sync_note *note,
                            schema_sync_result *res, bool *done);
/* A registered partitioned table: its partitions, as the source has them
 * now, are recorded (nothing for a table without partitions). */
int schema_sync_part_record_tree(schema_sync *ss, const tabledef *def);
/* The same with the partitions given (tree's members, borrowed). */
int schema_sync_part_record_members(schema_sync *ss, const tabledef *def,
                                    const ddl_part_root *tree);
/* Did the source rewrite a partition of this table in the message's
 * transaction (a root's rows are its partitions')? */
bool schema_sync_part_rewritten(const schema_sync *ss, const ddl_event *e, uint32_t relid);
/* A partition detached into a replicated schema: registered like a new
 * table, with the source's definition of it now. */
int schema_sync_part_register_detached(schema_sync *ss, const ddl_part_member *m, tm_lsn pos,
                                       sync_note *note, schema_sync_result *res);
/* A truncate message (a partition or a partitioned table was truncated):
 * pgoutput sends nothing for a partition truncated by itself, so its root
 * is copied again. *log: the audit log records it. */
int schema_sync_part_truncate(schema_sync *ss, const ddl_event *e, sync_note *note,
                              schema_sync_result *res, bool *log);

#endif
