/*
 * Integration tests of tables without any key (REPLICA IDENTITY FULL, no
 * primary key, no replica identity index, no unique index on NOT NULL
 * columns): a multiset, with exact duplicate rows, TOASTed values stored
 * out of line, NULLs, json (no equality operator) and numbers equal but
 * spelled apart (1.0 and 1.00).
 *
 * The copy is one read whose snapshot predates a concurrent transaction
 * that updates one of two duplicates, deletes rows, inserts duplicates and
 * leaves a TOASTed column unsent; tidemark is killed with SIGKILL during a
 * first attempt at the copy (after it kept changes of the read's window)
 * and started again. Then updates and deletes of duplicates stream, the
 * table is copied again by `tidemark snapshot` while changes stream, and
 * the end is compared as a multiset by SQL written here (each side's rows
 * as the server prints them, sorted here) and by `tidemark verify`.
 *
 * Also: --schema with keyless tables (one there at setup, one created
 * later), a keyless table without REPLICA IDENTITY FULL refused with the
 * fix, a key added to a keyless table and a key dropped, a DEFERRABLE
 * primary key (refused without FULL, no key with it), and the load at
 * the high watermark waiting longer than wal_sender_timeout without the
 * source ending the stream.
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

#define EVENT_COLS "kind, n, amount, doc, meta, at"

/* ---- the oracle ---- */

static void
assert_verify_equal(tm_env *e)
{
	char *out = NULL;
	int rc = tm_run(e, 120, &out, "verify", NULL);

	if (rc != 0)
		fail_msg("verify exited %d:\n%s", rc, out);
	assert_non_null(strstr(out, "equal as a multiset"));
	free(out);
}

/* The catalog's key of a table (as text[]). */
static void
assert_key_columns(tm_env *e, const char *table, const char *expected)
{
	char *v = pgtest_query_value(e->t, "SELECT key_columns::text FROM tidemark.tables"
	                                   " WHERE source_table = '%s'", table);

	assert_non_null(v);
	assert_string_equal(v, expected);
	free(v);
}

/* ---- the table ---- */

/* Every row twice; NULLs; TOASTed docs stored out of line; json; and two
 * rows whose amounts are equal numbers spelled 1.0 and 1.00. */
static void
create_events(PGconn *s, const char *table, int rows)
{
	pgtest_exec(s, "CREATE TABLE %s (kind text, n integer, amount numeric, doc text, meta json,"
	               " at timestamptz); ALTER TABLE %s REPLICA IDENTITY FULL;"
	               " ALTER TABLE %s ALTER doc SET STORAGE EXTERNAL", table, table, table);
	pgtest_exec(s, "INSERT INTO %s SELECT 'k' || (g %% 5), g,"
	               " CASE WHEN g %% 4 = 0 THEN NULL ELSE g / 4.0 END,"
	               " CASE WHEN g %% 3 = 0 THEN repeat(md5(g::text), 100) END,"
	               " json_build_object('g', g, 's', 'é\"x'),"
	               " CASE WHEN g %% 6 = 0 THEN NULL"
	               "   ELSE timestamptz '2024-01-01 00:00:00+00' + g * interval '1 hour' END"
	               " FROM generate_series(1, %d) g, generate_series(1, 2)", table, rows);
	pgtest_exec(s, "INSERT INTO %s (kind, n, amount) VALUES ('spell', 0, 1.0), ('spell', 0, 1.00)",
	            table);
}

/* Does a tidemark snapshot backend of this server wait on a lock of rel? */
static bool
reader_waits(PGconn *conn, const char *rel)
{
	char *v = pgtest_query_value(conn, "SELECT count(*) FROM pg_locks l"
	                                   " JOIN pg_stat_activity a ON a.pid = l.pid"
	                                   " WHERE NOT l.granted AND l.relation = '%s'::regclass"
	                                   " AND a.application_name LIKE 'tidemark snapshot%%'",
	                             rel);
	bool waits = v != NULL && atol(v) > 0;

	free(v);
	return waits;
}

