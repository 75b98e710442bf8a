/*
 * Integration test of a source server upgraded in place with pg_upgrade,
 * as an operator does it: tidemark catches up and stops, the server is
 * stopped and upgraded into a new cluster (tests/tools/pgcluster upgrade:
 * a new system identifier; the oids of the database, tables and types
 * kept; from PostgreSQL 17 the logical slots kept), which takes the old
 * one's place on the same port.
 *
 * `run` and `status` must refuse the new server (another system
 * identifier) with the fix `tidemark resync --source-upgraded`, which takes
 * it up. From PostgreSQL 17 the slot was kept: the stream resumes at its
 * position and nothing is copied again (the history of a table in history
 * mode holds each change once, no copy's entries). Before 17 pg_upgrade
 * drops logical slots: the slot is made again and every table copied
 * again in place. Either way the changes made on the new server before
 * and after the take-up (rows, a column added, an enum value added) reach
 * the target. Taking up another database of the new server is refused.
 *
 * The oracle: each side's rows as the server prints them, sorted here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tm_fixture.h"

static void
assert_has(const char *out, const char *needle)
{
	tm_assert_has(out, needle);
}

static void
assert_lacks(const char *out, const char *needle)
{
	if (strstr(out, needle) != NULL)
		fail_msg("the output holds \"%s\":\n%s", needle, out);
}

static void
assert_tables_equal(tm_env *e)
{
	tm_assert_equal(e, "up.accounts", "id");
	tm_assert_equal(e, "up.events", "id");
	tm_assert_equal(e, "up.notes", "id");
}

/* Rows of every kind: a keyed table with a TOASTed column, a partitioned
 * one (its partitions' oids kept too), one with an enum in history mode. */
static void
create_tables(PGconn *s)
{
	pgtest_exec(s, "CREATE SCHEMA up;"
	               "CREATE TABLE up.accounts (id int PRIMARY KEY, balance int NOT NULL, note text);"
	               "INSERT INTO up.accounts SELECT g, g * 10, CASE WHEN g %% 9 = 0 THEN"
	               " repeat(md5(g::text), 80) ELSE 'n' || g END FROM generate_series(1, 500) g;"
	               "CREATE TABLE up.events (id int, at date NOT NULL, what text,"
	               " PRIMARY KEY (id, at)) PARTITION BY RANGE (at);"
	               "CREATE TABLE up.events_2025 PARTITION OF up.events"
	               " FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');"
	               "CREATE TABLE up.events_2026 PARTITION OF up.events"
	               " FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');"
	               "INSERT INTO up.events SELECT g, date '2025-06-01' + g, 'e' || g"
	               " FROM generate_series(1, 400) g;"
	               "CREATE TYPE up.mood AS ENUM ('calm', 'busy');"
	               "CREATE TABLE up.notes (id int PRIMARY KEY, m up.mood NOT NULL, body text)");
}

/* Changes of every table (n: which round), in a few transactions. */
static void
write_round(PGconn *s, int n)
{
	pgtest_exec(s, "UPDATE up.accounts SET balance = balance + %d WHERE id %% 7 = %d", n, n % 7);
	pgtest_exec(s, "DELETE FROM up.accounts WHERE id = %d", 400 + n);
	pgtest_exec(s, "INSERT INTO up.accounts VALUES (%d, %d, 'new %d')", 1000 + n, n, n);
	pgtest_exec(s, "UPDATE up.events SET what = what || '+' WHERE id %% 11 = %d", n);
	pgtest_exec(s, "INSERT INTO up.events VALUES (%d, date '2026-03-01' + %d, 'later')", 900 + n,
	            n);
}

static long
history_rows(tm_env *e)
{
	return pgtest_query_long(e->t, "SELECT count(*) FROM up.notes_history");
}

/* The source's cluster upgraded in place, and this test's connection to
 * it made again. */
static void
upgrade_source(tm_env *e)
{
	PQfinish(e->s);
	e->s = NULL;
	pgtest_cluster_upgrade(e->src_cluster);
	e->s = pgtest_connect_str(e->src);
}

