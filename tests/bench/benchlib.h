/*
 * benchlib.h: timing and process measurement shared by the benchmarks.
 */
#ifndef TIDEMARK_BENCHLIB_H
#define TIDEMARK_BENCHLIB_H

#include "pgtest.h"

double bench_now(void);
/* A running process's peak resident set so far (VmHWM), in kB; -1 when
 * it cannot be read. */
long bench_peak_kb(pid_t pid);
/*
 * CPU seconds (user and system) a cluster has spent so far: its postmaster
 * and every process it started, those that ended counted once reaped, read
 * from /proc (the cluster is on this machine), less session's backend (the
 * caller's, which finds the postmaster). Waits first (up to 5 s) until no
 * other session, walsender or replication worker is left, so that a
 * consumer that has ended is counted whole. -1 when /proc cannot be read.
 */
double bench_cluster_cpu_s(PGconn *session);
/* CPU seconds of this process's children that have ended (getrusage). */
double bench_children_cpu_s(void);
/* Runs a tidemark process to completion, sampling its peak resident set
 * (VmHWM) as it goes. Returns the exit code; *seconds and *peak_kb out. */
int bench_run_measured(const char *const argv[], double timeout_s, double *seconds,
                       long *peak_kb);
/* The same with another build of tidemark (program: its path). */
int bench_run_program_measured(const char *program, const char *const argv[], double timeout_s,
                               double *seconds, long *peak_kb);
/* Polls a query until it returns expected; returns the seconds waited, or
 * a negative number on timeout. */
double bench_wait_value(PGconn *conn, const char *sql, const char *expected, double timeout_s);
/* The median of n values (n > 0); sorts v. */
double bench_median(double *v, int n);

/* ---- the source's tools and PostgreSQL's own replication ---- */

#define BENCH_PGBIN "/usr/lib/postgresql/15/bin"

/* Runs pgbench with args (NULL-terminated) against conninfo, given last;
 * exits the process when it fails. Returns its output (the caller's). */
char *bench_pgbench(const char *conninfo, const char *const args[]);
/* Runs a pgbench script file n transactions in all, over clients. */
void bench_pgbench_script(const char *conninfo, const char *script, int clients, int n);
/* n two-row transfer transactions (two clients) on the table accounts (id
 * int key 1..accounts, balance bigint): the benchmarks' usual backlog. */
void bench_transfers(const char *conninfo, int accounts, int n);
/* The floor of a catch-up: slot's changes up to the source's position now,
 * decoded by pg_recvlogical with pgoutput into /dev/null; opts are its -o
 * options ("proto_version=1", "publication_names=p", ..., NULL). The
 * seconds it took; exits the process when it fails. */
double bench_floor(const char *conninfo, const char *slot, const char *const opts[]);
/* The source's WAL insert position, read inside a transaction that
 * publishes a change (stmt, SQL), before it commits: a consumer whose
 * applied position passes it has applied that transaction and all before.
 * The caller frees it. */
char *bench_mark(PGconn *source, const char *stmt);
/* A checkpoint on the source, which logs a running-transactions record;
 * returned, the checkpoint's redo point (at or before the record; the
 * caller frees it): a slot restarts at or after it once its consumer has
 * confirmed a position past the record. Until a slot's restart point
 * moves, each start of its consumer decodes everything after it again:
 * a benchmark that stops its consumers between rounds calls this and
 * bench_settle_slot for each before it writes the next backlog, so that a
 * round decodes its own. */
char *bench_source_restart_point(PGconn *source);
/* A query of a slot's restart point ($1: the slot), on the source. */
extern const char *const bench_slot_restart_sql;
/* Runs catch_up(ctx), a consumer of slot that catches up and exits, until
 * the slot restarts at restart (bench_source_restart_point) or later, at
 * most 4 times: a slot takes up one candidate restart point at a time, so
 * one from before may come first. Warns when it still does not. */
void bench_settle_slot(PGconn *source, const char *slot, const char *restart,
                       void (*catch_up)(void *ctx), void *ctx);
/* The same for a subscription (on target): enabled until its slot (of its
 * name) restarts at restart or later, then disabled. Warns when it does
 * not within 600 s. */
void bench_settle_subscription(PGconn *source, PGconn *target, const char *name,
                               const char *restart);
/* A query of the applied position of a subscription named $1, on its
 * target: its replication origin's remote_lsn. */
extern const char *const bench_subscription_lsn_sql;
/* Polls position_sql (one pg_lsn, $1: name) on conn until it is at lsn or
 * past it: the seconds waited, or a negative number on timeout (a
 * timeout of 0: one look). */
double bench_wait_passed(PGconn *conn, const char *position_sql, const char *name,
                         const char *lsn, double timeout_s);
/* Waits until every table of the subscriptions on conn is copied and
 * ready; exits the process on timeout. */
void bench_subscription_wait_ready(PGconn *conn, double timeout_s);
/* ALTER SUBSCRIPTION name ENABLE or DISABLE; a disable waits until its
 * apply worker is gone. */
void bench_subscription_enable(PGconn *conn, const char *name, bool enable);

/* pgbench's TPC-B tables (pgbench -i), pgbench_history with a key of its
 * own (hid, an identity: pgbench names the columns it inserts), and their
 * keys' columns, in the order of the tables. */
extern const char *const bench_tpcb_ddl;
extern const char *const bench_tpcb_tables[4];
extern const char *const bench_tpcb_keys[4];
/* Fills them (created by bench_tpcb_ddl) on conninfo at scale; vacuumed. */
void bench_tpcb_load(const char *conninfo, int scale);

/* ---- tidemark and a subscription side by side ---- */

/* A source and two targets, each its own cluster: tidemark applies into
 * tm (pipeline "bench": its slot and publication), PostgreSQL's own
 * subscription "pgsub" (of the source's publication "pgpub") into pg; the
 * targets' postgres databases. Owned by the caller: bench_pair_stop. */
typedef struct bench_pair {
	pgtest_cluster *src, *tm, *pg;
} bench_pair;

void bench_pair_start(bench_pair *p);
void bench_pair_stop(bench_pair *p);
/* tidemark setup of the tables (SCHEMA.TABLE, NULL-terminated), then their
 * copy (run --until-caught-up); exits the process when either fails. */
void bench_pair_tidemark_setup(bench_pair *p, const char *const tables[]);
/* run --until-caught-up: its exit code, *seconds and *peak_kb out. */
int bench_pair_tidemark_catch_up(bench_pair *p, double *seconds, long *peak_kb);
/* The argument vector of `tidemark run` for this pair, without the
 * program's name; mode: "--until-caught-up" or NULL (runs until stopped).
 * Static storage. */
const char *const *bench_pair_run_argv(const bench_pair *p, const char *mode);
/* tidemark's applied position on tm ($1: its slot, "bench"). */
extern const char *const bench_tidemark_lsn_sql;
/* ddl (NULL-terminated: the tables, empty) run on pg, then CREATE SUBSCRIPTION pgsub of
 * pgpub (which the caller has created on the source); returns once the
 * copy is done, the subscription disabled. */
void bench_pair_subscribe(bench_pair *p, const char *const ddl[]);

/* The benchmarks' orders table: id bigint key, customer, status, amount
 * numeric(12,2), note (about 70 bytes), created timestamptz. */
extern const char *const bench_orders_sql;
/* Creates it on conn with rows rows (ids 1..rows), vacuumed and analyzed. */
void bench_load_orders(PGconn *conn, long rows);

#endif
