/*
 * apply_int.h: what the apply module's files share: apply.c (changes,
 * transactions), apply_rel.c (tables, relations, their statements),
 * apply_net.c (net changes), apply_shape.c (table modes) and apply_join.c
 * (tables joining at a commit, tables set aside). Not for other modules:
 * they use apply.h.
 */
#ifndef TIDEMARK_APPLY_INT_H
#define TIDEMARK_APPLY_INT_H

#include <stdbool.h>
#include <time.h>

#include "apply.h"
#include "dml_sql.h"
#include "key_set.h"
#include "net_change.h"
#include "shape.h"
#include "sqltype.h"

/* Commits remembered until the target's WAL flush passes them. */
#define APPLY_PENDING 64
/* The changes of relations without a table kept in one source transaction,
 * at most (apply_join.c): beyond, such a table's rows are copied. */
#define APPLY_KEEP_BYTES (16LL * 1024 * 1024)
/* A group's net changes held before they are sent, at most, and the array
 * parameters of one statement of many rows (apply_net.c): a transaction
 * of any size streams through in bounded memory. */
#define APPLY_NET_BYTES ((size_t) 8 * 1024 * 1024)
#define APPLY_NET_BATCH_BYTES ((size_t) 2 * 1024 * 1024)
/* A flush's deletes, or partial updates of one set of columns, of one
 * table go as statements of many rows from this many on (fewer: one
 * statement each). Measured (bench_bykey, 2 cores, medians of 3): one
 * statement of 1, 2 or 4 rows took 4.5 to 4.8, 2.4 to 2.7 and 1.3 to 2.2
 * times as long as as many single-row statements pipelined; from 8 rows
 * on 0.5 to 0.9 times (a statement of many rows pays its join once).
 * Those were text array literals; with the arrays in binary, one noisy
 * run: at 8 rows 1.12 (deletes) and 1.27 (partials) times as long, at 16
 * rows 0.83 and 0.92, beyond 0.6 to 1.3 (values of a few bytes gain
 * little from binary). */
#ifndef APPLY_NET_MIN_BY_KEY /* (a build may set it: bench_bykey's peer) */
#define APPLY_NET_MIN_BY_KEY 8
#endif

/* A history's entries held for one flush go in with COPY from this many
 * on (fewer: one statement of arrays, which needs no wait for what was
 * sent before it). Measured (bench_history, 2 cores): a statement of
 * arrays cost the target about 7 us per entry, COPY about 3. */
#define APPLY_HISTORY_COPY_MIN 256

typedef struct apply_kept apply_kept; /* apply_join.c */
typedef struct apply_worker apply_worker; /* apply_workers.c */
typedef struct apply_stream apply_stream; /* apply_stream.c */

/* A streamed transaction is applied as it comes with at most this many
 * savepoints (subtransactions with changes): beyond, it is applied at its
 * commit, so that no target transaction grows past what PostgreSQL caches
 * of a transaction's subtransactions (64) for every reader's snapshot. */
#define APPLY_STREAM_SAVEPOINTS 32
/* The apply's own connection waiting this long while a streamed
 * transaction is applied as it comes: that transaction may hold the lock
 * waited for, and is rolled back (applied at its commit instead). */
#define APPLY_STREAM_STALL_MS 5000

typedef struct apply_partial {
	bool *present;      /* owned: columns set by this statement */
	bool key_changed;
	sink_stmt *stmt;    /* held from the sink (NULL: not made yet) */
	sink_stmt *rows;    /* the same for many rows (apply_net.c; never moved) */
} apply_partial;

/*
 * How apart from the groups in flight a table's rows may be applied
 * (parallel apply: apply_workers.c):
 *   KEY    by key: its rows whose keys no group in flight touched go at
 *          once (every key column's equality is one of identical values);
 *   TABLE  as a whole: its rows wait while a group in flight touched the
 *          table (a key whose values can be equal yet spelled apart);
 *   GROUP  with the whole group: a group with its rows waits until every
 *          earlier group is committed, then goes in its order (the
 *          target's own constraints tie its rows to others: a unique
 *          index on other columns, an exclusion constraint, a foreign key).
 */
