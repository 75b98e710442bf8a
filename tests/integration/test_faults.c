/*
 * Faults tidemark rides through (ending with target equal to source) and
 * faults it reports clearly, with the fix and its exit code: kill -9 loops
 * during snapshot and stream, a cut replication connection in a large
 * transaction, a target refusing writes or holding a lock, a full target
 * disk; wal_level, privileges, a busy / dropped / invalidated slot, a
 * dropped publication, a target table altered by hand, a source
 * transaction that keeps tidemark waiting.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "strbuf.h"
#include "tm_fixture.h"

/* run exits with code, and its output holds every needle. */
static void
expect_exit(pgtest_proc *run, int code, const char *needle1, const char *needle2)
{
	int rc = pgtest_proc_wait(run, 120);
	const char *out = pgtest_proc_output(run);

	if (rc != code || strstr(out, needle1) == NULL || (needle2 && strstr(out, needle2) == NULL))
		fail_msg("expected exit %d with \"%s\"%s%s%s, got %d:\n%s", code, needle1,
		         needle2 ? " and \"" : "", needle2 ? needle2 : "", needle2 ? "\"" : "", rc, out);
	pgtest_proc_free(run);
}

static void
events_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	pgtest_exec(conn, "INSERT INTO events (kind, payload) SELECT %u, repeat('x', %u)"
	                  " FROM generate_series(1, 3)", i % 5, i % 200);
	if (i % 4 == 0)
		pgtest_exec(conn, "UPDATE events SET kind = kind + 1 WHERE id %% 13 = %u", i % 13);
	if (i % 7 == 0)
		pgtest_exec(conn, "DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id DESC"
		                  " OFFSET 5 LIMIT 1)");
}

/* ---- rides through ---- */

/* Many kill -9 at random instants, during the snapshot of a big table and
 * the stream of a busy one. */
static void
test_kill9_loop(void **state)
{
	tm_env *e = tm_env_new("killloop");
	pgtest_workload *w;
	unsigned seed = (unsigned) time(NULL);

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, v text);"
	                  "INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 60000) g;"
	                  "CREATE TABLE events (id bigserial PRIMARY KEY, kind int, payload text)");
	assert_int_equal(tm_run(e, 60, NULL, "setup", "--table", "big", "--table", "events", NULL), 0);
	w = pgtest_workload_start(e->src, events_step, NULL);
	print_message("kill loop seed %u\n", seed);
	for (int k = 0; k < 12; k++) {
		pgtest_proc *run = tm_spawn(e, "run", "--chunk-rows", "2000", NULL);

		tm_sleep_ms(150 + (int) (rand_r(&seed) % 700));
		pgtest_proc_kill(run, SIGKILL);
		pgtest_proc_wait(run, 30);
		pgtest_proc_free(run);
		if (k % 3 == 0)
			pgtest_exec(e->s, "UPDATE big SET v = 'k%d' WHERE id %% 97 = %d", k, k);
	}
	pgtest_workload_stop(w, NULL);
	tm_catch_up(e, 180);
	tm_assert_equal(e, "big", "id");
	tm_assert_equal(e, "events", "id");
	tm_env_free(e);
}

/* The replication connection is cut while a large transaction streams
 * through: the transaction is applied once, whole. */
static void
test_cut_during_large_transaction(void **state)
{
	tm_env *e = tm_env_new("cut");
	pgtest_proc *run;
	/* an insert-only log: updating one counter row 200,000 times in one
	 * transaction would be quadratic */
	const char *count_fn =
		"CREATE TABLE change_log (n bigserial);"
		"CREATE FUNCTION count_change() RETURNS trigger LANGUAGE plpgsql AS"
		" $$BEGIN INSERT INTO change_log DEFAULT VALUES; RETURN NULL; END$$;"
		"CREATE TRIGGER count_change AFTER INSERT OR UPDATE OR DELETE ON events"
		" FOR EACH ROW EXECUTE FUNCTION count_change()";

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE events (id bigserial PRIMARY KEY, kind int, payload text)");
	tm_setup_table(e, "events");
	tm_catch_up(e, 60);
	pgtest_exec(e->t, "%s", count_fn);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "INSERT INTO events (kind, payload) SELECT g %% 7, md5(g::text)"
	                  " FROM generate_series(1, 200000) g");
	/* cut it while the transaction's rows are arriving */
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) > 0 FROM pg_stat_activity"
	                                    " WHERE application_name = 'tidemark apply'"
	                                    " AND state <> 'idle'", "t", 60));
	pgtest_exec(e->s, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
	                  " WHERE application_name = 'tidemark stream'");
	assert_true(pgtest_proc_wait_output(run, "resuming from the target's position", 60));
	tm_stop_and_catch_up(e, run, 180);
	tm_assert_equal(e, "events", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM change_log"), 200000);
	tm_env_free(e);
}