static void
wait_reader(tm_env *e, PGconn *conn, const char *rel, pgtest_proc *run)
{
	for (int i = 0; !reader_waits(conn, rel); i++) {
		if (!pgtest_proc_running(run))
			fail_msg("tidemark run ended:\n%s", pgtest_proc_output(run));
		if (i > 3000)
			fail_msg("no snapshot reader waits on %s:\n%s", rel, pgtest_proc_output(run));
		tm_sleep_ms(10);
	}
	(void) e;
}

static long
pending_rows(tm_env *e)
{
	return pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.keyless_pending");
}

/* In the transaction that holds the lock, while the read waits with its
 * snapshot taken. */
static void
race(PGconn *lock)
{
	/* one of two duplicates */
	pgtest_exec(lock, "UPDATE kl.events SET kind = 'raced' WHERE ctid ="
	                  " (SELECT ctid FROM kl.events WHERE n = 1 LIMIT 1)");
	/* both of two duplicates, and one of two */
	pgtest_exec(lock, "DELETE FROM kl.events WHERE n = 2");
	pgtest_exec(lock, "DELETE FROM kl.events WHERE ctid ="
	                  " (SELECT ctid FROM kl.events WHERE n = 3 LIMIT 1)");
	/* duplicates inserted: four rows of n = 4, two new ones */
	pgtest_exec(lock, "INSERT INTO kl.events SELECT * FROM kl.events WHERE n = 4");
	pgtest_exec(lock, "INSERT INTO kl.events (kind, n) VALUES ('new', 100001), ('new', 100001)");
	/* TOASTed doc not sent: both duplicates of n = 6 */
	pgtest_exec(lock, "UPDATE kl.events SET kind = 'partial' WHERE n = 6");
	/* 1.0, not the 1.00 it equals */
	pgtest_exec(lock, "UPDATE kl.events SET kind = 'spelled' WHERE amount::text = '1.0'");
	/* a row gone and back */
	pgtest_exec(lock, "DELETE FROM kl.events WHERE n = 5; INSERT INTO kl.events (kind, n, doc)"
	                  " VALUES ('reborn', 5, repeat('r', 5000))");
	pgtest_exec(lock, "COMMIT");
}

/* After the copy: duplicates changed one at a time, json and TOAST too. */
static void
stream_changes(PGconn *s)
{
	pgtest_exec(s, "UPDATE kl.events SET amount = amount + 1 WHERE ctid ="
	               " (SELECT ctid FROM kl.events WHERE n = 10 LIMIT 1)");
	pgtest_exec(s, "DELETE FROM kl.events WHERE ctid ="
	               " (SELECT ctid FROM kl.events WHERE n = 11 LIMIT 1)");
	pgtest_exec(s, "UPDATE kl.events SET meta = '{\"changed\": true}' WHERE n = 12");
	pgtest_exec(s, "UPDATE kl.events SET kind = 'toast kept' WHERE n = 9");
	pgtest_exec(s, "DELETE FROM kl.events WHERE n = 13");
	pgtest_exec(s, "UPDATE kl.events SET amount = 2 WHERE amount::text = '1.00'");
	pgtest_exec(s, "INSERT INTO kl.events SELECT * FROM kl.events WHERE n IN (14, 15)");
	pgtest_exec(s, "UPDATE kl.events SET at = NULL WHERE n = 16");
}

static void
workload_step(PGconn *conn, void *arg, unsigned i)
{
	unsigned n = 20 + (i * 7919u) % 300;

	(void) arg;
	switch (i % 4) {
	case 0:
		pgtest_exec(conn, "UPDATE kl.events SET kind = 'w%u' WHERE ctid ="
		                  " (SELECT ctid FROM kl.events WHERE n = %u LIMIT 1)", i, n);
		break;
	case 1:
		pgtest_exec(conn, "DELETE FROM kl.events WHERE ctid ="
		                  " (SELECT ctid FROM kl.events WHERE n = %u LIMIT 1)", n);
		break;
	case 2:
		/* one more duplicate of a row */
		pgtest_exec(conn, "INSERT INTO kl.events SELECT * FROM kl.events WHERE ctid ="
		                  " (SELECT ctid FROM kl.events WHERE n = %u LIMIT 1)", n + 1);
		break;
	default:
		pgtest_exec(conn, "UPDATE kl.events SET meta = json_build_object('w', %u) WHERE ctid ="
		                  " (SELECT ctid FROM kl.events WHERE n = %u LIMIT 1)", i, n + 2);
	}
}

