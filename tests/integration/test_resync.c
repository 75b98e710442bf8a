/*
 * Integration tests of start-up consistency, `tidemark resync` and source
 * failover.
 *
 * A restored target: the target database is copied (CREATE DATABASE ...
 * TEMPLATE) at a position P1, the source changes (rows deleted, updated,
 * inserted in three tables: keyed, keyed with a key the target orders
 * otherwise, and without a key) and tidemark applies them up to P2; the
 * copy then replaces the target. `run` must refuse, naming both positions
 * and `tidemark resync`; `resync` under a write workload must end with the
 * target equal to the source (the rows deleted on the source meanwhile
 * removed), each table readable and never empty on the target throughout.
 *
 * A source failover: a primary with a physical standby on loopback, a
 * workload, the standby promoted and tidemark pointed at it. Without slot
 * synchronisation (PostgreSQL 15, or no failover settings) the slot is
 * missing: `run` refuses naming `tidemark resync`, which recovers with a
 * new slot. On PostgreSQL 17 and later with a failover slot synced to the
 * standby, `run` goes on from the promoted standby without a resync.
 *
 * The oracle: each side's rows as the server prints them, sorted here, and
 * `tidemark verify`.
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

#include "clock.h"
#include "lsn.h"
#include "tm_fixture.h"

#define ACCOUNT_COLS "id, balance, note"
#define TAG_COLS "name, n"
#define LOG_COLS "at, msg, amount"

/* ---- the tables ---- */

/* rs.accounts: keyed; rs.tags: keyed by a text the target orders otherwise
 * (a target table made by hand in another collation: copied by keys, swept);
 * rs.log: no key at all, with duplicates. */
static void
create_tables(PGconn *s, PGconn *t)
{
	pgtest_exec(s, "CREATE SCHEMA rs;"
	               "CREATE TABLE rs.accounts (id int PRIMARY KEY, balance int NOT NULL, note text);"
	               "INSERT INTO rs.accounts SELECT g, g * 10, CASE WHEN g %% 7 = 0 THEN"
	               " repeat(md5(g::text), 100) ELSE 'n' || g END FROM generate_series(1, 2000) g;"
	               "CREATE TABLE rs.tags (name text COLLATE \"de-x-icu\" PRIMARY KEY, n int);"
	               "INSERT INTO rs.tags SELECT CASE g %% 3 WHEN 0 THEN 'Tag' WHEN 1 THEN 'tag'"
	               " ELSE '_tag' END || g, g FROM generate_series(1, 600) g;"
	               "CREATE TABLE rs.log (at int, msg text, amount numeric);"
	               "ALTER TABLE rs.log REPLICA IDENTITY FULL;"
	               "INSERT INTO rs.log SELECT g %% 50, 'm' || (g %% 40), (g %% 3)::numeric / 2"
	               " FROM generate_series(1, 400) g");
	pgtest_exec(t, "CREATE SCHEMA rs;"
	               "CREATE TABLE rs.tags (name text COLLATE \"C\" PRIMARY KEY, n int)");
}

/* What the source does while the target's copy is stale: every kind of
 * change, in every table. */
static void
change_everything(PGconn *s, int round)
{
	pgtest_exec(s, "DELETE FROM rs.accounts WHERE id %% 10 = %d;"
	               "UPDATE rs.accounts SET balance = balance + 1000 * %d WHERE id %% 10 = %d;"
	               "INSERT INTO rs.accounts SELECT g, -g, 'new' FROM generate_series(%d, %d) g;"
	               "DELETE FROM rs.tags WHERE n %% 5 = %d;"
	               "UPDATE rs.tags SET n = n + 1000 WHERE n %% 5 = %d;"
	               "INSERT INTO rs.tags SELECT 'Ntag' || g, g FROM generate_series(%d, %d) g;"
	               "DELETE FROM rs.log WHERE at %% 7 = %d;"
	               "UPDATE rs.log SET amount = amount + 1 WHERE at %% 7 = %d;"
	               "INSERT INTO rs.log SELECT at, msg, amount FROM rs.log WHERE at %% 11 = %d",
	            round, round + 1, round + 1, 3000 + round * 100, 3050 + round * 100, round,
	            (round + 1) % 5, 5000 + round * 100, 5040 + round * 100, round, round + 1, round);
}

