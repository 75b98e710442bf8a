/*
 * Errors that say what to do: each mistake an operator makes (a role
 * without REPLICATION, a wrong port, run before setup, a misspelt slot, a
 * connection string libpq cannot read, a table the role may not read)
 * ends with the right exit code and a message that names the fix, every
 * log record on one line, and never a password, a crash or an endless
 * retry. Also the conventions: --version, --log-format json, the user's
 * application_name kept, libpq's environment for a side not given.
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "exitcode.h"
#include "tm_fixture.h"

/* Runs tidemark with argv (NULL-terminated); its exit code, output in *out. */
static int
run_argv(const char *const *argv, char **out)
{
	*out = NULL;
	return pgtest_run_tidemark(argv, 60, out);
}

/* Every line is one log record: "<ISO 8601 UTC time> tidemark <level>: ". */
static void
assert_log_lines(const char *out)
{
	for (const char *line = out; *line != '\0';) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t) (nl - line) : strlen(line);
		int y, mo, d, h, mi, s, ms;
		char level[16];

		if (len > 0 && (sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ tidemark %15[a-z]:", &y, &mo, &d,
		                       &h, &mi, &s, &ms, level) != 8))
			fail_msg("not a one-line log record: %.*s", (int) len, line);
		line += len + (nl != NULL);
	}
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* A role without REPLICATION: run ends at once (exit 3), naming the role
 * and the ALTER ROLE; a wrong port: exit 4 within the connect timeout,
 * not endless retries. */
static void
test_first_connection_fails_fast(void **state)
{
	tm_env *e = tm_env_new("errconn");
	char src[512], bad[512], *out;
	const char *argv[] = {"run", "--source", src, "--target", e->dst, "--slot", e->slot, NULL};
	double t0;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY); CREATE ROLE norepl LOGIN;"
	                  "GRANT SELECT ON t TO norepl");
	tm_setup_table(e, "t");
	snprintf(src, sizeof src, "%s user=norepl", e->src);
	assert_int_equal(run_argv(argv, &out), 3);
	tm_assert_has(out, "role \"norepl\" may not use replication");
	tm_assert_has(out, "ALTER ROLE \"norepl\" REPLICATION");
	assert_log_lines(out);
	free(out);
	snprintf(bad, sizeof bad, "host=127.0.0.1 port=1 dbname=x user=postgres");
	snprintf(src, sizeof src, "%s", bad);
	t0 = now_s();
	assert_int_equal(run_argv(argv, &out), 4);
	assert_true(now_s() - t0 < 15);
	tm_assert_has(out, "run could not connect");
	assert_log_lines(out);
	free(out);
	pgtest_exec(e->s, "DROP OWNED BY norepl; DROP ROLE norepl");
	tm_env_free(e);
}

/* Commands on a target with no catalog, or for a slot not registered
 * there, or a slot the source lacks: exit 3 with the fix. */
static void
test_before_setup_and_unknown_slot(void **state)
{
	tm_env *e = tm_env_new("errsetup");
	const char *cmds[][3] = {{"run", NULL, NULL}, {"status", NULL, NULL},
	                         {"schema", "public.t", NULL}, {"ddl-log", NULL, NULL},
	                         {"verify", NULL, NULL}, {"snapshot", "public.t", NULL}};
	char *out;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY)");
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		assert_int_equal(tm_run(e, 60, &out, cmds[i][0], cmds[i][1], NULL), 3);
		tm_assert_has(out, "holds no tidemark catalog");
		tm_assert_has(out, "run `tidemark setup` first");
		assert_log_lines(out);
		free(out);
	}
	/* nothing was created by trying */
	assert_null(pgtest_query_value(e->t, "SELECT to_regnamespace('tidemark')"));
	tm_setup_table(e, "t");
	{
		const char *argv[] = {"status", "--source", e->src, "--target", e->dst, "--slot",
		                      "no_such_slot", NULL};

		assert_int_equal(run_argv(argv, &out), 3);
		tm_assert_has(out, "no replication \"no_such_slot\" is registered here");
		tm_assert_has(out, e->slot);
		free(out);
	}
	pgtest_exec(e->s, "SELECT pg_drop_replication_slot('%s')", e->slot);
	assert_int_equal(tm_run(e, 60, &out, "status", NULL), 3);
	tm_assert_has(out, "does not exist there");
	free(out);
	tm_env_free(e);
}

