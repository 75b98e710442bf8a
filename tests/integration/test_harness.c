/*
 * test_harness.c: the integration-test harness (tests/support/pgtest.h)
 * against real clusters: clusters, SQL helpers, table comparison, crash
 * and restart, background workloads and processes.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pgtest.h"

#define ROWS 100000

static pgtest_cluster *src_cluster, *dst_cluster;

static int
setup(void **state)
{
	(void) state;
	src_cluster = pgtest_cluster_start("src");
	dst_cluster = pgtest_cluster_start_with("dst", "fsync=off");
	return 0;
}

static int
teardown(void **state)
{
	(void) state;
	pgtest_cluster_stop(src_cluster);
	pgtest_cluster_stop(dst_cluster);
	return 0;
}

/* Copies a table's rows with COPY TO STDOUT / COPY FROM STDIN. */
static void
copy_rows(PGconn *from, PGconn *to, const char *table)
{
	char sql[256];
	PGresult *res;
	char *buf;
	int n;

	snprintf(sql, sizeof sql, "COPY %s TO STDOUT", table);
	res = PQexec(from, sql);
	assert_int_equal(PQresultStatus(res), PGRES_COPY_OUT);
	PQclear(res);
	snprintf(sql, sizeof sql, "COPY %s FROM STDIN", table);
	res = PQexec(to, sql);
	assert_int_equal(PQresultStatus(res), PGRES_COPY_IN);
	PQclear(res);
	while ((n = PQgetCopyData(from, &buf, 0)) > 0) {
		assert_int_equal(PQputCopyData(to, buf, n), 1);
		PQfreemem(buf);
	}
	assert_int_equal(n, -1);
	assert_int_equal(PQputCopyEnd(to, NULL), 1);
	for (PGconn *c = from; c != NULL; c = c == from ? to : NULL) {
		while ((res = PQgetResult(c)) != NULL) {
			assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
			PQclear(res);
		}
	}
}

static const char *create_items =
	"CREATE TABLE items (id int PRIMARY KEY, name text, amount numeric, note text)";

static void
test_clusters_are_distinct_and_logical(void **state)
{
	PGconn *src = pgtest_connect(src_cluster), *dst = pgtest_connect(dst_cluster);
	char *level = pgtest_query_value(src, "SHOW wal_level");
	char *fsync = pgtest_query_value(dst, "SHOW fsync");

	(void) state;
	assert_int_not_equal(src_cluster->port, dst_cluster->port);
	assert_string_equal(level, "logical");
	assert_string_equal(fsync, "off");
	assert_int_equal(pgtest_query_long(src, "SELECT %d + 1", 41), 42);
	free(level);
	free(fsync);
	PQfinish(src);
	PQfinish(dst);
}

static void
test_query_helpers(void **state)
{
	PGconn *c = pgtest_connect(src_cluster);
	char *err, *v;

	(void) state;
	assert_null(pgtest_query_value(c, "SELECT NULL"));
	assert_null(pgtest_query_value(c, "SELECT 1 WHERE false"));
	v = pgtest_query_value(c, "SELECT 'it''s %s'", "fine");
	assert_string_equal(v, "it's fine");
	free(v);
	err = pgtest_exec_error(c, "SELECT * FROM no_such_table");
	assert_non_null(err);
	assert_non_null(strstr(err, "no_such_table"));
	free(err);
	assert_null(pgtest_exec_error(c, "SELECT 1"));
	assert_true(pgtest_wait_value(c, "SELECT 'x'", "x", 1));
	assert_true(pgtest_wait_value(c, "SELECT NULL", NULL, 1));
	assert_false(pgtest_wait_value(c, "SELECT 'x'", "y", 0.2));
	PQfinish(c);
}