typedef enum apply_apart { APPLY_APART_KEY, APPLY_APART_TABLE, APPLY_APART_GROUP } apply_apart;

/* A source relation as the stream last described it. */
typedef struct apply_rel {
	uint32_t relid;
	char *nspname;          /* owned */
	char *relname;          /* owned */
	int ncols;
	char **colnames;        /* owned */
	uint32_t *coltypes;     /* owned: each column's type oid, as described */
	bool *colkeys;          /* owned: each column's replica identity flag */
	char replident;
	int nkeys;
	int *key_idx;           /* owned: key columns, indexes into colnames */
	char **key_types;       /* owned: each key column's type on the target, as
	                         * "schema"."name" (NULL: not known), for the key's
	                         * parameters: a composite or a domain over an enum
	                         * is not found from an untyped one */
	catalog_table *table;   /* borrowed from apply.tables; NULL: not replicated */
	bool keys_ok;           /* key_idx holds table's key (else looked for again at
	                         * the next change that applies: apply_set_aside when
	                         * the stream's columns lack it) */
	bool uncaptured;        /* its columns differ from the schema version in force
	                         * (a schema change the capture did not see): set
	                         * aside at the next change that applies */
	int version_cols;       /* ... which has that many of the columns streamed */
	bool unmatched;         /* no registered table yet: looked at again at the commit
	                         * of a transaction with changes of it (a partition
	                         * never has one, see attach_table) */
	bool changed_in_tx;     /* unmatched, with changes in the transaction being
	                         * applied (apply_join_at_commit) */
	bool described_before;  /* a captured change of its table came after the
	                         * stream last described it (the stream describes a
	                         * relation again only before its next change) */
	tm_lsn described_in;    /* the commit position of the transaction the stream
	                         * last described it in */
	apply_kept *kept;       /* owned: its changes in the transaction while it has no
	                         * table (apply_join.c), NULL when none */
	sqltype *src_types;     /* owned, per column: the source type (by the schema version) */
	sqltype *check;         /* owned, per column: the target type to check values
	                         * against, when the source's no longer fits it */
	bool *checked;          /* owned, per column: check[i] applies */
	int nchecked;
	sink_stmt *upsert;      /* borrowed; built on first use */
	sink_stmt *upsert_plain; /* the same without the table's history (apply_net.c) */
	sink_stmt *upsert_rows;  /* many rows at once (apply_net.c) */
	sink_stmt *history_rows; /* many history entries at once (apply_net.c) */
	sink_stmt *delete_rows;  /* many deletes by key at once (apply_net.c) */
	bool types_loaded;
	apply_apart apart_key;   /* with types: apart by the key alone */
	apply_apart apart;       /* with types: apply_net_apart */
	bool referenced;         /* with types: foreign keys of the target reference it */
	bool over_delete;        /* not referenced, a row of this group's net changes put
	                          * onto a key it deleted: apply_net_flush asks again */
	char **types;            /* owned, per column: its target type rendered (NULL: not
	                          * known, and no statement of many rows) */
	sink_stmt *delete;
	int npartials;
	apply_partial *partials; /* owned */
	/* The table's mode on the target (shape.h), for its statements: loaded
	 * with them (apply_shape_ready), forgotten with them. */
	bool shape_ready;
	shape_loaded shape;
} apply_rel;

/* A group as it is counted once its commit is confirmed. */
typedef struct apply_done {
	tm_lsn end;                 /* its end position */
	pg_timestamp commit_time;   /* its last source commit's time */
	apply_stats counts;         /* its transactions and changes */
	bool marker;                /* it holds the marker's transaction */
} apply_done;

