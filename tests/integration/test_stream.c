/*
 * Integration tests of the streaming core against real source and target
 * clusters: setup, the apply rules (keys, unchanged TOAST, truncate), whole
 * transactions (a sum that never tears), crash safety (kill -9 of tidemark
 * in a busy stream), reconnection, signals, status and secrets.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tm_fixture.h"

static void
setup_tables(tm_env *e, const char *table1, const char *table2)
{
	char *out = NULL;
	int rc = table2 ? tm_run(e, 60, &out, "setup", "--table", table1, "--table", table2, NULL)
	                : tm_run(e, 60, &out, "setup", "--table", table1, NULL);

	if (rc != 0)
		fail_msg("setup exited %d:\n%s", rc, out);
	free(out);
}

/* A composite key of mixed-case and space-containing names, NULLs, text
 * with tabs and newlines, inserts, updates (one moving the key), deletes,
 * TRUNCATE; setup run twice; the result equal row for row. */
static void
test_composite_key_and_changes(void **state)
{
	tm_env *e = tm_env_new("composite");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE \"Line Items\" (\"Order Id\" int, \"Line No\" int,"
	                  " \"desc\" text, qty numeric(10,2), at timestamptz,"
	                  " PRIMARY KEY (\"Order Id\", \"Line No\"));"
	                  "CREATE TABLE other (id bigint PRIMARY KEY, v text)");
	pgtest_exec(e->s, "INSERT INTO \"Line Items\" VALUES (1, 1, 'before setup', 1, now())");
	setup_tables(e, "public.\"Line Items\"", "other");
	setup_tables(e, "public.\"Line Items\"", "other"); /* idempotent */
	pgtest_exec(e->s, "INSERT INTO \"Line Items\" SELECT o, l, E'tab\\there\\nline ' || o, o * l,"
	                  " '2024-02-29 12:00:00+01' FROM generate_series(1, 20) o,"
	                  " generate_series(2, 4) l;"
	                  "INSERT INTO \"Line Items\" VALUES (99, 1, NULL, NULL, NULL);"
	                  "UPDATE \"Line Items\" SET qty = qty + 0.25 WHERE \"Order Id\" %% 3 = 0;"
	                  "UPDATE \"Line Items\" SET \"Line No\" = 10 WHERE \"Order Id\" = 5 AND"
	                  " \"Line No\" = 2;"
	                  "DELETE FROM \"Line Items\" WHERE \"Order Id\" = 7;"
	                  "INSERT INTO other SELECT g, 'x' FROM generate_series(1, 50) g;"
	                  "TRUNCATE other; INSERT INTO other VALUES (1, 'after truncate')");
	tm_catch_up(e, 120);
	tm_assert_equal(e, "public.\"Line Items\"", "\"Order Id\", \"Line No\"");
	tm_assert_equal(e, "public.other", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM other"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM \"Line Items\""
	                                         " WHERE \"Order Id\" = 5 AND \"Line No\" = 10"), 1);
	tm_env_free(e);
}

/* A table without a key is refused, naming the table and the fix. */
static void
test_setup_refuses_keyless(void **state)
{
	tm_env *e = tm_env_new("keyless");
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE nokey (a int, b text)");
	rc = tm_run(e, 60, &out, "setup", "--table", "nokey", NULL);
	assert_int_equal(rc, 3);
	assert_non_null(strstr(out, "\"public\".\"nokey\""));
	assert_non_null(strstr(out, "no primary key"));
	assert_non_null(strstr(out, "ADD PRIMARY KEY"));
	free(out);
	tm_env_free(e);
}

