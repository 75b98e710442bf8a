/*
 * verify_sql.h: what `tidemark verify` compares in each column, and the
 * statements it runs on both sides, built with quoted identifiers and $n
 * parameters only. Pure.
 *
 * Values are compared by their text (the output function's, codec.h), each
 * side's value converted first so that equal values have the same text
 * whatever the two column types:
 *   - the same type on both sides: each side's own text (concat("c"));
 *   - the target's type is a widening of the source's (integer and
 *     numeric(12,2), varchar(10) and text, real and double precision):
 *     the source value cast to the target's type, as the target converted
 *     its own values (concat("c"::numeric(12,2)): 5 and 5.00 are equal);
 *   - anything else (the target kept a narrower type, or the types are
 *     unrelated): both sides cast to the smallest type that holds the values
 *     of both exactly (cast_common_type: numeric(20,0) and numeric(12,2) in
 *     numeric(22,2)), and when that is text, each side's text.
 * Types are the sqltype parses of the two servers' format_type() spellings,
 * rendered again by sqltype_render: a type name is never pasted.
 *
 * "Plain" statements compare every column but the key by its own text on
 * each side: the fallback for a range where a conversion failed on a value
 * (a date after 294276 AD has no timestamp).
 *
 * Rows are summed by hash: each row's hash is the XOR of
 * hashtextextended(value text, column number) over its compared columns
 * (a constant per column for NULL); a range's sum is the count of its rows
 * and the sum of their hashes (numeric, so it never overflows), which does
 * not depend on the order the rows are read in.
 */
#ifndef TIDEMARK_VERIFY_SQL_H
#define TIDEMARK_VERIFY_SQL_H

#include <stdbool.h>

#include "strbuf.h"

typedef enum verify_sql_mode {
	VERIFY_SQL_TEXT,    /* each side's text */
	VERIFY_SQL_TARGET,  /* the source value cast to the target's type */
	VERIFY_SQL_COMMON,  /* both sides cast to a type that holds both exactly */
} verify_sql_mode;

typedef struct verify_sql_column {
	char *name;           /* owned */
	verify_sql_mode mode;
	char *type;           /* owned: the type values are compared in, as SQL;
	                       * NULL for VERIFY_SQL_TEXT */
	char *source_type;    /* owned: the source's type as SQL when the target's
	                       * differs (and both parse), else NULL */
} verify_sql_column;

/* Decides how a column is compared from the source's and the target's
 * format_type() spellings. A type that does not parse is compared as text. */
void verify_sql_column_init(verify_sql_column *c, const char *name, const char *source_type,
                            const char *target_type);
void verify_sql_column_clear(verify_sql_column *c);

/* One side's table, its key and the compared columns (all borrowed). Every
 * key column is one of the compared columns: keys[i] is cols[key_idx[i]]. */
typedef struct verify_sql_table {
	const char *schema;
	const char *name;
	int nkeys;
	const char *const *keys;
	const int *key_idx;
	int ncols;
	const verify_sql_column *cols;
	bool only;            /* FROM ONLY: the table's own rows, not its inheritance
	                       * children's (never for a partitioned table) */
	const char *const *key_types; /* per key, the base type its column and values are
	                       * compared in (codec.h); NULL, or a NULL entry: none */
	const char *live_column; /* when not NULL, only the rows where this column is
	                       * NULL are read (a soft-delete mirror's live rows: its
	                       * rows marked deleted are not the source's) */
} verify_sql_table;

/* Flags of the builders below. */
#define VERIFY_SQL_SOURCE 0x01 /* the source's expressions (else the target's) */
#define VERIFY_SQL_LOWER  0x02 /* key > lower bound: nkeys parameters */
#define VERIFY_SQL_UPPER  0x04 /* key <= upper bound: nkeys parameters, after the lower */
#define VERIFY_SQL_PLAIN  0x08 /* every column but the key by its own text (the fallback) */

/* Result columns of verify_sql_page and verify_sql_range_sum (and of each
 * part of verify_sql_part_sums, from 2 * part). */
#define VERIFY_SQL_COL_ROWS 0
#define VERIFY_SQL_COL_HASH 1
#define VERIFY_SQL_COL_LAST_KEY 2

/*
 * A source page: the rows after the lower bound, in key order, at most the
 * row limit (the parameter after the bound). One row: count, hash sum, and
 * the key of the row at the offset (the parameter after the limit: the
 * limit minus one), as text: the last row's key when the page is full,
 * NULL when it is not (it is the last page).
 */
void verify_sql_page(strbuf *sql, const verify_sql_table *t, unsigned flags);

/* The rows within the bounds: one row, count and hash sum. */
void verify_sql_range_sum(strbuf *sql, const verify_sql_table *t, unsigned flags);

/* The keys, as text, that end parts of a split: of the rows within the
 * bounds in key order, every n-th (n: the parameter after the bounds)
 * before the m-th (the next parameter): zero or more rows, in key order.
 * They bound ranges on both sides: on the target, a key column of another
 * type than the source's is read in the source's type (a numeric(12,2) key
 * 12.00 as integer 12); a value that type cannot hold fails the statement
 * with a data exception. */
void verify_sql_split(strbuf *sql, const verify_sql_table *t, unsigned flags);

/* The rows within the bounds summed per part, the parts ending at nsplits
 * >= 1 keys (nsplits * nkeys parameters after the bounds, in key order):
 * one row, the count and hash sum of each part in turn (nsplits + 1 parts,
 * the last up to the upper bound). */
void verify_sql_part_sums(strbuf *sql, const verify_sql_table *t, unsigned flags, int nsplits);

/* The rows within the bounds in key order: the key columns as text (each
 * side's own spelling, for parameters), then the compared texts of every
 * compared column. */
void verify_sql_rows(strbuf *sql, const verify_sql_table *t, unsigned flags);

/* The same columns for the rows whose key is one of nrows keys (nrows *
 * nkeys parameters, key after key). Bounds flags are ignored. */
void verify_sql_lookup(strbuf *sql, const verify_sql_table *t, unsigned flags, int nrows);

/* The count of the rows that t->live_column leaves out (those marked
 * deleted), one row; no parameters. Needs t->live_column. */
void verify_sql_marked_count(strbuf *sql, const verify_sql_table *t);

#endif
