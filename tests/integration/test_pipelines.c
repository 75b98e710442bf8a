/*
 * Several pipelines into one warehouse: two source databases with the same
 * table and type names replicate side by side into one target database,
 * each into its own target schemas (--target-schema, --map-schema), under
 * a workload and through renames, SET SCHEMA, new tables and column
 * changes, and end equal (compared here with plain SQL, sorted on the
 * client). A setup that would merge them (same slot, another source; same
 * target names) is refused with exit 3 and nothing changed on either side;
 * run, status, verify and teardown refuse another source likewise; one
 * pipeline's teardown leaves the other running. A source database
 * renamed is the same source.
 */
#include <jansson.h>
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

#define ENUM_LABELS                                                                      \
	"SELECT string_agg(enumlabel, ',' ORDER BY enumsortorder) FROM pg_enum WHERE enumtypid = "

static void
assert_value(PGconn *conn, const char *expected, const char *sql)
{
	char *v = pgtest_query_value(conn, "%s", sql);

	assert_string_equal(v, expected);
	free(v);
}

/* The source's schema: the same names in both databases, an enum of the
 * same name with other labels. */
static void
make_source(PGconn *s, const char *labels)
{
	pgtest_exec(s, "CREATE TYPE mood AS ENUM (%s);"
	               "CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL, status mood);"
	               "CREATE TABLE orders (id bigint PRIMARY KEY, user_id int, amount numeric(12,2));"
	               "CREATE SCHEMA billing; CREATE SCHEMA archive;"
	               "CREATE TABLE billing.invoices (id int PRIMARY KEY, total numeric);"
	               "INSERT INTO users SELECT g, 'user ' || g, (enum_range(NULL::mood))[1 + g %% 2]"
	               "  FROM generate_series(1, 300) g;"
	               "INSERT INTO orders SELECT g, 1 + g %% 300, g * 1.25 FROM generate_series(1, 600) g;"
	               "INSERT INTO billing.invoices SELECT g, g * 10 FROM generate_series(1, 50) g",
	            labels);
}

/* A second test environment whose target is e's target database. */
static tm_env *
same_target(tm_env *e, const char *name)
{
	tm_env *o = tm_env_new(name);

	free(o->dst);
	o->dst = strdup(e->dst);
	PQfinish(o->t);
	o->t = pgtest_connect_str(o->dst);
	return o;
}

/* One workload step on either source: inserts, updates and deletes across
 * the tables, a new row id per step. */
static void
step(PGconn *conn, void *arg, unsigned i)
{
	const char *users = arg;

	pgtest_exec(conn, "BEGIN;"
	                  "INSERT INTO %s (id, name) VALUES (%u, 'new %u');"
	                  "UPDATE %s SET name = name || '+' WHERE id = %u;"
	                  "DELETE FROM %s WHERE id = %u;"
	                  "COMMIT",
	            users, 10000 + i, i, users, 1 + i % 300, users, 150 + i % 100);
}

static void
assert_nothing_set_up(PGconn *s, PGconn *t, const char *slot)
{
	assert_int_equal(pgtest_query_long(s, "SELECT count(*) FROM pg_namespace"
	                                      " WHERE nspname = 'tidemark'"), 0);
	assert_int_equal(pgtest_query_long(s, "SELECT count(*) FROM pg_replication_slots"
	                                      " WHERE slot_name = '%s'", slot), 0);
	assert_int_equal(pgtest_query_long(s, "SELECT count(*) FROM pg_publication"), 0);
	assert_int_equal(pgtest_query_long(t, "SELECT count(*) FROM tidemark.progress"
	                                      " WHERE slot_name = '%s'", slot), 0);
}

