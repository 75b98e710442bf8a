/*
 * lock_watch.h: on either server, who a session's statement waits for,
 * and who holds (or waits ahead for) a table's ACCESS EXCLUSIVE lock, read
 * from pg_locks, pg_stat_activity and pg_prepared_xacts (a prepared
 * transaction holds locks with no session) and described in
 * lock_holders.h's words, with the statements that end them.
 */
#ifndef TIDEMARK_LOCK_WATCH_H
#define TIDEMARK_LOCK_WATCH_H

#include <libpq-fe.h>

#include "pgconn.h"
#include "strbuf.h"

/* Appends to out who the statement of backend pid waits for (through
 * conn, another session of that server); *n: how many (0: it waits for no
 * transaction, and nothing is appended but lock_holders' word for none). */
int lock_watch_blockers(PGconn *conn, pgconn_side side, int pid, strbuf *out, int *n);

/* Appends to out who holds, or waits ahead for, an ACCESS EXCLUSIVE lock
 * on schema.name or one of its partitions. */
int lock_watch_table_holders(PGconn *conn, pgconn_side side, const char *schema, const char *name,
                             strbuf *out);

#endif
