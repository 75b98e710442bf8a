/*
 * bench_killloop: the long soak of crash safety, outside the suite. kill -9
 * of tidemark at random instants, many times in a row, while a table is
 * being copied and a workload writes; then the target must equal the
 * source row for row, and the target must have applied every source row
 * change exactly once (a change-log trigger counts them on both sides).
 *
 *   cmake --build build --target bench_killloop && build/tests/bench_killloop [KILLS] [SEED]
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

#include "benchlib.h"
#include "tm_fixture.h"

static int kills = 100;
static unsigned seed;

static const char *const change_log =
	"CREATE TABLE change_log (n bigserial);"
	"CREATE FUNCTION log_change() RETURNS trigger LANGUAGE plpgsql AS"
	" $$BEGIN INSERT INTO change_log DEFAULT VALUES; RETURN NULL; END$$;"
	"CREATE TRIGGER log_change AFTER INSERT OR UPDATE OR DELETE ON events"
	" FOR EACH ROW EXECUTE FUNCTION log_change()";

static void
step(PGconn *conn, void *arg, unsigned i)
{
	(void) arg;
	pgtest_exec(conn, "INSERT INTO events (kind, payload) SELECT %u, md5(random()::text)"
	                  " FROM generate_series(1, %u)", i % 9, i % 4 + 1);
	if (i % 3 == 0)
		pgtest_exec(conn, "UPDATE events SET kind = kind + 1 WHERE id %% 11 = %u", i % 11);
	if (i % 5 == 0)
		pgtest_exec(conn, "DELETE FROM events WHERE id = (SELECT max(id) - 3 FROM events)");
	if (i % 17 == 0)
		pgtest_exec(conn, "UPDATE big SET v = md5(v) WHERE id %% 101 = %u", i % 101);
}

static void
soak(void **state)
{
	tm_env *e = tm_env_new("soak");
	pgtest_workload *w;
	double start = bench_now();

	(void) state;
	pgtest_exec(e->s, "CREATE TABLE big (id int PRIMARY KEY, v text);"
	                  "INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 300000) g;"
	                  "CREATE TABLE events (id bigserial PRIMARY KEY, kind int, payload text)");
	/* events first, copied while still empty (the target's trigger counts
	 * only changes the stream applies); big afterwards: the kills hit its copy */
	tm_setup_table(e, "events");
	tm_catch_up(e, 60);
	pgtest_exec(e->s, "%s", change_log);
	pgtest_exec(e->t, "%s", change_log);
	tm_setup_table(e, "big");
	w = pgtest_workload_start(e->src, step, NULL);
	for (int k = 0; k < kills; k++) {
		/* change by change: the change logs count every change */
		pgtest_proc *run = tm_spawn(e, "run", "--chunk-rows", "5000", "--no-net-changes", NULL);

		tm_sleep_ms(100 + (int) (rand_r(&seed) % 1500));
		pgtest_proc_kill(run, SIGKILL);
		pgtest_proc_wait(run, 30);
		pgtest_proc_free(run);
		if (k % 10 == 9)
			printf("%d kills, %.0f s\n", k + 1, bench_now() - start);
	}
	pgtest_workload_stop(w, NULL);
	assert_int_equal(tm_run(e, 600, NULL, "run", "--until-caught-up", "--no-net-changes", NULL), 0);
	tm_assert_equal(e, "big", "id");
	tm_assert_equal(e, "events", "id");
	assert_int_equal(pgtest_query_long(e->s, "SELECT count(*) FROM change_log"),
	                 pgtest_query_long(e->t, "SELECT count(*) FROM change_log"));
	printf("%d kills in %.0f s: target equals source, every change applied once\n", kills,
	       bench_now() - start);
	tm_env_free(e);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(soak)};

	if (argc > 1)
		kills = atoi(argv[1]);
	seed = argc > 2 ? (unsigned) atoi(argv[2]) : (unsigned) time(NULL);
	printf("kill loop: %d kills, seed %u\n", kills, seed);
	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
