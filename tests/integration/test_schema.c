/*
 * Integration tests of schema evolution against real clusters, with a
 * workload writing all the while: type changes (widening, and narrowing
 * under each policy), added, renamed and dropped columns, DDL in a
 * multi-statement string and in a DO block, awkward names, a kill -9
 * right after a type change, a change during a snapshot, and the audit log.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#include <cmocka.h>

#include "tm_fixture.h"

static char *
target_type(tm_env *e, const char *table, const char *column)
{
	return pgtest_query_value(e->t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                                " WHERE attrelid = '%s'::regclass AND attname = '%s'"
	                                " AND NOT attisdropped", table, column);
}

static void
assert_target_type(tm_env *e, const char *table, const char *column, const char *expected)
{
	char *t = target_type(e, table, column);

	if (t == NULL || strcmp(t, expected) != 0)
		fail_msg("target %s.%s has type %s, expected %s", table, column, t ? t : "(none)",
		         expected);
	free(t);
}

/* ---- the workload: orders keep coming ---- */

static void
orders_step(PGconn *conn, void *arg, unsigned i)
{
	const char *fractional = arg;

	(void) i;
	/* before the type change the column holds integers; after, the
	 * insert of a fractional value works only once it is numeric */
	if (fractional != NULL && *fractional)
		pgtest_exec(conn, "INSERT INTO orders (total) VALUES (%u.%02u)", i % 1000, i % 100);
	else
		pgtest_exec(conn, "INSERT INTO orders (total) VALUES (%u)", i % 1000);
	if (i % 3 == 0)
		pgtest_exec(conn, "UPDATE orders SET total = total + 1 WHERE id = %u", i / 2 + 1);
}

static void
test_integer_to_numeric_under_load(void **state)
{
	tm_env *e = tm_env_new("tonumeric");
	pgtest_workload *w;
	pgtest_proc *run;
	char fractional = 0;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE orders (id bigserial PRIMARY KEY, total integer NOT NULL);"
	                  "INSERT INTO orders (total) SELECT g FROM generate_series(1, 500) g");
	tm_setup_table(e, "orders");
	run = tm_start_run(e, NULL);
	w = pgtest_workload_start(e->src, orders_step, &fractional);
	tm_sleep_ms(500);
	pgtest_exec(e->s, "ALTER TABLE orders ALTER COLUMN total TYPE numeric(12,2)");
	fractional = 1;
	tm_sleep_ms(800);
	pgtest_workload_stop(w, NULL);
	pgtest_exec(e->s, "INSERT INTO orders (total) VALUES (12.50)");
	tm_stop_and_catch_up(e, run, 120);
	assert_target_type(e, "orders", "total", "numeric(12,2)");
	tm_assert_equal(e, "orders", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM orders WHERE total = 12.50"),
	                 pgtest_query_long(e->s, "SELECT count(*) FROM orders WHERE total = 12.50"));
	tm_env_free(e);
}

static void
test_add_rename_drop_columns(void **state)
{
	tm_env *e = tm_env_new("columns");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE items (id int PRIMARY KEY, qty int, legacy text NOT NULL);"
	                  "INSERT INTO items SELECT g, g, 'old' FROM generate_series(1, 300) g");
	tm_setup_table(e, "items");
	tm_catch_up(e, 60); /* copied before the changes: legacy is filled */
	/* a column of the target's own, whose name the source then gives a column */
	pgtest_exec(e->t, "ALTER TABLE items ADD COLUMN status text DEFAULT 'mine'");
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER TABLE items ADD COLUMN status text NOT NULL DEFAULT 'new';"
	                  "INSERT INTO items (id, qty, legacy) VALUES (1001, 1, 'x')");
	pgtest_exec(e->s, "ALTER TABLE items RENAME COLUMN qty TO quantity;"
	                  "UPDATE items SET quantity = quantity * 10 WHERE id <= 10");
	pgtest_exec(e->s, "ALTER TABLE items DROP COLUMN legacy;"
	                  "INSERT INTO items (id, quantity) VALUES (1002, 2)");
	tm_stop_and_catch_up(e, run, 120);
	/* the dropped column is kept on the target, no longer filled */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM items WHERE legacy IS NULL"), 1);
	pgtest_exec(e->t, "ALTER TABLE items DROP COLUMN legacy");
	/* the target's own column is moved aside with its values */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM items"
	                                         " WHERE \"status (dropped)\" = 'mine'"), 302);
	pgtest_exec(e->t, "ALTER TABLE items DROP COLUMN \"status (dropped)\"");
	tm_assert_equal(e, "items", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM items WHERE status = 'new'"),
	                 302);
	assert_int_equal(tm_run(e, 60, &out, "schema", "public.items", NULL), 0);
	assert_non_null(strstr(out, "version 4"));
	assert_non_null(strstr(out, "quantity"));
	free(out);
	tm_env_free(e);
}

static void
test_ddl_in_script_and_do_block(void **state)
{
	tm_env *e = tm_env_new("script");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, price int, note varchar(10));"
	                  "INSERT INTO t SELECT g, g, 'n' FROM generate_series(1, 100) g");
	tm_setup_table(e, "t");
	run = tm_start_run(e, NULL);
	/* one string: DML, a type change, DML depending on it */
	pgtest_exec(e->s, "INSERT INTO t VALUES (101, 5, 'a'); ALTER TABLE t ALTER COLUMN price TYPE"
	                  " numeric(10,3); UPDATE t SET price = price + 0.125 WHERE id <= 50;"
	                  " INSERT INTO t VALUES (102, 7.5, 'b')");
	pgtest_exec(e->s, "DO $$BEGIN EXECUTE 'ALTER TABLE t ALTER COLUMN note TYPE varchar(200)';"
	                  " UPDATE t SET note = repeat('z', 150) WHERE id = 1; END$$");
	tm_stop_and_catch_up(e, run, 120);
	/* integer -> numeric(10,3) is no widening (integers need 10 digits
	 * before the point): the widen policy holds both, numeric(13,3) */
	assert_target_type(e, "t", "price", "numeric(13,3)");
	assert_target_type(e, "t", "note", "character varying(200)");
	tm_assert_equal(e, "t", "id");
	assert_int_equal(tm_run(e, 60, &out, "ddl-log", "--table", "public.t", NULL), 0);
	assert_non_null(strstr(out, "ALTER_COLUMN_TYPE"));
	/* the DO block by its kind: its text may hold a secret */
	assert_non_null(strstr(out, "/* DO: left out by the capture */"));
	assert_null(strstr(out, "DO $$BEGIN"));
	free(out);
	tm_env_free(e);
}