struct apply {
	apply_config cfg;
	sink *sink;                 /* borrowed */
	catalog_table **tables;     /* owned array of owned tables */
	int ntables;
	apply_rel **rels;           /* owned */
	int nrels;
	double constraints_at;      /* their constraints last read again (apply_net.c) */
	tm_lsn applied;             /* committed on the target (visible) */
	tm_lsn durable;             /* committed and flushed to the target's disk */
	int npending;               /* commits not yet known to be flushed: */
	tm_lsn pending_target[APPLY_PENDING];  /* target WAL end of each */
	tm_lsn pending_source[APPLY_PENDING];  /* source position it applied */
	bool in_source_tx;
	uint32_t xid;               /* of the source transaction being applied */
	tm_lsn final_lsn;           /* its commit record's position */
	tm_lsn stop_before;         /* stop at the transaction committed here (0: never) */
	tm_lsn single_until;        /* a target transaction per source transaction up to
	                             * here (apply_single_until; 0: none) */
	pg_timestamp commit_time;   /* of the source transaction being applied */
	bool skipping;              /* this source tx is already applied */
	bool tx_wrote;              /* this source tx has sent something to the target */
	bool commit_after_tx;       /* the group ends with this source tx (apply_type_boundary) */
	bool group_open;
	int group_txs;
	long group_changes;
	tm_lsn group_end;           /* end of the last complete source tx in the group */
	pg_timestamp group_commit_time;
	struct timespec group_started;
	char *marker;               /* owned; NULL when not waiting for one */
	bool marker_in_group;
	bool marker_reached;
	apply_stats stats;
	apply_stats pending;        /* counted in the open group, not yet committed */
	keyless *keyless;           /* owned: tables without a key */
	long long kept_bytes;       /* held by the relations' kept changes */
	bool replaying;             /* kept changes are applied (apply_join.c): they are
	                             * from before the table joined, and apply */
	bool position_set;          /* the session knows this source tx's position
	                             * (shape_set_position) */
	long long hist_seq;         /* history entries this source tx wrote so far */
	bool position_text;         /* pos_lsn and pos_time hold this source tx's: */
	char pos_lsn[LSN_TEXT_MAX]; /* its commit position and time as text, the */
	char pos_time[SHAPE_TIME_TEXT_MAX]; /* parameters of its history entries */
	net_set *net;               /* owned: the group's net changes (apply_net.c) */
	struct row_batch *hist_bufs; /* owned: history entries held, per table (apply_net.c) */
	int nhist_bufs;
	size_t hist_bytes;
	/* a change's values and lengths as net_put takes them (apply_net_put):
	 * owned, put_cap columns, kept from change to change */
	const char **put_vals;
	size_t *put_lens;
	int put_cap;
	bool tx_messaged;           /* this source tx had a tidemark message (on_message) */
	/* parallel apply (apply_workers.c) */
	bool group_begun;           /* the group's BEGIN went to the apply's own connection */
	apply_worker *workers;      /* owned, nworkers of them */
	int nworkers;
	int next_worker;
	key_set group_keys;         /* the keys of the group being sent */
	long par_groups;            /* groups the workers committed */
	long par_waits;             /* of them, with rows held until an earlier one committed */
	/* a group the apply's own connection committed without waiting: the
	 * connection (borrowed) and what the group counts for once confirmed
	 * (apply_workers.c: apply_own_sent) */
	sink *own_busy;
	apply_done own_group;
	/* streamed transactions (apply_stream.c) */
	apply_stream *streams;      /* owned list: those open */
	apply_stream *stream_in;    /* borrowed: the one between Stream Start and Stop */
	sink *stream_sink;          /* owned: the connection of the one applied as it
	                             * comes (opened on first use) */
	net_set *stream_net;        /* owned: its net changes */
	sink *own_sink;             /* the apply's own connection and net changes, */
	net_set *own_net;           /* while a->sink and a->net are the stream's */
	bool stream_swapped;
	bool restart_unstreamed;    /* apply_stream_restart */
	uint32_t restart_xid;
	uint32_t watch_xid;         /* apply_watch_commit: */
	tm_lsn watch_end;           /* its end, once its commit was met */
	long stream_direct;         /* streamed transactions committed as they came */
	long stream_spooled;        /* and from their spool */
};