/* A connection string libpq cannot read: exit 3 for every command, not
 * shown (it may hold a password); a server that cannot be reached: no
 * crash (teardown crashed on it). */
static void
test_bad_connection_strings(void **state)
{
	const char *bad = "host=127.0.0.1 password=s3cr3t-word 'broken";
	const char *cmds[] = {"status", "verify", "teardown", "run", "ddl-log", "schema"};
	char *out;

	(void) state;
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		const char *argv[] = {cmds[i], "--source", bad, "--target", bad, "public.t", NULL};

		if (strcmp(cmds[i], "schema") != 0)
			argv[5] = NULL;
		assert_int_equal(run_argv(argv, &out), 3);
		if (strstr(out, "s3cr3t") != NULL)
			fail_msg("%s shows the password:\n%s", cmds[i], out);
		tm_assert_has(out, "is not valid");
		free(out);
	}
	{
		const char *argv[] = {"teardown", "--source", "host=127.0.0.1 port=1 password=s3cr3t",
		                      "--target", "host=127.0.0.1 port=1", "--drop-target-catalog", NULL};

		assert_int_equal(run_argv(argv, &out), 4);
		assert_null(strstr(out, "s3cr3t"));
		assert_log_lines(out);
		free(out);
	}
}

/* A failed setup says what it had installed already (the source's capture
 * objects), not "nothing was changed". */
static void
test_failed_setup_says_what_it_did(void **state)
{
	tm_env *e = tm_env_new("errpartial");
	char *out;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE nokey (a int, b text)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "nokey", NULL), 3);
	tm_assert_has(out, "setup had already installed");
	tm_assert_has(out, "on the source");
	assert_null(strstr(out, "nothing was changed"));
	free(out);
	/* again, with everything installed: nothing new */
	assert_int_equal(tm_run(e, 60, &out, "setup", "--table", "nokey", NULL), 3);
	tm_assert_has(out, "setup changed nothing");
	free(out);
	tm_env_free(e);
}

/* A table created in a replicated schema by a role tidemark's cannot
 * read: run stops naming the table, the GRANT and the default privileges. */
static void
test_unreadable_table_named(void **state)
{
	tm_env *e = tm_env_new("errgrant");
	char src[512], owner[512], *out;
	const char *argv[] = {"run", "--source", src, "--target", e->dst, "--slot", e->slot,
	                      "--publication", e->slot, "--until-caught-up", NULL};
	PGconn *app;

	(void) state;
	pgtest_exec(e->s, "CREATE ROLE rep LOGIN REPLICATION; CREATE ROLE app LOGIN;"
	                  "CREATE SCHEMA shop AUTHORIZATION app; GRANT USAGE ON SCHEMA shop TO rep;"
	                  "CREATE TABLE shop.a (id int PRIMARY KEY); ALTER TABLE shop.a OWNER TO app;"
	                  "GRANT SELECT ON shop.a TO rep");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "shop", NULL), 0);
	free(out);
	snprintf(owner, sizeof owner, "%s user=app", e->src);
	app = pgtest_connect_str(owner);
	/* its rows in a later transaction: the table is copied (the rows of
	 * the transaction that created it would come from the stream) */
	pgtest_exec(app, "CREATE TABLE shop.\"Secret Stuff\" (id int PRIMARY KEY)");
	pgtest_exec(app, "INSERT INTO shop.\"Secret Stuff\" VALUES (1)");
	PQfinish(app);
	snprintf(src, sizeof src, "%s user=rep", e->src);
	assert_int_equal(run_argv(argv, &out), 3);
	tm_assert_has(out, "GRANT SELECT ON \"shop\".\"Secret Stuff\" TO \"rep\"");
	tm_assert_has(out, "ALTER DEFAULT PRIVILEGES FOR ROLE \"app\" IN SCHEMA \"shop\" GRANT SELECT ON "
	                "TABLES TO \"rep\"");
	assert_log_lines(out);
	free(out);
	pgtest_exec(e->s, "GRANT SELECT ON shop.\"Secret Stuff\" TO rep");
	assert_int_equal(run_argv(argv, &out), 0);
	free(out);
	tm_assert_equal(e, "shop.\"Secret Stuff\"", "id");
	pgtest_exec(e->s, "DROP OWNED BY rep, app; DROP ROLE rep, app");
	tm_env_free(e);
}

