/*
 * The generated DDL-sequence test: random short sequences of schema
 * changes and row writes on a few tables, within one source transaction
 * and across a few, each checked against the source at the end.
 *
 * Each sequence gets a schema of its own (g<seed>) replicated with
 * `setup --schema`, sometimes with tables made before the setup, then a
 * few source transactions of a few statements each, drawn from: CREATE
 * TABLE (with or without a key, with a column of the schema's enum type),
 * CREATE TABLE AS with rows, ADD PRIMARY KEY, DROP CONSTRAINT of the key,
 * ADD COLUMN (a constant default, none, a volatile one, of the enum type),
 * ADD COLUMN ... PRIMARY KEY (identity or serial), DROP COLUMN (of the key
 * too), DROP COLUMN and ADD PRIMARY KEY in one statement, REPLICA IDENTITY
 * FULL / DEFAULT / USING INDEX (a unique index made for it), ALTER COLUMN
 * ... TYPE (integer to bigint and back, to text, with USING, text to
 * varchar, to another collation, to integer by USING, the enum to text;
 * the key's columns too), SET / DROP NOT NULL, RENAME COLUMN, RENAME TO a
 * free name of the sequence, ALTER TYPE of the enum (ADD VALUE, at its end
 * or BEFORE another, RENAME VALUE), columns of a composite type (ALTER
 * TYPE ... ADD, RENAME, DROP ATTRIBUTE ... CASCADE) and of a domain,
 * stored generated columns (and DROP EXPRESSION), DROP TABLE (and so
 * creation again under the name), TRUNCATE, INSERT, UPDATE (of the key
 * too) and DELETE. What a statement may do is drawn from the table as
 * the source's catalog has it at that point (a key only over columns whose
 * rows take it). Each statement runs under a savepoint: a row write the
 * source refuses (an UPDATE without a replica identity) is rolled back to
 * it; a schema change the source refuses, with its whole transaction and
 * its capture messages (PostgreSQL's logical decoding may fail on a table
 * altered again after a rolled-back subtransaction altered it).
 * `run` either follows the transactions live (and may be killed with
 * SIGKILL between them) or catches up with all of them at the end.
 *
 * At the end `run --until-caught-up` must exit 0 and set no table aside,
 * and every table of the sequence that the source has with a key or with
 * REPLICA IDENTITY FULL must be replicated and hold the source's rows, as
 * a multiset of the source's columns, compared by SQL written here (each
 * side's rows as the server prints them, sorted here). A table without a
 * key under REPLICA IDENTITY DEFAULT is replicated only if it was before
 * (then it is equal too: the source refuses its updates and deletes), and
 * otherwise `run` said it is not. On failure the seed and every statement
 * of the sequence (with what the source said) are printed.
 *
 * Before them, pinned sequences play the patterns met in real migration
 * histories and their neighbours (CREATE TABLE AS then ADD PRIMARY KEY; a
 * table created again under its name without a key, keyed later; DROP
 * COLUMN id, ADD PRIMARY KEY (a, b); ADD COLUMN ... PRIMARY KEY on a
 * keyless table with rows; REPLICA IDENTITY FULL then a key), checked the
 * same way; types changed after rows used them in the transaction that
 * created the table or gave it the column; a table renamed to the name of
 * a dropped one; partitions detached in the transaction that created
 * their root.
 *
 * After them, generated sequences of a partitioned table (see "a
 * partitioned table" below), checked the same way over every table of the
 * schema that is not a partition.
 *
 * Besides the checks above, run must log no error: a failure the run then
 * mends must not have been reported as one.
 *
 * Settings: TXDD_SEQUENCES sequences (default 12) and TXDD_PART_SEQUENCES
 * of a partitioned table (default 8), from TXDD_SEED (default 1; sequence
 * i uses seed TXDD_SEED + i), TXDD_TXS transactions of at most TXDD_STEPS
 * statements each (defaults 3 and 7), TXDD_VERBOSE=1 prints each sequence
 * (and what run said of each pinned one). One failing sequence again (its
 * failure prints the settings), or many more by hand:
 *   TXDD_SEED=17 TXDD_SEQUENCES=1 TXDD_PART_SEQUENCES=0 TXDD_VERBOSE=1 build/tests/test_txdd_gen
 *   TXDD_SEQUENCES=300 TXDD_PART_SEQUENCES=100 TXDD_TXS=5 TXDD_STEPS=12 build/tests/test_txdd_gen
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

#define NTABLES 3
#define MAXCOLS 16

static int
env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? atoi(v) : dflt;
}

/* ---- a sequence ---- */

typedef struct column {
	char name[64];
	bool is_int;         /* integer or bigint, or the schema's domain pos over integer */
	bool is_enum;        /* of the schema's enum type mood */
	bool is_composite;   /* of the schema's composite type pair; else text */
	bool stored;         /* GENERATED ALWAYS AS (...) STORED */
	bool generated;      /* GENERATED ALWAYS AS IDENTITY: never written */
	bool defaulted;      /* serial and identity columns take their default */
	bool in_pk;          /* a column of the primary key */
} column;

/* A table as the source's catalog has it now. */
typedef struct table_state {
	bool exists;
	char replident;
	bool has_key;        /* a key tidemark matches rows by (tidemark.table_keycols) */
	char pk[64];         /* the primary key constraint, "" when none */
	int ncols;
	column cols[MAXCOLS];
} table_state;

typedef struct sequence {
	tm_env *e;
	unsigned seed;
	uint64_t rng;
	char schema[32];
	int next_value;      /* distinct values for the rows written */
	int next_column;
	strbuf log;          /* every statement, with the source's answer */
	strbuf output;       /* what the runs said */
	const char *again;   /* the settings that run it alone, after TXDD_SEED */
} sequence;

/* The sequence running, for its report when the harness fails the test
 * (a timeout) without passing through fail_sequence. */
static sequence *current;

static uint32_t
next_rand(sequence *q)
{
	/* xorshift64* */
	q->rng ^= q->rng >> 12;
	q->rng ^= q->rng << 25;
	q->rng ^= q->rng >> 27;
	return (uint32_t) ((q->rng * 2685821657736338717ULL) >> 32);
}

static int
pick(sequence *q, int n)
{
	return n > 0 ? (int) (next_rand(q) % (unsigned) n) : 0;
}

