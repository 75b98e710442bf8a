/*
 * The fidelity test: for a matrix of key types (with their collations),
 * table kinds (a primary key, REPLICA IDENTITY USING INDEX, FULL with a
 * unique index, partitioned with rows in several partitions, and a table
 * without any key: a multiset with exact duplicates) and value types, every table is copied while the window race
 * is forced on it, with a kill -9 of tidemark in the middle of the copy and
 * a random workload afterwards, and ends equal to the source: compared row
 * for row by SQL written here (each side's rows as the server prints them,
 * sorted here, so that neither server's ordering decides), then by
 * `tidemark verify`.
 *
 * The race, made to happen rather than hoped for: before `run` starts, one
 * connection per table takes an ACCESS EXCLUSIVE lock on it in an open
 * transaction. A snapshot reader writes its low watermark, takes its
 * snapshot and waits on the lock of the table it copies; the test sees it
 * wait (pg_locks), and the transaction holding that lock updates, deletes,
 * deletes and re-inserts rows of the chunk being read, moves keys (also
 * with a TOASTed column left unsent), inserts rows, and commits. The read
 * then goes on under a snapshot that predates that transaction, whose
 * changes reach the stream between the chunk's watermarks.
 *
 * Sizes: FIDELITY_ROWS rows per table (default 40), FIDELITY_SEED for the
 * workload (default 1), FIDELITY_WORKLOAD_MS of random workload after the
 * races (default 3000). A larger run by hand:
 *   FIDELITY_ROWS=2000 FIDELITY_WORKLOAD_MS=60000 FIDELITY_SEED=7 \
 *       build/tests/test_fidelity
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

#include "strbuf.h"
#include "tm_fixture.h"

/* ---- the matrix ---- */

/* A key of one or more columns, and its values for row number n (SQL over
 * a column n). */
typedef struct key_type {
	const char *name;        /* the table is fid.k_<name>[_<kind>] */
	const char *cols;        /* the key columns' declarations */
	const char *key;         /* their names, in key order */
	const char *expr;        /* their values for n */
} key_type;

#define MIXED_TEXT "(ARRAY['a', 'B', 'ä', 'Z', 'é', 'e', 'Ö', 'o'])[1 + n % 8] || n"

