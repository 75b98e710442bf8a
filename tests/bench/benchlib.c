#include "benchlib.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double
bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

long
bench_peak_kb(pid_t pid)
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

/* /proc/PID/NAME's first size - 1 bytes into buf, NUL-terminated; false
 * when it cannot be read (the process gone). */
static bool
read_proc(int pid, const char *name, char *buf, size_t size)
{
	char path[64];
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/%s", pid, name);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return true;
}

/* Fields of /proc/PID/stat after the command's name: *ppid, and the
 * clock ticks of utime, stime, cutime, cstime in t[4]. */
static bool
read_stat(int pid, int *ppid, long long t[4])
{
	char buf[1024], *p;

	if (!read_proc(pid, "stat", buf, sizeof buf) || (p = strrchr(buf, ')')) == NULL)
		return false;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime */
	return sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld %lld %lld", ppid,
	              &t[0], &t[1], &t[2], &t[3]) == 5;
}

/* Is pid a session, walsender or replication worker (what a consumer
 * starts), by its title? */
static bool
consumer_process(int pid)
{
	char title[256];

	return read_proc(pid, "cmdline", title, sizeof title) &&
	       (strstr(title, "127.0.0.1(") != NULL || strstr(title, "[local]") != NULL ||
	        strstr(title, "walsender") != NULL || strstr(title, "replication worker") != NULL);
}

/* The postmaster's and its children's ticks, skip's left out; *others:
 * consumer processes among them. */
static long long
cluster_ticks(int postmaster, int skip, int *others)
{
	long long t[4], sum = 0;
	int ppid;
	DIR *d = opendir("/proc");
	struct dirent *de;

	*others = 0;
	if (d == NULL || !read_stat(postmaster, &ppid, t)) {
		if (d != NULL)
			closedir(d);
		return -1;
	}
	sum = t[0] + t[1] + t[2] + t[3];
	while ((de = readdir(d)) != NULL) {
		int pid = atoi(de->d_name);

		if (pid <= 0 || !read_stat(pid, &ppid, t) || ppid != postmaster)
			continue;
		if (pid == skip)
			continue;
		sum += t[0] + t[1];
		*others += consumer_process(pid);
	}
	closedir(d);
	return sum;
}

double
bench_cluster_cpu_s(PGconn *session)
{
	long long t[4], ticks = -1;
	int postmaster = 0, others = 1, self = PQbackendPID(session);
	double start = bench_now();

	if (!read_stat(self, &postmaster, t))
		return -1;
	while (bench_now() - start < 5) {
		ticks = cluster_ticks(postmaster, self, &others);
		if (ticks < 0 || others == 0)
			break;
		usleep(10000);
	}
	return ticks < 0 ? -1 : (double) ticks / (double) sysconf(_SC_CLK_TCK);
}

