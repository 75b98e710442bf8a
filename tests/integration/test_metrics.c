/*
 * Integration tests of `run --metrics-listen`: the endpoint is scraped over
 * HTTP while tidemark runs, and its counters are compared with what the
 * test wrote on the source (rows by kind, the copy's rows and chunks per
 * table, schema changes, quarantined rows), its positions with the
 * source's, its lag with 0 once caught up; every scrape must parse as
 * Prometheus text format 0.0.4. A port in use stops run at once (exit 3).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tm_fixture.h"

/* ---- the text format, checked line by line ---- */

typedef struct family_seen {
	char name[128];
	char type[32];
	bool help;
} family_seen;

static family_seen *
family_find(family_seen *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(f[i].name, name) == 0)
			return &f[i];
	return NULL;
}

static bool
name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
	       (!first && c >= '0' && c <= '9');
}

/* The length of a metric name at p (0: none). */
static size_t
name_len(const char *p)
{
	size_t n = 0;

	while (name_char(p[n], n == 0))
		n++;
	return n;
}

/* {name="value",...}: the length, or 0 when malformed. */
static size_t
labels_len(const char *p)
{
	const char *q = p + 1;

	if (*p != '{')
		return 0;
	while (*q != '}') {
		size_t n = name_len(q);

		if (n == 0 || strchr(q, ':') == q + n || q[n] != '=' || q[n + 1] != '"')
			return 0;
		for (q += n + 2; *q != '"'; q++) {
			if (*q == '\0' || *q == '\n')
				return 0;
			if (*q == '\\' && (q[1] == '\\' || q[1] == '"' || q[1] == 'n'))
				q++;
			else if (*q == '\\')
				return 0;
		}
		q++;
		if (*q == ',')
			q++;
		else if (*q != '}')
			return 0;
	}
	return (size_t) (q - p) + 1;
}

static void
check_sample(const char *line, family_seen *fams, int nfams, char **series, int nseries)
{
	size_t n = name_len(line), l;
	char name[128], *end;
	family_seen *f;

	if (n == 0 || n >= sizeof name)
		fail_msg("not a sample line: %s", line);
	memcpy(name, line, n);
	name[n] = '\0';
	f = family_find(fams, nfams, name);
	if (f == NULL || !f->help || f->type[0] == '\0')
		fail_msg("sample of %s before its # HELP and # TYPE: %s", name, line);
	l = line[n] == '{' ? labels_len(line + n) : 0;
	if (line[n] == '{' && l == 0)
		fail_msg("malformed labels: %s", line);
	if (line[n + l] != ' ' || line[n + l + 1] == '\0')
		fail_msg("no value after the name and labels: %s", line);
	(void) strtod(line + n + l + 1, &end);
	if (*end != '\0')
		fail_msg("not a number (or a timestamp follows, which tidemark never sends): %s", line);
	for (int i = 0; i < nseries; i++)
		if (strncmp(series[i], line, n + l) == 0 && series[i][n + l] == ' ')
			fail_msg("series given twice: %s", line);
}

/* Every line is # HELP, # TYPE or a sample `name{labels} value`; every
 * family has its HELP and TYPE (once, before its samples); counters end
 * in _total. */