/* The group committed, its commit record ending before the target's WAL
 * position wal_end: the applied position and the counts follow it. */
void apply_group_committed(apply *a, const apply_done *g, tm_lsn wal_end);

/* A target commit whose WAL ends at target_lsn applied up to source_lsn:
 * durable once the target's flushed WAL passes it (apply.c). */
void apply_note_commit(apply *a, tm_lsn target_lsn, tm_lsn source_lsn);

/* ---- apply.c: what the streamed transactions share with the others ---- */

/* Does the update change the key (both tuples of r's columns)? */
bool apply_key_differs(const apply_rel *r, const pgoutput_tuple *oldt, const pgoutput_tuple *newt);
/* Is a column of t an unchanged TOAST value, not sent? */
bool apply_has_unchanged(const pgoutput_tuple *t);
/* Is the snapshot watching r's table (a chunk's window open)? */
bool apply_watching(const apply *a, const apply_rel *r);

/* ---- apply_stream.c ---- */

/* Something the target must see in source order comes (a tidemark
 * message, a TRUNCATE, tables reloaded): a streamed transaction applied
 * as it comes goes back to its spool (rolled back on its connection). */
int apply_stream_barrier(apply *a, const char *why);
/* The apply's own connection has waited long: the same (sink_set_stall). */
void apply_stream_stalled(void *ctx);
/* Forgets the statements prepared on the streamed transactions'
 * connection (after DDL on the target). */
int apply_stream_reset_statements(apply *a);
void apply_stream_free(apply *a);

/* ---- apply_rel.c: tables, relations, their statements ---- */

/* Takes ownership of *t's contents into a new table of the list. */
catalog_table *apply_adopt_table(apply *a, const catalog_table *t);
/* The registered table (not dropped) with this source oid, or NULL. */
catalog_table *apply_table_relid(apply *a, uint32_t relid);
/* Did the source transaction being applied commit before t joined
 * replication? Then none of its changes apply to it. */
bool apply_before_join(const apply *a, const catalog_table *t);
/* Makes t the relation's table: its key among the stream's columns
 * (r->keys_ok), the checks of its values. */
int apply_use_table(apply *a, apply_rel *r, catalog_table *t);
/* The relation of this source oid as the stream described it, or NULL. */
apply_rel *apply_find_rel(apply *a, uint32_t relid);
/* A Relation message: the relation described (again), its table found. */
int apply_relation(apply *a, const pgoutput_msg *m);
/* Frees what r holds but the struct itself. */
void apply_rel_clear(apply *a, apply_rel *r);
/* Forgets r's statements (built again on next use) and its shape. */
void apply_rel_forget_statements(apply *a, apply_rel *r);
/* Checks a row's values against the target's types where the source's
 * may not fit; true when it went to quarantine instead (*rc: its status). */
bool apply_quarantined(apply *a, const apply_rel *r, const char *change, const pgoutput_tuple *t,
                       int *rc);
/* r's table for dml_sql (borrows r's arrays). */
dml_sql_table apply_rel_sql_table(const apply_rel *r);
/* r's statements, prepared on first use (borrowed from the sink): the
 * upsert of a whole row (with its history's entry), the same of the mirror
 * alone, the delete by key, the update of the present columns (moved: the
 * form for a key change, dml_sql_update_moved). */