/* The target refuses writes for a while (read-only), then holds a lock on
 * the table: run keeps going and catches up. */
static void
test_target_refuses_writes(void **state)
{
	tm_env *e = tm_env_new("refuse");
	pgtest_workload *w;
	pgtest_proc *run;
	PGconn *locker;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE events (id bigserial PRIMARY KEY, kind int, payload text)");
	tm_setup_table(e, "events");
	run = tm_start_run(e, NULL);
	w = pgtest_workload_start(e->src, events_step, NULL);
	pgtest_exec(e->t, "ALTER DATABASE dst_refuse SET default_transaction_read_only = on");
	pgtest_exec(e->t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
	                  " WHERE application_name LIKE 'tidemark%%'");
	assert_true(pgtest_proc_wait_output(run, "refuses writes", 60));
	tm_sleep_ms(1000);
	assert_true(pgtest_proc_running(run));
	pgtest_exec(e->t, "ALTER DATABASE dst_refuse RESET default_transaction_read_only");
	locker = pgtest_connect_str(e->dst);
	pgtest_exec(locker, "BEGIN; LOCK TABLE events IN ACCESS EXCLUSIVE MODE");
	tm_sleep_ms(2000);
	assert_true(pgtest_proc_running(run));
	pgtest_exec(locker, "COMMIT");
	PQfinish(locker);
	pgtest_workload_stop(w, NULL);
	tm_stop_and_catch_up(e, run, 180);
	tm_assert_equal(e, "events", "id");
	tm_env_free(e);
}

#define WAITING_APPLY                                                                              \
	"SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"                   \
	" WHERE NOT l.granted AND a.application_name = 'tidemark apply'"

/* While reader holds the target table (a long query), the schema change
 * or TRUNCATE the source just made waits for the table's lock, gives up
 * within a few seconds so that the readers queued behind it go on, and
 * run keeps going. */
static void
wait_gives_up(tm_env *e, pgtest_proc *run, PGconn *reader, const char *what)
{
	if (!pgtest_wait_value(e->t, WAITING_APPLY, "t", 60))
		fail_msg("%s does not wait on the reader:\n%s", what, pgtest_proc_output(run));
	/* the session's own wait is 30 s: the reader keeps the table longer */
	if (!pgtest_wait_value(e->t, WAITING_APPLY, "f", 12))
		fail_msg("%s waits on the reader's lock for more than 12 s", what);
	if (!pgtest_proc_running(run))
		fail_msg("run stopped while %s waited:\n%s", what, pgtest_proc_output(run));
	assert_int_equal(pgtest_query_long(reader, "SELECT count(*) FROM pg_locks WHERE pid ="
	                                           " pg_backend_pid() AND granted AND relation ="
	                                           " 'events'::regclass"), 1);
	pgtest_exec(reader, "COMMIT");
}

/*
 * A warehouse query holds a replicated table (an open transaction that
 * read it) while the source adds a column, then truncates the table.
 * tidemark's ALTER and TRUNCATE wait for the table's lock a few seconds
 * at a time, not for as long as the query runs (every other reader of
 * the table would queue behind them), and run goes on, retrying past each
 * wait until the query ends.
 */
static void
test_target_reader_holds_table(void **state)
{
	tm_env *e = tm_env_new("reader_holds");
	pgtest_proc *run;
	PGconn *reader;
	char named[256];

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE events (id bigserial PRIMARY KEY, kind int, payload text);"
	                  "INSERT INTO events (kind) SELECT g FROM generate_series(1, 100) g");
	tm_setup_table(e, "events");
	tm_catch_up(e, 60);
	reader = pgtest_connect_str(e->dst);
	run = tm_start_run(e, NULL);

	pgtest_exec(reader, "SET application_name = 'dashboard'; BEGIN; SELECT count(*) FROM events");
	pgtest_exec(e->s, "ALTER TABLE events ADD COLUMN added int DEFAULT 7;"
	                  "INSERT INTO events (kind, added) VALUES (1000, 8)");
	/* the wait names the reader's session, before it gives up */
	snprintf(named, sizeof named, "target: tidemark's transaction has waited 5.5 s for a lock,"
	                              " held by: pid %d (role postgres, application \"dashboard\", idle in"
	                              " transaction", PQbackendPID(reader));
	if (!pgtest_proc_wait_output(run, named, 30))
		fail_msg("the wait does not name the reader:\n%s", pgtest_proc_output(run));
	wait_gives_up(e, run, reader, "the ALTER TABLE");
	/* the next try waits longer, so that a reader that never leaves the
	 * table free for the first wait does not hold it back for ever */
	if (!pgtest_proc_wait_output(run, "now waits up to 12 s for its table's lock", 30))
		fail_msg("the second try does not wait longer:\n%s", pgtest_proc_output(run));
	if (!pgtest_wait_value(e->t, "SELECT count(*) FROM events WHERE added = 8", "1", 60))
		fail_msg("the column is not added:\n%s", pgtest_proc_output(run));

	pgtest_exec(reader, "BEGIN; SELECT count(*) FROM events");
	pgtest_exec(e->s, "TRUNCATE events; INSERT INTO events (kind) VALUES (2000)");
	wait_gives_up(e, run, reader, "the TRUNCATE");
	PQfinish(reader);
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "events", "id");
	tm_env_free(e);
}

