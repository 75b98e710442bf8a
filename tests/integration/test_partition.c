/*
 * Integration tests of partitioned tables: each is replicated as one
 * target table, its root. Its existing rows are copied from every
 * partition (list, range, hash, several levels) under a workload that
 * moves rows between partitions, through kill -9; ATTACH, DETACH (also
 * CONCURRENTLY), DROP and TRUNCATE of a partition, which change the root's
 * rows without row changes in the stream, end equal; a --schema pipeline
 * never registers a partition; plain inheritance stays one table per
 * table. Every test ends comparing both sides row for row with its own
 * SQL, and with `tidemark verify`.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tm_fixture.h"

/* ---- comparing ---- */

/* Row count and md5 of every row's text (the types' output text), in key
 * order: equal on both sides only when the rows are. */
static char *
digest(PGconn *conn, const char *from, const char *cols, const char *order)
{
	return pgtest_query_value(conn, "SELECT count(*) || ' ' || coalesce(md5(string_agg("
	                                "row(%s)::text, E'\\n' ORDER BY %s)), '-') FROM %s t",
	                          cols, order, from);
}

/* The source's rows of src_from are the target's rows of dst_from. */
static void
assert_rows_equal(tm_env *e, const char *src_from, const char *dst_from, const char *cols,
                  const char *order)
{
	char *s = digest(e->s, src_from, cols, order);
	char *t = digest(e->t, dst_from, cols, order);

	if (strcmp(s, t) != 0) {
		char *diff = NULL;

		pgtest_tables_equal(e->s, e->t, dst_from, order, &diff);
		fail_msg("%s: source has %s, target has %s (%s)", dst_from, s, t, diff ? diff : "");
	}
	free(s);
	free(t);
}

static void
assert_verify_equal(tm_env *e)
{
	char *out = NULL;
	int rc = tm_run(e, 120, &out, "verify", NULL);

	if (rc != 0)
		fail_msg("tidemark verify exited %d:\n%s", rc, out ? out : "");
	free(out);
}

/* Waits until the target's table has the source's row count (the rows of
 * a change outside the stream came or went). */
static void
wait_same_count(tm_env *e, const char *table, pgtest_proc *run)
{
	char *n = pgtest_query_value(e->s, "SELECT count(*) FROM %s", table);
	char sql[256];

	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
	if (!pgtest_wait_value(e->t, sql, n, 90))
		fail_msg("%s on the target never reached %s rows:\n%s", table, n,
		         run ? pgtest_proc_output(run) : "");
	free(n);
}

static long
rows_copied(tm_env *e)
{
	char *v = pgtest_query_value(e->t, "SELECT coalesce(sum(snapshot_rows), 0)"
	                                   " FROM tidemark.tables");
	long n = v ? atol(v) : 0;

	free(v);
	return n;
}

/* The query's one value is expected (the harness's string freed). */
static void
assert_value(PGconn *conn, const char *sql, const char *expected)
{
	char *v = pgtest_query_value(conn, "%s", sql);

	if (v == NULL || strcmp(v, expected) != 0)
		fail_msg("%s: %s, expected %s", sql, v ? v : "NULL", expected);
	free(v);
}

/* The tables replicated: the roots, never their partitions. */
static void
assert_registered(tm_env *e, const char *expected)
{
	assert_value(e->t, "SELECT string_agg(source_schema || '.' || source_table, ','"
	                   " ORDER BY source_schema, source_table) FROM tidemark.tables"
	                   " WHERE state <> 'dropped'", expected);
}

/* ---- the copy under a workload that moves rows between partitions ---- */

#define LIST_ROWS 6000
#define RANGE_ROWS 6000
#define MULTI_ROWS 6000

static const char *const regions[] = {"eu", "us", "asia", "af"};