/* A narrowing change: numeric(12,2) to integer (the source rounds). */
static tm_env *
narrowing(const char *name, const char *policy, int *exit_code, char **output)
{
	tm_env *e = tm_env_new(name);
	char table_policy[64];
	pgtest_proc *run;

	pgtest_exec(e->s, "CREATE TABLE m (id int PRIMARY KEY, amount numeric(12,2));"
	                  "INSERT INTO m SELECT g, g + 0.5 FROM generate_series(1, 200) g");
	tm_setup_table(e, "m");
	tm_catch_up(e, 60); /* copied before the change */
	snprintf(table_policy, sizeof table_policy, "public.m=%s", policy);
	run = tm_start_run(e, "--table-policy", table_policy, NULL);
	pgtest_exec(e->s, "INSERT INTO m VALUES (1000, 7.25)");
	pgtest_exec(e->s, "ALTER TABLE m ALTER COLUMN amount TYPE integer");
	pgtest_exec(e->s, "INSERT INTO m VALUES (1001, 42)");
	if (strcmp(policy, "stop") == 0) {
		*exit_code = pgtest_proc_wait(run, 60);
		*output = strdup(pgtest_proc_output(run));
		pgtest_proc_free(run);
		return e;
	}
	/* the policy is this run's: let it apply everything before stopping it */
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM m WHERE id = 1001", "1", 60));
	tm_stop_and_catch_up(e, run, 120);
	/* the table is copied again after the source rewrote it: wait for it */
	assert_true(pgtest_wait_value(e->t, "SELECT state FROM tidemark.tables", "streaming", 60));
	*exit_code = 0;
	*output = NULL;
	return e;
}

/* The same values, whatever the types' spellings (8 and 8.00). */
static void
assert_same_amounts(tm_env *e)
{
	const char *q = "SELECT string_agg(id || ':' || coalesce(trim_scale(amount::numeric)::text,"
	                " 'null'), ',' ORDER BY id) FROM m";
	char *src = pgtest_query_value(e->s, "%s", q);
	char *dst = pgtest_query_value(e->t, "%s", q);

	assert_non_null(src);
	assert_non_null(dst);
	assert_string_equal(src, dst);
	free(src);
	free(dst);
}

static void
test_narrowing_widen(void **state)
{
	int rc;
	char *out;
	tm_env *e = narrowing("narrow_widen", "widen", &rc, &out);

	(void) state;
	assert_target_type(e, "m", "amount", "numeric(12,2)");
	assert_same_amounts(e);
	tm_env_free(e);
}

static void
test_narrowing_follow(void **state)
{
	int rc;
	char *out;
	tm_env *e = narrowing("narrow_follow", "follow", &rc, &out);

	(void) state;
	assert_target_type(e, "m", "amount", "integer");
	tm_assert_equal(e, "m", "id");
	tm_env_free(e);
}

static void
test_narrowing_stop(void **state)
{
	int rc;
	char *out = NULL;
	tm_env *e = narrowing("narrow_stop", "stop", &rc, &out);

	(void) state;
	assert_int_equal(rc, 6);
	assert_non_null(strstr(out, "stop policy"));
	assert_non_null(strstr(out, "--table-policy"));
	free(out);
	/* nothing at or after the change was applied; the row before it was */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM m WHERE id = 1000"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM m WHERE id = 1001"), 0);
	assert_target_type(e, "m", "amount", "numeric(12,2)");
	/* resumed with another policy, it goes on from there */
	out = NULL;
	assert_int_equal(tm_run(e, 120, &out, "run", "--until-caught-up", "--table-policy",
	                        "public.m=follow", NULL), 0);
	free(out);
	assert_true(pgtest_wait_value(e->t, "SELECT state FROM tidemark.tables", "streaming", 60));
	tm_catch_up(e, 60);
	tm_assert_equal(e, "m", "id");
	tm_env_free(e);
}

/* quarantine: numeric(12,2) becomes numeric(20,0) on the source (not a
 * widening: it rounds); the target keeps numeric(12,2), and new values too
 * large for it are quarantined with their row, key and reason. */
static void
test_narrowing_quarantine(void **state)
{
	tm_env *e = tm_env_new("quarantine");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE q (id int PRIMARY KEY, amount numeric(12,2));"
	                  "INSERT INTO q SELECT g, g + 0.5 FROM generate_series(1, 50) g");
	tm_setup_table(e, "q");
	tm_catch_up(e, 60); /* copied before the change */
	run = tm_start_run(e, "--table-policy", "public.q=quarantine", NULL);
	pgtest_exec(e->s, "ALTER TABLE q ALTER COLUMN amount TYPE numeric(20,0)");
	pgtest_exec(e->s, "INSERT INTO q VALUES (100, 77), (101, 123456789012345);"
	                  "UPDATE q SET amount = 99999999999999 WHERE id = 5");
	/* the policy is this run's: let it apply everything before stopping it */
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) FROM tidemark.quarantine", "2", 60));
	tm_stop_and_catch_up(e, run, 120);
	assert_target_type(e, "q", "amount", "numeric(12,2)");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM q WHERE id = 100 AND amount = 77"),
	                 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM q WHERE id = 101"), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM q WHERE id = 5 AND amount = 5.5"),
	                 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.quarantine"), 2);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.quarantine"
	                                         " WHERE key->>'id' = '101' AND change = 'insert'"
	                                         " AND row_data->>'amount' = '123456789012345'"
	                                         " AND reason LIKE 'column amount:%%'"), 1);
	tm_env_free(e);
}

static void
test_awkward_names(void **state)
{
	tm_env *e = tm_env_new("awkward");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE \"Order Lines\" (\"select\" int PRIMARY KEY, \"my \"\"col\"\"\" int);"
	                  "INSERT INTO \"Order Lines\" VALUES (1, 1), (2, 2)");
	tm_setup_table(e, "public.\"Order Lines\"");
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER TABLE \"Order Lines\" ADD COLUMN \"x\"\"; DROP TABLE y; --\" text"
	                  " DEFAULT 'ok'; ALTER TABLE \"Order Lines\" ALTER COLUMN \"my \"\"col\"\"\""
	                  " TYPE bigint; ALTER TABLE \"Order Lines\" RENAME COLUMN \"my \"\"col\"\"\""
	                  " TO \"from\"; INSERT INTO \"Order Lines\" VALUES (3, 30, 'new')");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "public.\"Order Lines\"", "\"select\"");
	assert_target_type(e, "\"Order Lines\"", "from", "bigint");
	tm_env_free(e);
}

static void
test_kill9_after_type_change(void **state)
{
	tm_env *e = tm_env_new("kill9ddl");
	pgtest_proc *run;
	pgtest_workload *w;
	char fractional = 0;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE orders (id bigserial PRIMARY KEY, total integer NOT NULL)");
	tm_setup_table(e, "orders");
	tm_catch_up(e, 60);
	w = pgtest_workload_start(e->src, orders_step, &fractional);
	run = tm_start_run(e, NULL);
	tm_sleep_ms(300);
	pgtest_exec(e->s, "ALTER TABLE orders ALTER COLUMN total TYPE numeric(12,2)");
	fractional = 1;
	assert_true(pgtest_wait_value(e->t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                                    " WHERE attrelid = 'orders'::regclass AND attname = 'total'",
	                              "numeric(12,2)", 60));
	pgtest_proc_kill(run, SIGKILL);
	pgtest_proc_wait(run, 30);
	pgtest_proc_free(run);
	tm_sleep_ms(300);
	run = tm_start_run(e, NULL);
	tm_sleep_ms(500);
	pgtest_workload_stop(w, NULL);
	tm_stop_and_catch_up(e, run, 120);
	assert_target_type(e, "orders", "total", "numeric(12,2)");
	tm_assert_equal(e, "orders", "id");
	tm_env_free(e);
}

