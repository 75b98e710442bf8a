/*
 * A real application's migration history replayed against a source
 * replicated with `setup --schema public`: fixtures/history/unleash, 384
 * steps of an open-source feature-flag server's own migrations, 2014 to 2026
 * (origin, licence and how the SQL was taken: fixtures/history/README.md).
 *
 * Each step runs on the source the way its migration tool ran it: one
 * transaction holding the step's statements and the tool's bookkeeping
 * insert. After each step a generic writer (fixtures/history/rows.sql)
 * inserts, updates and deletes a few rows of every table of the schema,
 * reading their current columns and types from the catalog. `tidemark run`
 * streams all along and is killed with SIGKILL halfway (then started
 * again). At the end:
 *
 *   - tidemark never stopped: the only exit is the kill (and the SIGTERM
 *     that ends it, exit 0);
 *   - every table with a key is equal on both sides, compared by SQL written
 *     here (each side's rows over the source's current columns, as the
 *     server prints them, sorted by the test); a table without a key under
 *     REPLICA IDENTITY FULL is compared as a multiset; a table without a key
 *     under DEFAULT is not replicated, and is named;
 *   - the audit log holds every step: each source transaction of a step for
 *     which the capture wrote a message (seen through a test_decoding slot
 *     of the test's own) has its entries in tidemark.ddl_log.
 *
 * By hand (see also the fixture's README for another history):
 *
 *   HISTORY_DIR=dir         the steps: every *.sql file of dir, in name order
 *                           (default fixtures/history/unleash/migrations)
 *   HISTORY_STEPS=n         replay the first n steps only
 *   HISTORY_KILL_AT=k       kill -9 tidemark before step k (default n / 2)
 *   HISTORY_ROWS=r          rows inserted per table and step (default 1)
 *   HISTORY_SEED=s          the writer's seed (default 1)
 *   HISTORY_TRACKED=1       also run the steps whose failure is tracked
 *                           (see tracked[] below); otherwise each is replaced
 *                           by its rewrite and the reason is printed
 *   HISTORY_WAIT=1          catch up after every step (attributes a failure
 *                           to its step; slower)
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "strbuf.h"
#include "tm_fixture.h"

#define HISTORY_SLOT_CHECK "tm_history_check"

/* A step whose failure is tracked: without HISTORY_TRACKED=1 the test runs
 * `instead` (statements with the same end state, in a form tidemark
 * follows today) and prints why. */
typedef struct tracked_step {
	const char *step;           /* file name without .sql */
	const char *reason;         /* what tidemark does with the original */
	const char *instead;        /* SQL run in its place */
} tracked_step;

/* Empty: every step runs as written. The surrogate key replaced by a
 * natural one in one transaction (20251027094509-milestone-progression-
 * natural-pk: DROP COLUMN id, ADD PRIMARY KEY (source_milestone)) was the
 * last step tracked here. */
static const tracked_step tracked[] = {
	{NULL, NULL, NULL},
};

typedef struct history_cfg {
	char dir[1024];
	int steps;                  /* how many to replay */
	int kill_at;
	int rows;
	int seed;
	bool run_tracked;
	bool wait_each;
} history_cfg;

static int
env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? atoi(v) : dflt;
}

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The step names (file names without .sql) of dir, sorted; *n their count. */
static char **
list_steps(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	int cap = 0;
	struct dirent *de;

	if (d == NULL)
		fail_msg("cannot open the history %s", dir);
	*n = 0;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (len < 5 || strcmp(de->d_name + len - 4, ".sql") != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			names = realloc(names, (size_t) cap * sizeof *names);
		}
		names[(*n)++] = strndup(de->d_name, len - 4);
	}
	closedir(d);
	qsort(names, (size_t) *n, sizeof *names, compare_names);
	return names;
}

static char *
read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	strbuf sb = STRBUF_INIT;
	char buf[8192];
	size_t got;

	if (f == NULL)
		fail_msg("cannot read %s", path);
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		strbuf_appendn(&sb, buf, got);
	fclose(f);
	return strbuf_steal(&sb);
}

static const tracked_step *
find_tracked(const char *step)
{
	for (const tracked_step *t = tracked; t->step != NULL; t++)
		if (strcmp(t->step, step) == 0)
			return t;
	return NULL;
}

/* A step's failure on the source: the message, its SQLSTATE and the table
 * it names (PG_DIAG_TABLE_NAME, "" if none). */
typedef struct step_error {
	char *message;
	char sqlstate[6];
	char table[128];
} step_error;

