/*
 * sink.h: the target connection. Statements that apply source changes are
 * sent in libpq pipeline mode as prepared statements, in an explicit
 * transaction; they are checked at each sync point. Ordinary queries
 * (catalog reads and writes) may be mixed in and are answered in order.
 *
 * A sync point ends a round of up to 511 statements. Rounds are sent
 * without waiting for the ones before (up to 8 in flight), whose results
 * are read as they come: the target executes one round while the caller
 * prepares the next. A failure is returned by the call that reads it (any
 * later send, a sync, a query), and the statements after it in the same
 * transaction fail too (not logged again). The one rule that keeps this
 * safe: a COMMIT is sent only once the commit before it on the sink is
 * confirmed (sink_commit_send waits for it), so no transaction commits
 * after one whose failure is not known yet.
 *
 * The sink never commits by itself: the caller decides where target
 * transactions end (whole source transactions only), and writes the
 * applied position inside the transaction before sink_commit.
 *
 * Failures are logged here once; the returned status says whether to retry
 * (PGCONN_RETRY_*) or stop (an exit class).
 */
#ifndef TIDEMARK_SINK_H
#define TIDEMARK_SINK_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "lsn.h"

typedef struct sink sink;
typedef struct sink_stmt sink_stmt; /* a prepared statement, owned by its sink */

int sink_open(const char *conninfo, const char *role, sink **out);

/*
 * While the target takes long to answer (a DDL that rewrites a large table,
 * a wait for a lock, a large load), fn(ctx) is called every interval_ms,
 * from the waiting thread: `run` answers the source's keepalives with it,
 * so that the source does not end the stream (wal_sender_timeout) while
 * the apply waits for the target. fn must not use the sink. NULL: none.
 */
typedef void (*sink_tick_fn)(void *ctx);
/*
 * Called before any statement is sent on the sink (but sink_flushed and
 * sink_rollback), with the sink: a failure is returned in the statement's
 * place. The guard may use the sink itself (it is not called again from
 * within). The apply uses it to begin a transaction only when something
 * must be sent, and to let no statement run beside its parallel workers'
 * open transactions. NULL: none.
 */
typedef int (*sink_guard_fn)(void *ctx, sink *s);
void sink_set_guard(sink *s, sink_guard_fn fn, void *ctx);
void sink_set_tick(sink *s, sink_tick_fn fn, void *ctx, int interval_ms);
/* fn(ctx) is called once in a wait for a result that has lasted after_ms,
 * from the waiting thread (the apply: its own connection may wait for a
 * lock a streamed transaction's connection holds). fn must not use the
 * sink. NULL: none. */
void sink_set_stall(sink *s, sink_tick_fn fn, void *ctx, int after_ms);
/* dst's tick becomes src's (a connection that works for src's user). */
void sink_tick_like(sink *dst, const sink *src);
/* While on, a statement refused by a unique, exclusion or foreign-key
 * constraint fails with PGCONN_RETRY_TARGET and a warning instead of the
 * target's error: for rows sent apart from the order of the source, where
 * a constraint the caller did not know of can refuse them. */
void sink_set_order_retry(sink *s, bool on);
void sink_close(sink *s);

/* Multi-statement SQL without parameters, outside any transaction (setup,
 * migrations). */
int sink_script(sink *s, const char *what, const char *sql);

/* Runs one statement and waits for its result (flushing what is queued
 * before it). res may be NULL; otherwise the caller owns *res (PQclear). */
int sink_query(sink *s, const char *what, const char *sql, int nparams,
               const char *const *params, PGresult **res);
int sink_command(sink *s, const char *what, const char *sql, int nparams,
                 const char *const *params);

/*
 * How long the open transaction's statements wait for a lock held by
 * another session: short (SINK_DDL_LOCK_WAIT_MS) for target DDL, which takes
 * its table's ACCESS EXCLUSIVE lock (ALTER TABLE, TRUNCATE, views made
 * again): while it waits, every other query on the table queues behind it,
 * so a warehouse's readers would be held up for as long as one long query
 * or open transaction holds the table. Past the wait the session is
 * retried (55P03) with growing pauses, in which readers go on. The wait
 * is longer than the apply's stall guard (APPLY_STREAM_STALL_MS), which
 * ends a wait on a transaction of the run's own. ddl false: back to the
 * session's wait (SINK_LOCK_WAIT), for the transaction's rows.
 */
#define SINK_LOCK_WAIT "30s"
#define SINK_DDL_LOCK_WAIT_MS 6000
int sink_lock_wait(sink *s, bool ddl);
/* The DDL's wait from now on (SINK_DDL_LOCK_WAIT_MS when the sink opens):
 * run lengthens it while the same transaction fails again, so that a
 * table whose readers never leave it a few seconds free is altered in
 * the end. */
void sink_set_ddl_lock_wait(sink *s, int ms);

/*
 * Runs one statement inside the open transaction under a savepoint: when
 * the server refuses it (a statement error, not a lost connection), the
 * transaction goes back to the savepoint and goes on; *failure is then the
 * server's message (new string, the caller frees it and says what it
 * means: nothing is logged here), else NULL. Returns a status for every
 * other failure.
 */
int sink_try(sink *s, const char *what, const char *sql, char **failure);
/* The same with parameters. */
int sink_try_params(sink *s, const char *what, const char *sql, int nparams,
                    const char *const *params, char **failure);

