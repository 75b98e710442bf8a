/*
 * lock_holders.h: who keeps a tidemark statement waiting on the source,
 * in words an operator can act on. Pure.
 *
 * A copy's read of a table waits behind a session or a prepared
 * transaction that holds (or waits for) an ACCESS EXCLUSIVE lock on it:
 * an ALTER TABLE, VACUUM FULL, CLUSTER or LOCK TABLE not yet committed.
 * Creating a logical slot waits for every transaction that has an xid to
 * end. A prepared transaction (PREPARE TRANSACTION) has no session: it
 * keeps its locks and its xid until COMMIT PREPARED or ROLLBACK PREPARED,
 * across restarts, and is easily forgotten.
 *
 * Each holder is one row read by source_query_lock_holders or
 * source_query_blockers; the text never holds a statement of the holder's
 * (it may carry a secret), only who it is and since when.
 */
#ifndef TIDEMARK_LOCK_HOLDERS_H
#define TIDEMARK_LOCK_HOLDERS_H

#include <stdbool.h>

#include "strbuf.h"

/* Strings are borrowed; NULL or "" where the source gave none. */
typedef struct lock_holder {
	bool waiting;             /* queued for the lock itself, not holding it */
	int pid;                  /* 0 for a prepared transaction */
	const char *gid;          /* a prepared transaction's name */
	const char *role;         /* usename, or the prepared transaction's owner */
	const char *application;  /* application_name */
	const char *state;        /* active, idle in transaction, ... */
	const char *since;        /* its transaction's start, or when it was prepared */
} lock_holder;

/* Appends "pid 123 (role app, application \"psql\", idle in transaction
 * since ...)" or "prepared transaction 'p1' (prepared ... by app)" for
 * each holder, "; "-separated, then the fix: end those transactions, with
 * the statements that do it (COMMIT PREPARED / ROLLBACK PREPARED with the
 * name as a literal, pg_terminate_backend). n == 0: "no session holds it
 * any longer". */
void lock_holders_describe(const lock_holder *h, int n, strbuf *out);

#endif