sink_stmt *apply_stmt_upsert(apply *a, apply_rel *r);
sink_stmt *apply_stmt_upsert_plain(apply *a, apply_rel *r);
sink_stmt *apply_stmt_delete(apply *a, apply_rel *r);
sink_stmt *apply_stmt_partial(apply *a, apply_rel *r, const bool *present, bool moved);
/* The update of the present columns of many rows (dml_sql_update_rows;
 * types: r's columns' types, apply_net.c). */
sink_stmt *apply_stmt_partial_rows(apply *a, apply_rel *r, const bool *present,
                                   const char *const *types);

/* Lets go of r's statements (held again, from whichever connection is the
 * apply's then, when next used); keeps everything else. */
void apply_rel_release_statements(apply *a, apply_rel *r);

/* ---- apply_workers.c: parallel apply (apply.h) ---- */

/* Opens cfg.workers connections (none below 2) and guards the apply's own. */
int apply_workers_open(apply *a);
void apply_workers_close(apply *a);
/* Does a worker, or the apply's own connection, have a group in flight? */
bool apply_workers_busy(const apply *a);
/* The group that ends committed on connection s (its COMMIT sent, not
 * waited for: apply_workers_settle and _poll confirm it). */
void apply_own_sent(apply *a, sink *s, const apply_done *g);
/* The apply's statements go to s from now on (each relation's held ones
 * let go, found again in s's cache when next used). */
void apply_use_sink(apply *a, sink *s);
/* Does the group that ends go to a worker (nothing of it went elsewhere)? */
bool apply_workers_take(const apply *a);
/* Sends the group that ends to a worker (apply_workers_take). */
int apply_workers_commit(apply *a);
/* Every group in flight confirmed (waiting), or those whose commit has
 * come (poll), the own connection's included. */
int apply_workers_settle(apply *a);
int apply_workers_poll(apply *a);

/* ---- apply_shape.c: tables in another mode than mirror (shape.h) ---- */

bool apply_shaped(const apply_rel *r);
/* The shape for dml_sql (NULL: a plain mirror). */
const dml_sql_shape *apply_shape_of(const apply_rel *r);
/* Before a change of a shaped table: its shape loaded, the session's
 * position set for the source transaction. */
int apply_shape_ready(apply *a, apply_rel *r);
void apply_shape_forget(apply_rel *r);
/* With a history: the entry's op, next seq, position and commit time as
 * parameters n to n + 3 of p (which has room for them). */
void apply_shape_params(apply *a, const apply_rel *r, const char **p, int n, const char *op,
                        arena *scratch);
/* With a history, before an update moves the row under key (parameters,
 * key order) to another key in place: the old key's 'delete' entry. */
int apply_shape_before_move(apply *a, apply_rel *r, const char **key, arena *scratch);
/* A TRUNCATE of a shaped table, before it: its history's entries, and the
 * marks of soft deletes; *keep: the rows stay (soft deletes), so the
 * TRUNCATE leaves the table out. */
int apply_shape_truncate(apply *a, apply_rel *r, bool *keep);

/* ---- apply.c: statements of one change, for apply_net.c ---- */

/* An upsert of the whole row (values: ncols NUL-terminated or NULL), of
 * the mirror alone. */
int apply_send_row(apply *a, apply_rel *r, const char **values, arena *scratch);
/* A delete by key (values: the row's columns; only the key's are read). */
int apply_send_delete_key(apply *a, apply_rel *r, const char *const *values, arena *scratch);
/* An update of the present columns, by key. */
int apply_send_partial(apply *a, apply_rel *r, const bool *present, const char *const *values,
                       arena *scratch);

/* ---- apply_net.c: a group's net changes (apply.h) ---- */

/* How r's changes go (its shape ready):
 *   APPLY_NET_NONE  each sent as it comes
 *   APPLY_NET_ALL   each put as a net change (a table with its key in
 *                   mirror mode)
 *   APPLY_NET_ROWS  whole rows put as net changes of the mirror, their
 *                   history entries held and written by one statement at
 *                   the flush; the other changes (deletes, updates that leave
 *                   TOAST values unsent or move the key) sent alone after
 *                   a flush, as their entries need the mirror's row (a
 *                   history whose columns are the stream's, without
 *                   metadata columns or soft deletes) */