static void
test_two_sources_side_by_side(void **state)
{
	tm_env *a = tm_env_new("pipe_a");
	tm_env *b = same_target(a, "pipe_b");
	pgtest_workload *wa, *wb;
	pgtest_proc *ra, *rb;
	char *out;
	json_t *doc;

	(void) state;
	make_source(a->s, "'happy', 'sad'");
	make_source(b->s, "'calm', 'angry', 'bored'");
	assert_int_equal(tm_run(a, 60, &out, "setup", "--schema", "public", "--table",
	                        "billing.invoices", NULL), 0);
	free(out);
	/* B without a schema of its own would fill A's tables: refused */
	assert_int_equal(tm_run(b, 60, &out, "setup", "--schema", "public", NULL), 3);
	tm_assert_has(out, "public.users would be public.users on the target, which pipeline "
	                "\"tm_pipe_a\" fills");
	tm_assert_has(out, "--target-schema NAME");
	free(out);
	assert_nothing_set_up(b->s, b->t, b->slot);
	/* B's source under A's pipeline name: refused, naming both databases */
	{
		tm_env wrong = *b;

		snprintf(wrong.slot, sizeof wrong.slot, "%s", a->slot);
		assert_int_equal(tm_run(&wrong, 60, &out, "setup", "--schema", "public", NULL), 3);
		tm_assert_has(out, "pipeline \"tm_pipe_a\" here replicates database \"src_pipe_a\"");
		tm_assert_has(out, "this --source is database \"src_pipe_b\"");
		free(out);
		assert_nothing_set_up(b->s, b->t, b->slot);
		assert_int_equal(tm_run(&wrong, 60, &out, "run", "--until-caught-up", NULL), 3);
		tm_assert_has(out, "this --source is database \"src_pipe_b\"");
		free(out);
		assert_int_equal(tm_run(&wrong, 60, &out, "status", NULL), 3);
		free(out);
		assert_int_equal(tm_run(&wrong, 60, &out, "verify", NULL), 3);
		free(out);
		assert_int_equal(tm_run(&wrong, 60, &out, "teardown", NULL), 3);
		free(out);
		/* A's slot and publication survived the attempts */
		assert_int_equal(pgtest_query_long(a->s, "SELECT count(*) FROM pg_replication_slots"
		                                         " WHERE slot_name = '%s'", a->slot), 1);
	}
	/* a mapping that would move replicated tables: refused */
	assert_int_equal(tm_run(a, 60, &out, "setup", "--schema", "public", "--target-schema", "x",
	                        NULL), 3);
	tm_assert_has(out, "a mapping cannot move the tables a pipeline replicates");
	free(out);
	assert_int_equal(tm_run(b, 60, &out, "setup", "--schema", "public", "--schema", "archive",
	                        "--table", "billing.invoices", "--target-schema", "app_b",
	                        "--map-schema", "archive=app_b_archive", NULL), 0);
	free(out);

	ra = tm_start_run(a, NULL);
	rb = tm_start_run(b, NULL);
	wa = pgtest_workload_start(a->src, step, "users");
	wb = pgtest_workload_start(b->src, step, "users");
	assert_true(pgtest_wait_value(b->t, "SELECT count(*) > 0 FROM tidemark.tables"
	                                    " WHERE slot_name = 'tm_pipe_b' AND state = 'streaming'",
	                              "t", 120));
	pgtest_workload_stop(wb, NULL);
	/* B's schema changes move and change only B's tables */
	pgtest_exec(b->s, "ALTER TABLE users RENAME TO members");
	pgtest_exec(b->s, "ALTER TABLE members ADD COLUMN note text DEFAULT 'n'");
	pgtest_exec(b->s, "ALTER TABLE orders SET SCHEMA archive");
	pgtest_exec(b->s, "ALTER TYPE mood ADD VALUE 'tired'");
	pgtest_exec(b->s, "CREATE TABLE events (id int PRIMARY KEY, what mood);"
	                  "INSERT INTO events SELECT g, 'calm' FROM generate_series(1, 20) g");
	pgtest_exec(b->s, "UPDATE archive.orders SET amount = amount + 1 WHERE id %% 7 = 0;"
	                  "INSERT INTO members (id, name, status) VALUES (99999, 't', 'tired')");
	pgtest_exec(a->s, "ALTER TABLE billing.invoices SET SCHEMA archive;"
	                  "UPDATE archive.invoices SET total = total * 2 WHERE id < 10");
	wb = pgtest_workload_start(b->src, step, "members");
	tm_sleep_ms(1500);
	pgtest_workload_stop(wa, NULL);
	pgtest_workload_stop(wb, NULL);
	tm_stop_and_catch_up(a, ra, 180);
	tm_stop_and_catch_up(b, rb, 180);

	/* the oracle: each source against its own target tables */
	tm_assert_rows_equal(a->s, "public.users", a->t, "public.users", "id, name, status");
	tm_assert_rows_equal(a->s, "public.orders", a->t, "public.orders", "id, user_id, amount");
	tm_assert_rows_equal(a->s, "archive.invoices", a->t, "archive.invoices", "id, total");
	tm_assert_rows_equal(b->s, "public.members", b->t, "app_b.members",
	                     "id, name, status, note");
	tm_assert_rows_equal(b->s, "archive.orders", b->t, "app_b_archive.orders",
	                     "id, user_id, amount");
	tm_assert_rows_equal(b->s, "billing.invoices", b->t, "app_b.invoices", "id, total");
	tm_assert_rows_equal(b->s, "public.events", b->t, "app_b.events", "id, what");
	/* each pipeline's enum in its own schema, with its own labels */
	assert_value(a->t, "mood", "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                           " WHERE attrelid = 'public.users'::regclass AND attname = 'status'");
	assert_value(a->t, "app_b.mood", "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                                 " WHERE attrelid = 'app_b.members'::regclass"
	                                 " AND attname = 'status'");
	assert_value(a->t, "calm,angry,bored,tired", ENUM_LABELS "'app_b.mood'::regtype");
	assert_value(a->t, "happy,sad", ENUM_LABELS "'public.mood'::regtype");
	/* nothing of B leaked into A's schemas */
	assert_int_equal(pgtest_query_long(a->t, "SELECT count(*) FROM pg_class"
	                                         " WHERE relname IN ('members', 'events')"
	                                         " AND relnamespace = 'public'::regnamespace"), 0);
	assert_int_equal(tm_run(a, 120, &out, "verify", NULL), 0);
	free(out);
	assert_int_equal(tm_run(b, 120, &out, "verify", NULL), 0);
	free(out);

	/* status --all and ddl-log --all: both pipelines */
	assert_int_equal(tm_run(a, 60, &out, "status", "--all", "--json", NULL), 0);
	doc = json_loads(out, 0, NULL);
	assert_non_null(doc);
	assert_int_equal(json_array_size(doc), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(doc, 0),
	                                                      "source_database")), "src_pipe_a");
	assert_string_equal(json_string_value(json_object_get(json_array_get(doc, 1),
	                                                      "target_schema")), "app_b");
	json_decref(doc);
	free(out);
	assert_int_equal(tm_run(a, 60, &out, "ddl-log", "--all", NULL), 0);
	tm_assert_has(out, "pipeline tm_pipe_a");
	tm_assert_has(out, "pipeline tm_pipe_b");
	free(out);

	/* B's teardown leaves A's pipeline whole and running */
	assert_int_equal(tm_run(b, 60, &out, "teardown", "--drop-target-catalog", NULL), 0);
	tm_assert_has(out, "other pipelines ('tm_pipe_a') keep using");
	free(out);
	assert_int_equal(pgtest_query_long(a->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE slot_name = 'tm_pipe_b'"), 0);
	pgtest_exec(a->s, "INSERT INTO users (id, name) VALUES (777777, 'after')");
	tm_catch_up(a, 120);
	tm_assert_rows_equal(a->s, "public.users", a->t, "public.users", "id, name, status");
	tm_env_free(b);
	tm_env_free(a);
}

/* A source on another server (another system identifier) with the same
 * database layout, under the first pipeline's slot name: refused with
 * nothing changed. A pipeline set up before sources were recorded takes
 * the source its next run meets. A slot another target streams from is
 * not taken over by a second target. */
static void
test_another_server_refused(void **state)
{
	tm_env *e = tm_env_new("pipe_srv");
	pgtest_cluster *other = pgtest_cluster_start_with("src_other", "max_wal_senders=5");
	tm_env o = *e;
	char *out, *sysid;
	PGconn *os;

	(void) state;
	make_source(e->s, "'x', 'y'");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "users", NULL), 0);
	free(out);
	tm_catch_up(e, 120);
	o.src = pgtest_conninfo_db(other, "postgres");
	os = pgtest_connect_str(o.src);
	make_source(os, "'x', 'y'");
	sysid = pgtest_query_value(os, "SELECT system_identifier::text FROM pg_control_system()");
	assert_int_equal(tm_run(&o, 60, &out, "setup", "--table", "users", NULL), 3);
	tm_assert_has(out, sysid);
	tm_assert_has(out, "nothing was changed");
	free(out);
	assert_nothing_set_up(os, e->t, "no such slot");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"), 1);

	/* a catalog from before sources were recorded: the next run records it */
	pgtest_exec(e->t, "UPDATE tidemark.progress SET source_system_id = NULL,"
	                  " source_database = NULL, source_address = NULL");
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 0);
	tm_assert_has(out, "is now recorded as replicating database \"src_pipe_srv\"");
	free(out);
	assert_int_equal(tm_run(&o, 60, &out, "run", "--until-caught-up", NULL), 3);
	free(out);

	/* the slot of e's pipeline, from a second target: refused */
	{
		tm_env t2 = *e;
		PGconn *admin = pgtest_connect(e->dst_cluster);

		pgtest_exec(admin, "CREATE DATABASE dst_pipe_srv2");
		PQfinish(admin);
		t2.dst = pgtest_conninfo_db(e->dst_cluster, "dst_pipe_srv2");
		assert_int_equal(tm_run(&t2, 60, &out, "setup", "--table", "users", NULL), 3);
		tm_assert_has(out, "this target has no pipeline of that name");
		free(out);
		free(t2.dst);
	}
	free(sysid);
	PQfinish(os);
	free(o.src);
	pgtest_cluster_stop(other);
	tm_env_free(e);
}

