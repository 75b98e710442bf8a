/*
 * Integration tests of the parallel copy of one table (snap_range.h): a
 * large table split into key ranges on the source, copied by several
 * readers at once while a workload writes, through kill -9 of tidemark
 * (every range resumes at its last chunk), for a text key under a
 * non-default collation, a composite key, and a table without statistics
 * (the sample's bounds). Each ends with the target equal to the source.
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

#define ROWS 120000
#define CHUNK "2000"

/* Updates, deletes, inserts, and keys moved across ranges: down below the
 * first range's rows (negative), up past the last one's. */
static void
order_step(PGconn *conn, void *arg, unsigned i)
{
	unsigned k = (i * 2654435761u) % ROWS + 1;

	(void) arg;
	switch (i % 6) {
	case 0:
		pgtest_exec(conn, "UPDATE orders SET status = 'step%u' WHERE id BETWEEN %u AND %u", i, k,
		            k + 20);
		break;
	case 1:
		pgtest_exec(conn, "DELETE FROM orders WHERE id BETWEEN %u AND %u", k, k + 3);
		break;
	case 2:
		pgtest_exec(conn, "INSERT INTO orders (status, note) SELECT 'new', 'inserted %u'"
		                  " FROM generate_series(1, 5)", i);
		break;
	case 3:
		pgtest_exec(conn, "UPDATE orders SET id = -id, status = 'moved down' WHERE id = %u", k);
		break;
	case 4:
		pgtest_exec(conn, "UPDATE orders SET id = id + 10000000, status = 'moved up'"
		                  " WHERE id = %u", k);
		break;
	default:
		pgtest_exec(conn, "BEGIN; DELETE FROM orders WHERE id = %u; INSERT INTO orders (id, status)"
		                  " VALUES (%u, 'reborn') ON CONFLICT DO NOTHING; COMMIT", k, k + 7);
	}
}

static long
catalog_long(tm_env *e, const char *sql)
{
	return pgtest_query_long(e->t, "%s", sql);
}

static void
wait_rows_copied(tm_env *e, long at_least, pgtest_proc *run)
{
	for (int i = 0; i < 3000; i++) {
		if (catalog_long(e, "SELECT coalesce(sum(snapshot_rows), 0) FROM tidemark.tables") >=
		    at_least)
			return;
		if (!pgtest_proc_running(run))
			fail_msg("tidemark run ended early:\n%s", pgtest_proc_output(run));
		tm_sleep_ms(20);
	}
	fail_msg("the copy did not reach %ld rows:\n%s", at_least, pgtest_proc_output(run));
}

/* Rows the ranges loaded, as the catalog had them at the kill (committed). */
static long *
range_rows(tm_env *e, int n)
{
	long *rows = calloc((size_t) n, sizeof *rows);

	for (int i = 0; i < n; i++)
		rows[i] = pgtest_query_long(e->t, "SELECT rows_copied FROM tidemark.snapshot_ranges"
		                                  " WHERE range_no = %d", i);
	return rows;
}