static void
workload_step(PGconn *conn, void *arg, unsigned i)
{
	unsigned id = 1 + (i * 7919u) % 2600;

	(void) arg;
	switch (i % 5) {
	case 0:
		pgtest_exec(conn, "UPDATE rs.accounts SET balance = balance + 1 WHERE id = %u", id);
		break;
	case 1:
		pgtest_exec(conn, "DELETE FROM rs.accounts WHERE id = %u", id);
		break;
	case 2:
		pgtest_exec(conn, "INSERT INTO rs.accounts VALUES (%u, %u, 'w') ON CONFLICT (id) DO"
		                  " UPDATE SET note = 'w again'", id + 10000, i);
		break;
	case 3:
		pgtest_exec(conn, "DELETE FROM rs.tags WHERE n = %u; INSERT INTO rs.tags VALUES"
		                  " ('W%u', %u) ON CONFLICT DO NOTHING", id % 700, i, i);
		break;
	default:
		pgtest_exec(conn, "DELETE FROM rs.log WHERE ctid = (SELECT ctid FROM rs.log"
		                  " WHERE at = %u LIMIT 1); INSERT INTO rs.log VALUES (%u, 'w', %u)",
		            i % 50, i % 50, i);
	}
}

static void
assert_all_equal(tm_env *e)
{
	char *out = NULL;
	int rc;

	tm_assert_multiset_equal(e, "rs.accounts", ACCOUNT_COLS);
	tm_assert_multiset_equal(e, "rs.tags", TAG_COLS);
	tm_assert_multiset_equal(e, "rs.log", LOG_COLS);
	rc = tm_run(e, 120, &out, "verify", NULL);
	if (rc != 0)
		fail_msg("verify exited %d:\n%s", rc, out);
	free(out);
}

static void
assert_output_has(const char *out, const char *needle)
{
	if (strstr(out, needle) == NULL)
		fail_msg("no \"%s\" in:\n%s", needle, out);
}

/* ---- databases ---- */

/* Runs SQL (a format whose %s, once or twice, is the test's name) on
 * the target cluster's postgres database until it succeeds: CREATE
 * DATABASE ... TEMPLATE and RENAME need the databases free of sessions,
 * which a background worker may hold for a moment. */
static void
admin_until_done(tm_env *e, const char *format, const char *name)
{
	PGconn *admin = pgtest_connect(e->dst_cluster);
	double deadline = clock_now_s() + 30;
	char sql[300], *err;

	snprintf(sql, sizeof sql, format, name, name);
	while ((err = pgtest_exec_error(admin, "%s", sql)) != NULL && clock_now_s() < deadline) {
		free(err);
		tm_sleep_ms(100);
	}
	if (err != NULL)
		fail_msg("%s: %s", sql, err);
	PQfinish(admin);
}

/* The target's stored position, spelled as tidemark writes positions
 * (PostgreSQL 19 pads the low half with zeros). */
static char *
target_position(tm_env *e)
{
	char *text = pgtest_query_value(e->t, "SELECT applied_lsn::text FROM tidemark.progress");
	char buf[LSN_TEXT_MAX];
	tm_lsn lsn = LSN_INVALID;

	if (text == NULL || !lsn_parse(text, &lsn))
		fail_msg("the target's position is \"%s\"", text ? text : "NULL");
	free(text);
	return strdup(lsn_format(lsn, buf));
}

/* The backup: a copy of the target database dst_NAME, as it is now. */
static void
back_up_target(tm_env *e, const char *name)
{
	PQfinish(e->t);
	admin_until_done(e, "CREATE DATABASE dst_%s_backup TEMPLATE dst_%s", name);
	e->t = pgtest_connect_str(e->dst);
}

