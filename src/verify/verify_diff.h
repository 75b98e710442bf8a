/*
 * verify_diff.h: rows read from both sides of a key range (or for a set of
 * keys), compared row by row: keys missing on the target, extra on the
 * target, or holding different values; and each difference as a line of
 * text. Pure.
 *
 * A row is its key columns as text, in its own side's spelling (to be sent
 * back as parameters), then the compared texts of every compared column
 * (verify_sql.h): rows of the two sides are matched by the compared texts
 * of their key columns, and equal when every compared text is.
 */
#ifndef TIDEMARK_VERIFY_DIFF_H
#define TIDEMARK_VERIFY_DIFF_H

#include "strbuf.h"

typedef struct verify_rows {
	int nkeys;     /* per row: nkeys key texts ... */
	int ncols;     /* ... then ncols compared texts */
	int nrows;
	int cap;
	char **cells;  /* owned: nrows * (nkeys + ncols) owned strings, NULL for SQL NULL */
} verify_rows;

void verify_rows_init(verify_rows *r, int nkeys, int ncols);
/* Appends a row of nkeys + ncols cells (copied; NULL for SQL NULL). */
void verify_rows_add(verify_rows *r, const char *const *cells);
void verify_rows_clear(verify_rows *r);
/* A row's cells, borrowed from r. */
char *const *verify_rows_row(const verify_rows *r, int row);

typedef enum verify_diff_kind {
	VERIFY_DIFF_MISSING, /* on the source only */
	VERIFY_DIFF_EXTRA,   /* on the target only */
	VERIFY_DIFF_VALUES,  /* on both sides, with different values */
} verify_diff_kind;

typedef struct verify_diff_value {
	int col;       /* index among the compared columns */
	char *source;  /* owned compared texts; NULL for SQL NULL */
	char *target;
} verify_diff_value;

typedef struct verify_diff {
	verify_diff_kind kind;
	char **key;                /* owned: nkeys key texts, the source's spelling
	                            * (the target's for EXTRA) */
	int nvalues;
	verify_diff_value *values; /* owned, in column order; VALUES only */
} verify_diff;

typedef struct verify_diffs {
	int nkeys;
	int n;
	int cap;
	verify_diff *items;        /* owned */
} verify_diffs;

void verify_diffs_init(verify_diffs *d, int nkeys);
void verify_diffs_clear(verify_diffs *d);
/* Drops each difference whose key an earlier one has (order kept). */
void verify_diffs_unique(verify_diffs *d);

/*
 * Compares rows read from both sides, each in key order; key_idx[i] is the
 * index of the i-th key column among the compared columns. Appends the
 * differences to out in key order (rows on the target only go before the
 * first source row that follows them on the target).
 */
void verify_diff_rows(const verify_rows *source, const verify_rows *target, const int *key_idx,
                      verify_diffs *out);

/* "missing on the target", "extra on the target", "values differ" */
const char *verify_diff_kind_name(verify_diff_kind kind);

/* Longest value shown in a line, in bytes (cut at a character boundary). */
#define VERIFY_DIFF_VALUE_MAX 100

/*
 * A difference as one line of text (no newline), names as SQL shows them:
 *   public.orders key (id)=(42): values differ: status source 'paid' target 'new'
 *   public.orders key (id)=(43): missing on the target
 * Values are SQL literals or NULL; longer ones are shortened with "...",
 * and control characters are written as \n, \t, \r or \xNN.
 * Key values are shown as they are (control characters escaped).
 * key_names: the nkeys key columns; col_names: the compared columns.
 */
void verify_diff_format(strbuf *sb, const verify_diff *d, int nkeys, const char *table,
                        const char *const *key_names, const char *const *col_names);

#endif
