/*
 * snap_chunk.h: one chunk of a table as read by the snapshot, held until
 * its high watermark. Pure: bytes in, rows out.
 *
 * Rows are kept exactly as the target's COPY FROM takes them: COPY text
 * lines, or binary tuples (without the binary header and trailer, which
 * snap_chunk_copy_header/trailer supply). Each row's key is kept apart, as
 * text, so that the window can compare it with the stream's key values
 * (text too) whatever the row format:
 *   - text: the key fields of the line, unescaped;
 *   - binary: the reader selects the key columns' texts before the
 *     table's columns, (concat(k1), ..., c1, ..., cn); those leading fields
 *     are taken off each tuple here and its field count rewritten.
 * A key is stored encoded as codec.h says (codec_key_encode): the window
 * matches it byte for byte with the stream's.
 */
#ifndef TIDEMARK_SNAP_CHUNK_H
#define TIDEMARK_SNAP_CHUNK_H

#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"
#include "tm_error.h"

typedef enum snap_chunk_format {
	SNAP_CHUNK_TEXT,
	SNAP_CHUNK_BINARY,
} snap_chunk_format;

typedef struct snap_chunk {
	snap_chunk_format format;
	int ncols;
	char **colnames;     /* owned */
	int nkeys;
	int *key_idx;        /* owned: key columns as indexes into colnames */
	strbuf data;         /* owned: the rows, back to back */
	strbuf keys;         /* owned: the rows' encoded keys, back to back */
	int nrows;
	size_t *row_end;     /* owned: row i is data[row_end[i-1] .. row_end[i]) */
	size_t *key_end;     /* owned: likewise in keys */
	int cap_rows;
	strbuf pending;      /* binary: bytes of a tuple not complete yet */
	bool header_done;    /* binary: the file header was read */
	bool trailer_seen;   /* binary: the end marker was read */
} snap_chunk;

snap_chunk *snap_chunk_new(snap_chunk_format format, int ncols, const char *const *colnames,
                           int nkeys, const int *key_idx);
void snap_chunk_free(snap_chunk *c);

/* Appends what COPY TO STDOUT sent: binary, any split of the stream; text,
 * whole rows (PQgetCopyData returns one at a time). Returns 0, or -1 with
 * err set when the data is malformed (a text row without its newline). */
int snap_chunk_add(snap_chunk *c, const char *buf, size_t len, tm_error *err);
/* After the last add: is the stream complete (binary: trailer seen)? */
int snap_chunk_finish(snap_chunk *c, tm_error *err);

/* Row bytes (as COPY FROM takes them) and the row's encoded key. */
const char *snap_chunk_row(const snap_chunk *c, int row, size_t *len);
const char *snap_chunk_row_key(const snap_chunk *c, int row, size_t *len);
/* The key values of a row: new strings in *vals (caller frees each and the
 * array). */
int snap_chunk_key_values(const snap_chunk *c, int row, char ***vals, tm_error *err);

/* What precedes and ends the rows of a binary COPY FROM STDIN. */
void snap_chunk_copy_header(snap_chunk_format format, strbuf *sb);
void snap_chunk_copy_trailer(snap_chunk_format format, strbuf *sb);

/* COPY text helpers. Splits a line into fields (pointers into line); returns
 * the field count, or -1 when there are more than max. */
int snap_chunk_text_fields(const char *line, size_t len, const char **out, size_t *out_len,
                           int max);
/* Decodes one escaped field into out; returns false for \N (NULL). */
bool snap_chunk_text_unescape(const char *field, size_t len, strbuf *out);

#endif
