/*
 * tm_fixture.h: what the integration tests share beyond the harness: a
 * source and a target cluster for the whole test file, a fresh pair of
 * databases and a slot name per test, and running tidemark against them.
 */
#ifndef TIDEMARK_TM_FIXTURE_H
#define TIDEMARK_TM_FIXTURE_H

#include <stdbool.h>

#include <jansson.h>

#include "pgtest.h"

typedef struct tm_env {
	pgtest_cluster *src_cluster;
	pgtest_cluster *dst_cluster;
	char *src;          /* conninfo of this test's source database */
	char *dst;          /* conninfo of this test's target database */
	char slot[64];
	PGconn *s;          /* connections for the test itself */
	PGconn *t;
} tm_env;

/* Group setup/teardown: start and stop the two clusters. */
int tm_clusters_start(void **state);
int tm_clusters_stop(void **state);
/* Per test: new databases named after the test, a slot name, connections. */
tm_env *tm_env_new(const char *name);
void tm_env_free(tm_env *e);
/* Makes the source's (source true) or the target's database again in
 * encoding (C collation), before anything is set up in it; the test's
 * connection to it talks UTF8. */
void tm_env_encoding(tm_env *e, bool source, const char *encoding);

void tm_sleep_ms(int ms);

/* Waits until workload w has run `steps` steps and a checker thread has
 * counted at least min_reads reads of the target in *reads (updated with
 * __atomic_add_fetch), so that a test asks for enough of both however
 * fast either side is; fails after 180 s. */
void tm_wait_steps_and_reads(pgtest_workload *w, unsigned steps, const long *reads,
                             long min_reads);

/* `setup --table T` for one table, expecting exit 0. */
void tm_setup_table(tm_env *e, const char *table);
/* `run` with the given extra arguments (NULL-terminated), once it streams. */
pgtest_proc *tm_start_run(tm_env *e, ...);

/* Fails the test unless out holds needle (showing out). */
void tm_assert_has(const char *out, const char *needle);
/* The JSON document in a command's output (after its log lines; the
 * caller json_decrefs it), and the entry of table in its "tables"
 * (borrowed); each fails the test when there is none. */
json_t *tm_json_of(const char *out);
json_t *tm_json_table(json_t *doc, const char *table);
/* Fails the test if a background run's session started again (its stream
 * lost, a failure), saying while what. */
void tm_assert_no_restart(pgtest_proc *run, const char *while_what);
/* tidemark with the arguments given (at most 9), expecting exit code rc;
 * its output (the caller frees it). */
#define tm_expect(e, rc, ...)                                                                  \
	tm_expect_at(__FILE__, __LINE__, (e), (rc), (const char *[10]) {__VA_ARGS__, NULL})
char *tm_expect_at(const char *file, int line, tm_env *e, int rc, const char *const *a);

/* tidemark with --source/--target/--slot filled in; args NULL-terminated. */
int tm_run(tm_env *e, double timeout_s, char **output, ...);
pgtest_proc *tm_spawn(tm_env *e, ...);
/* `run` with the given extra arguments (NULL-terminated), killed with
 * SIGKILL kills times, each after first_ms plus a varying 0 to 0.9 s
 * (fails the test if a run ends before its kill). */
void tm_kill9_runs(tm_env *e, int kills, int first_ms, ...);
/* `run --until-caught-up`, expecting exit 0 (fails the test otherwise). */
void tm_catch_up(tm_env *e, double timeout_s);
/* Stops a background `run` with SIGTERM (expecting exit 0), then catches up. */
void tm_stop_and_catch_up(tm_env *e, pgtest_proc *run, double timeout_s);
/* One step of the bank workload: amount i % 50 + 1 moved between two of
 * the accounts 1..accounts (accounts: id, balance), and the move appended
 * to ledger (id bigserial, src, dst, amount), in one transaction. */
void tm_bank_transfer(PGconn *conn, unsigned accounts, unsigned i);
/* The same as a workload's step (pgtest_workload_start): accounts points
 * to the number of accounts (an unsigned that outlives the workload). */
void tm_bank_step(PGconn *conn, void *accounts, unsigned i);

/* Asserts the table is equal on both sides (fails with the difference). */
void tm_assert_equal(tm_env *e, const char *table, const char *order_by);

/* Every row of a table (SQL, e.g. fid."t") as one line of the columns
 * (SQL) as the server prints them, NULL as \N, '|' between, sorted here so
 * that no server's ordering decides; *n: the row count. Free with
 * tm_rows_free. Fails the test on an error. */
char **tm_sorted_rows(PGconn *conn, const char *table, const char *cols, int *n);
void tm_rows_free(char **rows, int n);
/* The same rows, as often, on both sides (a table without a key is a
 * multiset); fails with the first difference. */
void tm_assert_multiset_equal(tm_env *e, const char *table, const char *cols);
/* The same, for a source table and the target table it is replicated into
 * under another name (a pipeline's --target-schema). */
void tm_assert_rows_equal(PGconn *s, const char *source_table, PGconn *t, const char *target_table,
                          const char *cols);
/* The one value of sql on conn is expected (NULL: no row or an SQL NULL);
 * fails with both. */
void tm_assert_value(PGconn *conn, const char *sql, const char *expected);

/*
 * A trigger of the target's own that reads other rows, and two groups:
 * tm_trigger_tables makes tables a and b (k, v; rows 1..10, v 0) on the
 * source and sets them up; tm_trigger_look puts on the target's b a
 * trigger that records in seen (b_k, b_v, a_v) each update of b with the
 * value of a's row 1 it sees. tm_trigger_held_groups, while run applies
 * through workers: a's row 1 set to 1, a group the target holds on another
 * session's lock of that row, then b's row 2 set to 1, a group on b alone;
 * the lock let go after 1.5 s (the time b's group would need to go beside
 * a's); returns once b's row is there. Where the trigger's group waited for
 * the earlier one, as on the source, seen has 2:1:1 (b_k:b_v:a_v).
 */
void tm_trigger_tables(tm_env *e);
void tm_trigger_look(tm_env *e);
void tm_trigger_held_groups(tm_env *e);

#endif
