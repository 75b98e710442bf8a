/*
 * schema_sync_int.h: what schema_sync.c (the message, a table's change,
 * the audit log) and schema_sync_part.c (partitioned tables) share. Not
 * for other modules: they use schema_sync.h.
 */
#ifndef TIDEMARK_SCHEMA_SYNC_INT_H
#define TIDEMARK_SCHEMA_SYNC_INT_H

#include <stdint.h>

#include "ddl_auth.h"
#include "ddl_event.h"
#include "catalog.h"
#include "ddl_partition.h"
#include "schema_sync.h"
#include "strbuf.h"

#define MAX_REWRITES 64
#define MAX_TRUNCATED 64

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
	bool rewritten;          /* the source rewrote it in the transaction */
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
	int nrewrites;
	uint32_t rewrites[MAX_REWRITES];  /* tables the source rewrote in it */
	long long truncate_xid;           /* the transaction the truncations belong to */
	int ntruncated;
	uint32_t truncated[MAX_TRUNCATED]; /* partitioned tables truncated, or copied
	                                   * again for a truncated partition, in it */
	long long statement_xid;          /* the transaction of the statement text: */
	char *statement;                  /* owned: long texts are sent once per transaction */
	uint8_t key[DDL_AUTH_KEY_MAX];    /* the capture key (see ddl_auth.h) */
	int key_len;                      /* -1: none kept on the target */
	tm_lsn signed_from;               /* messages from here on must be signed */
	tm_lsn tx_commit;                 /* the commit position of the source transaction
	                                   * being applied (schema_sync_set_commit) */
	int njoins;
	sync_join *joins;                 /* owned: tables joining at its commit */
	int nkeyless;
	sync_keyless *keyless;            /* owned: tables whose key went in it */
	bool bound_known;                 /* bound_from is known: */
	tm_lsn bound_from;                /* messages from here on must be bound */
	uint64_t cur_xid;                 /* the transaction messages arrive in */
	tm_lsn cur_commit;                /* (schema_sync_in_transaction) */
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
/* "schema.name" to the note's tables. */
void schema_sync_note_table(sync_note *note, const char *schema, const char *name);
void schema_sync_result_add(schema_sync_result *res, int table_id);
/* Asks for the table to be copied again from the start. */
int schema_sync_request_snapshot(schema_sync *ss, int table_id);
bool schema_sync_was_rewritten(const schema_sync *ss, uint32_t relid);
/* A table created, moved or detached into a replicated schema: registered
 * (created on the target, to be copied). *added tells whether it was. */
int schema_sync_add_table(schema_sync *ss, const tabledef *def, tm_lsn pos, sync_note *note,
                          schema_sync_result *res, bool *added);

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
/* A newly registered partitioned table: its partitions, as the source
 * has them now, are recorded. */
int schema_sync_part_record_tree(schema_sync *ss, const tabledef *def);
/* Did the source rewrite a partition of this table in the message's
 * transaction (a root's rows are its partitions')? */
bool schema_sync_part_rewritten(const schema_sync *ss, const ddl_event *e, uint32_t relid);
/* A truncate message (a partition or a partitioned table was truncated):
 * pgoutput sends nothing for a partition truncated by itself, so its root
 * is copied again. *log: the audit log records it. */
int schema_sync_part_truncate(schema_sync *ss, const ddl_event *e, sync_note *note,
                              schema_sync_result *res, bool *log);

#endif
