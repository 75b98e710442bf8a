/*
 * Integration tests of the incremental snapshot: existing rows join the
 * live stream exactly once, under a concurrent workload, through kill -9
 * of tidemark, without long source transactions or blocked writers, for
 * every kind of key, and again on request over a damaged target.
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

#include "tm_fixture.h"

/* ---- watching the source while the snapshot runs ---- */

typedef struct watcher {
	const char *conninfo;
	volatile bool stop;
	long samples;
	double longest_xact;     /* seconds, of any tidemark client backend */
	long blocked;            /* samples where a tidemark backend blocked another */
} watcher;

static void *
watcher_main(void *arg)
{
	watcher *w = arg;
	PGconn *conn = PQconnectdb(w->conninfo);

	while (!w->stop) {
		PGresult *r = PQexec(
			conn,
			"SELECT coalesce(max(extract(epoch FROM clock_timestamp() - xact_start))"
			"   FILTER (WHERE application_name LIKE 'tidemark%' AND backend_type = 'client backend'), 0),"
			" count(*) FILTER (WHERE application_name NOT LIKE 'tidemark%' AND"
			"   pg_blocking_pids(pid) && ARRAY(SELECT pid FROM pg_stat_activity"
			"     WHERE application_name LIKE 'tidemark%'))"
			" FROM pg_stat_activity");

		if (PQresultStatus(r) == PGRES_TUPLES_OK) {
			double x = atof(PQgetvalue(r, 0, 0));

			w->samples++;
			if (x > w->longest_xact)
				w->longest_xact = x;
			w->blocked += atol(PQgetvalue(r, 0, 1));
		}
		PQclear(r);
		tm_sleep_ms(20);
	}
	PQfinish(conn);
	return NULL;
}

/* ---- the workload: statuses updated, rows deleted, rows inserted ---- */

#define ROWS 200000

static void
order_step(PGconn *conn, void *arg, unsigned i)
{
	unsigned k = (i * 2654435761u) % ROWS + 1;

	(void) arg;
	switch (i % 5) {
	case 0:
	case 1:
		pgtest_exec(conn, "UPDATE orders SET status = 'step%u', updated = now()"
		                  " WHERE id BETWEEN %u AND %u", i, k, k + 20);
		break;
	case 2:
		pgtest_exec(conn, "DELETE FROM orders WHERE id BETWEEN %u AND %u", k, k + 5);
		break;
	case 3:
		pgtest_exec(conn, "INSERT INTO orders (status, note) SELECT 'new', 'inserted %u'"
		                  " FROM generate_series(1, 10)", i);
		break;
	default:
		pgtest_exec(conn, "BEGIN; UPDATE orders SET note = NULL WHERE id = %u;"
		                  " DELETE FROM orders WHERE id = %u; INSERT INTO orders (id, status)"
		                  " VALUES (%u, 'reborn') ON CONFLICT DO NOTHING; COMMIT",
		            k, k + 1, k + 1);
	}
}

static long
catalog_rows(tm_env *e)
{
	char *v = pgtest_query_value(e->t, "SELECT coalesce(sum(snapshot_rows), 0)"
	                                   " FROM tidemark.tables");
	long n = v ? atol(v) : 0;

	free(v);
	return n;
}

static void
wait_rows_copied(tm_env *e, long at_least, pgtest_proc *run)
{
	for (int i = 0; i < 3000 && catalog_rows(e) < at_least; i++) {
		if (!pgtest_proc_running(run))
			fail_msg("tidemark run ended early:\n%s", pgtest_proc_output(run));
		tm_sleep_ms(20);
	}
	assert_true(catalog_rows(e) >= at_least);
}