static void
assert_prometheus_text(const char *text)
{
	family_seen fams[256];
	char *copy = strdup(text), *save = NULL, *series[1024];
	int nfams = 0, nseries = 0;

	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	for (char *line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char name[128], kind[32];

		if (strncmp(line, "# HELP ", 7) == 0 || strncmp(line, "# TYPE ", 7) == 0) {
			family_seen *f;
			size_t n = name_len(line + 7);

			if (n == 0 || n >= sizeof name || line[7 + n] != ' ')
				fail_msg("malformed comment: %s", line);
			memcpy(name, line + 7, n);
			name[n] = '\0';
			if ((f = family_find(fams, nfams, name)) == NULL) {
				assert_true(nfams < 256);
				f = &fams[nfams++];
				memset(f, 0, sizeof *f);
				snprintf(f->name, sizeof f->name, "%s", name);
			}
			if (line[2] == 'H')
				f->help = true;
			else if (f->type[0] != '\0' || sscanf(line + 8 + n, "%31s", kind) != 1 ||
			         (strcmp(kind, "counter") != 0 && strcmp(kind, "gauge") != 0))
				fail_msg("a second or unknown # TYPE: %s", line);
			else
				snprintf(f->type, sizeof f->type, "%s", kind);
			if (strcmp(f->type, "counter") == 0 &&
			    (n < 6 || strcmp(name + n - 6, "_total") != 0))
				fail_msg("a counter whose name does not end in _total: %s", line);
			continue;
		}
		if (line[0] == '#')
			fail_msg("unexpected comment: %s", line);
		check_sample(line, fams, nfams, series, nseries);
		assert_true(nseries < 1024);
		series[nseries++] = line;
	}
	for (int i = 0; i < nfams; i++)
		if (!fams[i].help || fams[i].type[0] == '\0')
			fail_msg("%s lacks its # HELP or # TYPE", fams[i].name);
	free(copy);
}

/* ---- scraping ---- */

/* GET /metrics, checked as a whole: 200, its content type, the format. */
static char *
scrape(int port)
{
	char *headers = NULL, *body = NULL;
	int status = pgtest_http_get(port, "GET", "/metrics", 10, &headers, &body);

	if (status != 200)
		fail_msg("GET /metrics answered %d:\n%s\n%s", status, headers ? headers : "",
		         body ? body : "");
	assert_non_null(strstr(headers, "text/plain; version=0.0.4"));
	assert_prometheus_text(body);
	free(headers);
	return body;
}

/* The value of the sample `series` (name with its labels, as rendered), or
 * -1 when the scrape has no such line. */
static double
sample_value(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

static double
metric(int port, const char *series)
{
	char *text = scrape(port);
	double v = sample_value(text, series);

	free(text);
	return v;
}

/* Scrapes until series equals expected (above: exceeds it); fails the
 * test with the last value after timeout_s. */
static void
wait_metric_until(int port, const char *series, double expected, bool above, double timeout_s)
{
	struct timespec start, now;
	double v;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		v = metric(port, series);
		if (above ? v > expected : v == expected)
			return;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > timeout_s)
			fail_msg("%s is %g after %.0f s, expected %s%g", series, v, timeout_s,
			         above ? "above " : "", expected);
		tm_sleep_ms(100);
	}
}

static void
wait_metric(int port, const char *series, double expected, double timeout_s)
{
	wait_metric_until(port, series, expected, false, timeout_s);
}

static pgtest_proc *
start_with_metrics(tm_env *e, int *port, const char *extra1, const char *extra2)
{
	char addr[32];

	*port = pgtest_free_port();
	snprintf(addr, sizeof addr, "127.0.0.1:%d", *port);
	return tm_start_run(e, "--metrics-listen", addr, "--chunk-rows", "300", extra1, extra2, NULL);
}

static double
source_lsn_bytes(tm_env *e)
{
	char *v = pgtest_query_value(e->s, "SELECT pg_current_wal_insert_lsn() - '0/0'");
	double d = strtod(v, NULL);

	free(v);
	return d;
}

/* ---- the tests ---- */

/* The copy: rows and chunks per table (a name that needs escaping
 * included), as many rows as the source has, none pending once done. */
static void
check_snapshot(tm_env *e, int port)
{
	wait_metric(port, "tidemark_snapshot_rows_total{table=\"public.items\"}",
	            (double) pgtest_query_long(e->s, "SELECT count(*) FROM items"), 60);
	/* 300, 300, 300 and the last 100 (fewer than asked: the end) */
	assert_true(metric(port, "tidemark_snapshot_chunks_total{table=\"public.items\"}") == 4);
	wait_metric(port, "tidemark_snapshot_rows_total{table=\"public.we\\\"ird\\\\name\"}",
	            (double) pgtest_query_long(e->s, "SELECT count(*) FROM \"we\"\"ird\\name\""), 60);
	assert_true(metric(port, "tidemark_snapshot_chunks_total{table=\"public.we\\\"ird\\\\name\"}")
	            == 1);
	wait_metric(port, "tidemark_snapshot_tables_pending", 0, 60);
}

