/*
 * Integration tests of net changes (apply.h): a group applies each key's
 * last state. Hot keys updated in thousands of transactions, unchanged
 * TOAST values, deletes and inserts again, key moves, TRUNCATE in the
 * middle and a copy under the same writes: the target equals the source
 * (plain SQL), and a trigger on the target counts the row writes the apply
 * made, which must be far fewer than the source's.
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

#define HOT_TXS 3000

/* On the source: HOT_TXS transactions, each updating one of 5 hot rows
 * (a third of them only n, leaving the TOASTed text unchanged), every
 * 100th deleting a hot row and inserting it again, every 250th moving a
 * key away and back in two transactions. */
static void
hot_workload(tm_env *e)
{
	pgtest_exec(e->s,
	            "CREATE PROCEDURE hot(txs int) LANGUAGE plpgsql AS $$"
	            " BEGIN FOR i IN 1 .. txs LOOP"
	            "   IF i %% 3 = 0 THEN UPDATE h SET n = n + 1 WHERE id = i %% 5;"
	            "   ELSE UPDATE h SET n = n + 1, big = repeat(i::text, 3000) WHERE id = i %% 5;"
	            "   END IF;"
	            "   IF i %% 100 = 0 THEN DELETE FROM h WHERE id = (i / 100) %% 5;"
	            "     INSERT INTO h VALUES ((i / 100) %% 5, i, repeat('r', 9000)); END IF;"
	            "   COMMIT;"
	            "   IF i %% 250 = 0 THEN UPDATE h SET id = id + 100 WHERE id = 2; COMMIT;"
	            "     UPDATE h SET id = id - 100 WHERE id = 102; COMMIT; END IF;"
	            " END LOOP; END $$");
	/* alone: a CALL that commits cannot share a multi-statement string */
	pgtest_exec(e->s, "CALL hot(%d)", HOT_TXS);
}

static void
create_hot(tm_env *e)
{
	pgtest_exec(e->s, "CREATE TABLE h (id int PRIMARY KEY, n int, big text);"
	                  "ALTER TABLE h ALTER big SET STORAGE EXTERNAL;"
	                  "INSERT INTO h SELECT g, 0, repeat('b', 9000) FROM generate_series(0, 4) g");
}

/* A trigger on the target counting the rows the apply writes into h, and
 * the most source updates one write of a row took in (its n counts them). */
static void
count_target_writes(tm_env *e)
{
	pgtest_exec(e->t, "CREATE TABLE writes (n bigint, most int); INSERT INTO writes VALUES (0, 0);"
	                  "CREATE FUNCTION count_write() RETURNS trigger LANGUAGE plpgsql AS"
	                  " $$ BEGIN UPDATE writes SET n = n + 1, most = greatest(most,"
	                  "  CASE WHEN TG_OP = 'UPDATE' THEN NEW.n - OLD.n END); RETURN NULL; END $$;"
	                  "CREATE TRIGGER count_write AFTER INSERT OR UPDATE OR DELETE ON h"
	                  " FOR EACH ROW EXECUTE FUNCTION count_write();"
	                  "ALTER TABLE h ENABLE ALWAYS TRIGGER count_write");
}

static void
assert_h_equal(tm_env *e)
{
	tm_assert_rows_equal(e->s, "public.h", e->t, "public.h", "id, n, md5(big)");
}