static void
test_snapshot_under_workload_with_kill9(void **state)
{
	tm_env *e = tm_env_new("snapwork");
	watcher w = {0};
	pthread_t th;
	pgtest_workload *wl;
	pgtest_proc *run;
	long before_kill;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE orders (id bigserial PRIMARY KEY, status text NOT NULL,"
	                  " note text, updated timestamptz DEFAULT now());"
	                  "INSERT INTO orders (status, note) SELECT 'open', 'note ' || g"
	                  " FROM generate_series(1, %d) g", ROWS);
	tm_setup_table(e, "orders");
	w.conninfo = e->src;
	pthread_create(&th, NULL, watcher_main, &w);
	wl = pgtest_workload_start(e->src, order_step, NULL);
	run = tm_spawn(e, "run", "--chunk-rows", "5000", NULL);
	wait_rows_copied(e, ROWS / 3, run);
	pgtest_proc_kill(run, SIGKILL);
	assert_int_equal(pgtest_proc_wait(run, 30), 128 + SIGKILL);
	pgtest_proc_free(run);
	/* each chunk is committed as it is loaded: the kill, as soon as a third
	 * of the rows were seen copied, finds the copy not much further (a
	 * target transaction of the stream's had held every chunk of its
	 * second, the whole copy at times) */
	before_kill = catalog_rows(e);
	if (before_kill >= ROWS / 2)
		fail_msg("%ld of %d rows copied when the run was killed, seen at %d: chunks are not "
		         "committed one by one", before_kill, ROWS, ROWS / 3);
	run = tm_spawn(e, "run", "--chunk-rows", "5000", NULL);
	assert_true(pgtest_proc_wait_output(run, "resumes after the last chunk copied", 30));
	tm_sleep_ms(500);
	pgtest_workload_stop(wl, NULL);
	tm_stop_and_catch_up(e, run, 300);
	w.stop = true;
	pthread_join(th, NULL);
	tm_assert_equal(e, "orders", "id");
	print_message("watched %ld samples: longest tidemark transaction %.2f s, %ld blocked\n",
	              w.samples, w.longest_xact, w.blocked);
	assert_true(w.samples > 10);
	assert_true(w.longest_xact < 5.0);
	assert_int_equal(w.blocked, 0);
	/* resumed, not restarted: fewer than the whole table copied after the kill */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE state = 'streaming'"), 1);
	tm_env_free(e);
}

/* Keys of many types, NULLs, big TOASTed values, tiny chunks. */
static void
test_key_types_and_edges(void **state)
{
	tm_env *e = tm_env_new("snapkeys");
	char *out = NULL;
	const char *tables[][2] = {
		{"k_text", "k"}, {"k_uuid", "k"}, {"k_ts", "k"}, {"k_comp", "a, b"},
		{"empty", "id"}, {"one", "id"}, {"toasty", "id"},
	};

	(void) state;
	pgtest_exec(e->s,
	            "CREATE TABLE k_text (k text PRIMARY KEY, v int);"
	            "INSERT INTO k_text SELECT 'key ' || g || E'\\t\\\\ \\u00e9', g FROM generate_series(1, 500) g;"
	            "CREATE TABLE k_uuid (k uuid PRIMARY KEY, v text);"
	            "INSERT INTO k_uuid SELECT md5(g::text)::uuid, NULL FROM generate_series(1, 300) g;"
	            "CREATE TABLE k_ts (k timestamptz PRIMARY KEY, v numeric);"
	            "INSERT INTO k_ts SELECT '2020-01-01 00:00:00.123456+00'::timestamptz + g * interval '37 minutes',"
	            "  g / 7.0 FROM generate_series(1, 400) g;"
	            "CREATE TABLE k_comp (a text, b int, v text, PRIMARY KEY (a, b));"
	            "INSERT INTO k_comp SELECT chr(65 + g %% 5), g, CASE WHEN g %% 3 = 0 THEN NULL ELSE 'x' END"
	            "  FROM generate_series(1, 350) g;"
	            "CREATE TABLE empty (id int PRIMARY KEY);"
	            "CREATE TABLE one (id int PRIMARY KEY, v text); INSERT INTO one VALUES (1, 'only');"
	            "CREATE TABLE toasty (id int PRIMARY KEY, doc text);"
	            "INSERT INTO toasty SELECT g, (SELECT string_agg(md5(g::text || i::text), '')"
	            "  FROM generate_series(1, 20000) i) FROM generate_series(1, 12) g");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "k_text", "--table", "k_uuid",
	                        "--table", "k_ts", "--table", "k_comp", "--table", "empty",
	                        "--table", "one", "--table", "toasty", NULL), 0);
	free(out);
	out = NULL;
	assert_int_equal(tm_run(e, 300, &out, "run", "--until-caught-up", "--chunk-rows", "7",
	                        "--snapshot-readers", "2", NULL), 0);
	free(out);
	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
		tm_assert_equal(e, tables[i][0], tables[i][1]);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE state <> 'streaming'"), 0);
	tm_env_free(e);
}

