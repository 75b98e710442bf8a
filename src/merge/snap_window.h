/*
 * snap_window.h: the watermark rule of the incremental snapshot (DBLog).
 *
 * A chunk is read from the source between a low and a high watermark
 * written into the source's WAL. Every change the stream delivers between
 * the two watermarks is as new as, or newer than, what the chunk read saw,
 * so at the high watermark:
 *   - a chunk row whose key was inserted, updated or deleted in the window
 *     is dropped: the stream already applied the newer state;
 *   - an update in the window that did not send some columns (unchanged
 *     TOAST) is not a whole row: when no whole-row change of that key came
 *     in the window, the chunk row is kept (its unsent columns did not
 *     change) and the columns the update sent are set over it after the
 *     load (an overlay);
 *   - a TRUNCATE in the window drops the whole chunk.
 * What remains is applied at the high watermark's position in the stream.
 *
 * Pure: no I/O. Keys are compared as codec.h says: the output function's
 * text, byte for byte, exact because every connection uses the same output
 * settings (see pgconn.h).
 */
#ifndef TIDEMARK_SNAP_WINDOW_H
#define TIDEMARK_SNAP_WINDOW_H

#include <stdbool.h>
#include <stddef.h>

#include "snap_chunk.h"
#include "strbuf.h"
#include "tm_error.h"

typedef struct snap_window snap_window;

/* Columns to set over a kept chunk row after the load. Borrowed from the
 * window (valid until snap_window_free). */
typedef struct snap_overlay {
	const char **key;        /* nkeys text values */
	const size_t *key_len;
	int n;
	const char **names;      /* the newest value of each sent column */
	const char **values;     /* NULL: SQL NULL */
	const size_t *lens;
} snap_overlay;

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
 * Applies the rule to a chunk read in this window: appends the surviving
 * rows to out (in the chunk's format), returns their count, and the
 * overlays to set after loading them (*overlays: window-owned array).
 */
long snap_window_merge(snap_window *w, const snap_chunk *c, strbuf *out, snap_overlay **overlays,
                       int *noverlays);

/* Writes each key the window saw as a COPY text line of the key values
 * alone. Returns the number of lines. */
long snap_window_keys_copy(const snap_window *w, strbuf *out);
/* Likewise the keys of the chunk's rows that snap_window_merge keeps. */
long snap_window_kept_keys_copy(const snap_window *w, const snap_chunk *c, strbuf *out);

#endif
