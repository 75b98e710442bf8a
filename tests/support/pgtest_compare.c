/*
 * pgtest_compare.c: comparing a table on two servers, row by row.
 *
 * Each side is read through a cursor in chunks, so memory use does not grow
 * with the table.
 */
#include "pgtest_int.h"

#include <stdlib.h>
#include <string.h>

#define FETCH_ROWS 2000
#define VALUE_SHOWN 80          /* characters of a value shown in a diff */

typedef struct side {
	PGconn *conn;
	const char *label;          /* "source" or "target" */
	const char *cursor;
	bool began;                 /* the comparison opened the transaction */
	bool declared;
	PGresult *chunk;            /* owned: the rows being compared */
	int pos;                    /* the next row of chunk */
	char *error;                /* owned: why the side cannot be read */
} side;

static bool
side_sql(side *s, const char *sql)
{
	char *err = NULL;
	PGresult *res = pgt_run_sql(s->conn, sql, &err);

	if (res == NULL) {
		s->error = pgt_format("%s: %s", s->label, err);
		free(err);
		return false;
	}
	PQclear(res);
	return true;
}

static bool
side_open(side *s, const char *table, const char *order_by)
{
	char *sql;
	bool ok;

	if (PQtransactionStatus(s->conn) == PQTRANS_IDLE) {
		if (!side_sql(s, "BEGIN ISOLATION LEVEL REPEATABLE READ"))
			return false;
		s->began = true;
	}
	sql = pgt_format("DECLARE %s NO SCROLL CURSOR FOR SELECT * FROM %s ORDER BY %s",
					 s->cursor, table, order_by);
	ok = side_sql(s, sql);
	free(sql);
	s->declared = ok;
	return ok;
}

/* Fetches the next chunk; false on an error. */
static bool
side_fetch(side *s)
{
	char *sql = pgt_format("FETCH FORWARD %d FROM %s", FETCH_ROWS, s->cursor);
	char *err = NULL;

	PQclear(s->chunk);
	s->chunk = pgt_run_sql(s->conn, sql, &err);
	s->pos = 0;
	free(sql);
	if (s->chunk == NULL) {
		s->error = pgt_format("%s: %s", s->label, err);
		free(err);
		return false;
	}
	return true;
}

/* The index in s->chunk of the next row, or -1 at the end or on an error. */
static int
side_next(side *s)
{
	if (s->error != NULL)
		return -1;
	if (s->chunk == NULL || (s->pos >= PQntuples(s->chunk) && PQntuples(s->chunk) > 0))
		if (!side_fetch(s))
			return -1;
	if (s->pos >= PQntuples(s->chunk))
		return -1;
	return s->pos++;
}

static void
side_close(side *s)
{
	PQclear(s->chunk);
	s->chunk = NULL;
	if (s->declared && PQtransactionStatus(s->conn) == PQTRANS_INTRANS) {
		char *sql = pgt_format("CLOSE %s", s->cursor);

		PQclear(pgt_run_sql(s->conn, sql, NULL));
		free(sql);
	}
	if (s->began)
		PQclear(pgt_run_sql(s->conn, "ROLLBACK", NULL));
	free(s->error);
}

/* ---- describing differences ------------------------------------------- */

static void
append_value(strbuf *sb, const PGresult *res, int row, int col)
{
	const char *v = PQgetvalue(res, row, col);
	size_t len = strlen(v);

	if (PQgetisnull(res, row, col)) {
		strbuf_append(sb, "NULL");
		return;
	}
	strbuf_appendf(sb, "'%.*s'%s", VALUE_SHOWN, v, len > VALUE_SHOWN ? "..." : "");
}

static void
append_row(strbuf *sb, const PGresult *res, int row)
{
	strbuf_appendc(sb, '(');
	for (int c = 0; c < PQnfields(res); c++) {
		if (c > 0)
			strbuf_append(sb, ", ");
		append_value(sb, res, row, c);
	}
	strbuf_appendc(sb, ')');
}

static void
append_columns(strbuf *sb, const PGresult *res)
{
	strbuf_appendc(sb, '(');
	for (int c = 0; c < PQnfields(res); c++)
		strbuf_appendf(sb, "%s%s", c > 0 ? ", " : "", PQfname(res, c));
	strbuf_appendc(sb, ')');
}