/* 20 transactions of 15 inserts, 10 of 20 updates, 5 of 20 deletes.
 * Returns the source's WAL position before the last one. */
static double
write_workload(tm_env *e)
{
	double before_last = 0;

	for (int i = 0; i < 20; i++)
		pgtest_exec(e->s, "INSERT INTO items SELECT g, 'new' FROM generate_series(%d, %d) g",
		            2000 + i * 15, 2000 + i * 15 + 14);
	for (int i = 0; i < 10; i++)
		pgtest_exec(e->s, "UPDATE items SET v = 'changed' WHERE id BETWEEN %d AND %d",
		            i * 20 + 1, i * 20 + 20);
	for (int i = 0; i < 5; i++) {
		before_last = source_lsn_bytes(e);
		pgtest_exec(e->s, "DELETE FROM items WHERE id BETWEEN %d AND %d", 500 + i * 20 + 1,
		            500 + i * 20 + 20);
	}
	return before_last;
}

static void
check_identity(int port)
{
	char *out = NULL, version[64] = "", series[128];
	const char *argv[] = {"--version", NULL};
	char *text = scrape(port);
	double start = sample_value(text, "tidemark_process_start_time_seconds");

	assert_int_equal(pgtest_run_tidemark(argv, 30, &out), 0);
	assert_int_equal(sscanf(out, "tidemark %63s", version), 1);
	snprintf(series, sizeof series, "tidemark_build_info{version=\"%s\"}", version);
	assert_true(sample_value(text, series) == 1);
	assert_true(sample_value(text, "tidemark_up") == 1);
	assert_true(start > (double) time(NULL) - 600 && start <= (double) time(NULL) + 1);
	free(text);
	free(out);
}

static void
check_http(int port)
{
	char *body = NULL;

	assert_int_equal(pgtest_http_get(port, "GET", "/nothing", 10, NULL, NULL), 404);
	assert_int_equal(pgtest_http_get(port, "POST", "/metrics", 10, NULL, NULL), 405);
	assert_int_equal(pgtest_http_get(port, "HEAD", "/metrics", 10, NULL, &body), 200);
	assert_string_equal(body, "");
	free(body);
}