static void
say(sequence *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
say(sequence *q, const char *fmt, ...)
{
	va_list ap;
	char line[2048];

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	strbuf_append(&q->log, line);
	strbuf_appendc(&q->log, '\n');
}

static void
fail_sequence(sequence *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
fail_sequence(sequence *q, const char *fmt, ...)
{
	va_list ap;
	char why[4096];
	char *tables;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	current = NULL;
	tables = pgtest_query_value(q->e->t, "SELECT string_agg(format('%%s %%s.%%s -> %%I: %%s from %%s,"
	                                     " relid %%s', table_id, source_schema, source_table,"
	                                     " target_table, state, registered_lsn, source_relid), E'\\n'"
	                                     " ORDER BY table_id) FROM tidemark.tables"
	                                     " WHERE source_schema = '%s'", q->schema);
	/* cmocka cuts long messages: the sequence goes to stderr whole */
	fprintf(stderr, "-- what run said:\n%s-- the sequence:\n%s-- the target's catalog:\n%s\n",
	        strbuf_str(&q->output), strbuf_str(&q->log), tables ? tables : "");
	free(tables);
	if (q->seed == 0)
		fail_msg("%s: %s (the sequence and what run said are above)", q->schema, why);
	fail_msg("sequence with seed %u (TXDD_SEED=%u %s) failed: %s (the sequence and what run "
	         "said are above)", q->seed, q->seed, q->again, why);
}

/* Reads a table (schema-qualified) from the source's catalog (inside the
 * open transaction, which sees its own changes). */
static void
read_named(sequence *q, const char *table, table_state *st)
{
	char *def = pgtest_query_value(
		q->e->s,
		"SELECT c.relreplident::text || '|' || (tidemark.table_keycols(c.oid) IS NOT NULL)::text"
		" || '|' || coalesce((SELECT conname FROM pg_constraint WHERE conrelid = c.oid"
		"   AND contype = 'p'), '') || '|' || coalesce((SELECT string_agg(a.attname || ':'"
		"   || (SELECT coalesce(nullif(t.typbasetype, 0), t.oid) IN ('int'::regtype,"
		"     'bigint'::regtype) FROM pg_type t WHERE t.oid = a.atttypid)::text || ':'"
		"   || (a.attidentity = 'a')::text || ':' || a.atthasdef::text || ':'"
		"   || (a.attnum = ANY (coalesce((SELECT conkey FROM pg_constraint WHERE conrelid = c.oid"
		"     AND contype = 'p'), '{}')))::text || ':'"
		"   || (SELECT t.typtype = 'e' FROM pg_type t WHERE t.oid = a.atttypid)::text || ':'"
		"   || (SELECT t.typtype = 'c' FROM pg_type t WHERE t.oid = a.atttypid)::text || ':'"
		"   || (a.attgenerated = 's')::text, ',' ORDER BY a.attnum)"
		"   FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0"
		"   AND NOT a.attisdropped), '')"
		" FROM pg_class c WHERE c.oid = to_regclass('%s')", table);
	char *save = NULL, *part;

	memset(st, 0, sizeof *st);
	if (def == NULL)
		return;
	st->exists = true;
	st->replident = def[0];
	st->has_key = strncmp(def + 2, "true", 4) == 0;
	part = strchr(def + 2, '|') + 1;
	snprintf(st->pk, sizeof st->pk, "%.*s", (int) (strchr(part, '|') - part), part);
	part = strchr(part, '|') + 1;
	for (char *c = strtok_r(part, ",", &save); c != NULL && st->ncols < MAXCOLS;
	     c = strtok_r(NULL, ",", &save)) {
		column *col = &st->cols[st->ncols++];
		char *f2 = strchr(c, ':'), *f3 = strchr(f2 + 1, ':'), *f4 = strchr(f3 + 1, ':');
		char *f5 = strchr(f4 + 1, ':'), *f6 = strchr(f5 + 1, ':'), *f7 = strchr(f6 + 1, ':');
		char *f8 = strchr(f7 + 1, ':');

		snprintf(col->name, sizeof col->name, "%.*s", (int) (f2 - c), c);
		col->is_int = strncmp(f2 + 1, "true", 4) == 0;
		col->generated = strncmp(f3 + 1, "true", 4) == 0;
		col->defaulted = col->generated || strncmp(f4 + 1, "true", 4) == 0;
		col->in_pk = strncmp(f5 + 1, "true", 4) == 0;
		col->is_enum = strncmp(f6 + 1, "true", 4) == 0;
		col->is_composite = strncmp(f7 + 1, "true", 4) == 0;
		col->stored = strncmp(f8 + 1, "true", 4) == 0;
	}
	free(def);
}

/* Reads table t<i>. */
static void
read_table(sequence *q, int i, table_state *st)
{
	char table[64];

	snprintf(table, sizeof table, "%s.t%d", q->schema, i);
	read_named(q, table, st);
}

static bool
is_ddl(const char *sql)
{
	return strncmp(sql, "ALTER ", 6) == 0 || strncmp(sql, "CREATE ", 7) == 0 ||
	       strncmp(sql, "DROP ", 5) == 0 || strncmp(sql, "TRUNCATE ", 9) == 0;
}

/* Runs one statement under a savepoint: true when the source took it. A
 * DML statement the source refuses is rolled back to the savepoint; a DDL
 * statement, with its whole transaction. */
static bool
statement(sequence *q, const char *sql)
{
	char *err;

	pgtest_exec(q->e->s, "SAVEPOINT step");
	err = pgtest_exec_error(q->e->s, "%s", sql);
	if (err != NULL) {
		char *nl = strchr(err, '\n');

		if (nl != NULL)
			*nl = '\0';
		say(q, "%s;  -- refused: %s", sql, err);
		free(err);
		if (is_ddl(sql)) {
			/* not to a savepoint: PostgreSQL's logical decoding may see two
			 * versions of a catalog row when a subtransaction's DDL is
			 * rolled back and the table is altered again in the same
			 * transaction ("unexpected duplicate for tablespace 0,
			 * relfilenode ..."); the generator checks what it can first */
			say(q, "ROLLBACK;  -- the whole transaction, then BEGIN;");
			pgtest_exec(q->e->s, "ROLLBACK");
			pgtest_exec(q->e->s, "BEGIN");
			return false;
		}
		pgtest_exec(q->e->s, "ROLLBACK TO SAVEPOINT step");
		return false;
	}
	pgtest_exec(q->e->s, "RELEASE SAVEPOINT step");
	say(q, "%s;", sql);
	return true;
}

/* A column that takes values (not generated), or NULL. */
static const column *
writable_column(sequence *q, const table_state *st, bool want_int)
{
	int n = 0;
	const column *found[MAXCOLS];

	for (int i = 0; i < st->ncols; i++)
		if (!st->cols[i].defaulted && (!want_int || st->cols[i].is_int))
			found[n++] = &st->cols[i];
	return n > 0 ? found[pick(q, n)] : NULL;
}

/* A label of the schema's enum type as the open transaction sees it (one
 * added by this transaction is refused by the source when used, and the
 * row write rolled back). Owned by the caller. */
static char *
enum_label(sequence *q)
{
	char *labels = pgtest_query_value(q->e->s, "SELECT string_agg(enumlabel, ',' ORDER BY"
	                                           " enumsortorder) FROM pg_enum WHERE enumtypid ="
	                                           " to_regtype('%s.mood')", q->schema);
	char *save = NULL, *found = NULL;
	int n = 0, want;

	if (labels == NULL)
		return strdup("a");
	for (const char *c = labels; *c; c++)
		n += *c == ',';
	want = pick(q, n + 1);
	for (char *l = strtok_r(labels, ",", &save); l != NULL; l = strtok_r(NULL, ",", &save))
		if (want-- == 0)
			found = strdup(l);
	free(labels);
	return found != NULL ? found : strdup("a");
}

/* A value for column c of a new row: v is the sequence's next value. */
static void
append_value(sequence *q, const column *c, int v, strbuf *sql)
{
	char *label;

	if (c->is_int)
		strbuf_appendf(sql, "%d", v);
	else if (c->is_composite) {
		long n = pgtest_query_long(q->e->s, "SELECT count(*) FROM pg_attribute WHERE attrelid ="
		                                    " (SELECT typrelid FROM pg_type WHERE oid ="
		                                    " to_regtype('%s.pair')) AND attnum > 0 AND NOT"
		                                    " attisdropped", q->schema);

		strbuf_append(sql, "'(");
		for (long i = 0; i < n; i++)
			strbuf_appendf(sql, "%s%d", i ? "," : "", v + (int) i);
		strbuf_append(sql, ")'");
	} else if (c->is_enum) {
		label = enum_label(q);
		strbuf_appendf(sql, "'%s'", label);
		free(label);
	} else
		strbuf_appendf(sql, "'v%d'", v);
}

/* ---- the statements ---- */

static void
gen_create(sequence *q, int i, strbuf *sql)
{
	int from = q->next_value;

	q->next_value += 40;
	switch (pick(q, 5)) {
	case 0:
		strbuf_appendf(sql, "CREATE TABLE %s.t%d (id int PRIMARY KEY, a int, b text)", q->schema,
		               i);
		break;
	case 3:
		strbuf_appendf(sql, "CREATE TABLE %s.t%d (id bigint PRIMARY KEY, e %s.mood, b text)",
		               q->schema, i, q->schema);
		break;
	case 1:
		strbuf_appendf(sql, "CREATE TABLE %s.t%d (id int, a int, b text)", q->schema, i);
		break;
	default:
		/* rows reach the stream before the table's first capture message */
		strbuf_appendf(sql, "CREATE TABLE %s.t%d AS SELECT g AS id, g + 100000 AS a, 'b' || g"
		               " AS b FROM generate_series(%d, %d) g", q->schema, i, from,
		               from + pick(q, 30));
		break;
	}
}

static void
gen_insert(sequence *q, const table_state *st, const char *table, strbuf *sql)
{
	int nrows = 1 + pick(q, 4), n = 0;

	strbuf_appendf(sql, "INSERT INTO %s (", table);
	for (int c = 0; c < st->ncols; c++)
		if (!st->cols[c].defaulted)
			strbuf_appendf(sql, "%s%s", n++ ? ", " : "", st->cols[c].name);
	if (n == 0) {
		strbuf_reset(sql);
		strbuf_appendf(sql, "INSERT INTO %s DEFAULT VALUES", table);
		return;
	}
	strbuf_append(sql, ") VALUES ");
	for (int r = 0; r < nrows; r++) {
		int v = q->next_value++;

		strbuf_append(sql, r ? ", (" : "(");
		n = 0;
		for (int c = 0; c < st->ncols; c++)
			if (!st->cols[c].defaulted) {
				strbuf_append(sql, n++ ? ", " : "");
				append_value(q, &st->cols[c], v, sql);
			}
		strbuf_appendc(sql, ')');
	}
}

static void
gen_update(sequence *q, const table_state *st, const char *table, strbuf *sql)
{
	const column *set = writable_column(q, st, false), *where = writable_column(q, st, true);

	if (set == NULL)
		return;
	if (set->is_int)
		strbuf_appendf(sql, "UPDATE %s SET %s = %s + 1000000", table, set->name, set->name);
	else if (set->is_enum || set->is_composite) {
		strbuf_appendf(sql, "UPDATE %s SET %s = ", table, set->name);
		append_value(q, set, q->next_value++, sql);
	} else
		strbuf_appendf(sql, "UPDATE %s SET %s = %s || 'u'", table, set->name, set->name);
	if (where != NULL)
		strbuf_appendf(sql, " WHERE %s %% 3 = %d", where->name, pick(q, 3));
}

static void
gen_add_column(sequence *q, const table_state *st, const char *table, strbuf *sql)
{
	int n = q->next_column++;
	/* a second primary key is refused */
	const char *pk = st->pk[0] == '\0' ? " PRIMARY KEY" : "";

	const column *w = writable_column(q, st, true);

	switch (pick(q, 11)) {
	case 0: strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN c%d int DEFAULT %d", table, n, n); break;
	case 8:
		strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN p%d %s.pair", table, n, q->schema);
		break;
	case 9:
		strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN d%d %s.pos DEFAULT 1", table, n, q->schema);
		break;
	case 10:
		if (w != NULL)
			strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN s%d bigint GENERATED ALWAYS AS (%s * 2)"
			               " STORED", table, n, w->name);
		break;
	case 7:
		strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN e%d %s.mood DEFAULT 'a'", table, n,
		               q->schema);
		break;
	case 1: strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN c%d text", table, n); break;
	case 2:
		/* a volatile default: the source computes each existing row's value */
		strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN c%d int DEFAULT (random() * 1000)::int",
		               table, n);
		break;
	case 3:
		strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN k%d int GENERATED ALWAYS AS IDENTITY%s",
		               table, n, pk);
		break;
	case 4: strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN k%d serial%s", table, n, pk); break;
	case 5:
		strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN k%d bigint GENERATED BY DEFAULT AS"
		               " IDENTITY", table, n);
		break;
	default: strbuf_appendf(sql, "ALTER TABLE %s ADD COLUMN c%d text DEFAULT 'd%d'", table, n, n);
	}
}

