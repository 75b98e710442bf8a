#include "consistency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "log.h"
#include "pgconn.h"
#include "source.h"

#define RESYNC_FIX "Fix: `tidemark resync` (copies every table again in place while streaming; " \
                   "the target stays queryable, no table is dropped or emptied)"

/* The timeline recorded with the stored position; 0 when none is (or the
 * catalog predates migration 013). */
static int
stored_timeline(sink *s, const char *slot, uint32_t *tli)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	bool has = false;
	int rc = catalog_target_has(s, "tidemark", "source_timeline", &has);

	*tli = 0;
	if (rc == TM_OK && has)
		rc = sink_query(s, "reading the source timeline of the stored position",
		                "SELECT timeline FROM tidemark.source_timeline WHERE slot_name = $1", 1, p,
		                &r);
	if (rc == TM_OK && r != NULL && PQntuples(r) == 1)
		*tli = (uint32_t) strtoul(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return rc;
}

/* Where the stored timeline ended in the source's history. */
static int
fork_point(const source_identity *id, resume_facts *f)
{
	tm_error err;

	f->source_tli = id->timeline;
	f->stored_in_history = false;
	if (f->stored_tli == 0 || f->stored_tli == id->timeline || id->history == NULL)
		return TM_OK;
	if (resume_history_end(id->history, id->history_len, f->stored_tli, &f->stored_in_history,
	                       &f->fork, &err) != 0) {
		log_error("source: %s", err.msg);
		return TM_EXIT_SOURCE;
	}
	return TM_OK;
}

int
consistency_gather(PGconn *control, sink *s, const char *conninfo, const char *slot,
                   consistency_facts *out)
{
	source_identity id;
	resume_facts *f = &out->facts;
	int rc;

	memset(out, 0, sizeof *out);
	memset(&id, 0, sizeof id);
	rc = catalog_read_progress(s, slot, &f->target);
	if (rc == TM_OK)
		rc = stored_timeline(s, slot, &f->stored_tli);
	if (rc == TM_OK)
		rc = source_query_slot_state(control, slot, &out->slot);
	if (rc == TM_OK && !out->slot.in_recovery)
		rc = source_identify(conninfo, f->stored_tli != 0, &id);
	if (rc == TM_OK)
		rc = fork_point(&id, f);
	f->slot_exists = out->slot.exists;
	f->slot_invalidated = out->slot.invalidated;
	f->confirmed = out->slot.confirmed;
	f->source_end = out->slot.wal_end;
	out->verdict = resume_check(f);
	source_identity_clear(&id);
	return rc;
}

static void
explain_fork(const resume_facts *f, const char *target)
{
	char fork[LSN_TEXT_MAX];

	if (f->stored_in_history)
		log_error("the source's history diverged from the target's: the target's position %s "
		          "was streamed on the source's timeline %u, and the source, now on timeline "
		          "%u, left that timeline at %s (a failover to a standby that had not received "
		          "everything, or a point-in-time recovery): the target holds changes the "
		          "source does not have. " RESYNC_FIX, target, f->stored_tli, f->source_tli,
		          lsn_format(f->fork, fork));
	else
		log_error("the source's history diverged from the target's: the target's position %s "
		          "was streamed on the source's timeline %u, which is not in the history of "
		          "the source's timeline %u (another server, or a recovery to another "
		          "branch). " RESYNC_FIX, target, f->stored_tli, f->source_tli);
}

int
consistency_explain(const consistency_facts *c, const char *slot)
{
	const resume_facts *f = &c->facts;
	char target[LSN_TEXT_MAX], other[LSN_TEXT_MAX];

	lsn_format(f->target, target);
	if (c->slot.in_recovery) {
		log_error("source: the server is a standby (in recovery); tidemark streams from the "
		          "primary, where it writes its watermarks. Fix: point --source at the primary");
		return TM_EXIT_CONFIG;
	}
	switch (c->verdict) {
	case RESUME_OK:
	case RESUME_FRESH:
		return TM_OK;
	case RESUME_SLOT_MISSING:
	case RESUME_SLOT_INVALIDATED:
		break; /* below */
	case RESUME_FORKED:
		explain_fork(f, target);
		return TM_EXIT_CONFIG;
	case RESUME_SOURCE_BEHIND:
		log_error("the source is behind the target: the target applied the source's changes up "
		          "to %s, but the source's WAL ends at %s: the source lost changes the target "
		          "holds (restored from a backup, or failed over to a standby that had not "
		          "received them), and its new changes would be taken for ones already "
		          "applied. " RESYNC_FIX, target, lsn_format(f->source_end, other));
		return TM_EXIT_CONFIG;
	case RESUME_TARGET_BEHIND:
		log_error("the target is behind the replication slot: the target holds the source's "
		          "changes up to %s, but slot \"%s\" confirmed %s: the changes between them "
		          "were confirmed to the source and are not on the target (the target database "
		          "was restored from a backup, or a target standby was promoted before it had "
		          "received them), and streaming would skip them. " RESYNC_FIX, target, slot,
		          lsn_format(f->confirmed, other));
		return TM_EXIT_CONFIG;
	}
	if (!c->slot.exists)
		log_error("source: replication slot \"%s\" does not exist on this server: a failover "
		          "to a standby that did not have it (PostgreSQL before 17 keeps no logical "
		          "slot on a standby; from 17 only a failover slot synced to the standby "
		          "survives), or it was dropped. The changes since the target's position %s "
		          "cannot be streamed. Fix: `tidemark resync` (creates the slot again and copies "
		          "every table again in place while streaming; the target stays queryable)",
		          slot, target);
	else
		log_error("source: replication slot \"%s\" is invalidated (%s: %s): the source no "
		          "longer keeps the changes since the target's position %s. Fix: `tidemark "
		          "resync` (creates the slot again and copies every table again in place while "
		          "streaming; the target stays queryable)", slot, c->slot.reason,
		          source_query_invalidation_text(c->slot.reason), target);
	return c->slot.exists ? TM_EXIT_SOURCE : TM_EXIT_CONFIG;
}

int
consistency_record_timeline(sink *s, const char *slot, uint32_t timeline)
{
	char tli[16];
	const char *p[] = {slot, tli};

	snprintf(tli, sizeof tli, "%u", timeline);
	return sink_command(s, "recording the source's timeline",
	                    "INSERT INTO tidemark.source_timeline (slot_name, timeline)"
	                    " VALUES ($1, $2::bigint) ON CONFLICT (slot_name) DO UPDATE"
	                    " SET timeline = EXCLUDED.timeline, seen_at = now()"
	                    " WHERE source_timeline.timeline <> EXCLUDED.timeline", 2, p);
}

int
consistency_check(PGconn *control, sink *s, const char *conninfo, const char *slot)
{
	consistency_facts c;
	int rc = consistency_gather(control, s, conninfo, slot, &c);

	if (rc == TM_OK)
		rc = consistency_explain(&c, slot);
	if (rc == TM_OK && c.slot.server_version >= 170000 && !c.slot.failover && !c.slot.synced)
		log_warn("source: replication slot \"%s\" is not a failover slot: a failover of the "
		         "source to a standby loses it. Fix: `tidemark setup` again makes it one (see "
		         "Failover in the README)", slot);
	if (rc == TM_OK && c.facts.source_tli != 0 && c.facts.source_tli != c.facts.stored_tli)
		rc = consistency_record_timeline(s, slot, c.facts.source_tli);
	return rc;
}