static void
test_counters_match_workload(void **state)
{
	tm_env *e = tm_env_new("counts");
	pgtest_proc *run;
	double written, applied;
	int port;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE items (id int PRIMARY KEY, v text);"
	                  "INSERT INTO items SELECT g, 'old' FROM generate_series(1, 1000) g;"
	                  "CREATE TABLE \"we\"\"ird\\name\" (id int PRIMARY KEY);"
	                  "INSERT INTO \"we\"\"ird\\name\" SELECT generate_series(1, 10)");
	tm_setup_table(e, "items");
	tm_setup_table(e, "public.\"we\"\"ird\\name\"");
	run = start_with_metrics(e, &port, NULL, NULL);
	check_snapshot(e, port);
	written = write_workload(e);
	wait_metric(port, "tidemark_rows_applied_total{kind=\"insert\"}", 300, 60);
	wait_metric(port, "tidemark_rows_applied_total{kind=\"update\"}", 200, 60);
	wait_metric(port, "tidemark_rows_applied_total{kind=\"delete\"}", 100, 60);
	/* caught up: the positions pass what was written (the last
	 * transaction's commit, at least: its rows are counted as they are
	 * sent, its position once the target confirms its commit), the lag
	 * reaches 0 */
	wait_metric_until(port, "tidemark_applied_lsn_bytes", written, true, 60);
	wait_metric(port, "tidemark_lag_bytes", 0, 60);
	wait_metric(port, "tidemark_lag_seconds", 0, 60);
	applied = metric(port, "tidemark_applied_lsn_bytes");
	assert_true(metric(port, "tidemark_source_lsn_bytes") >= applied);
	assert_true(metric(port, "tidemark_source_transactions_total") >= 35);
	assert_true(metric(port, "tidemark_target_transactions_total") >= 1);
	assert_true(metric(port, "tidemark_target_transactions_total") <=
	            metric(port, "tidemark_source_transactions_total"));
	assert_true(metric(port, "tidemark_applied_bytes_total") > 0);
	assert_true(metric(port, "tidemark_apply_busy_seconds_total") > 0);
	assert_true(metric(port, "tidemark_snapshot_reader_busy_seconds_total") > 0);
	assert_true(metric(port, "tidemark_rows_quarantined_total") == 0);
	assert_true(metric(port, "tidemark_errors_total{class=\"target\"}") == 0);
	/* schema changes, by action */
	assert_true(metric(port, "tidemark_schema_changes_total{action=\"add_column\"}") == 0);
	pgtest_exec(e->s, "ALTER TABLE items ADD COLUMN extra int");
	pgtest_exec(e->s, "ALTER TABLE items RENAME COLUMN v TO w");
	wait_metric(port, "tidemark_schema_changes_total{action=\"add_column\"}", 1, 60);
	wait_metric(port, "tidemark_schema_changes_total{action=\"rename_column\"}", 1, 60);
	check_identity(port);
	check_http(port);
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "items", "id");
	tm_env_free(e);
}

/* tidemark_capture_gaps: 0 while the capture's event triggers are whole,
 * the count of those that are not (disabled, enabled without ALWAYS) within
 * a reading or two, and 0 again once mended. */
static void
test_capture_gaps_gauge(void **state)
{
	tm_env *e = tm_env_new("capgaps");
	pgtest_proc *run;
	int port;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE items (id int PRIMARY KEY, v text)");
	tm_setup_table(e, "items");
	run = start_with_metrics(e, &port, NULL, NULL);
	wait_metric(port, "tidemark_capture_gaps", 0, 30);
	pgtest_exec(e->s, "ALTER EVENT TRIGGER tidemark_ddl_end DISABLE;"
	                  "ALTER EVENT TRIGGER tidemark_sql_drop ENABLE");
	wait_metric(port, "tidemark_capture_gaps", 2, 30);
	pgtest_exec(e->s, "ALTER EVENT TRIGGER tidemark_ddl_end ENABLE ALWAYS;"
	                  "ALTER EVENT TRIGGER tidemark_sql_drop ENABLE ALWAYS");
	wait_metric(port, "tidemark_capture_gaps", 0, 30);
	tm_stop_and_catch_up(e, run, 60);
	tm_env_free(e);
}

/*
 * What the slot keeps of the source's WAL: the gauge follows it, and with
 * max_slot_wal_keep_size set, a transaction left open on the source (it
 * holds the slot's restart point back) while WAL is written brings the
 * warning before the slot is lost; once it ends, the slot is said safe
 * again. The source writes in steps until less than a quarter of the
 * limit is left, never up to it.
 */