/* Every row deleted while the table is being copied: none comes back. */
static void
test_all_rows_deleted_during_snapshot(void **state)
{
	tm_env *e = tm_env_new("snapdel");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v text);"
	                  "INSERT INTO t SELECT g, 'v' FROM generate_series(1, 3000) g");
	tm_setup_table(e, "t");
	run = tm_spawn(e, "run", "--chunk-rows", "20", NULL);
	wait_rows_copied(e, 40, run);
	pgtest_exec(e->s, "DELETE FROM t");
	tm_stop_and_catch_up(e, run, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM t"), 0);
	tm_env_free(e);
}

/* A table dropped while being copied: a clear line, no crash, the rest goes on. */
static void
test_table_dropped_during_snapshot(void **state)
{
	tm_env *e = tm_env_new("snapdrop");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	/* large enough that the copy is still under way when the DROP comes
	 * (20 rows a chunk) */
	pgtest_exec(e->s, "CREATE TABLE doomed (id int PRIMARY KEY, v text);"
	                  "INSERT INTO doomed SELECT g, 'v' FROM generate_series(1, 50000) g;"
	                  "CREATE TABLE kept (id int PRIMARY KEY); INSERT INTO kept VALUES (1), (2)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "doomed", "--table", "kept", NULL), 0);
	free(out);
	run = tm_spawn(e, "run", "--chunk-rows", "20", NULL);
	wait_rows_copied(e, 60, run);
	pgtest_exec(e->s, "DROP TABLE doomed");
	/* whichever sees it first: the read ("... no longer exists on the
	 * source") or the catalog's scan after the DROP ("... was dropped") */
	if (!pgtest_proc_wait_output(run, "snapshot of public.doomed stops: the table", 60))
		fail_msg("no line said the copy of doomed stopped:\n%s", pgtest_proc_output(run));
	assert_true(pgtest_proc_running(run));
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "kept", "id");
	tm_env_free(e);
}

/* `tidemark snapshot` repairs a damaged target while changes stream. */
static void
test_resnapshot_repairs_target(void **state)
{
	tm_env *e = tm_env_new("resnap");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v text);"
	                  "INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 2000) g");
	tm_setup_table(e, "t");
	tm_catch_up(e, 120);
	tm_assert_equal(e, "t", "id");
	/* damage: missing, changed and extra rows */
	pgtest_exec(e->t, "DELETE FROM t WHERE id %% 10 = 0; UPDATE t SET v = 'wrong' WHERE id %% 7 = 0;"
	                  "INSERT INTO t VALUES (100000, 'extra'), (-5, 'extra')");
	run = tm_spawn(e, "run", "--chunk-rows", "300", NULL);
	assert_int_equal(tm_run(e, 60, &out, "snapshot", "public.t", NULL), 0);
	free(out);
	pgtest_exec(e->s, "UPDATE t SET v = 'live' WHERE id BETWEEN 500 AND 520");
	assert_true(pgtest_wait_value(e->t, "SELECT state = 'streaming' AND snapshot_rows > 0"
	                                    " FROM tidemark.tables", "t", 120));
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "t", "id");
	tm_env_free(e);
}

/*
 * A key-changing update that does not send its unchanged TOASTed column
 * moves rows that are not copied yet into the range already copied (the
 * target has no row to move, and no later chunk reads the new key): those
 * rows are read again from the source, between watermarks of their own,
 * also after a kill -9 while the requests to read them are pending.
 */