static void
move_step(PGconn *conn, void *arg, unsigned i)
{
	unsigned k = (i * 2654435761u) % 6000 + 1;

	(void) arg;
	switch (i % 8) {
	case 0: /* list: to another partition (the key changes with the region) */
		pgtest_exec(conn, "UPDATE list_t SET region = '%s', v = v + 1"
		                  " WHERE id BETWEEN %u AND %u", regions[i / 8 % 4], k, k + 6);
		break;
	case 1: /* range: positive ids move to the negative partition and back */
		pgtest_exec(conn, "UPDATE range_t SET id = -id, v = v + 1"
		                  " WHERE abs(id) BETWEEN %u AND %u", k, k + 4);
		break;
	case 2: /* multi-level: between the hashed level and the plain leaf */
		pgtest_exec(conn, "UPDATE multi_t SET k = CASE WHEN k < 50 THEN k + 50 ELSE k - 50 END,"
		                  " v = 'moved %u' WHERE id BETWEEN %u AND %u", i, k, k + 5);
		break;
	case 3: /* multi-level: to another hash partition (the id changes) */
		pgtest_exec(conn, "UPDATE multi_t SET id = id + 100000 WHERE id = %u", k);
		break;
	case 4:
		pgtest_exec(conn, "DELETE FROM list_t WHERE id BETWEEN %u AND %u;"
		                  " DELETE FROM range_t WHERE abs(id) = %u", k, k + 2, k + 3);
		break;
	case 5:
		pgtest_exec(conn, "INSERT INTO list_t VALUES (%u, '%s', %u, 'new')"
		                  " ON CONFLICT DO NOTHING; INSERT INTO range_t VALUES (%u, %u, 'new')"
		                  " ON CONFLICT DO NOTHING", 20000 + i, regions[i % 4], i,
		            20000 + i, i);
		break;
	case 6: /* in one transaction: moved, changed, deleted, inserted again */
		pgtest_exec(conn, "BEGIN; UPDATE list_t SET region = 'eu' WHERE id = %u;"
		                  " UPDATE list_t SET note = 'tx %u' WHERE id = %u;"
		                  " DELETE FROM multi_t WHERE id = %u;"
		                  " INSERT INTO multi_t VALUES (%u, 7, 'again') ON CONFLICT DO NOTHING;"
		                  " COMMIT", k, i, k, k + 1, k + 1);
		break;
	default:
		pgtest_exec(conn, "UPDATE range_t SET note = 'n%u' WHERE abs(id) BETWEEN %u AND %u", i,
		            k, k + 30);
	}
}

static void
create_partitioned(PGconn *s)
{
	pgtest_exec(s, "CREATE TABLE list_t (id int, region text, v int, note text,"
	               "  PRIMARY KEY (id, region)) PARTITION BY LIST (region);"
	               "CREATE TABLE list_eu PARTITION OF list_t FOR VALUES IN ('eu');"
	               "CREATE TABLE list_us PARTITION OF list_t FOR VALUES IN ('us');"
	               "CREATE TABLE list_asia PARTITION OF list_t FOR VALUES IN ('asia');"
	               "CREATE TABLE list_other PARTITION OF list_t DEFAULT;"
	               "INSERT INTO list_t SELECT g, (ARRAY['eu', 'us', 'asia', 'af'])[g %% 4 + 1], g,"
	               "  'n' || g FROM generate_series(1, %d) g;"
	               "CREATE TABLE range_t (id int PRIMARY KEY, v int, note text) PARTITION BY RANGE (id);"
	               "CREATE TABLE range_neg PARTITION OF range_t FOR VALUES FROM (MINVALUE) TO (0);"
	               "CREATE TABLE range_lo PARTITION OF range_t FOR VALUES FROM (0) TO (3000);"
	               "CREATE TABLE range_hi PARTITION OF range_t FOR VALUES FROM (3000) TO (MAXVALUE);"
	               "INSERT INTO range_t SELECT g, g, NULL FROM generate_series(1, %d) g;"
	               "CREATE TABLE multi_t (id int, k int, v text, PRIMARY KEY (id, k))"
	               "  PARTITION BY RANGE (k);"
	               "CREATE TABLE multi_low PARTITION OF multi_t FOR VALUES FROM (0) TO (50)"
	               "  PARTITION BY HASH (id);"
	               "CREATE TABLE multi_low_0 PARTITION OF multi_low FOR VALUES WITH (MODULUS 3, REMAINDER 0);"
	               "CREATE TABLE multi_low_1 PARTITION OF multi_low FOR VALUES WITH (MODULUS 3, REMAINDER 1);"
	               "CREATE TABLE multi_low_2 PARTITION OF multi_low FOR VALUES WITH (MODULUS 3, REMAINDER 2);"
	               "CREATE TABLE multi_high PARTITION OF multi_t FOR VALUES FROM (50) TO (100);"
	               "INSERT INTO multi_t SELECT g, g %% 50, 'v' || g FROM generate_series(1, %d) g;"
	               "ANALYZE",
	            LIST_ROWS, RANGE_ROWS, MULTI_ROWS);
}