/*
 * A target table made UNLOGGED by hand (to load faster) is emptied by a
 * crash of the target, while the position stored with the data, which is
 * logged, says its rows are applied. run finds it empty beside a source
 * table with rows, and copies it again.
 */
static void
test_unlogged_target_emptied_by_a_crash(void **state)
{
	tm_env *e = tm_env_new("unlogged");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE events (id bigserial PRIMARY KEY, kind int, payload text);"
	                  "INSERT INTO events (kind) SELECT g FROM generate_series(1, 300) g;"
	                  "CREATE TABLE quiet (id int PRIMARY KEY)");
	tm_setup_table(e, "events");
	tm_setup_table(e, "quiet");
	tm_catch_up(e, 60);
	pgtest_exec(e->t, "ALTER TABLE events SET UNLOGGED; ALTER TABLE quiet SET UNLOGGED");
	pgtest_exec(e->s, "UPDATE events SET kind = -kind WHERE id <= 10");
	tm_catch_up(e, 60);
	pgtest_cluster_restart(e->dst_cluster, true);
	PQreset(e->t);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM events"), 0);
	pgtest_exec(e->s, "INSERT INTO events (kind) VALUES (1000)");
	tm_catch_up(e, 60);
	tm_assert_equal(e, "events", "id");
	/* an unlogged table that is empty on both sides is left as it is */
	tm_assert_value(e->t, "SELECT state FROM tidemark.tables WHERE source_table = 'quiet'",
	                "streaming");
	tm_env_free(e);
}

/* The target's disk fills up (a small tablespace), then gets room again. */
static void
test_target_disk_full(void **state)
{
	tm_env *e = tm_env_new("diskfull");
	char *dir = pgtest_path("small_disk");
	char cmd[512];
	pgtest_proc *run;

	(void) state;
	snprintf(cmd, sizeof cmd, "mkdir -p '%s' && mount -t tmpfs -o size=6m tmpfs '%s' && chown postgres '%s'",
	         dir, dir, dir);
	if (getuid() != 0 || system(cmd) != 0) {
		print_message("skipped: a small disk needs root and mount (tmpfs)\n");
		free(dir);
		tm_env_free(e);
		skip();
	}
	pgtest_exec(e->s, "CREATE TABLE blobs (id int PRIMARY KEY, doc text)");
	tm_setup_table(e, "blobs");
	tm_catch_up(e, 60);
	pgtest_exec(e->t, "CREATE TABLESPACE small LOCATION '%s'", dir);
	pgtest_exec(e->t, "ALTER TABLE blobs SET TABLESPACE small;"
	                  "CREATE TABLE filler (x text) TABLESPACE small; ALTER TABLE filler"
	                  " ALTER COLUMN x SET STORAGE PLAIN");
	free(pgtest_exec_error(e->t, "INSERT INTO filler SELECT repeat('f', 1000) FROM"
	                             " generate_series(1, 100000)"));
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "INSERT INTO blobs SELECT g, repeat(md5(g::text), 100) FROM generate_series(1, 2000) g");
	assert_true(pgtest_proc_wait_output(run, "disk is full", 60));
	assert_true(pgtest_proc_running(run));
	pgtest_exec(e->t, "DROP TABLE filler");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "blobs", "id");
	pgtest_exec(e->t, "DROP TABLE blobs");
	pgtest_exec(e->t, "DROP TABLESPACE small");
	snprintf(cmd, sizeof cmd, "umount '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(dir);
	tm_env_free(e);
}

/* ---- reported clearly ---- */

static void
test_wal_level_not_logical(void **state)
{
	pgtest_cluster *c = pgtest_cluster_start_with("replica_only", "wal_level=replica");
	char *out = NULL;
	char *target = pgtest_conninfo_db(c, "template1");
	const char *argv[] = {"setup", "--source", c->conninfo, "--target", target, "--table",
	                      "t", NULL};
	PGconn *conn = pgtest_connect(c);

	(void) state;
	pgtest_exec(conn, "CREATE TABLE t (id int PRIMARY KEY)");
	PQfinish(conn);
	assert_int_equal(pgtest_run_tidemark(argv, 60, &out), 3);
	assert_non_null(strstr(out, "wal_level"));
	assert_non_null(strstr(out, "ALTER SYSTEM SET wal_level = logical"));
	free(out);
	free(target);
	pgtest_cluster_stop(c);
}