static const key_type key_types[] = {
	{"int", "k integer", "k", "n"},
	{"bigint", "k bigint", "k", "n * 10000000007"},
	{"numeric", "k numeric", "k",
	 "CASE n WHEN 1 THEN 'NaN' WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity'"
	 " ELSE (n / 7.0)::text END::numeric"},
	{"float8", "k double precision", "k",
	 "CASE n WHEN 1 THEN 'NaN' WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity' WHEN 4 THEN '-0'"
	 " ELSE (n / 7.0 + 0.1)::text END::float8"},
	{"real", "k real", "k", "CASE n WHEN 1 THEN 'NaN' WHEN 2 THEN '-0' ELSE (n / 3.0)::text END::real"},
	{"int2", "k smallint", "k", "(n % 65000 - 32500)::smallint"},
	{"oid", "k oid", "k", "(4294967295 - n)::oid"},
	{"money", "k money", "k", "(n * 1.05 - 20)::numeric::money"},
	{"time", "k time", "k", "time '00:00:00.000001' + n * interval '0.25 s'"},
	{"timetz", "k timetz", "k",
	 "(time '10:00' + n * interval '0.25 s')::timetz AT TIME ZONE (ARRAY['UTC', '+05:30', '-08'])[1 + n % 3]"},
	{"text_pad", "k text", "k", "CASE WHEN n = 1 THEN '' ELSE 'p' || n || repeat(' ', n % 3) END"},
	{"name", "k name", "k", "('nm ' || n)::name"},
	{"varbit", "k bit varying", "k", "substring(n::bit(20)::varbit from 1 + n % 3)"},
	{"int_array", "k integer[]", "k", "ARRAY[n % 5, n, NULL]"},
	{"jsonb", "k jsonb", "k", "jsonb_build_object('n', n, 'x', ARRAY[n % 3], 's', 'é' || n)"},
	{"text_c", "k text COLLATE \"C\"", "k", MIXED_TEXT},
	{"text_libc", "k text COLLATE \"C.utf8\"", "k", MIXED_TEXT},
	{"text_icu", "k text COLLATE \"de-x-icu\"", "k", MIXED_TEXT},
	{"varchar", "k varchar(24)", "k", "'v ' || " MIXED_TEXT},
	{"char", "k char(10)", "k", "'c' || n"},
	{"uuid", "k uuid", "k", "md5(n::text)::uuid"},
	{"inet", "k inet", "k",
	 "('10.' || n / 65536 || '.' || n / 256 % 256 || '.' || n % 256"
	 " || CASE WHEN n % 3 = 0 THEN '/24' ELSE '' END)::inet"},
	{"cidr", "k cidr", "k", "('10.' || n / 256 % 256 || '.' || n % 256 || '.0/24')::cidr"},
	{"macaddr", "k macaddr", "k", "lpad(to_hex(n), 12, '0')::macaddr"},
	{"bool", "flag boolean, k integer", "flag, k", "n % 2 = 0, n"},
	{"date", "k date", "k", "date '2000-01-01' + n"},
	{"timestamp", "k timestamp", "k",
	 "timestamp '2000-01-01 00:00:00.123456' + n * interval '37 min 1.5 s'"},
	{"timestamptz", "k timestamptz", "k",
	 "CASE n WHEN 1 THEN 'infinity' WHEN 2 THEN '-infinity' ELSE (timestamptz"
	 " '2000-01-01 00:00:00.123456+02' + n * interval '37 min 1.5 s')::text END::timestamptz"},
	{"interval", "k interval", "k", "n * interval '1 day 3 hours 0.25 seconds'"},
	{"bytea", "k bytea", "k", "decode(md5(n::text), 'hex')"},
	{"enum", "m fid.mood, k integer", "m, k", "(enum_range(NULL::fid.mood))[1 + n % 4], n"},
	{"domain", "k fid.posint", "k", "n"},
	{"domain_enum", "m fid.kmood, k integer", "m, k",
	 "(enum_range(NULL::fid.mood))[1 + n % 4]::fid.kmood, n"},
	{"composite_type", "k fid.pair", "k", "ROW(n % 7, 'p' || n)::fid.pair"},
	{"citext", "k public.citext", "k", "(ARRAY['Abc', 'bcd', 'CDE'])[1 + n % 3] || n"},
	{"mixed", "a text COLLATE \"de-x-icu\", b timestamptz, c uuid", "a, b, c",
	 "(ARRAY['x', 'Y', 'ä'])[1 + n % 3], timestamptz '2020-02-29 12:00:00+00' + (n % 5) * interval"
	 " '1 hour', md5(n::text)::uuid"},
};
#define NKEY_TYPES (sizeof key_types / sizeof key_types[0])

typedef enum table_kind {
	KIND_ORDINARY,          /* PRIMARY KEY */
	KIND_USING_INDEX,       /* a unique index as REPLICA IDENTITY USING INDEX */
	KIND_FULL,              /* REPLICA IDENTITY FULL, no primary key, a unique index */
	KIND_PARTITIONED,       /* partitioned by a column region of the key, rows in three
	                         * partitions (one of them partitioned again) */
	KIND_KEYLESS,           /* REPLICA IDENTITY FULL and no key at all: a multiset, with
	                         * exact duplicate rows */
	NKINDS
} table_kind;

static const char *const kind_suffix[NKINDS] = {"", "_idx", "_full", "_part", "_nokey"};

/* The key types the other kinds are tried with (every type is ordinary). */
static const char *const kind_types[] = {"int", "text_icu", "mixed", "uuid", "enum", "char"};

/* The other columns and their values for n: arrays, json, numeric NaN and
 * infinities, timestamps at infinity, TOASTed text and bytea (stored out of
 * line), NULLs. */