static void
assert_three_equal(tm_env *e)
{
	assert_rows_equal(e, "list_t", "list_t", "t.id, t.region, t.v, t.note", "id, region");
	assert_rows_equal(e, "range_t", "range_t", "t.id, t.v, t.note", "id");
	assert_rows_equal(e, "multi_t", "multi_t", "t.id, t.k, t.v", "id, k");
}

static void
test_copy_under_moves_with_kill9(void **state)
{
	tm_env *e = tm_env_new("partcopy");
	pgtest_workload *wl;
	pgtest_proc *run;
	char *out = NULL;
	long before;
	unsigned errors = 0;

	(void) state;
	create_partitioned(e->s);
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "list_t", "--table", "range_t",
	                        "--table", "multi_t", NULL), 0);
	free(out);
	out = NULL;
	/* the roots only; their partitions are recorded */
	assert_registered(e, "public.list_t,public.multi_t,public.range_t");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.partitions"), 12);
	wl = pgtest_workload_start(e->src, move_step, NULL);
	run = tm_spawn(e, "run", "--chunk-rows", "7", NULL);
	for (int i = 0; i < 3000 && rows_copied(e) < 2000; i++) {
		if (!pgtest_proc_running(run))
			fail_msg("run ended early:\n%s", pgtest_proc_output(run));
		tm_sleep_ms(10);
	}
	pgtest_proc_kill(run, SIGKILL);
	assert_int_equal(pgtest_proc_wait(run, 30), 128 + SIGKILL);
	pgtest_proc_free(run);
	before = rows_copied(e);
	print_message("killed after %ld rows copied\n", before);
	assert_true(before >= 2000);
	assert_true(before < LIST_ROWS + RANGE_ROWS + MULTI_ROWS);
	/* the workload goes on while the copy resumes and ends */
	assert_int_equal(tm_run(e, 300, &out, "run", "--until-caught-up", "--chunk-rows", "7", NULL), 0);
	if (strstr(out, "resumes after the last chunk copied") == NULL)
		fail_msg("the copy did not resume:\n%s", out);
	free(out);
	assert_true(pgtest_workload_stop(wl, &errors) > 50);
	tm_catch_up(e, 120);
	assert_three_equal(e);
	assert_verify_equal(e);
	/* rows did move: the negative partition and the plain leaf hold some */
	assert_true(pgtest_query_long(e->t, "SELECT count(*) FROM range_t WHERE id < 0") > 0);
	assert_true(pgtest_query_long(e->t, "SELECT count(*) FROM multi_t WHERE k >= 50") > 0);
	tm_env_free(e);
}

/* ---- changes of the hierarchy, while streaming ---- */

