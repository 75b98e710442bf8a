/*
 * snap_keyless.h: the copy of a table without a key, on the apply
 * thread's side: one consistent read with exact visibility.
 *
 * Chunks need an order to page by; without a key there is none (and the
 * physical order, ctid, moves when a row is updated, without the stream
 * saying so). So the table is read in one piece (snap_reader.h):
 *
 *   L   the low watermark, in the source's WAL
 *   X   BEGIN REPEATABLE READ READ ONLY; pg_current_snapshot();
 *       COPY (SELECT cols FROM t) TO STDOUT, straight into the staging
 *       table tidemark."keyless <id>" on the target; COMMIT both
 *   H   the high watermark
 *
 * Meanwhile the apply thread, for this table (keyless_mode):
 *   - before L: changes are skipped. Their transactions committed before
 *     L, so X sees them and the copy holds them; the missed-commit check
 *     (snap_commits.h) reads again when one was still running for X;
 *   - between L and H: changes are kept, not applied, in
 *     tidemark.keyless_pending (keyless.h), in the target transaction
 *     that holds them; at L the changes kept by an earlier attempt are
 *     deleted (X' sees them all);
 *   - at H, in one target transaction (the one that applies H): the
 *     target table's rows are deleted (DELETE, not TRUNCATE: its readers
 *     see the old rows until the load commits, then the new ones, and
 *     never wait), the staged rows are copied in, the kept changes of the transactions
 *     X did not see are applied over them in stream order (snap_visible.h),
 *     the kept changes and the staging table are dropped, the table is
 *     marked copied and the position stored with it;
 *   - after H: changes are applied as they come (keyless.h).
 * A crash anywhere: the copy starts over with a new read. `tidemark
 * snapshot` of such a table copies it again the same way.
 *
 * The load is one long statement on the apply thread: the sink keeps the
 * source's replication connection alive while it waits (sink.h).
 */
#ifndef TIDEMARK_SNAP_KEYLESS_H
#define TIDEMARK_SNAP_KEYLESS_H

#include "keyless.h"
#include "sink.h"
#include "snap_visible.h"

typedef struct snap_keyless_load {
	keyless_change table;       /* the table (op and rows ignored), borrowed */
	const snap_visible *snap;   /* X: the read's snapshot */
	long long page_bytes;       /* kept changes are read back in pages of about this */
} snap_keyless_load;

typedef struct snap_keyless_loaded {
	long long rows;             /* rows copied from the staging table */
	keyless_replayed replayed;  /* the kept changes */
} snap_keyless_loaded;

/* The load at the high watermark, inside the open target transaction (k
 * and s borrowed). */
int snap_keyless_apply(sink *s, keyless *k, const snap_keyless_load *in,
                       snap_keyless_loaded *out);

/* A read given up because the target table lacked some of its columns
 * (snap_result.behind), at its high watermark: the stream has brought
 * every change the read saw, so the target table (in the open target
 * transaction) must have them now. TM_OK when it does, or when the
 * table's last schema version has other columns (changed again since the
 * read): the read is made again. Else TM_EXIT_TARGET, logged with the
 * fix: the target table was altered by hand. Everything borrowed;
 * display: "schema.table". */
int snap_keyless_check_target(sink *s, int table_id, const char *schema, const char *table,
                              int ncols, const char *const *cols, const char *display);

/* Drops the staging tables of tables whose copy is not under way (left by
 * a copy given up: the table was dropped, or got a key). live: the ids of
 * the tables being copied in one read. */
int snap_keyless_drop_stale(sink *s, const int *live, int nlive);

#endif
