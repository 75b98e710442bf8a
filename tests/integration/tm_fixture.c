#include "tm_fixture.h"

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

#include "strbuf.h"

static pgtest_cluster *src_cluster;
static pgtest_cluster *dst_cluster;

int
tm_clusters_start(void **state)
{
	(void) state;
	src_cluster = pgtest_cluster_start_with("src", "max_wal_senders=20",
	                                        "max_replication_slots=20",
	                                        "max_prepared_transactions=10");
	dst_cluster = pgtest_cluster_start_with("dst", "max_connections=100");
	return 0;
}

int
tm_clusters_stop(void **state)
{
	(void) state;
	pgtest_cluster_stop(src_cluster);
	pgtest_cluster_stop(dst_cluster);
	return 0;
}

tm_env *
tm_env_new(const char *name)
{
	tm_env *e = calloc(1, sizeof *e);
	PGconn *admin;

	e->src_cluster = src_cluster;
	e->dst_cluster = dst_cluster;
	snprintf(e->slot, sizeof e->slot, "tm_%s", name);
	admin = pgtest_connect(src_cluster);
	pgtest_exec(admin, "CREATE DATABASE \"src_%s\"", name);
	PQfinish(admin);
	admin = pgtest_connect(dst_cluster);
	pgtest_exec(admin, "CREATE DATABASE \"dst_%s\"", name);
	PQfinish(admin);
	{
		char db[128];

		snprintf(db, sizeof db, "src_%s", name);
		e->src = pgtest_conninfo_db(src_cluster, db);
		snprintf(db, sizeof db, "dst_%s", name);
		e->dst = pgtest_conninfo_db(dst_cluster, db);
	}
	e->s = pgtest_connect_str(e->src);
	e->t = pgtest_connect_str(e->dst);
	return e;
}

void
tm_env_encoding(tm_env *e, bool source, const char *encoding)
{
	PGconn **conn = source ? &e->s : &e->t;
	PGconn *admin = pgtest_connect(source ? e->src_cluster : e->dst_cluster);
	char *db = strdup(PQdb(*conn));

	PQfinish(*conn);
	pgtest_exec(admin, "DROP DATABASE \"%s\"", db);
	pgtest_exec(admin, "CREATE DATABASE \"%s\" ENCODING '%s' LC_COLLATE 'C' LC_CTYPE 'C'"
	                   " TEMPLATE template0", db, encoding);
	PQfinish(admin);
	*conn = pgtest_connect_str(source ? e->src : e->dst);
	pgtest_exec(*conn, "SET client_encoding = 'UTF8'");
	free(db);
}

void
tm_env_free(tm_env *e)
{
	char *slot_drop = NULL;

	if (e == NULL)
		return;
	/* free the slot: it would hold WAL for the rest of the file's tests */
	slot_drop = pgtest_exec_error(e->s,
	                              "SELECT pg_drop_replication_slot(slot_name)"
	                              " FROM pg_replication_slots WHERE slot_name = '%s'"
	                              " AND NOT active", e->slot);
	free(slot_drop);
	PQfinish(e->s);
	PQfinish(e->t);
	free(e->src);
	free(e->dst);
	free(e);
}

/* argv: the command, then --source, --target, --slot, then the caller's
 * arguments (a NULL-terminated va_list). */
static const char **
build_argv(tm_env *e, const char *first, va_list ap)
{
	const char **argv = calloc(64, sizeof(char *));
	int n = 0;

	argv[n++] = first;
	argv[n++] = "--source";
	argv[n++] = e->src;
	argv[n++] = "--target";
	argv[n++] = e->dst;
	argv[n++] = "--slot";
	argv[n++] = e->slot;
	argv[n++] = "--publication";
	argv[n++] = e->slot;
	for (const char *a; n < 63 && (a = va_arg(ap, const char *)) != NULL;)
		argv[n++] = a;
	return argv;
}

int
tm_run(tm_env *e, double timeout_s, char **output, ...)
{
	va_list ap;
	const char **argv;
	const char *first;
	int rc;

	va_start(ap, output);
	first = va_arg(ap, const char *);
	argv = build_argv(e, first, ap);
	va_end(ap);
	rc = pgtest_run_tidemark(argv, timeout_s, output);
	free(argv);
	return rc;
}

pgtest_proc *
tm_spawn(tm_env *e, ...)
{
	va_list ap;
	const char **argv;
	const char *first;
	pgtest_proc *p;

	va_start(ap, e);
	first = va_arg(ap, const char *);
	argv = build_argv(e, first, ap);
	va_end(ap);
	p = pgtest_spawn(argv, NULL);
	free(argv);
	return p;
}

void
tm_assert_has(const char *out, const char *needle)
{
	if (out == NULL || strstr(out, needle) == NULL)
		fail_msg("the output lacks \"%s\":\n%s", needle, out ? out : "(none)");
}