/* The copy done again on request (its state streaming, finished after the
 * request). */
static bool
copied_again(void *arg)
{
	tm_env *e = arg;
	char *v = pgtest_query_value(e->t, "SELECT state = 'streaming' AND snapshot_finished_at >"
	                                   " snapshot_requested_at FROM tidemark.tables");

	bool done = v != NULL && strcmp(v, "t") == 0;

	free(v);
	return done;
}

static void
test_copy_race_kill_stream_and_copy_again(void **state)
{
	tm_env *e = tm_env_new("keyless");
	PGconn *tlock = pgtest_connect_str(e->dst), *slock = pgtest_connect_str(e->src);
	pgtest_proc *run;
	pgtest_workload *wl;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA kl");
	create_events(e->s, "kl.events", 400);
	tm_setup_table(e, "kl.events");
	assert_key_columns(e, "events", "{}");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_constraint WHERE contype ="
	                                         " 'p' AND conrelid = 'kl.events'::regclass"), 0);
	/* what the README advises: an index on a column that narrows the match */
	pgtest_exec(e->t, "CREATE INDEX ON kl.events (n)");

	/* a first attempt: the read takes its snapshot, then waits on the target
	 * (its staging table is created from the target table, locked here);
	 * changes of the window are kept; run is killed there */
	pgtest_exec(tlock, "BEGIN; LOCK TABLE kl.events IN ACCESS EXCLUSIVE MODE");
	run = tm_spawn(e, "run", NULL);
	wait_reader(e, e->t, "kl.events", run);
	pgtest_exec(e->s, "UPDATE kl.events SET kind = 'first attempt' WHERE n = 7;"
	                  " INSERT INTO kl.events (kind, n) VALUES ('first attempt', 7)");
	for (int i = 0; pending_rows(e) < 3; i++) {
		if (i > 1000)
			fail_msg("the changes of the read's window were not kept:\n%s",
			         pgtest_proc_output(run));
		tm_sleep_ms(10);
	}
	pgtest_proc_kill(run, SIGKILL);
	assert_int_equal(pgtest_proc_wait(run, 30), 128 + SIGKILL);
	pgtest_proc_free(run);

	/* again: this read's snapshot predates the race */
	pgtest_exec(slock, "BEGIN; LOCK TABLE kl.events IN ACCESS EXCLUSIVE MODE");
	pgtest_exec(tlock, "ROLLBACK");
	run = tm_spawn(e, "run", NULL);
	wait_reader(e, e->s, "kl.events", run);
	race(slock);
	if (!pgtest_proc_wait_output(run, "snapshot of kl.events done", 60))
		fail_msg("the copy did not end:\n%s", pgtest_proc_output(run));
	/* the line is written in the transaction of the load: its commit follows */
	if (!pgtest_wait_value(e->t, "SELECT state = 'streaming' FROM tidemark.tables", "t", 60))
		fail_msg("the copy was not committed:\n%s", pgtest_proc_output(run));
	assert_int_equal(pending_rows(e), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_class WHERE relname LIKE"
	                                         " 'keyless %%'"), 0);

	stream_changes(e->s);
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "kl.events", EVENT_COLS);
	assert_verify_equal(e);

	/* copied again while changes stream */
	run = tm_start_run(e, NULL);
	wl = pgtest_workload_start(e->src, workload_step, NULL);
	tm_sleep_ms(300);
	assert_int_equal(tm_run(e, 60, &out, "snapshot", "kl.events", NULL), 0);
	free(out);
	if (!pgtest_wait_for(copied_again, e, 60))
		fail_msg("the copy asked for again did not end:\n%s", pgtest_proc_output(run));
	tm_sleep_ms(300);
	pgtest_workload_stop(wl, NULL);
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "kl.events", EVENT_COLS);
	assert_verify_equal(e);
	PQfinish(tlock);
	PQfinish(slock);
	tm_env_free(e);
}

/* --schema: a keyless table there at setup and one created later (made
 * FULL after its CREATE), both replicated; a keyed table of the schema
 * beside them. */
