/*
 * pgtest_int.h: what the parts of the test harness share; not for tests.
 */
#ifndef TIDEMARK_PGTEST_INT_H
#define TIDEMARK_PGTEST_INT_H

#include "pgtest.h"

#include <stdarg.h>

#include "strbuf.h"

/* Reports "file:line: message" and fails the running test; never returns. */
void pgt_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));
/* On a workload thread, counts an error and returns; elsewhere pgt_fail. */
void pgt_fail_soft(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* vsprintf into a new string (the caller's). */
char *pgt_vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
char *pgt_format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *pgt_strdup(const char *s);
/* Everything readable from fd until end of file, NUL-terminated. */
char *pgt_read_fd(int fd);

/* Runs sql. Returns its result, or NULL and (when err is not NULL) the
 * server's message in *err (the caller's). On a workload thread a failure
 * counts as one of its errors. */
PGresult *pgt_run_sql(PGconn *conn, const char *sql, char **err);

/* The harness's workload on this thread, or NULL (pgtest_workload.c). */
bool pgt_in_workload(void);
void pgt_workload_count_error(void);

/* Creates the directory and installs the exit and signal handlers, once. */
void pgt_init(void);
/*
 * What the harness has started and not yet ended, one registry per kind,
 * for the cleanup at exit. Thread-safe. The registry holds the pointers,
 * not the items.
 */
typedef struct pgt_registry {
	void **items;               /* owned array; the items are not */
	size_t n;
	size_t cap;
} pgt_registry;

void pgt_registry_add(pgt_registry *r, void *item);
/* Takes item out (item NULL: the latest one); returns it, or NULL if it
 * was not there. */
void *pgt_registry_take(pgt_registry *r, void *item);

/*
 * Forks and executes path (PATH is searched when it has no slash) with a
 * default signal mask, standard input from /dev/null, standard output to
 * out_fd and standard error to err_fd (-1: inherited) and no other
 * descriptors. envp NULL: this process's environment. own_group: the child
 * gets a process group of its own and is SIGKILLed when this thread exits.
 * Returns the pid, or -1 with errno set.
 */
pid_t pgt_fork_exec(const char *path, char *const argv[], char *const envp[],
					int out_fd, int err_fd, bool own_group);
/* This process's environment with overrides applied ("N=V" sets, "N"
 * unsets); free with pgt_free_strv. */
char **pgt_environ(const char *const overrides[]);
void pgt_free_strv(char **v);
/* waitpid without EINTR; returns the status as pgtest_proc_wait reports it,
 * or -1 if pid was not a child. */
int pgt_wait_child(pid_t pid);
int pgt_decode_status(int status);

/* Seconds on a monotonic clock; sleeping for a fraction of a second. */
double pgt_now(void);
void pgt_sleep(double seconds);

/* Ending what is left: at exit all three, on a signal all but the
 * workloads (their threads die with the process). on_signal: the test may
 * still be using them, so they are ended but not freed. */
void pgt_clusters_cleanup(bool on_signal);
void pgt_procs_cleanup(bool on_signal);
void pgt_workloads_cleanup(void);

#endif