static void
test_hot_keys_netted(void **state)
{
	tm_env *e = tm_env_new("net_hot");
	long writes, most;

	(void) state;
	create_hot(e);
	tm_setup_table(e, "public.h");
	tm_catch_up(e, 120);
	count_target_writes(e);
	hot_workload(e);
	pgtest_exec(e->s, "TRUNCATE h; INSERT INTO h SELECT g, -1, 'after' FROM generate_series(0, 4) g");
	pgtest_exec(e->s, "DROP PROCEDURE hot");
	hot_workload(e);
	tm_catch_up(e, 300);
	assert_h_equal(e);
	writes = pgtest_query_long(e->t, "SELECT n FROM writes");
	most = pgtest_query_long(e->t, "SELECT most FROM writes");
	print_message("%ld rows written for %d source transactions, up to %ld updates in one\n",
	              writes, 2 * HOT_TXS, most);
	/* the source wrote a row or more in each of its 2 x HOT_TXS
	 * transactions; a group of whole transactions writes each hot key once.
	 * How many a group holds depends on how fast the source decodes (while
	 * it falls behind, groups end at each pause of the stream): under load
	 * they can be a few each, so the bound is a row per source transaction,
	 * and some row written once for several of its updates. */
	if (writes >= 2 * HOT_TXS || most < 2)
		fail_msg("the apply wrote %ld rows for %d source transactions, at most %ld updates of a"
		         " row in one: not netted", writes, 2 * HOT_TXS, most);
	tm_env_free(e);
}

/* --no-net-changes: every change applied, the same result. */
static void
test_each_change(void **state)
{
	tm_env *e = tm_env_new("net_each");
	char *out = NULL;
	int rc;

	(void) state;
	create_hot(e);
	tm_setup_table(e, "public.h");
	tm_catch_up(e, 120);
	count_target_writes(e);
	pgtest_exec(e->s, "CREATE PROCEDURE few() LANGUAGE plpgsql AS $$ BEGIN"
	                  " FOR i IN 1 .. 200 LOOP UPDATE h SET n = n + 1 WHERE id = i %% 5; COMMIT;"
	                  " END LOOP; END $$");
	pgtest_exec(e->s, "CALL few()");
	rc = tm_run(e, 120, &out, "run", "--until-caught-up", "--no-net-changes", NULL);
	if (rc != 0)
		fail_msg("run exited %d:\n%s", rc, out);
	free(out);
	assert_h_equal(e);
	assert_int_equal(pgtest_query_long(e->t, "SELECT n FROM writes"), 200);
	tm_env_free(e);
}

/* The hot writes while a larger table is copied in small chunks: the
 * chunks' windows see every change, the loads meet the target holding
 * the changes before them. */
static void
test_netted_during_copy(void **state)
{
	tm_env *e = tm_env_new("net_copy");
	pgtest_proc *run;

	(void) state;
	create_hot(e);
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, v int, pad text);"
	                  "INSERT INTO big SELECT g, 0, repeat('p', 200) FROM generate_series(1, 30000) g;"
	                  "CREATE PROCEDURE churn(txs int) LANGUAGE plpgsql AS $$ BEGIN"
	                  " FOR i IN 1 .. txs LOOP"
	                  "   UPDATE big SET v = v + 1 WHERE id = 1 + (i * 7919) %% 30000;"
	                  "   UPDATE big SET v = v + 1 WHERE id = 1 + (i %% 50);"
	                  "   IF i %% 40 = 0 THEN DELETE FROM big WHERE id = 1 + (i * 31) %% 30000;"
	                  "     INSERT INTO big VALUES (30000 + i, i, 'new'); END IF;"
	                  "   COMMIT; END LOOP; END $$");
	tm_run(e, 60, NULL, "setup", "--table", "public.h", "--table", "public.big", NULL);
	run = tm_start_run(e, "--chunk-rows", "500", NULL);
	pgtest_exec(e->s, "CALL churn(3000)");
	hot_workload(e);
	tm_stop_and_catch_up(e, run, 300);
	assert_h_equal(e);
	tm_assert_rows_equal(e->s, "public.big", e->t, "public.big", "id, v, pad");
	tm_env_free(e);
}

/* A workload of inserts, updates of a few hot rows and deletes, with
 * tidemark killed (-9) four times while it nets them: the target equals
 * the source (the rows of a group are netted and committed together with
 * their position, or not at all). */