/* The backup replaces the target database. */
static void
restore_target(tm_env *e, const char *name)
{
	PQfinish(e->t);
	admin_until_done(e, "ALTER DATABASE dst_%s RENAME TO dst_%s_lost", name);
	admin_until_done(e, "ALTER DATABASE dst_%s_backup RENAME TO dst_%s", name);
	admin_until_done(e, "DROP DATABASE dst_%s_lost", name);
	e->t = pgtest_connect_str(e->dst);
}

/* ---- a restored target ---- */

/* Runs until the slot's confirmed position reaches lsn: tidemark reports
 * a position only once the target's WAL holding it is flushed, which a
 * run that ends right after its last commit may not see yet. */
static void
confirm(tm_env *e, const char *lsn)
{
	char sql[200];

	snprintf(sql, sizeof sql, "SELECT confirmed_flush_lsn >= '%s'::pg_lsn FROM"
	         " pg_replication_slots WHERE slot_name = '%s'", lsn, e->slot);
	for (int i = 0;; i++) {
		char *v = pgtest_query_value(e->s, "%s", sql);
		bool done = v != NULL && strcmp(v, "t") == 0;

		free(v);
		if (done)
			return;
		if (i == 30)
			fail_msg("slot %s did not confirm %s", e->slot, lsn);
		tm_sleep_ms(200);
		tm_catch_up(e, 60);
	}
}

/* The target's tables, read on a connection of its own while the resync
 * runs: each returns rows and none waits (statement_timeout). */
static void
assert_readable(PGconn *reader)
{
	static const char *const tables[] = {"rs.accounts", "rs.tags", "rs.log"};

	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
		if (pgtest_query_long(reader, "SELECT count(*) FROM %s", tables[i]) == 0)
			fail_msg("%s was empty on the target during the resync", tables[i]);
}

static void
resync_under_workload(tm_env *e)
{
	PGconn *reader = pgtest_connect_str(e->dst);
	pgtest_workload *wl = pgtest_workload_start(e->src, workload_step, NULL);
	pgtest_proc *resync = tm_spawn(e, "resync", "--chunk-rows", "150", NULL);
	double deadline = clock_now_s() + 90;
	char *out = NULL;

	pgtest_exec(reader, "SET statement_timeout = '5s'");
	while (!strstr(pgtest_proc_output(resync), "resync done")) {
		if (!pgtest_proc_running(resync) || clock_now_s() > deadline)
			fail_msg("the resync did not end:\n%s", pgtest_proc_output(resync));
		assert_readable(reader);
		tm_sleep_ms(50);
	}
	assert_output_has(pgtest_proc_output(resync), "resync begins (target_behind)");
	/* the table the target orders otherwise: swept after its copy */
	assert_output_has(pgtest_proc_output(resync), "rs.tags: the sweep is done");
	pgtest_workload_stop(wl, NULL);
	tm_stop_and_catch_up(e, resync, 120);
	assert_int_equal(tm_run(e, 60, &out, "status", NULL), 0);
	assert_output_has(out, "last resync:");
	free(out);
	PQfinish(reader);
}

static void
test_restored_target(void **state)
{
	tm_env *e = tm_env_new("restored");
	char *p1, *p2, *out = NULL;

	(void) state;
	create_tables(e->s, e->t);
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "rs", NULL), 0);
	free(out);
	tm_catch_up(e, 120);
	assert_all_equal(e);

	/* the backup, at P1 */
	p1 = target_position(e);
	back_up_target(e, "restored");

	/* the source goes on, and so does the target, to P2, which the slot
	 * confirms (once the target has flushed it) */
	change_everything(e->s, 0);
	tm_catch_up(e, 120);
	p2 = target_position(e);
	confirm(e, p2);

	/* the backup replaces the target */
	restore_target(e, "restored");
	change_everything(e->s, 1);

	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 3);
	assert_output_has(out, "the target is behind the replication slot");
	assert_output_has(out, p1);
	assert_output_has(out, "tidemark resync");
	free(out);
	/* nothing was applied meanwhile */
	free(p2);
	p2 = target_position(e);
	assert_string_equal(p1, p2);

	resync_under_workload(e);
	assert_all_equal(e);
	/* the stream goes on as before */
	change_everything(e->s, 2);
	tm_catch_up(e, 120);
	assert_all_equal(e);
	free(p1);
	free(p2);
	tm_env_free(e);
}

