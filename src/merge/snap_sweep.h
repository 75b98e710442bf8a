/*
 * snap_sweep.h: removing the rows a copy cannot remove by key range.
 *
 * A copy again (`tidemark resync`, `tidemark snapshot`) replaces each
 * chunk's key range on the target by the source's rows, which removes the
 * rows the source no longer has (snap_load.h). Where the target does not
 * order the key as the source does (by_keys), a range on the target covers
 * other rows than on the source, so the chunks remove nothing; the copy
 * then ends with a sweep, on the apply thread, page by page:
 *
 *   page    the target's next keys in the target's own order (after the
 *           last key of the previous page), at most SNAP_SWEEP_PAGE keys
 *           and about SNAP_SWEEP_PAGE_BYTES of key text, read between
 *           target transactions
 *   lookup  low watermark; one short read of the source, `SELECT keys
 *           WHERE (keys) IN (page)`: which of them the source has; high
 *           watermark (snap_reader_reread, keys_only)
 *   at H    in the target transaction that applies the high watermark:
 *           the page's keys that the source did not have and that the
 *           stream did not touch between the watermarks are deleted
 *           (snap_load_sweep), and the sweep's progress is stored in
 *           tidemark.snapshot_sweeps (migrations/target/013_resync.sql)
 *
 * A key the source did not have at the read and the stream did not touch
 * until H is not on the source at H: its row is left over from before the
 * copy (a restored target, or changes the slot lost). A key touched is the
 * stream's business. A transaction that committed before the low
 * watermark but was invisible to the read (snap_commits.h) makes the page
 * be looked up again. Memory: one page of keys.
 *
 * Equality is the source's: a target key is kept when the source has a key
 * equal to it by the source's own equality.
 */
#ifndef TIDEMARK_SNAP_SWEEP_H
#define TIDEMARK_SNAP_SWEEP_H

#include <stdbool.h>

#include "sink.h"
#include "snap_commits.h"
#include "snap_reader.h"
#include "snap_window.h"

#define SNAP_SWEEP_PAGE 1000
#define SNAP_SWEEP_PAGE_BYTES (1024 * 1024)

/* The sweeps of one snapshot. */
typedef struct snap_sweeps snap_sweeps;

/* The table swept, as the snapshot knows it (borrowed). */
typedef struct snap_sweep_table {
	int table_id;
	const char *schema;          /* on the source */
	const char *name;
	const char *target_schema;
	const char *target_table;
	int nkeys;
	char *const *key_columns;
	char *const *key_types;      /* per key column, its base type on the target (codec.h);
	                              * may be NULL */
	tm_lsn position;             /* the transaction being applied: its commit position */
	long long position_time;     /* and time (a shaped table's marks and history) */
} snap_sweep_table;

/* The table with this id, when its copy has reached its end (a sweep goes
 * on only then); false otherwise. */
typedef bool (*snap_sweep_lookup)(void *ctx, int table_id, snap_sweep_table *out);

/* sink and slot borrowed. */
snap_sweeps *snap_sweeps_new(sink *s, const char *slot, snap_sweep_lookup lookup, void *ctx);
void snap_sweeps_free(snap_sweeps *ws);

/* In the transaction of a copy's last chunk (by_keys, copied again): the
 * table's sweep starts from its first key. */
int snap_sweep_request(sink *s, int table_id);

/* Takes the sweeps the catalog asks for (tidemark.snapshot_sweeps), from
 * where each stopped; forgets those it no longer lists. */
int snap_sweeps_scan(snap_sweeps *ws);

/* Outside target transactions: each sweep whose last page went through
 * reads its next page and looks it up on the source (r: the reader's
 * reread connection), or ends (its row deleted, logged). */
int snap_sweeps_start(snap_sweeps *ws, snap_reader *r);

/* Is a sweep still to do? */
bool snap_sweeps_busy(const snap_sweeps *ws);

/* The window the stream's changes of this table are noted in: open
 * between a lookup's watermarks, else NULL. */
snap_window *snap_sweeps_window(snap_sweeps *ws, int table_id);

/* A watermark of a lookup: at the low one the window opens (true: it was
 * a sweep's); at the high one, inside the open target transaction, the
 * page's rows the source no longer has are deleted and the progress
 * stored (*handled: it was a sweep's). ring: the recent commits. */
bool snap_sweeps_low(snap_sweeps *ws, const char *id, tm_lsn lsn);
int snap_sweeps_high(snap_sweeps *ws, const char *id, const snap_commits *ring, bool *handled);

#endif
