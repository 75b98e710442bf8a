/*
 * source_wait.h: statements of tidemark's that wait on the source for
 * other transactions, and who they wait for.
 *
 * Creating a logical slot waits for every transaction that holds an xid
 * to end; a LOCK TABLE or a read of a table waits behind an ACCESS
 * EXCLUSIVE lock. Either may wait for hours behind a session left idle in
 * a transaction or a forgotten prepared transaction, with nothing said:
 * these say who, and how to end it (the words: lock_holders.h).
 */
#ifndef TIDEMARK_SOURCE_WAIT_H
#define TIDEMARK_SOURCE_WAIT_H

#include <libpq-fe.h>

#include "strbuf.h"

/* How a statement's wait is watched (borrowed by the calls below):
 * who it waits for is read through a second connection to conninfo (NULL:
 * not read); tick(tick_ctx), when set, is called every second meanwhile,
 * from the waiting thread: run answers the source's keepalives on its
 * replication connection with it, so that a wait longer than
 * wal_sender_timeout does not end the stream. tick must not use conn. */
typedef struct source_wait_watch {
	const char *conninfo;
	void (*tick)(void *ctx);
	void *tick_ctx;
} source_wait_watch;

/* pgconn_exec on the source for a statement that may wait for others'
 * transactions: from 5 s on, every 5 s, it reads who the statement waits
 * for through a second connection (watch->conninfo; closed when the
 * statement ends) and warns "source: <what> has waited N s for:
 * <holders>. Fix: ..." when that changed, or every minute. It waits for
 * as long as the statement does. Returns a status as pgconn_exec; *res as
 * pgconn_exec's. */
int source_wait_exec(PGconn *conn, const source_wait_watch *watch, const char *what,
                     const char *sql, int nparams, const char *const *params, PGresult **res);

/* source_wait_exec's wait, returning the statement's last result as it is
 * (caller owns, PQclear), nothing logged; NULL when the connection
 * failed. */
PGresult *source_wait_run(PGconn *conn, const source_wait_watch *watch, const char *what,
                          const char *sql, int nparams, const char *const *params);

#endif