static const char *const payload_cols =
	"n integer NOT NULL, v text, arr integer[], tags text[], j json, jb jsonb, num numeric,"
	" f8 double precision, ts timestamptz, doc text, blob bytea";
static const char *const payload_names = "n, v, arr, tags, j, jb, num, f8, ts, doc, blob";
static const char *const payload_values =
	"n, CASE WHEN n % 7 = 0 THEN NULL ELSE 'v' || n END,"
	" ARRAY[n, NULL, -n], ARRAY['a b', 'c\"d', NULL, 'é'],"
	" json_build_object('n', n, 's', 'é\"x', 'a', json_build_array(1, 'two', NULL)),"
	" jsonb_build_object('n', n, 'nested', jsonb_build_object('x', n / 3.0)),"
	" CASE n % 4 WHEN 0 THEN 'NaN' WHEN 1 THEN 'Infinity' WHEN 2 THEN '-Infinity'"
	"   ELSE n / 3.0 END::numeric,"
	" CASE n % 3 WHEN 0 THEN 'NaN' WHEN 1 THEN '-0' ELSE n / 3.0 END::float8,"
	" CASE n % 3 WHEN 0 THEN 'infinity' WHEN 1 THEN '-infinity'"
	"   ELSE '2021-03-04 05:06:07.891+00' END::timestamptz,"
	" CASE WHEN n % 3 = 0 THEN (SELECT string_agg(md5(n::text || i), '')"
	"   FROM generate_series(1, 100) i) END,"
	" CASE WHEN n % 4 = 0 THEN (SELECT decode(string_agg(md5(i::text || n), ''), 'hex')"
	"   FROM generate_series(1, 200) i) END";

typedef struct fid_table {
	const key_type *kt;
	table_kind kind;
	/* the key as this table has it: kt's, and for a partitioned table the
	 * partition column region (n % 3) after it */
	char cols[256];
	char key[128];
	char expr[512];
	char name[64];           /* unqualified, in schema fid */
	bool raced;
	int next_n;              /* the next row number the workload inserts */
} fid_table;

typedef struct fidelity {
	tm_env *e;
	fid_table tables[NKEY_TYPES + NKINDS * 8];
	int ntables;
	int rows;
	unsigned seed;
} fidelity;

static int
env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? atoi(v) : dflt;
}

/* ---- building the source ---- */

static const key_type *
key_type_named(const char *name)
{
	for (size_t i = 0; i < NKEY_TYPES; i++)
		if (strcmp(key_types[i].name, name) == 0)
			return &key_types[i];
	return NULL;
}

static void
add_table(fidelity *f, const key_type *kt, table_kind kind)
{
	fid_table *t = &f->tables[f->ntables++];

	t->kt = kt;
	t->kind = kind;
	snprintf(t->name, sizeof t->name, "k_%s%s", kt->name, kind_suffix[kind]);
	snprintf(t->cols, sizeof t->cols, "%s%s", kt->cols,
	         kind == KIND_PARTITIONED ? ", region integer" : "");
	snprintf(t->key, sizeof t->key, "%s%s", kt->key, kind == KIND_PARTITIONED ? ", region" : "");
	snprintf(t->expr, sizeof t->expr, "%s%s", kt->expr,
	         kind == KIND_PARTITIONED ? ", n % 3" : "");
	t->next_n = 300000;
}

/* INSERT of rows numbered by nsql (SQL giving a column n), v overridden
 * when v_value is not NULL. */
static void
insert_rows(PGconn *conn, const fid_table *t, const char *nsql, const char *v_value)
{
	strbuf sql = STRBUF_INIT;

	strbuf_appendf(&sql, "INSERT INTO fid.%s (%s, %s) SELECT %s, %s FROM (%s) s", t->name,
	               t->key, payload_names, t->expr, payload_values, nsql);
	pgtest_exec(conn, "%s", sql.data);
	if (v_value != NULL)
		pgtest_exec(conn, "UPDATE fid.%s SET v = '%s' WHERE n IN (%s)", t->name, v_value, nsql);
	strbuf_free(&sql);
}