/* A run copying the test's table in 200-row chunks, once it has copied the
 * first. */
static pgtest_proc *
run_mid_copy(tm_env *e)
{
	pgtest_proc *run = tm_spawn(e, "run", "--chunk-rows", "200", NULL);

	assert_true(pgtest_wait_value(e->t, "SELECT snapshot_rows > 0 FROM tidemark.tables", "t", 60));
	return run;
}

/* A type change while the table is being copied: the chunk in flight is
 * read again after the change; rows end exact. */
static void
test_change_during_snapshot(void **state)
{
	tm_env *e = tm_env_new("ddlsnap");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, v integer, pad text);"
	                  "INSERT INTO big SELECT g, g, repeat('p', 50) FROM generate_series(1, 20000) g");
	tm_setup_table(e, "big");
	run = run_mid_copy(e);
	pgtest_exec(e->s, "ALTER TABLE big ALTER COLUMN v TYPE numeric(20,4);"
	                  "UPDATE big SET v = v + 0.0001 WHERE id %% 1000 = 0");
	tm_stop_and_catch_up(e, run, 180);
	assert_target_type(e, "big", "v", "numeric(20,4)");
	tm_assert_equal(e, "big", "id");
	tm_env_free(e);
}

/* A table created later in a replicated schema, with its whole history. */
static void
test_new_table_in_schema(void **state)
{
	tm_env *e = tm_env_new("newtable");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.a (id int PRIMARY KEY)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	free(out);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "BEGIN; CREATE TABLE app.b (id int PRIMARY KEY, v numeric(8,2));"
	                  " INSERT INTO app.b SELECT g, g / 3.0 FROM generate_series(1, 100) g; COMMIT;"
	                  "ALTER TABLE app.b ADD COLUMN w text DEFAULT 'w'; UPDATE app.b SET v = 1 WHERE id = 1");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "app.b", "id");
	tm_env_free(e);
}

/* A table dropped on the source: kept on the target by default, dropped
 * with --drop-tables, kept with a warning when a view of the target's own
 * depends on it (the run went on); either way the audit log says so. */
static void
test_drop_tables(void **state)
{
	tm_env *e = tm_env_new("droptables");
	char *out = NULL;
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE kept (id int PRIMARY KEY); INSERT INTO kept VALUES (1);"
	                  "CREATE TABLE gone (id int PRIMARY KEY); INSERT INTO gone VALUES (1);"
	                  "CREATE TABLE viewed (id int PRIMARY KEY); INSERT INTO viewed VALUES (1);"
	                  "CREATE TABLE after (id int PRIMARY KEY)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "kept", "--table", "gone",
	                        "--table", "viewed", "--table", "after", NULL), 0);
	free(out);
	tm_catch_up(e, 60);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "DROP TABLE kept");
	tm_stop_and_catch_up(e, run, 60);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM kept"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE source_table = 'kept' AND state = 'dropped'"), 1);
	pgtest_exec(e->t, "CREATE VIEW viewed_report AS SELECT count(*) FROM viewed");
	pgtest_exec(e->s, "DROP TABLE gone");
	pgtest_exec(e->s, "DROP TABLE viewed; INSERT INTO after VALUES (1)");
	out = NULL;
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", "--drop-tables", NULL), 0);
	tm_assert_has(out, "Fix: drop what depends on it");
	free(out);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_class WHERE relname = 'gone'"),
	                 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM viewed_report"), 1);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM after"), 1);
	out = NULL;
	assert_int_equal(tm_run(e, 60, &out, "ddl-log", "--json", NULL), 0);
	assert_non_null(strstr(out, "the target keeps it"));
	assert_non_null(strstr(out, "and on the target"));
	assert_non_null(strstr(out, "as it could not be dropped"));
	free(out);
	tm_env_free(e);
}

/* What the capture would write for ALTER TABLE f RENAME v TO hacked. */
static char *
forged_rename(tm_env *e, const char *mac)
{
	long oid = pgtest_query_long(e->s, "SELECT 'f'::regclass::oid::bigint");
	char *json = NULL;

	if (asprintf(&json,
	             "%s%s{\"version\": 1, \"kind\": \"ddl\", \"command_tag\": \"ALTER TABLE\","
	             " \"statement\": \"ALTER TABLE f RENAME v TO hacked\", \"statement_seq\": 1,"
	             " \"user\": \"app\", \"role\": \"app\", \"time\": \"2026-01-01T00:00:00Z\","
	             " \"timezone\": \"UTC\", \"xid\": 1, \"seq\": 1, \"commands\": [],"
	             " \"tables\": [{\"relid\": %ld, \"schema\": \"public\", \"name\": \"f\","
	             " \"relkind\": \"r\", \"replident\": \"d\", \"columns\": ["
	             "{\"attnum\": 1, \"name\": \"id\", \"type\": \"integer\", \"target_type\": \"integer\","
	             " \"type_oid\": 23, \"typmod\": -1, \"not_null\": true, \"key\": true,"
	             " \"has_missing\": false, \"missing\": null, \"default\": false},"
	             " {\"attnum\": 2, \"name\": \"hacked\", \"type\": \"text\", \"target_type\": \"text\","
	             " \"type_oid\": 25, \"typmod\": -1, \"not_null\": false, \"key\": false,"
	             " \"has_missing\": false, \"missing\": null, \"default\": false}]}],"
	             " \"dropped\": [], \"rewrite\": null, \"error\": null}",
	             mac, *mac ? " " : "", oid) < 0)
		fail_msg("out of memory");
	return json;
}

/* Any source role may write a message with the prefix tidemark.ddl: one
 * without the capture key's signature (none, or a wrong one) changes
 * nothing on the target; the capture's own messages still do. */
static void
test_forged_capture_messages_ignored(void **state)
{
	tm_env *e = tm_env_new("forged");
	pgtest_proc *run;
	char *unsigned_msg, *wrong_mac;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE f (id int PRIMARY KEY, v text); INSERT INTO f VALUES (1, 'a')");
	tm_setup_table(e, "f");
	run = tm_start_run(e, NULL);
	unsigned_msg = forged_rename(e, "");
	wrong_mac = forged_rename(e, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	pgtest_exec(e->s, "SELECT pg_logical_emit_message(true, 'tidemark.ddl', $m$%s$m$)", unsigned_msg);
	pgtest_exec(e->s, "SELECT pg_logical_emit_message(true, 'tidemark.ddl', $m$%s$m$)", wrong_mac);
	pgtest_exec(e->s, "INSERT INTO f VALUES (2, 'b')");
	assert_true(pgtest_proc_wait_output(run, "is not signed and is ignored", 60));
	assert_true(pgtest_proc_wait_output(run, "is signed with another key and is ignored", 60));
	pgtest_exec(e->s, "ALTER TABLE f RENAME v TO w; INSERT INTO f VALUES (3, 'c')");
	tm_stop_and_catch_up(e, run, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM information_schema.columns"
	                                         " WHERE table_name = 'f' AND column_name = 'hacked'"), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log"
	                                         " WHERE statement LIKE '%%hacked%%'"), 0);
	tm_assert_equal(e, "f", "id");
	free(unsigned_msg);
	free(wrong_mac);
	tm_env_free(e);
}