/* --version; --log-format json: every line a JSON object with time, level
 * and message; the user's application_name kept with tidemark's role. */
static void
test_conventions(void **state)
{
	tm_env *e = tm_env_new("errconv");
	const char *version[] = {"--version", NULL};
	char src[512], *out;
	pgtest_proc *run;

	(void) state;
	assert_int_equal(run_argv(version, &out), 0);
	assert_true(strncmp(out, "tidemark ", 9) == 0);
	free(out);
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY)");
	tm_setup_table(e, "t");
	assert_int_equal(tm_run(e, 60, &out, "status", "--slot", "nope", "--log-format", "json",
	                        NULL), 3);
	for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		json_error_t jerr;
		json_t *o = json_loads(line, 0, &jerr);

		if (o == NULL || !json_is_string(json_object_get(o, "time")) ||
		    !json_is_string(json_object_get(o, "level")) ||
		    !json_is_string(json_object_get(o, "message")))
			fail_msg("not a JSON log record: %s", line);
		json_decref(o);
	}
	free(out);
	snprintf(src, sizeof src, "%s application_name=warehouse_feed", e->src);
	{
		const char *argv[] = {"run", "--source", src, "--target", e->dst, "--slot", e->slot,
		                      "--publication", e->slot, NULL};

		run = pgtest_spawn(argv, NULL);
	}
	assert_true(pgtest_wait_value(e->s, "SELECT count(*) > 0 FROM pg_stat_activity WHERE"
	                                    " application_name = 'warehouse_feed (tidemark stream)'",
	                              "t", 60));
	tm_stop_and_catch_up(e, run, 60);
	tm_env_free(e);
}

/* A side not given, when the other is: libpq's environment serves. */
static void
test_libpq_environment(void **state)
{
	tm_env *e = tm_env_new("errenv");
	char host[64], port[16], db[64], *out = NULL;
	const char *argv[] = {"status", "--target", e->dst, "--slot", e->slot, NULL};
	const char *env[6];
	pgtest_proc *p;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY)");
	tm_setup_table(e, "t");
	snprintf(host, sizeof host, "PGHOST=127.0.0.1");
	snprintf(port, sizeof port, "PGPORT=%d", e->src_cluster->port);
	snprintf(db, sizeof db, "PGDATABASE=src_errenv");
	env[0] = host, env[1] = port, env[2] = db, env[3] = "PGUSER=postgres";
	env[4] = "TIDEMARK_SOURCE", env[5] = NULL;
	p = pgtest_spawn(argv, env);
	assert_int_equal(pgtest_proc_wait(p, 60), 0);
	out = strdup(pgtest_proc_output(p));
	pgtest_proc_free(p);
	tm_assert_has(out, "libpq's environment chooses the source");
	tm_assert_has(out, "applied up to");
	free(out);
	tm_env_free(e);
}

/*
 * A row the target refuses (a constraint of its own) early in a large
 * transaction whose rows go one statement each, many rounds of them, with
 * more transactions right behind: the statements after it, its COMMIT and
 * the next transactions' are already on their way when the refusal is
 * read. Nothing of that transaction nor of any after it commits: run stops
 * with the target's error naming the constraint, the target holds the rows
 * from before, and its stored position is from before too. Once the
 * constraint is gone the rest follows, each row once.
 */
