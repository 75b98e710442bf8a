/*
 * pgtest.h: the harness for tidemark's integration tests.
 *
 * Throwaway PostgreSQL clusters (tests/tools/pgcluster), SQL helpers that
 * fail the running cmocka test with the server's message, waiting on a
 * deadline instead of sleeping, running the tidemark binary, comparing
 * tables and running SQL workloads in the background.
 *
 * Cleanup: everything the harness starts, it stops. Clusters, processes and
 * workloads still alive at exit, or when the test receives SIGINT or
 * SIGTERM, are ended, and the per-process directory (pgtest_dir) is removed
 * unless PGTEST_KEEP=1 is set. A test process that dies without cleaning up
 * (SIGKILL, a CTest timeout) still leaves nothing running: each cluster has
 * a watchdog that stops it once the test process is gone, and spawned
 * processes are killed when their parent dies. Its directory, with the
 * server logs, stays for inspection until the next test process starts.
 *
 * Clusters: each is a fresh initdb (its own system identifier), which takes
 * a second or two; share clusters between the tests of a file (cmocka group
 * setup) where the tests allow it.
 *
 * Failures: the helpers marked "fails the test" report the caller's file
 * and line and the cause, then fail the running cmocka test (outside one,
 * they exit the process). On a workload thread they never fail: a failed
 * command counts as one error of the workload and the helper returns NULL,
 * 0 or false.
 *
 * Signals: the harness handles SIGINT and SIGTERM on a thread of its own,
 * so it blocks them in the thread that first calls it (call it before
 * starting threads of your own). Processes it starts get the default mask.
 *
 * Ownership: a returned char * is the caller's to free unless said
 * otherwise; a cluster, process or workload belongs to the harness until it
 * is passed to its stop or free function.
 */
#ifndef TIDEMARK_PGTEST_H
#define TIDEMARK_PGTEST_H

#include <stdbool.h>
#include <sys/types.h>

#include <libpq-fe.h>

/* ---- the per-process directory --------------------------------------- */

/* The directory (under $TMPDIR or /tmp) that holds this process's clusters,
 * server logs and process output. Owned by the harness. */
const char *pgtest_dir(void);
/* pgtest_dir()/name. */
char *pgtest_path(const char *name);
/* Writes a file pgtest_dir()/name from a format; returns its path. Fails the
 * test on an I/O error. */
#define pgtest_write_file(name, ...) pgtest_write_file_at(__FILE__, __LINE__, (name), __VA_ARGS__)

/* ---- clusters ---------------------------------------------------------- */

/* A running throwaway cluster. Its fields are read-only for tests. */
typedef struct pgtest_cluster {
	char *name;      /* unique within the process */
	int port;        /* on 127.0.0.1; kept across restart and kill9 */
	char *conninfo;  /* host=127.0.0.1 port=N dbname=postgres user=postgres */
	char *log_path;  /* the server log */
} pgtest_cluster;

/* Starts a new cluster (wal_level=logical, trust auth). Fails the test. */
#define pgtest_cluster_start(name) pgtest_cluster_start_at(__FILE__, __LINE__, (name), NULL)
/* The same with extra settings, each "guc=value":
 * pgtest_cluster_start_with("dst", "fsync=off", "max_connections=20") */
#define pgtest_cluster_start_with(name, ...) \
	pgtest_cluster_start_at(__FILE__, __LINE__, (name), (const char *const[]) {__VA_ARGS__, NULL})
/* Stops the cluster (fast shutdown), removes its data and frees it. */
void pgtest_cluster_stop(pgtest_cluster *c);
/* Restarts on the same port; immediate = crash-like shutdown first. Also
 * starts a cluster that pgtest_cluster_kill9 left down. Fails the test. */
#define pgtest_cluster_restart(c, immediate) \
	pgtest_cluster_restart_at(__FILE__, __LINE__, (c), (immediate))
/* SIGKILLs the postmaster and its children (a crash); restart brings it
 * back through crash recovery. Fails the test. */
#define pgtest_cluster_kill9(c) pgtest_cluster_kill9_at(__FILE__, __LINE__, (c))
/* The cluster's conninfo for another database. */
char *pgtest_conninfo_db(const pgtest_cluster *c, const char *dbname);

/* A physical standby of primary on loopback: pg_basebackup of it, then
 * streaming from it through the physical slot slot (created on the
 * primary; NULL: none), with extra settings ("guc=value", after the
 * primary's own, which the copy keeps). Read-only until promoted. Stop it
 * with pgtest_cluster_stop. Fails the test. */