/* Runs one command; false (and *err filled) on an error. */
static bool
exec_step(PGconn *conn, const char *sql, step_error *err)
{
	PGresult *r = PQexec(conn, sql);
	ExecStatusType st = PQresultStatus(r);
	const char *f;

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		PQclear(r);
		return true;
	}
	err->message = strdup(PQerrorMessage(conn));
	f = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	snprintf(err->sqlstate, sizeof err->sqlstate, "%s", f ? f : "");
	f = PQresultErrorField(r, PG_DIAG_TABLE_NAME);
	snprintf(err->table, sizeof err->table, "%s", f ? f : "");
	PQclear(r);
	return false;
}

/* The table a refusal for want of a replica identity names ("cannot
 * delete from table "t" because it does not have a replica identity and
 * publishes deletes"), or NULL for any other error. */
static char *
table_without_identity(const char *err)
{
	const char *a, *b;

	if (strstr(err, "does not have a replica identity") == NULL)
		return NULL;
	a = strchr(err, '"');
	b = a ? strchr(a + 1, '"') : NULL;
	return b ? strndup(a + 1, (size_t) (b - a - 1)) : NULL;
}

/* Deletes the writer's rows of every table of public (a refusal, by a
 * foreign key or the publication, leaves that table's). */
static void
delete_written_everywhere(PGconn *s)
{
	PGresult *r = PQexec(s, "SELECT c.oid::regclass FROM pg_class c WHERE c.relnamespace ="
	                        " 'public'::regnamespace AND c.relkind IN ('r', 'p')"
	                        " AND NOT c.relispartition");

	for (int i = 0; i < PQntuples(r); i++)
		free(pgtest_exec_error(s, "DELETE FROM %s WHERE xmin::text IN (SELECT x FROM gen.written)",
		                       PQgetvalue(r, i, 0)));
	PQclear(r);
}

/* What the test does when a step fails on the source, as an operator
 * would, before running the step again; false if it knows nothing to do.
 *
 * - With --schema the publication covers every table of the schema, and
 *   PostgreSQL refuses UPDATE and DELETE on a table there without a replica
 *   identity: the step fails. The fix `run` advises: REPLICA IDENTITY FULL.
 * - A data migration written for the application's own rows can trip over
 *   the generic writer's (a NOT NULL, unique or foreign key violation,
 *   SQLSTATE class 23, in a table the error names): the writer's rows of
 *   that table are deleted; if the step fails there again, the table is
 *   emptied (TRUNCATE ... CASCADE, replicated like any TRUNCATE); then the
 *   writer's rows of every table are deleted (a data migration may read
 *   one table and write another). */
static bool
repair_for_step(tm_env *e, const char *name, const step_error *err, int attempt)
{
	PGconn *s = e->s;
	char *table = table_without_identity(err->message);
	char *quoted, *msg = NULL;

	if (table != NULL) {
		print_message("history: step %s: the source refuses it until \"%s\" has a replica"
		              " identity: REPLICA IDENTITY FULL, and again\n", name, table);
		quoted = pgtest_query_value(s, "SELECT quote_ident('%s')", table);
		/* and again at once: the step changes the table's columns while its
		 * one-read copy starts (test_keyless: test_columns_replaced_during_read) */
		pgtest_exec(s, "ALTER TABLE public.%s REPLICA IDENTITY FULL", quoted);
	} else if (strncmp(err->sqlstate, "23", 2) == 0 && err->table[0] != '\0') {
		quoted = pgtest_query_value(s, "SELECT quote_ident('%s')", err->table);
		if (attempt == 0 && (msg = pgtest_exec_error(s, "DELETE FROM public.%s WHERE xmin::text"
		                                             " IN (SELECT x FROM gen.written)", quoted)) == NULL)
			print_message("history: step %s: its data migration fails on the writer's rows of"
			              " \"%s\" (SQLSTATE %s): they are deleted, and again\n", name,
			              err->table, err->sqlstate);
		else if (attempt <= 1) {
			print_message("history: step %s: its data migration still fails on \"%s\": the"
			              " table emptied, and again\n", name, err->table);
			pgtest_exec(s, "TRUNCATE public.%s CASCADE", quoted);
		} else {
			print_message("history: step %s: its data migration still fails: the writer's rows"
			              " of every table are deleted, and again\n", name);
			delete_written_everywhere(s);
		}
	} else
		return false;
	free(msg);
	free(quoted);
	free(table);
	return true;
}

/* Runs a step as its migration tool did: BEGIN, the step's statements (one
 * string), the bookkeeping insert, COMMIT. Returns the transaction id. */