/*
 * The source database renamed (ALTER DATABASE ... RENAME TO): the same
 * database (its oid, and the slot in it), so the pipeline goes on under the
 * new name and records it; a database created under the old name is
 * another one, refused.
 */
static void
test_source_database_renamed(void **state)
{
	tm_env *e = tm_env_new("dbrename");
	PGconn *admin;
	char *out = NULL, *old_src;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE public.t (id int PRIMARY KEY, v text);"
	                  "INSERT INTO public.t VALUES (1, 'before')");
	tm_setup_table(e, "public.t");
	tm_catch_up(e, 120);
	PQfinish(e->s);
	admin = pgtest_connect(e->src_cluster);
	pgtest_exec(admin, "ALTER DATABASE src_dbrename RENAME TO src_dbrenamed");
	pgtest_exec(admin, "CREATE DATABASE src_dbrename");
	old_src = e->src;
	e->src = pgtest_conninfo_db(e->src_cluster, "src_dbrenamed");
	e->s = pgtest_connect_str(e->src);
	pgtest_exec(e->s, "INSERT INTO public.t VALUES (2, 'after the rename')");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "public.t", e->t, "public.t", "id, v");
	assert_value(e->t, "src_dbrenamed", "SELECT source_database FROM tidemark.progress");
	/* the old name is another database now */
	free(e->src);
	e->src = old_src;
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 3);
	tm_assert_has(out, "but this --source is database \"src_dbrename\"");
	free(out);
	e->src = pgtest_conninfo_db(e->src_cluster, "src_dbrenamed");
	free(old_src);
	pgtest_exec(admin, "DROP DATABASE src_dbrename");
	PQfinish(admin);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_sources_side_by_side),
		cmocka_unit_test(test_another_server_refused),
		cmocka_unit_test(test_source_database_renamed),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
