/*
 * snap_window.h: the watermark rule of the incremental snapshot (DBLog).
 *
 * A chunk is read from the source between a low and a high watermark
 * written into the source's WAL. Every change the stream delivers between
 * the two watermarks is newer than (or as new as) what the chunk read saw,
 * so at the high watermark:
 *   - a chunk row whose key was inserted, updated or deleted in the window
 *     is dropped: the stream already applied the newer state;
 *   - an update in the window that did not send some columns (unchanged
 *     TOAST) is not a whole row: if no whole-row change of that key came in
 *     the window, its sent columns are laid over the chunk row, which keeps
 *     the unsent ones (they did not change);
 *   - a TRUNCATE in the window drops the whole chunk.
 * What remains is applied, at the high watermark's position in the stream.
 *
 * Pure: no I/O. Chunk rows are COPY text lines (as read by COPY TO STDOUT);
 * key values are compared as text, which is exact because every connection
 * uses the same output settings (see pgconn.h).
 */
#ifndef TIDEMARK_SNAP_WINDOW_H
#define TIDEMARK_SNAP_WINDOW_H

#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"
#include "tm_error.h"

/* One chunk as read: the columns, which of them form the key (in the
 * table's key order), and the rows as COPY text lines. */
typedef struct snap_chunk {
	int ncols;
	char **colnames;     /* owned */
	int nkeys;
	int *key_idx;        /* owned: key columns as indexes into colnames */
	strbuf data;         /* owned: the lines, each ending in '\n' */
	int nrows;
	size_t *line_end;    /* owned: row i spans [row i-1's end, line_end[i]) */
	int cap_rows;
} snap_chunk;

snap_chunk *snap_chunk_new(int ncols, const char *const *colnames, int nkeys,
                           const int *key_idx);
void snap_chunk_free(snap_chunk *c);
/* Appends COPY text (whole lines; may hold several). Returns 0, or -1 when
 * a line has the wrong number of fields. */
int snap_chunk_add(snap_chunk *c, const char *text, size_t len, tm_error *err);
/* The key values of a row, decoded from COPY text: new strings in *vals
 * (caller frees each and the array; a NULL key value is an error). */
int snap_chunk_row_key(const snap_chunk *c, int row, char ***vals, tm_error *err);

typedef struct snap_window snap_window;

snap_window *snap_window_new(int nkeys);
void snap_window_free(snap_window *w);

/* A whole-row change (insert, update sending every column, delete) of
 * the row with these key values (nkeys text values, with lengths). */
void snap_window_note_row(snap_window *w, const char *const *key, const size_t *key_len);
/* An update that sent only some columns: names[i] = values[i] (NULL value
 * is SQL NULL) for the n sent columns. */
void snap_window_note_partial(snap_window *w, const char *const *key, const size_t *key_len,
                              int n, const char *const *names, const char *const *values,
                              const size_t *value_len);
void snap_window_note_truncate(snap_window *w);
/* Changes noted so far. */
long snap_window_changes(const snap_window *w);

/*
 * Applies the rule to a chunk read in this window: writes the surviving
 * rows (overlaid where needed) as COPY text into out, returns their count,
 * or -1 with err set (malformed chunk).
 */
long snap_window_merge(snap_window *w, const snap_chunk *c, strbuf *out, tm_error *err);

/* Writes one COPY line per key the window saw (the chunk's columns: key
 * values at the key positions, NULL elsewhere), each ending with suffix
 * before the newline. Returns the number of lines. */
long snap_window_keys_copy(const snap_window *w, const snap_chunk *c, const char *suffix,
                           strbuf *out);

/* COPY text helpers, shared with the loader. */
/* Splits a line into fields; out[i] points into line, len[i] its escaped
 * length. Returns the field count (up to max), or -1 if more than max. */
int snap_copy_fields(const char *line, size_t len, const char **out, size_t *out_len, int max);
/* Decodes one escaped field; returns false for \N (NULL). */
bool snap_copy_unescape(const char *field, size_t len, strbuf *out);

#endif
