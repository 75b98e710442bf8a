/*
 * snap_commits.h: the recent commits the stream has shown (xid, commit
 * position), to catch the one race of the watermark rule.
 *
 * A chunk is read after its low watermark is committed. A transaction whose
 * commit record precedes the low watermark in the WAL may still be listed
 * as running in the read's snapshot (a commit record is written before the
 * transaction leaves the server's list of running transactions): its
 * changes were applied before the window opened, and the chunk holds older
 * rows. The read records its snapshot's running xids; if one of them
 * committed before the low watermark, the chunk is read again.
 *
 * Pure: a ring of the last SNAP_COMMITS_SIZE commits. A window keeps a
 * copy of the ring as its low watermark met it (snapshot.c), and its high
 * watermark looks there: however many transactions commit during a long
 * chunk read, the commits before the low watermark are not pushed out.
 */
#ifndef TIDEMARK_SNAP_COMMITS_H
#define TIDEMARK_SNAP_COMMITS_H

#include <stdbool.h>
#include <stdint.h>

#include "lsn.h"

#define SNAP_COMMITS_SIZE 16384

typedef struct snap_commits {
	uint32_t xid[SNAP_COMMITS_SIZE];
	tm_lsn lsn[SNAP_COMMITS_SIZE];
	int next;
	int used;
} snap_commits;

void snap_commits_add(snap_commits *c, uint32_t xid, tm_lsn commit_lsn);
/* Did any of the running xids (64-bit, as pg_current_snapshot() lists
 * them) commit before low? */
bool snap_commits_missed(const snap_commits *c, const uint64_t *running, int n, tm_lsn low);

#endif