static void
test_refused_row_commits_nothing_after(void **state)
{
	tm_env *e = tm_env_new("errrefused");
	pgtest_proc *run;
	char *before, *ok;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE events (id bigint PRIMARY KEY, kind int, payload text)");
	tm_setup_table(e, "events");
	pgtest_exec(e->s, "INSERT INTO events SELECT g, 0, 'before' FROM generate_series(1, 10) g");
	tm_catch_up(e, 60);
	pgtest_exec(e->t, "ALTER TABLE events ADD CONSTRAINT not_this_one CHECK (id <> 1005)");
	before = pgtest_query_value(e->s, "SELECT pg_current_wal_insert_lsn()");
	/* rows of 1.3 kB go one statement each: 4,000 of them, 8 rounds */
	pgtest_exec(e->s, "INSERT INTO events SELECT g, 1, repeat(md5(g::text), 40)"
	                  " FROM generate_series(1001, 5000) g");
	for (int i = 0; i < 30; i++)
		pgtest_exec(e->s, "INSERT INTO events VALUES (%d, 2, 'after')", 10000 + i);
	run = tm_start_run(e, NULL);
	assert_int_equal(pgtest_proc_wait(run, 120), TM_EXIT_TARGET);
	tm_assert_has(pgtest_proc_output(run), "not_this_one");
	pgtest_proc_free(run);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM events WHERE id > 10"), 0);
	ok = pgtest_query_value(e->t, "SELECT applied_lsn <= '%s' FROM tidemark.progress", before);
	assert_string_equal(ok, "t");
	free(ok);
	free(before);
	pgtest_exec(e->t, "ALTER TABLE events DROP CONSTRAINT not_this_one");
	tm_catch_up(e, 120);
	tm_assert_equal(e, "events", "id");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM events"), 4040);
	tm_env_free(e);
}

/* A table under row-level security that hides rows from tidemark's role:
 * the copy would read some rows while the stream sends them all. run stops
 * with the fix instead (its sessions run with row_security off), and once
 * the role bypasses it every row is copied. */
static void
test_row_level_security_refused(void **state)
{
	tm_env *e = tm_env_new("errrls");
	char src[512], *out;
	const char *argv[] = {"run", "--source", src, "--target", e->dst, "--slot", e->slot,
	                      "--publication", e->slot, "--until-caught-up", NULL};
	const char *verify[] = {"verify", "--source", src, "--target", e->dst, "--slot", e->slot,
	                        NULL};

	(void) state;
	pgtest_exec(e->s, "CREATE ROLE rep LOGIN REPLICATION;"
	                  "CREATE TABLE t (id int PRIMARY KEY, tenant text NOT NULL);"
	                  "INSERT INTO t SELECT g, CASE WHEN g %% 2 = 0 THEN 'rep' ELSE 'other' END"
	                  " FROM generate_series(1, 20) g;"
	                  "ALTER TABLE t ENABLE ROW LEVEL SECURITY;"
	                  "CREATE POLICY own ON t USING (tenant = current_user);"
	                  "GRANT SELECT ON t TO rep");
	tm_setup_table(e, "public.t");
	snprintf(src, sizeof src, "%s user=rep", e->src);
	assert_int_equal(run_argv(argv, &out), 3);
	tm_assert_has(out, "row-level security");
	tm_assert_has(out, "ALTER ROLE \"rep\" BYPASSRLS");
	assert_log_lines(out);
	free(out);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM t"), 0);
	pgtest_exec(e->s, "ALTER ROLE rep BYPASSRLS;"
	                  "INSERT INTO t VALUES (21, 'other'), (22, 'rep'); DELETE FROM t WHERE id = 3");
	assert_int_equal(run_argv(argv, &out), 0);
	free(out);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM t"), 21);
	tm_assert_rows_equal(e->s, "public.t", e->t, "public.t", "*");
	assert_int_equal(run_argv(verify, &out), 0);
	free(out);
	pgtest_exec(e->s, "DROP OWNED BY rep; DROP ROLE rep");
	tm_env_free(e);
}