/* An update of another column leaves a large TOASTed value as it is. */
static void
test_unchanged_toast_kept(void **state)
{
	tm_env *e = tm_env_new("toast");
	const char *sum = "SELECT string_agg(id || ':' || n || ':' || md5(doc), ',' ORDER BY id) FROM docs";
	char *src_sum, *dst_sum;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE docs (id int PRIMARY KEY, n int, doc text)");
	setup_tables(e, "docs", NULL);
	/* random md5 text does not compress: stored out of line */
	pgtest_exec(e->s, "INSERT INTO docs SELECT g, 0, (SELECT string_agg(md5(g::text || i::text), '')"
	                  " FROM generate_series(1, 40000) i) FROM generate_series(1, 3) g");
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "UPDATE docs SET n = n + 1; UPDATE docs SET n = n + 1 WHERE id = 2;"
	                  "UPDATE docs SET id = 30 WHERE id = 3");
	tm_catch_up(e, 120);
	src_sum = pgtest_query_value(e->s, "%s", sum);
	dst_sum = pgtest_query_value(e->t, "%s", sum);
	assert_string_equal(src_sum, dst_sum);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM docs WHERE doc IS NULL"
	                                         " OR length(doc) <> 1280000"), 0);
	free(src_sum);
	free(dst_sum);
	tm_env_free(e);
}

/* ---- whole transactions: the bank ---- */

#define ACCOUNTS 50
#define BALANCE 1000

static void
transfer_step(PGconn *conn, void *arg, unsigned i)
{
	unsigned from = (i * 7919u + 13) % ACCOUNTS + 1;
	unsigned to = (i * 104729u + 7) % ACCOUNTS + 1;

	(void) arg;
	if (from == to)
		to = to % ACCOUNTS + 1;
	pgtest_exec(conn, "BEGIN; UPDATE accounts SET balance = balance - %u WHERE id = %u;"
	                  " UPDATE accounts SET balance = balance + %u WHERE id = %u; COMMIT",
	            i % 50 + 1, from, i % 50 + 1, to);
}

typedef struct checker {
	const char *conninfo;
	volatile bool stop;
	long reads;
	long torn;
	long bad_sum;
} checker;

static void *
checker_main(void *arg)
{
	checker *c = arg;
	PGconn *conn = PQconnectdb(c->conninfo);

	while (!c->stop) {
		PGresult *r = PQexec(conn, "SELECT sum(balance), count(*) FROM accounts");

		if (PQresultStatus(r) == PGRES_TUPLES_OK) {
			__atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
			if (atol(PQgetvalue(r, 0, 0)) != (long) ACCOUNTS * BALANCE) {
				c->torn++;
				c->bad_sum = atol(PQgetvalue(r, 0, 0));
			}
		}
		PQclear(r);
		tm_sleep_ms(5);
	}
	PQfinish(conn);
	return NULL;
}

static void
test_transfers_never_tear(void **state)
{
	tm_env *e = tm_env_new("bank");
	checker c = {0};
	pthread_t th;
	pgtest_workload *w;
	pgtest_proc *run;
	unsigned transfers;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL)");
	pgtest_exec(e->s, "INSERT INTO accounts SELECT g, %d FROM generate_series(1, %d) g",
	            BALANCE, ACCOUNTS);
	setup_tables(e, "accounts", NULL);
	tm_catch_up(e, 120);
	c.conninfo = e->dst;
	pthread_create(&th, NULL, checker_main, &c);
	run = tm_spawn(e, "run", NULL);
	w = pgtest_workload_start(e->src, transfer_step, NULL);
	tm_wait_steps_and_reads(w, 3000, &c.reads, 200);
	transfers = pgtest_workload_stop(w, NULL);
	tm_stop_and_catch_up(e, run, 120);
	c.stop = true;
	pthread_join(th, NULL);
	print_message("%u transfers, %ld target reads\n", transfers, c.reads);
	if (c.torn > 0)
		fail_msg("%ld of %ld reads of the target saw a torn sum (e.g. %ld)", c.torn, c.reads,
		         c.bad_sum);
	assert_true(c.reads >= 200);
	tm_assert_equal(e, "accounts", "id");
	tm_env_free(e);
}

/* ---- crash safety ---- */