static void
test_slot_wal_watched(void **state)
{
	tm_env *e = tm_env_new("slot_wal");
	PGconn *holder;
	pgtest_proc *run;
	int port, steps = 0;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE items (id int PRIMARY KEY, v text);"
	                  "INSERT INTO items SELECT g, 'old' FROM generate_series(1, 100) g;"
	                  "CREATE TABLE held (id int); CREATE TABLE filler (v text)");
	tm_setup_table(e, "items");
	pgtest_exec(e->s, "ALTER SYSTEM SET max_slot_wal_keep_size = '64MB'");
	pgtest_exec(e->s, "SELECT pg_reload_conf()");
	run = start_with_metrics(e, &port, NULL, NULL);
	wait_metric_until(port, "tidemark_slot_retained_wal_bytes", -1, true, 30);
	/* ended by the server if the test fails before it commits, so that
	 * the next tests' slots do not wait for it */
	holder = pgtest_connect_str(e->src);
	pgtest_exec(holder, "SET idle_in_transaction_session_timeout = '90s'");
	pgtest_exec(holder, "BEGIN; INSERT INTO held VALUES (1)");
	pgtest_exec(e->s, "UPDATE items SET v = 'held back' WHERE id = 1");
	pgtest_exec(e->s, "CHECKPOINT");
	while (pgtest_query_long(e->s, "SELECT coalesce(safe_wal_size, 0) FROM pg_replication_slots"
	                               " WHERE slot_name = '%s'", e->slot) >= 16 * 1024 * 1024) {
		assert_true(++steps < 40);
		/* rows of 1 kB that do not compress: 3 MB of WAL */
		pgtest_exec(e->s, "INSERT INTO filler SELECT (SELECT string_agg(md5(g::text || i::text),"
		                  " '') FROM generate_series(1, 32) i) FROM generate_series(1, 3000) g");
	}
	if (!pgtest_proc_wait_output(run, "keeps", 60))
		fail_msg("no warning of the slot's WAL:\n%s", pgtest_proc_output(run));
	tm_assert_has(pgtest_proc_output(run), "max_slot_wal_keep_size of 64.0 MB");
	wait_metric_until(port, "tidemark_slot_retained_wal_bytes", 40.0 * 1024 * 1024, true, 30);
	pgtest_exec(holder, "COMMIT");
	PQfinish(holder);
	/* the restart point moves on at the next record of the transactions
	 * running, written by checkpoints */
	pgtest_exec(e->s, "UPDATE items SET v = 'free' WHERE id = 2");
	pgtest_exec(e->s, "CHECKPOINT");
	if (!pgtest_proc_wait_output(run, "keeps its WAL safely again", 90))
		fail_msg("the slot was not said safe again:\n%s", pgtest_proc_output(run));
	pgtest_exec(e->s, "ALTER SYSTEM RESET max_slot_wal_keep_size");
	pgtest_exec(e->s, "SELECT pg_reload_conf()");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "items", "id");
	tm_env_free(e);
}

/* Quarantined rows are counted as the catalog holds them. */
static void
test_quarantine_counted(void **state)
{
	tm_env *e = tm_env_new("quarantined");
	pgtest_proc *run;
	int port;
	long n;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE q (id int PRIMARY KEY, amount numeric(12,2));"
	                  "INSERT INTO q SELECT g, g + 0.5 FROM generate_series(1, 50) g");
	tm_setup_table(e, "q");
	tm_catch_up(e, 60);
	run = start_with_metrics(e, &port, "--table-policy", "public.q=quarantine");
	pgtest_exec(e->s, "ALTER TABLE q ALTER COLUMN amount TYPE numeric(20,0)");
	pgtest_exec(e->s, "INSERT INTO q VALUES (100, 77), (101, 123456789012345);"
	                  "UPDATE q SET amount = 99999999999999 WHERE id = 5");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) >= 2 FROM tidemark.quarantine", "t", 60));
	wait_metric(port, "tidemark_lag_bytes", 0, 60);
	n = pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.quarantine");
	wait_metric(port, "tidemark_rows_quarantined_total", (double) n, 30);
	tm_stop_and_catch_up(e, run, 120);
	tm_env_free(e);
}

/* A restart of the target: the session ends, a new one starts; the retry
 * and the error are counted by side and class, and the rows once. */