/* Would the source take a primary key over these columns (one or two)
 * now: no NULL, no duplicate? */
static bool
key_fits(sequence *q, const char *table, const column *a, const column *b)
{
	char *ok = pgtest_query_value(q->e->s, "SELECT count(*) = count(DISTINCT (%s, %s)) AND"
	                                       " count(*) FILTER (WHERE %s IS NULL OR %s IS NULL) = 0"
	                                       " FROM %s", a->name, b->name, a->name, b->name, table);
	bool fits = ok != NULL && strcmp(ok, "t") == 0;

	free(ok);
	return fits;
}

/* A key over one or two columns, when the table has none and its rows
 * take it. */
static void
gen_add_key(sequence *q, const table_state *st, const char *table, strbuf *sql)
{
	const column *a = &st->cols[pick(q, st->ncols)], *b = &st->cols[pick(q, st->ncols)];

	/* not over a stored generated column: logical decoding does not send
	 * it, so a replicated table keyed by it loses its updates and deletes
	 * (warned, and pinned above) */
	if (st->ncols == 0 || st->pk[0] != '\0' || a->stored || b->stored)
		return;
	if (a == b || pick(q, 2) == 0)
		b = a;
	if (!key_fits(q, table, a, b))
		say(q, "-- not: a key over %s, %s (NULLs or duplicates)", a->name, b->name);
	else if (a == b)
		strbuf_appendf(sql, "ALTER TABLE %s ADD PRIMARY KEY (%s)", table, a->name);
	else
		strbuf_appendf(sql, "ALTER TABLE %s ADD PRIMARY KEY (%s, %s)", table, a->name, b->name);
}

/* A surrogate key replaced by a natural one in one statement, or another
 * column of the table dropped. */
static void
gen_drop_column(sequence *q, const table_state *st, const char *table, strbuf *sql)
{
	const column *c = &st->cols[pick(q, st->ncols)], *other = writable_column(q, st, false);

	if (st->ncols < 2)
		return;
	if (c->in_pk && other != NULL && other != c && !other->in_pk && pick(q, 2) == 0 &&
	    key_fits(q, table, other, other))
		strbuf_appendf(sql, "ALTER TABLE %s DROP COLUMN %s, ADD PRIMARY KEY (%s)", table,
		               c->name, other->name);
	else
		strbuf_appendf(sql, "ALTER TABLE %s DROP COLUMN %s", table, c->name);
}

/* A column's type changed: widened, narrowed, to text, with USING (the
 * source computes the values: the table is copied again), or its
 * collation; the key's columns too. Only to types whose values print as
 * the old ones did (no numeric scale), so that both sides' text compares. */
static void
gen_retype(sequence *q, const table_state *st, const char *table, strbuf *sql)
{
	const column *c = &st->cols[pick(q, st->ncols)];
	const char *to = NULL;
	char using[128] = "";

	if (st->ncols == 0 || c->is_composite)
		return;
	if (c->stored && pick(q, 2) == 0) {
		strbuf_appendf(sql, "ALTER TABLE %s ALTER COLUMN %s DROP EXPRESSION", table, c->name);
		return;
	}
	if (c->is_int)
		switch (pick(q, 4)) {
		case 0: to = "bigint"; break;
		case 1: to = "int"; break;
		case 2:
			to = "bigint";
			snprintf(using, sizeof using, " USING %s * 2", c->name);
			break;
		default: to = c->defaulted ? "bigint" : "text";
		}
	else if (c->is_enum)
		to = "text";
	else
		switch (pick(q, 3)) {
		case 0: to = "varchar(100)"; break;
		case 1: to = "text COLLATE \"C\""; break;
		default:
			if (!c->in_pk) {
				to = "int";
				snprintf(using, sizeof using, " USING length(%s)", c->name);
			}
		}
	if (to != NULL)
		strbuf_appendf(sql, "ALTER TABLE %s ALTER COLUMN %s TYPE %s%s", table, c->name, to, using);
}

/* The table renamed to a name of the sequence that is free. */
static void
gen_rename_table(sequence *q, int i, const char *table, strbuf *sql)
{
	int j = pick(q, NTABLES);
	table_state other;

	if (j == i)
		return;
	read_table(q, j, &other);
	if (!other.exists)
		strbuf_appendf(sql, "ALTER TABLE %s RENAME TO t%d", table, j);
}

/* NOT NULL set on a column without NULLs, or dropped from one outside the
 * key. */
