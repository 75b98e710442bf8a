/*
 * consistency.h: before streaming, does the target's stored position fit
 * the slot and the source? The facts are read here (the target's position
 * and the source timeline it was streamed from, the slot, the source's WAL
 * position, timeline and history); the rule is src/source/resume_check.h.
 *
 * `run` checks at the start of every session: a target restored from a
 * backup (behind the slot's confirmed position), a source restored or
 * failed over to a standby that was behind (the target ahead of the
 * source's WAL, or beyond the point where the source's timeline history
 * left the target's), a missing or invalidated slot: each is refused with
 * what happened, both positions and the fix (`tidemark resync`), before
 * anything is applied. When the check passes, the source's timeline is
 * recorded as the one the position is streamed from
 * (tidemark.source_timeline, migrations/target/013_resync.sql).
 */
#ifndef TIDEMARK_CONSISTENCY_H
#define TIDEMARK_CONSISTENCY_H

#include <libpq-fe.h>

#include "resume_check.h"
#include "sink.h"
#include "source_query.h"

typedef struct consistency_facts {
	resume_facts facts;
	source_slot_state slot;
	resume_verdict verdict;
} consistency_facts;

/* Reads the facts and the verdict: the target's side through the sink,
 * the slot and the server through control, the timeline and its history
 * through a replication connection of its own (conninfo, borrowed). */
int consistency_gather(PGconn *control, sink *s, const char *conninfo, const char *slot,
                       consistency_facts *out);

/* Logs what a verdict means, with both positions and the fix; the status
 * it calls for: TM_OK (resume, or nothing applied yet), TM_EXIT_CONFIG
 * (a divergence, a missing slot, a standby as source), TM_EXIT_SOURCE (an
 * invalidated slot). */
int consistency_explain(const consistency_facts *c, const char *slot);

/* Records the source's timeline as the one the stored position is
 * streamed from (outside any transaction, or in the caller's). */
int consistency_record_timeline(sink *s, const char *slot, uint32_t timeline);

/* run's start-up check: gather, explain, and record the timeline when it
 * passes. */
int consistency_check(PGconn *control, sink *s, const char *conninfo, const char *slot);

#endif