static void
test_missing_privileges(void **state)
{
	tm_env *e = tm_env_new("privileges");
	char *src = malloc(strlen(e->src) + 64);
	char *out = NULL;
	const char *argv[] = {"setup", "--source", src, "--target", e->dst, "--table", "t", NULL};

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY); CREATE ROLE plain LOGIN;"
	                  "CREATE ROLE replicator LOGIN REPLICATION; GRANT SELECT ON t TO plain, replicator");
	sprintf(src, "%s user=plain", e->src);
	assert_int_equal(pgtest_run_tidemark(argv, 60, &out), 3);
	assert_non_null(strstr(out, "may not use replication"));
	assert_non_null(strstr(out, "REPLICATION"));
	free(out);
	sprintf(src, "%s user=replicator", e->src);
	out = NULL;
	assert_int_equal(pgtest_run_tidemark(argv, 60, &out), 3);
	assert_non_null(strstr(out, "event trigger needs a superuser"));
	free(out);
	pgtest_exec(e->s, "DROP OWNED BY plain, replicator; DROP ROLE plain; DROP ROLE replicator");
	free(src);
	tm_env_free(e);
}

static void
test_slot_in_use(void **state)
{
	tm_env *e = tm_env_new("busy");
	pgtest_proc *first, *second;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY)");
	tm_setup_table(e, "t");
	first = tm_start_run(e, NULL);
	second = tm_spawn(e, "run", NULL);
	assert_true(pgtest_proc_wait_output(second, "is in use by the process with pid", 60));
	assert_non_null(strstr(pgtest_proc_output(second), "stop that process, or use another --slot"));
	pgtest_proc_kill(first, SIGTERM);
	assert_int_equal(pgtest_proc_wait(first, 30), 0);
	pgtest_proc_free(first);
	/* the second one takes over once the slot is free */
	assert_true(pgtest_proc_wait_output(second, "streaming from slot", 90));
	pgtest_exec(e->s, "INSERT INTO t VALUES (1)");
	tm_stop_and_catch_up(e, second, 60);
	tm_assert_equal(e, "t", "id");
	tm_env_free(e);
}

static void
test_slot_and_publication_dropped(void **state)
{
	tm_env *e = tm_env_new("dropped");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY)");
	tm_setup_table(e, "t");
	tm_catch_up(e, 60);
	pgtest_exec(e->s, "DROP PUBLICATION \"%s\"", e->slot);
	pgtest_exec(e->s, "INSERT INTO t VALUES (1)");
	expect_exit(tm_spawn(e, "run", "--until-caught-up", NULL), 3, "publication", "does not exist");
	/* made again (as setup does): from PostgreSQL 18 the walsender skipped
	 * the insert, and every table is copied again; before, it stops at the
	 * insert at every try, with the fix */
	pgtest_exec(e->s, "CREATE PUBLICATION \"%s\" FOR TABLE ONLY t"
	                  " WITH (publish_via_partition_root = true)", e->slot);
	pgtest_exec(e->s, "INSERT INTO t VALUES (2)");
	if (pgtest_query_long(e->s, "SELECT current_setting('server_version_num')::int") >= 180000) {
		char *out = NULL;

		assert_int_equal(tm_run(e, 120, &out, "run", "--until-caught-up", NULL), 0);
		tm_assert_has(out, "it is copied again");
		free(out);
		tm_catch_up(e, 60);
		tm_assert_equal(e, "t", "id");
	} else
		expect_exit(tm_spawn(e, "run", "--until-caught-up", NULL), 3,
		            "was dropped and created again", "pg_drop_replication_slot");
	pgtest_exec(e->s, "SELECT pg_drop_replication_slot('%s')", e->slot);
	expect_exit(tm_spawn(e, "run", "--until-caught-up", NULL), 3, "does not exist on this server",
	            "`tidemark resync`");
	tm_env_free(e);
}