/* Timeouts a DBA set for the roles (statement_timeout,
 * idle_in_transaction_session_timeout, and from PostgreSQL 17
 * transaction_timeout: common on a warehouse) do not apply
 * to tidemark's own sessions, which bound their waits themselves: a copy
 * of a table without a key in one read, large chunk loads and a target
 * ALTER that rewrites a table all take longer than them, and pass. */
static void
test_role_timeouts_do_not_apply(void **state)
{
	tm_env *e = tm_env_new("errtimeout");
	char *out = NULL;
	int rc;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, v text);"
	                  "INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 200000) g;"
	                  "CREATE TABLE nk (v text) WITH (autovacuum_enabled = off);"
	                  "ALTER TABLE nk REPLICA IDENTITY FULL;"
	                  "INSERT INTO nk SELECT md5(g::text) FROM generate_series(1, 200000) g");
	for (int side = 0; side < 2; side++) {
		PGconn *c = side ? e->t : e->s;
		const char *db = side ? "dst_errtimeout" : "src_errtimeout";

		pgtest_exec(c, "ALTER ROLE CURRENT_USER IN DATABASE %s SET statement_timeout = '20ms';"
		               "ALTER ROLE CURRENT_USER IN DATABASE %s"
		               " SET idle_in_transaction_session_timeout = '50ms'", db, db);
		if (PQserverVersion(c) >= 170000) /* PGBIN of a newer server */
			pgtest_exec(c, "ALTER ROLE CURRENT_USER IN DATABASE %s"
			               " SET transaction_timeout = '100ms'", db);
	}
	rc = tm_run(e, 120, &out, "setup", "--table", "public.big", "--table", "public.nk", NULL);
	if (rc != 0)
		fail_msg("setup exited %d:\n%s", rc, out);
	free(out);
	rc = tm_run(e, 300, &out, "run", "--until-caught-up", "--chunk-rows", "100000",
	            "--chunk-bytes", "64MB", NULL);
	if (rc != 0)
		fail_msg("run exited %d:\n%s", rc, out);
	free(out);
	pgtest_exec(e->s, "ALTER TABLE big ALTER COLUMN id TYPE bigint; UPDATE big SET v = 'x'"
	                  " WHERE id %% 1000 = 0");
	rc = tm_run(e, 300, &out, "run", "--until-caught-up", NULL);
	if (rc != 0)
		fail_msg("run exited %d:\n%s", rc, out);
	free(out);
	for (int side = 0; side < 2; side++)
		pgtest_exec(side ? e->t : e->s, "ALTER ROLE CURRENT_USER IN DATABASE %s RESET ALL",
		            side ? "dst_errtimeout" : "src_errtimeout");
	tm_assert_rows_equal(e->s, "public.big", e->t, "public.big", "*");
	tm_assert_multiset_equal(e, "public.nk", "v");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM nk"), 200000);
	tm_env_free(e);
}

/* A publication that publishes a table in part (a row filter, a column
 * list, an action left out) would stream part of what the copy reads:
 * setup refuses it before changing anything, run at its start, each with
 * the fix; published whole again, the table replicates. */
