/*
 * apply.h: turns decoded pgoutput messages into target writes.
 *
 * Each source transaction is applied whole inside one target transaction;
 * consecutive source transactions may share a target transaction (a group),
 * never split. The end position of the group's last source commit is
 * written to tidemark.progress in the same target transaction, so the
 * target always holds exactly the transactions up to its stored position.
 * Target commits do not wait for the disk (synchronous_commit = off); the
 * position reported to the source as flushed follows the target's flushed
 * WAL, so a crash of the target loses nothing the source still needs.
 * A group's COMMIT is not waited for: the apply reads the next group from
 * the stream while the target executes it, and confirms it (the applied
 * position and the counts follow) when the stream is idle, before anything
 * waits for the target's state, and before the next group's COMMIT (which
 * the sink sends only then: sink.h).
 *
 * Net changes (cfg.net_changes): within a group only each key's last state
 * is seen by readers, so the changes of tables with a key in mirror mode
 * are reduced to one per key (net_change.h) and sent when the group needs
 * the target to hold them: before its commit, before anything else that
 * reads or changes the target (a capture or watermark message and what it
 * runs: schema changes, chunk loads; a relation described again; a
 * TRUNCATE; tables joining at a commit; a key-changing update whose
 * unchanged TOAST values were not sent), and when they exceed
 * APPLY_NET_BYTES. Quarantine and the snapshot's windows see every change
 * as it comes; tables in another mode (a history) and tables without a
 * key get every change.
 *
 * Rows: inserts and updates are keyed upserts, deletes by key, updates that
 * change the key delete the old key; a column sent as "unchanged TOAST"
 * keeps the target's value (a partial UPDATE), never becomes NULL. A
 * partial UPDATE that changes the key and finds no row to move asks for
 * the row to be read again from the source (snapshot.h). A table without a
 * key is changed one row at a time by its whole old row (keyless.h), or
 * its changes are skipped or kept while it is copied (hooks.keyless_mode).
 *
 * Parallel apply (cfg.workers >= 2, with net changes; apply_workers.c): a
 * group whose changes are all net changes of tables with a key in mirror
 * mode, and that needed nothing else of the target, is sent whole to one
 * of cfg.workers connections of its own when it ends; the apply reads on
 * while the target executes it. Its COMMIT is sent once every earlier
 * group is confirmed committed, so groups commit in source order and the
 * committed ones are always the first (the position each stores stays
 * exact through a crash at any instant); a group that touches a key of a
 * group not yet confirmed waits for it first. Everything else goes to the
 * apply's own connection, only once no worker has a group open, and in the
 * group's own transaction, begun there when something is first sent.
 *
 * A table's history starts at its registration position (catalog_table.
 * registered_lsn): the changes of a source transaction that committed
 * before it are not applied (the table's copy, which follows, has them). A
 * relation with changes and no registered table is registered, if at all,
 * at the commit of the transaction (hooks.before_commit); its changes of
 * the transaction are kept meanwhile (up to APPLY_KEEP_BYTES), and applied
 * at the commit instead of a copy when the table was created in it. When the
 * stream's columns of a registered table lack its key (a schema change
 * that was not captured), the table is set aside: registered again from
 * the source's definition now and copied again; the others go on.
 */
#ifndef TIDEMARK_APPLY_H
#define TIDEMARK_APPLY_H

#include <stdbool.h>

#include "arena.h"
#include "catalog.h"
#include "keyless.h"
#include "lsn.h"
#include "metrics.h"
#include "pgoutput.h"
#include "sink.h"
#include "tabledef.h"

typedef struct apply apply;

/* What the capture messages of the source transaction being applied said
 * about a relation that has no registered table (hooks.described). */
typedef enum apply_described {
	APPLY_NOT_DESCRIBED,   /* nothing: registered, if at all, from the source's definition */
	APPLY_DESCRIBED,       /* a table not registered yet (joining is decided at the commit) */
	APPLY_CREATED,         /* that, and created in the transaction and not rewritten: its
	                        * changes of the transaction are all its rows */
} apply_described;

/* A table's definition as the source has it now, with the position its
 * history starts at (source_query_table_def_at): for a table of a
 * replicated schema that no capture message made known, and for a table
 * set aside because the stream's rows do not fit its definition. *out
 * new, or NULL to skip the table. */
typedef int (*apply_resolve_fn)(void *ctx, const char *schema, const char *name, tabledef **out,
                                tm_lsn *at);

/*
 * Observers of the stream, for the snapshot's chunk windows. Key values
 * are text with lengths, in the table's key order; names/values are the
 * columns an update sent (values[i] NULL: SQL NULL).
 */