static void
test_slot_invalidated(void **state)
{
	pgtest_cluster *c = pgtest_cluster_start_with("small_wal", "max_slot_wal_keep_size=1MB",
	                                              "min_wal_size=32MB", "max_wal_size=32MB");
	PGconn *conn = pgtest_connect(c);
	char *out = NULL;
	char *target = pgtest_conninfo_db(c, "target");
	const char *setup[] = {"setup", "--source", c->conninfo, "--target", target, "--table",
	                       "t", NULL};
	const char *run[] = {"run", "--source", c->conninfo, "--target", target,
	                     "--until-caught-up", NULL};
	const char *resync[] = {"resync", "--source", c->conninfo, "--target", target,
	                        "--until-caught-up", NULL};

	(void) state;
	pgtest_exec(conn, "CREATE DATABASE target");
	pgtest_exec(conn, "CREATE TABLE t (id int PRIMARY KEY)");
	assert_int_equal(pgtest_run_tidemark(setup, 60, NULL), 0);
	for (int i = 0; i < 8; i++)
		pgtest_exec(conn, "CREATE TABLE w%d AS SELECT g, md5(g::text) FROM generate_series(1, 100000) g;"
		                  " SELECT pg_switch_wal(); CHECKPOINT", i);
	assert_true(pgtest_wait_value(conn, "SELECT wal_status FROM pg_replication_slots", "lost", 30));
	pgtest_exec(conn, "INSERT INTO t SELECT generate_series(1, 100)");
	assert_int_equal(pgtest_run_tidemark(run, 60, &out), 4);
	assert_non_null(strstr(out, "invalidated (wal_removed"));
	assert_non_null(strstr(out, "`tidemark resync`"));
	free(out);
	/* resync: the lost slot dropped, made again, the table copied again */
	assert_int_equal(pgtest_run_tidemark(resync, 120, &out), 0);
	assert_non_null(strstr(out, "resync begins (slot_invalidated)"));
	free(out);
	pgtest_exec(conn, "DELETE FROM t WHERE id > 90");
	assert_int_equal(pgtest_run_tidemark(run, 60, &out), 0);
	free(out);
	{
		PGconn *tc = pgtest_connect_str(target);

		assert_int_equal(pgtest_query_long(tc, "SELECT count(*) FROM t"), 90);
		PQfinish(tc);
	}
	free(target);
	PQfinish(conn);
	pgtest_cluster_stop(c);
}

static void
test_target_altered_by_hand(void **state)
{
	tm_env *e = tm_env_new("byhand");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v text)");
	tm_setup_table(e, "t");
	tm_catch_up(e, 60);
	pgtest_exec(e->t, "ALTER TABLE t DROP COLUMN v");
	pgtest_exec(e->s, "INSERT INTO t VALUES (1, 'x')");
	expect_exit(tm_spawn(e, "run", "--until-caught-up", NULL), 5, "altered by hand",
	            "tidemark snapshot");
	tm_env_free(e);
}

/*
 * Keys of the target's own that reference replicated tables (an annotations
 * table, say): a source TRUNCATE is applied as a DELETE of every row, so
 * that their ON DELETE actions apply, where TRUNCATE refused the tables
 * and stopped the stream at every try. A key that forbids it stops the run
 * with its fix, losing nothing.
 */