static void
test_attach_detach_drop_truncate(void **state)
{
	tm_env *e = tm_env_new("partddl");
	const char *cols = "t.id, t.day, t.v";
	pgtest_proc *run;
	char *log;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE ev (id int, day date, v text, PRIMARY KEY (id, day))"
	                  "  PARTITION BY RANGE (day);"
	                  "CREATE TABLE ev_01 PARTITION OF ev FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');"
	                  "CREATE TABLE ev_02 PARTITION OF ev FOR VALUES FROM ('2024-02-01') TO ('2024-03-01');"
	                  "CREATE TABLE ev_03 PARTITION OF ev FOR VALUES FROM ('2024-03-01') TO ('2024-04-01')"
	                  "  PARTITION BY HASH (id);"
	                  "CREATE TABLE ev_03a PARTITION OF ev_03 FOR VALUES WITH (MODULUS 2, REMAINDER 0);"
	                  "CREATE TABLE ev_03b PARTITION OF ev_03 FOR VALUES WITH (MODULUS 2, REMAINDER 1);"
	                  "CREATE TABLE ev_05 PARTITION OF ev FOR VALUES FROM ('2024-05-01') TO ('2024-06-01');"
	                  "INSERT INTO ev SELECT g, date '2024-01-01' + (g %% 90), 'v' || g"
	                  "  FROM generate_series(1, 3000) g;"
	                  "INSERT INTO ev SELECT g, date '2024-05-01' + (g %% 30), 'may' FROM generate_series(1, 300) g");
	tm_setup_table(e, "ev");
	run = tm_start_run(e, "--chunk-rows", "50", NULL);
	assert_true(pgtest_wait_value(e->t, "SELECT state FROM tidemark.tables", "streaming", 60));
	wait_same_count(e, "ev", run);

	/* ATTACH of a table that holds rows: they appear on the target (its
	 * columns in another order than the root's, after a dropped one) */
	pgtest_exec(e->s, "CREATE TABLE ev_04 (gone int, v text, day date, id int,"
	                  " PRIMARY KEY (id, day)); ALTER TABLE ev_04 DROP COLUMN gone;"
	                  "INSERT INTO ev_04 (id, day, v) SELECT g, date '2024-04-01' + (g %% 30), 'april'"
	                  "  FROM generate_series(1, 500) g;"
	                  "ALTER TABLE ev ATTACH PARTITION ev_04 FOR VALUES FROM ('2024-04-01') TO ('2024-05-01');"
	                  "INSERT INTO ev VALUES (9001, '2024-04-15', 'after attach');"
	                  "UPDATE ev SET v = 'april, updated' WHERE day = '2024-04-11';"
	                  "DELETE FROM ev WHERE day = '2024-04-12'");
	wait_same_count(e, "ev", run);
	assert_rows_equal(e, "ev", "ev", cols, "id, day");

	/* DETACH: its rows leave the root; the stream goes on meanwhile */
	pgtest_exec(e->s, "ALTER TABLE ev DETACH PARTITION ev_01;"
	                  "UPDATE ev SET v = 'changed' WHERE day = '2024-02-10'");
	wait_same_count(e, "ev", run);
	/* DETACH CONCURRENTLY runs in two transactions */
	pgtest_exec(e->s, "ALTER TABLE ev DETACH PARTITION ev_02 CONCURRENTLY");
	pgtest_exec(e->s, "INSERT INTO ev VALUES (9002, '2024-05-20', 'after detach')");
	wait_same_count(e, "ev", run);
	assert_rows_equal(e, "ev", "ev", cols, "id, day");

	/* DROP of a partition (itself partitioned): pgoutput sends nothing */
	pgtest_exec(e->s, "DROP TABLE ev_03");
	wait_same_count(e, "ev", run);
	/* TRUNCATE of one partition: its rows go, the others' stay */
	pgtest_exec(e->s, "TRUNCATE ev_04; INSERT INTO ev VALUES (9003, '2024-04-02', 'after truncate')");
	wait_same_count(e, "ev", run);
	assert_true(pgtest_query_long(e->t, "SELECT count(*) FROM ev WHERE day >= '2024-05-01'") > 300);
	/* TRUNCATE of the root, then new rows: the root's truncate is enough */
	pgtest_exec(e->s, "BEGIN; TRUNCATE ev; INSERT INTO ev SELECT g, date '2024-05-01' + g %% 30,"
	                  " 'fresh' FROM generate_series(1, 100) g; COMMIT");
	wait_same_count(e, "ev", run);
	tm_stop_and_catch_up(e, run, 120);
	assert_rows_equal(e, "ev", "ev", cols, "id, day");
	assert_verify_equal(e);
	/* what was done is in the audit log; no partition was ever registered */
	log = pgtest_query_value(e->t, "SELECT string_agg(target_action, ' | ' ORDER BY ddl_id)"
	                               " FROM tidemark.ddl_log WHERE target_action LIKE '%%copied again%%'");
	assert_non_null(log);
	if (strstr(log, "public.ev_04 attached") == NULL || strstr(log, "ev_01 detached") == NULL ||
	    strstr(log, "ev_02 detached") == NULL || strstr(log, "ev_03 dropped") == NULL ||
	    strstr(log, "ev_04 truncated") == NULL)
		fail_msg("audit log: %s", log);
	free(log);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log"
	                                         " WHERE target_action LIKE '%%truncated%%'"), 1);
	assert_registered(e, "public.ev");
	assert_value(e->t, "SELECT string_agg(source_table, ',' ORDER BY source_table)"
	                   " FROM tidemark.partitions", "ev_04,ev_05");
	tm_env_free(e);
}

