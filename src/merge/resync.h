/*
 * resync.h: a resync of a replication in the target catalog
 * (tidemark.resyncs, migrations/target/013_resync.sql).
 *
 * A resync copies tables again in place while the stream goes on, after
 * the target lost changes (restored from a backup), the slot was lost
 * (a source failover, an invalidation) or the source's history diverged
 * from the target's. It begins in one target transaction: its row, the
 * stored position re-pointed to where the stream resumes (the slot's
 * confirmed position, or a new slot's consistent point), the source's
 * timeline, and a copy of each table requested (as `tidemark snapshot`
 * does: the copy replaces each chunk's range by the source's rows,
 * removing those the source no longer has, and the target stays
 * queryable; see snapshot.h and snap_sweep.h). Then `run` streams and
 * copies; a kill -9 anywhere resumes it. The stream from the resumed
 * position and the chunks' watermarks make the copy exact: whatever
 * happened in the gap, each row ends as the source has it.
 *
 * `run` watches a resync in progress (resync_watch_poll) and records its
 * end once no table of the replication is being copied or swept.
 */
#ifndef TIDEMARK_RESYNC_H
#define TIDEMARK_RESYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "lsn.h"
#include "sink.h"

typedef struct resync_plan {
	const char *reason;       /* resume_verdict_name, or "requested" */
	tm_lsn from;              /* the target's position */
	tm_lsn resume;            /* where the stream resumes */
	bool new_slot;            /* the slot was created again */
	uint32_t timeline;        /* the source's timeline (0: not known) */
	int ntables;              /* tables named: "schema", "name" pairs; 0: every table */
	char *const *tables;
	/* Called in the resync's first transaction once the position is
	 * re-pointed (NULL: not called): the schema changes the stream will
	 * not deliver, followed (schema_sync_catch_up). */
	int (*catch_up)(void *ctx, tm_lsn resume);
	void *catch_up_ctx;
} resync_plan;

/* Begins a resync, in one target transaction (the sink's; none may be
 * open). *nrequested: the tables to copy again. */
int resync_begin(sink *s, const char *slot, const resync_plan *p, int *nrequested);

/* The resync in progress, if any: *active, and its start and reason as
 * text (new strings, or NULL). A catalog without tidemark.resyncs has
 * none. */
int resync_in_progress(sink *s, const char *slot, bool *active, char **started, char **reason);

/* run's view of a resync in progress: looked at every few seconds. */
typedef struct resync_watch {
	double next_check;        /* clock_now_s() of the next look; 0: now */
	bool none;                /* no resync in progress (known for this run) */
	bool announced;           /* the resync in progress was logged */
} resync_watch;

/* Outside target transactions: when a resync is in progress and no table
 * of the replication is being copied or swept any more, records its end
 * and logs it. force: look now. */
int resync_watch_poll(resync_watch *w, sink *s, const char *slot, bool force);

#endif