static void
test_schema_pipeline(void **state)
{
	tm_env *e = tm_env_new("keyless_schema");
	pgtest_proc *run;
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA kl");
	create_events(e->s, "kl.events", 50);
	pgtest_exec(e->s, "CREATE TABLE kl.keyed (id integer PRIMARY KEY, v text)");
	rc = tm_run(e, 60, &out, "setup", "--schema", "kl", NULL);
	if (rc != 0)
		fail_msg("setup --schema exited %d:\n%s", rc, out);
	free(out);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "CREATE TABLE kl.later (a integer, b text, j json);"
	                  " ALTER TABLE kl.later REPLICA IDENTITY FULL;"
	                  " INSERT INTO kl.later SELECT g %% 3, 'b', '{}' FROM generate_series(1, 30) g");
	pgtest_exec(e->s, "UPDATE kl.later SET b = 'changed' WHERE ctid ="
	                  " (SELECT ctid FROM kl.later WHERE a = 1 LIMIT 1);"
	                  " DELETE FROM kl.later WHERE ctid = (SELECT ctid FROM kl.later WHERE a = 2"
	                  " LIMIT 1)");
	stream_changes(e->s);
	pgtest_exec(e->s, "INSERT INTO kl.keyed SELECT g, 'v' FROM generate_series(1, 10) g");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "kl.events", EVENT_COLS);
	tm_assert_multiset_equal(e, "kl.later", "a, b, j");
	tm_assert_equal(e, "kl.keyed", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE cardinality(key_columns) = 0"), 2);
	rc = tm_run(e, 60, &out, "verify", NULL);
	if (rc != 0)
		fail_msg("verify exited %d:\n%s", rc, out);
	free(out);
	tm_env_free(e);
}

/* No key and REPLICA IDENTITY DEFAULT: refused, with the fix. */
static void
test_default_identity_refused(void **state)
{
	tm_env *e = tm_env_new("keyless_refused");
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE public.plain (a integer, b text)");
	rc = tm_run(e, 60, &out, "setup", "--table", "public.plain", NULL);
	assert_int_equal(rc, 3);
	assert_non_null(strstr(out, "REPLICA IDENTITY FULL"));
	assert_non_null(strstr(out, "ALTER TABLE \"public\".\"plain\" REPLICA IDENTITY FULL;"));
	free(out);
	tm_env_free(e);
}

/* A keyless table gets a primary key (the target table too, rows kept),
 * another a unique index on a NOT NULL column (a key under FULL), and a
 * keyed table with REPLICA IDENTITY FULL loses its key: all go on
 * replicating, the last with duplicates. */
static void
test_key_added_and_dropped(void **state)
{
	tm_env *e = tm_env_new("keyless_keys");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE public.gets (id integer NOT NULL, v text);"
	                  " ALTER TABLE public.gets REPLICA IDENTITY FULL;"
	                  " INSERT INTO public.gets SELECT g, 'v' || g FROM generate_series(1, 20) g;"
	                  " CREATE TABLE public.indexed (id integer NOT NULL, v text);"
	                  " ALTER TABLE public.indexed REPLICA IDENTITY FULL;"
	                  " INSERT INTO public.indexed SELECT g, 'v' FROM generate_series(1, 20) g;"
	                  " CREATE TABLE public.loses (id integer PRIMARY KEY, v text);"
	                  " ALTER TABLE public.loses REPLICA IDENTITY FULL;"
	                  " INSERT INTO public.loses SELECT g, 'v' FROM generate_series(1, 20) g");
	tm_setup_table(e, "public.gets");
	tm_setup_table(e, "public.loses");
	tm_setup_table(e, "public.indexed");
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "UPDATE public.gets SET v = 'before key' WHERE id = 3");
	pgtest_exec(e->s, "ALTER TABLE public.gets ADD PRIMARY KEY (id)");
	pgtest_exec(e->s, "UPDATE public.gets SET v = 'after key' WHERE id = 4;"
	                  " INSERT INTO public.gets VALUES (21, 'new')");
	/* a unique index on NOT NULL columns is a key under FULL */
	pgtest_exec(e->s, "CREATE UNIQUE INDEX ON public.indexed (id);"
	                  " UPDATE public.indexed SET v = 'by key' WHERE id = 5");
	pgtest_exec(e->s, "ALTER TABLE public.loses DROP CONSTRAINT loses_pkey");
	pgtest_exec(e->s, "INSERT INTO public.loses SELECT * FROM public.loses WHERE id <= 5;"
	                  " UPDATE public.loses SET v = 'one of two' WHERE ctid ="
	                  " (SELECT ctid FROM public.loses WHERE id = 2 LIMIT 1);"
	                  " DELETE FROM public.loses WHERE ctid ="
	                  " (SELECT ctid FROM public.loses WHERE id = 3 LIMIT 1)");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "public.gets", "id");
	assert_key_columns(e, "gets", "{id}");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_constraint WHERE contype ="
	                                         " 'p' AND conrelid = 'public.gets'::regclass"), 1);
	tm_assert_equal(e, "public.indexed", "id");
	assert_key_columns(e, "indexed", "{id}");
	tm_assert_multiset_equal(e, "public.loses", "id, v");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_constraint WHERE contype ="
	                                         " 'p' AND conrelid = 'public.loses'::regclass"), 0);
	tm_env_free(e);
}