static void
test_partial_publication_refused(void **state)
{
	tm_env *e = tm_env_new("errpubpart");
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, v text, secret text);"
	                  "INSERT INTO t SELECT g, 'v' || g, 's' FROM generate_series(1, 50) g;"
	                  "CREATE PUBLICATION part FOR TABLE t WHERE (id %% 2 = 0)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--publication", "part", "--table", "t", NULL), 3);
	tm_assert_has(out, "publishes public.t with a row filter (WHERE)");
	tm_assert_has(out, "ALTER PUBLICATION \"part\" SET TABLE");
	free(out);
	assert_int_equal(pgtest_query_long(e->s, "SELECT count(*) FROM pg_replication_slots"
	                                         " WHERE slot_name = '%s'", e->slot), 0);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_namespace"
	                                         " WHERE nspname = 'tidemark'"), 0);
	assert_int_equal(pgtest_query_long(e->s, "SELECT count(*) FROM pg_namespace"
	                                         " WHERE nspname = 'tidemark'"), 0);
	/* a column list put on tidemark's own publication after setup */
	tm_setup_table(e, "t");
	pgtest_exec(e->s, "ALTER PUBLICATION \"%s\" SET TABLE t (id, v)", e->slot);
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 3);
	tm_assert_has(out, "with a column list");
	free(out);
	pgtest_exec(e->s, "ALTER PUBLICATION \"%s\" SET TABLE t", e->slot);
	/* deletes left out of what it publishes */
	pgtest_exec(e->s, "ALTER PUBLICATION \"%s\" SET (publish = 'insert, update, truncate')",
	            e->slot);
	assert_int_equal(tm_run(e, 60, &out, "run", "--until-caught-up", NULL), 3);
	tm_assert_has(out, "does not publish delete");
	free(out);
	pgtest_exec(e->s, "ALTER PUBLICATION \"%s\" SET (publish = 'insert, update, delete, truncate')",
	            e->slot);
	pgtest_exec(e->s, "UPDATE t SET secret = 'changed' WHERE id %% 3 = 0");
	tm_catch_up(e, 60);
	tm_assert_rows_equal(e->s, "public.t", e->t, "public.t", "*");
	tm_env_free(e);
}

/* The source's own database as the target (into another schema): refused
 * before anything changes, since the capture objects and the target's
 * catalog would share the schema tidemark. */
static void
test_same_database_refused(void **state)
{
	tm_env *e = tm_env_new("errsamedb");
	char *out = NULL;
	const char *argv[] = {"setup", "--source", e->src, "--target", e->src, "--slot", e->slot,
	                      "--schema", "public", "--target-schema", "mirror", NULL};

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY)");
	assert_int_equal(run_argv(argv, &out), 3);
	tm_assert_has(out, "--source and --target are the same database");
	tm_assert_has(out, "setup changed nothing");
	free(out);
	assert_int_equal(pgtest_query_long(e->s, "SELECT count(*) FROM pg_namespace"
	                                         " WHERE nspname IN ('tidemark', 'mirror')"), 0);
	tm_env_free(e);
}

/*
 * Tables that exist on the target already (made by hand before setup):
 * tidemark writes into them, so one that cannot take the source's rows (a
 * column missing, a NOT NULL column of its own, no unique index on the
 * key) is refused with the fix, by setup and by run for a table created
 * later in a --schema, before anything is written to it; so is one made as
 * pg_dump --schema-only would (an identity column GENERATED ALWAYS, a
 * unique index besides the key, a foreign key). Once fitted, its rows end
 * equal to the source's, rows the source never had included; its own
 * nullable column stays.
 */