static void
test_ranges_under_workload_with_kill9(void **state)
{
	tm_env *e = tm_env_new("pcopywork");
	pgtest_workload *wl;
	pgtest_proc *run;
	long nranges, in_flight, *at_kill, *at_end, started_after = 0, bound = 0;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE orders (id bigserial PRIMARY KEY, status text NOT NULL,"
	                  " note text);"
	                  "INSERT INTO orders (status, note) SELECT 'open', 'note ' || g"
	                  " FROM generate_series(1, %d) g; ANALYZE orders", ROWS);
	tm_setup_table(e, "orders");
	/* each load into the target table takes 30 ms more, so that the kill
	 * lands in the middle of the copy however fast the machine is (a busy
	 * one once polled past the whole copy): the target's own trigger, left
	 * alone by tidemark */
	pgtest_exec(e->t, "CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS"
	                  " $$ BEGIN PERFORM pg_sleep(0.03); RETURN NULL; END $$;"
	                  "CREATE TRIGGER slow AFTER INSERT ON orders"
	                  " FOR EACH STATEMENT EXECUTE FUNCTION public.slow()");
	wl = pgtest_workload_start(e->src, order_step, NULL);
	run = tm_spawn(e, "run", "--chunk-rows", CHUNK, "--snapshot-readers", "3", NULL);
	assert_true(pgtest_proc_wait_output(run, "copied in 6 key ranges", 60));
	wait_rows_copied(e, ROWS / 3, run);
	/* several ranges under way at once (committed in the catalog) */
	if (!pgtest_wait_value(e->t, "SELECT count(*) >= 2 FROM tidemark.snapshot_ranges"
	                             " WHERE rows_copied > 0 AND NOT done", "t", 60))
		fail_msg("no two ranges were under way at once:\n%s", pgtest_proc_output(run));
	pgtest_proc_kill(run, SIGKILL);
	assert_int_equal(pgtest_proc_wait(run, 30), 128 + SIGKILL);
	pgtest_proc_free(run);
	pgtest_exec(e->t, "DROP TRIGGER slow ON orders");

	/* 60 chunks, 3 readers: 6 ranges, several of them under way at once */
	nranges = catalog_long(e, "SELECT count(*) FROM tidemark.snapshot_ranges");
	in_flight = catalog_long(e, "SELECT count(*) FROM tidemark.snapshot_ranges"
	                            " WHERE rows_copied > 0 AND NOT done");
	print_message("%ld ranges, %ld under way at the kill\n", nranges, in_flight);
	assert_int_equal(nranges, 6);
	assert_true(in_flight >= 1); /* one may have ended since the two were seen */
	assert_int_equal(catalog_long(e, "SELECT count(*) FROM tidemark.tables"
	                                 " WHERE state = 'streaming'"), 0);
	at_kill = range_rows(e, (int) nranges);
	pgtest_exec(e->t, "CREATE TABLE public.at_kill AS SELECT range_no, last_key, upper_bound,"
	                  " done FROM tidemark.snapshot_ranges");

	run = tm_spawn(e, "run", "--chunk-rows", CHUNK, "--snapshot-readers", "3", NULL);
	if (!pgtest_wait_value(e->t, "SELECT state FROM tidemark.tables", "streaming", 180))
		fail_msg("the copy did not end:\n%s", pgtest_proc_output(run));
	pgtest_workload_stop(wl, NULL);
	/* the ranges were read back, not made again */
	assert_non_null(strstr(pgtest_proc_output(run), "resumes in its 6 key ranges"));
	assert_null(strstr(pgtest_proc_output(run), "copied in"));
	tm_stop_and_catch_up(e, run, 300);
	tm_assert_equal(e, "orders", "id");

	/* resumed per range: a range done stayed done with its rows; a range
	 * under way loaded after the kill at most the source's rows past its
	 * last key (plus rows the workload moved there), never its start again */
	at_end = range_rows(e, (int) nranges);
	for (int i = 0; i < nranges; i++) {
		char *done = pgtest_query_value(e->t, "SELECT done FROM public.at_kill"
		                                      " WHERE range_no = %d", i);
		char *past = pgtest_query_value(e->t, "SELECT format('id > %%s', last_key[1])"
		                                      " || coalesce(' AND id <= ' || upper_bound, '')"
		                                      " FROM public.at_kill WHERE range_no = %d", i);
		long after = at_end[i] - at_kill[i], rest;

		if (strcmp(done, "t") == 0)
			assert_int_equal(at_end[i], at_kill[i]);
		else if (at_kill[i] > 0) {
			rest = pgtest_query_long(e->s, "SELECT count(*) FROM orders WHERE %s", past);
			print_message("range %d: %ld rows at the kill, %ld loaded after it, %ld on the "
			              "source past its last key\n", i, at_kill[i], after, rest);
			/* from scratch, it would have loaded its first at_kill rows again */
			assert_true(after <= rest + at_kill[i] / 2);
			started_after += after;
			bound += at_kill[i];
		}
		free(done);
		free(past);
	}
	print_message("rows loaded after the kill by the ranges under way: %ld (they had %ld)\n",
	              started_after, bound);
	assert_int_equal(catalog_long(e, "SELECT count(*) FROM tidemark.snapshot_ranges"
	                                 " WHERE NOT done"), 0);
	free(at_kill);
	free(at_end);
	tm_env_free(e);
}