/*
 * A DEFERRABLE primary key is checked at commit: inside a transaction two
 * rows may hold one key, so it is no key to match rows by. With REPLICA
 * IDENTITY DEFAULT the table has no replica identity (PostgreSQL would
 * refuse its updates once published): setup refuses it, with the fix.
 * With FULL it is replicated by a unique index that is immediate, else by
 * whole rows, and a key swap in one transaction (1 and 3 exchanged: between
 * its two row changes both rows hold key 3) arrives whole; so does one on a
 * keyless table given a deferrable key while the stream runs.
 */
static void
test_deferrable_key(void **state)
{
	tm_env *e = tm_env_new("keyless_deferrable");
	pgtest_proc *run;
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE public.dflt (id integer PRIMARY KEY DEFERRABLE, v text);"
	                  " CREATE TABLE public.full_pk (id integer PRIMARY KEY DEFERRABLE"
	                  " INITIALLY DEFERRED, v text);"
	                  " ALTER TABLE public.full_pk REPLICA IDENTITY FULL;"
	                  " CREATE TABLE public.full_uq (id integer PRIMARY KEY DEFERRABLE"
	                  " INITIALLY DEFERRED, code text NOT NULL UNIQUE, v text);"
	                  " ALTER TABLE public.full_uq REPLICA IDENTITY FULL;"
	                  " CREATE TABLE public.later (id integer NOT NULL, v text);"
	                  " ALTER TABLE public.later REPLICA IDENTITY FULL");
	pgtest_exec(e->s, "INSERT INTO public.full_pk SELECT g, 'v' || g FROM generate_series(1, 10) g;"
	                  " INSERT INTO public.full_uq SELECT g, 'c' || g, 'v' || g"
	                  " FROM generate_series(1, 10) g;"
	                  " INSERT INTO public.later SELECT g, 'v' || g FROM generate_series(1, 10) g");
	rc = tm_run(e, 60, &out, "setup", "--table", "public.dflt", NULL);
	assert_int_equal(rc, 3);
	assert_non_null(strstr(out, "DEFERRABLE primary key"));
	assert_non_null(strstr(out, "ALTER TABLE \"public\".\"dflt\" REPLICA IDENTITY FULL;"));
	free(out);
	tm_setup_table(e, "public.full_pk");
	tm_setup_table(e, "public.full_uq");
	tm_setup_table(e, "public.later");
	assert_key_columns(e, "full_pk", "{}");
	assert_key_columns(e, "full_uq", "{code}");
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "UPDATE public.full_pk SET id = 4 - id WHERE id IN (1, 3);"
	                  " UPDATE public.full_uq SET id = 4 - id WHERE id IN (1, 3)");
	pgtest_exec(e->s, "ALTER TABLE public.later ADD PRIMARY KEY (id) DEFERRABLE INITIALLY DEFERRED;"
	                  " UPDATE public.later SET id = 6 - id WHERE id IN (1, 5)");
	pgtest_exec(e->s, "BEGIN; UPDATE public.full_pk SET id = id + 1;"
	                  " UPDATE public.full_pk SET id = 1 WHERE id = 11; COMMIT");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "public.full_pk", "id, v");
	tm_assert_equal(e, "public.full_uq", "code");
	tm_assert_multiset_equal(e, "public.later", "id, v");
	assert_key_columns(e, "later", "{}");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM public.full_pk"), 10);
	assert_verify_equal(e);
	tm_env_free(e);
}