static void
hot_step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	switch (i % 4) {
	case 0:
		pgtest_exec(conn, "INSERT INTO ev (kind, payload) SELECT %u, repeat('p', %u)"
		                  " FROM generate_series(1, 3)", i % 7, i % 300);
		break;
	case 1:
	case 2:
		pgtest_exec(conn, "UPDATE ev SET kind = kind + 1 WHERE id <= 5 OR id %% 97 = %u",
		            i % 97);
		break;
	default:
		pgtest_exec(conn, "DELETE FROM ev WHERE id IN (SELECT id FROM ev WHERE id > 5"
		                  " ORDER BY random() LIMIT 2)");
	}
}

static void
test_netted_through_kill9(void **state)
{
	tm_env *e = tm_env_new("net_kill9");
	pgtest_workload *w;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE ev (id bigserial PRIMARY KEY, kind int, payload text);"
	                  "INSERT INTO ev (kind) SELECT 0 FROM generate_series(1, 5)");
	tm_setup_table(e, "public.ev");
	tm_catch_up(e, 60);
	w = pgtest_workload_start(e->src, hot_step, NULL);
	tm_kill9_runs(e, 4, 500, NULL);
	pgtest_workload_stop(w, NULL);
	tm_catch_up(e, 180);
	tm_assert_rows_equal(e->s, "public.ev", e->t, "public.ev", "id, kind, payload");
	tm_env_free(e);
}

/* ---- deletes and partial updates of many rows, over key types ---- */

/* A table of the matrix: its key columns, its key, and the key's values
 * for row g (SQL). Each table also has g, n and two TOASTed columns. */
typedef struct key_case {
	const char *name;
	const char *key_cols;
	const char *key;
	const char *key_of_g;
} key_case;

static const key_case key_cases[] = {
	{"k_int", "k int", "k", "g"},
	{"k_bigint", "k bigint", "k", "g * 10000000000"},
	{"k_text", "k text COLLATE nd", "k", "'Key-' || g"},
	{"k_char", "k char(5)", "k", "'c' || g"},
	{"k_inet", "k inet", "k",
	 "(CASE WHEN g % 2 = 0 THEN '10.0.' || g / 256 || '.' || g % 256"
	 " ELSE '192.168.' || g / 256 || '.' || g % 256 || '/24' END)::inet"},
	{"k_bool", "b boolean, i int", "b, i", "g % 2 = 0, g"},
	{"k_uuid", "k uuid", "k", "md5(g::text)::uuid"},
	{"k_numeric", "k numeric", "k", "(g || '.' || g % 10 || '0')::numeric"},
	{"k_ts", "k timestamptz", "k",
	 "timestamptz '2024-03-31 01:30:00+00' + g * interval '1 hour 1.25 seconds'"},
	{"k_enum", "k lbl", "k", "('l' || g)::lbl"},
	{"k_domain", "k lbl_d", "k", "('l' || g)::lbl"},
	{"k_citext", "k citext", "k", "'Cit' || g"},
	{"k_two", "a int, b text", "a, b", "g % 7, 'b' || g"},
};
#define NKEY_CASES (sizeof key_cases / sizeof key_cases[0])
#define KEY_ROWS 300

/* The types and collation the matrix needs: a non-deterministic
 * collation, an enum of more labels than rows (declared in reverse, so
 * that its order is not its labels'), a domain over it, citext. */
static void
create_key_types(tm_env *e)
{
	pgtest_exec(e->s, "CREATE EXTENSION citext;"
	                  "CREATE COLLATION nd (provider = icu, locale = 'und-u-ks-level2',"
	                  "  deterministic = false);"
	                  "DO $$ BEGIN EXECUTE 'CREATE TYPE lbl AS ENUM (' || (SELECT"
	                  "  string_agg(quote_literal('l' || g), ', ' ORDER BY g DESC)"
	                  "  FROM generate_series(1, 1000) g) || ')'; END $$;"
	                  "CREATE DOMAIN lbl_d AS lbl");
}