void
tm_assert_no_restart(pgtest_proc *run, const char *while_what)
{
	if (strstr(pgtest_proc_output(run), "resuming from the target's position") != NULL)
		fail_msg("run's session started again while %s:\n%s", while_what,
		         pgtest_proc_output(run));
}

char *
tm_expect_at(const char *file, int line, tm_env *e, int rc, const char *const *a)
{
	char *out = NULL;
	int got = tm_run(e, 120, &out, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], NULL);

	if (got != rc)
		fail_msg("%s:%d: tidemark %s exited %d, expected %d:\n%s", file, line, a[0], got, rc,
		         out ? out : "");
	return out;
}

void
tm_catch_up(tm_env *e, double timeout_s)
{
	char *out = NULL;
	int rc = tm_run(e, timeout_s, &out, "run", "--until-caught-up", NULL);

	if (rc != 0)
		fail_msg("tidemark run --until-caught-up exited %d:\n%s", rc, out ? out : "");
	free(out);
}

void
tm_stop_and_catch_up(tm_env *e, pgtest_proc *run, double timeout_s)
{
	int rc;

	/* signals before the handlers are installed would just kill it */
	if (!pgtest_proc_wait_output(run, "streaming from slot", 60))
		fail_msg("tidemark run did not start streaming:\n%s", pgtest_proc_output(run));
	pgtest_proc_kill(run, SIGTERM);
	rc = pgtest_proc_wait(run, 60);
	if (rc != 0)
		fail_msg("tidemark run exited %d after SIGTERM:\n%s", rc, pgtest_proc_output(run));
	pgtest_proc_free(run);
	tm_catch_up(e, timeout_s);
}

void
tm_bank_transfer(PGconn *conn, unsigned accounts, unsigned i)
{
	unsigned from = (i * 7919u + 13) % accounts + 1;
	unsigned to = (i * 104729u + 7) % accounts + 1;

	if (from == to)
		to = to % accounts + 1;
	pgtest_exec(conn, "BEGIN; UPDATE accounts SET balance = balance - %u WHERE id = %u;"
	                  " UPDATE accounts SET balance = balance + %u WHERE id = %u;"
	                  " INSERT INTO ledger (src, dst, amount) VALUES (%u, %u, %u); COMMIT",
	            i % 50 + 1, from, i % 50 + 1, to, from, to, i % 50 + 1);
}

void
tm_bank_step(PGconn *conn, void *accounts, unsigned i)
{
	tm_bank_transfer(conn, *(const unsigned *) accounts, i);
}

void
tm_assert_equal(tm_env *e, const char *table, const char *order_by)
{
	char *diff = NULL;

	if (!pgtest_tables_equal(e->s, e->t, table, order_by, &diff))
		fail_msg("%s differs between source and target: %s", table, diff ? diff : "?");
}

void
tm_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

void
tm_wait_steps_and_reads(pgtest_workload *w, unsigned steps, const long *reads, long min_reads)
{
	for (int waited = 0; pgtest_workload_iterations(w) < steps ||
	                     __atomic_load_n(reads, __ATOMIC_RELAXED) < min_reads;
	     waited += 50) {
		if (waited > 180000)
			fail_msg("after 180 s: %u of %u steps, %ld of %ld target reads",
			         pgtest_workload_iterations(w), steps,
			         __atomic_load_n(reads, __ATOMIC_RELAXED), min_reads);
		tm_sleep_ms(50);
	}
}

void
tm_setup_table(tm_env *e, const char *table)
{
	char *out = NULL;
	int rc = tm_run(e, 60, &out, "setup", "--table", table, NULL);

	if (rc != 0)
		fail_msg("setup exited %d:\n%s", rc, out);
	free(out);
}

void
tm_kill9_runs(tm_env *e, int kills, int first_ms, ...)
{
	va_list ap;
	const char **argv;

	va_start(ap, first_ms);
	argv = build_argv(e, "run", ap);
	va_end(ap);
	for (int k = 0; k < kills; k++) {
		pgtest_proc *run = pgtest_spawn(argv, NULL);

		tm_sleep_ms(first_ms + (k * 373) % 900);
		if (!pgtest_proc_running(run))
			fail_msg("tidemark run ended before the kill:\n%s", pgtest_proc_output(run));
		pgtest_proc_kill(run, SIGKILL);
		assert_int_equal(pgtest_proc_wait(run, 30), 128 + SIGKILL);
		pgtest_proc_free(run);
	}
	free(argv);
}

pgtest_proc *
tm_start_run(tm_env *e, ...)
{
	va_list ap;
	const char **argv;
	pgtest_proc *run;

	va_start(ap, e);
	argv = build_argv(e, "run", ap);
	va_end(ap);
	run = pgtest_spawn(argv, NULL);
	free(argv);
	if (!pgtest_proc_wait_output(run, "streaming from slot", 60))
		fail_msg("run did not start:\n%s", pgtest_proc_output(run));
	return run;
}

static int
compare_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