/*
 * The load at the high watermark waits for a lock on the target table
 * (a session of the warehouse that keeps writers out) far longer than
 * the source's wal_sender_timeout: the sink keeps answering the source,
 * which does not end the stream, and the copy is done once.
 */
static void
test_long_load_keeps_the_stream(void **state)
{
	tm_env *e = tm_env_new("keyless_alive");
	PGconn *reader;
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "ALTER SYSTEM SET wal_sender_timeout = '2s'");
	pgtest_exec(e->s, "SELECT pg_reload_conf()");
	pgtest_exec(e->s, "CREATE SCHEMA kl");
	create_events(e->s, "kl.events", 100);
	tm_setup_table(e, "kl.events");
	reader = pgtest_connect_str(e->dst);
	/* a reader that keeps writers out (a SHARE lock, as CREATE INDEX takes):
	 * the load deletes the old rows rather than truncate, so a plain
	 * reader does not make it wait */
	pgtest_exec(reader, "BEGIN; LOCK TABLE kl.events IN SHARE MODE");
	run = tm_spawn(e, "run", NULL);
	/* the load's DELETE waits on the warehouse reader */
	for (int i = 0; pgtest_query_long(e->t, "SELECT count(*) FROM pg_locks l JOIN"
	                                        " pg_stat_activity a ON a.pid = l.pid WHERE NOT"
	                                        " l.granted AND a.application_name = 'tidemark apply'")
	                == 0; i++) {
		if (i > 3000)
			fail_msg("the load does not wait on the reader:\n%s", pgtest_proc_output(run));
		tm_sleep_ms(10);
	}
	tm_sleep_ms(7000);
	pgtest_exec(reader, "COMMIT");
	if (!pgtest_proc_wait_output(run, "snapshot of kl.events done", 60))
		fail_msg("the copy did not end:\n%s", pgtest_proc_output(run));
	/* a stream the source ended shows when it is read next */
	stream_changes(e->s);
	tm_sleep_ms(3000);
	tm_assert_no_restart(run, "the load waited");
	pgtest_exec(e->s, "ALTER SYSTEM RESET wal_sender_timeout");
	pgtest_exec(e->s, "SELECT pg_reload_conf()");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "kl.events", EVENT_COLS);
	PQfinish(reader);
	tm_env_free(e);
}

/* The read's window opened and held: the read has taken its snapshot and
 * waits on the target table (locked by tlock, for its staging table). */
static pgtest_proc *
hold_window(tm_env *e, PGconn *tlock, pgtest_proc *run)
{
	pgtest_exec(tlock, "BEGIN; LOCK TABLE kl.events IN ACCESS EXCLUSIVE MODE");
	if (run == NULL)
		run = tm_spawn(e, "run", NULL);
	else
		assert_int_equal(tm_run(e, 60, NULL, "snapshot", "kl.events", NULL), 0);
	wait_reader(e, e->t, "kl.events", run);
	return run;
}

/* A TRUNCATE in the read's window, rows after it; then a column added in
 * the window of a copy asked for again (the read saw the old columns: it
 * is made again). */
static void
test_truncate_and_column_in_the_window(void **state)
{
	tm_env *e = tm_env_new("keyless_window");
	PGconn *tlock = pgtest_connect_str(e->dst);
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA kl");
	create_events(e->s, "kl.events", 100);
	tm_setup_table(e, "kl.events");
	run = hold_window(e, tlock, NULL);
	pgtest_exec(e->s, "TRUNCATE kl.events; INSERT INTO kl.events (kind, n) VALUES ('after', 1),"
	                  " ('after', 1)");
	for (int i = 0; pending_rows(e) < 3; i++) {
		if (i > 1000)
			fail_msg("the changes of the window were not kept:\n%s", pgtest_proc_output(run));
		tm_sleep_ms(10);
	}
	pgtest_exec(tlock, "COMMIT");
	if (!pgtest_proc_wait_output(run, "snapshot of kl.events done", 60))
		fail_msg("the copy did not end:\n%s", pgtest_proc_output(run));
	stream_changes(e->s);
	pgtest_exec(e->s, "INSERT INTO kl.events SELECT * FROM kl.events");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "kl.events", EVENT_COLS);

	run = tm_start_run(e, NULL);
	hold_window(e, tlock, run);
	pgtest_exec(e->s, "ALTER TABLE kl.events ADD COLUMN extra text DEFAULT 'd';"
	                  " UPDATE kl.events SET extra = 'set' WHERE ctid ="
	                  " (SELECT ctid FROM kl.events WHERE n = 1 LIMIT 1)");
	tm_sleep_ms(500);
	pgtest_exec(tlock, "COMMIT");
	if (!pgtest_proc_wait_output(run, "changed during its read; it is read again", 60))
		fail_msg("the read under the old columns was kept:\n%s", pgtest_proc_output(run));
	if (!pgtest_wait_for(copied_again, e, 60))
		fail_msg("the copy made again did not end:\n%s", pgtest_proc_output(run));
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "kl.events", EVENT_COLS ", extra");
	assert_verify_equal(e);
	PQfinish(tlock);
	tm_env_free(e);
}

