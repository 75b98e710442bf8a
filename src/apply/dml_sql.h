/*
 * dml_sql.h: the statements that apply row changes to a target table,
 * built with quoted identifiers and $n parameters only. Pure.
 *
 * Column lists are given as names in the order the parameters follow;
 * key columns are a subset of them, identified by index.
 */
#ifndef TIDEMARK_DML_SQL_H
#define TIDEMARK_DML_SQL_H

#include <stdbool.h>

#include "strbuf.h"

/*
 * A table's shape beyond a plain mirror (migrations/target/014_table_modes.
 * sql): metadata columns on the mirror, filled by their defaults from the
 * session's tidemark.lsn (set per source transaction, and to a chunk's high
 * watermark for a copy); soft deletes, which mark a row instead of
 * removing it, with the session's tidemark.commit_time; a history beside
 * the mirror, which each statement writes in the same statement, from the
 * mirror's row as the change left it (RETURNING). A statement of a change
 * with a history takes DML_SQL_HISTORY_PARAMS more parameters after all
 * its own: the entry's tidemark_op, tidemark_seq, tidemark_lsn and
 * tidemark_commit_time (the statements of a copy take the last two from
 * the session).
 */
#define DML_SQL_HISTORY_PARAMS 4

typedef struct dml_sql_shape {
	bool metadata;
	bool soft_delete;
	const char *history;          /* its name in the table's schema; NULL: none */
	int nhist;
	const char *const *hist_cols; /* the history's columns the mirror has (borrowed) */
	const bool *hist_text;        /* per hist_cols: a history column of text whose mirror
	                               * column is of another type, written with the value's
	                               * output text as the stream sends it
	                               * (tidemark.output_text), not its cast to text
	                               * (true for 't', 10.0.0.1/32 for 10.0.0.1); NULL: none
	                               * (borrowed) */
} dml_sql_shape;

typedef struct dml_sql_table {
	const char *schema;
	const char *name;
	int ncols;
	const char *const *cols;  /* borrowed names */
	int nkeys;
	const int *key_idx;       /* indexes into cols */
	const char *const *key_types; /* per key column, the base type a key column and its
	                           * parameter are cast to where they are compared
	                           * (codec.h); NULL, or a NULL entry: none */
	const dml_sql_shape *shape; /* NULL: a plain mirror */
} dml_sql_table;

/* INSERT INTO t (c1..cn) VALUES ($1..$n)
 *   ON CONFLICT (keys) DO UPDATE SET c = EXCLUDED.c ... (DO NOTHING when
 *   every column is a key). */
void dml_sql_upsert(strbuf *sql, const dml_sql_table *t);

/*
 * Many rows in one statement, one array of text per column (a parameter
 * in binary format built with dml_sql_array_element and
 * dml_sql_array_end; each element is
 * the value's text, cast to the column's type, which reads it with the
 * type's input function as a single-row statement does):
 *   INSERT INTO t (c1..cn) SELECT u.c1::T1, .. FROM unnest($1::text[], ..)
 *     AS u (c1, ..) ON CONFLICT (keys) DO UPDATE SET ... (as dml_sql_upsert)
 * types: each column's type without its modifiers (the column's own apply
 * when the row is stored, as for a parameter), rendered. The keys of the
 * rows must differ (a group's net changes). Without a history.
 */
void dml_sql_upsert_rows(strbuf *sql, const dml_sql_table *t, const char *const *types);
/* History entries of many whole rows: t's columns, after the entries'
 * arrays $1 (op, text), $2 (seq), $3 (position), $4 (commit time). */
void dml_sql_history_rows(strbuf *sql, const dml_sql_table *t, const char *const *types);
/* The same entries as lines of COPY text (dml_sql_copy_field):
 * COPY h (tidemark_op, tidemark_seq, tidemark_lsn, tidemark_commit_time,
 * c1, ..) FROM STDIN. */
void dml_sql_history_copy_in(strbuf *sql, const dml_sql_table *t);
/*
 * Deletes and partial updates of many rows by key, of a plain mirror (no
 * shape), one array of text per parameter as above:
 *   DELETE FROM t AS t USING unnest($1::text[], ..) AS u (c1, ..)
 *     WHERE t.k1 = u.c1::K1 AND ...
 * (the arrays: the key values, key_idx order), and
 *   UPDATE t AS t SET c = u.c1::T, .. FROM unnest(..) AS u (..)
 *     WHERE t.k1 = u.c<n+1>::K1 AND ...
 * (the arrays: the present columns' values, then the keys; *narrays says
 * how many). A key is compared exactly as dml_sql_delete and
 * dml_sql_update_present compare it with a parameter: the same operand
 * (codec_append_key_operand), the element cast to the type the parameter
 * has (the key's base type, or without one the column's, types[i]), in
 * the column's collation; so each statement matches the rows its
 * single-row statements match.
 */
void dml_sql_delete_rows(strbuf *sql, const dml_sql_table *t, const char *const *types);
void dml_sql_update_rows(strbuf *sql, const dml_sql_table *t, const bool *present,
                         const char *const *types, int *narrays);
/* An element appended to a text[] parameter in binary format in sb (the
 * header's room first; NULL: SQL NULL; len below 2^31, as any value
 * pgoutput sends), and its end: the header filled in (an empty array's
 * when sb is empty). Returns the element count. Send the bytes with their
 * length, in binary format. */