static void
test_truncate_of_referenced_tables(void **state)
{
	tm_env *e = tm_env_new("truncref");
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE orders (id int PRIMARY KEY, v text);"
	                  "CREATE TABLE items (id int PRIMARY KEY, order_id int REFERENCES orders);"
	                  "INSERT INTO orders SELECT g, 'o' || g FROM generate_series(1, 20) g;"
	                  "INSERT INTO items SELECT g, g FROM generate_series(1, 20) g");
	tm_setup_table(e, "orders");
	tm_setup_table(e, "items");
	tm_catch_up(e, 60);
	pgtest_exec(e->t, "ALTER TABLE items ADD FOREIGN KEY (order_id) REFERENCES orders;"
	                  "CREATE TABLE notes (id int PRIMARY KEY,"
	                  " order_id int REFERENCES orders ON DELETE SET NULL);"
	                  "CREATE TABLE tags (item_id int REFERENCES items ON DELETE CASCADE);"
	                  "INSERT INTO notes SELECT g, g FROM generate_series(1, 5) g;"
	                  "INSERT INTO tags SELECT g FROM generate_series(1, 5) g");
	pgtest_exec(e->s, "BEGIN; TRUNCATE orders, items;"
	                  " INSERT INTO orders VALUES (1, 'again'), (30, 'new');"
	                  " INSERT INTO items VALUES (1, 1); COMMIT");
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 0);
	tm_assert_has(out, "is applied as a DELETE of every row");
	tm_assert_equal(e, "orders", "id");
	tm_assert_equal(e, "items", "id");
	/* the keys' own actions: SET NULL, CASCADE; and the target's key between the two */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM notes WHERE order_id IS NULL"),
	                 5);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tags"), 0);
	free(out);

	/* a TRUNCATE of tables nothing references stays a TRUNCATE */
	pgtest_exec(e->t, "DROP TABLE notes, tags");
	pgtest_exec(e->s, "TRUNCATE orders, items; INSERT INTO orders VALUES (2, 'b')");
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 0);
	if (strstr(out, "as a DELETE") != NULL)
		fail_msg("a TRUNCATE of unreferenced tables was a DELETE:\n%s", out);
	tm_assert_equal(e, "orders", "id");
	free(out);

	/* a key that forbids it */
	pgtest_exec(e->t, "CREATE TABLE holds (order_id int REFERENCES orders); INSERT INTO holds"
	                  " VALUES (2)");
	pgtest_exec(e->s, "TRUNCATE orders, items");
	expect_exit(tm_spawn(e, "run", "--until-caught-up", NULL), 5, "holds", "ON DELETE CASCADE");
	pgtest_exec(e->t, "DELETE FROM holds");
	tm_catch_up(e, 60);
	tm_assert_equal(e, "orders", "id");

	/* a change the target's rows refuse, so that the table is emptied and
	 * copied again: a key of the target's own stops it, with the fix */
	pgtest_exec(e->s, "INSERT INTO orders VALUES (5, 'five')");
	tm_catch_up(e, 60);
	pgtest_exec(e->t, "INSERT INTO holds VALUES (5)");
	pgtest_exec(e->s, "CREATE FUNCTION src_only(text) RETURNS int LANGUAGE sql IMMUTABLE"
	                  " AS 'SELECT length($1)';"
	                  "ALTER TABLE orders ALTER v TYPE int USING src_only(v)");
	expect_exit(tm_spawn(e, "run", "--until-caught-up", "--table-policy", "public.orders=follow",
	                     NULL), 5, "must be emptied to be copied again", "from holds, items");
	pgtest_exec(e->t, "ALTER TABLE holds DROP CONSTRAINT holds_order_id_fkey;"
	                  "ALTER TABLE items DROP CONSTRAINT items_order_id_fkey");
	assert_int_equal(tm_run(e, 120, NULL, "run", "--until-caught-up", "--table-policy",
	                        "public.orders=follow", NULL), 0);
	tm_catch_up(e, 60);
	tm_assert_equal(e, "orders", "id");
	tm_env_free(e);
}

/* The sum of v over tables lt.t1 .. lt.tn on conn, a query each (one query
 * of them all would lock them all: more than the small lock table holds). */
static long
lock_tables_sum(PGconn *conn, int n)
{
	long sum = 0;

	for (int i = 1; i <= n; i++)
		sum += pgtest_query_long(conn, "SELECT v FROM lt.t%d", i);
	return sum;
}

/*
 * A backlog of transactions each writing 20 other tables, into a target
 * whose lock table is small (max_locks_per_transaction 10): a group of
 * them, one target transaction, takes a lock on every table it writes and
 * on each of their indexes, more than the lock table holds, and the target
 * refuses it (out of shared memory, 53200). Retried whole, it failed again
 * at every try. The session after the failure applies them one per target
 * transaction, as they were committed, and then groups again.
 */
static void
test_lock_table_too_small(void **state)
{
	/* the lock table holds max_locks_per_transaction x (the backends and
	 * workers) entries, and what is left of shared memory: a few hundred */
	pgtest_cluster *tgt = pgtest_cluster_start_with("small_locks", "max_locks_per_transaction=10",
	                                                "max_connections=20", "max_worker_processes=1",
	                                                "autovacuum_max_workers=1", "max_wal_senders=1");
	tm_env *e = tm_env_new("small_locks");
	PGconn *admin = pgtest_connect(tgt);
	strbuf backlog = STRBUF_INIT;
	char *out = NULL;
	int rc, n = 300;

	(void) state;
	pgtest_exec(admin, "CREATE DATABASE app");
	PQfinish(admin);
	PQfinish(e->t);
	free(e->dst);
	e->dst = pgtest_conninfo_db(tgt, "app");
	e->t = pgtest_connect_str(e->dst);
	pgtest_exec(e->s, "CREATE SCHEMA lt; DO $$ BEGIN FOR i IN 1..%d LOOP"
	                  " EXECUTE format('CREATE TABLE lt.t%%s (id int PRIMARY KEY, v int)', i);"
	                  " EXECUTE format('INSERT INTO lt.t%%s VALUES (1, 0)', i); END LOOP; END $$",
	            n);
	free(tm_expect(e, 0, "setup", "--schema", "lt"));
	tm_catch_up(e, 300);
	/* indexes of the target's own: four locks a table */
	for (int i = 1; i <= n; i++)
		pgtest_exec(e->t, "CREATE INDEX ON lt.t%d (v); CREATE INDEX ON lt.t%d (v, id)", i, i);
	for (int i = 0; i < n; i++)
		strbuf_appendf(&backlog, "%sUPDATE lt.t%d SET v = v + 1;%s", i % 20 == 0 ? "BEGIN;" : "",
		               i + 1, i % 20 == 19 ? "COMMIT;" : "");
	pgtest_exec(e->s, "%s", backlog.data);
	rc = tm_run(e, 120, &out, "run", "--until-caught-up", NULL);
	if (rc != 0)
		fail_msg("run exited %d:\n%s", rc, out);
	tm_assert_has(out, "SQLSTATE 53200");
	tm_assert_has(out, "one per target transaction");
	free(out);
	assert_int_equal(lock_tables_sum(e->s, n), n);
	assert_int_equal(lock_tables_sum(e->t, n), n);
	strbuf_free(&backlog);
	tm_env_free(e);
	pgtest_cluster_stop(tgt);
}