/*
 * A group of statements that may fail without failing the transaction
 * (one table's schema change): sink_region_begin sets a savepoint; until
 * sink_region_end, a statement the server refuses makes the calls fail
 * (TM_EXIT_TARGET) without being logged. sink_region_end(s, rc, ...) with
 * the status the group ended with: when a statement was refused, the
 * transaction goes back to the savepoint and goes on, and *failure is the
 * server's message (new string, the caller says what it means), the
 * return TM_OK; else *failure is NULL and the return is rc (the savepoint
 * released when rc is TM_OK). Failures a retry may cure (a lock held, the
 * disk full, a lost connection) are never kept here: they are logged and
 * returned as usual. Regions and sink_try nest.
 */
int sink_region_begin(sink *s);
/* From now on, a statement the server refuses (not a failure a retry may
 * cure) is not logged: the call fails with TM_EXIT_TARGET, the transaction
 * is left failed (the caller rolls it back), and sink_take_failure gives
 * the server's message (new string, or NULL when none is kept). For a
 * connection whose work can be done again another way (apply_stream.c). */
void sink_keep_failures(sink *s);
char *sink_take_failure(sink *s);
int sink_region_end(sink *s, int rc, char **failure);

int sink_begin(sink *s);
/* Queues a statement without parameters or result (SAVEPOINT, ...): sql
 * must outlive its result, a string constant or one the sink holds (it
 * names the statement in a failure until its result is read). */
int sink_send_static(sink *s, const char *sql);
bool sink_in_transaction(const sink *s);
/*
 * Commits and waits for the commit (visible, not yet durable: the session
 * uses synchronous_commit = off, so no commit waits for a disk flush).
 * *wal_end (may be NULL) receives a target WAL position at or after the
 * end of the commit record: the transaction is durable once the target's
 * flushed WAL reaches it (sink_flushed).
 */
int sink_commit(sink *s, tm_lsn *wal_end);
/*
 * The same in two halves, for a commit that goes on while the caller does
 * other work (the apply, apply.h): sink_commit_send waits for the commit
 * before it on the sink, then queues COMMIT and the WAL position and sends
 * them; sink_commit_wait reads the results up to them, all (block) or
 * those already come (*done false: not yet; call again). Statements of the
 * next transaction may be sent in between (BEGIN first). *wal_end as
 * sink_commit's, of the last commit confirmed, set when *done; the return
 * is the first failure read (a statement refused, the connection lost).
 */
int sink_commit_send(sink *s);
int sink_commit_wait(sink *s, bool block, bool *done, tm_lsn *wal_end);
/* The statements queued so far go to the server now, to execute while the
 * caller waits on other work (statements are otherwise sent in batches);
 * their results are read as before. */
int sink_push(sink *s);
/* The target's WAL position flushed to disk (not guarded: a read of the
 * server's state, never of a transaction). */
int sink_flushed(sink *s, tm_lsn *out);
/* The connection's socket, to wait on beside others (nothing is read). */
int sink_socket(const sink *s);
/* Rolls back (after a failure); the connection stays usable if it can. */
void sink_rollback(sink *s);

/*
 * Prepared statements are cached by their SQL text, within a budget of
 * bytes (4 MB of statement text by default): beyond it the least recently
 * used ones are deallocated on the server (prepared again when next used)
 * and, unless held, forgotten.
 *
 * sink_stmt_get: the statement for this SQL text, prepared on first use.
 * Borrowed, and valid only until the next call of sink_stmt_get or
 * sink_stmt_hold: pass it to sink_send at once. sink_stmt_hold: the same,
 * held for the caller, who keeps the pointer until sink_stmt_release (or
 * sink_close).
 */
sink_stmt *sink_stmt_get(sink *s, const char *sql, int nparams);
sink_stmt *sink_stmt_hold(sink *s, const char *sql, int nparams);
/* NULL is accepted. */
void sink_stmt_release(sink *s, sink_stmt *st);
/* The cache's budget in bytes (tests, tuning). */
void sink_set_statement_budget(sink *s, size_t bytes);
/* How many statements are prepared on the server; *bytes (may be NULL):
 * what they cost the cache. */
int sink_prepared_statements(const sink *s, size_t *bytes);

/* Forgets every prepared statement (DEALLOCATE ALL): after DDL on the
 * target, a statement prepared before keeps the old parameter types. */
int sink_reset_statements(sink *s);

/* Queues one execution. values[i] NULL is SQL NULL; lengths may be NULL
 * (NUL-terminated values). Errors surface when their round is read. */
int sink_send(sink *s, sink_stmt *stmt, const char *const *values, const int *lengths);
/* The same with each parameter's format (0 text, 1 binary, as libpq's;
 * NULL: all text); a binary value needs its length. */
int sink_send_formats(sink *s, sink_stmt *stmt, const char *const *values, const int *lengths,
                      const int *formats);

/* A statement meant to change one row (an update or delete of a table
 * without a key, matched by its whole old row): when an execution of it
 * changes none, the sink says so with the label ("an update of
 * public.t", copied) and counts it, per label, instead of failing. */
void sink_stmt_expect_row(sink *s, sink_stmt *st, const char *label);
/* How many executions of statements with this label changed no row. */
long sink_misses_of(const sink *s, const char *label);

/* Waits for everything queued so far and reports the first failure. */
int sink_sync(sink *s);

/* COPY ... FROM STDIN inside the current transaction: start, rows as COPY
 * text lines, end. */
int sink_copy_begin(sink *s, const char *sql);
int sink_copy_data(sink *s, const char *data, int len);
int sink_copy_end(sink *s);

/* Statements sent since open (for progress counters). */
long sink_statements(const sink *s);

#endif