static void
gen_not_null(sequence *q, const table_state *st, const char *table, strbuf *sql)
{
	const column *c = &st->cols[pick(q, st->ncols)];

	if (st->ncols == 0)
		return;
	if (pick(q, 2) == 0 && !c->in_pk)
		strbuf_appendf(sql, "ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL", table, c->name);
	else if (key_fits(q, table, c, c))
		strbuf_appendf(sql, "ALTER TABLE %s ALTER COLUMN %s SET NOT NULL", table, c->name);
}

/* A unique index over a column without NULLs or duplicates made the
 * replica identity (the key tidemark matches rows by when there is no
 * primary key). */
static void
gen_identity_index(sequence *q, const table_state *st, const char *table, strbuf *sql)
{
	const column *c = &st->cols[pick(q, st->ncols)];
	int n = q->next_column++;

	if (st->ncols == 0 || c->stored || !key_fits(q, table, c, c))
		return;
	strbuf_appendf(sql, "ALTER TABLE %s ALTER COLUMN %s SET NOT NULL; CREATE UNIQUE INDEX u%d ON"
	               " %s (%s); ALTER TABLE %s REPLICA IDENTITY USING INDEX u%d", table, c->name, n,
	               table, c->name, table, n);
}

/* The schema's enum type given a value (at its end or before another), or
 * a value renamed; its composite type given an attribute, one renamed (and
 * back), or its last dropped. */
static void
gen_type_change(sequence *q, strbuf *sql)
{
	char *label = enum_label(q);
	int n = q->next_column++;

	switch (pick(q, 6)) {
	case 3:
		strbuf_appendf(sql, "ALTER TYPE %s.pair ADD ATTRIBUTE a%d int CASCADE", q->schema, n);
		break;
	case 4:
		strbuf_appendf(sql, "ALTER TYPE %s.pair RENAME ATTRIBUTE x TO x%d CASCADE; ALTER TYPE"
		               " %s.pair RENAME ATTRIBUTE x%d TO x CASCADE", q->schema, n, q->schema, n);
		break;
	case 5:
		/* its last attribute, when it has two or more */
		strbuf_appendf(sql, "ALTER TYPE %s.pair DROP ATTRIBUTE IF EXISTS y CASCADE", q->schema);
		break;
	case 0: strbuf_appendf(sql, "ALTER TYPE %s.mood ADD VALUE 'm%d'", q->schema, n); break;
	case 1:
		strbuf_appendf(sql, "ALTER TYPE %s.mood ADD VALUE 'm%d' BEFORE '%s'", q->schema, n, label);
		break;
	default:
		strbuf_appendf(sql, "ALTER TYPE %s.mood RENAME VALUE '%s' TO 'm%d'", q->schema, label, n);
	}
	free(label);
}

static void
gen_alter(sequence *q, const table_state *st, int i, const char *table, strbuf *sql)
{
	const column *c = &st->cols[pick(q, st->ncols)];

	switch (pick(q, 14)) {
	case 0:
	case 1: gen_add_column(q, st, table, sql); break;
	case 2:
		if (st->pk[0] != '\0')
			strbuf_appendf(sql, "ALTER TABLE %s DROP CONSTRAINT %s", table, st->pk);
		else
			gen_add_key(q, st, table, sql);
		break;
	case 3: gen_add_key(q, st, table, sql); break;
	case 4: gen_drop_column(q, st, table, sql); break;
	case 5:
		strbuf_appendf(sql, "ALTER TABLE %s REPLICA IDENTITY %s", table,
		               st->replident == 'f' ? "DEFAULT" : "FULL");
		break;
	case 6:
		if (st->ncols > 0)
			strbuf_appendf(sql, "ALTER TABLE %s RENAME COLUMN %s TO r%d", table, c->name,
			               q->next_column++);
		break;
	case 7: strbuf_appendf(sql, "DROP TABLE %s", table); break;
	case 9: gen_retype(q, st, table, sql); break;
	case 10: gen_rename_table(q, i, table, sql); break;
	case 11: gen_not_null(q, st, table, sql); break;
	case 12: gen_identity_index(q, st, table, sql); break;
	case 13: gen_type_change(q, sql); break;
	default: strbuf_appendf(sql, "TRUNCATE %s", table);
	}
}

/* One statement on table t<i>, drawn from what the table is now. */
static void
gen_step(sequence *q, int i)
{
	table_state st;
	strbuf sql = STRBUF_INIT;
	char table[64];
	const column *w;

	snprintf(table, sizeof table, "%s.t%d", q->schema, i);
	read_table(q, i, &st);
	if (!st.exists)
		gen_create(q, i, &sql);
	else
		switch (pick(q, 10)) {
		case 0:
		case 1:
		case 2: gen_insert(q, &st, table, &sql); break;
		case 3: gen_update(q, &st, table, &sql); break;
		case 4:
			if ((w = writable_column(q, &st, true)) != NULL)
				strbuf_appendf(&sql, "DELETE FROM %s WHERE %s %% 4 = %d", table, w->name,
				               pick(q, 4));
			break;
		default: gen_alter(q, &st, i, table, &sql);
		}
	if (sql.len > 0)
		statement(q, strbuf_str(&sql));
	strbuf_free(&sql);
}

/* ---- running it ---- */

static void
collect(sequence *q, const char *out)
{
	strbuf_append(&q->output, out ? out : "");
}

static void
catch_up(sequence *q)
{
	char *out = NULL;
	int rc = tm_run(q->e, 120, &out, "run", "--until-caught-up", NULL);

	collect(q, out);
	free(out);
	if (rc != 0)
		fail_sequence(q, "run --until-caught-up exited %d", rc);
}

static void
stop_run(sequence *q, pgtest_proc *run, bool kill9)
{
	int rc;

	if (!pgtest_proc_wait_output(run, "streaming from slot", 60))
		fail_sequence(q, "run did not start streaming:\n%s", pgtest_proc_output(run));
	pgtest_proc_kill(run, kill9 ? SIGKILL : SIGTERM);
	rc = pgtest_proc_wait(run, 60);
	collect(q, pgtest_proc_output(run));
	if (rc != (kill9 ? 128 + SIGKILL : 0))
		fail_sequence(q, "run exited %d", rc);
	pgtest_proc_free(run);
}

static void
setup_schema(sequence *q)
{
	char *out = NULL;
	int rc = tm_run(q->e, 60, &out, "setup", "--schema", q->schema, NULL);

	if (rc != 0)
		fail_sequence(q, "setup --schema %s exited %d:\n%s", q->schema, rc, out ? out : "");
	free(out);
}

/* The source's columns of a table, quoted, for both sides' SELECT. */
static char *
column_list(sequence *q, const char *table)
{
	return pgtest_query_value(q->e->s,
	                          "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)"
	                          " FROM pg_attribute WHERE attrelid = to_regclass('%s')"
	                          " AND attnum > 0 AND NOT attisdropped", table);
}

static void
check_equal(sequence *q, const char *table)
{
	char *cols = column_list(q, table);
	int ns, nt;
	char **src, **dst;

	if (cols == NULL) {
		free(cols);
		return;
	}
	src = tm_sorted_rows(q->e->s, table, cols, &ns);
	dst = tm_sorted_rows(q->e->t, table, cols, &nt);
	for (int r = 0; r < ns || r < nt; r++) {
		const char *a = r < ns ? src[r] : "(no more rows)", *b = r < nt ? dst[r] : "(no more rows)";

		if (strcmp(a, b) != 0)
			fail_sequence(q, "%s differs (%d rows on the source, %d on the target); first "
			              "difference, sorted:\n  source: %.300s\n  target: %.300s", table, ns,
			              nt, a, b);
	}
	tm_rows_free(src, ns);
	tm_rows_free(dst, nt);
	free(cols);
}

