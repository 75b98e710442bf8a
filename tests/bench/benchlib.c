#include "benchlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double
bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static long
vm_hwm_kb(pid_t pid)
{
	char path[64], line[256];
	FILE *f;
	long kb = -1;

	snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

int
bench_run_measured(const char *const argv[], double timeout_s, double *seconds, long *peak_kb)
{
	return bench_run_program_measured(TIDEMARK_BIN, argv, timeout_s, seconds, peak_kb);
}

int
bench_run_program_measured(const char *program, const char *const argv[], double timeout_s,
                           double *seconds, long *peak_kb)
{
	double start = bench_now();
	pgtest_proc *p = pgtest_spawn_program(program, argv, NULL);
	long peak = 0;
	int rc;

	while (pgtest_proc_running(p) && bench_now() - start < timeout_s) {
		long kb = vm_hwm_kb(pgtest_proc_pid(p));

		if (kb > peak)
			peak = kb;
		usleep(20000);
	}
	rc = pgtest_proc_wait(p, 10);
	*seconds = bench_now() - start;
	*peak_kb = peak;
	if (rc != 0)
		fprintf(stderr, "tidemark exited %d:\n%s\n", rc, pgtest_proc_output(p));
	pgtest_proc_free(p);
	return rc;
}

double
bench_wait_value(PGconn *conn, const char *sql, const char *expected, double timeout_s)
{
	double start = bench_now();

	while (bench_now() - start < timeout_s) {
		PGresult *r = PQexec(conn, sql);
		int match = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
		            strcmp(PQgetvalue(r, 0, 0), expected) == 0;

		PQclear(r);
		if (match)
			return bench_now() - start;
		usleep(5000);
	}
	return -1;
}

static int
compare_doubles(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return x < y ? -1 : x > y;
}

double
bench_median(double *v, int n)
{
	qsort(v, (size_t) n, sizeof *v, compare_doubles);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char *const bench_orders_sql =
	"CREATE TABLE orders (id bigint PRIMARY KEY, customer int NOT NULL, status text NOT NULL,"
	" amount numeric(12,2), note text, created timestamptz NOT NULL)";

void
bench_load_orders(PGconn *conn, long rows)
{
	pgtest_exec(conn, "%s", bench_orders_sql);
	pgtest_exec(conn, "INSERT INTO orders SELECT g, g %% 50000,"
	                  " (ARRAY['open','paid','shipped'])[1 + g %% 3], (g %% 100000) / 100.0,"
	                  " 'order note ' || md5(g::text) || ' ' || repeat('x', g %% 40),"
	                  " '2024-01-01'::timestamptz + g * interval '1 second'"
	                  " FROM generate_series(1, %ld) g", rows);
	pgtest_exec(conn, "VACUUM ANALYZE orders");
}