static long
apply_step(tm_env *e, const char *name, const char *sql)
{
	PGconn *s = e->s;

	for (int attempt = 0;; attempt++) {
		step_error err = {0};
		long xid;

		/* the id first: a step that commits by itself (one does) ends the
		 * transaction before the bookkeeping insert, as under db-migrate */
		pgtest_exec(s, "BEGIN");
		xid = pgtest_query_long(s, "SELECT txid_current()");
		if (*sql == '\0' || exec_step(s, sql, &err)) {
			pgtest_exec(s, "INSERT INTO public.\"migrations\" (\"name\", \"run_on\")"
			               " VALUES ('/%s', now())", name);
			if (PQtransactionStatus(s) == PQTRANS_INTRANS)
				pgtest_exec(s, "COMMIT");
			return xid;
		}
		pgtest_exec(s, "ROLLBACK");
		if (attempt > 4 || !repair_for_step(e, name, &err, attempt))
			fail_msg("step %s does not apply on the source: %s", name, err.message);
		free(err.message);
	}
}

/* What db-migrate creates before the first migration. */
static void
create_bookkeeping(PGconn *s)
{
	pgtest_exec(s, "CREATE TABLE IF NOT EXISTS \"migrations\" (\"id\" SERIAL PRIMARY KEY NOT NULL,"
	               " \"name\" VARCHAR (255) NOT NULL, \"run_on\" TIMESTAMP NOT NULL)");
}

static pgtest_proc *
start_run(tm_env *e)
{
	pgtest_proc *run = tm_spawn(e, "run", NULL);

	if (!pgtest_proc_wait_output(run, "streaming from slot", 60))
		fail_msg("run did not start:\n%s", pgtest_proc_output(run));
	return run;
}

/* The last lines of a process's output (its end is where the cause is). */
static const char *
output_tail(pgtest_proc *p)
{
	const char *out = pgtest_proc_output(p);
	size_t len = strlen(out);

	return len > 6000 ? out + len - 6000 : out;
}

static void
assert_running(pgtest_proc *run, const char *step)
{
	if (!pgtest_proc_running(run)) {
		int rc = pgtest_proc_wait(run, 5);

		fprintf(stderr, "history: the end of tidemark's output:\n%s\n", output_tail(run));
		fail_msg("tidemark run exited (%d) after step %s", rc, step);
	}
}

/* Waits until the target has applied everything the source wrote so far. */
static void
wait_applied(tm_env *e, pgtest_proc *run, const char *step)
{
	char *lsn = pgtest_query_value(e->s, "SELECT pg_current_wal_lsn()");
	char sql[256];

	snprintf(sql, sizeof sql, "SELECT applied_lsn >= '%s' FROM tidemark.progress", lsn);
	if (!pgtest_wait_value(e->t, sql, "t", 60)) {
		assert_running(run, step);
		fail_msg("the target did not reach %s after step %s", lsn, step);
	}
	free(lsn);
}

static void
install_writer(tm_env *e)
{
	char path[1200];
	char *sql;

	snprintf(path, sizeof path, "%s/history/rows.sql", FIXTURES_DIR);
	sql = read_file(path);
	pgtest_exec(e->s, "%s", sql);
	free(sql);
}

static void
read_cfg(history_cfg *cfg, int available)
{
	const char *dir = getenv("HISTORY_DIR");

	snprintf(cfg->dir, sizeof cfg->dir, "%s", dir && *dir ? dir
	         : FIXTURES_DIR "/history/unleash/migrations");
	cfg->steps = env_int("HISTORY_STEPS", available);
	if (cfg->steps > available || cfg->steps < 0)
		cfg->steps = available;
	cfg->kill_at = env_int("HISTORY_KILL_AT", cfg->steps / 2);
	cfg->rows = env_int("HISTORY_ROWS", 1);
	cfg->seed = env_int("HISTORY_SEED", 1);
	cfg->run_tracked = env_int("HISTORY_TRACKED", 0) != 0;
	cfg->wait_each = env_int("HISTORY_WAIT", 0) != 0;
}

/* ---- the comparison ------------------------------------------------------ */

/* The source's current columns of a table, quoted, comma-separated. */
static char *
source_columns(PGconn *s, const char *oid)
{
	return pgtest_query_value(s, "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)"
	                             " FROM pg_attribute WHERE attrelid = %s AND attnum > 0"
	                             " AND NOT attisdropped", oid);
}