static void
test_existing_target_table(void **state)
{
	tm_env *e = tm_env_new("errexisting");
	char *out = NULL;

	(void) state;
	pgtest_exec(e->s, "CREATE SCHEMA app; CREATE TABLE app.orders (id int PRIMARY KEY, v text,"
	                  " w int); INSERT INTO app.orders SELECT g, 'v' || g, g FROM"
	                  " generate_series(1, 20) g");
	pgtest_exec(e->t, "CREATE SCHEMA app; CREATE TABLE app.orders (id int, v text,"
	                  " extra int NOT NULL); INSERT INTO app.orders VALUES (1000, 'stale', 1)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 3);
	tm_assert_has(out, "table app.orders exists already on the target");
	tm_assert_has(out, "It lacks the source's column(s) w");
	tm_assert_has(out, "Its own column(s) extra are NOT NULL without a default");
	tm_assert_has(out, "no primary key or unique index on (id)");
	free(out);
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.orders"), 1);
	pgtest_exec(e->t, "ALTER TABLE app.orders ADD PRIMARY KEY (id), ADD COLUMN w int,"
	                  " ALTER extra DROP NOT NULL");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "app", NULL), 0);
	free(out);
	tm_catch_up(e, 120);
	/* created later on the source, where the target has a table without the key */
	pgtest_exec(e->t, "CREATE TABLE app.later (id int, v text)");
	pgtest_exec(e->s, "CREATE TABLE app.later (id int PRIMARY KEY, v text);"
	                  " INSERT INTO app.later VALUES (1, 'one'); UPDATE app.orders SET v = 'u'"
	                  " WHERE id = 3");
	assert_int_equal(tm_run(e, 120, &out, "run", "--until-caught-up", NULL), 3);
	tm_assert_has(out, "table app.later exists already on the target");
	free(out);
	pgtest_exec(e->t, "ALTER TABLE app.later ADD PRIMARY KEY (id)");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "app.orders", e->t, "app.orders", "id, v, w");
	tm_assert_rows_equal(e->s, "app.later", e->t, "app.later", "id, v");
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM app.orders"
	                                         " WHERE extra IS NULL"), 20);
	/* made as pg_dump --schema-only of the source would, with a foreign key */
	pgtest_exec(e->s, "CREATE SCHEMA crm; CREATE TABLE crm.customers (id int GENERATED ALWAYS"
	                  " AS IDENTITY PRIMARY KEY, email text UNIQUE, ref int);"
	                  " INSERT INTO crm.customers (email) SELECT 'c' || g FROM"
	                  " generate_series(1, 5) g");
	pgtest_exec(e->t, "CREATE SCHEMA crm; CREATE TABLE crm.customers (id int GENERATED ALWAYS"
	                  " AS IDENTITY PRIMARY KEY, email text UNIQUE, ref int REFERENCES"
	                  " crm.customers)");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "crm", NULL), 3);
	tm_assert_has(out, "Its column(s) id are GENERATED ALWAYS AS IDENTITY");
	tm_assert_has(out, "Its unique index(es) customers_email_key besides the key");
	tm_assert_has(out, "Its foreign key(s) customers_ref_fkey");
	free(out);
	pgtest_exec(e->t, "ALTER TABLE crm.customers ALTER id SET GENERATED BY DEFAULT,"
	                  " DROP CONSTRAINT customers_email_key, DROP CONSTRAINT customers_ref_fkey");
	assert_int_equal(tm_run(e, 60, &out, "setup", "--schema", "crm", NULL), 0);
	free(out);
	tm_catch_up(e, 120);
	/* emails swapped between rows, one transaction at a time */
	pgtest_exec(e->s, "UPDATE crm.customers SET email = 'swap' WHERE id = 1");
	pgtest_exec(e->s, "UPDATE crm.customers SET email = 'c1' WHERE id = 2");
	pgtest_exec(e->s, "UPDATE crm.customers SET email = 'c2' WHERE id = 1");
	pgtest_exec(e->s, "INSERT INTO crm.customers (email) VALUES ('new')");
	tm_catch_up(e, 120);
	tm_assert_rows_equal(e->s, "crm.customers", e->t, "crm.customers", "id, email, ref");
	tm_env_free(e);
}

/* pgbouncer in front of the target, in session mode, ignoring the startup
 * options or not; stopped by the caller (pgtest_proc_kill, its pid). */