double
bench_children_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_CHILDREN, &ru);
	return (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 +
	       (double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6;
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
		long kb = bench_peak_kb(pgtest_proc_pid(p));

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

void
bench_pair_start(bench_pair *p)
{
	p->src = pgtest_cluster_start_with("src", "max_wal_senders=20", "max_replication_slots=20",
	                                   "max_wal_size=4GB", "shared_buffers=256MB");
	p->tm = pgtest_cluster_start_with("tm", "max_wal_size=4GB", "shared_buffers=256MB");
	/* the launcher starts an apply worker at most once per
	 * wal_retrieve_retry_interval (5 s by default): an ENABLE soon after
	 * the last start would wait for it */
	p->pg = pgtest_cluster_start_with("pg", "max_wal_size=4GB", "shared_buffers=256MB",
	                                  "wal_retrieve_retry_interval=50ms");
}

void
bench_pair_stop(bench_pair *p)
{
	pgtest_cluster_stop(p->src);
	pgtest_cluster_stop(p->tm);
	pgtest_cluster_stop(p->pg);
}

void
bench_pair_tidemark_setup(bench_pair *p, const char *const tables[])
{
	const char *argv[64] = {"setup", "--source", p->src->conninfo, "--target",
	                        p->tm->conninfo, "--slot", "bench", "--publication", "bench",
	                        "--quiet"};
	int n = 10;
	double secs;
	long kb;

	for (int i = 0; tables[i] != NULL && n < 62; i++) {
		argv[n++] = "--table";
		argv[n++] = tables[i];
	}
	argv[n] = NULL;
	if (bench_run_measured(argv, 600, &secs, &kb) != 0 ||
	    bench_pair_tidemark_catch_up(p, &secs, &kb) != 0)
		exit(1);
}

/* TIDEMARK_BENCH_ARGS: more arguments for every `tidemark run` of a
 * benchmark, split at spaces (e.g. "--apply-workers 2"), at most 8. */
static int
extra_args(const char **argv, int n)
{
	static char buf[256];
	const char *env = getenv("TIDEMARK_BENCH_ARGS");
	int k = 0;

	if (env == NULL)
		return n;
	snprintf(buf, sizeof buf, "%s", env);
	for (char *tok = strtok(buf, " "); tok != NULL && k < 8; tok = strtok(NULL, " "), k++)
		argv[n++] = tok;
	return n;
}

const char *const *
bench_pair_run_argv(const bench_pair *p, const char *mode)
{
	static const char *argv[20];
	const char *v[] = {"run", "--source", p->src->conninfo, "--target", p->tm->conninfo,
	                   "--slot", "bench", "--publication", "bench", "--quiet", mode};
	int n = (int) (sizeof v / sizeof v[0]);

	memcpy(argv, v, sizeof v);
	argv[extra_args(argv, n)] = NULL;
	return argv;
}

int
bench_pair_tidemark_catch_up(bench_pair *p, double *seconds, long *peak_kb)
{
	return bench_run_measured(bench_pair_run_argv(p, "--until-caught-up"), 3600, seconds,
	                          peak_kb);
}

const char *const bench_tidemark_lsn_sql =
	"SELECT applied_lsn FROM tidemark.progress WHERE slot_name = $1";

void
bench_pair_subscribe(bench_pair *p, const char *const ddl[])
{
	PGconn *c = pgtest_connect(p->pg);
	char *sub = malloc(strlen(p->src->conninfo) + 128);

	if (sub == NULL)
		exit(1);
	for (int i = 0; ddl[i] != NULL; i++)
		pgtest_exec(c, "%s", ddl[i]);
	/* the source's conninfo is the harness's own: host, port, names */
	sprintf(sub, "CREATE SUBSCRIPTION pgsub CONNECTION '%s' PUBLICATION pgpub", p->src->conninfo);
	pgtest_exec(c, "%s", sub);
	bench_subscription_wait_ready(c, 1800);
	bench_subscription_enable(c, "pgsub", false);
	free(sub);
	PQfinish(c);
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

char *
bench_pgbench(const char *conninfo, const char *const args[])
{
	const char *argv[32];
	int n = 0;
	pgtest_proc *p;
	char *out;

	while (args[n] != NULL && n < 30) {
		argv[n] = args[n];
		n++;
	}
	argv[n++] = conninfo;
	argv[n] = NULL;
	p = pgtest_spawn_program(BENCH_PGBIN "/pgbench", argv, NULL);
	if (pgtest_proc_wait(p, 3600) != 0) {
		fprintf(stderr, "pgbench failed:\n%s\n", pgtest_proc_output(p));
		exit(1);
	}
	out = strdup(pgtest_proc_output(p));
	pgtest_proc_free(p);
	return out;
}

void
bench_pgbench_script(const char *conninfo, const char *script, int clients, int n)
{
	char c[16], per_client[16];
	const char *args[] = {"-n", "-c", c, "-t", per_client, "-f", script, NULL};

	snprintf(c, sizeof c, "%d", clients);
	snprintf(per_client, sizeof per_client, "%d", n / clients);
	free(bench_pgbench(conninfo, args));
}

void
bench_transfers(const char *conninfo, int accounts, int n)
{
	char *script = pgtest_write_file("transfer.sql",
	                                 "\\set a random(1, %d)\n\\set b random(1, %d)\n"
	                                 "BEGIN;\nUPDATE accounts SET balance = balance - 1 WHERE id = :a;\n"
	                                 "UPDATE accounts SET balance = balance + 1 WHERE id = :b;\n"
	                                 "COMMIT;\n", accounts, accounts);

	bench_pgbench_script(conninfo, script, 2, n);
	free(script);
}

double
bench_floor(const char *conninfo, const char *slot, const char *const opts[])
{
	PGconn *s = pgtest_connect_str(conninfo);
	char *endpos = pgtest_query_value(s, "SELECT pg_current_wal_lsn()");
	const char *argv[40] = {"-d", conninfo, "--slot", slot, "--start", "--endpos", endpos,
	                        "-f", "/dev/null", "--no-loop"};
	int n = 10, rc;
	double start, secs;
	pgtest_proc *p;

	for (int i = 0; opts[i] != NULL && n < 38; i++) {
		argv[n++] = "-o";
		argv[n++] = opts[i];
	}
	argv[n] = NULL;
	start = bench_now();
	p = pgtest_spawn_program(BENCH_PGBIN "/pg_recvlogical", argv, NULL);
	rc = pgtest_proc_wait(p, 3600);
	secs = bench_now() - start;
	if (rc != 0) {
		fprintf(stderr, "pg_recvlogical exited %d:\n%s\n", rc, pgtest_proc_output(p));
		exit(1);
	}
	pgtest_proc_free(p);
	/* pg_recvlogical does not always confirm the end position (it confirms
	 * what it fsynced): the slot is moved there, untimed, so that the next
	 * round does not decode this one again (tidemark confirms its end) */
	pgtest_exec(s, "SELECT pg_replication_slot_advance(slot_name,"
	               " greatest('%s'::pg_lsn, confirmed_flush_lsn))"
	               " FROM pg_replication_slots WHERE slot_name = '%s'", endpos, slot);
	free(endpos);
	PQfinish(s);
	return secs;
}

char *
bench_mark(PGconn *source, const char *stmt)
{
	char *lsn;

	pgtest_exec(source, "BEGIN; %s", stmt);
	lsn = pgtest_query_value(source, "SELECT pg_current_wal_insert_lsn()");
	pgtest_exec(source, "COMMIT");
	return lsn;
}

char *
bench_source_restart_point(PGconn *source)
{
	pgtest_exec(source, "CHECKPOINT");
	return pgtest_query_value(source, "SELECT redo_lsn FROM pg_control_checkpoint()");
}

const char *const bench_slot_restart_sql =
	"SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = $1";

void
bench_settle_slot(PGconn *source, const char *slot, const char *restart,
                  void (*catch_up)(void *ctx), void *ctx)
{
	for (int tries = 0; tries < 4; tries++) {
		catch_up(ctx);
		if (bench_wait_passed(source, bench_slot_restart_sql, slot, restart, 2) >= 0)
			return;
	}
	fprintf(stderr, "warning: slot %s still restarts before %s\n", slot, restart);
}

void
bench_settle_subscription(PGconn *source, PGconn *target, const char *name,
                          const char *restart)
{
	/* (its worker stays while it is enabled: one wait, through its catch-up
	 * and its confirmation past the record) */
	bench_subscription_enable(target, name, true);
	if (bench_wait_passed(source, bench_slot_restart_sql, name, restart, 600) < 0)
		fprintf(stderr, "warning: slot %s still restarts before %s\n", name, restart);
	bench_subscription_enable(target, name, false);
}

/* The subscription's applied position: its origin's remote_lsn (NULL
 * until it has applied a transaction). $1: the subscription's name. */
const char *const bench_subscription_lsn_sql =
	"SELECT o.remote_lsn FROM pg_subscription s JOIN pg_replication_origin_status o"
	" ON o.external_id = 'pg_' || s.oid WHERE s.subname = $1";

double
bench_wait_passed(PGconn *conn, const char *position_sql, const char *name, const char *lsn,
                  double timeout_s)
{
	const char *params[] = {name, lsn};
	char *sql = malloc(strlen(position_sql) + 64);
	double start = bench_now(), waited = -1;

	if (sql == NULL)
		exit(1);
	sprintf(sql, "SELECT coalesce((%s) >= $2::pg_lsn, false)", position_sql);
	for (;;) {
		PGresult *r = PQexecParams(conn, sql, 2, NULL, params, NULL, NULL, 0);

		if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
		    strcmp(PQgetvalue(r, 0, 0), "t") == 0)
			waited = bench_now() - start;
		PQclear(r);
		if (waited >= 0 || bench_now() - start >= timeout_s)
			break;
		usleep(5000);
	}
	free(sql);
	return waited;
}

void
bench_subscription_wait_ready(PGconn *conn, double timeout_s)
{
	if (bench_wait_value(conn, "SELECT bool_and(srsubstate = 'r') FROM pg_subscription_rel", "t",
	                     timeout_s) < 0) {
		fprintf(stderr, "the subscription did not finish its initial copy\n");
		exit(1);
	}
}

void
bench_subscription_enable(PGconn *conn, const char *name, bool enable)
{
	pgtest_exec(conn, "ALTER SUBSCRIPTION %s %s", name, enable ? "ENABLE" : "DISABLE");
	if (!enable)
		bench_wait_value(conn, "SELECT count(*) FROM pg_stat_subscription WHERE pid IS NOT NULL",
		                 "0", 60);
}

const char *const bench_tpcb_ddl =
	"CREATE TABLE pgbench_accounts (aid int NOT NULL PRIMARY KEY, bid int, abalance int,"
	" filler char(84));"
	"CREATE TABLE pgbench_branches (bid int NOT NULL PRIMARY KEY, bbalance int, filler char(88));"
	"CREATE TABLE pgbench_tellers (tid int NOT NULL PRIMARY KEY, bid int, tbalance int,"
	" filler char(84));"
	"CREATE TABLE pgbench_history (hid bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	" tid int, bid int, aid int, delta int, mtime timestamp, filler char(22));";
const char *const bench_tpcb_tables[4] = {"pgbench_accounts", "pgbench_branches",
                                          "pgbench_tellers", "pgbench_history"};
const char *const bench_tpcb_keys[4] = {"aid", "bid", "tid", "hid"};

void
bench_tpcb_load(const char *conninfo, int scale)
{
	char s[16];
	const char *args[] = {"-i", "-I", "gv", "-s", s, "-q", NULL};

	snprintf(s, sizeof s, "%d", scale);
	free(bench_pgbench(conninfo, args));
}