static void
create_table(fidelity *f, const fid_table *t)
{
	PGconn *s = f->e->s;
	char nsql[64];

	if (t->kind == KIND_ORDINARY)
		pgtest_exec(s, "CREATE TABLE fid.%s (%s, %s, PRIMARY KEY (%s))", t->name, t->cols,
		            payload_cols, t->key);
	else if (t->kind == KIND_PARTITIONED) {
		char first[64];

		/* the sub-partitions hash the key's first column */
		snprintf(first, sizeof first, "%.*s", (int) strcspn(t->key, ","), t->key);
		pgtest_exec(s, "CREATE TABLE fid.%s (%s, %s, PRIMARY KEY (%s)) PARTITION BY LIST (region)",
		            t->name, t->cols, payload_cols, t->key);
		pgtest_exec(s, "CREATE TABLE fid.%s_0 PARTITION OF fid.%s FOR VALUES IN (0);"
		               "CREATE TABLE fid.%s_1 PARTITION OF fid.%s FOR VALUES IN (1);"
		               "CREATE TABLE fid.%s_2 PARTITION OF fid.%s FOR VALUES IN (2)"
		               "  PARTITION BY HASH (%s);"
		               "CREATE TABLE fid.%s_2a PARTITION OF fid.%s_2"
		               "  FOR VALUES WITH (MODULUS 2, REMAINDER 0);"
		               "CREATE TABLE fid.%s_2b PARTITION OF fid.%s_2"
		               "  FOR VALUES WITH (MODULUS 2, REMAINDER 1)",
		            t->name, t->name, t->name, t->name, t->name, t->name, first, t->name, t->name,
		            t->name, t->name);
	} else if (t->kind == KIND_KEYLESS)
		pgtest_exec(s, "CREATE TABLE fid.%s (%s, %s); ALTER TABLE fid.%s REPLICA IDENTITY FULL",
		            t->name, t->cols, payload_cols, t->name);
	else {
		pgtest_exec(s, "CREATE TABLE fid.%s (%s, %s)", t->name, t->cols, payload_cols);
		/* the key columns NOT NULL, a unique index on them */
		pgtest_exec(s, "DO $$ DECLARE c text; BEGIN"
		               " FOREACH c IN ARRAY string_to_array('%s', ', ') LOOP"
		               "   EXECUTE format('ALTER TABLE fid.%%I ALTER %%I SET NOT NULL', '%s', c);"
		               " END LOOP; END $$", t->key, t->name);
		pgtest_exec(s, "CREATE UNIQUE INDEX %s_key ON fid.%s (%s)", t->name, t->name, t->key);
		if (t->kind == KIND_USING_INDEX)
			pgtest_exec(s, "ALTER TABLE fid.%s REPLICA IDENTITY USING INDEX %s_key", t->name,
			            t->name);
		else
			pgtest_exec(s, "ALTER TABLE fid.%s REPLICA IDENTITY FULL", t->name);
	}
	pgtest_exec(s, "ALTER TABLE fid.%s ALTER doc SET STORAGE EXTERNAL,"
	               " ALTER blob SET STORAGE EXTERNAL", t->name);
	/* no statistics: the reader then reads no table size, which would wait
	 * on the test's lock before the low watermark (see waited_on) */
	pgtest_exec(s, "DO $$ DECLARE r regclass; BEGIN"
	               " FOR r IN SELECT relid FROM pg_partition_tree('fid.%s') WHERE isleaf LOOP"
	               "   EXECUTE format('ALTER TABLE %%s SET (autovacuum_enabled = false)', r);"
	               " END LOOP; END $$", t->name);
	snprintf(nsql, sizeof nsql, "SELECT generate_series(1, %d) AS n", f->rows);
	insert_rows(s, t, nsql, NULL);
	if (t->kind == KIND_KEYLESS)
		pgtest_exec(s, "INSERT INTO fid.%s SELECT * FROM fid.%s WHERE n %% 4 = 1", t->name,
		            t->name);
}