static void
test_moved_partial_rows_read_again(void **state)
{
	tm_env *e = tm_env_new("snapmove");
	pgtest_proc *run;
	PGconn *lock;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v text, doc text);"
	                  "ALTER TABLE t ALTER doc SET STORAGE EXTERNAL;"
	                  "INSERT INTO t SELECT g, 'v', CASE WHEN g %% 100 = 0 THEN"
	                  "  (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 200) i)"
	                  "  END FROM generate_series(1, 20000) g");
	tm_setup_table(e, "t");
	run = tm_spawn(e, "run", "--chunk-rows", "50", NULL);
	wait_rows_copied(e, 100, run);
	pgtest_proc_kill(run, SIGKILL);
	assert_int_equal(pgtest_proc_wait(run, 30), 128 + SIGKILL);
	pgtest_proc_free(run);
	assert_true(catalog_rows(e) < 15000);
	/* doc is not sent: unchanged TOAST; the first rows are already copied */
	pgtest_exec(e->s, "UPDATE t SET id = -id, v = 'moved' WHERE id IN (19000, 19100, 19200);"
	                  "UPDATE t SET id = 1 - id WHERE id = 19300;"
	                  "UPDATE t SET id = -id WHERE id = 19400; UPDATE t SET v = 'after' WHERE id = -19400");
	/* the requests are written; the reads wait behind a lock: kill -9 */
	lock = pgtest_connect_str(e->src);
	pgtest_exec(lock, "BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE");
	run = tm_spawn(e, "run", "--chunk-rows", "50", NULL);
	if (!pgtest_wait_value(e->t, "SELECT count(*) FROM tidemark.snapshot_rereads", "5", 60))
		fail_msg("the requests were not written:\n%s", pgtest_proc_output(run));
	pgtest_proc_kill(run, SIGKILL);
	assert_int_equal(pgtest_proc_wait(run, 30), 128 + SIGKILL);
	pgtest_proc_free(run);
	assert_int_equal(tm_run(e, 60, &out, "status", NULL), 0);
	if (strstr(out, "5 row(s) to read again") == NULL)
		fail_msg("status does not show the rows to read again:\n%s", out);
	free(out);
	pgtest_exec(lock, "COMMIT");
	PQfinish(lock);
	run = tm_spawn(e, "run", "--chunk-rows", "50", NULL);
	tm_stop_and_catch_up(e, run, 300);
	tm_assert_equal(e, "t", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM t WHERE id < 0 AND doc IS NOT NULL"), 5);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.snapshot_rereads"), 0);
	tm_env_free(e);
}

/* TRUNCATE in the middle of a copy, then new rows: none of the old rows
 * comes back, every new one arrives. */
static void
test_truncate_during_snapshot(void **state)
{
	tm_env *e = tm_env_new("snaptrunc");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v text);"
	                  "INSERT INTO t SELECT g, 'old' FROM generate_series(1, 20000) g");
	tm_setup_table(e, "t");
	run = tm_spawn(e, "run", "--chunk-rows", "100", NULL);
	wait_rows_copied(e, 200, run);
	pgtest_exec(e->s, "TRUNCATE t; INSERT INTO t SELECT g, 'new' FROM generate_series(10, 30000, 7) g");
	tm_stop_and_catch_up(e, run, 180);
	tm_assert_equal(e, "t", "id");
	tm_env_free(e);
}

/*
 * A primary key whose columns are not in the table's order, with INCLUDE
 * columns: the key is (b, a), as the index has it. The chunks are read in
 * that order, through the index (never a scan of the table per chunk), and
 * the target's primary key is the same.
 */
static void
test_key_in_index_order(void **state)
{
	tm_env *e = tm_env_new("keyorder");
	char *keys, *pk;
	long scans_before;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (a int, b int, v text, PRIMARY KEY (b, a) INCLUDE (v));"
	                  "INSERT INTO t SELECT g %% 100, g / 100, 'v' || g FROM generate_series(1, 20000) g");
	/* building the index scanned the table: counted once its statistics are out */
	pgtest_exec(e->s, "SELECT pg_stat_force_next_flush()");
	scans_before = pgtest_query_long(e->s, "SELECT seq_scan FROM pg_stat_user_tables"
	                                       " WHERE relname = 't'");
	tm_setup_table(e, "t");
	keys = pgtest_query_value(e->t, "SELECT key_columns::text FROM tidemark.tables");
	assert_string_equal(keys, "{b,a}");
	pk = pgtest_query_value(e->t, "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
	                              " WHERE conrelid = 'public.t'::regclass AND contype = 'p'");
	assert_string_equal(pk, "PRIMARY KEY (b, a)");
	assert_int_equal(tm_run(e, 120, NULL, "run", "--until-caught-up", "--chunk-rows", "2000",
	                        NULL), 0);
	/* the copy's scans, before the comparison below reads the table too */
	assert_true(pgtest_wait_value(e->s, "SELECT idx_scan >= 10 FROM pg_stat_user_tables"
	                                    " WHERE relname = 't'", "t", 30));
	assert_int_equal(pgtest_query_long(e->s, "SELECT seq_scan FROM pg_stat_user_tables"
	                                         " WHERE relname = 't'"), scans_before);
	tm_assert_equal(e, "t", "b, a");
	free(keys);
	free(pk);
	tm_env_free(e);
}