/* A table renamed (and moved to another schema) while it is being copied:
 * the copy goes on under its new name. */
static void
test_rename_during_snapshot(void **state)
{
	tm_env *e = tm_env_new("renamesnap");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, v integer, pad text);"
	                  "INSERT INTO big SELECT g, g, repeat('p', 50) FROM generate_series(1, 20000) g;"
	                  "CREATE SCHEMA other");
	tm_setup_table(e, "big");
	run = run_mid_copy(e);
	pgtest_exec(e->s, "ALTER TABLE big RENAME TO big2; UPDATE big2 SET v = -v WHERE id %% 1000 = 0");
	pgtest_exec(e->s, "ALTER TABLE big2 SET SCHEMA other; DELETE FROM other.big2 WHERE id %% 999 = 0");
	tm_stop_and_catch_up(e, run, 180);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE state = 'streaming'"), 1);
	tm_assert_equal(e, "other.big2", "id");
	tm_env_free(e);
}

/* While streaming: the table renamed and moved, its primary key replaced
 * by another on other columns, rows written between each step. */
static void
test_rename_and_key_change_while_streaming(void **state)
{
	tm_env *e = tm_env_new("renamekey");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE acct (id int PRIMARY KEY, code text NOT NULL, v int);"
	                  "INSERT INTO acct SELECT g, 'c' || g, g FROM generate_series(1, 500) g;"
	                  "CREATE SCHEMA ledger");
	tm_setup_table(e, "acct");
	tm_catch_up(e, 60);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER TABLE acct RENAME TO account; UPDATE account SET v = v + 1 WHERE id <= 10");
	pgtest_exec(e->s, "ALTER TABLE account SET SCHEMA ledger; DELETE FROM ledger.account WHERE id = 20");
	pgtest_exec(e->s, "ALTER TABLE ledger.account DROP CONSTRAINT acct_pkey,"
	                  " ADD PRIMARY KEY (code);"
	                  "UPDATE ledger.account SET v = 0 WHERE code = 'c30';"
	                  "INSERT INTO ledger.account VALUES (1000, 'c1000', 1);"
	                  "DELETE FROM ledger.account WHERE code = 'c40'");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "ledger.account", "code");
	tm_env_free(e);
}

/* The primary key replaced by another on other columns while the table is
 * being copied: the copy goes on in the new key's order, missing nothing. */
static void
test_key_change_during_snapshot(void **state)
{
	tm_env *e = tm_env_new("keysnap");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, code text NOT NULL, pad text);"
	                  "INSERT INTO big SELECT g, md5(g::text), repeat('p', 50)"
	                  " FROM generate_series(1, 20000) g");
	tm_setup_table(e, "big");
	run = run_mid_copy(e);
	pgtest_exec(e->s, "ALTER TABLE big DROP CONSTRAINT big_pkey, ADD PRIMARY KEY (code);"
	                  "UPDATE big SET pad = 'changed' WHERE id %% 1000 = 0");
	tm_stop_and_catch_up(e, run, 180);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE state = 'streaming'"), 1);
	tm_assert_equal(e, "big", "id");
	tm_env_free(e);
}

/* Columns added (with a default), renamed and dropped in the middle of a
 * copy: no row is loaded under the wrong columns. */
static void
test_columns_change_during_snapshot(void **state)
{
	tm_env *e = tm_env_new("colsnap");
	const char *q = "SELECT id, a, bee, d FROM big ORDER BY id";
	pgtest_proc *run;
	char *src, *dst;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, a int, b text, c text);"
	                  "INSERT INTO big SELECT g, g, 'b' || g, 'c' FROM generate_series(1, 20000) g");
	tm_setup_table(e, "big");
	run = run_mid_copy(e);
	pgtest_exec(e->s, "ALTER TABLE big ADD COLUMN d int DEFAULT 7; UPDATE big SET d = 8 WHERE id %% 500 = 0");
	pgtest_exec(e->s, "ALTER TABLE big RENAME COLUMN b TO bee; INSERT INTO big VALUES (30000, 1, 'x', 'y', 9)");
	pgtest_exec(e->s, "ALTER TABLE big DROP COLUMN c; UPDATE big SET bee = 'z' WHERE id %% 700 = 0");
	tm_stop_and_catch_up(e, run, 180);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE state = 'streaming'"), 1);
	/* c is kept on the target (the default for dropped columns): compare the rest */
	src = pgtest_query_value(e->s, "SELECT md5(string_agg(r::text, ',')) FROM (%s) r", q);
	dst = pgtest_query_value(e->t, "SELECT md5(string_agg(r::text, ',')) FROM (%s) r", q);
	assert_non_null(src);
	assert_non_null(dst);
	assert_string_equal(src, dst);
	free(src);
	free(dst);
	tm_env_free(e);
}

/* A target catalog from before the rows-read-again, capture-key and
 * target-types migrations: run brings it up to date (and works out the
 * key order of the table registered before), warns that capture messages
 * are not authenticated until setup runs again, and follows DDL; setup
 * again keeps the key. */
static void
test_catalog_upgrade(void **state)
{
	tm_env *e = tm_env_new("upgrade");
	pgtest_proc *run;
	long later;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE u (id int PRIMARY KEY, v int); INSERT INTO u VALUES (1, 1)");
	tm_setup_table(e, "u");
	later = pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.migrations WHERE version >= 3");
	pgtest_exec(e->t, "DROP TABLE tidemark.snapshot_rereads, tidemark.capture_keys,"
	                  " tidemark.partitions, tidemark.excluded_tables, tidemark.types,"
	                  " tidemark.keyless_pending;"
	                  "DROP FUNCTION tidemark.format_type(oid, integer),"
	                  "  tidemark.collation_definition(oid), tidemark.column_match(oid, oid);"
	                  "ALTER TABLE tidemark.tables DROP COLUMN key_order_same,"
	                  "  DROP COLUMN key_order_reason;"
	                  "DROP TABLE tidemark.schema_map; DROP FUNCTION tidemark.map_schema(text, text);"
	                  "DROP INDEX tidemark.tables_target_idx;"
	                  "ALTER TABLE tidemark.progress DROP COLUMN source_system_id,"
	                  "  DROP COLUMN source_database, DROP COLUMN source_address,"
	                  "  DROP COLUMN target_schema, DROP COLUMN created_at;"
	                  "DELETE FROM tidemark.migrations WHERE version >= 3");
	run = tm_start_run(e, NULL);
	assert_true(pgtest_proc_wait_output(run, "not authenticated for this replication", 60));
	pgtest_exec(e->s, "ALTER TABLE u ADD COLUMN w text DEFAULT 'x'; INSERT INTO u VALUES (2, 2, 'y')");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "u", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.migrations"
	                                         " WHERE version >= 3"), later);
	/* the pipeline's source, not recorded by the older catalog: recorded now */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.progress"
	                                         " WHERE source_database = 'src_upgrade'"), 1);
	/* the key order of a table registered before it was recorded: worked out */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE key_order_same"), 1);
	tm_setup_table(e, "u");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.capture_keys"), 1);
	pgtest_exec(e->s, "ALTER TABLE u RENAME COLUMN w TO ww; INSERT INTO u VALUES (3, 3, 'z')");
	tm_catch_up(e, 120);
	tm_assert_equal(e, "u", "id");
	tm_env_free(e);
}