static void
create_key_case(tm_env *e, const key_case *c)
{
	pgtest_exec(e->s, "CREATE TABLE %s (%s, g int NOT NULL, n int, b1 text, b2 text,"
	                  "  PRIMARY KEY (%s));"
	                  "ALTER TABLE %s ALTER b1 SET STORAGE EXTERNAL, ALTER b2 SET STORAGE EXTERNAL;"
	                  "INSERT INTO %s SELECT %s, g, g, repeat(md5(g::text), 80),"
	                  "  repeat(md5((g + 1000)::text), 80) FROM generate_series(1, %d) g",
	            c->name, c->key_cols, c->key, c->name, c->name, c->key_of_g, KEY_ROWS);
}

/* One source transaction of partial updates of two sets of columns (the
 * TOASTed ones unsent), whole rows, deletes (some of rows updated before),
 * rows deleted and inserted again, new rows, partials onto rows and onto
 * partials; then deletes one per transaction. */
static void
key_case_workload(tm_env *e, const key_case *c)
{
	pgtest_exec(e->s, "BEGIN;"
	                  "UPDATE %s SET n = n + 1 WHERE g %% 3 = 0;"
	                  "UPDATE %s SET n = n + 10, b2 = repeat(md5((g + 2000)::text), 80)"
	                  "  WHERE g %% 5 = 1;"
	                  "UPDATE %s SET b1 = repeat(md5((g + 3000)::text), 80),"
	                  "  b2 = repeat(md5((g + 4000)::text), 80) WHERE g %% 7 = 2;"
	                  "DELETE FROM %s WHERE g %% 4 = 0;"
	                  "DELETE FROM %s WHERE g %% 11 = 3;"
	                  "INSERT INTO %s SELECT %s, g, -g, 'again', NULL FROM generate_series(1, %d) g"
	                  "  WHERE g %% 11 = 3 AND g %% 4 <> 0;"
	                  "INSERT INTO %s SELECT %s, g, g, repeat(md5(g::text), 80), NULL"
	                  "  FROM generate_series(%d, %d) g;"
	                  "UPDATE %s SET n = n + 100 WHERE g %% 13 = 5;"
	                  "COMMIT",
	            c->name, c->name, c->name, c->name, c->name, c->name, c->key_of_g, KEY_ROWS,
	            c->name, c->key_of_g, KEY_ROWS + 1, KEY_ROWS + 40, c->name);
	pgtest_exec(e->s, "CREATE PROCEDURE del_%s() LANGUAGE plpgsql AS $p$ BEGIN"
	                  " FOR step IN 1 .. %d LOOP IF step %% 17 = 6 THEN DELETE FROM %s WHERE g = step;"
	                  " COMMIT; END IF; END LOOP; END $p$",
	            c->name, KEY_ROWS + 40, c->name);
	pgtest_exec(e->s, "CALL del_%s()", c->name);
}

/* Statements (not rows) of each kind the apply runs on a target table. */
static void
count_statements(tm_env *e, const char *table)
{
	pgtest_exec(e->t, "CREATE TABLE stmts (op text, n bigint, verb text);"
	                  "CREATE FUNCTION count_stmt() RETURNS trigger LANGUAGE plpgsql AS"
	                  " $$ BEGIN INSERT INTO stmts VALUES (TG_OP, 1, upper(left(current_query(), 6)));"
	                  " RETURN NULL; END $$;"
	                  "CREATE TRIGGER count_stmt AFTER DELETE OR UPDATE ON %s"
	                  " FOR EACH STATEMENT EXECUTE FUNCTION count_stmt();"
	                  "ALTER TABLE %s ENABLE ALWAYS TRIGGER count_stmt", table, table);
}

