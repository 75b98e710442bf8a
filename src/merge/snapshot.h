/*
 * snapshot.h: the incremental snapshot, on the apply thread's side.
 *
 * Finds the tables whose rows must be copied (catalog state
 * snapshot_pending / snapshotting, or a `tidemark snapshot` request), has
 * the reader threads copy them chunk by chunk, and applies each chunk when
 * its high watermark comes through the stream (see snap_window.h for the
 * rule). A chunk's rows and the table's progress (last key copied) are
 * written in the same target transaction, so a restart resumes at the next
 * chunk.
 *
 * A chunk is thrown away and read again when the table's columns changed
 * between its read and its high watermark, or when a transaction that the
 * read could not see had committed before the low watermark.
 *
 * Rows read again by key: an update that changes a row's key without
 * sending an unchanged TOASTed column moves only a row the target holds.
 * When it moves none (the row was not copied yet), the apply's statement
 * records the new key in tidemark.snapshot_rereads. The scan picks those
 * keys up (also for tables already copied), reads them between watermarks
 * of their own on the calling thread, outside any target transaction
 * (snap_reader_reread), and at the high watermark loads the rows that
 * survive the window rule and deletes the requests older than the low
 * watermark, in one target transaction.
 *
 * A table without a key is copied in one read instead (snap_keyless.h);
 * the apply asks here what to do with its changes (hooks.keyless_mode).
 */
#ifndef TIDEMARK_SNAPSHOT_H
#define TIDEMARK_SNAPSHOT_H

#include <stdbool.h>

#include "apply.h"
#include "metrics.h"
#include "sink.h"

typedef struct snapshot snapshot;

/* A chunk's rows are held in memory until its high watermark: a chunk
 * ends at this many bytes as read (or at chunk_rows rows, or with its
 * table). See snap_reader.h for what it bounds. */
#define SNAPSHOT_CHUNK_BYTES_DEFAULT (32LL * 1024 * 1024)

typedef struct snapshot_config {
	const char *source;     /* conninfo, borrowed */
	const char *target;     /* conninfo, borrowed: where tables without a key are staged */
	const char *slot;
	long chunk_rows;
	long long chunk_bytes;
	int readers;
	double progress_interval;
	metrics *metrics;       /* borrowed; NULL: none */
} snapshot_config;

/* The sink is borrowed (the apply thread's target connection). */
int snapshot_new(const snapshot_config *cfg, sink *s, snapshot **out);
void snapshot_free(snapshot *s);

/* Hooks for apply_config.hooks, and the apply (borrowed) they serve. */
apply_hooks snapshot_hooks(snapshot *s);
void snapshot_attach(snapshot *s, apply *a);

/* Called often from the apply loop: schedules tables, reports progress,
 * surfaces a reader's failure as a status. */
int snapshot_poll(snapshot *s);

/* Are tables still to be copied? (Known after the first poll.) */
bool snapshot_busy(const snapshot *s);

/* The catalog changed (a table to copy was added or asked for again): the
 * next poll looks now, and until it has, snapshot_busy says so. */
void snapshot_poll_soon(snapshot *s);

/* Asks for a table to be copied again: the next poll restarts it. */
void snapshot_restart(snapshot *s, int table_id);

#endif