static void
build_source(fidelity *f)
{
	PGconn *s = f->e->s;

	pgtest_exec(s, "CREATE EXTENSION citext; CREATE SCHEMA fid;"
	               "CREATE TYPE fid.mood AS ENUM ('sad', 'ok', 'happy', 'zen');"
	               "CREATE DOMAIN fid.posint AS integer CHECK (VALUE > 0);"
	               "CREATE DOMAIN fid.kmood AS fid.mood;"
	               "CREATE TYPE fid.pair AS (a integer, b text)");
	for (size_t i = 0; i < NKEY_TYPES; i++)
		add_table(f, &key_types[i], KIND_ORDINARY);
	for (int kind = KIND_USING_INDEX; kind < NKINDS; kind++)
		for (size_t i = 0; i < sizeof kind_types / sizeof kind_types[0]; i++)
			add_table(f, key_type_named(kind_types[i]), (table_kind) kind);
	for (int i = 0; i < f->ntables; i++)
		create_table(f, &f->tables[i]);
	/* statistics: a table large enough to be copied in key ranges
	 * (FIDELITY_ROWS of a few hundred) takes its bounds from them, not
	 * from a sample read under the lock the race holds */
	pgtest_exec(s, "ANALYZE");
}

/* ---- the race ---- */

/* The number n of the row at this place in the source's key order. */
static long
nth_row(PGconn *conn, const fid_table *t, const char *order, int offset)
{
	char *v = pgtest_query_value(conn, "SELECT n FROM fid.%s ORDER BY %s OFFSET %d LIMIT 1",
	                             t->name, order, offset);
	long n = v ? atol(v) : -1;

	free(v);
	return n;
}

/* The key of row n becomes the key of row number n + shift (and so does n). */
static void
move_key(PGconn *conn, const fid_table *t, long n, long shift)
{
	pgtest_exec(conn, "UPDATE fid.%s SET n = n + %ld, (%s) = (SELECT %s FROM"
	                  " (SELECT %ld AS n) s) WHERE n = %ld",
	            t->name, shift, t->key, t->expr, n + shift, n);
}

/* "a DESC, b DESC": the key's order backwards. */
static void
order_desc(const char *key, char *out, size_t size)
{
	strbuf sb = STRBUF_INIT;

	for (const char *p = key; *p; p++) {
		if (*p == ',')
			strbuf_append(&sb, " DESC");
		strbuf_appendc(&sb, *p);
	}
	strbuf_append(&sb, " DESC");
	snprintf(out, size, "%s", sb.data);
	strbuf_free(&sb);
}

/* In the transaction that holds the table's lock, while the reader waits
 * with its snapshot taken: changes to the rows of the chunk it reads (the
 * first rows in key order) and beyond. */
static void
race(PGconn *lock, fid_table *t)
{
	const char *order = t->key;
	char desc[256], nsql[64];
	long n;

	pgtest_exec(lock, "UPDATE fid.%s SET v = 'raced', jb = '{\"raced\": true}'"
	                  " WHERE n IN (SELECT n FROM fid.%s ORDER BY %s LIMIT 2)",
	            t->name, t->name, order);
	if ((n = nth_row(lock, t, order, 2)) > 0)
		pgtest_exec(lock, "DELETE FROM fid.%s WHERE n = %ld", t->name, n);
	if ((n = nth_row(lock, t, order, 3)) > 0) {
		/* deleted and inserted again under the same key */
		pgtest_exec(lock, "DELETE FROM fid.%s WHERE n = %ld", t->name, n);
		snprintf(nsql, sizeof nsql, "SELECT %ld AS n", n);
		insert_rows(lock, t, nsql, "reborn");
	}
	/* keys moved, the TOASTed columns not sent: one of the chunk's rows,
	 * and one of the last rows (not copied yet) */
	if ((n = nth_row(lock, t, order, 4)) > 0)
		move_key(lock, t, n, 100000);
	if ((n = nth_row(lock, t, order, 5)) > 0)
		pgtest_exec(lock, "UPDATE fid.%s SET v = 'partial' WHERE n = %ld", t->name, n);
	order_desc(t->key, desc, sizeof desc);
	/* to 200000 + n % 100000: a row the lines above moved to 100000 + m
	 * must not land where the workload inserts (300000 on) */
	if ((n = nth_row(lock, t, desc, 1)) > 0)
		move_key(lock, t, n, 200000 + n % 100000 - n);
	if (t->kind == KIND_KEYLESS)
		/* one of two duplicates changed, another pair made three */
		pgtest_exec(lock, "UPDATE fid.%s SET v = 'one of two' WHERE ctid = (SELECT ctid FROM"
		                  " fid.%s WHERE n = 9 LIMIT 1); INSERT INTO fid.%s SELECT * FROM fid.%s"
		                  " WHERE n = 13", t->name, t->name, t->name, t->name);
	insert_rows(lock, t, "SELECT generate_series(50001, 50003) AS n", "new");
	pgtest_exec(lock, "COMMIT");
	t->raced = true;
}