typedef struct apply_hooks {
	void *ctx;
	bool (*watching)(void *ctx, int table_id);
	void (*on_row)(void *ctx, int table_id, const char *const *key, const size_t *key_len);
	void (*on_partial)(void *ctx, int table_id, const char *const *key, const size_t *key_len,
	                   int n, const char *const *names, const char *const *values,
	                   const size_t *value_len);
	void (*on_truncate)(void *ctx, int table_id);
	void (*on_commit)(void *ctx, uint32_t xid, tm_lsn commit_lsn);
	/* A key-changing update that did not send every column went out: it
	 * may have asked for its row to be read again (snapshot.h). */
	void (*on_reread)(void *ctx, int table_id);
	/* a transactional message with a "tidemark." prefix (but the marker),
	 * met inside the open target transaction; commit_time: its source
	 * transaction's */
	int (*on_message)(void *ctx, const pgoutput_msg *m, pg_timestamp commit_time);
	void *message_ctx;         /* on_message's ctx */
	/* What to do with a change of a table without a key; state: the
	 * catalog's (snapshot_pending, ..., streaming) as the apply knew it.
	 * NULL: apply every change. */
	keyless_mode (*keyless_mode)(void *ctx, int table_id, const char *state);
	/* The source transaction being applied commits (end_lsn: the end of
	 * its commit record), before anything else is done about it, inside
	 * its target transaction: tables join replication (schema_sync_commit).
	 * Relations with changes in it and no registered table are then
	 * looked at again: one whose table joined gets it (and, created in
	 * the transaction, its changes of it applied instead of a copy); one
	 * that no capture message described is registered now from the
	 * source's definition. */
	int (*before_commit)(void *ctx, tm_lsn end_lsn);
	apply_described (*described)(void *ctx, uint32_t relid);
	/* A table was registered by the apply (from the source's definition),
	 * or registered again (set aside: catalog_restart_table): its copy
	 * starts (again). */
	void (*on_registered)(void *ctx, int table_id);
	void *commit_ctx;          /* before_commit's, described's and on_registered's ctx */
} apply_hooks;

typedef struct apply_config {
	const char *slot;          /* borrowed */
	int group_max_txs;         /* source transactions per target transaction */
	long group_max_changes;    /* rows per target transaction (soft: whole txs) */
	int group_max_ms;          /* age of a target transaction before it commits */
	apply_resolve_fn resolve;  /* may be NULL */
	void *resolve_ctx;
	apply_hooks hooks;         /* members may be NULL */
	metrics *metrics;          /* borrowed; NULL: none. Counts are staged and
	                            * committed with each target transaction */
	bool net_changes;          /* a group applies each key's net change (below) */
	int workers;               /* parallel apply connections (below); 1: none */
	const char *target;        /* borrowed: their conninfo (and the streamed
	                            * transactions' connection) */
	bool stream_direct;        /* a transaction the source streams in progress is
	                            * applied as it comes, where it may (below) */
	const char *spool_dir;     /* borrowed: where streamed transactions are
	                            * spooled (NULL: $TMPDIR, else /tmp) */
} apply_config;

typedef struct apply_stats {
	long long txs;             /* source transactions applied (committed) */
	long long changes;         /* row changes applied (committed) */
	long long groups;          /* target transactions committed */
	pg_timestamp last_commit_time; /* source commit time of the last applied tx */
} apply_stats;

/* Loads the catalog (tables, applied position) through the sink (borrowed). */
int apply_new(sink *s, const apply_config *cfg, apply **out);
void apply_free(apply *a);

/* Applies one message. Scratch memory (the caller's arena, reset by the
 * caller after each message) holds the message's arrays. */
int apply_message(apply *a, const pgoutput_msg *m, arena *scratch);

/*
 * Transactions the source streams while they are in progress (pgoutput
 * streaming; apply_stream.c). Each one's messages are spooled to a file of
 * its own (bounded memory, whatever its size) and, while it only changes
 * rows of tables with a key in mirror mode that no copy is busy with, also
 * applied as they come (cfg.stream_direct): as net changes, in a target
 * transaction of its own on a connection of its own, with a savepoint per
 * subtransaction. At its Stream Commit, once every group before it is
 * committed, that transaction stores its position and commits: the
 * transaction reaches the target moments after its commit on the source.
 * Anything else met on the way (a schema change or another message of
 * tidemark's, a TRUNCATE, a table being copied or in another mode or
 * without a key, a value to check, a copy starting, a wait of the apply's
 * own connection for a lock it holds) rolls that target transaction back,
 * and the transaction is applied at its commit from its spool, the usual
 * way, as if it had come whole. A Stream Abort rolls back (to the
 * subtransaction's savepoint, and cuts the spool back to its start).
 *
 * A subtransaction rolled back around a tidemark message (a DDL in a
 * savepoint) cannot be told apart in the stream, whose messages carry the
 * top transaction's xid: apply_stream_restart then says the session must
 * start again without streaming until that transaction is applied.
 */
/* Applies one message as received: streamed ones (Stream Start, Stop,
 * Commit, Abort and the messages between them: m->stream_xid, raw and len
 * their bytes, lsn their position) here, the others by apply_message. */
int apply_received(apply *a, const pgoutput_msg *m, const char *raw, size_t len, tm_lsn lsn,
                   arena *scratch);
/* Must the session start again without streaming? *xid: until this
 * transaction is applied (apply_watch_commit). */