/*
 * Every row change the target applies is counted by a trigger on the
 * target table, in the applying transaction: if anything were applied
 * twice (or lost), the count would differ from the source's own count.
 * The runs apply change by change (--no-net-changes): net changes write a
 * key once per group (test_net and test_modes prove them under kill -9).
 */
static void
count_triggers(tm_env *e)
{
	const char *fn =
		"CREATE TABLE change_count (n bigint NOT NULL);"
		"INSERT INTO change_count VALUES (0);"
		"CREATE FUNCTION count_change() RETURNS trigger LANGUAGE plpgsql AS"
		" $$BEGIN UPDATE change_count SET n = n + 1; RETURN NULL; END$$;"
		"CREATE TRIGGER count_change AFTER INSERT OR UPDATE OR DELETE ON events"
		" FOR EACH ROW EXECUTE FUNCTION count_change()";

	pgtest_exec(e->s, "%s", fn);
	pgtest_exec(e->t, "%s; ALTER TABLE events ENABLE ALWAYS TRIGGER count_change", fn);
}

static void
event_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	switch (i % 4) {
	case 0:
	case 1:
		pgtest_exec(conn, "INSERT INTO events (kind, payload) SELECT %u, repeat('p', %u)"
		                  " FROM generate_series(1, %u)", i % 7, i % 300, i % 5 + 1);
		break;
	case 2:
		pgtest_exec(conn, "UPDATE events SET kind = kind + 1 WHERE id %% 17 = %u", i % 17);
		break;
	default:
		pgtest_exec(conn, "DELETE FROM events WHERE id IN (SELECT id FROM events"
		                  " ORDER BY random() LIMIT 2)");
	}
}

static void
test_kill9_mid_stream(void **state)
{
	tm_env *e = tm_env_new("kill9");
	pgtest_workload *w;
	unsigned steps;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE events (id bigserial PRIMARY KEY, kind int, payload text)");
	setup_tables(e, "events", NULL);
	count_triggers(e);
	tm_catch_up(e, 60); /* the (empty) snapshot is done before the workload */
	w = pgtest_workload_start(e->src, event_step, NULL);
	tm_kill9_runs(e, 6, 400, "--no-net-changes", NULL);
	steps = pgtest_workload_stop(w, NULL);
	assert_int_equal(tm_run(e, 180, NULL, "run", "--until-caught-up", "--no-net-changes", NULL), 0);
	print_message("%u workload steps, 6 kills\n", steps);
	tm_assert_equal(e, "events", "id");
	{
		long src_n = pgtest_query_long(e->s, "SELECT n FROM change_count");
		long dst_n = pgtest_query_long(e->t, "SELECT n FROM change_count");

		if (src_n != dst_n)
			fail_msg("the source made %ld row changes, the target applied %ld", src_n, dst_n);
		assert_true(src_n > 100);
	}
	tm_env_free(e);
}

/* ---- connections: restarts of either server ---- */

static void
test_rides_through_restarts(void **state)
{
	tm_env *e = tm_env_new("restarts");
	pgtest_proc *run;
	pgtest_workload *w;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE events (id bigserial PRIMARY KEY, kind int, payload text)");
	setup_tables(e, "events", NULL);
	run = tm_spawn(e, "run", NULL);
	w = pgtest_workload_start(e->src, event_step, NULL);
	tm_sleep_ms(800);
	pgtest_cluster_restart(e->dst_cluster, true);
	tm_sleep_ms(800);
	pgtest_cluster_restart(e->src_cluster, false);
	tm_sleep_ms(800);
	assert_true(pgtest_proc_running(run));
	pgtest_workload_stop(w, NULL);
	PQreset(e->s);
	PQreset(e->t);
	tm_stop_and_catch_up(e, run, 180);
	tm_assert_equal(e, "events", "id");
	tm_env_free(e);
}

/* ---- the command line ---- */