/* The key column's type widened (int to bigint, a table rewrite) in the
 * middle of a copy, with updates around it. */
static void
test_key_type_change_during_snapshot(void **state)
{
	tm_env *e = tm_env_new("keytype");
	pgtest_proc *run;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, v text);"
	                  "INSERT INTO big SELECT g, 'v' FROM generate_series(1, 20000) g");
	tm_setup_table(e, "big");
	run = run_mid_copy(e);
	pgtest_exec(e->s, "UPDATE big SET v = 'before' WHERE id %% 900 = 0;"
	                  "ALTER TABLE big ALTER COLUMN id TYPE bigint;"
	                  "INSERT INTO big VALUES (5000000000, 'big key');"
	                  "UPDATE big SET v = 'after' WHERE id %% 1100 = 0");
	tm_stop_and_catch_up(e, run, 180);
	assert_target_type(e, "big", "id", "bigint");
	tm_assert_equal(e, "big", "id");
	tm_env_free(e);
}

/* In a replicated schema, a table dropped and created again under the same
 * name with other columns (a common migration): the target keeps the old
 * one aside and replicates the new one under the name. */
static void
test_table_recreated_in_schema(void **state)
{
	tm_env *e = tm_env_new("recreate");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY, old text);"
	                  "INSERT INTO app.t VALUES (1, 'old')");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	free(out);
	tm_catch_up(e, 60); /* the old table copied (a drop during its copy: see below) */
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "DROP TABLE app.t; CREATE TABLE app.t (code text PRIMARY KEY, n int);"
	                  "INSERT INTO app.t VALUES ('a', 1), ('b', 2)");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "app.t", "code");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.\"t (dropped)\""
	                                         " WHERE old = 'old'"), 1);
	/* the same while the old table is still being copied (copied: a column
	 * added after its rows, in the transaction that created it) */
	pgtest_exec(e->s, "CREATE TABLE app.u (id int PRIMARY KEY, old text);"
	                  "INSERT INTO app.u SELECT g, 'old' FROM generate_series(1, 20000) g;"
	                  "ALTER TABLE app.u ADD COLUMN note text");
	run = tm_spawn(e, "run", "--chunk-rows", "100", NULL);
	assert_true(pgtest_wait_value(e->t, "SELECT snapshot_rows > 0 FROM tidemark.tables"
	                                    " WHERE source_table = 'u'", "t", 60));
	pgtest_exec(e->s, "DROP TABLE app.u; CREATE TABLE app.u (code text PRIMARY KEY, n int);"
	                  "INSERT INTO app.u VALUES ('a', 1)");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_equal(e, "app.u", "code");
	tm_env_free(e);
}

/* status --json's unlogged_on_source of a table, its names joined by
 * commas (a static buffer; "" for none) */
static const char *
unlogged_on_source(const char *status_json, const char *table)
{
	static char names[256];
	json_t *doc = tm_json_of(status_json);
	size_t k;
	json_t *name;

	names[0] = '\0';
	json_array_foreach(json_object_get(tm_json_table(doc, table), "unlogged_on_source"), k, name)
		snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k > 0 ? "," : "",
		         json_string_value(name));
	json_decref(doc);
	return names;
}

/* SET UNLOGGED on the source (a bulk-load trick; PostgreSQL refuses it
 * only for a table its publication names, not one of a schema's or a
 * partition of a published root): the table's changes leave the WAL until
 * SET LOGGED. Each change of persistence makes the table be copied again,
 * so the target holds the unlogged rows once the table is logged again. A
 * table created UNLOGGED in the schema joins when it is made LOGGED; setup
 * leaves one of the schema out, and refuses one it is given by name. */
static void
test_unlogged_for_a_while(void **state)
{
	tm_env *e = tm_env_new("unlogged");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY, v text);"
	                  "INSERT INTO app.t SELECT g, 'v' || g FROM generate_series(1, 500) g;"
	                  "CREATE TABLE app.p (region int, id int, v text, PRIMARY KEY (region, id))"
	                  " PARTITION BY LIST (region);"
	                  "CREATE TABLE app.p0 PARTITION OF app.p FOR VALUES IN (0);"
	                  "CREATE TABLE app.p1 PARTITION OF app.p FOR VALUES IN (1);"
	                  "INSERT INTO app.p SELECT g %% 2, g, 'v' FROM generate_series(1, 500) g");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	free(out);
	tm_catch_up(e, 60);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER TABLE app.t SET UNLOGGED; ALTER TABLE app.p1 SET UNLOGGED");
	pgtest_exec(e->s, "UPDATE app.t SET v = 'unlogged' WHERE id <= 100;"
	                  "DELETE FROM app.t WHERE id > 450; INSERT INTO app.t VALUES (1000, 'new');"
	                  "UPDATE app.p SET v = 'unlogged' WHERE id <= 100;"
	                  "DELETE FROM app.p WHERE id > 450");
	/* while they stay unlogged, the target keeps the rows of the copy
	 * that SET UNLOGGED made; status shows it, and each run says so at
	 * its start, with the fix */
	tm_stop_and_catch_up(e, run, 120);
	pgtest_exec(e->s, "UPDATE app.t SET v = 'unseen' WHERE id = 1");
	assert_int_equal(tm_run(e, 60, &out, "status", NULL), 0);
	tm_assert_has(out, "app.t is UNLOGGED on the source");
	tm_assert_has(out, "app.p1 is UNLOGGED on the source");
	free(out);
	assert_int_equal(tm_run(e, 60, &out, "status", "--json", NULL), 0);
	assert_string_equal(unlogged_on_source(out, "app.p"), "app.p1");
	assert_string_equal(unlogged_on_source(out, "app.t"), "app.t");
	free(out);
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 0);
	tm_assert_has(out, "app.t is UNLOGGED there");
	tm_assert_has(out, "app.p1, a partition of app.p, is UNLOGGED there");
	tm_assert_has(out, "ALTER TABLE app.p1 SET LOGGED");
	free(out);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.t WHERE v = 'unseen'"), 0);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER TABLE app.t SET LOGGED; ALTER TABLE app.p1 SET LOGGED");
	pgtest_exec(e->s, "UPDATE app.t SET v = 'logged' WHERE id %% 7 = 0;"
	                  "UPDATE app.p SET v = 'logged' WHERE id %% 7 = 0");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_rows_equal(e->s, "app.t", e->t, "app.t", "*");
	tm_assert_rows_equal(e->s, "app.p", e->t, "app.p", "*");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.t WHERE v = 'unlogged'"),
	                 pgtest_query_long(e->s, "SELECT count(*) FROM app.t WHERE v = 'unlogged'"));

	/* created UNLOGGED in the schema: left out until it is made LOGGED,
	 * then it joins and is copied */
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "CREATE UNLOGGED TABLE app.u (id int PRIMARY KEY, v text);"
	                  "INSERT INTO app.u SELECT g, 'a' FROM generate_series(1, 100) g");
	pgtest_exec(e->s, "UPDATE app.u SET v = 'b' WHERE id <= 50");
	assert_true(pgtest_proc_wait_output(run, "app.u in a replicated schema is UNLOGGED", 60));
	pgtest_exec(e->s, "ALTER TABLE app.u SET LOGGED; UPDATE app.u SET v = 'c' WHERE id %% 10 = 0");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_rows_equal(e->s, "app.u", e->t, "app.u", "*");
	assert_int_equal(tm_run(e, 60, NULL, "verify", NULL), 0);
	/* setup again: one of the schema left out with a warning, one named
	 * refused with the fix */
	pgtest_exec(e->s, "CREATE UNLOGGED TABLE app.scratch (id int PRIMARY KEY);"
	                  "CREATE UNLOGGED TABLE public.scratch (id int PRIMARY KEY)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	tm_assert_has(out, "table app.scratch is UNLOGGED");
	free(out);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"
	                                         " WHERE source_table = 'scratch'"), 0);
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "public.scratch", NULL), 3);
	tm_assert_has(out, "is UNLOGGED");
	tm_assert_has(out, "SET LOGGED");
	free(out);
	tm_env_free(e);
}