#define pgtest_cluster_standby(primary, name, slot, ...)                                     \
	pgtest_cluster_standby_at(__FILE__, __LINE__, (primary), (name), (slot),                 \
	                          (const char *const[]) {__VA_ARGS__, NULL})
/* Promotes a standby (pg_ctl promote, waiting until it accepts writes).
 * Fails the test. */
#define pgtest_cluster_promote(c) pgtest_cluster_promote_at(__FILE__, __LINE__, (c))
/* Upgrades the cluster in place with pg_upgrade (pgcluster upgrade: a new
 * cluster of the same programs, a new system identifier, oids kept, logical
 * slots kept from PostgreSQL 17) and starts it on the same port. Close
 * connections to it first. Fails the test. */
#define pgtest_cluster_upgrade(c) pgtest_cluster_upgrade_at(__FILE__, __LINE__, (c))

/* ---- SQL ----------------------------------------------------------------- */

/* Connects to the cluster (or a conninfo). Fails the test. */
#define pgtest_connect(c) pgtest_connect_at(__FILE__, __LINE__, (c)->conninfo)
#define pgtest_connect_str(conninfo) pgtest_connect_at(__FILE__, __LINE__, (conninfo))
/* Runs SQL (printf format; one or more statements). Fails the test with the
 * server's message. */