static void
test_tables_equal(void **state)
{
	PGconn *src = pgtest_connect(src_cluster), *dst = pgtest_connect(dst_cluster);
	char *diff = NULL;

	(void) state;
	pgtest_exec(src, "%s", create_items);
	pgtest_exec(dst, "%s", create_items);
	pgtest_exec(src, "INSERT INTO items SELECT i, 'name ' || i || E'\\t\\\\\\n\"''', i * 1.5, "
				"CASE WHEN i %% 7 = 0 THEN NULL ELSE 'note' END "
				"FROM generate_series(1, %d) i", ROWS);
	copy_rows(src, dst, "items");
	assert_int_equal(pgtest_query_long(dst, "SELECT count(*) FROM items"), ROWS);
	if (!pgtest_tables_equal(src, dst, "public.items", "id", &diff))
		fail_msg("%s", diff);
	assert_null(diff);

	pgtest_exec(dst, "UPDATE items SET note = 'changed' WHERE id = 4240");
	assert_false(pgtest_tables_equal(src, dst, "public.items", "id", &diff));
	assert_non_null(strstr(diff, "row 4240 differs in column note"));
	assert_non_null(strstr(diff, "'changed'"));
	free(diff);

	pgtest_exec(dst, "UPDATE items SET note = 'note' WHERE id = 4240");
	pgtest_exec(dst, "UPDATE items SET note = NULL WHERE id = 4241");
	assert_false(pgtest_tables_equal(src, dst, "items", "id", &diff));
	assert_non_null(strstr(diff, "source 'note', target NULL"));
	free(diff);

	pgtest_exec(dst, "DELETE FROM items WHERE id >= 4241");
	assert_false(pgtest_tables_equal(src, dst, "items", "id", &diff));
	assert_non_null(strstr(diff, "only the source has row 4241"));
	free(diff);
	PQfinish(src);
	PQfinish(dst);
}

static void
test_tables_equal_columns_and_errors(void **state)
{
	PGconn *src = pgtest_connect(src_cluster), *dst = pgtest_connect(dst_cluster);
	char *diff = NULL;

	(void) state;
	pgtest_exec(src, "CREATE TABLE cols (a int, b text); INSERT INTO cols VALUES (1, 'x'), (2, NULL)");
	pgtest_exec(dst, "CREATE TABLE cols (b text, a int); INSERT INTO cols VALUES ('x', 1), (NULL, 2)");
	assert_true(pgtest_tables_equal(src, dst, "cols", "a", NULL));
	assert_true(pgtest_tables_equal(src, src, "cols", "a", NULL));

	pgtest_exec(dst, "ALTER TABLE cols ADD COLUMN c int");
	assert_false(pgtest_tables_equal(src, dst, "cols", "a", &diff));
	assert_non_null(strstr(diff, "columns differ"));
	free(diff);

	assert_false(pgtest_tables_equal(src, dst, "missing", "1", &diff));
	assert_non_null(strstr(diff, "does not exist"));
	free(diff);
	assert_int_equal(PQtransactionStatus(src), PQTRANS_IDLE);
	assert_int_equal(PQtransactionStatus(dst), PQTRANS_IDLE);
	PQfinish(src);
	PQfinish(dst);
}

static void
test_kill9_and_restart(void **state)
{
	PGconn *c = pgtest_connect(dst_cluster);
	int port = dst_cluster->port;
	char *err;

	(void) state;
	pgtest_exec(c, "CREATE TABLE crash (id int); INSERT INTO crash VALUES (1)");
	pgtest_cluster_kill9(dst_cluster);
	err = pgtest_exec_error(c, "SELECT 1");
	assert_non_null(err);
	free(err);
	PQfinish(c);
	assert_int_equal(PQping(dst_cluster->conninfo), PQPING_NO_RESPONSE);

	pgtest_cluster_restart(dst_cluster, false);
	assert_int_equal(dst_cluster->port, port);
	c = pgtest_connect(dst_cluster);
	assert_int_equal(pgtest_query_long(c, "SELECT count(*) FROM crash"), 1);
	PQfinish(c);

	pgtest_cluster_restart(dst_cluster, true);
	c = pgtest_connect(dst_cluster);
	assert_int_equal(pgtest_query_long(c, "SELECT id FROM crash"), 1);
	PQfinish(c);
}