/* Prints each column whose type on the target is not the source's (the
 * policy's choice, e.g. widen; `tidemark schema` says why). */
static void
print_type_differences(tm_env *e, const char *oid, const char *name)
{
	char *src = pgtest_query_value(e->s, "SELECT string_agg(attname || ' ' || format_type(atttypid,"
	                                     " atttypmod), ',' ORDER BY attname) FROM pg_attribute"
	                                     " WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
	                               oid);
	char *list = src ? src : strdup("");

	for (char *col = strtok(list, ","); col != NULL; col = strtok(NULL, ",")) {
		char *sp = strchr(col, ' ');
		char *dst;

		*sp = '\0';
		dst = pgtest_query_value(e->t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
		                               " WHERE attrelid = 'public.%s'::regclass AND attname = '%s'"
		                               " AND NOT attisdropped", name, col);
		if (dst == NULL || strcmp(dst, sp + 1) != 0)
			print_message("history: public.%s.%s is %s on the source, %s on the target\n", name,
			              col, sp + 1, dst ? dst : "missing");
		free(dst);
	}
	free(list);
}

/* NULL when equal, else what differs (the first differing line, sorted). */
static char *
rows_differ(tm_env *e, const char *table, const char *cols)
{
	int ns, nt;
	char **src = tm_sorted_rows(e->s, table, cols, &ns);
	char **dst = tm_sorted_rows(e->t, table, cols, &nt);
	char *diff = NULL;

	for (int i = 0; (i < ns || i < nt) && diff == NULL; i++) {
		const char *a = i < ns ? src[i] : "(no more rows)";
		const char *b = i < nt ? dst[i] : "(no more rows)";

		if (strcmp(a, b) != 0 &&
		    asprintf(&diff, "%d rows on the source, %d on the target; first difference:\n"
		                    "    source: %.300s\n    target: %.300s", ns, nt, a, b) < 0)
			fail_msg("out of memory");
	}
	tm_rows_free(src, ns);
	tm_rows_free(dst, nt);
	return diff;
}

/* Compares every table of public; returns the number that differ. */
static int
compare_tables(tm_env *e, int *compared)
{
	PGresult *r = PQexec(e->s,
		"SELECT c.oid, quote_ident(c.relname),"
		"       EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND (i.indisprimary OR"
		"               (i.indisreplident AND c.relreplident = 'i')"
		"               OR (c.relreplident = 'f' AND i.indisunique AND i.indpred IS NULL"
		"                   AND i.indexprs IS NULL AND i.indimmediate AND NOT EXISTS ("
		"                   SELECT FROM pg_attribute a WHERE a.attrelid = c.oid"
		"                    AND a.attnum = ANY (i.indkey) AND NOT a.attnotnull)))),"
		"       c.relreplident"
		"  FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace"
		"   AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname");
	int differ = 0;
	strbuf unreplicated = STRBUF_INIT;

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("listing the source's tables: %s", PQerrorMessage(e->s));
	*compared = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *name = PQgetvalue(r, i, 1);
		bool keyed = strcmp(PQgetvalue(r, i, 2), "t") == 0;
		bool full = strcmp(PQgetvalue(r, i, 3), "f") == 0;
		char table[300];
		char *cols, *diff;

		if (!keyed && !full) {
			strbuf_appendf(&unreplicated, " %s", name);
			continue;
		}
		snprintf(table, sizeof table, "public.%s", name);
		print_type_differences(e, PQgetvalue(r, i, 0), name);
		cols = source_columns(e->s, PQgetvalue(r, i, 0));
		diff = rows_differ(e, table, cols);
		(*compared)++;
		if (diff != NULL) {
			print_message("history: %s%s differs: %s\n", table, keyed ? "" : " (no key)", diff);
			differ++;
		}
		free(diff);
		free(cols);
	}
	PQclear(r);
	print_message("history: tables without a key under REPLICA IDENTITY DEFAULT, not replicated:%s\n",
	              unreplicated.len ? unreplicated.data : " none");
	strbuf_free(&unreplicated);
	return differ;
}

/* Every step transaction for which the capture wrote a message has entries
 * in the audit log; returns how many have none (each printed). */