/* ---- waits on the source, named ---- */

static void
wait_output(pgtest_proc *p, const char *needle)
{
	if (!pgtest_proc_wait_output(p, needle, 60))
		fail_msg("no \"%s\" in:\n%s", needle, pgtest_proc_output(p));
}

typedef struct either {
	pgtest_proc *p;
	const char *needles[2];
	int found;
} either;

static bool
said_either(void *arg)
{
	either *x = arg;
	const char *out = pgtest_proc_output(x->p);

	for (int i = 0; i < 2; i++)
		if (strstr(out, x->needles[i]) != NULL)
			x->found = i;
	return x->found >= 0 || !pgtest_proc_running(x->p);
}

/*
 * tidemark's statements that wait on the source for others' transactions:
 * a session left idle in a transaction, and a forgotten prepared
 * transaction (it keeps its locks and its xid, across restarts too, until
 * COMMIT PREPARED or ROLLBACK PREPARED). setup's slot and its read of a
 * table's definition (under a lock) waited for them, and
 * a copy behind a table's lock started run's session again every few
 * seconds (which also began any large transaction in flight again), both
 * without a word of who. They are named now with the fix, and the copy
 * gives way while the stream and the other tables go on.
 */
static void
test_source_waits_named(void **state)
{
	tm_env *e = tm_env_new("waits_named");
	PGconn *idle = pgtest_connect_str(e->src);
	char pid[32];
	either x = {NULL, {NULL, "prepared transaction 'deploy''s 1'"}, -1};
	pgtest_proc *p;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE a (id int PRIMARY KEY, n int); INSERT INTO a VALUES (1, 1);"
	                  "CREATE TABLE c (id int PRIMARY KEY, v text);"
	                  "INSERT INTO c SELECT g, md5(g::text) FROM generate_series(1, 5000) g");
	/* the slot waits for both transactions, one at a time, in either order */
	pgtest_exec(idle, "BEGIN; INSERT INTO a VALUES (2, 2)");
	snprintf(pid, sizeof pid, "pid %d (", PQbackendPID(idle));
	x.needles[0] = pid;
	pgtest_exec(e->s, "BEGIN; INSERT INTO a VALUES (3, 3); PREPARE TRANSACTION 'deploy''s 1'");
	/* first, reading c's definition waits for a migration prepared on it */
	pgtest_exec(e->s, "BEGIN; ALTER TABLE c ADD COLUMN u int; PREPARE TRANSACTION 'mig0'");
	p = x.p = tm_spawn(e, "setup", "--table", "public.a", "--table", "public.c", NULL);
	wait_output(p, "locking public.c to read its definition has waited");
	wait_output(p, "prepared transaction 'mig0' (prepared at ");
	pgtest_exec(e->s, "ROLLBACK PREPARED 'mig0'");
	for (int ended = 0; ended < 2; ended++) {
		x.found = -1;
		if (!pgtest_wait_for(said_either, &x, 60) || x.found < 0)
			fail_msg("the slot's wait is not named:\n%s", pgtest_proc_output(p));
		wait_output(p, "creating the replication slot has waited");
		if (x.found == 0) {
			wait_output(p, "idle in transaction");
			pgtest_exec(idle, "COMMIT");
			x.needles[0] = "(a needle said)";
		} else {
			wait_output(p, "COMMIT PREPARED 'deploy''s 1' or ROLLBACK PREPARED 'deploy''s 1'");
			pgtest_exec(e->s, "COMMIT PREPARED 'deploy''s 1'");
			x.needles[1] = "(a needle said)";
		}
	}
	if (pgtest_proc_wait(p, 60) != 0)
		fail_msg("setup failed:\n%s", pgtest_proc_output(p));
	pgtest_proc_free(p);

	/* a migration prepared with c's lock: the copy of c waits, a and the
	 * stream go on, and run's session is not started again meanwhile */
	pgtest_exec(e->s, "BEGIN; ALTER TABLE c ADD COLUMN w int DEFAULT 7;"
	                  "PREPARE TRANSACTION 'mig'");
	p = tm_start_run(e, NULL);
	wait_output(p, "snapshot of public.c waits for a lock on the table");
	wait_output(p, "prepared transaction 'mig' (prepared at ");
	pgtest_exec(e->s, "INSERT INTO a VALUES (4, 4)");
	if (!pgtest_wait_value(e->t, "SELECT count(*) FROM a", "4", 60))
		fail_msg("the stream does not go on:\n%s", pgtest_proc_output(p));
	tm_sleep_ms(6000); /* another read or two of c meets the lock */
	tm_assert_no_restart(p, "c's copy waited for its lock");
	pgtest_exec(e->s, "COMMIT PREPARED 'mig'");
	wait_output(p, "snapshot of public.c goes on: the lock it waited for is released");
	tm_stop_and_catch_up(e, p, 120);
	tm_assert_equal(e, "a", "id");
	tm_assert_equal(e, "c", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM c WHERE w = 7"), 5000);
	PQfinish(idle);
	tm_env_free(e);
}

