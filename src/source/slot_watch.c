/*
 * slot_watch.c: what the replication slot keeps of the source's WAL (see
 * slot_watch.h).
 */
#include "slot_watch.h"

#include <stdio.h>

#include "clock.h"
#include "log.h"
#include "exitcode.h"

void
slot_watch_init(slot_watch *w, const char *slot)
{
	w->slot = slot;
	w->read_at = 0;
	w->read = false;
	w->at_risk = false;
}

static void
bytes_text(long long n, char *out, size_t size)
{
	if (n >= 1024LL * 1024 * 1024)
		snprintf(out, size, "%.1f GB", (double) n / (1024.0 * 1024 * 1024));
	else
		snprintf(out, size, "%.1f MB", (double) n / (1024.0 * 1024));
}

static void
warn_at_risk(const slot_watch *w, const slot_wal *s)
{
	char kept[32], left[32] = "", limit[32] = "";

	bytes_text(s->retained, kept, sizeof kept);
	if (s->safe >= 0)
		bytes_text(s->safe, left, sizeof left);
	if (s->keep > 0)
		bytes_text(s->keep, limit, sizeof limit);
	log_warn("source: replication slot \"%s\" keeps %s of WAL (wal_status %s)%s%s%s%s: once "
	         "the source removes WAL the slot still needs, the slot is invalidated and only "
	         "`tidemark resync` (every table copied again) brings the pipeline back. Fix: let "
	         "run catch up if it lags (tidemark_lag_bytes); a transaction open for long on the "
	         "source (pg_stat_activity.xact_start) holds the slot's restart point back: end it; "
	         "or raise max_slot_wal_keep_size on the source",
	         w->slot, kept, s->status, left[0] ? "; the source may write " : "", left,
	         limit[0] ? " more before that, of its max_slot_wal_keep_size of " : "", limit);
}

int
slot_watch_poll(slot_watch *w, PGconn *control, metrics *m)
{
	slot_wal s;
	bool risk;
	int rc;

	if (w->read && clock_coarse_s() - w->read_at < SLOT_WATCH_INTERVAL_S)
		return TM_OK;
	w->read_at = clock_coarse_s();
	w->read = true;
	rc = source_query_slot_wal(control, w->slot, &s);
	if (rc != TM_OK)
		return rc;
	if (m != NULL && s.retained >= 0)
		metrics_set(m, METRICS_SLOT_RETAINED, (uint64_t) s.retained);
	risk = slot_wal_at_risk(&s);
	if (risk && !w->at_risk)
		warn_at_risk(w, &s);
	else if (!risk && w->at_risk)
		log_info("source: replication slot \"%s\" keeps its WAL safely again", w->slot);
	w->at_risk = risk;
	return TM_OK;
}
