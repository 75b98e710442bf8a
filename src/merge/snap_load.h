/*
 * snap_load.h: loading a chunk's surviving rows into the target table,
 * inside the open target transaction, at the high watermark's position.
 *
 * Fast path: when the target holds no row in the chunk's key range (the
 * usual case of a first copy), the rows go straight in with COPY.
 * Otherwise (a copy over existing rows: `tidemark snapshot` on a damaged
 * target, or stream changes already in that range) the rows go through a
 * temporary staging table: one set-based upsert, then rows of the range
 * that are neither in the chunk nor touched by the stream in the window
 * are deleted (they no longer exist on the source). Rows read again by key
 * (upsert_only) are upserted through the staging table; nothing is deleted.
 *
 * Where the target does not order the key as the source does (by_keys:
 * another type or collation on the target, see snap_reader.h), a key range
 * on the target would cover other rows than on the source, so nothing is
 * decided by one: the fast path is taken when the target holds none of the
 * keys the chunk loads (staged and looked up), the staging path upserts and
 * deletes nothing, and rows the target holds but the source no longer has
 * stay (verify reports them).
 *
 * A table in another mode than mirror (shape.h): the session's position is
 * the high watermark's; rows loaded get their metadata columns and lose a
 * soft delete's mark, rows the source no longer has are marked instead of
 * deleted (soft deletes), and a history gets a 'delete' entry for each row
 * removed and a 'copy' entry for each row of the range whose values are
 * not its latest entry's (dml_sql_history_copy): a copy again writes only
 * what changed. With a history, rows by keys always take the staging path
 * (its keys select the rows written).
 */
#ifndef TIDEMARK_SNAP_LOAD_H
#define TIDEMARK_SNAP_LOAD_H

#include <stdbool.h>

#include "dml_sql.h"
#include "lsn.h"
#include "sink.h"
#include "snap_window.h"
#include "strbuf.h"

typedef struct snap_load_chunk {
	int table_id;
	const char *target_schema;    /* borrowed, like everything here */
	const char *target_table;
	int nkeys;
	char *const *key_columns;
	const snap_chunk *chunk;      /* column names, key positions, row format */
	const strbuf *rows;           /* the merged rows, in the chunk's format */
	long nrows;
	const snap_overlay *overlays;
	int noverlays;
	const snap_window *window;    /* keys the stream touched in the window */
	char *const *prev_key;        /* range start (exclusive); NULL: none */
	char *const *last_key;        /* range end (inclusive); NULL: none (the last chunk) */
	const char *range_lower;      /* a table copied in key ranges (snap_range.h): without */
	const char *range_upper;      /* prev_key, the first key column > lower; without last_key,
	                               * <= upper (NULL: open) */
	bool upsert_only;             /* rows read again by key (no range): upserted through
	                               * the staging table, nothing deleted */
	bool by_keys;                 /* no decision by a key range on the target (above) */
	char *const *key_types;       /* per key column, the base type (codec.h) a key column
	                               * and its values are compared in; may be NULL */
	tm_lsn position;              /* the high watermark's commit position and time: */
	long long position_time;      /* a shaped table's metadata and history (shape.h) */
	const dml_sql_shape *shape;   /* set by snap_load (NULL: a plain mirror) */
} snap_load_chunk;

/* Returns a status; *fast tells which path was taken. */
int snap_load(sink *s, const snap_load_chunk *c, bool *fast);

/*
 * A sweep's page (snap_sweep.h), at its high watermark: deletes the
 * target's rows with the keys of page (COPY text lines of the key values,
 * read from the target) that are neither among c->chunk's keys (those the
 * source has, read between the watermarks) nor touched by the stream in
 * c->window. Uses table_id, the target names, the key columns and types
 * of c. *removed: the rows deleted.
 */
int snap_load_sweep(sink *s, const snap_load_chunk *c, const strbuf *page, long *removed);

#endif