static void
test_retry_counted(void **state)
{
	tm_env *e = tm_env_new("retried");
	pgtest_proc *run;
	int port;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE r (id int PRIMARY KEY);"
	                  "INSERT INTO r SELECT generate_series(1, 10)");
	tm_setup_table(e, "r");
	run = start_with_metrics(e, &port, NULL, NULL);
	wait_metric(port, "tidemark_snapshot_rows_total{table=\"public.r\"}", 10, 60);
	pgtest_cluster_restart(e->dst_cluster, false);
	PQreset(e->t);
	pgtest_exec(e->s, "INSERT INTO r SELECT generate_series(11, 60)");
	wait_metric(port, "tidemark_rows_applied_total{kind=\"insert\"}", 50, 90);
	wait_metric(port, "tidemark_up", 1, 60);
	assert_true(metric(port, "tidemark_retries_total{side=\"target\"}") >= 1);
	assert_true(metric(port, "tidemark_errors_total{class=\"target\"}") >= 1);
	assert_true(metric(port, "tidemark_errors_total{class=\"configuration\"}") == 0);
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "r", "id");
	tm_env_free(e);
}

/* Transactions the source streams while in progress (its
 * logical_decoding_work_mem at its least): one applied as it comes, one
 * with a schema change applied at its commit from its spool; each counted
 * once, with its rows. */
static void
test_streamed_counted(void **state)
{
	tm_env *e = tm_env_new("streamed");
	pgtest_proc *run;
	double as_they_came, at_commit;
	int port;

	(void) state;
	pgtest_exec(e->s, "ALTER DATABASE src_streamed SET logical_decoding_work_mem = '64kB';"
	                  "CREATE TABLE s (id int PRIMARY KEY, pad text);"
	                  "INSERT INTO s SELECT g, 'p' FROM generate_series(1, 3000) g");
	tm_setup_table(e, "s");
	run = start_with_metrics(e, &port, NULL, NULL);
	wait_metric(port, "tidemark_snapshot_tables_pending", 0, 60);
	pgtest_exec(e->s, "UPDATE s SET pad = repeat('x', 40)");
	pgtest_exec(e->s, "BEGIN; UPDATE s SET pad = repeat('y', 40); ALTER TABLE s ADD COLUMN c int;"
	                  " COMMIT");
	wait_metric(port, "tidemark_rows_applied_total{kind=\"update\"}", 6000, 60);
	/* the first as it came (unless the log says why not: a loaded machine
	 * can make the apply's own connection wait long enough), the second
	 * at its commit (its schema change) */
	as_they_came = metric(port, "tidemark_streamed_transactions_total{applied=\"as_they_came\"}");
	at_commit = metric(port, "tidemark_streamed_transactions_total{applied=\"at_commit\"}");
	if (as_they_came + at_commit != 2 || at_commit < 1 ||
	    (as_they_came == 0 && strstr(pgtest_proc_output(run), "; it is applied at its commit") == NULL))
		fail_msg("streamed transactions counted %g as they came, %g at their commit:\n%s",
		         as_they_came, at_commit, pgtest_proc_output(run));
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "s", "id");
	tm_env_free(e);
}

/* A port in use: exit 3 at once, before streaming, naming the address. */
static void
test_port_in_use(void **state)
{
	tm_env *e = tm_env_new("portinuse");
	char addr[32], *out = NULL;
	int port, fd = pgtest_tcp_listen(&port);

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE p (id int PRIMARY KEY)");
	tm_setup_table(e, "p");
	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	assert_int_equal(tm_run(e, 30, &out, "run", "--metrics-listen", addr, NULL), 3);
	assert_non_null(strstr(out, addr));
	assert_non_null(strstr(out, "Address already in use"));
	assert_null(strstr(out, "streaming from slot"));
	free(out);
	out = NULL;
	assert_int_equal(tm_run(e, 30, &out, "run", "--metrics-listen", "9187", NULL), 2);
	assert_non_null(strstr(out, "ADDRESS:PORT"));
	free(out);
	close(fd);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counters_match_workload),
		cmocka_unit_test(test_slot_wal_watched),
		cmocka_unit_test(test_capture_gaps_gauge),
		cmocka_unit_test(test_quarantine_counted),
		cmocka_unit_test(test_retry_counted),
		cmocka_unit_test(test_streamed_counted),
		cmocka_unit_test(test_port_in_use),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