/* Schema changes the capture did not see (made while its event trigger
 * was disabled): a column added with a default (which the source wrote
 * into every row), a type changed with USING, a column renamed, a NOT
 * NULL column dropped, the primary key moved to other columns (which
 * let two rows share the old key's value), and a column added to a
 * partitioned table and to a table without a key (REPLICA IDENTITY FULL,
 * rows with duplicates). The stream's description of
 * each table then differs from its schema version in force: the table is
 * set aside, registered again from the source's definition and copied
 * again, and equals the source. A table the DDL did not touch is left
 * alone. Before, the first row of an added column stopped run with a
 * wrong fix ("the target table was altered by hand"), a rename or a type
 * change went unseen, and the moved key merged two rows. */
static void
test_uncaptured_column_changes(void **state)
{
	static const char *const changed[] = {"app.added", "app.retyped", "app.renamed",
	                                      "app.dropped", "app.rekeyed", "app.parted"};
	tm_env *e = tm_env_new("uncaptured");
	pgtest_proc *run;
	char *out = NULL, name[64];

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app;"
	                  "CREATE TABLE app.added (id int PRIMARY KEY, v text);"
	                  "CREATE TABLE app.retyped (id int PRIMARY KEY, v int);"
	                  "CREATE TABLE app.renamed (id int PRIMARY KEY, v text);"
	                  "CREATE TABLE app.dropped (id int PRIMARY KEY, v text, gone int NOT NULL);"
	                  "CREATE TABLE app.rekeyed (id int PRIMARY KEY, v text);"
	                  "CREATE TABLE app.parted (id int PRIMARY KEY, v text)"
	                  " PARTITION BY RANGE (id);"
	                  "CREATE TABLE app.parted_lo PARTITION OF app.parted"
	                  " FOR VALUES FROM (0) TO (150);"
	                  "CREATE TABLE app.parted_hi PARTITION OF app.parted"
	                  " FOR VALUES FROM (150) TO (2000);"
	                  "CREATE TABLE app.loose (id int, v text);"
	                  "ALTER TABLE app.loose REPLICA IDENTITY FULL;"
	                  "INSERT INTO app.loose SELECT g %% 100, 'v' FROM generate_series(1, 300) g;"
	                  "CREATE TABLE app.quiet (id int PRIMARY KEY, v text)");
	for (int i = 0; i < 6; i++)
		pgtest_exec(e->s, "INSERT INTO %s SELECT g, %s FROM generate_series(1, 300) g",
		            changed[i], i == 1 ? "g" : i == 3 ? "'v' || g, g" : "'v' || g");
	pgtest_exec(e->s, "INSERT INTO app.quiet SELECT g, 'q' FROM generate_series(1, 300) g");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	free(out);
	tm_catch_up(e, 60);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER EVENT TRIGGER tidemark_ddl_end DISABLE;"
	                  "ALTER TABLE app.added ADD COLUMN w int DEFAULT 7;"
	                  "ALTER TABLE app.retyped ALTER COLUMN v TYPE text USING 'n' || v;"
	                  "ALTER TABLE app.renamed RENAME COLUMN v TO label;"
	                  "ALTER TABLE app.dropped DROP COLUMN gone;"
	                  "ALTER TABLE app.rekeyed DROP CONSTRAINT rekeyed_pkey,"
	                  " ADD PRIMARY KEY (id, v);"
	                  "ALTER TABLE app.parted ADD COLUMN w int DEFAULT 4;"
	                  "ALTER TABLE app.loose ADD COLUMN w int DEFAULT 4;"
	                  "ALTER EVENT TRIGGER tidemark_ddl_end ENABLE ALWAYS");
	pgtest_exec(e->s, "INSERT INTO app.added VALUES (1000, 'new', 8);"
	                  "UPDATE app.retyped SET v = v || '!' WHERE id <= 10;"
	                  "UPDATE app.renamed SET label = 'l' WHERE id %% 3 = 0;"
	                  "INSERT INTO app.dropped VALUES (1000, 'new');"
	                  "INSERT INTO app.rekeyed VALUES (1, 'same id'), (2, 'same id');"
	                  "INSERT INTO app.parted VALUES (1000, 'new', 5);"
	                  "UPDATE app.parted SET w = 6 WHERE id %% 50 = 0;"
	                  "UPDATE app.loose SET w = 7 WHERE id = 5;"
	                  "INSERT INTO app.loose VALUES (1, 'v', 8);"
	                  "UPDATE app.quiet SET v = 'r' WHERE id <= 5");
	pgtest_exec(e->s, "UPDATE app.added SET w = 9 WHERE id <= 20;"
	                  "DELETE FROM app.dropped WHERE id > 290");
	if (!pgtest_proc_wait_output(run, "a schema change was not captured", 60))
		fail_msg("no table was set aside:\n%s", pgtest_proc_output(run));
	tm_stop_and_catch_up(e, run, 120);
	for (int i = 0; i < 6; i++) {
		tm_assert_rows_equal(e->s, changed[i], e->t, changed[i], "*");
		snprintf(name, sizeof name, "SELECT to_regclass('app.\"%s (set aside)\"') IS NOT NULL",
		         changed[i] + 4);
		tm_assert_value(e->t, name, "t");
	}
	tm_assert_multiset_equal(e, "app.loose", "id, v, w");
	tm_assert_value(e->t, "SELECT to_regclass('app.\"loose (set aside)\"') IS NOT NULL", "t");
	tm_assert_rows_equal(e->s, "app.quiet", e->t, "app.quiet", "*");
	tm_assert_value(e->t, "SELECT to_regclass('app.\"quiet (set aside)\"') IS NULL", "t");
	assert_int_equal(tm_run(e, 60, NULL, "verify", NULL), 0);
	tm_env_free(e);
}