/* The table a snapshot reader waits on (a lock) in its chunk's read, with
 * its low watermark written and its snapshot taken, or NULL. Waiting
 * anywhere else (on a partition, reading a size) fails the test: the race
 * would not be the one meant; but for the sample of a table copied in key
 * ranges, which gives up after a short lock_timeout. */
static fid_table *
waited_on(fidelity *f)
{
	char *other = pgtest_query_value(
		f->e->s, "SELECT c.relname || ': ' || a.query FROM pg_locks l"
		         " JOIN pg_class c ON c.oid = l.relation JOIN pg_stat_activity a ON a.pid = l.pid"
		         " WHERE NOT l.granted AND a.application_name LIKE 'tidemark snapshot%%'"
		         /* pg_locks and pg_stat_activity are read at two instants */
		         " AND a.wait_event_type = 'Lock' AND a.query NOT LIKE 'COPY (SELECT %%'"
		         /* the sample of a table copied in key ranges gives up on its
		         * own (lock_timeout: the table is then copied in one range) */
		         " AND a.query NOT LIKE '%%TABLESAMPLE%%' LIMIT 1");
	char *name = pgtest_query_value(
		f->e->s, "SELECT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
		         " JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted"
		         " AND a.application_name LIKE 'tidemark snapshot%%'"
		         " AND a.query LIKE 'COPY (SELECT %%' LIMIT 1");
	fid_table *t = NULL;

	if (other != NULL)
		fail_msg("a snapshot reader waits outside its chunk's read: %s", other);
	for (int i = 0; name != NULL && i < f->ntables && t == NULL; i++)
		if (strcmp(f->tables[i].name, name) == 0)
			t = &f->tables[i];
	free(name);
	return t;
}

static int
count_raced(const fidelity *f)
{
	int n = 0;

	for (int i = 0; i < f->ntables; i++)
		n += f->tables[i].raced;
	return n;
}

/*
 * Races every table as the readers reach it. Halfway, run is killed with
 * SIGKILL (the killed reader's server backend may still wait on its lock)
 * and started again; it resumes after the last chunk applied.
 */
static pgtest_proc *
race_all(fidelity *f, PGconn **locks, pgtest_proc *run)
{
	bool killed = false;

	for (int waited = 0; count_raced(f) < f->ntables; waited++) {
		fid_table *t = waited_on(f);

		if (!pgtest_proc_running(run))
			fail_msg("tidemark run ended during the races:\n%s", pgtest_proc_output(run));
		if (waited > 3000)
			fail_msg("no snapshot reader waits on a table that is not raced yet (%d of %d"
			         " raced):\n%s", count_raced(f), f->ntables, pgtest_proc_output(run));
		if (t == NULL || t->raced) {
			tm_sleep_ms(10);
			continue;
		}
		race(locks[t - f->tables], t);
		waited = 0;
		if (!killed && count_raced(f) >= f->ntables / 2) {
			pgtest_proc_kill(run, SIGKILL);
			assert_int_equal(pgtest_proc_wait(run, 30), 128 + SIGKILL);
			pgtest_proc_free(run);
			run = tm_spawn(f->e, "run", "--chunk-rows", "7", "--chunk-bytes", "16kB",
			               "--snapshot-readers", "2", NULL);
			killed = true;
		}
	}
	return run;
}