char **
tm_sorted_rows(PGconn *conn, const char *table, const char *cols, int *n)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r;
	char **lines;

	strbuf_appendf(&sql, "SELECT %s FROM %s", cols, table);
	r = PQexec(conn, sql.data);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql.data, PQerrorMessage(conn));
	strbuf_free(&sql);
	*n = PQntuples(r);
	lines = calloc((size_t) *n + 1, sizeof(char *));
	for (int i = 0; i < *n; i++) {
		strbuf sb = STRBUF_INIT;

		for (int c = 0; c < PQnfields(r); c++) {
			if (c > 0)
				strbuf_appendc(&sb, '|');
			strbuf_append(&sb, PQgetisnull(r, i, c) ? "\\N" : PQgetvalue(r, i, c));
		}
		lines[i] = strbuf_steal(&sb);
	}
	PQclear(r);
	qsort(lines, (size_t) *n, sizeof(char *), compare_lines);
	return lines;
}

void
tm_rows_free(char **rows, int n)
{
	for (int i = 0; i < n; i++)
		free(rows[i]);
	free(rows);
}

void
tm_assert_value(PGconn *conn, const char *sql, const char *expected)
{
	char *v = pgtest_query_value(conn, "%s", sql);
	bool same = v == NULL ? expected == NULL : expected != NULL && strcmp(v, expected) == 0;

	if (!same)
		fail_msg("%s: %s, expected %s", sql, v ? v : "NULL", expected ? expected : "NULL");
	free(v);
}

void
tm_assert_rows_equal(PGconn *s, const char *stable, PGconn *t, const char *ttable, const char *cols)
{
	int ns = 0, nt = 0;
	char **src = tm_sorted_rows(s, stable, cols, &ns);
	char **dst = tm_sorted_rows(t, ttable, cols, &nt);

	for (int i = 0; i < ns || i < nt; i++) {
		const char *a = i < ns ? src[i] : "(no more rows)";
		const char *b = i < nt ? dst[i] : "(no more rows)";

		if (strcmp(a, b) != 0)
			fail_msg("%s differs from %s (%d rows on the source, %d on the target); first "
			         "difference, sorted:\n  source: %.300s\n  target: %.300s", ttable, stable,
			         ns, nt, a, b);
	}
	tm_rows_free(src, ns);
	tm_rows_free(dst, nt);
}

void
tm_assert_multiset_equal(tm_env *e, const char *table, const char *cols)
{
	tm_assert_rows_equal(e->s, table, e->t, table, cols);
}

/* ---- a trigger that reads other rows (tm_fixture.h) ---- */

void
tm_trigger_tables(tm_env *e)
{
	pgtest_exec(e->s, "CREATE TABLE a (k int PRIMARY KEY, v int);"
	                  "CREATE TABLE b (k int PRIMARY KEY, v int);"
	                  "INSERT INTO a SELECT g, 0 FROM generate_series(1, 10) g;"
	                  "INSERT INTO b SELECT g, 0 FROM generate_series(1, 10) g");
	tm_setup_table(e, "a");
	tm_setup_table(e, "b");
}

void
tm_trigger_look(tm_env *e)
{
	pgtest_exec(e->t, "CREATE TABLE seen (b_k int, b_v int, a_v int);"
	                  "CREATE FUNCTION look() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
	                  " INSERT INTO seen SELECT NEW.k, NEW.v, v FROM a WHERE k = 1;"
	                  " RETURN NEW; END $$;"
	                  "CREATE TRIGGER look AFTER UPDATE ON b FOR EACH ROW EXECUTE FUNCTION look()");
}

void
tm_trigger_held_groups(tm_env *e)
{
	PGconn *holder = pgtest_connect_at(__FILE__, __LINE__, e->dst);

	pgtest_exec(holder, "BEGIN; SELECT * FROM a WHERE k = 1 FOR UPDATE");
	pgtest_exec(e->s, "UPDATE a SET v = 1 WHERE k = 1");
	assert_true(pgtest_wait_value(e->t, "SELECT count(*) > 0 FROM pg_stat_activity"
	                                    " WHERE wait_event_type = 'Lock'", "t", 60));
	pgtest_exec(e->s, "UPDATE b SET v = 1 WHERE k = 2");
	tm_sleep_ms(1500);
	pgtest_exec(holder, "COMMIT");
	PQfinish(holder);
	assert_true(pgtest_wait_value(e->t, "SELECT v FROM b WHERE k = 2", "1", 60));
}

json_t *
tm_json_of(const char *out)
{
	json_error_t err;
	const char *start = strchr(out, '{');
	json_t *doc = start != NULL ? json_loads(start, 0, &err) : NULL;

	if (doc == NULL)
		fail_msg("no JSON document in:\n%s", out);
	return doc;
}

json_t *
tm_json_table(json_t *doc, const char *table)
{
	size_t i;
	json_t *t;

	json_array_foreach(json_object_get(doc, "tables"), i, t)
		if (strcmp(json_string_value(json_object_get(t, "table")), table) == 0)
			return t;
	fail_msg("no table %s in the document", table);
	return NULL;
}