/* A table of a replicated schema whose creation was not captured (its
 * DDL ran while the capture's trigger was disabled) joins when its changes
 * arrive: run reads its definition under its lock, which a migration's
 * open transaction holds longer than wal_sender_timeout. The stream waits
 * for it, named, and answers the source's keepalives meanwhile: the
 * session goes on. */
static void
test_joining_table_lock_keeps_stream(void **state)
{
	tm_env *e = tm_env_new("joinlock");
	PGconn *mig = pgtest_connect_str(e->src);
	char *out = NULL;
	pgtest_proc *p;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.a (id int PRIMARY KEY, v int);"
	                  "INSERT INTO app.a VALUES (1, 1)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	free(out);
	tm_catch_up(e, 60);
	pgtest_exec(e->s, "ALTER SYSTEM SET wal_sender_timeout = '3s'");
	pgtest_exec(e->s, "SELECT pg_reload_conf()");
	pgtest_exec(e->s, "ALTER EVENT TRIGGER tidemark_ddl_end DISABLE;"
	                  "CREATE TABLE app.b (id int PRIMARY KEY, w int);"
	                  "ALTER EVENT TRIGGER tidemark_ddl_end ENABLE");
	pgtest_exec(e->s, "INSERT INTO app.b SELECT g, g FROM generate_series(1, 100) g");
	/* held by a migration before run reads it */
	pgtest_exec(mig, "BEGIN; ALTER TABLE app.b ADD COLUMN x int DEFAULT 5");
	p = tm_start_run(e, NULL);
	wait_output(p, "locking app.b to read its definition has waited 5 s for: pid ");
	tm_sleep_ms(4000); /* past wal_sender_timeout once more */
	tm_assert_no_restart(p, "a joining table's lock was waited for");
	pgtest_exec(mig, "COMMIT");
	pgtest_exec(e->s, "INSERT INTO app.a VALUES (2, 2); INSERT INTO app.b VALUES (101, 101)");
	if (!pgtest_wait_value(e->t, "SELECT count(*) FROM app.a", "2", 60))
		fail_msg("the stream does not go on:\n%s", pgtest_proc_output(p));
	tm_assert_no_restart(p, "a joining table's lock was waited for");
	pgtest_exec(e->s, "ALTER SYSTEM RESET wal_sender_timeout");
	pgtest_exec(e->s, "SELECT pg_reload_conf()");
	tm_stop_and_catch_up(e, p, 120);
	tm_assert_equal(e, "app.a", "id");
	tm_assert_equal(e, "app.b", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.b WHERE x = 5"), 101);
	PQfinish(mig);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill9_loop),
		cmocka_unit_test(test_cut_during_large_transaction),
		cmocka_unit_test(test_target_refuses_writes),
		cmocka_unit_test(test_target_reader_holds_table),
		cmocka_unit_test(test_unlogged_target_emptied_by_a_crash),
		cmocka_unit_test(test_target_disk_full),
		cmocka_unit_test(test_wal_level_not_logical),
		cmocka_unit_test(test_missing_privileges),
		cmocka_unit_test(test_slot_in_use),
		cmocka_unit_test(test_slot_and_publication_dropped),
		cmocka_unit_test(test_slot_invalidated),
		cmocka_unit_test(test_target_altered_by_hand),
		cmocka_unit_test(test_truncate_of_referenced_tables),
		cmocka_unit_test(test_lock_table_too_small),
		cmocka_unit_test(test_source_waits_named),
		cmocka_unit_test(test_joining_table_lock_keeps_stream),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