static int
check_audit_log(tm_env *e, char **names, long *xids, int n, int *with_ddl)
{
	int missing = 0;

	*with_ddl = 0;
	for (int i = 0; i < n; i++) {
		long msgs, logged;

		if (xids[i] == 0)
			continue;
		msgs = pgtest_query_long(e->s, "SELECT count(*) FROM gen.captured WHERE xid = %ld",
		                         xids[i] % 4294967296L);
		if (msgs == 0)
			continue;
		(*with_ddl)++;
		logged = pgtest_query_long(e->t, "SELECT count(*) FROM tidemark.ddl_log WHERE xid = %ld",
		                           xids[i]);
		if (logged == 0) {
			print_message("history: step %s: %ld capture messages, nothing in the audit log\n",
			              names[i], msgs);
			missing++;
		}
	}
	return missing;
}

/* The capture messages of the whole run, read once from the test's own
 * test_decoding slot into gen.captured (not replicated). */
static void
collect_captured(tm_env *e)
{
	pgtest_exec(e->s, "CREATE TABLE gen.captured AS SELECT xid::text::bigint AS xid"
	                  " FROM pg_logical_slot_get_changes('" HISTORY_SLOT_CHECK "', NULL, NULL)"
	                  " WHERE data LIKE 'message: transactional: 1 prefix: tidemark.ddl,%%'");
	pgtest_exec(e->s, "SELECT pg_drop_replication_slot('" HISTORY_SLOT_CHECK "')");
}

/* ---- the test ---------------------------------------------------------------- */

static void
replay(tm_env *e, const history_cfg *cfg, char **names, long *xids, pgtest_proc **run)
{
	for (int i = 0; i < cfg->steps; i++) {
		const tracked_step *t = cfg->run_tracked ? NULL : find_tracked(names[i]);
		char path[2300];
		char *sql, *wrote;

		if (i == cfg->kill_at) {
			pgtest_proc_kill(*run, SIGKILL);
			assert_int_equal(pgtest_proc_wait(*run, 30), 128 + SIGKILL);
			pgtest_proc_free(*run);
			print_message("history: tidemark killed with SIGKILL before step %d (%s)\n", i + 1,
			              names[i]);
			*run = start_run(e);
		}
		if (t != NULL) {
			print_message("history: step %s rewritten: %s\n", names[i], t->reason);
			sql = strdup(t->instead);
		} else {
			snprintf(path, sizeof path, "%s/%s.sql", cfg->dir, names[i]);
			sql = read_file(path);
		}
		xids[i] = apply_step(e, names[i], sql);
		free(sql);
		wrote = pgtest_query_value(e->s, "SELECT gen.write_rows('public', %f, %d)",
		                           (double) ((cfg->seed * 7919 + i) % 2000 - 1000) / 1000.0,
		                           cfg->rows);
		if (getenv("HISTORY_VERBOSE") != NULL)
			print_message("history: step %d %s: %s\n", i + 1, names[i], wrote);
		free(wrote);
		assert_running(*run, names[i]);
		if (cfg->wait_each)
			wait_applied(e, *run, names[i]);
	}
}

static void
test_history_replayed(void **state)
{
	tm_env *e = tm_env_new("history");
	history_cfg cfg;
	char **names;
	long *xids;
	int n, compared, differ, missing, with_ddl;
	char *out = NULL;
	pgtest_proc *run;

	(void) state;
	snprintf(cfg.dir, sizeof cfg.dir, "%s", getenv("HISTORY_DIR") && *getenv("HISTORY_DIR")
	         ? getenv("HISTORY_DIR") : FIXTURES_DIR "/history/unleash/migrations");
	names = list_steps(cfg.dir, &n);
	read_cfg(&cfg, n);
	xids = calloc((size_t) n + 1, sizeof *xids);
	install_writer(e);
	create_bookkeeping(e->s);
	if (tm_run(e, 60, &out, "setup", "--schema", "public", NULL) != 0)
		fail_msg("setup --schema public:\n%s", out);
	free(out);
	pgtest_exec(e->s, "SELECT pg_create_logical_replication_slot('" HISTORY_SLOT_CHECK "',"
	                  " 'test_decoding')");
	run = start_run(e);
	print_message("history: %d steps of %s, kill -9 before step %d, %d rows per table and step\n",
	              cfg.steps, cfg.dir, cfg.kill_at + 1, cfg.rows);
	replay(e, &cfg, names, xids, &run);
	tm_stop_and_catch_up(e, run, 300);
	collect_captured(e);

	differ = compare_tables(e, &compared);
	missing = check_audit_log(e, names, xids, cfg.steps, &with_ddl);
	print_message("history: %d tables compared, %d differ; %d steps with DDL, %d missing from"
	              " the audit log\n", compared, differ, with_ddl, missing);
	assert_int_equal(differ, 0);
	assert_int_equal(missing, 0);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(xids);
	tm_env_free(e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_history_replayed),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