static void
test_deletes_and_partials_by_key(void **state)
{
	tm_env *e = tm_env_new("net_bykey");
	long deletes, updates;

	(void) state;
	create_key_types(e);
	for (size_t i = 0; i < NKEY_CASES; i++) {
		char table[64];

		create_key_case(e, &key_cases[i]);
		snprintf(table, sizeof table, "public.%s", key_cases[i].name);
		tm_setup_table(e, table);
	}
	tm_catch_up(e, 120);
	count_statements(e, "k_int");
	for (size_t i = 0; i < NKEY_CASES; i++)
		key_case_workload(e, &key_cases[i]);
	tm_catch_up(e, 300);
	for (size_t i = 0; i < NKEY_CASES; i++) {
		char table[64], cols[160];

		snprintf(table, sizeof table, "public.%s", key_cases[i].name);
		snprintf(cols, sizeof cols, "%s, g, n, md5(b1), md5(b2)", key_cases[i].key);
		tm_assert_rows_equal(e->s, table, e->t, table, cols);
	}
	/* the transaction's 102 deletes and 120 partial updates of k_int went
	 * as a few statements of many rows (the later deletes, one per
	 * transaction, at most one statement each; upserts, whose UPDATE
	 * triggers fire too, are not counted) */
	deletes = pgtest_query_long(e->t, "SELECT count(*) FROM stmts WHERE op = 'DELETE'");
	updates = pgtest_query_long(e->t, "SELECT count(*) FROM stmts WHERE op = 'UPDATE'"
	                                  " AND verb = 'UPDATE'");
	if (deletes > 1 + (KEY_ROWS + 40) / 17 || updates > 6)
		fail_msg("k_int: %ld delete and %ld update statements: not by many rows", deletes,
		         updates);
	tm_env_free(e);
}

/*
 * Values through the statements of many rows, which send each column's
 * values as a text[] in binary format: every byte the array literal would
 * have had to escape (quotes, backslashes, braces, commas, blanks, the
 * text NULL), empty strings and SQL NULLs, multibyte characters, values of
 * kilobytes and one TOASTed; as whole rows (inserts and updates), partial
 * updates (the TOASTed column unchanged) and deletes by key, the keys
 * themselves such texts. The target equals the source, by plain SQL.
 */
static void
test_exact_values_in_arrays(void **state)
{
	tm_env *e = tm_env_new("net_values");
	static const char *const texts =
		"ARRAY['', 'NULL', 'null', '\"', '\\', '{', '}', ',', ' ', ' a b ', '{\"a\",NULL}',"
		" E'tab\\there\\nline', 'ünïcødé ☃ 日本語', repeat('xy\"\\{},', 400),"
		" repeat('é', 1500)]";

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE v (k text PRIMARY KEY, n int, a text, b text, big text);"
	                  "ALTER TABLE v ALTER big SET STORAGE EXTERNAL");
	tm_setup_table(e, "public.v");
	tm_catch_up(e, 120);
	/* inserts: each text as key and as values, and as NULLs */
	pgtest_exec(e->s, "INSERT INTO v SELECT t || '#' || i, i, t, CASE WHEN i %% 2 = 0 THEN t END,"
	                  " repeat(md5(i::text), 100) FROM unnest(%s) WITH ORDINALITY AS u (t, i)",
	                  texts);
	pgtest_exec(e->s, "INSERT INTO v SELECT t, i, NULL, t, NULL FROM unnest(%s)"
	                  " WITH ORDINALITY AS u (t, i)", texts);
	/* whole rows again, partials (big unchanged), then deletes by key */
	pgtest_exec(e->s, "UPDATE v SET a = b, b = a, big = big || 'x' WHERE n %% 3 = 0");
	pgtest_exec(e->s, "UPDATE v SET n = n + 100, a = coalesce(a, '') || '\\' WHERE n %% 3 <> 0");
	pgtest_exec(e->s, "DELETE FROM v WHERE n %% 4 = 1");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "public.v", e->t, "public.v", "k, n, a, b, md5(big)");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM v"),
	                 pgtest_query_long(e->s, "SELECT count(*) FROM v"));
	tm_env_free(e);
}