/* Copies the table with 3 readers and tiny chunks; expects it in ranges. */
static void
copy_in_ranges(tm_env *e, const char *table, const char *order_by, const char *chunk_arg,
               const char *chunk, const char *expect_log)
{
	char *out = NULL;

	tm_setup_table(e, table);
	assert_int_equal(tm_run(e, 300, &out, "run", "--until-caught-up", chunk_arg, chunk,
	                        "--snapshot-readers", "3", NULL), 0);
	if (strstr(out, expect_log) == NULL)
		fail_msg("expected \"%s\" in:\n%s", expect_log, out);
	free(out);
	assert_true(catalog_long(e, "SELECT count(*) FROM tidemark.snapshot_ranges") >= 2);
	assert_int_equal(catalog_long(e, "SELECT count(*) FROM tidemark.snapshot_ranges"
	                                 " WHERE NOT done"), 0);
	tm_assert_equal(e, table, order_by);
}

/* A text key under "C" order, where the database's own would differ: the
 * bounds are sorted under the key's collation on the source. */
static void
test_text_key_collation(void **state)
{
	tm_env *e = tm_env_new("pcopycoll");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE words (w text COLLATE \"C\" PRIMARY KEY, n int);"
	                  "INSERT INTO words SELECT CASE g %% 4 WHEN 0 THEN upper(md5(g::text))"
	                  "  WHEN 1 THEN md5(g::text) WHEN 2 THEN '_' || g ELSE 'é' || g END, g"
	                  " FROM generate_series(1, 30000) g; ANALYZE words");
	copy_in_ranges(e, "words", "w", "--chunk-rows", "500", "the key's statistics");
	/* the ranges' bounds follow the source's order of the key */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM (SELECT upper_bound,"
	                                         " lead(upper_bound) OVER (ORDER BY range_no) AS nx"
	                                         " FROM tidemark.snapshot_ranges) q"
	                                         " WHERE nx IS NOT NULL AND NOT upper_bound"
	                                         " COLLATE \"C\" < nx COLLATE \"C\""), 0);
	tm_env_free(e);
}

/* A composite key whose first column has few values, many rows each: the
 * ranges' bounds are first-column values, every duplicate in one range. */
static void
test_composite_key(void **state)
{
	tm_env *e = tm_env_new("pcopycomp");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE pairs (a int, b text, v text, PRIMARY KEY (a, b));"
	                  "INSERT INTO pairs SELECT g %% 9, 'b' || g, 'v' || g"
	                  " FROM generate_series(1, 30000) g; ANALYZE pairs");
	copy_in_ranges(e, "pairs", "a, b", "--chunk-rows", "500", "key ranges");
	tm_env_free(e);
}

/* Never analyzed: no statistics, so the bounds come from a sample. */
static void
test_no_statistics_sample(void **state)
{
	tm_env *e = tm_env_new("pcopysample");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE raw (id int PRIMARY KEY, doc text)"
	                  " WITH (autovacuum_enabled = off);"
	                  "INSERT INTO raw SELECT g, repeat(md5(g::text), 3)"
	                  " FROM generate_series(1, 30000) g");
	/* its size is known from the live rows counted (the catalog's is not
	 * read from the files: that would wait for a lock) */
	pgtest_exec(e->s, "SELECT pg_stat_force_next_flush()");
	assert_true(pgtest_wait_value(e->s, "SELECT n_live_tup FROM pg_stat_user_tables"
	                                    " WHERE relname = 'raw'", "30000", 30));
	assert_int_equal(pgtest_query_long(e->s, "SELECT reltuples::bigint FROM pg_class"
	                                         " WHERE relname = 'raw'"), -1);
	copy_in_ranges(e, "raw", "id", "--chunk-rows", "2000", "bounds from a sample");
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranges_under_workload_with_kill9),
		cmocka_unit_test(test_text_key_collation),
		cmocka_unit_test(test_composite_key),
		cmocka_unit_test(test_no_statistics_sample),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