static void
check_table(sequence *q, int i)
{
	table_state st;
	char table[64], said[128];
	long registered;

	read_table(q, i, &st);
	if (!st.exists)
		return;
	snprintf(table, sizeof table, "%s.t%d", q->schema, i);
	registered = pgtest_query_long(q->e->t, "SELECT count(*) FROM tidemark.tables WHERE"
	                                        " source_schema = '%s' AND source_table = 't%d'"
	                                        " AND state <> 'dropped'", q->schema, i);
	if (st.has_key || st.replident == 'f' || registered > 0) {
		if (registered != 1)
			fail_sequence(q, "%s has %s but is not replicated", table,
			              st.has_key ? "a key" : "REPLICA IDENTITY FULL");
		check_equal(q, table);
		return;
	}
	snprintf(said, sizeof said, "%s.t%d in a replicated schema has no primary key", q->schema, i);
	if (strstr(strbuf_str(&q->output), said) == NULL &&
	    strstr(strbuf_str(&q->output), "has no primary key and no unique index") == NULL)
		fail_sequence(q, "%s has no key and is not replicated, and run did not say so", table);
}

/* Tables made before the setup (with a key or FULL: setup refuses the
 * others), with rows. */
static void
before_setup(sequence *q)
{
	for (int i = 0; i < NTABLES; i++) {
		if (pick(q, 2) == 0)
			continue;
		pgtest_exec(q->e->s, "CREATE TABLE %s.t%d (id int PRIMARY KEY, a int, b text);"
		                     "INSERT INTO %s.t%d SELECT g, g, 'b' || g FROM generate_series(1, 20) g",
		            q->schema, i, q->schema, i);
		if (pick(q, 3) == 0)
			pgtest_exec(q->e->s, "ALTER TABLE %s.t%d DROP CONSTRAINT t%d_pkey,"
			                     " REPLICA IDENTITY FULL", q->schema, i, i);
		say(q, "-- before setup: %s.t%d with 20 rows", q->schema, i);
	}
}

/* What a kind of sequence draws its statements from. */
typedef struct vocabulary {
	const char *prefix;                 /* of the sequences' schemas */
	const char *again;                  /* the settings that run one alone */
	void (*before_setup)(sequence *q);
	void (*step)(sequence *q);          /* one statement */
	void (*check)(sequence *q);         /* the tables against the source */
} vocabulary;

static void
flat_step(sequence *q)
{
	gen_step(q, pick(q, NTABLES));
}

static void
flat_check(sequence *q)
{
	for (int i = 0; i < NTABLES; i++)
		check_table(q, i);
}

static const vocabulary flat_tables = {"g", "TXDD_SEQUENCES=1 TXDD_PART_SEQUENCES=0",
                                       before_setup, flat_step, flat_check};

static void
run_steps(sequence *q, const vocabulary *v, int ntxs, int nsteps)
{
	bool live;
	pgtest_proc *run = NULL;

	for (int i = 0; i < 4; i++)
		next_rand(q);
	pgtest_exec(q->e->s, "CREATE SCHEMA %s; CREATE TYPE %s.mood AS ENUM ('a', 'b');"
	            "CREATE TYPE %s.pair AS (x int, y int);"
	            "CREATE DOMAIN %s.pos AS int CHECK (VALUE > 0)", q->schema, q->schema, q->schema,
	            q->schema);
	v->before_setup(q);
	setup_schema(q);
	live = pick(q, 2) == 0;
	say(q, "-- run %s", live ? "follows live" : "catches up at the end");
	for (int t = 0; t < ntxs; t++) {
		int steps = 1 + pick(q, nsteps);

		if (live && run == NULL)
			run = tm_spawn(q->e, "run", NULL);
		pgtest_exec(q->e->s, "BEGIN");
		say(q, "BEGIN;");
		for (int s = 0; s < steps; s++)
			v->step(q);
		pgtest_exec(q->e->s, "COMMIT");
		say(q, "COMMIT;");
		if (run != NULL && pick(q, 3) == 0) {
			say(q, "-- run killed with SIGKILL");
			stop_run(q, run, true);
			run = NULL;
		}
	}
	if (run != NULL)
		stop_run(q, run, false);
	catch_up(q);
	if (strstr(strbuf_str(&q->output), "set aside") != NULL)
		fail_sequence(q, "a table was set aside");
	if (strstr(strbuf_str(&q->output), " tidemark error: ") != NULL)
		fail_sequence(q, "run logged an error");
	v->check(q);
}

static void
run_sequence(tm_env *e, const vocabulary *v, unsigned seed, int ntxs, int nsteps, bool verbose)
{
	/* on the heap: the harness may fail the test out of this function */
	sequence *q = calloc(1, sizeof *q);

	q->e = e;
	q->seed = seed;
	q->rng = 0x9e3779b97f4a7c15ULL ^ ((uint64_t) seed * 0x2545f4914f6cdd1dULL);
	q->next_value = q->next_column = 1;
	snprintf(q->schema, sizeof q->schema, "%s%u", v->prefix, seed);
	q->again = v->again;
	current = q;
	run_steps(q, v, ntxs, nsteps);
	if (verbose)
		printf("-- sequence %u:\n%s", seed, strbuf_str(&q->log));
	current = NULL;
	strbuf_free(&q->log);
	strbuf_free(&q->output);
	free(q);
}

/* ---- a partitioned table ---- */

/*
 * The other vocabulary: one partitioned table r (key (id, k), ranges of
 * 10 values of k each over [0, 60), partitions r_<n>, a default one, some
 * partitioned again by hash of id), written to through the root, its
 * hierarchy changed (partitions created, attached with rows, detached,
 * dropped, truncated) and its columns too; at the end every table of the
 * schema that is not a partition (the root, detached partitions) is
 * compared with the source.
 */
#define PART_RANGES 6

/* "parent child" of a partition of r drawn at random (leaves only, or at
 * any level), into out; "" when r has none. */
static void
pick_partition(sequence *q, bool leaves, char *out, size_t size)
{
	char *all = pgtest_query_value(q->e->s, "SELECT string_agg(p.parentrelid::regclass::text"
	                                        " || ' ' || p.relid::regclass::text, ',' ORDER BY"
	                                        " p.relid::regclass::text) FROM pg_partition_tree("
	                                        "to_regclass('%s.r')) p WHERE p.level > 0%s",
	                               q->schema, leaves ? " AND p.isleaf" : "");
	char *save = NULL;
	int n = 1, want;

	out[0] = '\0';
	if (all == NULL)
		return;
	for (const char *c = all; *c; c++)
		n += *c == ',';
	want = pick(q, n);
	for (char *one = strtok_r(all, ",", &save); one != NULL; one = strtok_r(NULL, ",", &save))
		if (want-- == 0)
			snprintf(out, size, "%s", one);
	free(all);
}

static void
gen_root(sequence *q, strbuf *sql)
{
	const char *sc = q->schema;

	strbuf_appendf(sql, "CREATE TABLE %s.r (id int, k int, a int, b text, PRIMARY KEY (id, k))"
	               " PARTITION BY RANGE (k); CREATE TABLE %s.r_a PARTITION OF %s.r FOR VALUES"
	               " FROM (0) TO (10); CREATE TABLE %s.r_b PARTITION OF %s.r FOR VALUES FROM"
	               " (10) TO (20)", sc, sc, sc, sc, sc);
	if (pick(q, 2) == 0)
		strbuf_appendf(sql, "; CREATE TABLE %s.r_d PARTITION OF %s.r DEFAULT", sc, sc);
}

/* Rows through the root, k drawn over every range (one without a
 * partition is refused, and the statement rolled back). */