/* ---- a source failover ---- */

/* The test's source database on the primary, tidemark's target database
 * on the shared target cluster (a tm_env pointed at the primary). */
static tm_env *
failover_env(const char *name, pgtest_cluster *primary)
{
	tm_env *e = tm_env_new(name);
	PGconn *admin = pgtest_connect(primary);

	pgtest_exec(admin, "CREATE DATABASE app");
	PQfinish(admin);
	PQfinish(e->s);
	free(e->src);
	e->src = pgtest_conninfo_db(primary, "app");
	e->s = pgtest_connect_str(e->src);
	create_tables(e->s, e->t);
	return e;
}

/* tidemark (and the test) from now on use the promoted standby. */
static void
point_at(tm_env *e, pgtest_cluster *c)
{
	PQfinish(e->s);
	free(e->src);
	e->src = pgtest_conninfo_db(c, "app");
	e->s = pgtest_connect_str(e->src);
}

/* The standby has replayed everything the primary wrote so far. */
static void
wait_replayed(PGconn *primary, pgtest_cluster *standby)
{
	PGconn *sb = pgtest_connect(standby);
	char *lsn = pgtest_query_value(primary, "SELECT pg_current_wal_lsn()::text");
	char sql[160];

	snprintf(sql, sizeof sql, "SELECT pg_last_wal_replay_lsn() >= '%s'::pg_lsn", lsn);
	if (!pgtest_wait_value(sb, sql, "t", 60))
		fail_msg("the standby did not replay up to %s", lsn);
	free(lsn);
	PQfinish(sb);
}

/* A workload on the primary while tidemark streams, then stopped. */
static void
stream_a_while(tm_env *e)
{
	pgtest_proc *run = tm_start_run(e, NULL);
	pgtest_workload *wl = pgtest_workload_start(e->src, workload_step, NULL);

	tm_sleep_ms(1500);
	pgtest_workload_stop(wl, NULL);
	tm_stop_and_catch_up(e, run, 120);
}

/* setup, the copy, a while of streaming under a workload. */
static void
replicate(tm_env *e)
{
	char *out = NULL;

	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "rs", NULL), 0);
	free(out);
	tm_catch_up(e, 120);
	stream_a_while(e);
}

/* Changes tidemark has not seen yet, on both servers; the primary goes
 * away, the standby is promoted, more changes there. */
static void
fail_over(tm_env *e, pgtest_cluster *primary, pgtest_cluster *standby)
{
	change_everything(e->s, 0);
	wait_replayed(e->s, standby);
	PQfinish(e->s);
	e->s = NULL;
	pgtest_cluster_stop(primary);
	pgtest_cluster_promote(standby);
	point_at(e, standby);
	change_everything(e->s, 1);
}

static void
test_failover_slot_lost(void **state)
{
	pgtest_cluster *primary = pgtest_cluster_start_with("fo_primary", "max_wal_senders=20",
	                                                    "max_replication_slots=20");
	pgtest_cluster *standby = pgtest_cluster_standby(primary, "fo_standby", "fo_phys",
	                                                 "hot_standby_feedback=on");
	tm_env *e = failover_env("failover", primary);
	char *out = NULL;

	(void) state;
	replicate(e);
	fail_over(e, primary, standby);

	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 3);
	assert_output_has(out, "does not exist on this server");
	assert_output_has(out, "tidemark resync");
	free(out);
	assert_int_equal(tm_run(e, 180, &out, "resync", "--until-caught-up", "--chunk-rows", "200",
	                        NULL), 0);
	assert_output_has(out, "resync begins (slot_missing)");
	assert_output_has(out, "resync done");
	free(out);
	assert_all_equal(e);
	stream_a_while(e);
	assert_all_equal(e);
	tm_env_free(e);
	pgtest_cluster_stop(standby);
}