/* ---- a --schema pipeline ---- */

static void
test_schema_pipeline(void **state)
{
	tm_env *e = tm_env_new("partschema");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE SCHEMA other;"
	                  "CREATE TABLE app.orders (id int, region text, v int, PRIMARY KEY (id, region))"
	                  "  PARTITION BY LIST (region);"
	                  "CREATE TABLE app.orders_eu PARTITION OF app.orders FOR VALUES IN ('eu');"
	                  /* a partition in another schema comes with its root */
	                  "CREATE TABLE other.orders_us PARTITION OF app.orders FOR VALUES IN ('us');"
	                  "CREATE TABLE app.orders_asia PARTITION OF app.orders FOR VALUES IN ('asia')"
	                  "  PARTITION BY RANGE (id);"
	                  "CREATE TABLE app.orders_asia_1 PARTITION OF app.orders_asia FOR VALUES FROM (0) TO (500);"
	                  "CREATE TABLE app.orders_asia_2 PARTITION OF app.orders_asia FOR VALUES FROM (500) TO (MAXVALUE);"
	                  "INSERT INTO app.orders SELECT g, (ARRAY['eu', 'us', 'asia'])[g %% 3 + 1], g"
	                  "  FROM generate_series(1, 1500) g;"
	                  /* a root elsewhere with a partition here: not replicated, said */
	                  "CREATE TABLE other.metrics (id int PRIMARY KEY, v int) PARTITION BY RANGE (id);"
	                  "CREATE TABLE app.metrics_1 PARTITION OF other.metrics FOR VALUES FROM (0) TO (100);"
	                  "INSERT INTO other.metrics SELECT g, g FROM generate_series(1, 50) g;"
	                  /* an ordinary table, attached later */
	                  "CREATE TABLE app.plain (id int, region text, v int, PRIMARY KEY (id, region));"
	                  "INSERT INTO app.plain SELECT g, 'pl', g FROM generate_series(1, 200) g");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	if (strstr(out, "app.metrics_1 is a partition of other.metrics, which is not replicated") == NULL)
		fail_msg("setup did not say that app.metrics_1 is left out:\n%s", out);
	free(out);
	assert_registered(e, "app.orders,app.plain");
	run = tm_start_run(e, "--chunk-rows", "40", NULL);
	/* a partition created later; a partitioned table created later */
	pgtest_exec(e->s, "CREATE TABLE app.orders_af PARTITION OF app.orders FOR VALUES IN ('af');"
	                  "INSERT INTO app.orders SELECT g, 'af', g FROM generate_series(2000, 2100) g;"
	                  "CREATE TABLE app.events (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);"
	                  "CREATE TABLE app.events_1 PARTITION OF app.events FOR VALUES FROM (0) TO (100);"
	                  "CREATE TABLE app.events_2 PARTITION OF app.events FOR VALUES FROM (100) TO (200)"
	                  "  PARTITION BY HASH (id);"
	                  "CREATE TABLE app.events_2a PARTITION OF app.events_2 FOR VALUES WITH (MODULUS 2, REMAINDER 0);"
	                  "CREATE TABLE app.events_2b PARTITION OF app.events_2 FOR VALUES WITH (MODULUS 2, REMAINDER 1);"
	                  "INSERT INTO app.events SELECT g, 'e' || g FROM generate_series(1, 199) g;"
	                  "UPDATE app.orders SET region = 'af' WHERE id BETWEEN 10 AND 30 AND region <> 'af';"
	                  "INSERT INTO other.metrics VALUES (60, 60)");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM tidemark.tables WHERE"
	                                    " source_table = 'events' AND state = 'streaming'", "1", 60));
	/* the ordinary table becomes a partition: replicated with its root now */
	pgtest_exec(e->s, "ALTER TABLE app.orders ATTACH PARTITION app.plain FOR VALUES IN ('pl');"
	                  "UPDATE app.orders SET v = v + 1 WHERE region = 'pl' AND id < 20");
	wait_same_count(e, "app.orders", run);
	/* the root's schema changes; its partitions follow on the source */
	pgtest_exec(e->s, "ALTER TABLE app.orders ADD COLUMN note text DEFAULT 'n';"
	                  "ALTER TABLE app.orders RENAME COLUMN v TO amount;"
	                  "ALTER TABLE app.orders ALTER COLUMN amount TYPE bigint;"
	                  "UPDATE app.orders SET amount = amount * 1000000000, note = 'big'"
	                  "  WHERE id %% 7 = 0;"
	                  "ALTER TABLE app.events ADD COLUMN at timestamptz DEFAULT '2024-01-01Z';"
	                  "DELETE FROM app.events WHERE id BETWEEN 150 AND 160;"
	                  "UPDATE app.events SET id = id + 110 WHERE id BETWEEN 40 AND 50");
	if (!pgtest_wait_value(e->t, "SELECT count(*) FROM app.events"
	                             " WHERE id BETWEEN 150 AND 160 AND at IS NOT NULL", "11", 60))
		fail_msg("the last change did not arrive:\n%s", pgtest_proc_output(run));
	if (strstr(pgtest_proc_output(run), "not registered") != NULL ||
	    strstr(pgtest_proc_output(run), "differ from its schema version") != NULL)
		fail_msg("a partition was reported:\n%s", pgtest_proc_output(run));
	tm_stop_and_catch_up(e, run, 120);
	assert_registered(e, "app.events,app.orders");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.partitions p"
	                                         " JOIN tidemark.tables t USING (table_id)"
	                                         " WHERE t.source_table = 'orders'"), 7);
	assert_rows_equal(e, "app.orders", "app.orders", "t.id, t.region, t.amount, t.note",
	                  "id, region");
	assert_rows_equal(e, "app.events", "app.events", "t.id, t.v, t.at", "id");
	assert_verify_equal(e);
	tm_env_free(e);
}