/* ---- the workload after the races ---- */

static unsigned
next_random(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (*state >> 8) & 0xffffff;
}

static void
workload_step(PGconn *conn, void *arg, unsigned i)
{
	fidelity *f = arg;
	unsigned r = next_random(&f->seed);
	fid_table *t = &f->tables[r % (unsigned) f->ntables];
	long n = 1 + (long) (next_random(&f->seed) % (unsigned) f->rows);
	char nsql[64];

	switch (i % 6) {
	case 0:
		pgtest_exec(conn, "UPDATE fid.%s SET v = 'w%u', arr = arr || %u WHERE n = %ld", t->name,
		            i, i, n);
		break;
	case 1:
		pgtest_exec(conn, "DELETE FROM fid.%s WHERE n = %ld", t->name, n);
		break;
	case 2:
		snprintf(nsql, sizeof nsql, "SELECT %d AS n", t->next_n++);
		insert_rows(conn, t, nsql, NULL);
		break;
	case 3:
		move_key(conn, t, n, t->next_n++ - n);
		break;
	case 4:
		pgtest_exec(conn, "UPDATE fid.%s SET v = 'toast kept' WHERE n = %ld", t->name, n);
		break;
	default:
		if (t->kind == KIND_PARTITIONED) /* the row moves to another partition */
			pgtest_exec(conn, "UPDATE fid.%s SET region = (region + 1) %% 3, doc = doc || 'y'"
			                  " WHERE n = %ld", t->name, n);
		else
			pgtest_exec(conn, "UPDATE fid.%s SET doc = doc || 'x', blob = NULL WHERE n = %ld",
			            t->name, n);
	}
}

/* Every table, in one transaction, gets BULK_ROWS rows more and all its
 * rows a new v: a flush holds that many whole rows of each table, which go
 * in as statements of many rows (an array of text per column), and as many
 * partial updates (their TOASTed values unsent), every key and value type
 * with them. */
#define BULK_ROWS 300
static void
bulk_rows(fidelity *f)
{
	char nsql[96];

	pgtest_exec(f->e->s, "BEGIN");
	for (int i = 0; i < f->ntables; i++) {
		fid_table *t = &f->tables[i];

		snprintf(nsql, sizeof nsql, "SELECT generate_series(%d, %d) AS n", t->next_n,
		         t->next_n + BULK_ROWS - 1);
		t->next_n += BULK_ROWS;
		insert_rows(f->e->s, t, nsql, NULL);
		pgtest_exec(f->e->s, "UPDATE fid.%s SET v = 'bulk ' || n", t->name);
	}
	pgtest_exec(f->e->s, "COMMIT");
}

/* ---- the oracle ---- */

/* Every row of a table as one line of its values as the server prints
 * them (NULL as \N), the lines sorted here (tm_fixture.h). *n: the row
 * count. */
static char **
table_lines(PGconn *conn, const fid_table *t, const char *cols, int *n)
{
	char table[96];

	snprintf(table, sizeof table, "fid.%s", t->name);
	return tm_sorted_rows(conn, table, cols, n);
}

/* The source's columns and their types; the target must have the same
 * (enums, domains, citext and collations included: a column's type and
 * text are exact). */