/* The primary and its standby, for slot_synced. */
typedef struct sync_pair {
	PGconn *primary, *standby;
} sync_pair;

/* Is the standby's copy of the slot a synced one? It becomes one once the
 * primary's slot has moved past where the copy began, which a slot's
 * restart point does at the running transactions the WAL logs (every 15 s
 * by itself): one is logged at each look, and the standby's configuration
 * reloaded, which wakes its slot sync worker (its naps grow to 30 s). The
 * test waited 30 to 60 s for this before. */
static bool
slot_synced(void *arg)
{
	sync_pair *p = arg;
	char *v;
	bool yes;

	pgtest_exec(p->primary, "SELECT pg_log_standby_snapshot()");
	pgtest_exec(p->standby, "SELECT pg_reload_conf()");
	v = pgtest_query_value(p->standby, "SELECT count(*) FROM pg_replication_slots WHERE synced"
	                                   " AND NOT temporary AND slot_name = 'tm_failslot'");
	yes = v != NULL && strcmp(v, "1") == 0;
	free(v);
	return yes;
}

/* PostgreSQL 17 and later: the failover slot, synced to the standby,
 * survives the promotion. */
static void
test_failover_slot_synced(void **state)
{
	pgtest_cluster *primary, *standby;
	PGconn *admin, *sb;
	pgtest_proc *run;
	pgtest_workload *wl;
	tm_env *e;
	char *out = NULL;
	long version;
	sync_pair pair;

	(void) state;
	primary = pgtest_cluster_start_with("fs_primary", "max_wal_senders=20",
	                                    "max_replication_slots=20");
	admin = pgtest_connect(primary);
	version = pgtest_query_long(admin, "SELECT current_setting('server_version_num')::int");
	if (version < 170000) {
		PQfinish(admin);
		pgtest_cluster_stop(primary);
		skip(); /* no failover slots before 17 */
	}
	standby = pgtest_cluster_standby(primary, "fs_standby", "fs_phys", "hot_standby_feedback=on",
	                                 "sync_replication_slots=on");
	pgtest_exec(admin, "ALTER SYSTEM SET synchronized_standby_slots = 'fs_phys'");
	pgtest_exec(admin, "SELECT pg_reload_conf()");
	PQfinish(admin);
	e = failover_env("failslot", primary);
	replicate(e);
	assert_int_equal(pgtest_query_long(e->s, "SELECT count(*) FROM pg_replication_slots"
	                                         " WHERE slot_name = 'tm_failslot' AND failover"), 1);
	/* the standby's copy of the slot becomes a synced one once the
	 * primary's slot has moved past where the copy began: tidemark streams
	 * meanwhile */
	run = tm_start_run(e, NULL);
	wl = pgtest_workload_start(e->src, workload_step, NULL);
	sb = pgtest_connect(standby);
	pair.primary = e->s;
	pair.standby = sb;
	if (!pgtest_wait_for(slot_synced, &pair, 90)) {
		char cmd[512];

		snprintf(cmd, sizeof cmd, "tail -n 40 '%s' >&2", standby->log_path);
		if (system(cmd) != 0)
			fprintf(stderr, "(no log)\n");
		fail_msg("the slot was not synced to the standby: %s",
		         pgtest_query_value(sb, "SELECT json_agg(s)::text FROM pg_replication_slots s"));
	}
	PQfinish(sb);
	pgtest_workload_stop(wl, NULL);
	tm_stop_and_catch_up(e, run, 120);
	fail_over(e, primary, standby);

	/* no resync: the stream goes on from the promoted standby */
	assert_int_equal(tm_run(e, 120, &out, "run", "--until-caught-up", NULL), 0);
	if (strstr(out, "resync") != NULL)
		fail_msg("run asked for a resync after the failover:\n%s", out);
	free(out);
	assert_all_equal(e);
	tm_env_free(e);
	pgtest_cluster_stop(standby);
}


