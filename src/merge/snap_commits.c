#include "snap_commits.h"

void
snap_commits_add(snap_commits *c, uint32_t xid, tm_lsn commit_lsn)
{
	c->xid[c->next] = xid;
	c->lsn[c->next] = commit_lsn;
	c->next = (c->next + 1) % SNAP_COMMITS_SIZE;
	if (c->used < SNAP_COMMITS_SIZE)
		c->used++;
}

bool
snap_commits_missed(const snap_commits *c, const uint64_t *running, int n, tm_lsn low)
{
	/* the stream's xids are the low 32 bits of the snapshot's */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < c->used; j++)
			if (c->xid[j] == (uint32_t) running[i] && c->lsn[j] < low)
				return true;
	return false;
}
