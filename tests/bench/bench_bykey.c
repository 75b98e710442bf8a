/*
 * bench_bykey: a flush's deletes and partial updates as statements of many
 * rows (dml_sql_delete_rows, dml_sql_update_rows) against one statement
 * per row (dml_sql_delete, dml_sql_update_present), as apply_net.c sends
 * them.
 *
 *   cmake --build build --target bench_bykey
 *   build/tests/bench_bykey [TRANSACTIONS [ROUNDS [PEER]]]
 *
 * Part one, the statements alone, through the apply's own connection
 * (sink.c: prepared statements pipelined in one transaction): 16,384 rows
 * deleted, and 16,384 partial updates of a table whose TOASTed column is
 * left out, in groups of b rows (b = 1, 2, 4, ... 1,024; one group per
 * flush): b single-row statements per group, or one statement of b rows.
 * Median of ROUNDS (default 3). The smallest b from which the statement
 * of many rows is the faster is what APPLY_NET_MIN_BY_KEY should be.
 *
 * Part two, end to end: a backlog of TRANSACTIONS (default 40,000)
 * transactions each deleting two rows, and one of as many each updating
 * the small column of two rows of a table with a TOASTed column (a
 * partial update), caught up by tidemark. PEER: a tidemark built with
 * -DAPPLY_NET_MIN_BY_KEY=1000000000 (every delete and partial alone),
 * run beside it on the same backlog into its own target database;
 * medians of ROUNDS and the ratio, both targets compared with the source.
 * Before each backlog both slots are made to restart at its start, so
 * that a catch-up decodes that backlog only (benchlib.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "dml_sql.h"
#include "exitcode.h"
#include "sink.h"
#include "tm_fixture.h"

#define MICRO_ROWS 16384
#define MAX_ROUNDS 64
#define PARTIAL_ROWS 20000

static pgtest_cluster *src, *dst;

/* ---- part one: the statements alone ---- */

static const char *const cols[] = {"id", "n", "big"};
static const int key_idx[] = {0};
static const char *const key_types[] = {"\"pg_catalog\".\"int4\""};
static const char *const types[] = {"\"pg_catalog\".\"int4\"", "\"pg_catalog\".\"int4\"",
                                    "\"pg_catalog\".\"text\""};
static const bool id_and_n[] = {true, true, false};
static const dml_sql_table micro_table = {"public", "bk", 3, cols, 1, key_idx, key_types, NULL};

static void
must(int rc, const char *what)
{
	if (rc != TM_OK) {
		fprintf(stderr, "%s failed (%d)\n", what, rc);
		exit(1);
	}
}

/* The groups of b rows of one kind, sent in one transaction, answered,
 * rolled back; seconds. */
static double
micro_run(sink *s, bool partial, bool many, int b)
{
	strbuf sql = STRBUF_INIT;
	sink_stmt *st;
	double start;
	int n;

	if (many && partial)
		dml_sql_update_rows(&sql, &micro_table, id_and_n, types, &n);
	else if (many)
		dml_sql_delete_rows(&sql, &micro_table, types);
	else if (partial)
		dml_sql_update_present(&sql, &micro_table, id_and_n, &n);
	else
		dml_sql_delete(&sql, &micro_table);
	n = partial ? 3 : 1;
	st = sink_stmt_hold(s, strbuf_str(&sql), n);
	strbuf_free(&sql);
	start = bench_now();
	must(sink_begin(s), "begin");
	for (int g = 0; g < MICRO_ROWS / b; g++) {
		strbuf arr[3] = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT};
		const char *p[3];
		int lens[3];
		static const int binary[3] = {1, 1, 1};

		for (int i = 0; i < b; i++) {
			char id[16], v[16];

			snprintf(id, sizeof id, "%d", 1 + g * b + i);
			snprintf(v, sizeof v, "%d", g);
			p[0] = id;
			p[1] = v;
			p[2] = id;
			if (!many) {
				must(sink_send(s, st, p, NULL), "send");
				continue;
			}
			for (int k = 0; k < n; k++)
				dml_sql_array_element(&arr[k], p[k], strlen(p[k]));
		}
		for (int k = 0; many && k < n; k++) {
			dml_sql_array_end(&arr[k]);
			p[k] = arr[k].data;
			lens[k] = (int) arr[k].len;
		}
		if (many)
			must(sink_send_formats(s, st, p, lens, binary), "send");
		for (int k = 0; k < 3; k++)
			strbuf_free(&arr[k]);
	}
	must(sink_query(s, "waiting", "SELECT 1", 0, NULL, NULL), "answer");
	start = bench_now() - start;
	sink_rollback(s);
	sink_stmt_release(s, st);
	return start;
}

