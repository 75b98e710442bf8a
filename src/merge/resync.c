#include "resync.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "clock.h"
#include "consistency.h"
#include "log.h"
#include "pgconn.h"
#include "xalloc.h"

#define WATCH_INTERVAL_S 5.0

/* The tables named, as a JSON array of [schema, name] (NULL: every one). */
static char *
tables_json(const resync_plan *p)
{
	json_t *arr;
	char *text;

	if (p->ntables == 0)
		return NULL;
	arr = json_array();
	for (int i = 0; i < p->ntables; i++)
		json_array_append_new(arr, json_pack("[ss]", p->tables[2 * i], p->tables[2 * i + 1]));
	text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return text;
}

/* Each table's copy requested again, as `tidemark snapshot` does, with the
 * transaction's time as the stamp the resync records; sweeps under way
 * start again with the copy. */
static int
request_copies(sink *s, const char *slot, const resync_plan *p, int *n)
{
	char *names = tables_json(p);
	const char *params[] = {slot, names};
	PGresult *r = NULL;
	int rc = sink_query(s, "requesting the copies of the resync",
	                    "UPDATE tidemark.tables SET state = 'snapshot_pending',"
	                    " snapshot_last_key = NULL, snapshot_rows = 0, snapshot_chunks = 0,"
	                    " snapshot_started_at = NULL, snapshot_finished_at = NULL,"
	                    " snapshot_requested_at = now()"
	                    " WHERE slot_name = $1 AND state <> 'dropped'"
	                    " AND ($2::jsonb IS NULL OR jsonb_build_array(source_schema, source_table)"
	                    "   IN (SELECT jsonb_array_elements($2::jsonb)))"
	                    " RETURNING table_id", 2, params, &r);

	*n = rc == TM_OK ? PQntuples(r) : 0;
	PQclear(r);
	if (rc == TM_OK)
		rc = sink_command(s, "restarting the sweeps of the resync",
		                  "DELETE FROM tidemark.snapshot_sweeps w USING tidemark.tables t"
		                  " WHERE w.table_id = t.table_id AND t.slot_name = $1"
		                  " AND t.snapshot_requested_at = now()", 1, params);
	free(names);
	return rc;
}

static int
record(sink *s, const char *slot, const resync_plan *p, int n)
{
	char from[LSN_TEXT_MAX], resume[LSN_TEXT_MAX], count[16];
	const char *params[] = {slot, p->reason, p->from == LSN_INVALID ? NULL : lsn_format(p->from, from),
	                        lsn_format(p->resume, resume), p->new_slot ? "t" : "f", count};

	snprintf(count, sizeof count, "%d", n);
	return sink_command(s, "recording the resync",
	                    "INSERT INTO tidemark.resyncs (slot_name, reason, requested_at, from_lsn,"
	                    "   resume_lsn, new_slot, tables)"
	                    " VALUES ($1, $2, now(), $3::pg_lsn, $4::pg_lsn, $5::bool, $6::int)"
	                    " ON CONFLICT (slot_name) DO UPDATE SET reason = EXCLUDED.reason,"
	                    "   started_at = now(), requested_at = now(), from_lsn = EXCLUDED.from_lsn,"
	                    "   resume_lsn = EXCLUDED.resume_lsn, new_slot = EXCLUDED.new_slot,"
	                    "   tables = EXCLUDED.tables, finished_at = NULL", 6, params);
}

/* The stored position becomes where the stream resumes. */
static int
repoint(sink *s, const char *slot, tm_lsn resume)
{
	char lsn[LSN_TEXT_MAX];
	const char *params[] = {slot, lsn_format(resume, lsn)};

	return sink_command(s, "storing the position the stream resumes from",
	                    "UPDATE tidemark.progress SET applied_lsn = $2::pg_lsn, applied_at = now()"
	                    " WHERE slot_name = $1", 2, params);
}