static void
test_status_json_and_signals(void **state)
{
	tm_env *e = tm_env_new("status");
	char *out = NULL;
	json_t *doc;
	json_error_t jerr;
	pgtest_proc *run;
	const char *json_start;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t1 (id int PRIMARY KEY, v text);"
	                  "INSERT INTO t1 SELECT g, 'v' FROM generate_series(1, 100) g");
	setup_tables(e, "t1", NULL);
	run = tm_spawn(e, "run", "--progress-interval", "1", NULL);
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM t1", "100", 60));
	assert_true(pgtest_proc_wait_output(run, "rows/s", 30));
	/* every connection tidemark makes says who it is */
	assert_true(pgtest_wait_value(e->s, "SELECT count(*) > 0 FROM pg_stat_activity"
	                                    " WHERE application_name = 'tidemark stream'", "t", 30));
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_stat_activity"
	                                         " WHERE application_name = 'tidemark apply'"), 1);
	assert_int_equal(tm_run(e, 60, &out, "status", "--json", NULL), 0);
	json_start = strchr(out, '{');
	assert_non_null(json_start);
	doc = json_loads(json_start, JSON_DISABLE_EOF_CHECK, &jerr);
	if (doc == NULL)
		fail_msg("status --json is not JSON: %s\n%s", jerr.text, out);
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "source"), "slot")),
	                    e->slot);
	assert_true(json_is_true(json_object_get(json_object_get(doc, "source"), "active")));
	assert_string_equal(json_string_value(json_object_get(
		                    json_array_get(json_object_get(doc, "tables"), 0), "state")),
	                    "streaming");
	json_decref(doc);
	free(out);
	pgtest_proc_kill(run, SIGINT);
	assert_int_equal(pgtest_proc_wait(run, 30), 0);
	pgtest_proc_free(run);
	tm_env_free(e);
}

/* A password given in the connection string never appears in output. */
static void
test_password_never_printed(void **state)
{
	tm_env *e = tm_env_new("secret");
	char *src_pw, *dst_pw, *bad;
	const char *secret = "Sup3rSecretPw";
	char *out = NULL;
	const char *argv_status[] = {"status", "--source", NULL, "--target", NULL, "--slot", NULL,
	                             NULL};
	const char *argv_bad[] = {"status", "--source", NULL, "--target", NULL, NULL};
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t1 (id int PRIMARY KEY)");
	src_pw = malloc(strlen(e->src) + 64);
	dst_pw = malloc(strlen(e->dst) + 64);
	bad = malloc(64);
	sprintf(src_pw, "%s password=%s", e->src, secret);
	sprintf(dst_pw, "%s password=%s", e->dst, secret);
	sprintf(bad, "host=127.0.0.1 port=1 password=%s connect_timeout=2", secret);
	free(e->src);
	free(e->dst);
	e->src = src_pw;
	e->dst = dst_pw;
	setup_tables(e, "t1", NULL);
	tm_catch_up(e, 60);
	argv_status[2] = e->src;
	argv_status[4] = e->dst;
	argv_status[6] = e->slot;
	rc = pgtest_run_tidemark(argv_status, 60, &out);
	assert_int_equal(rc, 0);
	assert_null(strstr(out, secret));
	free(out);
	argv_bad[2] = bad;
	argv_bad[4] = bad;
	rc = pgtest_run_tidemark(argv_bad, 60, &out);
	assert_int_not_equal(rc, 0);
	assert_non_null(strstr(out, "cannot connect"));
	assert_null(strstr(out, secret));
	free(out);
	free(bad);
	tm_env_free(e);
}

/* --schema: tables present and tables created later. */
static void
test_whole_schema(void **state)
{
	tm_env *e = tm_env_new("schema");
	char *out = NULL;
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA shop; CREATE TABLE shop.a (id int PRIMARY KEY, v text);"
	                  "INSERT INTO shop.a VALUES (1, 'one')");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "shop", NULL), 0);
	free(out);
	run = tm_spawn(e, "run", NULL);
	pgtest_exec(e->s, "CREATE TABLE shop.\"Later Table\" (k text PRIMARY KEY, n int);"
	                  "INSERT INTO shop.\"Later Table\" VALUES ('x', 1), ('y', 2)");
	pgtest_exec(e->s, "UPDATE shop.\"Later Table\" SET n = 3 WHERE k = 'y'");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "shop.a", "id");
	tm_assert_equal(e, "shop.\"Later Table\"", "k");
	tm_env_free(e);
}