static void
assert_types(fidelity *f, const fid_table *t, strbuf *cols)
{
	static const char *const sql =
		"SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod)"
		"   || CASE WHEN a.attcollation <> t.typcollation THEN ' COLLATE ' || quote_ident(c.collname)"
		"      ELSE '' END, ', ' ORDER BY a.attnum)"
		" FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
		" LEFT JOIN pg_collation c ON c.oid = a.attcollation"
		" WHERE a.attrelid = 'fid.%s'::regclass AND a.attnum > 0 AND NOT a.attisdropped";
	char *src = pgtest_query_value(f->e->s, sql, t->name);
	char *dst = pgtest_query_value(f->e->t, sql, t->name);
	char *names = pgtest_query_value(f->e->s, "SELECT string_agg(quote_ident(attname), ', '"
	                                          " ORDER BY attnum) FROM pg_attribute WHERE"
	                                          " attrelid = 'fid.%s'::regclass AND attnum > 0"
	                                          " AND NOT attisdropped", t->name);

	assert_non_null(src);
	if (dst == NULL)
		fail_msg("fid.%s is missing on the target", t->name);
	if (strcmp(src, dst) != 0)
		fail_msg("fid.%s: the target's columns are (%s), the source's (%s)", t->name, dst, src);
	strbuf_append(cols, names);
	free(src);
	free(dst);
	free(names);
}

static void
assert_table_equal(fidelity *f, const fid_table *t)
{
	strbuf cols = STRBUF_INIT;
	int ns, nt;
	char **src, **dst;

	assert_types(f, t, &cols);
	src = table_lines(f->e->s, t, cols.data, &ns);
	dst = table_lines(f->e->t, t, cols.data, &nt);
	for (int i = 0; i < ns || i < nt; i++) {
		const char *a = i < ns ? src[i] : "(no more rows)";
		const char *b = i < nt ? dst[i] : "(no more rows)";

		if (strcmp(a, b) != 0)
			fail_msg("fid.%s differs (%d rows on the source, %d on the target); first"
			         " difference, sorted:\n  source: %.300s\n  target: %.300s",
			         t->name, ns, nt, a, b);
	}
	assert_true(ns >= f->rows - 10);
	tm_rows_free(src, ns);
	tm_rows_free(dst, nt);
	strbuf_free(&cols);
}

/* ---- the test ---- */

static void
test_every_key_type_and_kind_under_the_race(void **state)
{
	fidelity f = {0};
	PGconn **locks;
	pgtest_proc *run;
	pgtest_workload *wl;
	unsigned errors = 0;
	char *out = NULL;
	int rc;

	(void) state;
	f.e = tm_env_new("fidelity");
	f.rows = env_int("FIDELITY_ROWS", 40);
	f.seed = (unsigned) env_int("FIDELITY_SEED", 1);
	build_source(&f);
	rc = tm_run(f.e, 120, &out, "setup", "--schema", "fid", NULL);
	if (rc != 0)
		fail_msg("setup exited %d:\n%s", rc, out);
	free(out);
	locks = calloc((size_t) f.ntables, sizeof(PGconn *));
	for (int i = 0; i < f.ntables; i++) {
		locks[i] = pgtest_connect_str(f.e->src);
		pgtest_exec(locks[i], "BEGIN; LOCK TABLE ONLY fid.%s IN ACCESS EXCLUSIVE MODE",
		            f.tables[i].name);
	}
	run = tm_spawn(f.e, "run", "--chunk-rows", "7", "--chunk-bytes", "16kB",
	               "--snapshot-readers", "2", NULL);
	run = race_all(&f, locks, run);
	for (int i = 0; i < f.ntables; i++)
		PQfinish(locks[i]);
	free(locks);
	wl = pgtest_workload_start(f.e->src, workload_step, &f);
	tm_sleep_ms(env_int("FIDELITY_WORKLOAD_MS", 3000));
	pgtest_workload_stop(wl, &errors);
	print_message("%d tables raced; workload errors (unique keys taken): %u\n", f.ntables,
	              errors);
	bulk_rows(&f);
	tm_stop_and_catch_up(f.e, run, 300);
	for (int i = 0; i < f.ntables; i++)
		assert_table_equal(&f, &f.tables[i]);
	/* pages of 7 rows: verify bounds its ranges by keys of every type */
	rc = tm_run(f.e, 300, &out, "verify", "--chunk-rows", "7", NULL);
	if (rc != 0)
		fail_msg("verify exited %d:\n%s", rc, out);
	free(out);
	tm_env_free(f.e);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_key_type_and_kind_under_the_race),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
