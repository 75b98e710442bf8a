/*
 * snap_range.h: parallel copy of one table, in key ranges.
 *
 * A large table (snap_split.h: by its estimated size, with two readers or
 * more) is split into ranges of its key's first column, decided on the
 * SOURCE, in its order (never the target's, which may sort the key
 * otherwise: key_order.h): the bounds are taken from pg_stats'
 * histogram_bounds of the column (sorted again and made distinct on the
 * source, under the column's collation), or, without statistics, from a
 * sample of the table (TABLESAMPLE SYSTEM, about SNAP_RANGE_SAMPLE_ROWS
 * rows). A partitioned table without statistics of its own is copied
 * whole.
 *
 * Each range is copied like a whole table: chunk by chunk in key order,
 * `key > last AND first <= upper`, each chunk between watermarks of its
 * own with its own window, on whichever reader takes it; several ranges
 * of one table are in flight at once. A range's progress (its last key)
 * is stored in tidemark.snapshot_ranges (migrations/target/016) in the
 * target transaction of its chunk's rows, with the table's counts; the
 * table is copied (state streaming) in the transaction of the last range
 * to end. On a restart every range resumes after its last chunk. The
 * ranges belong to one request of the copy (the table's request stamp):
 * a copy asked for again makes new ones.
 *
 * A first column's duplicates all fall in one range (the bounds are on
 * the first column alone, the chunks page by the whole key). Rows whose
 * key moves from one range to another are the stream's, as across chunks.
 */
#ifndef TIDEMARK_SNAP_RANGE_H
#define TIDEMARK_SNAP_RANGE_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "lsn.h"
#include "sink.h"
#include "snap_commits.h"
#include "snap_window.h"

#define SNAP_RANGE_SAMPLE_ROWS 30000
/* How long the sample, read on the apply loop's thread, may wait for a
 * lock on the table (ms, as lock_timeout takes it). */
#define SNAP_RANGE_LOCK_WAIT_MS "50"

/* One range, as the apply thread follows it. */
typedef struct snap_range {
	int no;                  /* range_no; -1: the table copied whole */
	char *lower;             /* owned: first key column, exclusive; NULL: open */
	char *upper;             /* owned: inclusive; NULL: open */
	char **applied_key;      /* owned: the last key applied in the range (nkeys values) */
	bool done;
	snap_window *window;     /* owned: open between a chunk's watermarks */
	char wm_id[96];
	tm_lsn low_lsn;
	snap_commits *at_low;    /* owned: the recent commits as the chunk's low watermark
	                          * met them, while its window is open */
} snap_range;

/* The table to split, on the source (borrowed). */
typedef struct snap_range_source {
	const char *schema;
	const char *name;
	const char *key_column;  /* the key's first column */
	long chunk_rows;
	long long chunk_bytes;
	int readers;
} snap_range_source;

/* The bounds of the ranges (n bounds: n + 1 ranges; 0: copy whole), on
 * conn (the apply thread's source connection). *bounds: owned by the
 * caller (snap_keys_free). A failure to read the statistics or sample is
 * logged and gives no bounds. */
void snap_range_bounds(PGconn *conn, const snap_range_source *src, char ***bounds, int *n);

/* The ranges stored for the table's current request and key, into a new
 * array (*out, *n; 0: none stored); those of an earlier request are
 * deleted. nkeys: the key's length. */
int snap_range_load(sink *s, int table_id, int nkeys, snap_range **out, int *n);

/* Stores the ranges of these bounds (n + 1 ranges), replacing any. */
int snap_range_store(sink *s, int table_id, char *const *bounds, int n);

/* In the chunk's target transaction: the range's progress (range_no -1:
 * a table copied whole, its last key in tidemark.tables) and the table's
 * counts (table_done: the last range ended, the table is copied).
 * request: the table's stamp as text ("" none); a newer request is left
 * alone. last_key: NULL when the chunk was empty. */
int snap_range_save(sink *s, int table_id, const char *request, int range_no,
                    char *const *last_key, int nkeys, long rows, bool range_done,
                    bool table_done, long long estimate);

/* Ranges made from bounds (n + 1), none copied yet. */
snap_range *snap_range_from_bounds(char *const *bounds, int n);
void snap_range_clear(snap_range *r, int nkeys);
void snap_ranges_free(snap_range *r, int n, int nkeys);

#endif
