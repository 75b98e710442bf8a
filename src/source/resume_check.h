/*
 * resume_check.h: may `run` resume streaming from the target's stored
 * position? The rule, pure: the facts are read by the caller (consistency.h),
 * the verdict says what is wrong and which positions prove it.
 *
 * What holds on a healthy pair, and so what each comparison may rely on:
 *
 *   confirmed <= target      tidemark reports as flushed only positions
 *                            whose rows are durably committed on the target
 *                            (apply.h), so the slot's confirmed_flush_lsn
 *                            never passes the stored position. The target
 *                            is ahead of the slot by what it applied and
 *                            has not reported yet: that is normal. The
 *                            target behind the slot means changes were
 *                            confirmed to the source that the target does
 *                            not hold (restored from a backup, a target
 *                            standby promoted before it received them):
 *                            the stream would start at the slot and skip
 *                            them.
 *   target <= source end     every position tidemark stores was sent by
 *                            the source, so the source's WAL reaches it
 *                            (pg_current_wal_lsn()). A target ahead of the
 *                            source's WAL means the source lost WAL the
 *                            target applied (restored from a backup, or
 *                            failed over to a standby that was behind).
 *   target <= fork           when the source's timeline changed since the
 *                            target's position was streamed (a promotion,
 *                            a point-in-time recovery), the source shares
 *                            the old timeline's WAL only up to where its
 *                            history says the old timeline ended: a target
 *                            position beyond it holds changes the new
 *                            timeline never had, and positions after the
 *                            fork mean other changes there.
 *
 * Not decidable here: a source restored to an earlier state on the same
 * timeline whose WAL has since grown past the target's position (no
 * position tells the two histories apart).
 */
#ifndef TIDEMARK_RESUME_CHECK_H
#define TIDEMARK_RESUME_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lsn.h"
#include "tm_error.h"

typedef struct resume_facts {
	tm_lsn target;          /* the target's stored position; LSN_INVALID: nothing yet */
	bool slot_exists;
	bool slot_invalidated;  /* wal_status 'lost', or an invalidation_reason (17+) */
	tm_lsn confirmed;       /* the slot's confirmed_flush_lsn */
	tm_lsn source_end;      /* the source's pg_current_wal_lsn() */
	uint32_t stored_tli;    /* the source timeline the target's position was streamed
	                         * from; 0: not known (nothing recorded yet) */
	uint32_t source_tli;    /* the source's timeline now */
	bool stored_in_history; /* stored_tli is an ancestor of source_tli, ending at fork */
	tm_lsn fork;
} resume_facts;

typedef enum resume_verdict {
	RESUME_OK,              /* stream from the target's position */
	RESUME_FRESH,           /* nothing applied yet: stream from the slot */
	RESUME_SLOT_MISSING,
	RESUME_SLOT_INVALIDATED,
	RESUME_FORKED,          /* the source's timeline left the target's behind it */
	RESUME_SOURCE_BEHIND,   /* the target applied WAL the source does not have */
	RESUME_TARGET_BEHIND,   /* the slot confirmed changes the target lacks */
} resume_verdict;

/* The verdict for these facts (see above for the order of the checks:
 * the slot first, then the source's history, then the positions). */
resume_verdict resume_check(const resume_facts *f);

/* A short name for the verdict ("target_behind", ...): the reason a
 * resync records. */
const char *resume_verdict_name(resume_verdict v);

/*
 * A timeline history file's text (TIMELINE_HISTORY: lines "parent_tli
 * switch_lsn reason", comments and blank lines ignored): where timeline
 * tli ended, if the history lists it. Returns 0 and sets *found (and *end
 * when found), or -1 with err set when a line cannot be read.
 */
int resume_history_end(const char *text, size_t len, uint32_t tli, bool *found, tm_lsn *end,
                       tm_error *err);

/*
 * A source whose system identifier is no longer the one recorded: the
 * pipeline's database upgraded in place (pg_upgrade), or another server?
 * pg_upgrade makes a new cluster (a new identifier, a new WAL that begins
 * after the old one's end) and keeps the oids of databases (from
 * PostgreSQL 15), tables and types, on which the pipeline's catalog rests,
 * and from PostgreSQL 17 the logical slots: it refuses to run while a slot
 * has not confirmed every change of the old server, and creates the slot
 * again in the new cluster, its confirmed position at the new WAL's
 * start. A dump restored into a new server keeps no oid and no slot.
 *
 * The verdict is evidence, not proof: a server built by the same scripts
 * may have the same oids, so the caller takes an upgrade up only when the
 * operator says so (`resync --source-upgraded`).
 */
typedef struct upgrade_facts {
	bool same_database;     /* the database's oid is the one recorded */
	int tables;             /* replicated tables recorded with their source oid */
	int tables_same;        /* of those, named alike under that oid on the source */
	bool slot_exists;
	bool slot_ours;         /* a pgoutput slot of this database */
	bool slot_invalidated;
	tm_lsn confirmed;       /* the slot's confirmed_flush_lsn */
	tm_lsn target;          /* the target's stored position; LSN_INVALID: none */
} upgrade_facts;

typedef enum upgrade_verdict {
	UPGRADE_NOT_SAME,       /* not the pipeline's database kept by an upgrade */
	UPGRADE_SLOT_KEPT,      /* and its slot was kept: resume at its position */
	UPGRADE_SLOT_LOST,      /* the slot was not kept: a new one, every table copied again */
} upgrade_verdict;

/* The verdict; for UPGRADE_NOT_SAME, why, in a few words, in why. */
upgrade_verdict resume_upgrade_check(const upgrade_facts *f, char *why, size_t size);

#endif