/* ---- schema changes in the stretch the stream does not deliver ---- */

/* The target restored to before a column was added and another renamed,
 * a table created in the replicated schema and one dropped, a partition
 * attached (and dropped later, in the stream): the stream
 * resumes past those changes, so the resync follows the source's
 * definitions as they are now before it copies. */
static void
test_restored_before_ddl(void **state)
{
	tm_env *e = tm_env_new("gapddl");
	char *out = NULL, *p2;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA rs; CREATE TABLE rs.a (id int PRIMARY KEY, v text);"
	                  "INSERT INTO rs.a SELECT g, 'v' || g FROM generate_series(1, 300) g;"
	                  "CREATE TABLE rs.c (id int PRIMARY KEY); INSERT INTO rs.c VALUES (1), (2);"
	                  "CREATE TABLE rs.p (k int, id int, PRIMARY KEY (k, id)) PARTITION BY LIST (k);"
	                  "CREATE TABLE rs.p1 PARTITION OF rs.p FOR VALUES IN (1);"
	                  "INSERT INTO rs.p SELECT 1, g FROM generate_series(1, 50) g");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "rs", NULL), 0);
	free(out);
	tm_catch_up(e, 120);
	back_up_target(e, "gapddl");

	pgtest_exec(e->s, "ALTER TABLE rs.a ADD COLUMN w int NOT NULL DEFAULT 7;"
	                  "ALTER TABLE rs.a RENAME COLUMN v TO label;"
	                  "UPDATE rs.a SET w = id WHERE id < 10; DELETE FROM rs.a WHERE id > 290;"
	                  "CREATE TABLE rs.b (id int PRIMARY KEY, n numeric);"
	                  "INSERT INTO rs.b VALUES (1, 1.5); DROP TABLE rs.c;"
	                  "CREATE TABLE rs.p2 PARTITION OF rs.p FOR VALUES IN (2);"
	                  "INSERT INTO rs.p SELECT 2, g FROM generate_series(1, 30) g");
	tm_catch_up(e, 120);
	p2 = target_position(e);
	confirm(e, p2);
	free(p2);
	restore_target(e, "gapddl");
	pgtest_exec(e->s, "UPDATE rs.a SET label = 'after' WHERE id = 50; INSERT INTO rs.b VALUES (2, 2)");

	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 3);
	assert_output_has(out, "tidemark resync");
	free(out);
	assert_int_equal(tm_run(e, 120, &out, "resync", "--until-caught-up", NULL), 0);
	assert_output_has(out, "rs.a changed on the source in the stretch the stream does not deliver");
	assert_output_has(out, "new table rs.b in replicated schema");
	assert_output_has(out, "rs.c was dropped on the source");
	free(out);
	tm_assert_multiset_equal(e, "rs.a", "id, label, w");
	tm_assert_multiset_equal(e, "rs.b", "id, n");
	tm_assert_multiset_equal(e, "rs.p", "k, id");
	/* the target keeps the dropped table, as a DROP in the stream leaves it */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM rs.c"), 2);

	/* the stream goes on, schema changes included */
	pgtest_exec(e->s, "ALTER TABLE rs.a ADD COLUMN z text; UPDATE rs.a SET z = 'z' WHERE id < 5;"
	                  "INSERT INTO rs.b VALUES (3, 3);"
	                  /* the partition attached meanwhile leaves: its rows with it */
	                  "DROP TABLE rs.p2");
	tm_catch_up(e, 120);
	tm_assert_multiset_equal(e, "rs.a", "id, label, w, z");
	tm_assert_multiset_equal(e, "rs.b", "id, n");
	tm_assert_multiset_equal(e, "rs.p", "k, id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM rs.p"), 50);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restored_target),
		cmocka_unit_test(test_restored_before_ddl),
		cmocka_unit_test(test_failover_slot_lost),
		cmocka_unit_test(test_failover_slot_synced),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