/* kl.perms copied again by a new run while a source transaction, change,
 * waits on the target behind klock's lock of kl.keyed (change writes to it
 * first): the read must be put off (run says needle), then equal the
 * source once the lock is released. */
static void
copy_behind_change(tm_env *e, PGconn *klock, const char *change, const char *needle)
{
	pgtest_proc *run;

	assert_int_equal(tm_run(e, 60, NULL, "snapshot", "kl.perms", NULL), 0);
	pgtest_exec(klock, "BEGIN; LOCK TABLE kl.keyed IN ACCESS EXCLUSIVE MODE");
	pgtest_exec(e->s, "BEGIN; %s; COMMIT", change);
	run = tm_spawn(e, "run", NULL);
	if (!pgtest_proc_wait_output(run, needle, 60))
		fail_msg("the read was not put off (staged against the old target table):\n%s",
		         pgtest_proc_output(run));
	pgtest_exec(klock, "COMMIT");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "kl.perms", "role_id, permission_id, environment, note");
	assert_verify_equal(e);
}

/* A table without a key, made FULL in a --schema pipeline right after
 * another, whose columns change while its read waits: columns added, the
 * rows deleted, the old columns dropped and rows written under the new
 * ones, in one source transaction that reaches the target only after the
 * read (the apply waits on a lock of another table). The read under the
 * old columns fails on the source; the read under the new ones must not
 * be staged against the target's old table: the copy starts over after
 * the change, and run never stops. */