/* The same arrays into a target database in LATIN1: the server converts
 * each element of a binary text[] from the session's UTF8 as it converts
 * a text parameter, so accented keys and values arrive as the source's
 * characters, not as their UTF-8 bytes read as LATIN1. */
static void
test_arrays_into_a_latin1_target(void **state)
{
	tm_env *e = tm_env_new("net_latin1");

	(void) state;
	tm_env_encoding(e, false, "LATIN1");
	pgtest_exec(e->s, "CREATE TABLE v (k text PRIMARY KEY, n int, a text)");
	tm_setup_table(e, "public.v");
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "INSERT INTO v SELECT k || i, i, repeat(k, i::int) FROM unnest(ARRAY['é', 'ü',"
	                  " 'ñ', 'Ø', 'ß', 'plain', '\"{,}\\']) WITH ORDINALITY AS u (k, i)");
	pgtest_exec(e->s, "UPDATE v SET a = a || 'à' WHERE n %% 2 = 0");
	pgtest_exec(e->s, "DELETE FROM v WHERE n = 3");
	tm_catch_up(e, 120);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM v WHERE k = 'é1'"), 1);
	tm_assert_rows_equal(e->s, "public.v", e->t, "public.v", "k, n, a");
	tm_env_free(e);
}

/* The deletes and inserts test_deleted_and_inserted_again_under_foreign_keys
 * makes, on the table named t */
static void
delete_and_insert_again(tm_env *e, const char *t)
{
	pgtest_exec(e->s, "BEGIN; DELETE FROM %s WHERE id = 1;"
	                  " INSERT INTO %s VALUES (1, 'again'); COMMIT;"
	                  "DELETE FROM %s WHERE id = 2; INSERT INTO %s VALUES (2, 'again');"
	                  "DELETE FROM %s WHERE id = 3; UPDATE %s SET v = 'new' WHERE id = 4;"
	                  "BEGIN; UPDATE %s SET id = 150 WHERE id = 5;"
	                  " INSERT INTO %s VALUES (5, 'again'); COMMIT",
	            t, t, t, t, t, t, t, t);
}

/* A row deleted and inserted again in one group, of a table that foreign
 * keys of the target's own reference: their ON DELETE actions act, as on
 * the source's delete (the net change alone, an upsert, would keep the rows
 * that referred to the deleted one). Also where the target's table is
 * partitioned (made so by hand before setup) and the key references one of
 * its partitions only. */
static void
test_deleted_and_inserted_again_under_foreign_keys(void **state)
{
	tm_env *e = tm_env_new("net_refd");

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE orders (id int PRIMARY KEY, v text);"
	                  "INSERT INTO orders SELECT g, 'o' || g FROM generate_series(1, 10) g;"
	                  "CREATE TABLE parted (id int PRIMARY KEY, v text);"
	                  "INSERT INTO parted SELECT g, 'o' || g FROM generate_series(1, 10) g");
	pgtest_exec(e->t, "CREATE TABLE parted (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);"
	                  "CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (0) TO (100);"
	                  "CREATE TABLE parted_high PARTITION OF parted FOR VALUES FROM (100) TO (1000)");
	tm_setup_table(e, "orders");
	tm_setup_table(e, "parted");
	tm_catch_up(e, 60);
	pgtest_exec(e->t, "CREATE TABLE notes (order_id int REFERENCES orders ON DELETE CASCADE);"
	                  "CREATE TABLE marks (id int PRIMARY KEY,"
	                  " order_id int REFERENCES orders ON DELETE SET NULL);"
	                  "CREATE TABLE low_notes (id int REFERENCES parted_low ON DELETE CASCADE);"
	                  "INSERT INTO notes SELECT g FROM generate_series(1, 10) g;"
	                  "INSERT INTO marks SELECT g, g FROM generate_series(1, 10) g;"
	                  "INSERT INTO low_notes SELECT g FROM generate_series(1, 10) g");
	/* in one transaction, and across two; then one deleted for good, a row
	 * only updated, and a key moved away and inserted again, all in the
	 * backlog of one run */
	delete_and_insert_again(e, "orders");
	delete_and_insert_again(e, "parted");
	tm_catch_up(e, 60);
	tm_assert_equal(e, "orders", "id");
	tm_assert_rows_equal(e->s, "public.parted", e->t, "public.parted", "id, v");
	tm_assert_value(e->t, "SELECT string_agg(order_id::text, ',' ORDER BY order_id) FROM notes",
	                "4,6,7,8,9,10");
	tm_assert_value(e->t, "SELECT string_agg(id::text, ',' ORDER BY id) FROM marks"
	                      " WHERE order_id IS NULL", "1,2,3,5");
	tm_assert_value(e->t, "SELECT string_agg(id::text, ',' ORDER BY id) FROM low_notes",
	                "4,6,7,8,9,10");
	tm_env_free(e);
}