static void
micro(int rounds)
{
	char *conninfo = pgtest_conninfo_db(dst, "postgres");
	PGconn *c = pgtest_connect_str(conninfo);
	sink *s;

	pgtest_exec(c, "CREATE TABLE bk (id int PRIMARY KEY, n int, big text);"
	               "ALTER TABLE bk ALTER big SET STORAGE EXTERNAL;"
	               "INSERT INTO bk SELECT g, 0, repeat(md5(g::text), 80)"
	               " FROM generate_series(1, %d) g", MICRO_ROWS);
	pgtest_exec(c, "VACUUM ANALYZE bk");
	must(sink_open(conninfo, "bench", &s), "connect");
	for (int kind = 0; kind < 2; kind++)
		for (int b = 1; b <= 1024; b *= 2) {
			double one[MAX_ROUNDS], set[MAX_ROUNDS], o, m;

			for (int r = 0; r < rounds; r++) {
				one[r] = micro_run(s, kind == 1, false, b);
				set[r] = micro_run(s, kind == 1, true, b);
				pgtest_exec(c, "VACUUM bk");
			}
			o = bench_median(one, rounds);
			m = bench_median(set, rounds);
			printf("%s, groups of %4d rows: single-row %.3f s, many rows %.3f s:"
			       " many / single %.2f\n", kind ? "partial updates" : "deletes", b, o, m,
			       m / o);
			fflush(stdout);
		}
	sink_close(s);
	PQfinish(c);
	free(conninfo);
}

/* ---- part two: end to end ---- */

typedef struct pipeline {
	const char *name;    /* slot, publication and target database */
	const char *program; /* the tidemark binary */
	char *target;
	double del[MAX_ROUNDS], part[MAX_ROUNDS];
} pipeline;

static pipeline many = {"tm_many", TIDEMARK_BIN, NULL, {0}, {0}};
static pipeline peer = {"tm_peer", NULL, NULL, {0}, {0}};

static int
tidemark(const pipeline *p, bool setup, double *secs)
{
	const char *setup_argv[] = {"setup", "--source", src->conninfo, "--target", p->target,
	                            "--slot", p->name, "--publication", p->name, "--table",
	                            "public.dl", "--table", "public.pt", "--quiet", NULL};
	const char *run_argv[] = {"run", "--source", src->conninfo, "--target", p->target,
	                          "--slot", p->name, "--publication", p->name, "--until-caught-up",
	                          "--quiet", NULL};
	double s;
	long kb;

	return bench_run_program_measured(p->program, setup ? setup_argv : run_argv, 3600,
	                                  secs ? secs : &s, &kb);
}

static void
prepare_pipeline(pipeline *p)
{
	PGconn *a = pgtest_connect(dst);

	pgtest_exec(a, "CREATE DATABASE %s", p->name);
	PQfinish(a);
	p->target = pgtest_conninfo_db(dst, p->name);
	if (tidemark(p, true, NULL) != 0 || tidemark(p, false, NULL) != 0)
		exit(1);
}

static void
catch_up(pipeline *p, double *secs)
{
	if (p->program != NULL && tidemark(p, false, secs) != 0)
		exit(1);
}

static void
pipeline_settle(void *ctx)
{
	catch_up(ctx, NULL);
}

/* Both pipelines' slots made to restart at their end before a backlog,
 * so that each measured catch-up decodes that backlog only (benchlib.h:
 * bench_source_restart_point). Not measured. */
static void
settle_slots(PGconn *s)
{
	char *restart = bench_source_restart_point(s);

	pgtest_exec(s, "SELECT pg_logical_emit_message(true, 'bench.settle', '')");
	bench_settle_slot(s, many.name, restart, pipeline_settle, &many);
	if (peer.program != NULL)
		bench_settle_slot(s, peer.name, restart, pipeline_settle, &peer);
	free(restart);
}

