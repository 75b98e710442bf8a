/*
 * slot_watch.h: what the replication slot keeps of the source's WAL, read
 * by `run` every SLOT_WATCH_INTERVAL_S seconds.
 *
 * The source keeps every WAL segment from the slot's restart point on. That
 * point follows what tidemark has confirmed, but not past the start of the
 * oldest transaction still open on the source when decoding met it: a lag,
 * or a transaction left open for hours (by any session), makes the slot
 * hold WAL back. With max_slot_wal_keep_size set, the source removes WAL
 * past that size at a checkpoint and invalidates the slot, after which
 * only `tidemark resync` (every table copied again) brings the pipeline
 * back. Said before it happens: a warning once it is at risk
 * (slot_wal_at_risk), and again after it was safe once more. The WAL kept is a metric
 * (tidemark_slot_retained_wal_bytes).
 */
#ifndef TIDEMARK_SLOT_WATCH_H
#define TIDEMARK_SLOT_WATCH_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "metrics.h"
#include "source_query.h"

#define SLOT_WATCH_INTERVAL_S 10

typedef struct slot_watch {
	const char *slot;   /* borrowed */
	double read_at;     /* clock_now_s of the last reading */
	bool read;
	bool at_risk;       /* warned, and not safe again since */
} slot_watch;

void slot_watch_init(slot_watch *w, const char *slot);

/* Reads the slot through control when SLOT_WATCH_INTERVAL_S have gone by
 * since the last reading: the metric set (m may be NULL), the warning
 * said when it comes to be at risk. */
int slot_watch_poll(slot_watch *w, PGconn *control, metrics *m);

#endif