static void
test_upgraded_source_taken_up(void **state)
{
	tm_env *e = tm_env_new("upgrade");
	char *out = NULL, *other = NULL, *system_id, *v;
	bool slots_kept;
	long entries;
	int rc;

	(void) state;
	create_tables(e->s);
	free(tm_expect(e, 0, "setup", "--schema", "up", "--table-mode", "up.notes=history"));
	tm_catch_up(e, 120);
	pgtest_exec(e->s, "INSERT INTO up.notes VALUES (1, 'calm', 'a'), (2, 'busy', 'b')");
	write_round(e->s, 1);
	tm_catch_up(e, 120);
	assert_tables_equal(e);
	system_id = pgtest_query_value(e->s, "SELECT system_identifier::text FROM pg_control_system()");

	upgrade_source(e);
	slots_kept = pgtest_query_long(e->s, "SHOW server_version_num") >= 170000;
	v = pgtest_query_value(e->s, "SELECT system_identifier::text FROM pg_control_system()");
	assert_string_not_equal(v, system_id);
	free(v);
	assert_int_equal(pgtest_query_long(e->s, "SELECT count(*) FROM pg_replication_slots"
	                                          " WHERE slot_name = '%s'", e->slot),
	                 slots_kept ? 1 : 0);
	/* the application goes on before tidemark is taken up */
	write_round(e->s, 2);
	pgtest_exec(e->s, "UPDATE up.notes SET body = body || '!' WHERE id = 1");
	pgtest_exec(e->s, "ALTER TABLE up.accounts ADD COLUMN tier int DEFAULT 3");
	pgtest_exec(e->s, "ALTER TYPE up.mood ADD VALUE 'away'");
	pgtest_exec(e->s, "INSERT INTO up.notes VALUES (3, 'away', 'c')");

	/* refused, with the fix, before anything changes */
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 3);
	assert_has(out, "as pg_upgrade keeps them");
	assert_has(out, "tidemark resync --source-upgraded");
	assert_has(out, slots_kept ? "nothing is copied again" : "every table copied again");
	free(out);
	assert_int_equal(tm_run(e, 60, &out, "status", NULL), 3);
	assert_has(out, "--source-upgraded");
	free(out);

	/* another database of the new server is not taken up */
	pgtest_exec(e->s, "CREATE DATABASE upgrade_other");
	other = pgtest_conninfo_db(e->src_cluster, "upgrade_other");
	assert_int_equal(tm_run(e, 60, &out, "resync", "--source-upgraded", "--source", other, NULL),
	                 3);
	assert_has(out, "is not taken up");
	assert_has(out, "its database's oid is not the one recorded");
	free(out);

	entries = history_rows(e);
	rc = tm_run(e, 180, &out, "resync", "--source-upgraded", "--until-caught-up", NULL);
	if (rc != 0) {
		fprintf(stderr, "%s\n", out);
		fail_msg("resync --source-upgraded: exit %d", rc);
	}
	assert_has(out, "taken up as pipeline");
	if (slots_kept) {
		assert_has(out, "pg_upgrade kept the slot");
		assert_lacks(out, "resync begins");
	} else {
		assert_has(out, "resync begins (slot_missing)");
		assert_has(out, "resync done");
	}
	free(out);
	assert_tables_equal(e);
	v = pgtest_query_value(e->t, "SELECT string_agg(id || ':' || m || ':' || body, ','"
	                             " ORDER BY id) FROM up.notes");
	assert_string_equal(v, "1:calm:a!,2:busy:b,3:away:c");
	free(v);
	if (slots_kept) /* an update and an insert: each change once, no copy */
		assert_int_equal(history_rows(e), entries + 2);

	/* again: nothing left to take up, nothing copied */
	assert_int_equal(tm_run(e, 60, &out, "resync", "--source-upgraded", "--until-caught-up",
	                        NULL), 0);
	assert_has(out, "nothing to take up");
	assert_lacks(out, "resync begins");
	free(out);

	/* and it streams on from the new server */
	write_round(e->s, 3);
	pgtest_exec(e->s, "UPDATE up.accounts SET tier = id %% 4 WHERE id < 50");
	pgtest_exec(e->s, "DELETE FROM up.notes WHERE id = 2");
	tm_catch_up(e, 120);
	assert_tables_equal(e);
	free(other);
	free(system_id);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upgraded_source_taken_up),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