static void
end_to_end(int n, int rounds)
{
	PGconn *s = pgtest_connect(src);
	double ratio_del[MAX_ROUNDS], ratio_part[MAX_ROUNDS];

	pgtest_exec(s, "CREATE TABLE dl (id int PRIMARY KEY, v int, pad text);"
	               "INSERT INTO dl SELECT g, g, repeat('p', 60) FROM generate_series(1, %d) g;"
	               "CREATE TABLE pt (id int PRIMARY KEY, n int, big text);"
	               "ALTER TABLE pt ALTER big SET STORAGE EXTERNAL;"
	               "INSERT INTO pt SELECT g, 0, repeat(md5(g::text), 80)"
	               " FROM generate_series(1, %d) g;"
	               "CREATE PROCEDURE dels(txs int) LANGUAGE plpgsql AS $$ BEGIN"
	               " FOR i IN 1 .. txs LOOP DELETE FROM dl WHERE id IN (2 * i - 1, 2 * i);"
	               " COMMIT; END LOOP; END $$;"
	               "CREATE PROCEDURE parts(txs int) LANGUAGE plpgsql AS $$ BEGIN"
	               " FOR i IN 1 .. txs LOOP UPDATE pt SET n = n + 1 WHERE id IN"
	               " (1 + (2 * i) %% %d, 1 + (2 * i + 1) %% %d); COMMIT; END LOOP; END $$",
	               2 * n, PARTIAL_ROWS, PARTIAL_ROWS, PARTIAL_ROWS);
	prepare_pipeline(&many);
	if (peer.program != NULL)
		prepare_pipeline(&peer);
	for (int r = 0; r < rounds; r++) {
		pipeline *first = r % 2 == 0 || peer.program == NULL ? &many : &peer;
		pipeline *second = first == &many ? &peer : &many;

		settle_slots(s);
		pgtest_exec(s, "CALL dels(%d)", n);
		catch_up(first, &first->del[r]);
		catch_up(second, &second->del[r]);
		settle_slots(s);
		pgtest_exec(s, "CALL parts(%d)", n);
		catch_up(first, &first->part[r]);
		catch_up(second, &second->part[r]);
		/* the deleted rows back, caught up outside the measure */
		pgtest_exec(s, "INSERT INTO dl SELECT g, g, repeat('p', 60) FROM generate_series(1, %d) g",
		            2 * n);
		catch_up(first, NULL);
		catch_up(second, NULL);
		printf("round %d: %d transactions of two deletes: %.2f s", r + 1, n, many.del[r]);
		if (peer.program != NULL)
			printf(", single-row %.2f s", peer.del[r]);
		printf("; of two partial updates: %.2f s", many.part[r]);
		if (peer.program != NULL)
			printf(", single-row %.2f s", peer.part[r]);
		printf("\n");
		ratio_del[r] = peer.program != NULL ? many.del[r] / peer.del[r] : 0;
		ratio_part[r] = peer.program != NULL ? many.part[r] / peer.part[r] : 0;
		fflush(stdout);
	}
	for (int i = 0; i < (peer.program != NULL ? 2 : 1); i++) {
		pipeline *p = i == 0 ? &many : &peer;
		PGconn *t = pgtest_connect_str(p->target);

		tm_assert_rows_equal(s, "public.dl", t, "public.dl", "id, v, pad");
		tm_assert_rows_equal(s, "public.pt", t, "public.pt", "id, n, md5(big)");
		PQfinish(t);
	}
	printf("targets equal to the source\nmedian of %d rounds: deletes %.2f s, partial updates"
	       " %.2f s", rounds, bench_median(many.del, rounds), bench_median(many.part, rounds));
	if (peer.program != NULL)
		printf("; single-row: deletes %.2f s, partial updates %.2f s; many / single (median of"
		       " the rounds' ratios): deletes %.2f, partial updates %.2f",
		       bench_median(peer.del, rounds), bench_median(peer.part, rounds),
		       bench_median(ratio_del, rounds), bench_median(ratio_part, rounds));
	printf("\n");
	PQfinish(s);
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 40000;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;

	if (n < 2 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench_bykey [TRANSACTIONS (>= 2) [ROUNDS (1..%d) [PEER]]]\n",
		        MAX_ROUNDS);
		return 2;
	}
	peer.program = argc > 3 ? argv[3] : NULL;
	src = pgtest_cluster_start_with("src", "max_wal_senders=20", "max_replication_slots=20",
	                                "max_wal_size=4GB", "shared_buffers=256MB");
	dst = pgtest_cluster_start_with("dst", "max_wal_size=4GB", "shared_buffers=256MB");
	micro(rounds);
	end_to_end(n, rounds);
	pgtest_cluster_stop(src);
	pgtest_cluster_stop(dst);
	return 0;
}