/* ---- comparing ------------------------------------------------------------ */

/* Maps each source column to the target column of that name; false (and a
 * description in sb) unless both have the same set of columns. */
static bool
map_columns(const PGresult *src, const PGresult *dst, int *map, strbuf *sb)
{
	bool ok = PQnfields(src) == PQnfields(dst);

	for (int c = 0; ok && c < PQnfields(src); c++) {
		map[c] = -1;
		for (int d = 0; d < PQnfields(dst); d++)
			if (strcmp(PQfname(src, c), PQfname(dst, d)) == 0)
				map[c] = d;
		ok = map[c] >= 0;
	}
	if (!ok) {
		strbuf_append(sb, "the columns differ: source ");
		append_columns(sb, src);
		strbuf_append(sb, ", target ");
		append_columns(sb, dst);
	}
	return ok;
}

static bool
values_equal(const PGresult *a, int ra, int ca, const PGresult *b, int rb, int cb)
{
	if (PQgetisnull(a, ra, ca) || PQgetisnull(b, rb, cb))
		return PQgetisnull(a, ra, ca) && PQgetisnull(b, rb, cb);
	return strcmp(PQgetvalue(a, ra, ca), PQgetvalue(b, rb, cb)) == 0;
}

/* Compares one row; false (and a description in sb) if they differ. */
static bool
rows_equal(side *src, int rs, side *dst, int rd, const int *map, long n, strbuf *sb)
{
	for (int c = 0; c < PQnfields(src->chunk); c++) {
		if (values_equal(src->chunk, rs, c, dst->chunk, rd, map[c]))
			continue;
		strbuf_appendf(sb, "row %ld differs in column %s: source ", n, PQfname(src->chunk, c));
		append_value(sb, src->chunk, rs, c);
		strbuf_append(sb, ", target ");
		append_value(sb, dst->chunk, rd, map[c]);
		strbuf_append(sb, "\n  source row: ");
		append_row(sb, src->chunk, rs);
		strbuf_append(sb, "\n  target row: ");
		append_row(sb, dst->chunk, rd);
		return false;
	}
	return true;
}

/* Describes the row that only one side has. */
static void
describe_extra(strbuf *sb, side *has, int row, long n)
{
	strbuf_appendf(sb, "only the %s has row %ld: ", has->label, n);
	append_row(sb, has->chunk, row);
}

/* Walks both cursors; false and a description in sb at the first
 * difference. */
static bool
compare_sides(side *src, side *dst, strbuf *sb)
{
	int *map = NULL;
	bool equal = true;

	for (long n = 1; equal; n++) {
		int rs = side_next(src), rd = side_next(dst);

		if (src->error || dst->error) {
			strbuf_append(sb, src->error ? src->error : dst->error);
			equal = false;
		} else if (map == NULL) {
			map = malloc(sizeof(int) * (size_t) (PQnfields(src->chunk) + 1));
			if (map == NULL)
				abort();
			equal = map_columns(src->chunk, dst->chunk, map, sb);
		}
		if (!equal || (rs < 0 && rd < 0))
			break;
		if (rs < 0 || rd < 0) {
			describe_extra(sb, rs < 0 ? dst : src, rs < 0 ? rd : rs, n);
			equal = false;
		} else
			equal = rows_equal(src, rs, dst, rd, map, n, sb);
	}
	free(map);
	return equal;
}

bool
pgtest_tables_equal(PGconn *src, PGconn *dst, const char *qualified_table,
					const char *order_by, char **diff)
{
	side s = {src, "source", "pgtest_cmp_source", false, false, NULL, 0, NULL};
	side d = {dst, "target", "pgtest_cmp_target", false, false, NULL, 0, NULL};
	strbuf sb = STRBUF_INIT;
	bool equal = false;

	strbuf_appendf(&sb, "%s (ordered by %s): ", qualified_table, order_by);
	if (!side_open(&s, qualified_table, order_by) || !side_open(&d, qualified_table, order_by))
		strbuf_append(&sb, s.error ? s.error : d.error);
	else
		equal = compare_sides(&s, &d, &sb);
	side_close(&d);
	side_close(&s);
	if (diff != NULL)
		*diff = equal ? NULL : strbuf_steal(&sb);
	strbuf_free(&sb);
	return equal;
}