/* A typed table (CREATE TABLE t OF type) follows its type: ALTER TYPE ...
 * ADD / RENAME / ALTER ATTRIBUTE ... CASCADE is captured as the table's
 * change (source migration 017) and followed on the target as the same
 * ALTER TABLE would be, without setting the table aside; the type change
 * rewrote the table on the source, which is copied again. */
static void
test_typed_table_follows_its_type(void **state)
{
	tm_env *e = tm_env_new("typed");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TYPE app.pt AS (id int, v text);"
	                  "CREATE TABLE app.typed OF app.pt (PRIMARY KEY (id));"
	                  "INSERT INTO app.typed SELECT g, 'v' || g FROM generate_series(1, 300) g");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	free(out);
	tm_catch_up(e, 60);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER TYPE app.pt ADD ATTRIBUTE w int CASCADE;"
	                  "UPDATE app.typed SET w = id WHERE id <= 5");
	pgtest_exec(e->s, "ALTER TYPE app.pt RENAME ATTRIBUTE v TO label CASCADE;"
	                  "UPDATE app.typed SET label = 'l' WHERE id %% 3 = 0");
	pgtest_exec(e->s, "ALTER TYPE app.pt ALTER ATTRIBUTE w TYPE text CASCADE;"
	                  "UPDATE app.typed SET w = 'w' || w WHERE id <= 3");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_rows_equal(e->s, "app.typed", e->t, "app.typed", "id, label, w");
	tm_assert_value(e->t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
	                      " WHERE attrelid = 'app.typed'::regclass AND attname = 'w'", "text");
	tm_assert_value(e->t, "SELECT to_regclass('app.\"typed (set aside)\"') IS NULL", "t");
	tm_env_free(e);
}

/* The capture's event triggers disabled, enabled without ALWAYS or
 * dropped by hand: run says so within its publication reading's interval
 * (and again when what is wrong changes), status shows it, and the next
 * setup makes them whole, saying what it mended; run then says they are
 * whole again. A capture older than this tidemark's is said by run and
 * status until setup installs the rest. */
static void
test_capture_triggers_watched(void **state)
{
	tm_env *e = tm_env_new("capwatch");
	pgtest_proc *run;
	char *out = NULL;
	json_t *doc;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY, v text);"
	                  "INSERT INTO app.t VALUES (1, 'a')");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	free(out);
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "ALTER EVENT TRIGGER tidemark_ddl_end DISABLE");
	if (!pgtest_proc_wait_output(run, "event triggers are not whole: tidemark_ddl_end is disabled",
	                             60))
		fail_msg("a disabled capture was not said:\n%s", pgtest_proc_output(run));
	assert_int_equal(tm_run(e, 60, &out, "status", NULL), 0);
	tm_assert_has(out, "DDL capture: event trigger tidemark_ddl_end is disabled");
	free(out);
	pgtest_exec(e->s, "ALTER EVENT TRIGGER tidemark_sql_drop ENABLE;"
	                  "DROP EVENT TRIGGER tidemark_table_rewrite");
	if (!pgtest_proc_wait_output(run, "tidemark_table_rewrite is missing", 60))
		fail_msg("a change of what is wrong was not said:\n%s", pgtest_proc_output(run));
	assert_int_equal(tm_run(e, 60, &out, "status", "--json", NULL), 0);
	doc = tm_json_of(out);
	assert_int_equal(json_array_size(json_object_get(doc, "capture_gaps")), 3);
	json_decref(doc);
	free(out);
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	tm_assert_has(out, "tidemark_table_rewrite made again");
	tm_assert_has(out, "tidemark_ddl_end was disabled: enabled ALWAYS");
	tm_assert_has(out, "tidemark_sql_drop fired in sessions of one replication role only");
	free(out);
	tm_assert_value(e->s, "SELECT count(*) FROM pg_event_trigger WHERE evtname LIKE 'tidemark%'"
	                      " AND evtenabled = 'A'", "4");
	if (!pgtest_proc_wait_output(run, "event triggers are all enabled again", 60))
		fail_msg("the mending was not said:\n%s", pgtest_proc_output(run));
	/* captured again: a column added now is followed, not set aside */
	pgtest_exec(e->s, "ALTER TABLE app.t ADD COLUMN w int DEFAULT 3;"
	                  "INSERT INTO app.t VALUES (2, 'b', 4)");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_rows_equal(e->s, "app.t", e->t, "app.t", "*");
	tm_assert_value(e->t, "SELECT to_regclass('app.\"t (set aside)\"') IS NULL", "t");
	/* a capture an older tidemark installed (its last two migrations
	 * missing): said by run and status, and brought up to date by setup */
	pgtest_exec(e->s, "DELETE FROM tidemark.migrations"
	                  " WHERE version > (SELECT max(version) - 2 FROM tidemark.migrations)");
	assert_int_equal(tm_run(e, 60, &out, "status", NULL), 0);
	tm_assert_has(out, "DDL capture: installed by an older tidemark (migration ");
	free(out);
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 0);
	tm_assert_has(out, "older than this tidemark's");
	free(out);
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	free(out);
	assert_int_equal(tm_run(e, 60, &out, "status", NULL), 0);
	if (strstr(out, "older tidemark") != NULL)
		fail_msg("setup did not bring the capture up to date:\n%s", out);
	free(out);
	tm_env_free(e);
}


/* A generated column in a table's replica identity (REPLICA IDENTITY FULL
 * over a table with a stored generated column): PostgreSQL 18 and later
 * refuse the table's UPDATE and DELETE once it is published, since the
 * publication does not send the column. setup refuses such a table there,
 * changing nothing, with the fix; before 18 it is replicated by whole rows. */
static void
test_generated_column_in_replica_identity(void **state)
{
	tm_env *e = tm_env_new("genident");
	bool refused = pgtest_query_long(e->s, "SELECT current_setting('server_version_num')::int")
	               >= 180000;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE g (id int, s int GENERATED ALWAYS AS (id * 2) STORED, v text);"
	                  "ALTER TABLE g REPLICA IDENTITY FULL;"
	                  "INSERT INTO g (id, v) VALUES (1, 'a'), (2, 'b')");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "public.g", NULL), refused ? 3 : 0);
	if (refused) {
		tm_assert_has(out, "with a generated column, which logical decoding does not send: once");
		tm_assert_has(out, "REPLICA IDENTITY DEFAULT;");
		free(out);
		/* nothing was published: the application's writes go on */
		pgtest_exec(e->s, "UPDATE g SET v = 'x' WHERE id = 1; DELETE FROM g WHERE id = 2");
		/* the fix: a key over columns that are not generated */
		pgtest_exec(e->s, "ALTER TABLE g ADD PRIMARY KEY (id), REPLICA IDENTITY DEFAULT");
		assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "public.g", NULL), 0);
	}
	free(out);
	tm_catch_up(e, 60);
	pgtest_exec(e->s, "UPDATE g SET v = 'y' WHERE id = 1; INSERT INTO g (id, v) VALUES (3, 'c');"
	                  "DELETE FROM g WHERE id = 2");
	tm_catch_up(e, 60);
	tm_assert_multiset_equal(e, "public.g", "id, s, v");
	tm_env_free(e);
}