#define pgtest_exec(conn, ...) pgtest_exec_at(__FILE__, __LINE__, (conn), __VA_ARGS__)
/* Runs SQL and returns the server's error message, or NULL on success. */
char *pgtest_exec_error(PGconn *conn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The single value of a query (printf format): NULL for no row or an SQL
 * NULL. Fails the test on an error or on more than one row or column. */
#define pgtest_query_value(conn, ...) pgtest_query_value_at(__FILE__, __LINE__, (conn), __VA_ARGS__)
/* The single value of a query as an integer. Fails the test unless there is
 * exactly one non-NULL integer. */
#define pgtest_query_long(conn, ...) pgtest_query_long_at(__FILE__, __LINE__, (conn), __VA_ARGS__)

/* ---- waiting ------------------------------------------------------------- */

/* Polls cond(arg) until it is true (returns true) or timeout_s seconds have
 * passed (returns false). The interval grows from 5 ms to 100 ms. */
bool pgtest_wait_for(bool (*cond)(void *arg), void *arg, double timeout_s);
/* Waits until the query returns expected (NULL: no row or an SQL NULL).
 * Query errors count as "not yet"; a broken connection is reset. On
 * timeout, prints what the query last returned and returns false. */
bool pgtest_wait_value(PGconn *conn, const char *sql, const char *expected, double timeout_s);

/* ---- processes ----------------------------------------------------------- */

typedef struct pgtest_proc pgtest_proc;

/* Starts TIDEMARK_BIN with argv: the arguments after the program name,
 * NULL-terminated. env (may be NULL): NULL-terminated overrides of this
 * process's environment, "NAME=VALUE" to set and "NAME" to unset. Standard
 * output and error go to a file in pgtest_dir(); standard input is
 * /dev/null. Fails the test if the program cannot be started. */
#define pgtest_spawn(argv, env) pgtest_spawn_at(__FILE__, __LINE__, TIDEMARK_BIN, (argv), (env))
/* The same for any program (path: absolute, or found in PATH). */
#define pgtest_spawn_program(path, argv, env) \
	pgtest_spawn_at(__FILE__, __LINE__, (path), (argv), (env))
/* Waits for the process to exit and returns its exit status, or 128 + the
 * signal that ended it. On timeout, kills its process group and fails the
 * test, showing the end of its output. May be called again after exit. */
#define pgtest_proc_wait(p, timeout_s) pgtest_proc_wait_at(__FILE__, __LINE__, (p), (timeout_s))
/* True while the process has not exited. */
bool pgtest_proc_running(pgtest_proc *p);
pid_t pgtest_proc_pid(const pgtest_proc *p);
/* Sends sig to the process (not to its children). */
void pgtest_proc_kill(pgtest_proc *p, int sig);
/* Everything the process has written so far. Owned by p; valid until the
 * next call for p or pgtest_proc_free. */
const char *pgtest_proc_output(pgtest_proc *p);
/* Waits until the output contains needle. False on timeout, or as soon as
 * the process has exited without writing it. */
bool pgtest_proc_wait_output(pgtest_proc *p, const char *needle, double timeout_s);
/* SIGKILLs the process group if still running, reaps it and frees p. */
void pgtest_proc_free(pgtest_proc *p);
/* Runs tidemark to completion: its exit status (as pgtest_proc_wait), and
 * its output in *output when output is not NULL. Fails the test on timeout. */
#define pgtest_run_tidemark(argv, timeout_s, output) \
	pgtest_run_tidemark_at(__FILE__, __LINE__, (argv), (timeout_s), (output))

/* ---- comparing tables ---------------------------------------------------- */

/* Compares a table on two servers row by row: both sides are read through
 * cursors ordered by order_by (SQL, e.g. "id" or "a, b") and every column
 * is compared by its text, columns matched by name. Returns true if equal;
 * else false and, when diff is not NULL, a description of the first
 * difference (or of the error, e.g. a missing table) in *diff. Streams, so
 * large tables are fine. qualified_table is SQL, e.g. public.t. Runs in a
 * repeatable-read transaction unless the connection is already in one. */
bool pgtest_tables_equal(PGconn *src, PGconn *dst, const char *qualified_table,
						 const char *order_by, char **diff);

/* ---- background workloads ------------------------------------------------ */

typedef struct pgtest_workload pgtest_workload;
typedef void (*pgtest_step_fn)(PGconn *conn, void *arg, unsigned iteration);

/* Connects (fails the test if it cannot) and calls step(conn, arg, i) for
 * i = 0, 1, ... on a thread of its own until stopped. In a step, the
 * harness's SQL helpers count errors instead of failing; after a step, a
 * failed transaction is rolled back and a broken connection re-established
 * (so a workload survives a server restart). */
pgtest_workload *pgtest_workload_start(const char *conninfo, pgtest_step_fn step, void *arg);
/* Steps completed so far (callable while it runs). */
unsigned pgtest_workload_iterations(const pgtest_workload *w);
/* Stops the thread, frees w; returns the steps completed and, in *errors
 * when not NULL, the number of failed commands and reconnections. */
unsigned pgtest_workload_stop(pgtest_workload *w, unsigned *errors);

/* ---- HTTP on loopback ------------------------------------------------------ */

/* One HTTP/1.0 request (method "GET" or "HEAD") to http://127.0.0.1:port
 * path over a plain socket: the response's status code, 0 when there was
 * no connection or no whole response within timeout_s. *headers (the
 * status line and headers) and *body are the caller's; either may be NULL. */
int pgtest_http_get(int port, const char *method, const char *path, double timeout_s,
                    char **headers, char **body);
/* Listens on a free port of 127.0.0.1 (set in *port): the socket, which
 * the caller closes. Fails the test. */
int pgtest_tcp_listen(int *port);
/* A port of 127.0.0.1 that was free a moment ago. */
int pgtest_free_port(void);

/* ---- the functions behind the macros ------------------------------------- */

char *pgtest_write_file_at(const char *file, int line, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
pgtest_cluster *pgtest_cluster_start_at(const char *file, int line, const char *name,
										const char *const settings[]);
void pgtest_cluster_restart_at(const char *file, int line, pgtest_cluster *c, bool immediate);
void pgtest_cluster_kill9_at(const char *file, int line, pgtest_cluster *c);
pgtest_cluster *pgtest_cluster_standby_at(const char *file, int line, const pgtest_cluster *primary,
                                          const char *name, const char *slot,
                                          const char *const settings[]);
void pgtest_cluster_promote_at(const char *file, int line, pgtest_cluster *c);
void pgtest_cluster_upgrade_at(const char *file, int line, pgtest_cluster *c);
PGconn *pgtest_connect_at(const char *file, int line, const char *conninfo);
void pgtest_exec_at(const char *file, int line, PGconn *conn, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
char *pgtest_query_value_at(const char *file, int line, PGconn *conn, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
long pgtest_query_long_at(const char *file, int line, PGconn *conn, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
pgtest_proc *pgtest_spawn_at(const char *file, int line, const char *path,
							 const char *const argv[], const char *const env[]);
int pgtest_proc_wait_at(const char *file, int line, pgtest_proc *p, double timeout_s);
int pgtest_run_tidemark_at(const char *file, int line, const char *const argv[],
						   double timeout_s, char **output);

#endif