static pgtest_proc *
start_pooler(tm_env *e, int port, bool ignore_options)
{
	const char *bin = access("/usr/sbin/pgbouncer", X_OK) == 0 ? "/usr/sbin/pgbouncer" : "pgbouncer";
	char *users = pgtest_write_file("pooler_users.txt", "\"postgres\" \"\"\n");
	char *ini = pgtest_write_file("pooler.ini",
	                              "[databases]\n* = host=127.0.0.1 port=%d\n[pgbouncer]\n"
	                              "listen_addr = 127.0.0.1\nlisten_port = %d\n"
	                              "unix_socket_dir =\nauth_type = trust\nauth_file = %s\n"
	                              "pool_mode = session\n%s",
	                              e->dst_cluster->port, port, users,
	                              ignore_options ? "ignore_startup_parameters = options\n" : "");
	/* it will not run as root: as the clusters' user then */
	const char *argv_root[] = {"-u", "postgres", ini, NULL}, *argv[] = {ini, NULL};
	pgtest_proc *p = pgtest_spawn_program(bin, geteuid() == 0 ? argv_root : argv, NULL);
	char ping[128];

	snprintf(ping, sizeof ping, "host=127.0.0.1 port=%d dbname=postgres user=postgres", port);
	for (int i = 0; i < 100 && PQping(ping) != PQPING_OK; i++)
		tm_sleep_ms(100);
	if (PQping(ping) != PQPING_OK)
		fail_msg("pgbouncer (package pgbouncer) did not start:\n%s", pgtest_proc_output(p));
	free(users);
	free(ini);
	return p;
}

static void
stop_pooler(pgtest_proc *p)
{
	pgtest_proc_kill(p, SIGTERM);
	pgtest_proc_wait(p, 30);
	pgtest_proc_free(p);
}

/* A connection pooler between tidemark and the target: one that refuses
 * the startup options, and one that drops them (the session would read
 * and write values under the database's own DateStyle and TimeZone), are
 * refused with the fix before anything is done; directly, setup and run
 * go on. */
static void
test_connection_pooler_refused(void **state)
{
	tm_env *e = tm_env_new("errpooler");
	int port = pgtest_free_port();
	char *direct = e->dst, pooled[128], *out;
	pgtest_proc *pooler;

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE t (id int PRIMARY KEY, d date);"
	                  "INSERT INTO t VALUES (1, '2024-01-02')");
	pgtest_exec(e->t, "ALTER DATABASE dst_errpooler SET DateStyle = 'SQL, DMY'");
	snprintf(pooled, sizeof pooled, "host=127.0.0.1 port=%d dbname=dst_errpooler user=postgres",
	         port);
	e->dst = pooled;
	for (int ignore = 0; ignore < 2; ignore++) {
		pooler = start_pooler(e, port, ignore);
		out = tm_expect(e, 3, "setup", "--table", "t");
		tm_assert_has(out, ignore ? "the session's settings were not applied: DateStyle is"
		                            " \"SQL, DMY\", not \"ISO, YMD\""
		                          : "unsupported startup parameter");
		tm_assert_has(out, "connect tidemark to PostgreSQL directly, not through a pooler");
		free(out);
		stop_pooler(pooler);
	}
	e->dst = direct;
	assert_int_equal(pgtest_query_long(e->t, "SELECT count(*) FROM pg_namespace"
	                                         " WHERE nspname = 'tidemark'"), 0);
	tm_setup_table(e, "t");
	tm_catch_up(e, 60);
	tm_assert_equal(e, "t", "id");
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_connection_fails_fast),
		cmocka_unit_test(test_before_setup_and_unknown_slot),
		cmocka_unit_test(test_bad_connection_strings),
		cmocka_unit_test(test_failed_setup_says_what_it_did),
		cmocka_unit_test(test_unreadable_table_named),
		cmocka_unit_test(test_row_level_security_refused),
		cmocka_unit_test(test_role_timeouts_do_not_apply),
		cmocka_unit_test(test_partial_publication_refused),
		cmocka_unit_test(test_same_database_refused),
		cmocka_unit_test(test_connection_pooler_refused),
		cmocka_unit_test(test_existing_target_table),
		cmocka_unit_test(test_conventions),
		cmocka_unit_test(test_libpq_environment),
		cmocka_unit_test(test_refused_row_commits_nothing_after),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