static void
test_columns_replaced_during_read(void **state)
{
	tm_env *e = tm_env_new("keyless_replaced");
	PGconn *tlock = pgtest_connect_str(e->dst), *klock = pgtest_connect_str(e->dst);
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA kl; CREATE TABLE kl.keyed (id integer PRIMARY KEY)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "kl", NULL), 0);
	free(out);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "CREATE TABLE kl.roles (name text, project text);"
	                  "CREATE TABLE kl.perms (role_id int, project text, permission text);"
	                  "INSERT INTO kl.perms SELECT g %% 4, 'p' || g, 'read' FROM"
	                  " generate_series(1, 200) g");
	pgtest_exec(e->s, "ALTER TABLE kl.roles REPLICA IDENTITY FULL;"
	                  "ALTER TABLE kl.perms REPLICA IDENTITY FULL");
	if (!pgtest_wait_value(e->t, "SELECT count(*) FROM tidemark.tables WHERE state = 'streaming'",
	                       "3", 60))
		fail_msg("the tables made FULL were not copied:\n%s", pgtest_proc_output(run));
	/* copied again, the read held on the target table with its snapshot taken */
	pgtest_exec(tlock, "BEGIN; LOCK TABLE kl.perms IN ACCESS EXCLUSIVE MODE");
	assert_int_equal(tm_run(e, 60, NULL, "snapshot", "kl.perms", NULL), 0);
	wait_reader(e, e->t, "kl.perms", run);
	/* the change's transaction waits on the target behind kl.keyed */
	pgtest_exec(klock, "BEGIN; LOCK TABLE kl.keyed IN ACCESS EXCLUSIVE MODE");
	pgtest_exec(e->s, "BEGIN; INSERT INTO kl.keyed VALUES (1);"
	                  "ALTER TABLE kl.perms ADD COLUMN permission_id int,"
	                  " ADD COLUMN environment varchar(100);"
	                  "DELETE FROM kl.perms;"
	                  "ALTER TABLE kl.perms DROP COLUMN project, DROP COLUMN permission;"
	                  "INSERT INTO kl.perms SELECT g %% 3, g, 'env' || (g %% 2) FROM"
	                  " generate_series(1, 50) g; COMMIT");
	pgtest_exec(tlock, "COMMIT");
	if (!pgtest_proc_wait_output(run, "it is read again once the change has reached the target",
	                             60))
		fail_msg("the read under the new columns was not put off:\n%s", pgtest_proc_output(run));
	pgtest_exec(klock, "COMMIT");
	pgtest_exec(e->s, "INSERT INTO kl.perms VALUES (9, 9, 'after'), (9, 9, 'after');"
	                  "UPDATE kl.perms SET environment = 'changed' WHERE ctid ="
	                  " (SELECT ctid FROM kl.perms WHERE role_id = 1 LIMIT 1);"
	                  "INSERT INTO kl.roles VALUES ('admin', 'p1')");
	if (!pgtest_wait_value(e->t, "SELECT count(*) FROM kl.perms WHERE environment = 'after'", "2",
	                       60))
		fail_msg("the copy did not start over:\n%s", pgtest_proc_output(run));
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_multiset_equal(e, "kl.perms", "role_id, permission_id, environment");
	tm_assert_multiset_equal(e, "kl.roles", "name, project");

	/* a copy that starts (a new session) while a change of the columns is
	 * on its way to the target: its read waits for the change */
	copy_behind_change(e, klock, "INSERT INTO kl.keyed VALUES (2);"
	                   "ALTER TABLE kl.perms ADD COLUMN note text DEFAULT 'n';"
	                   "INSERT INTO kl.perms VALUES (7, 7, 'e', 'new')",
	                   "the target table does not have them yet");
	/* one that starts while a change of a column's type is on its way: its
	 * values do not fit the target's old type yet (the staging refuses
	 * them); it is read again once the stream has passed the read */
	copy_behind_change(e, klock, "INSERT INTO kl.keyed VALUES (3);"
	                   "ALTER TABLE kl.perms ALTER COLUMN role_id TYPE text;"
	                   "INSERT INTO kl.perms VALUES ('r8', 8, 'e', 'typed')",
	                   "the target table refused a value read");
	/* the target's type narrowed by hand refuses the values again: no
	 * change is on its way, so run stops with the fix */
	pgtest_exec(e->t, "ALTER TABLE kl.perms ALTER COLUMN role_id TYPE int USING length(role_id)");
	assert_int_equal(tm_run(e, 60, NULL, "snapshot", "kl.perms", NULL), 0);
	assert_int_equal(tm_run(e, 120, &out, "run", "--until-caught-up", NULL), 5);
	if (strstr(out, "is refused again, with no change of its columns on the way") == NULL ||
	    strstr(out, "Fix: give it back a type that holds them") == NULL)
		fail_msg("no fix named:\n%s", out);
	free(out);
	pgtest_exec(e->t, "ALTER TABLE kl.perms ALTER COLUMN role_id TYPE text");

	/* a column dropped by hand on the target is no change on its way: the
	 * copy stops run with the fix, instead of reading again and again */
	pgtest_exec(e->t, "ALTER TABLE kl.perms DROP COLUMN note");
	assert_int_equal(tm_run(e, 60, NULL, "snapshot", "kl.perms", NULL), 0);
	assert_int_equal(tm_run(e, 120, &out, "run", "--until-caught-up", NULL), 5);
	if (strstr(out, "the target table was altered by hand") == NULL)
		fail_msg("no fix named:\n%s", out);
	free(out);
	PQfinish(tlock);
	PQfinish(klock);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_race_kill_stream_and_copy_again),
		cmocka_unit_test(test_schema_pipeline),
		cmocka_unit_test(test_default_identity_refused),
		cmocka_unit_test(test_key_added_and_dropped),
		cmocka_unit_test(test_deferrable_key),
		cmocka_unit_test(test_long_load_keeps_the_stream),
		cmocka_unit_test(test_truncate_and_column_in_the_window),
		cmocka_unit_test(test_columns_replaced_during_read),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