/* ---- what setup and run refuse, and fix ---- */

static void
test_partition_refused_and_publication(void **state)
{
	tm_env *e = tm_env_new("partsetup");
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE m (id int, r int, PRIMARY KEY (id, r)) PARTITION BY LIST (r);"
	                  "CREATE TABLE m_1 PARTITION OF m FOR VALUES IN (1);"
	                  "INSERT INTO m SELECT g, 1 FROM generate_series(1, 100) g;"
	                  /* a publication made without publish_via_partition_root */
	                  "CREATE PUBLICATION %s FOR TABLE m", e->slot);
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "m_1", NULL), 3);
	if (strstr(out, "is a partition of public.m") == NULL ||
	    strstr(out, "tidemark setup --table 'public.m'") == NULL)
		fail_msg("setup --table of a partition did not name the root:\n%s", out);
	free(out);
	out = NULL;
	tm_setup_table(e, "m");
	assert_int_equal(pgtest_query_long(e->s, "SELECT count(*) FROM pg_publication"
	                                         " WHERE pubname = '%s' AND pubviaroot", e->slot), 1);
	tm_catch_up(e, 60);
	assert_rows_equal(e, "m", "m", "t.id, t.r", "id, r");
	assert_verify_equal(e);
	pgtest_exec(e->s, "ALTER PUBLICATION %s SET (publish_via_partition_root = false)", e->slot);
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 3);
	if (strstr(out, "publish_via_partition_root = true") == NULL)
		fail_msg("run did not name the fix:\n%s", out);
	free(out);
	tm_env_free(e);
}

/* A migration holds a partition's ACCESS EXCLUSIVE lock (an ALTER of it,
 * or CREATE TABLE ... PARTITION OF beside a default partition) while run
 * catches up with the root's creation and copies it. tidemark's reads of
 * the hierarchy take no lock on the partitions (pg_partition_tree would
 * wait behind the migration, and may deadlock with it): the stream goes
 * on, and the copy's wait names the migration's session. */
