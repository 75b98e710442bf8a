/*
 * benchlib.h: timing and process measurement shared by the benchmarks.
 */
#ifndef TIDEMARK_BENCHLIB_H
#define TIDEMARK_BENCHLIB_H

#include "pgtest.h"

double bench_now(void);
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

/* The benchmarks' orders table: id bigint key, customer, status, amount
 * numeric(12,2), note (about 70 bytes), created timestamptz. */
extern const char *const bench_orders_sql;
/* Creates it on conn with rows rows (ids 1..rows), vacuumed and analyzed. */
void bench_load_orders(PGconn *conn, long rows);

#endif