static void
part_insert(sequence *q, const table_state *st, const char *root, strbuf *sql)
{
	int nrows = 1 + pick(q, 4), n = 0;

	strbuf_appendf(sql, "INSERT INTO %s (", root);
	for (int c = 0; c < st->ncols; c++)
		if (!st->cols[c].defaulted)
			strbuf_appendf(sql, "%s%s", n++ ? ", " : "", st->cols[c].name);
	strbuf_append(sql, ") VALUES ");
	for (int r = 0; r < nrows; r++) {
		int v = q->next_value++;

		strbuf_append(sql, r ? ", (" : "(");
		n = 0;
		for (int c = 0; c < st->ncols; c++) {
			if (st->cols[c].defaulted)
				continue;
			strbuf_append(sql, n++ ? ", " : "");
			if (strcmp(st->cols[c].name, "k") == 0)
				strbuf_appendf(sql, "%d", pick(q, 10 * PART_RANGES));
			else
				append_value(q, &st->cols[c], v, sql);
		}
		strbuf_appendc(sql, ')');
	}
}

/* A partition made: empty, the default one, partitioned again by hash, or
 * a table with rows attached. */
static void
gen_partition(sequence *q, const char *root, strbuf *sql)
{
	int lo = 10 * pick(q, PART_RANGES), n = q->next_column++, v = q->next_value;
	const char *sc = q->schema;

	switch (pick(q, 4)) {
	case 0:
		strbuf_appendf(sql, "CREATE TABLE %s.r_%d PARTITION OF %s DEFAULT", sc, n, root);
		break;
	case 1:
		strbuf_appendf(sql, "CREATE TABLE %s.r_%d PARTITION OF %s FOR VALUES FROM (%d) TO (%d)"
		               " PARTITION BY HASH (id); CREATE TABLE %s.r_%d_0 PARTITION OF %s.r_%d FOR"
		               " VALUES WITH (MODULUS 2, REMAINDER 0); CREATE TABLE %s.r_%d_1 PARTITION OF"
		               " %s.r_%d FOR VALUES WITH (MODULUS 2, REMAINDER 1)", sc, n, root, lo,
		               lo + 10, sc, n, sc, n, sc, n, sc, n);
		break;
	case 2:
		q->next_value += 5;
		strbuf_appendf(sql, "CREATE TABLE %s.r_%d (LIKE %s); INSERT INTO %s.r_%d (id, k) SELECT"
		               " g, %d + g %% 10 FROM generate_series(%d, %d) g; ALTER TABLE %s ATTACH"
		               " PARTITION %s.r_%d FOR VALUES FROM (%d) TO (%d)", sc, n, root, sc, n, lo,
		               v, v + 4, root, sc, n, lo, lo + 10);
		break;
	default:
		strbuf_appendf(sql, "CREATE TABLE %s.r_%d PARTITION OF %s FOR VALUES FROM (%d) TO (%d)",
		               sc, n, root, lo, lo + 10);
	}
}

/* The hierarchy changed: a partition detached, dropped or truncated. */
static void
gen_hierarchy(sequence *q, strbuf *sql)
{
	char part[160], *child;

	pick_partition(q, pick(q, 2) == 0, part, sizeof part);
	if (part[0] == '\0' || (child = strchr(part, ' ')) == NULL)
		return;
	*child++ = '\0';
	switch (pick(q, 3)) {
	case 0: strbuf_appendf(sql, "ALTER TABLE %s DETACH PARTITION %s", part, child); break;
	case 1: strbuf_appendf(sql, "DROP TABLE %s", child); break;
	default: strbuf_appendf(sql, "TRUNCATE %s", child);
	}
}

static void
part_step(sequence *q)
{
	table_state st;
	strbuf sql = STRBUF_INIT;
	char root[64];
	const column *w;

	snprintf(root, sizeof root, "%s.r", q->schema);
	read_named(q, root, &st);
	if (!st.exists)
		gen_root(q, &sql);
	else
		switch (pick(q, 16)) {
		case 0:
		case 1:
		case 2:
		case 3: part_insert(q, &st, root, &sql); break;
		case 4:
			/* rows move between partitions */
			strbuf_appendf(&sql, "UPDATE %s SET k = %d WHERE id %% 3 = %d", root,
			               pick(q, 10 * PART_RANGES), pick(q, 3));
			break;
		case 5: gen_update(q, &st, root, &sql); break;
		case 6:
			if ((w = writable_column(q, &st, true)) != NULL)
				strbuf_appendf(&sql, "DELETE FROM %s WHERE %s %% 4 = %d", root, w->name,
				               pick(q, 4));
			break;
		case 7:
		case 8: gen_partition(q, root, &sql); break;
		case 9:
		case 10: gen_hierarchy(q, &sql); break;
		case 11: gen_add_column(q, &st, root, &sql); break;
		case 12: gen_drop_column(q, &st, root, &sql); break;
		case 13: gen_retype(q, &st, root, &sql); break;
		case 14:
			if (st.ncols > 0)
				strbuf_appendf(&sql, "ALTER TABLE %s RENAME COLUMN %s TO r%d", root,
				               st.cols[pick(q, st.ncols)].name, q->next_column++);
			break;
		default: strbuf_appendf(&sql, "TRUNCATE %s", root);
		}
	if (sql.len > 0)
		statement(q, strbuf_str(&sql));
	strbuf_free(&sql);
}

static void
part_before_setup(sequence *q)
{
	strbuf sql = STRBUF_INIT;

	if (pick(q, 2) == 0)
		return;
	gen_root(q, &sql);
	strbuf_appendf(&sql, "; INSERT INTO %s.r SELECT g, g %% 20, g, 'b' || g FROM"
	               " generate_series(1, 30) g", q->schema);
	pgtest_exec(q->e->s, "%s", strbuf_str(&sql));
	say(q, "-- before setup: %s;", strbuf_str(&sql));
	strbuf_free(&sql);
}

/* Every table of the schema that is not a partition: the root, detached
 * partitions (a table of their own), tables attached and detached. */
static void
part_check(sequence *q)
{
	char *names = pgtest_query_value(q->e->s, "SELECT string_agg(c.relname, ',' ORDER BY"
	                                          " c.relname) FROM pg_class c JOIN pg_namespace n"
	                                          " ON n.oid = c.relnamespace WHERE n.nspname = '%s'"
	                                          " AND c.relkind IN ('r', 'p')"
	                                          " AND NOT c.relispartition", q->schema);
	char *save = NULL;

	for (char *name = names ? strtok_r(names, ",", &save) : NULL; name != NULL;
	     name = strtok_r(NULL, ",", &save)) {
		char table[160];
		table_state st;
		long registered;

		snprintf(table, sizeof table, "%s.%s", q->schema, name);
		read_named(q, table, &st);
		registered = pgtest_query_long(q->e->t, "SELECT count(*) FROM tidemark.tables WHERE"
		                                        " source_schema = '%s' AND source_table = '%s'"
		                                        " AND state <> 'dropped'", q->schema, name);
		if (!st.has_key && st.replident != 'f' && registered == 0)
			continue;
		if (registered != 1)
			fail_sequence(q, "%s has %s but is not replicated", table,
			              st.has_key ? "a key" : "REPLICA IDENTITY FULL");
		check_equal(q, table);
	}
	free(names);
}

static const vocabulary partitioned_tables = {"h", "TXDD_SEQUENCES=0 TXDD_PART_SEQUENCES=1",
                                              part_before_setup, part_step, part_check};

/* ---- the patterns met in real migrations, and their neighbours ---- */

/* A pinned sequence: its statements ("@" is the sequence's schema), before
 * the setup and then in steps, each step caught up with. */
typedef struct script {
	const char *name;
	const char *before;
	const char *steps[6];  /* one starting "?" may be refused by the source (a
	                        * version's rule): the refusal is noted */
} script;