int
resync_begin(sink *s, const char *slot, const resync_plan *p, int *nrequested)
{
	int rc = sink_begin(s);

	if (rc == TM_OK && p->resume != LSN_INVALID)
		rc = repoint(s, slot, p->resume);
	if (rc == TM_OK && p->timeline != 0)
		rc = consistency_record_timeline(s, slot, p->timeline);
	if (rc == TM_OK && p->catch_up != NULL)
		rc = p->catch_up(p->catch_up_ctx, p->resume);
	if (rc == TM_OK)
		rc = request_copies(s, slot, p, nrequested);
	if (rc == TM_OK && *nrequested < p->ntables) {
		log_error("resync --table: %d of the %d tables named are not replicated through slot "
		          "\"%s\" (see tidemark status)", p->ntables - *nrequested, p->ntables, slot);
		rc = TM_EXIT_CONFIG;
	}
	if (rc == TM_OK)
		rc = record(s, slot, p, *nrequested);
	if (rc == TM_OK)
		rc = sink_commit(s, NULL);
	else
		sink_rollback(s);
	return rc;
}

int
resync_in_progress(sink *s, const char *slot, bool *active, char **started, char **reason)
{
	const char *params[] = {slot};
	PGresult *r = NULL;
	bool has = false;
	int rc = catalog_target_has(s, "tidemark", "resyncs", &has);

	*active = false;
	*started = *reason = NULL;
	if (rc == TM_OK && has)
		rc = sink_query(s, "reading the resync in progress",
		                "SELECT started_at::text, reason FROM tidemark.resyncs"
		                " WHERE slot_name = $1 AND finished_at IS NULL", 1, params, &r);
	if (rc == TM_OK && r != NULL && PQntuples(r) == 1) {
		*active = true;
		*started = xstrdup(PQgetvalue(r, 0, 0));
		*reason = xstrdup(PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	return rc;
}

/* Marks the resync finished when nothing of the replication is copied or
 * swept any more; *finished tells whether it was. */
static int
finish_if_done(sink *s, const char *slot, bool *finished)
{
	const char *params[] = {slot};
	PGresult *r = NULL;
	int rc = sink_query(s, "looking at the resync in progress",
	                    "UPDATE tidemark.resyncs r SET finished_at = now()"
	                    " WHERE r.slot_name = $1 AND r.finished_at IS NULL"
	                    " AND NOT EXISTS (SELECT FROM tidemark.tables t WHERE t.slot_name = $1"
	                    "   AND t.state IN ('snapshot_pending', 'snapshotting'))"
	                    " AND NOT EXISTS (SELECT FROM tidemark.snapshot_sweeps w"
	                    "   JOIN tidemark.tables t USING (table_id) WHERE t.slot_name = $1"
	                    "   AND t.state <> 'dropped')"
	                    " RETURNING r.tables, r.reason,"
	                    "   round(extract(epoch FROM r.finished_at - r.started_at))::bigint",
	                    1, params, &r);

	*finished = rc == TM_OK && PQntuples(r) == 1;
	if (*finished)
		log_info("resync done: %s table(s) copied again in place in %s s (it began because: "
		         "%s); the target equals the source as of the stream's position", PQgetvalue(r, 0, 0),
		         PQgetvalue(r, 0, 2), PQgetvalue(r, 0, 1));
	PQclear(r);
	return rc;
}

int
resync_watch_poll(resync_watch *w, sink *s, const char *slot, bool force)
{
	double now = clock_coarse_s();
	bool active = false, finished = false;
	char *started = NULL, *reason = NULL;
	int rc;

	if (w->none || (!force && now < w->next_check))
		return TM_OK;
	w->next_check = now + WATCH_INTERVAL_S;
	rc = resync_in_progress(s, slot, &active, &started, &reason);
	if (rc == TM_OK && active && !w->announced)
		log_info("a resync is in progress since %s (%s): its copies go on", started, reason);
	w->announced |= active;
	if (rc == TM_OK && active)
		rc = finish_if_done(s, slot, &finished);
	/* a resync begins only before run starts: once none is left, none comes */
	w->none = rc == TM_OK && (!active || finished);
	free(started);
	free(reason);
	return rc;
}