/* The peak resident memory of a process so far (VmHWM), in bytes. */
static long long
peak_rss(pid_t pid)
{
	char path[64], line[256];
	long long kb = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "VmHWM: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/*
 * Rows of 5 MB that compress to almost nothing on disk, in a table never
 * analyzed: neither statistics nor sizes on disk say how large a chunk is.
 * The chunk ends at --chunk-bytes as read, so the peak memory of run stays
 * under the bound snap_reader.h documents, with two readers.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifdef __SANITIZE_ADDRESS__
#define SANITIZED 1
#endif
#define WIDE_ROWS 40
#define WIDE_ROW_BYTES (5LL * 1024 * 1024)
#define WIDE_CHUNK_BYTES (8LL * 1024 * 1024)

static void
test_wide_rows_chunks_bounded_by_bytes(void **state)
{
	tm_env *e = tm_env_new("snapwide");
	const long long readers = 2, baseline = 24LL * 1024 * 1024;
	long long peak, bound;
	char *src_sum, *dst_sum;
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE docs (id int PRIMARY KEY, doc text);"
	                  "INSERT INTO docs SELECT g, repeat(md5(g::text), %lld)"
	                  "  FROM generate_series(1, %d) g",
	            WIDE_ROW_BYTES / 32, WIDE_ROWS);
	assert_int_equal(pgtest_query_long(e->s, "SELECT reltuples::bigint FROM pg_class"
	                                         " WHERE relname = 'docs'"), -1);
	tm_setup_table(e, "docs");
	run = tm_spawn(e, "run", "--chunk-bytes", "8MB", "--snapshot-readers", "2", NULL);
	if (!pgtest_wait_value(e->t, "SELECT state FROM tidemark.tables", "streaming", 120))
		fail_msg("the copy did not end:\n%s", pgtest_proc_output(run));
	peak = peak_rss(pgtest_proc_pid(run));
	tm_stop_and_catch_up(e, run, 60);
	/* snap_reader.h: (readers x 3 + 1) chunks, each at most the bound and one row */
	bound = (readers * 3 + 1) * (WIDE_CHUNK_BYTES + WIDE_ROW_BYTES) + baseline;
	print_message("peak resident memory %lld MB for %d rows of %lld MB (bound %lld MB)\n",
	              peak >> 20, WIDE_ROWS, WIDE_ROW_BYTES >> 20, bound >> 20);
	/* the bound is the production build's: a sanitizer keeps freed memory
	 * in quarantine and pads every allocation */
#ifdef SANITIZED
	assert_true(peak > 0);
#else
	assert_true(peak > 0 && peak < bound);
#endif
	src_sum = pgtest_query_value(e->s, "SELECT count(*) || ' ' || sum(length(doc)) || ' ' ||"
	                                   " md5(string_agg(md5(doc), '' ORDER BY id)) FROM docs");
	dst_sum = pgtest_query_value(e->t, "SELECT count(*) || ' ' || sum(length(doc)) || ' ' ||"
	                                   " md5(string_agg(md5(doc), '' ORDER BY id)) FROM docs");
	assert_string_equal(src_sum, dst_sum);
	free(src_sum);
	free(dst_sum);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot_under_workload_with_kill9),
		cmocka_unit_test(test_key_types_and_edges),
		cmocka_unit_test(test_all_rows_deleted_during_snapshot),
		cmocka_unit_test(test_table_dropped_during_snapshot),
		cmocka_unit_test(test_resnapshot_repairs_target),
		cmocka_unit_test(test_moved_partial_rows_read_again),
		cmocka_unit_test(test_truncate_during_snapshot),
		cmocka_unit_test(test_wide_rows_chunks_bounded_by_bytes),
		cmocka_unit_test(test_key_in_index_order),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