static const script scripts[] = {
	{"CREATE TABLE AS with rows, then its key", NULL,
	 {"BEGIN; CREATE TABLE @.t0 AS SELECT g AS id, g AS a FROM generate_series(1, 50) g;"
	  " ALTER TABLE @.t0 ADD PRIMARY KEY (id); UPDATE @.t0 SET a = 0 WHERE id < 5; COMMIT"}},
	{"CREATE TABLE AS, its key, dropped later", NULL,
	 {"BEGIN; CREATE TABLE @.t0 AS SELECT g AS id, g AS a FROM generate_series(1, 50) g;"
	  " ALTER TABLE @.t0 ADD PRIMARY KEY (id); COMMIT;"
	  " CREATE TABLE @.t1 AS SELECT * FROM @.t0; DROP TABLE @.t0"}},
	{"created again under its name without a key, the key later",
	 "CREATE TABLE @.t0 (id int PRIMARY KEY, a int); INSERT INTO @.t0 VALUES (1, 1), (2, 2)",
	 {"DROP TABLE @.t0; CREATE TABLE @.t0 (id int, a int, b int);"
	  " INSERT INTO @.t0 SELECT g, g, g FROM generate_series(1, 20) g",
	  "ALTER TABLE @.t0 ADD PRIMARY KEY (id); UPDATE @.t0 SET a = 0 WHERE id < 5",
	  "DROP TABLE @.t0; CREATE TABLE @.t0 (x int); INSERT INTO @.t0 VALUES (1); DROP TABLE @.t0;"
	  " CREATE TABLE @.t0 (id int PRIMARY KEY, z text); INSERT INTO @.t0 VALUES (7, 'z')"}},
	{"created again in one transaction, keyed at its end",
	 "CREATE TABLE @.t0 (id int PRIMARY KEY, a int); INSERT INTO @.t0 VALUES (1, 1)",
	 {"BEGIN; DROP TABLE @.t0; CREATE TABLE @.t0 (id int, a int, b int);"
	  " INSERT INTO @.t0 SELECT g, g, g FROM generate_series(1, 20) g;"
	  " ALTER TABLE @.t0 ADD PRIMARY KEY (id); COMMIT"}},
	{"a surrogate key replaced by a natural one",
	 "CREATE TABLE @.t0 (id serial PRIMARY KEY, a int NOT NULL, b int NOT NULL);"
	 " INSERT INTO @.t0 (a, b) SELECT g, g % 7 FROM generate_series(1, 30) g",
	 {"ALTER TABLE @.t0 DROP COLUMN id, ADD PRIMARY KEY (a, b); INSERT INTO @.t0 VALUES (100, 1)",
	  "BEGIN; ALTER TABLE @.t0 ADD COLUMN id serial; ALTER TABLE @.t0 DROP CONSTRAINT t0_pkey,"
	  " ADD PRIMARY KEY (id); UPDATE @.t0 SET b = -b WHERE a < 5; COMMIT"}},
	{"a keyless table with rows keyed by ADD COLUMN ... PRIMARY KEY", NULL,
	 {"BEGIN; CREATE TABLE @.t0 (a int, b text);"
	  " INSERT INTO @.t0 SELECT g, 'b' || g FROM generate_series(1, 20) g;"
	  " ALTER TABLE @.t0 ADD COLUMN id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY;"
	  " INSERT INTO @.t0 (a, b) VALUES (100, 'x'); COMMIT;"
	  "BEGIN; CREATE TABLE @.t1 (a int); INSERT INTO @.t1 SELECT g FROM generate_series(1, 20) g;"
	  " ALTER TABLE @.t1 ADD COLUMN id serial PRIMARY KEY; COMMIT",
	  "UPDATE @.t0 SET b = 'u' WHERE id < 5; UPDATE @.t1 SET a = 0 WHERE id < 5"}},
	{"REPLICA IDENTITY FULL, then a key, in one transaction", NULL,
	 {"BEGIN; CREATE TABLE @.t0 (id int, a int); ALTER TABLE @.t0 REPLICA IDENTITY FULL;"
	  " INSERT INTO @.t0 SELECT g, g FROM generate_series(1, 20) g;"
	  " UPDATE @.t0 SET a = 0 WHERE id < 5; DELETE FROM @.t0 WHERE id > 18;"
	  " ALTER TABLE @.t0 ADD PRIMARY KEY (id); COMMIT"}},
	{"a replicated keyless FULL table keyed later",
	 "CREATE TABLE @.t0 (id int, a int) ; ALTER TABLE @.t0 REPLICA IDENTITY FULL;"
	 " INSERT INTO @.t0 SELECT g, g FROM generate_series(1, 20) g",
	 {"BEGIN; UPDATE @.t0 SET a = 0 WHERE id < 5; ALTER TABLE @.t0 ADD PRIMARY KEY (id);"
	  " UPDATE @.t0 SET a = 1 WHERE id > 15; ALTER TABLE @.t0 REPLICA IDENTITY DEFAULT; COMMIT"}},
	{"the key dropped and added again around rows", NULL,
	 {"BEGIN; CREATE TABLE @.t0 AS SELECT g AS id, g AS a FROM generate_series(1, 20) g;"
	  " ALTER TABLE @.t0 ADD PRIMARY KEY (id); ALTER TABLE @.t0 DROP CONSTRAINT t0_pkey;"
	  " INSERT INTO @.t0 VALUES (100, 100); ALTER TABLE @.t0 ADD PRIMARY KEY (a); COMMIT",
	  "UPDATE @.t0 SET id = -id WHERE a < 5"}},
	{"an enum value renamed after rows of a new table used it", NULL,
	 {"BEGIN; CREATE TABLE @.t0 (id int PRIMARY KEY, e @.mood); INSERT INTO @.t0 VALUES (1, 'a'),"
	  " (2, 'b'); ALTER TYPE @.mood RENAME VALUE 'a' TO 'z'; INSERT INTO @.t0 VALUES (3, 'z');"
	  " COMMIT"}},
	{"a type changed after rows used it, in the transaction that gave a table its column",
	 "CREATE TABLE @.t0 (id int PRIMARY KEY); INSERT INTO @.t0 VALUES (1), (2)",
	 {"BEGIN; ALTER TABLE @.t0 ADD COLUMN e @.mood; UPDATE @.t0 SET e = 'a';"
	  " ALTER TYPE @.mood RENAME VALUE 'a' TO 'z'; INSERT INTO @.t0 VALUES (3, 'z'); COMMIT",
	  "BEGIN; CREATE TABLE @.t1 (id int PRIMARY KEY, c @.pair); INSERT INTO @.t1 VALUES (1,"
	  " '(1,2)'); ALTER TYPE @.pair ADD ATTRIBUTE z int CASCADE; INSERT INTO @.t1 VALUES (2,"
	  " '(3,4,5)'); COMMIT",
	  "BEGIN; ALTER TABLE @.t1 ADD COLUMN d @.pair; UPDATE @.t1 SET d = '(7,8,9)';"
	  " ALTER TYPE @.pair DROP ATTRIBUTE y CASCADE; INSERT INTO @.t1 VALUES (3, '(1,2)', '(4,5)');"
	  " COMMIT"}},
	{"a table renamed to the name of one dropped, twice over (nothing written after)",
	 "CREATE TABLE @.t1 (id int PRIMARY KEY, a int); INSERT INTO @.t1 VALUES (1, 1);"
	 " CREATE TABLE @.t0 (id int PRIMARY KEY, a int); INSERT INTO @.t0 VALUES (5, 5)",
	 {"DROP TABLE @.t1",
	  "CREATE TABLE @.t1 (id bigint PRIMARY KEY, b text); INSERT INTO @.t1 VALUES (2, 'x')",
	  "BEGIN; DROP TABLE @.t1; ALTER TABLE @.t0 RENAME TO t1; COMMIT",
	  "INSERT INTO @.t1 VALUES (6, 6)"}},
	{"a table without a key renamed to the name of one dropped, in one catch-up",
	 "CREATE TABLE @.t1 (id int PRIMARY KEY, a int); INSERT INTO @.t1 VALUES (1, 1);"
	 " CREATE TABLE @.t0 (id int, a int, b text); ALTER TABLE @.t0 REPLICA IDENTITY FULL;"
	 " INSERT INTO @.t0 VALUES (5, 5, 'x')",
	 {"DROP TABLE @.t1; CREATE TABLE @.t1 (id bigint PRIMARY KEY, b text);"
	  " INSERT INTO @.t1 VALUES (2, 'x'); BEGIN; DROP TABLE @.t1; ALTER TABLE @.t0 RENAME TO t1;"
	  " COMMIT"}},
	{"a partition detached in the transaction that created its root", NULL,
	 {"BEGIN; CREATE TABLE @.r (id int, k int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);"
	  " CREATE TABLE @.r_a PARTITION OF @.r FOR VALUES FROM (0) TO (10);"
	  " CREATE TABLE @.r_b PARTITION OF @.r FOR VALUES FROM (10) TO (20);"
	  " INSERT INTO @.r VALUES (1, 1), (2, 12); ALTER TABLE @.r DETACH PARTITION @.r_a; COMMIT",
	  "BEGIN; CREATE TABLE @.q (id int, k int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);"
	  " CREATE TABLE @.q_a PARTITION OF @.q FOR VALUES FROM (0) TO (10);"
	  " ALTER TABLE @.q DETACH PARTITION @.q_a; INSERT INTO @.q_a VALUES (3, 30); COMMIT"}},
	{"a key over a generated column, which logical decoding never sends", NULL,
	 /* PostgreSQL 18 refuses UPDATE and DELETE of a published table whose
	  * replica identity (FULL too) has a generated column it does not send */
	 {"CREATE TABLE @.t0 (id int, s int GENERATED ALWAYS AS (id * 2) STORED PRIMARY KEY, v text);"
	  " INSERT INTO @.t0 (id, v) VALUES (1, 'a'), (2, 'b')",
	  "ALTER TABLE @.t0 REPLICA IDENTITY FULL; INSERT INTO @.t0 (id, v) VALUES (3, 'c')",
	  "?UPDATE @.t0 SET v = 'x' WHERE id = 1; DELETE FROM @.t0 WHERE id = 2",
	  "CREATE TABLE @.t1 (id int, s int GENERATED ALWAYS AS (id * 2) STORED NOT NULL, v text);"
	  " CREATE UNIQUE INDEX t1_s ON @.t1 (s); ALTER TABLE @.t1 REPLICA IDENTITY USING INDEX t1_s;"
	  " INSERT INTO @.t1 (id, v) VALUES (1, 'a'), (2, 'b')",
	  "ALTER TABLE @.t1 REPLICA IDENTITY FULL; INSERT INTO @.t1 (id, v) VALUES (3, 'c')",
	  "?UPDATE @.t1 SET v = 'y' WHERE id = 1; DELETE FROM @.t1 WHERE id = 2"}},
	{"a table without a key renamed, and its name taken, before its copy's read",
	 "CREATE TABLE @.t0 (id int PRIMARY KEY, a int); INSERT INTO @.t0 VALUES (1, 1);"
	 " CREATE TABLE @.t1 (id int, a int, b text); ALTER TABLE @.t1 REPLICA IDENTITY FULL;"
	 " INSERT INTO @.t1 VALUES (1, 1, 'x'), (2, 2, 'y')",
	 {"BEGIN; DROP TABLE @.t0; ALTER TABLE @.t1 RENAME TO t0; COMMIT;"
	  " CREATE TABLE @.t1 (id int PRIMARY KEY, a int, b text); INSERT INTO @.t1 VALUES (5, 5, 'z');"
	  " INSERT INTO @.t0 VALUES (3, 3, 'w')"}},
	{"a table that ends its transaction without a key", NULL,
	 {"BEGIN; CREATE TABLE @.t0 (id int PRIMARY KEY, a int); INSERT INTO @.t0 VALUES (1, 1);"
	  " ALTER TABLE @.t0 DROP CONSTRAINT t0_pkey; COMMIT",
	  "ALTER TABLE @.t0 ADD PRIMARY KEY (id); INSERT INTO @.t0 VALUES (2, 2)"}},
};