static void
insert_step(PGconn *conn, void *arg, unsigned iteration)
{
	pgtest_exec(conn, "INSERT INTO %s VALUES (%u)", (const char *) arg, iteration);
}

static bool
workload_reached(void *arg)
{
	return pgtest_workload_iterations(arg) >= 200;
}

static void
test_workload(void **state)
{
	PGconn *c = pgtest_connect(src_cluster);
	pgtest_workload *w;
	unsigned n, errors;

	(void) state;
	pgtest_exec(c, "CREATE TABLE load (i int)");
	w = pgtest_workload_start(src_cluster->conninfo, insert_step, "load");
	assert_true(pgtest_wait_for(workload_reached, w, 30));
	n = pgtest_workload_stop(w, &errors);
	assert_true(n >= 200);
	assert_int_equal(errors, 0);
	assert_int_equal(pgtest_query_long(c, "SELECT count(*) FROM load"), n);

	/* Errors are counted, not fatal. */
	w = pgtest_workload_start(src_cluster->conninfo, insert_step, "no_such_table");
	assert_true(pgtest_wait_for(workload_reached, w, 30));
	n = pgtest_workload_stop(w, &errors);
	assert_int_equal(errors, n);
	PQfinish(c);
}

static void
test_workload_survives_restart(void **state)
{
	PGconn *c = pgtest_connect(src_cluster);
	pgtest_workload *w;
	unsigned before, n;
	char sql[128];

	(void) state;
	pgtest_exec(c, "CREATE TABLE load2 (i int)");
	PQfinish(c);
	w = pgtest_workload_start(src_cluster->conninfo, insert_step, "load2");
	assert_true(pgtest_wait_for(workload_reached, w, 30));
	pgtest_cluster_restart(src_cluster, true);
	before = pgtest_workload_iterations(w);
	c = pgtest_connect(src_cluster);
	snprintf(sql, sizeof sql, "SELECT count(*) > 0 FROM load2 WHERE i > %u", before + 10);
	assert_true(pgtest_wait_value(c, sql, "t", 30));
	n = pgtest_workload_stop(w, NULL);
	assert_true(n > before + 10);
	PQfinish(c);
}

static void
test_processes(void **state)
{
	const char *const help[] = {"--help", NULL};
	const char *const sh_wait[] = {"-c", "echo ready; exec sleep 30", NULL};
	const char *const sh_env[] = {"-c", "echo \"$PGTEST_A/${PGTEST_B-unset}\"; exit 3", NULL};
	const char *const env[] = {"PGTEST_A=set", "PGTEST_B", NULL};
	char *out = NULL;
	pgtest_proc *p;

	(void) state;
	assert_int_equal(pgtest_run_tidemark(help, 30, &out), 0);
	assert_non_null(strstr(out, "Usage: tidemark COMMAND"));
	free(out);

	p = pgtest_spawn_program("sh", sh_wait, NULL);
	assert_true(pgtest_proc_wait_output(p, "ready", 10));
	assert_true(pgtest_proc_running(p));
	pgtest_proc_kill(p, SIGTERM);
	assert_int_equal(pgtest_proc_wait(p, 10), 128 + SIGTERM);
	assert_false(pgtest_proc_running(p));
	assert_false(pgtest_proc_wait_output(p, "never", 10));
	pgtest_proc_free(p);

	setenv("PGTEST_B", "inherited", 1);
	p = pgtest_spawn_program("/bin/sh", sh_env, env);
	assert_int_equal(pgtest_proc_wait(p, 10), 3);
	assert_string_equal(pgtest_proc_output(p), "set/unset\n");
	pgtest_proc_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clusters_are_distinct_and_logical),
		cmocka_unit_test(test_query_helpers),
		cmocka_unit_test(test_tables_equal),
		cmocka_unit_test(test_tables_equal_columns_and_errors),
		cmocka_unit_test(test_kill9_and_restart),
		cmocka_unit_test(test_workload),
		cmocka_unit_test(test_workload_survives_restart),
		cmocka_unit_test(test_processes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