/* A foreign key of the target's own added while run runs, after run read
 * the table's constraints: a row deleted and inserted again still has its
 * delete act on the key's rows (run applies the group again, reading the
 * constraints anew). */
static void
test_foreign_key_added_while_running(void **state)
{
	tm_env *e = tm_env_new("net_refd_late");
	pgtest_proc *run;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE orders (id int PRIMARY KEY, v text);"
	                  "INSERT INTO orders SELECT g, 'o' || g FROM generate_series(1, 10) g");
	tm_setup_table(e, "orders");
	tm_catch_up(e, 60);
	run = tm_spawn(e, "run", NULL);
	/* the table's constraints read: none references it yet */
	pgtest_exec(e->s, "BEGIN; DELETE FROM orders WHERE id = 10;"
	                  " INSERT INTO orders VALUES (10, 'first'); COMMIT");
	assert_true(pgtest_wait_value(e->t, "SELECT v FROM orders WHERE id = 10", "first", 60));
	pgtest_exec(e->t, "CREATE TABLE notes (order_id int REFERENCES orders ON DELETE CASCADE);"
	                  "INSERT INTO notes SELECT g FROM generate_series(1, 10) g");
	pgtest_exec(e->s, "BEGIN; DELETE FROM orders WHERE id = 1;"
	                  " INSERT INTO orders VALUES (1, 'again'); COMMIT;"
	                  "UPDATE orders SET v = 'last' WHERE id = 2");
	assert_true(pgtest_wait_value(e->t, "SELECT v FROM orders WHERE id = 2", "last", 60));
	pgtest_proc_kill(run, SIGTERM);
	rc = pgtest_proc_wait(run, 60);
	tm_assert_equal(e, "orders", "id");
	tm_assert_value(e->t, "SELECT string_agg(order_id::text, ',' ORDER BY order_id) FROM notes",
	                "2,3,4,5,6,7,8,9,10");
	/* and said why the transactions went again */
	if (rc != 0 || strstr(pgtest_proc_output(run), "references public.orders now") == NULL)
		fail_msg("run exited %d:\n%s", rc, pgtest_proc_output(run));
	pgtest_proc_free(run);
	tm_env_free(e);
}

/* A trigger of the target's own created while run runs, on a table whose
 * constraints run had read: within a minute run reads them again, and the
 * trigger then sees other rows as after every earlier group, as
 * test_parallel's test_trigger_sees_earlier_groups (an earlier group held
 * by another session's row lock, a later one on the trigger's table). */