typedef enum apply_net_way { APPLY_NET_NONE, APPLY_NET_ALL, APPLY_NET_ROWS } apply_net_way;
apply_net_way apply_net_way_of(apply *a, apply_rel *r);
/* At a source transaction's start: the loaded tables' constraints and
 * triggers read again once APPLY_CONSTRAINTS_REREAD_S have passed. */
void apply_net_reread_when_due(apply *a);
/* APPLY_NET_ROWS: a whole row put, with its history entry (op). */
int apply_net_history_row(apply *a, apply_rel *r, const char *op, const pgoutput_tuple *t,
                          arena *scratch);
void apply_net_free(apply *a);
/* Forgets r's column types (its statements of many rows go with the
 * others: apply_rel_release_statements). */
void apply_net_forget_rel(apply_rel *r);
/* Puts a change of r: NET_ROW and NET_PARTIAL from t (present: the
 * columns sent), NET_DELETE from t's key. *conflict: not put (a partial
 * onto a key this group deleted): the caller flushes and sends it alone. */
int apply_net_put(apply *a, apply_rel *r, net_kind kind, const pgoutput_tuple *t,
                  const bool *present, bool *conflict);
/* Sends every net change held (a barrier: the target must hold them). */
int apply_net_flush(apply *a);
/* Is a net change of r held until the groups in flight are committed:
 * APPLY_HELD_NO, APPLY_HELD_YES, or APPLY_HELD_ALL (and every other
 * change of the group with it)? */
typedef enum apply_held { APPLY_HELD_NO, APPLY_HELD_YES, APPLY_HELD_ALL } apply_held;
typedef apply_held (*apply_net_held)(void *ctx, apply_rel *r, const net_entry *e);
/* How apart from the groups in flight r's rows may be applied, read from
 * the target once per definition (a->sink; APPLY_APART_GROUP when that
 * fails). */
apply_apart apply_net_apart(apply *a, apply_rel *r);
/* Do foreign keys on the target reference r's table? Read as apart is. */
bool apply_net_referenced(apply *a, apply_rel *r);
/* As apply_net_flush, in two parts: the net changes that held does not
 * claim, then, when it claimed any, held_until(ctx) (which returns once
 * the groups holding their keys are committed), then the rest. */
int apply_net_flush_split(apply *a, apply_net_held held, int (*held_until)(void *ctx),
                          void *ctx);

/* ---- apply_join.c ---- */

/* At the commit of the source transaction being applied: relations with
 * changes in it and no registered table get one if they joined, or are
 * registered now from the source's definition (hooks.before_commit). */
int apply_join_at_commit(apply *a, tm_lsn end_lsn);
/* After the table list was reloaded: relations without a table whose
 * source oid is registered now get it. */
int apply_join_reloaded(apply *a);
/* The stream's columns of r lack its table's key: the table is set aside
 * (registered again from the source's definition now, copied again). */
int apply_set_aside(apply *a, apply_rel *r);
/* A change of r, which has no table yet: kept for the commit. */
void apply_keep(apply *a, apply_rel *r, const pgoutput_msg *m);
/* The stream describes r again (m): its kept changes stay of use only
 * when the columns did not change. */
void apply_keep_described(apply *a, apply_rel *r, const pgoutput_msg *m);
/* A type changed in the transaction (ALTER TYPE ... RENAME VALUE, an
 * attribute): the values kept so far may be spelt under its old
 * definition, which the target never has, so every relation's kept
 * changes are given up (its table, if it joins, is copied). */
void apply_keep_type_changed(apply *a);
/* Frees what r kept. */
void apply_keep_free(apply *a, apply_rel *r);

#endif