/* tmpl with "@" replaced by the schema. */
static void
expand(const char *tmpl, const char *schema, strbuf *out)
{
	strbuf_reset(out);
	for (const char *c = tmpl; *c; c++)
		if (*c == '@')
			strbuf_append(out, schema);
		else
			strbuf_appendc(out, *c);
}

static void
run_script(tm_env *e, int n, const script *s)
{
	sequence *q = calloc(1, sizeof *q);
	strbuf sql = STRBUF_INIT;

	q->e = e;
	q->seed = 0;
	snprintf(q->schema, sizeof q->schema, "p%d", n);
	current = q;
	say(q, "-- pinned sequence %d: %s", n, s->name);
	pgtest_exec(e->s, "CREATE SCHEMA %s; CREATE TYPE %s.mood AS ENUM ('a', 'b');"
	            "CREATE TYPE %s.pair AS (x int, y int)", q->schema, q->schema, q->schema);
	if (s->before != NULL) {
		expand(s->before, q->schema, &sql);
		pgtest_exec(e->s, "%s", strbuf_str(&sql));
		say(q, "-- before setup: %s;", strbuf_str(&sql));
	}
	setup_schema(q);
	for (int i = 0; i < 6 && s->steps[i] != NULL; i++) {
		bool may_fail = s->steps[i][0] == '?';
		char *err;

		expand(s->steps[i] + may_fail, q->schema, &sql);
		say(q, "%s;", strbuf_str(&sql));
		if (!may_fail)
			pgtest_exec(e->s, "%s", strbuf_str(&sql));
		else if ((err = pgtest_exec_error(e->s, "%s", strbuf_str(&sql))) != NULL) {
			say(q, "-- refused: %s", err);
			free(err);
		}
		catch_up(q);
	}
	if (strstr(strbuf_str(&q->output), "set aside") != NULL)
		fail_sequence(q, "a table was set aside");
	if (strstr(strbuf_str(&q->output), " tidemark error: ") != NULL)
		fail_sequence(q, "run logged an error");
	flat_check(q);
	part_check(q);
	if (env_int("TXDD_VERBOSE", 0) != 0)
		printf("-- pinned sequence %d:\n%s-- what run said:\n%s", n, strbuf_str(&q->log),
		       strbuf_str(&q->output));
	current = NULL;
	strbuf_free(&sql);
	strbuf_free(&q->log);
	strbuf_free(&q->output);
	free(q);
}

static void
test_pinned_sequences(void **state)
{
	tm_env *e = tm_env_new("txddpin");

	(void) state;
	for (int i = 0; i < (int) (sizeof scripts / sizeof scripts[0]); i++)
		run_script(e, i, &scripts[i]);
	tm_env_free(e);
}

/* count sequences (from the environment variable count_env, or dflt) of
 * vocabulary v, in clusters of their own named name. */
static void
run_generated(const char *name, const vocabulary *v, const char *count_env, int dflt)
{
	tm_env *e = tm_env_new(name);
	int n = env_int(count_env, dflt), first = env_int("TXDD_SEED", 1);
	int ntxs = env_int("TXDD_TXS", 3), nsteps = env_int("TXDD_STEPS", 7);
	bool verbose = env_int("TXDD_VERBOSE", 0) != 0;

	for (int i = 0; i < n; i++)
		run_sequence(e, v, (unsigned) (first + i), ntxs, nsteps, verbose);
	tm_env_free(e);
}

static void
test_generated_sequences(void **state)
{
	(void) state;
	run_generated("txddgen", &flat_tables, "TXDD_SEQUENCES", 12);
}

static void
test_generated_partition_sequences(void **state)
{
	(void) state;
	run_generated("txddpart", &partitioned_tables, "TXDD_PART_SEQUENCES", 8);
}

static int
report_unfinished(void **state)
{
	(void) state;
	if (current != NULL)
		fprintf(stderr, "sequence with seed %u (TXDD_SEED=%u %s) did not end:\n"
		        "-- the sequence:\n%s", current->seed, current->seed,
		        current->again ? current->again : "", strbuf_str(&current->log));
	current = NULL;
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_pinned_sequences, report_unfinished),
		cmocka_unit_test_teardown(test_generated_sequences, report_unfinished),
		cmocka_unit_test_teardown(test_generated_partition_sequences, report_unfinished),
	};

	return cmocka_run_group_tests(tests, tm_clusters_start, tm_clusters_stop);
}