static void
test_partition_locked_by_a_migration(void **state)
{
	tm_env *e = tm_env_new("partlocked");
	PGconn *mig = pgtest_connect_str(e->src);
	char *out = NULL, pid[32], *mig_pid;
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA pt; CREATE TABLE pt.other (id int PRIMARY KEY)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "pt", NULL), 0);
	free(out);
	pgtest_exec(e->s, "CREATE TABLE pt.r (id int, k int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);"
	                  "CREATE TABLE pt.r_a PARTITION OF pt.r FOR VALUES FROM (0) TO (10);"
	                  "CREATE TABLE pt.r_d PARTITION OF pt.r DEFAULT");
	/* rows of a later transaction: the table joins, and is copied */
	pgtest_exec(e->s, "INSERT INTO pt.r SELECT g, g %% 20 FROM generate_series(1, 200) g");
	mig_pid = pgtest_query_value(mig, "SELECT pg_backend_pid()");
	pgtest_exec(mig, "BEGIN; LOCK TABLE pt.r_d IN ACCESS EXCLUSIVE MODE");
	pgtest_exec(e->s, "INSERT INTO pt.other VALUES (1)");
	run = tm_start_run(e, NULL);
	if (!pgtest_wait_value(e->t, "SELECT count(*) FROM pt.other", "1", 60))
		fail_msg("the stream waited behind the partition's lock:\n%s", pgtest_proc_output(run));
	if (!pgtest_proc_wait_output(run, "snapshot of pt.r waits for a lock on the table", 60))
		fail_msg("the copy's wait is not named:\n%s", pgtest_proc_output(run));
	snprintf(pid, sizeof pid, "pid %s (", mig_pid);
	tm_assert_has(pgtest_proc_output(run), pid);
	tm_assert_no_restart(run, "the copy waited for a partition's lock");
	pgtest_exec(mig, "COMMIT");
	if (!pgtest_wait_value(e->t, "SELECT state FROM tidemark.tables WHERE source_table = 'r'",
	                       "streaming", 60))
		fail_msg("the copy did not end:\n%s", pgtest_proc_output(run));
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "pt.r", "id, k");
	tm_assert_multiset_equal(e, "pt.other", "id");
	free(mig_pid);
	PQfinish(mig);
	tm_env_free(e);
}

/* ---- plain inheritance: each table its own rows ---- */

static void
test_inheritance(void **state)
{
	tm_env *e = tm_env_new("partinherit");
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE parent (id int PRIMARY KEY, v text);"
	                  "CREATE TABLE child (extra int) INHERITS (parent);"
	                  "ALTER TABLE child ADD PRIMARY KEY (id);"
	                  "INSERT INTO parent SELECT g, 'p' FROM generate_series(1, 300) g;"
	                  "INSERT INTO child SELECT g, 'c', g FROM generate_series(1001, 1400) g");
	/* the parent alone: its children's rows are not replicated, which is said */
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "parent", NULL), 0);
	tm_assert_has(out, "has inheritance children that are not replicated (public.child)");
	free(out);
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "parent", "--table", "child", NULL), 0);
	if (strstr(out, "inheritance children") != NULL)
		fail_msg("the children were said to be left out:\n%s", out);
	free(out);
	tm_catch_up(e, 60);
	/* through the parent, both tables' rows change; each keeps its own */
	pgtest_exec(e->s, "UPDATE parent SET v = v || '!' WHERE id %% 3 = 0;"
	                  "DELETE FROM parent WHERE id %% 10 = 0;"
	                  "INSERT INTO child VALUES (2000, 'new', 1)");
	tm_catch_up(e, 60);
	assert_rows_equal(e, "ONLY parent", "parent", "t.id, t.v", "id");
	assert_rows_equal(e, "child", "child", "t.id, t.v, t.extra", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM parent"), 270);
	assert_verify_equal(e);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_under_moves_with_kill9),
		cmocka_unit_test(test_attach_detach_drop_truncate),
		cmocka_unit_test(test_schema_pipeline),
		cmocka_unit_test(test_partition_refused_and_publication),
		cmocka_unit_test(test_partition_locked_by_a_migration),
		cmocka_unit_test(test_inheritance),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
