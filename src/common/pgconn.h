/*
 * pgconn.h: opening libpq connections the tidemark way, running statements
 * with parameters, and classifying their failures.
 *
 * Every connection gets application_name "tidemark <role>" and the session
 * settings that make text output of values identical on every connection
 * (DateStyle, IntervalStyle, TimeZone, extra_float_digits, bytea_output):
 * the snapshot compares key values read by SELECT with key values decoded
 * from the stream as text, so both must be spelled alike.
 *
 * A failure is logged once, here, with the side ("source"/"target"), what
 * was being done and the server's message; callers only propagate the
 * returned status: TM_OK, PGCONN_RETRY_* (transient: reconnect and resume),
 * or an exit class from exitcode.h.
 */
#ifndef TIDEMARK_PGCONN_H
#define TIDEMARK_PGCONN_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "exitcode.h"

/* Transient failure of the source or the target: `run` drops its
 * connections and resumes from the position stored on the target, after a
 * backoff. One-shot commands exit with the side's code (pgconn_exit_code). */
#define PGCONN_RETRY_SOURCE 100
#define PGCONN_RETRY_TARGET 101
/* The replication slot is in use by another process: retried for a while
 * (a killed run's server process may still hold it), then a configuration
 * error. */
#define PGCONN_RETRY_SLOT_BUSY 102
#define PGCONN_IS_RETRY(rc) ((rc) >= PGCONN_RETRY_SOURCE && (rc) <= PGCONN_RETRY_SLOT_BUSY)

/* Maps a status to the process exit code (retry codes to their side). */
int pgconn_exit_code(int rc);

typedef enum pgconn_side {
	PGCONN_SOURCE,
	PGCONN_TARGET,
} pgconn_side;

/* Warns, at setup, when the target database's encoding cannot hold every
 * character of the source database's. */
void pgconn_warn_encodings(PGconn *src, PGconn *dst);
const char *pgconn_side_name(pgconn_side side);

/* Opens a connection. replication: adds replication=database. Returns a
 * status; *out is a new connection (caller owns, PQfinish) on TM_OK, NULL
 * otherwise. The connection's application_name is "tidemark <role>", or
 * the user's own (conninfo or PGAPPNAME) followed by "(tidemark <role>)". */
int pgconn_open(const char *conninfo, pgconn_side side, const char *role, bool replication,
                PGconn **out);

/* The password of every later connection to side (libpq's password
 * parameter, over the connection string's and ~/.pgpass), from a password
 * file; NULL: none. Borrowed: it must outlive the connections (main's
 * options). Set before any thread starts. */
void pgconn_set_password(pgconn_side side, const char *password);

/* True when the connection string holds a password. */
bool pgconn_has_password(const char *conninfo);

/* Checks a connection string's syntax without connecting. */
int pgconn_check_conninfo(const char *conninfo, const char *option_name);

/* "host=h port=p dbname=d user=u": never the password. Writes into buf. */
const char *pgconn_describe(const char *conninfo, char *buf, size_t size);

/* Runs sql with text parameters. On success returns TM_OK and, when res is
 * not NULL, the result (caller owns, PQclear). On failure logs
 * "<side>: <what>: <server message>" and returns the classified status. */
int pgconn_exec(PGconn *conn, pgconn_side side, const char *what, const char *sql,
                int nparams, const char *const *params, PGresult **res);

/* pgconn_exec's outcome for a result the caller obtained (r: owned, NULL
 * for a lost connection): TM_OK with *res, or logged and classified. */
int pgconn_result(PGconn *conn, pgconn_side side, const char *what, PGresult *r,
                  PGresult **res);

/* Like pgconn_exec but for statements returning no rows. */
int pgconn_command(PGconn *conn, pgconn_side side, const char *what, const char *sql,
                   int nparams, const char *const *params);

/* Runs a multi-statement script without parameters (simple protocol). */
int pgconn_script(PGconn *conn, pgconn_side side, const char *what, const char *sql);

/* Classifies a failed result (or a broken connection when res is NULL) and
 * logs it. Used by modules that run their own libpq calls (pipeline, COPY). */
int pgconn_fail(PGconn *conn, pgconn_side side, const char *what, const PGresult *res);

/* The table a failed statement read, for a fix that names it. */
typedef struct pgconn_subject {
	const char *schema;
	const char *table;
	const char *owner;       /* the table's owner (may be NULL) */
} pgconn_subject;

/* pgconn_fail for a statement that reads one table: a missing privilege is
 * reported with the GRANT that gives it, for this table and for those
 * created later in its schema (ALTER DEFAULT PRIVILEGES). */
int pgconn_fail_on(PGconn *conn, pgconn_side side, const char *what, const PGresult *res,
                   const pgconn_subject *subject);

/* Status for a SQLSTATE (NULL: connection-level failure). */
int pgconn_classify(pgconn_side side, const char *sqlstate, bool connection_ok);

#endif