static void
test_trigger_added_while_running(void **state)
{
	tm_env *e = tm_env_new("net_trig_late");
	pgtest_proc *run;

	(void) state;
	tm_trigger_tables(e);
	tm_catch_up(e, 60);
	run = tm_spawn(e, "run", "-vv", NULL);
	pgtest_exec(e->s, "UPDATE a SET v = 5 WHERE k = 5; UPDATE b SET v = 5 WHERE k = 5");
	assert_true(pgtest_wait_value(e->t, "SELECT v FROM b WHERE k = 5", "5", 60));
	tm_trigger_look(e);
	/* changes keep coming until run has read the tables' constraints again */
	for (int i = 0; i < 90 && !pgtest_proc_wait_output(run, "of 2 table(s) read again", 1); i++)
		pgtest_exec(e->s, "UPDATE a SET v = v + 1 WHERE k = 6");
	assert_true(pgtest_proc_wait_output(run, "of 2 table(s) read again", 1));
	tm_trigger_held_groups(e);
	tm_stop_and_catch_up(e, run, 60);
	tm_assert_value(e->t, "SELECT string_agg(b_k || ':' || b_v || ':' || a_v, ',') FROM seen",
	                "2:1:1");
	tm_assert_equal(e, "a", "k");
	tm_assert_equal(e, "b", "k");
	tm_env_free(e);
}

/* A run that ends caught up leaves the slot confirmed at its end: the
 * target's commits are flushed before the last status update (commits do
 * not wait for the target's disk), so the next run decodes none of it
 * again and the source keeps no WAL for it. */
static void
test_slot_confirmed_at_the_end(void **state)
{
	tm_env *e = tm_env_new("net_confirmed");
	char *end, ok[256];
	bool confirmed;

	(void) state;
	create_hot(e);
	tm_setup_table(e, "public.h");
	tm_catch_up(e, 120);
	/* the target's WAL writer asleep for long: only a commit that waits
	 * flushes the target's last commits in time */
	pgtest_exec(e->t, "ALTER SYSTEM SET wal_writer_delay = '10s'");
	pgtest_exec(e->t, "SELECT pg_reload_conf()");
	pgtest_exec(e->s, "CREATE PROCEDURE few() LANGUAGE plpgsql AS $$ BEGIN"
	                  " FOR i IN 1 .. 300 LOOP UPDATE h SET n = n + 1 WHERE id = i %% 5; COMMIT;"
	                  " END LOOP; END $$");
	pgtest_exec(e->s, "CALL few()");
	end = pgtest_query_value(e->s, "SELECT pg_current_wal_lsn()");
	tm_catch_up(e, 120);
	/* the walsender reads the last status update once run has ended: a
	 * moment later, well before the target's WAL writer wakes */
	snprintf(ok, sizeof ok, "SELECT confirmed_flush_lsn >= '%s' FROM pg_replication_slots"
	         " WHERE slot_name = '%s'", end, e->slot);
	confirmed = pgtest_wait_value(e->s, ok, "t", 5);
	pgtest_exec(e->t, "ALTER SYSTEM RESET wal_writer_delay");
	pgtest_exec(e->t, "SELECT pg_reload_conf()");
	assert_true(confirmed);
	assert_h_equal(e);
	free(end);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hot_keys_netted),
		cmocka_unit_test(test_each_change),
		cmocka_unit_test(test_netted_during_copy),
		cmocka_unit_test(test_netted_through_kill9),
		cmocka_unit_test(test_deletes_and_partials_by_key),
		cmocka_unit_test(test_exact_values_in_arrays),
		cmocka_unit_test(test_arrays_into_a_latin1_target),
		cmocka_unit_test(test_deleted_and_inserted_again_under_foreign_keys),
		cmocka_unit_test(test_foreign_key_added_while_running),
		cmocka_unit_test(test_trigger_added_while_running),
		cmocka_unit_test(test_slot_confirmed_at_the_end),
	};

	/* TEST_FILTER=test_trigger* runs only the tests whose names match */
	if (getenv("TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