void dml_sql_array_element(strbuf *sb, const char *v, size_t len);
size_t dml_sql_array_end(strbuf *sb);
/* One field of a line of COPY text format: v (NULL: \N) with backslash,
 * newline, carriage return and tab escaped, then a tab, or the line's
 * newline when last. The type's input function reads the value as it
 * reads the same text as a parameter. */
void dml_sql_copy_field(strbuf *sb, bool last, const char *v, size_t len);

/* DELETE FROM t WHERE k1 = $1 AND ... (parameters: the key values in
 * key_idx order). */
void dml_sql_delete(strbuf *sql, const dml_sql_table *t);

/* UPDATE t SET c = $i ... WHERE k1 = $(n+1) ...: sets the columns with
 * present[i] (keys included when they changed), keyed by the old key
 * values passed after them. Used when some columns were not sent
 * (unchanged TOAST): those keep the target's value. */
void dml_sql_update_present(strbuf *sql, const dml_sql_table *t, const bool *present,
                            int *nparams);

/* The same update for a row whose key changed, which also asks for the
 * row to be read again from the source when the target holds no row under
 * the old key (see migrations/target/003_snapshot_rereads.sql):
 *   WITH moved AS (UPDATE ... RETURNING 1)
 *   INSERT INTO tidemark.snapshot_rereads (table_id, key, requested_lsn)
 *   SELECT $a::integer, ARRAY[$b::text, ...], $c::pg_lsn
 *   WHERE NOT EXISTS (SELECT FROM moved) ON CONFLICT ... newest position
 * Parameters: those of dml_sql_update_present, then the table id, the new
 * key's values (key_idx order) and the source commit position. */
void dml_sql_update_moved(strbuf *sql, const dml_sql_table *t, const bool *present,
                          int *nparams);

/* A history entry of the row under a key, as the mirror holds it, before
 * a change moves it to another key (the old key's 'delete' entry):
 *   INSERT INTO hist (...) SELECT $k+1, .. $k+4, cols FROM t WHERE key = $1..
 * Needs t->shape->history. */
void dml_sql_history_of_key(strbuf *sql, const dml_sql_table *t);

/*
 * A TRUNCATE's effect on a shaped table, before it (the TRUNCATE itself
 * comes after, unless soft_delete): history entries 'delete' of every
 * live row numbered from $1 + 1 on, and with soft deletes every live row
 * marked. Nothing when the table has neither. Returns whether a
 * statement was written.
 */
bool dml_sql_truncate_shaped(strbuf *sql, const dml_sql_table *t);

/* The history statement around an inner one that returns mirror rows:
 * dml_sql_history_open writes "WITH m AS (", the caller the inner
 * statement (without RETURNING), dml_sql_history_close the rest: RETURNING
 * the history's columns, INSERT INTO the history SELECT op, seq, columns
 * FROM m; op and seq are SQL expressions. */
void dml_sql_history_open(strbuf *sql);
void dml_sql_history_close(strbuf *sql, const dml_sql_table *t, const char *op, const char *seq);

/* The next free tidemark_seq at the session's tidemark.lsn, plus
 * row_number(): for entries written by a copy, several statements at one
 * position. */
void dml_sql_history_next_seq(strbuf *sql, const dml_sql_table *t);

/* What a copy's entries are compared with. The mirror's row before a chunk
 * is loaded is its key's latest entry (every change writes both in one
 * statement), so the history is looked up by key only while it is behind
 * its mirror (README: Table modes). */
typedef enum dml_sql_copy_against {
	DML_SQL_COPY_ALL,    /* nothing: every row (the mirror held none of the chunk's) */
	DML_SQL_COPY_BEFORE, /* the mirror's rows as they were before the load: the
	                      * relation `before` (column r, dml_sql_history_row_text) */
	DML_SQL_COPY_LATEST, /* each key's latest entry, looked up: a history behind its
	                      * mirror (turned on for a mirror with rows), indexed by key
	                      * until the table's copy ends */
} dml_sql_copy_against;

/* ROW(alias.c1, ...)::text of the columns the history has: a row's values
 * as one text, compared with what a mirror row was (DML_SQL_COPY_BEFORE). */
void dml_sql_history_row_text(strbuf *sql, const dml_sql_table *t, const char *alias);

/*
 * The 'copy' entries of a copied range: the mirror's rows (alias m) that
 * cond selects (SQL appended after WHERE true, may be empty) and whose
 * values differ from those the mirror held before (DML_SQL_COPY_BEFORE)
 * or from their key's latest entry (DML_SQL_COPY_LATEST); no row, a
 * marked one or a delete count as different. Values are
 * compared as text (the types' output), so the history does not fill with
 * copies of what it already holds. With soft deletes, marked rows are
 * left out.
 * before: the relation's SQL name for DML_SQL_COPY_BEFORE, else unused.
 */
void dml_sql_history_copy(strbuf *sql, const dml_sql_table *t, const char *cond,
                          dml_sql_copy_against against, const char *before);

/* The commit time of the change being applied, from the session
 * (tidemark.commit_time): a soft delete's mark. */
#define DML_SQL_COMMIT_TIME "current_setting('tidemark.commit_time')::timestamptz"

/* TRUNCATE t1, t2, ... */
void dml_sql_truncate(strbuf *sql, int ntables, const char *const *schemas,
                      const char *const *names);

/* A source TRUNCATE of ntables tables (target migration 021): a TRUNCATE,
 * or a DELETE of every row where keys of the target's own reference them.
 * Parameters: the ntables schemas, then the ntables names; its one value
 * is those keys' tables, or NULL. */
void dml_sql_empty_tables(strbuf *sql, int ntables);

#endif