/* A table without columns (CREATE TABLE t (), or only generated ones):
 * its rows carry nothing but their number. It is not
 * replicated until it has a column, then it joins with all its rows; setup
 * leaves one of a schema out with a warning and refuses one it is given by
 * name. (It had been taken for a table gone from the source: copied as
 * nothing, set aside as dropped on the target, its rows never there.) */
static void
test_table_without_columns(void **state)
{
	tm_env *e = tm_env_new("nocolumns");
	pgtest_proc *run;
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.t (id int PRIMARY KEY, v text);"
	                  "INSERT INTO app.t VALUES (1, 'a');"
	                  "CREATE TABLE app.e (); ALTER TABLE app.e REPLICA IDENTITY FULL;"
	                  "INSERT INTO app.e DEFAULT VALUES; INSERT INTO app.e DEFAULT VALUES;"
	                  "CREATE TABLE app.g (n int GENERATED ALWAYS AS (1) STORED);"
	                  "ALTER TABLE app.g REPLICA IDENTITY FULL; INSERT INTO app.g DEFAULT VALUES;"
	                  "CREATE TABLE public.named (); ALTER TABLE public.named REPLICA IDENTITY FULL");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "public.named", NULL), 3);
	tm_assert_has(out, "table public.named has no columns");
	tm_assert_has(out, "ADD COLUMN");
	free(out);
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	tm_assert_has(out, "table app.e has no columns");
	tm_assert_has(out, "table app.g has no columns");
	free(out);
	tm_catch_up(e, 60);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.tables"), 1);

	/* created without columns while run streams: left out, said; then
	 * given a column, it joins with every row, and so do the others */
	run = tm_start_run(e, NULL);
	pgtest_exec(e->s, "CREATE TABLE app.n (); ALTER TABLE app.n REPLICA IDENTITY FULL;"
	                  "INSERT INTO app.n DEFAULT VALUES; INSERT INTO app.n DEFAULT VALUES;"
	                  "INSERT INTO app.e DEFAULT VALUES");
	assert_true(pgtest_proc_wait_output(run, "new table app.n in a replicated schema has no "
	                                         "columns", 60));
	pgtest_exec(e->s, "ALTER TABLE app.n ADD COLUMN v int; INSERT INTO app.n VALUES (7);"
	                  "ALTER TABLE app.e ADD COLUMN v int; UPDATE app.e SET v = 1;"
	                  "ALTER TABLE app.g ADD COLUMN v text; INSERT INTO app.g (v) VALUES ('x');"
	                  "DELETE FROM app.n WHERE v IS NULL AND ctid = (SELECT min(ctid) FROM app.n)");
	tm_stop_and_catch_up(e, run, 120);
	tm_assert_rows_equal(e->s, "app.n", e->t, "app.n", "v");
	tm_assert_rows_equal(e->s, "app.e", e->t, "app.e", "v");
	tm_assert_rows_equal(e->s, "app.g", e->t, "app.g", "n, v");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.n"), 2);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.e"), 3);
	/* nothing set aside on the target as a table the source dropped */
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_tables"
	                                         " WHERE tablename LIKE '%%dropped%%'"), 0);
	assert_int_equal(tm_run(e, 60, NULL, "verify", NULL), 0);

	/* a replicated table whose every column is dropped goes on (its rows
	 * counted), and copied again it is read as such, not as a table gone
	 * from the source (it had been set aside as dropped, its rows left) */
	pgtest_exec(e->s, "ALTER TABLE app.t REPLICA IDENTITY FULL;"
	                  "ALTER TABLE app.t DROP CONSTRAINT t_pkey;"
	                  "ALTER TABLE app.t DROP COLUMN v; ALTER TABLE app.t DROP COLUMN id;"
	                  "INSERT INTO app.t DEFAULT VALUES");
	tm_catch_up(e, 60);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.t"), 2);
	pgtest_exec(e->s, "INSERT INTO app.t DEFAULT VALUES");
	assert_int_equal(tm_run(e, 60, NULL, "snapshot", "app.t", NULL), 0);
	tm_catch_up(e, 60);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.t"), 3);
	tm_assert_value(e->t, "SELECT state FROM tidemark.tables WHERE source_table = 't'",
	                "streaming");
	tm_env_free(e);
}

/* DDL in a session with session_replication_role = replica (a data load
 * that skips foreign keys and triggers): the capture's event triggers fire
 * there too (ENABLE ALWAYS, source migration 012), so the change is
 * followed like any other. */
static void
test_ddl_in_replica_role_session(void **state)
{
	tm_env *e = tm_env_new("replicarole");
	PGconn *load = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v text);"
	                  "INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 50) g");
	tm_setup_table(e, "t");
	tm_catch_up(e, 60);
	load = pgtest_connect_str(e->src);
	pgtest_exec(load, "SET session_replication_role = replica;"
	                  "ALTER TABLE t ADD COLUMN z int DEFAULT 7;"
	                  "ALTER TABLE t RENAME COLUMN v TO vv;"
	                  "UPDATE t SET z = 8 WHERE id < 5; INSERT INTO t VALUES (100, 'new', 9)");
	PQfinish(load);
	tm_catch_up(e, 60);
	tm_assert_rows_equal(e->s, "public.t", e->t, "public.t", "id, vv, z");
	assert_int_equal(tm_run(e, 60, NULL, "verify", NULL), 0);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_integer_to_numeric_under_load),
		cmocka_unit_test(test_add_rename_drop_columns),
		cmocka_unit_test(test_ddl_in_script_and_do_block),
		cmocka_unit_test(test_narrowing_widen),
		cmocka_unit_test(test_narrowing_follow),
		cmocka_unit_test(test_narrowing_stop),
		cmocka_unit_test(test_narrowing_quarantine),
		cmocka_unit_test(test_awkward_names),
		cmocka_unit_test(test_kill9_after_type_change),
		cmocka_unit_test(test_change_during_snapshot),
		cmocka_unit_test(test_rename_during_snapshot),
		cmocka_unit_test(test_columns_change_during_snapshot),
		cmocka_unit_test(test_key_change_during_snapshot),
		cmocka_unit_test(test_key_type_change_during_snapshot),
		cmocka_unit_test(test_rename_and_key_change_while_streaming),
		cmocka_unit_test(test_new_table_in_schema),
		cmocka_unit_test(test_drop_tables),
		cmocka_unit_test(test_table_recreated_in_schema),
		cmocka_unit_test(test_unlogged_for_a_while),
		cmocka_unit_test(test_uncaptured_column_changes),
		cmocka_unit_test(test_capture_triggers_watched),
		cmocka_unit_test(test_typed_table_follows_its_type),
		cmocka_unit_test(test_generated_column_in_replica_identity),
		cmocka_unit_test(test_table_without_columns),
		cmocka_unit_test(test_ddl_in_replica_role_session),
		cmocka_unit_test(test_forged_capture_messages_ignored),
		cmocka_unit_test(test_catalog_upgrade),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