bool apply_stream_restart(const apply *a, uint32_t *xid);
/* Watches for the commit of transaction xid: apply_watched_applied is
 * true once its target transaction is committed. */
void apply_watch_commit(apply *a, uint32_t xid);
bool apply_watched_applied(const apply *a);
/* The transactions streamed so far and applied as they came, and those
 * applied at their commit from their spool. */
void apply_stream_counts(const apply *a, long *direct, long *spooled);

/* The source has nothing more right now: commit an open group when it ends
 * on a source transaction boundary. */
int apply_idle(apply *a);

/* Everything up to lsn has been received and nothing is pending (a
 * keepalive while idle): store lsn as applied so the source may free WAL. */
int apply_advance(apply *a, tm_lsn lsn);

/* Waits until every group whose COMMIT was sent (on the apply's own
 * connection or a parallel worker's) is confirmed (the source has nothing
 * more for now, or the run ends). */
int apply_settle(apply *a);
/* The socket of a connection with a commit to confirm, to wait on beside
 * the source's (its answer calls for apply_settle); -1: none. */
int apply_wake_fd(const apply *a);

/* The position applied and flushed to the target's disk: the only one ever
 * reported to the source as flushed. Advanced by apply_refresh_durable. */
tm_lsn apply_position(const apply *a);
/* The position committed (visible) on the target, perhaps not flushed. */
tm_lsn apply_committed(const apply *a);
/* Asks the target how far its WAL is flushed (one query, only when some
 * commit is not known durable yet). */
int apply_refresh_durable(apply *a);
/* At a clean end, with no group open: the target's WAL flushed through the
 * last commit (catalog_flush_progress) when some commit is not known
 * durable yet, so that the source can be told everything applied, and a
 * restart decodes none of it again. */
int apply_make_durable(apply *a);
bool apply_in_transaction(const apply *a);        /* a source tx or a target group open */
bool apply_in_source_transaction(const apply *a); /* between a source Begin and Commit */
const apply_stats *apply_get_stats(const apply *a);

/* The marker message content that ends `run --until-caught-up`; once its
 * transaction is committed on the target, apply_marker_reached is true. */
void apply_set_marker(apply *a, const char *content);
bool apply_marker_reached(const apply *a);

/* Forgets every prepared statement of the apply's connections (after DDL
 * on the target: sink_reset_statements), the parallel workers' too. */
int apply_reset_statements(apply *a);

/* Reloads the table list from the catalog (after `snapshot` requests). */
int apply_reload_tables(apply *a);
/* The same for the tables of these ids only (a schema change of a few of
 * many tables: one query of those rows, not of every table's). */
int apply_reload_tables_ids(apply *a, const int *ids, int nids);

/* The stop policy: apply every transaction before the one committed at
 * commit_lsn, then return TM_EXIT_POLICY when it begins. */
void apply_stop_before(apply *a, tm_lsn commit_lsn);
/*
 * One target transaction per source transaction for the transactions
 * committed up to lsn, as PostgreSQL's own subscription applies them; then
 * groups again. For the session after one that failed on the target:
 * what a group of many did not get through (a target transaction touching
 * more tables than the target's lock table holds, out of memory) goes
 * through alone, or fails alone, at its own position.
 */
void apply_single_until(apply *a, tm_lsn lsn);

/* The commit position of the source transaction being applied. */
tm_lsn apply_current_commit_lsn(const apply *a);
/* Its commit time (pgoutput's Begin). */
pg_timestamp apply_current_commit_time(const apply *a);
/* Its transaction id as the stream gives it (32 bits, pgoutput's Begin). */
uint32_t apply_current_xid(const apply *a);

/*
 * The source transaction being applied changes types on the target (a
 * capture message of ALTER TYPE, ALTER DOMAIN, ...; or ALTER TYPE ... ADD
 * VALUE ran for a table): a value that ALTER TYPE ... ADD VALUE adds to an
 * enum cannot be used in the target transaction that added it (SQLSTATE
 * 55P04), so that target transaction must commit before the rows of later
 * source transactions. The group therefore ends with this source
 * transaction; and when this transaction has sent nothing to the target
 * yet (the message comes first), the group's earlier transactions are
 * committed now and this one gets a target transaction of its own. Called
 * from an on_message hook, before the message changes anything. The
 * changes kept so far for tables that join at the commit are given up
 * (those tables are copied): their values are spelt under the type's old
 * definition.
 */
int apply_type_boundary(apply *a);
/* The group ends with the source transaction being applied (the second
 * half of apply_type_boundary, for a change found to need it once made). */
void apply_commit_after(apply *a);
/* The statements of tables without a key (borrowed: the apply's). */
keyless *apply_keyless(apply *a);

/* Forgets the statements built for a table (its target definition changed). */
void apply_forget_statements(apply *a, int table_id);

/* The columns the stream last described for a table (borrowed names), or
 * false when the stream has not described it in this session, or not since
 * a captured change of its definition (the stream describes a relation
 * again only before its next row), or not since the table joined. */
bool apply_stream_columns(const apply *a, int table_id, int *ncols, const char *const **names);

#endif
