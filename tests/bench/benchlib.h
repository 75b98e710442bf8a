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
/* Polls a query until it returns expected; returns the seconds waited, or
 * a negative number on timeout. */
double bench_wait_value(PGconn *conn, const char *sql, const char *expected, double timeout_s);

#endif