/*
 * --schema with tables left out: a keyless log table refused until it has
 * a replica identity (it stays in the schema's publication), then excluded
 * for good: not copied, not registered when its changes stream, nor when
 * it is dropped and created again; the rest replicates.
 */
static void
test_schema_with_excluded_tables(void **state)
{
	tm_env *e = tm_env_new("exclude");
	char *out = NULL;
	pgtest_proc *run;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.a (id int PRIMARY KEY, v text);"
	                  "CREATE TABLE app.\"Log\" (at timestamptz, msg text);"
	                  "CREATE TABLE app.scratch (id int PRIMARY KEY);"
	                  "INSERT INTO app.a VALUES (1, 'one'); INSERT INTO app.\"Log\" VALUES (now(), 'm');"
	                  "INSERT INTO app.scratch VALUES (1)");
	rc = tm_run(e, 60, &out, "setup", "--schema", "app", NULL);
	assert_int_equal(rc, 3);
	assert_non_null(strstr(out, "--exclude-table"));
	free(out);
	rc = tm_run(e, 60, &out, "setup", "--schema", "app", "--exclude-table", "app.\"Log\"",
	            "--exclude-table", "app.scratch", NULL);
	assert_int_equal(rc, 3);
	assert_non_null(strstr(out, "REPLICA IDENTITY FULL"));
	free(out);
	pgtest_exec(e->s, "ALTER TABLE app.\"Log\" REPLICA IDENTITY FULL");
	rc = tm_run(e, 60, &out, "setup", "--schema", "app", "--exclude-table", "app.\"Log\"",
	            "--exclude-table", "app.scratch", "--table", "app.scratch", NULL);
	assert_int_equal(rc, 2);
	free(out);
	rc = tm_run(e, 60, &out, "setup", "--schema", "app", "--exclude-table", "app.\"Log\"",
	            "--exclude-table", "app.scratch", NULL);
	if (rc != 0)
		fail_msg("setup exited %d:\n%s", rc, out);
	free(out);
	run = tm_spawn(e, "run", NULL);
	/* the application goes on writing the excluded tables */
	pgtest_exec(e->s, "UPDATE app.\"Log\" SET msg = 'n'; DELETE FROM app.\"Log\";"
	                  "INSERT INTO app.scratch VALUES (2); DROP TABLE app.scratch;"
	                  "CREATE TABLE app.scratch (id int PRIMARY KEY); INSERT INTO app.scratch VALUES (3);"
	                  "INSERT INTO app.a VALUES (2, 'two')");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "app.a", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"), 1);
	assert_null(pgtest_query_value(e->t, "SELECT to_regclass('app.scratch')"));
	assert_null(pgtest_query_value(e->t, "SELECT to_regclass('app.\"Log\"')"));
	/* a table already replicated cannot be left out afterwards */
	rc = tm_run(e, 60, &out, "setup", "--schema", "app", "--exclude-table", "app.a", NULL);
	assert_int_equal(rc, 3);
	assert_non_null(strstr(out, "replicated already"));
	free(out);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_composite_key_and_changes),
		cmocka_unit_test(test_setup_refuses_keyless),
		cmocka_unit_test(test_unchanged_toast_kept),
		cmocka_unit_test(test_transfers_never_tear),
		cmocka_unit_test(test_kill9_mid_stream),
		cmocka_unit_test(test_rides_through_restarts),
		cmocka_unit_test(test_status_json_and_signals),
		cmocka_unit_test(test_password_never_printed),
		cmocka_unit_test(test_whole_schema),
		cmocka_unit_test(test_schema_with_excluded_tables),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
