/*
 * cmd_run.c: `tidemark run`. One session = one source stream + one target
 * sink, resuming from the position stored on the target. A transient
 * failure of either side ends the session; a new one starts after a
 * backoff, from the target's position again, so nothing is lost or applied
 * twice whatever the instant of the failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apply.h"
#include "clock.h"
#include "commands.h"
#include "consistency.h"
#include "ddl_auth.h"
#include "key_order.h"
#include "log.h"
#include "metrics.h"
#include "migrate.h"
#include "mode.h"
#include "pgconn.h"
#include "pipeline.h"
#include "pgoutput.h"
#include "policy.h"
#include "resync.h"
#include "schema_sync.h"
#include "snapshot.h"
#include "source.h"
#include "pub_watch.h"
#include "slot_watch.h"
#include "source_query.h"
#include "strbuf.h"
#include "typesync.h"
#include "xalloc.h"

#define FEEDBACK_INTERVAL_MS 10000
/* While the target is slow to answer, a status update to the source this
 * often: the source ends a stream that does not answer within its
 * wal_sender_timeout (60 s by default). */
#define KEEPALIVE_TICK_MS 1000
#define ADVANCE_INTERVAL_MS 1000
#define BACKOFF_MAX_MS 30000
#define DDL_WAIT_MAX_MS 300000
/* How long another process may hold the slot before run gives up. */
#define SLOT_BUSY_LIMIT_S 60
/* The metrics' positions and lag, refreshed this often. */
#define METRICS_INTERVAL_S 0.2

static volatile sig_atomic_t stop_requests;

static void
on_stop_signal(int sig)
{
	(void) sig;
	stop_requests++;
}

static void
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

typedef struct run_state {
	const cli_options *opts;
	char marker[64];            /* --until-caught-up marker content, "" if none */
	PGconn *control;            /* owned: ordinary source connection */
	sink *sink;                 /* owned */
	apply *apply;               /* owned */
	snapshot *snap;             /* owned */
	schema_sync *schema;        /* owned */
	policy_settings policies;   /* --policy, --table-policy: this run's */
	bool policies_logged;
	uint64_t next_xid;          /* the source's next xid, read at next_xid_at: */
	double next_xid_at;         /* the epoch of the stream's transactions */
	tm_lsn stop_before;         /* the stop policy stopped at this transaction */
	apply_hooks snap_hooks;
	source *stream;             /* owned */
	pgoutput_reader reader;
	arena scratch;              /* per-message memory */
	tm_lsn wal_end;             /* the source's end of WAL, as last reported */
	tm_lsn received;            /* the last change received from the stream */
	tm_lsn single_until;        /* after a failure on the target: a target
	                             * transaction per source transaction up to here */
	double last_feedback, last_advance, last_progress;
	long long progress_txs, progress_changes;
	bool made_progress;         /* the session's applied position advanced */
	int ddl_wait_ms;            /* a schema change's wait for its lock (sink_lock_wait) */
	bool migrated;              /* the target catalog is at this binary's version */
	bool warned;                /* tables of an earlier slot were named */
	bool streamed;              /* a session of this run has streamed */
	bool connect_failed;        /* this session failed to open a connection */
	resync_watch resync;        /* a resync in progress: its end is recorded */
	pub_watch pub;              /* the publication as last read */
	slot_watch slot_wal;        /* what the slot keeps of the source's WAL */
	metrics *metrics;           /* owned; NULL without --metrics-listen */
	double last_metrics;        /* when the positions were last set */
	tm_lsn metrics_applied;     /* the applied position they were set to */
	bool marker_reached;        /* the marker's transaction is applied */
	bool key_order_later;       /* a key's order differed while the stream was
	                             * behind the source: compared once caught up */
	bool restart_now;           /* the session ended to start again at once */
	bool unstreamed;            /* sessions without streaming, until: */
	uint32_t unstreamed_xid;    /* this transaction is applied (or rolled back) */
	double unstreamed_checked;  /* when the source was last asked about it */
} run_state;

/* ---- new tables in replicated schemas ---- */

static void keepalive_tick(void *ctx);

static int
resolve_table(void *ctx, const char *schema, const char *name, tabledef **out, tm_lsn *at)
{
	run_state *st = ctx;
	/* its lock may wait behind a migration's: the stream is kept meanwhile */
	source_wait_watch watch = {st->opts->source, keepalive_tick, st};
	int rc = source_query_table_def_at(st->control, &watch, schema, name, out, at);

	if (rc == TM_EXIT_CONFIG) {
		/* no key, or gone already: logged; the table is skipped */
		*out = NULL;
		return TM_OK;
	}
	return rc;
}

/* What a schema change needs to know of partitioned tables. */
static int
source_table_def(void *ctx, uint32_t relid, tabledef **out)
{
	run_state *st = ctx;
	int rc = source_query_table_def_oid(st->control, relid, out);

	if (rc == TM_EXIT_CONFIG) {
		*out = NULL; /* no key: logged; not replicated */
		return TM_OK;
	}
	return rc;
}

static int
source_partitions(void *ctx, uint32_t relid, ddl_part_root *out)
{
	return source_query_partitions(((run_state *) ctx)->control, relid, out);
}

static int
source_table_name(void *ctx, uint32_t relid, char **out)
{
	return source_query_table_name(((run_state *) ctx)->control, relid, out);
}

/* A table that left the publication's schemas stays published by name. */
static int
source_publish_table(void *ctx, uint32_t relid, bool *recopy)
{
	run_state *st = ctx;
	int rc = source_query_keep_published(st->control, st->opts->publication, relid, recopy);

	if (rc == TM_OK && *recopy)
		pub_watch_own(&st->pub, relid);
	return rc;
}

/* A table that joins is published (schema_sync_source.publish_joining). */
static int
source_publish_joining(void *ctx, const tabledef *def, bool by_schema, bool *added)
{
	run_state *st = ctx;
	int rc = source_query_publish_joining(st->control, st->opts->publication, def, by_schema,
	                                      added);

	if (rc == TM_OK && *added)
		pub_watch_own(&st->pub, def->relid);
	return rc;
}

/* ---- tidemark's messages in the stream ---- */

/* Compares the key's order on both servers again (key_order.h) for the
 * tables with these ids; behind: the stream may be behind the source. */
static int
key_order_for(run_state *st, const int *ids, int nids, bool behind)
{
	catalog_table *tables = NULL;
	int n = 0;
	int rc = nids > 0 ? catalog_load_tables_ids(st->sink, st->opts->slot, ids, nids, &tables, &n)
	                  : TM_OK;

	for (int i = 0; rc == TM_OK && i < n; i++)
		rc = key_order_record(st->control, st->sink, &tables[i], behind, &st->key_order_later);
	catalog_tables_free(tables, n);
	return rc;
}

/* The keys whose order is not known, compared again: at run's start
 * (behind), and once the stream has caught up with the source (nothing in
 * flight), where a difference is judged. */
static int
key_order_unknown_ones(run_state *st, bool behind)
{
	int *ids = NULL, nids = 0;
	int rc = catalog_key_order_unknown(st->sink, st->opts->slot, &ids, &nids);

	st->key_order_later = false; /* set again by those left for later */
	if (rc == TM_OK)
		rc = key_order_for(st, ids, nids, behind);
	free(ids);
	return rc;
}

/* The 64-bit xid of the source transaction being applied: its Begin's 32
 * bits, in the epoch of the source's next xid, read again when it is more
 * than NEXT_XID_MAX_AGE_S old (far fewer than 2^31 xids go by meanwhile:
 * ddl_auth_widen_xid). */
#define NEXT_XID_MAX_AGE_S 10
static int
current_xid(run_state *st, uint64_t *out)
{
	double now = clock_now_s();
	int rc = TM_OK;

	if (st->next_xid == 0 || now - st->next_xid_at > NEXT_XID_MAX_AGE_S) {
		rc = source_query_next_xid(st->control, &st->next_xid);
		st->next_xid_at = now;
	}
	*out = ddl_auth_widen_xid(st->next_xid, apply_current_xid(st->apply));
	return rc;
}

/* After a schema change or tables joining: the tables concerned are
 * looked at again (names, keys, statements, chunks in flight). */
/* What a message or a commit changed (res: freed here, after rc_in). */
static int
after_sync(run_state *st, int rc_in, schema_sync_result *res)
{
	int rc = rc_in;

	if (rc == TM_OK && res->commit_after)
		apply_commit_after(st->apply);
	if (rc != TM_OK || (res->nchanged == 0 && !res->any_new_table)) {
		schema_sync_result_free(res);
		return rc;
	}
	snapshot_poll_soon(st->snap);
	rc = apply_reset_statements(st->apply);
	if (rc == TM_OK)
		rc = res->any_new_table ? apply_reload_tables(st->apply)
		                        : apply_reload_tables_ids(st->apply, res->changed, res->nchanged);
	/* in the transaction that changed them: names, keys and types as now */
	if (rc == TM_OK)
		rc = key_order_for(st, res->changed, res->nchanged, true);
	for (int i = 0; i < res->nchanged; i++) {
		apply_forget_statements(st->apply, res->changed[i]);
		snapshot_restart(st->snap, res->changed[i]);
	}
	schema_sync_result_free(res);
	return rc;
}

/* A schema change: the target follows it. */
static int
on_ddl(run_state *st, const pgoutput_msg *m, pg_timestamp commit_time)
{
	schema_sync_result res = {0};
	uint64_t xid = 0;
	int rc = current_xid(st, &xid);

	if (rc != TM_OK)
		return rc;
	schema_sync_in_transaction(st->schema, xid, apply_current_commit_lsn(st->apply));
	rc = schema_sync_message(st->schema, m, m->u.message.lsn, commit_time, &res);
	return after_sync(st, rc, &res);
}

/* The source transaction commits: the tables made in it join. */
static int
before_commit(void *ctx, tm_lsn end_lsn)
{
	run_state *st = ctx;
	schema_sync_result res = {0};
	int rc;

	schema_sync_set_commit(st->schema, apply_current_commit_lsn(st->apply));
	rc = schema_sync_commit(st->schema, end_lsn, &res);
	return after_sync(st, rc, &res);
}

static apply_described
described(void *ctx, uint32_t relid)
{
	const schema_sync *ss = ((run_state *) ctx)->schema;

	return schema_sync_created(ss, relid)     ? APPLY_CREATED
	       : schema_sync_described(ss, relid) ? APPLY_DESCRIBED
	                                          : APPLY_NOT_DESCRIBED;
}

/* A table registered by the apply, or registered again (set aside). */
static void
registered(void *ctx, int table_id)
{
	run_state *st = ctx;

	snapshot_restart(st->snap, table_id);
	snapshot_poll_soon(st->snap);
}

/* A message that changes types, before it changes anything. */
static int
type_boundary(void *ctx)
{
	return apply_type_boundary(((run_state *) ctx)->apply);
}

static int
on_message(void *ctx, const pgoutput_msg *m, pg_timestamp commit_time)
{
	run_state *st = ctx;

	if (strcmp(m->u.message.prefix, "tidemark.ddl") == 0)
		return on_ddl(st, m, commit_time);
	return st->snap_hooks.on_message(st->snap_hooks.message_ctx, m, commit_time);
}

/* ---- progress ---- */

/* How far the target is behind the source: the bytes of WAL the source
 * reported that are not applied, and while anything is left to apply (those
 * bytes, a transaction under way, messages received and not yet read), the
 * age of the last source transaction applied. */
static void
lag_of(const run_state *st, long long *bytes, double *seconds)
{
	const apply_stats *s = apply_get_stats(st->apply);
	tm_lsn pos = apply_committed(st->apply);
	bool behind;

	*bytes = st->wal_end > pos ? (long long) (st->wal_end - pos) : 0;
	behind = *bytes > 0 || apply_in_transaction(st->apply) ||
	         (st->stream != NULL && source_has_pending(st->stream));
	*seconds = 0;
	if (behind && s->last_commit_time != 0) {
		struct timespec wall;

		clock_gettime(CLOCK_REALTIME, &wall);
		*seconds = ((double) wall.tv_sec * 1e6 + wall.tv_nsec / 1e3 -
		            (double) pgoutput_timestamp_to_unix_us(s->last_commit_time)) / 1e6;
		if (*seconds < 0)
			*seconds = 0;
	}
}

/* The positions and the lag, for the metrics (a few times a second). */
static void
update_metrics(run_state *st, double now)
{
	tm_lsn applied;
	long long lag_b;
	double lag_s;

	if (st->metrics == NULL)
		return;
	applied = apply_committed(st->apply);
	/* a commit is shown at once: the loop may then wait for the source
	 * longer than the interval */
	if (applied == st->metrics_applied && now - st->last_metrics < METRICS_INTERVAL_S)
		return;
	st->last_metrics = now;
	st->metrics_applied = applied;
	lag_of(st, &lag_b, &lag_s);
	metrics_set(st->metrics, METRICS_APPLIED_LSN, applied);
	metrics_set(st->metrics, METRICS_FLUSHED_LSN, apply_position(st->apply));
	/* the stream's messages carry their own start as the end: the source
	 * has at least what is applied */
	metrics_set(st->metrics, METRICS_SOURCE_LSN, st->wal_end > applied ? st->wal_end : applied);
	metrics_set(st->metrics, METRICS_LAG_BYTES, (uint64_t) lag_b);
	metrics_set(st->metrics, METRICS_LAG_US, (uint64_t) (lag_s * 1e6));
}

static void
log_progress(run_state *st, bool force)
{
	double now = clock_coarse_s();
	double dt = now - st->last_progress;
	const apply_stats *s = apply_get_stats(st->apply);
	char applied[LSN_TEXT_MAX];
	tm_lsn pos = apply_committed(st->apply);
	double lag_s = 0;
	long long lag_b = 0;

	if (!force && dt < st->opts->progress_interval)
		return;
	lag_of(st, &lag_b, &lag_s);
	log_info("applied %s, lag %lld bytes %.1f s, %.0f tx/s, %.0f rows/s",
	         lsn_format(pos, applied), lag_b, lag_s,
	         dt > 0 ? (double) (s->txs - st->progress_txs) / dt : 0,
	         dt > 0 ? (double) (s->changes - st->progress_changes) / dt : 0);
	st->last_progress = now;
	st->progress_txs = s->txs;
	st->progress_changes = s->changes;
}

/* ---- the session ---- */

static int
send_feedback(run_state *st, bool force)
{
	double now = clock_coarse_s();

	int rc;

	if (!force && (now - st->last_feedback) * 1000 < FEEDBACK_INTERVAL_MS)
		return TM_OK;
	st->last_feedback = now;
	rc = apply_refresh_durable(st->apply);
	if (rc == TM_OK)
		rc = source_feedback(st->stream, apply_position(st->apply), false);
	return rc;
}

/* While the target takes long to answer (a long DDL, a lock, a large
 * load): a status update, so that the source keeps the stream (see
 * sink_set_tick). The position is the last known durable one; a failure
 * shows at the next read. */
static void
keepalive_tick(void *ctx)
{
	run_state *st = ctx;

	if (st->stream != NULL && st->apply != NULL)
		(void) source_feedback(st->stream, apply_position(st->apply), false);
	st->last_feedback = clock_coarse_s();
}

/* A keepalive while nothing is in flight: every transaction before its
 * position has been received and applied. */
static int
handle_keepalive(run_state *st, const pgoutput_copydata *cd)
{
	double now = clock_coarse_s();
	bool idle = !apply_in_transaction(st->apply) && !source_has_pending(st->stream);
	int rc = TM_OK;

	if (cd->wal_end > st->wal_end)
		st->wal_end = cd->wal_end;
	if (idle && (now - st->last_advance) * 1000 >= ADVANCE_INTERVAL_MS) {
		rc = apply_advance(st->apply, cd->wal_end);
		st->last_advance = now;
	}
	if (rc == TM_OK && idle && st->key_order_later)
		rc = key_order_unknown_ones(st, false);
	if (rc == TM_OK)
		rc = send_feedback(st, cd->reply_requested);
	return rc;
}

static int
handle_xlogdata(run_state *st, const pgoutput_copydata *cd)
{
	pgoutput_msg m;
	tm_error err;
	char pos[LSN_TEXT_MAX];
	int rc;

	if (cd->wal_end > st->wal_end)
		st->wal_end = cd->wal_end;
	if (cd->wal_start > st->received)
		st->received = cd->wal_start;
	metrics_stage(st->metrics, METRICS_STREAM_BYTES, cd->len);
	if (pgoutput_read_message(&st->reader, cd->data, cd->len, &st->scratch, &m, &err) != 0) {
		log_error("source: cannot decode the message at %s: %s", lsn_format(cd->wal_start, pos),
		          err.msg);
		return TM_EXIT_SOURCE;
	}
	rc = apply_received(st->apply, &m, cd->data, cd->len, cd->wal_start, &st->scratch);
	arena_reset(&st->scratch);
	return rc;
}

static int
handle_copydata(run_state *st, const char *buf, size_t len)
{
	pgoutput_copydata cd;
	tm_error err;

	if (pgoutput_read_copydata(buf, len, &cd, &err) != 0) {
		log_error("source: malformed replication message: %s", err.msg);
		return TM_EXIT_SOURCE;
	}
	if (cd.kind == PGOUTPUT_COPY_KEEPALIVE)
		return handle_keepalive(st, &cd);
	return handle_xlogdata(st, &cd);
}

/* How often a session without streaming asks the source whether the
 * transaction it waits for has ended without a commit. */
#define UNSTREAMED_CHECK_S 5

/* Should the session start again with the other streaming setting? A
 * streamed transaction asked for a session without streaming
 * (apply_stream_restart); such a session ends once that transaction is
 * applied, or the source says it ended otherwise. */
static bool
streaming_turns(run_state *st, int *rc)
{
	char status[16] = "";
	double now = clock_coarse_s();

	if (!st->unstreamed)
		return apply_stream_restart(st->apply, &st->unstreamed_xid);
	if (apply_watched_applied(st->apply))
		return true;
	if (now - st->unstreamed_checked < UNSTREAMED_CHECK_S)
		return false;
	st->unstreamed_checked = now;
	*rc = source_query_next_xid(st->control, &st->next_xid);
	st->next_xid_at = now;
	if (*rc == TM_OK)
		*rc = source_query_xact_status(st->control,
		                               ddl_auth_widen_xid(st->next_xid, st->unstreamed_xid),
		                               status, sizeof status);
	return *rc == TM_OK && strcmp(status, "committed") != 0 &&
	       strcmp(status, "in progress") != 0;
}

/* Done when asked to stop, or caught up, or to start again with the other
 * streaming setting; only at a source transaction boundary, after
 * committing what the target has open. */
static bool
session_done(run_state *st, int *rc)
{
	bool turn = streaming_turns(st, rc);
	bool wanted;

	/* once applied, the marker stays reached: a later session of this run
	 * starts after it and never meets it again */
	st->marker_reached |= st->marker[0] != '\0' && apply_marker_reached(st->apply);
	wanted = stop_requests > 0 || turn || (st->marker_reached && !snapshot_busy(st->snap));

	if (*rc != TM_OK)
		return true;
	if (!wanted || apply_in_source_transaction(st->apply))
		return false;
	*rc = apply_idle(st->apply);
	if (*rc == TM_OK)
		*rc = apply_settle(st->apply); /* what parallel workers have in flight */
	if (*rc == TM_OK && turn && stop_requests == 0) {
		st->restart_now = true;
		st->unstreamed = !st->unstreamed;
		log_info("the stream starts again %s streaming", st->unstreamed ? "without" : "with");
		return true;
	}
	if (*rc != TM_OK || stop_requests > 0)
		return true;
	/* tables registered by the target transactions just committed: the
	 * snapshot's last look at the catalog may have come before their
	 * commit; it looks again, now that everything is committed */
	snapshot_poll_soon(st->snap);
	*rc = snapshot_poll(st->snap);
	if (*rc != TM_OK || snapshot_busy(st->snap))
		return *rc != TM_OK;
	if (st->key_order_later) /* caught up: what was left for now is judged */
		*rc = key_order_unknown_ones(st, false);
	return true;
}

static int
stream_loop(run_state *st)
{
	int rc = TM_OK;

	while (rc == TM_OK && !session_done(st, &rc) && stop_requests < 2) {
		const char *buf;
		size_t len;
		double busy = 0;

		/* a commit's answer from the target ends the wait too: confirmed
		 * at once, the position and the marker follow it */
		source_wake_on(st->stream, apply_wake_fd(st->apply));
		rc = source_read(st->stream, 500, &buf, &len);
		if (st->metrics != NULL)
			busy = clock_now_s(); /* from here on, the apply's work */
		if (rc == TM_OK && len > 0)
			rc = handle_copydata(st, buf, len);
		if (rc == TM_OK && (len == 0 || stop_requests > 0 || !source_has_pending(st->stream)))
			rc = apply_idle(st->apply);
		if (rc == TM_OK && len == 0)
			rc = apply_settle(st->apply); /* nothing came: the workers' commits */
		if (rc == TM_OK)
			rc = send_feedback(st, false);
		if (rc == TM_OK)
			rc = snapshot_poll(st->snap);
		if (rc == TM_OK && !apply_in_transaction(st->apply))
			rc = resync_watch_poll(&st->resync, st->sink, st->opts->slot, false);
		if (rc == TM_OK && !apply_in_transaction(st->apply))
			rc = pub_watch_poll(&st->pub, st->control, st->sink, st->snap, st->metrics);
		if (rc == TM_OK)
			rc = slot_watch_poll(&st->slot_wal, st->control, st->metrics);
		log_progress(st, false);
		if (st->metrics != NULL) {
			double now = clock_now_s();

			metrics_add(st->metrics, METRICS_APPLY_BUSY_US, (uint64_t) ((now - busy) * 1e6));
			update_metrics(st, now);
		}
	}
	if (rc == TM_OK && stop_requests >= 2 && apply_in_transaction(st->apply))
		log_warn("second stop signal: the open target transaction is rolled back; it is applied "
		         "again at the next start");
	return rc;
}

/* The target catalog's migration version on the apply connection: 0 when
 * there is no catalog. */
static int
catalog_version(sink *sk, int *version)
{
	PGresult *r = NULL;
	bool exists = false;
	int rc = catalog_target_has(sk, "tidemark", "migrations", &exists);

	*version = 0;
	if (rc != TM_OK || !exists)
		return rc;
	rc = sink_query(sk, "reading the catalog's version",
	                "SELECT coalesce(max(version), 0) FROM tidemark.migrations", 0, NULL, &r);
	if (rc == TM_OK)
		*version = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

/* A catalog made by an older tidemark gets the migrations it lacks (what
 * `setup` would apply), once per run. A target without a catalog is left
 * alone: the session says to run setup. */
static int
catalog_upgrade(run_state *st)
{
	int version = 0;
	int rc;

	if (st->migrated)
		return TM_OK;
	rc = catalog_version(st->sink, &version);
	if (rc == TM_OK && version > 0 && version < migrate_latest(PGCONN_TARGET))
		rc = migrate_apply_to(st->opts->target, PGCONN_TARGET);
	st->migrated = rc == TM_OK;
	return rc;
}


/* A table made UNLOGGED on the source (or a partition of one): its
 * changes leave the WAL, so the target keeps the rows of the copy its SET
 * UNLOGGED made. Its SET LOGGED makes it be copied again (schema_sync.c). */
static void
warn_unlogged(const source_unlogged *u)
{
	const char *name = u->name, *root = u->partition_of;
	bool part = root[0] != '\0';

	log_warn("source: %s%s%s%s is UNLOGGED there: its changes are not written to the WAL, so "
	         "none reach the target, which holds the rows of the copy made when it became "
	         "unlogged. Fix: ALTER TABLE %s SET LOGGED on the source (%s is then copied again)",
	         name, part ? ", a partition of " : "", root, part ? "," : "", name,
	         part ? root : "it");
}

/* A capture installed by an older tidemark lacks the newer one's fixes:
 * said once per run, with the fix (setup runs the source migrations; run's
 * role may not). */
static int
warn_old_capture(run_state *st)
{
	int version = -1, latest = migrate_latest(PGCONN_SOURCE);
	int rc = source_query_capture_version(st->control, &version);
	char name[48];

	if (rc == TM_OK && version >= 0 && version < latest)
		log_warn("source: the DDL capture installed there is %s, older than this tidemark's "
		         "(%d): the fixes of the later ones are not in force. Fix: run `tidemark setup` "
		         "again with the same tables, as a superuser (it installs only what is missing)",
		         source_query_capture_version_name(version, name, sizeof name), latest);
	return rc;
}

/* The replicated tables the publication no longer publishes (ALTER
 * PUBLICATION ... DROP TABLE: their changes are not sent, so their target
 * tables fall behind), and those (or their partitions) unlogged on the
 * source: named at the start of each run, with the fix. */
static int
warn_unfollowed(run_state *st)
{
	catalog_table *tables = NULL;
	uint32_t *relids = NULL;
	char **names = NULL;
	source_unlogged *unlogged = NULL;
	int n = 0, m = 0, nunlogged = 0;
	int rc = catalog_load_tables(st->sink, st->opts->slot, &tables, &n);

	relids = catalog_source_relids(tables, rc == TM_OK ? n : 0, &m);
	if (rc == TM_OK && m > 0)
		rc = source_query_unpublished(st->control, st->opts->publication, relids, m, false,
		                              &names);
	for (int i = 0; names != NULL && names[i] != NULL; i++)
		pub_watch_warn_left(st->opts->publication, names[i]);
	if (rc == TM_OK && m > 0)
		rc = source_query_unlogged(st->control, relids, m, &unlogged, &nunlogged);
	for (int i = 0; i < nunlogged; i++)
		warn_unlogged(&unlogged[i]);
	xstrings_free(names);
	source_unlogged_free(unlogged, nunlogged);
	free(relids);
	catalog_tables_free(tables, n);
	return rc;
}

/* Target tables made UNLOGGED by hand, said once per run. One found empty
 * while its source table has rows is copied again: a crash of the target
 * emptied it, and the position stored with the data, which is logged,
 * says its rows are applied. */
static int
check_unlogged(run_state *st)
{
	catalog_unlogged *u = NULL;
	int n = 0;
	int rc = catalog_unlogged_tables(st->sink, st->opts->slot, &u, &n);

	for (int i = 0; rc == TM_OK && i < n; i++) {
		bool has = false;

		if (!st->warned)
			log_warn("target: %s is UNLOGGED: a crash of the target empties it, while the "
			         "position stored with the data says its rows are applied (run then copies "
			         "it again). Fix: ALTER TABLE %s SET LOGGED",
			         u[i].target, u[i].target);
		if (!u[i].empty || u[i].source_relid == 0)
			continue;
		rc = source_query_has_rows(st->control, u[i].source_relid, &has);
		if (rc == TM_OK && has) {
			log_warn("target: %s is empty, as an unlogged table is after a crash of the target, "
			         "and its source table has rows: it is copied again", u[i].target);
			rc = catalog_request_copy(st->sink, u[i].table_id);
		}
	}
	catalog_unlogged_free(u, n);
	return rc;
}

/* At a session's start: histories found again by their names where their
 * oids changed (a target copied with pg_dump); the key order of the tables
 * whose order is not known (registered before it was recorded:
 * migrations/target/005_target_types.sql); unlogged target tables emptied
 * by a crash; and, once per run, the tables registered for an earlier
 * slot, those the publication no longer publishes and those unlogged on
 * the source, named, and a capture older than this tidemark's. */
static int
catalog_at_start(run_state *st)
{
	int version = 0;
	int rc = catalog_version(st->sink, &version);

	if (rc != TM_OK || version < 5)
		return rc; /* no catalog yet: the session says to run setup */
	rc = mode_refind_histories(st->sink, st->opts->slot);
	if (rc == TM_OK)
		rc = key_order_unknown_ones(st, true);
	if (rc == TM_OK)
		rc = check_unlogged(st);
	if (rc == TM_OK && !st->warned)
		rc = catalog_warn_interrupted(st->sink, st->opts->slot);
	if (rc == TM_OK && !st->warned)
		rc = warn_unfollowed(st);
	if (rc == TM_OK && !st->warned)
		rc = warn_old_capture(st);
	st->warned |= rc == TM_OK;
	return rc;
}

/* The --until-caught-up marker, written once into the source's WAL: once
 * it is applied, everything the source had written before it is on the
 * target, and the run ends when no snapshot is pending either. */
static int
write_marker(run_state *st)
{
	char marker[sizeof st->marker];
	int rc;

	if (!st->opts->until_caught_up || st->marker[0] != '\0')
		return TM_OK;
	snprintf(marker, sizeof marker, "caught-up %d %ld", (int) getpid(), (long) time(NULL));
	rc = source_query_emit(st->control, "tidemark.mark", marker, NULL);
	if (rc == TM_OK)
		memcpy(st->marker, marker, sizeof marker);
	return rc;
}

static int
session_open(run_state *st)
{
	const cli_options *o = st->opts;
	snapshot_config sc = {.source = o->source, .target = o->target, .slot = o->slot,
	                      .chunk_rows = o->chunk_rows > 0 ? o->chunk_rows : 20000,
	                      .chunk_bytes = o->chunk_bytes > 0 ? o->chunk_bytes
	                                                        : SNAPSHOT_CHUNK_BYTES_DEFAULT,
	                      .readers = o->snapshot_readers,
	                      .progress_interval = o->progress_interval, .metrics = st->metrics};
	schema_sync_config ssc = {.slot = o->slot, .drop_columns = o->drop_columns,
	                          .drop_tables = o->drop_tables,
	                          .source = {st, source_table_def, source_partitions,
	                                     source_table_name, NULL, NULL, source_publish_table,
	                                     source_publish_joining},
	                          .type_boundary = type_boundary, .boundary_ctx = st,
	                          .metrics = st->metrics};
	apply_config cfg = {o->slot, 5000, 100000, 1000, resolve_table, st, {0}, st->metrics,
	                    !o->no_net_changes, 1, NULL, true, NULL};
	source_options so = {o->source, o->slot, o->publication, LSN_INVALID, 2, false};
	char pos[LSN_TEXT_MAX];
	int rc = pgconn_open(o->source, PGCONN_SOURCE, "control", false, &st->control);

	st->connect_failed = rc != TM_OK;
	/* PostgreSQL 15 or later, wal_level logical, the REPLICATION privilege */
	if (rc == TM_OK && !st->streamed)
		rc = source_query_check_server(st->control);
	if (rc == TM_OK && (rc = sink_open(o->target, "apply", &st->sink)) != TM_OK)
		st->connect_failed = true;
	if (rc == TM_OK)
		sink_set_ddl_lock_wait(st->sink, st->ddl_wait_ms);
	if (rc == TM_OK)
		rc = catalog_check_registered(st->sink, o->slot);
	if (rc == TM_OK)
		rc = catalog_upgrade(st);
	/* this source's pipeline, not another one's position and tables:
	 * before anything is written to either side */
	if (rc == TM_OK)
		rc = pipeline_check((pipeline_target){st->sink, NULL}, o->slot, st->control, o->source,
		                    true);
	/* the target's position against the slot and the source's history */
	if (rc == TM_OK && (rc = consistency_check(st->control, st->sink, o->source, o->slot)) != TM_OK)
		st->connect_failed = PGCONN_IS_RETRY(rc) && !st->streamed;
	if (rc == TM_OK)
		rc = source_query_check_via_root(st->control, o->publication);
	if (rc == TM_OK)
		rc = source_query_check_whole(st->control, o->publication);
	if (rc == TM_OK)
		rc = write_marker(st);
	if (rc == TM_OK)
		rc = catalog_at_start(st);
	if (rc == TM_OK)
		rc = snapshot_new(&sc, st->sink, &st->snap);
	if (rc == TM_OK)
		rc = schema_sync_new(&ssc, st->sink, &st->schema);
	if (rc != TM_OK)
		return rc;
	st->snap_hooks = snapshot_hooks(st->snap);
	cfg.hooks = st->snap_hooks;
	cfg.hooks.on_message = on_message;
	cfg.hooks.message_ctx = st;
	cfg.hooks.before_commit = before_commit;
	cfg.hooks.described = described;
	cfg.hooks.on_registered = registered;
	cfg.hooks.commit_ctx = st;
	cfg.workers = o->no_net_changes ? 1 : o->apply_workers;
	cfg.target = o->target;
	cfg.spool_dir = o->spool_dir;
	rc = apply_new(st->sink, &cfg, &st->apply);
	/* this run's policies, said once: in force while its apply connection lives */
	if (rc == TM_OK)
		rc = policy_record_run(st->sink, o->slot, &st->policies, !st->policies_logged);
	if (rc != TM_OK)
		return rc;
	st->policies_logged = true;
	snapshot_attach(st->snap, st->apply);
	if (st->marker[0] != '\0')
		apply_set_marker(st->apply, st->marker);
	if (st->stop_before != LSN_INVALID)
		apply_stop_before(st->apply, st->stop_before);
	if (st->single_until > apply_committed(st->apply))
		apply_single_until(st->apply, st->single_until);
	if (st->unstreamed)
		apply_watch_commit(st->apply, st->unstreamed_xid);
	so.start = apply_committed(st->apply);
	so.streaming = !o->no_streaming && !st->unstreamed;
	rc = source_open(&so, &st->stream);
	st->connect_failed = PGCONN_IS_RETRY(rc) && rc != PGCONN_RETRY_SLOT_BUSY;
	st->streamed |= rc == TM_OK;
	if (rc == TM_OK)
		sink_set_tick(st->sink, keepalive_tick, st, KEEPALIVE_TICK_MS);
	if (rc == TM_OK)
		metrics_set(st->metrics, METRICS_UP, 1);
	if (rc == TM_OK)
		log_info("streaming from slot \"%s\" at %s", o->slot, lsn_format(so.start, pos));
	return rc;
}

static void
session_close(run_state *st)
{
	metrics_set(st->metrics, METRICS_UP, 0);
	metrics_rollback(st->metrics); /* counts of a target transaction not committed */
	if (st->sink != NULL)
		sink_set_tick(st->sink, NULL, NULL, 0); /* the stream goes first */
	source_close(st->stream);
	st->stream = NULL; /* the sink's tick must not use it any more */
	snapshot_free(st->snap);
	schema_sync_free(st->schema);
	st->schema = NULL;
	apply_free(st->apply);
	sink_close(st->sink);
	PQfinish(st->control);
	st->stream = NULL;
	st->apply = NULL;
	st->snap = NULL;
	st->sink = NULL;
	st->control = NULL;
}

static int
run_session(run_state *st)
{
	int rc = session_open(st);
	/* progress is what the target committed: a session that fails again
	 * on the same transaction (a lock the target's readers hold, say)
	 * waits longer each time, however much it received before it */
	bool opened = rc == TM_OK;
	tm_lsn began = opened ? apply_committed(st->apply) : 0;

	pgoutput_reader_init(&st->reader, 2);
	st->last_progress = st->last_advance = clock_now_s();
	if (rc == TM_OK)
		rc = stream_loop(st);
	if (rc == TM_OK)
		log_progress(st, true);
	if (rc == TM_OK)
		rc = apply_make_durable(st->apply);
	if (rc == TM_OK)
		rc = send_feedback(st, true);
	if (rc == TM_OK)
		rc = resync_watch_poll(&st->resync, st->sink, st->opts->slot, true);
	if (rc == TM_EXIT_POLICY && st->stop_before == LSN_INVALID)
		st->stop_before = apply_current_commit_lsn(st->apply);
	else if (rc == TM_EXIT_POLICY)
		st->stop_before = LSN_INVALID; /* the second pass reached it */
	st->made_progress = opened && apply_committed(st->apply) > began;
	session_close(st);
	return rc;
}

/* ms doubled, at most max */
static int
doubled(int ms, int max)
{
	return ms > max / 2 ? max : ms * 2;
}

/* A schema change waits for its table's lock SINK_DDL_LOCK_WAIT_MS at
 * first, so that the table's readers, queued behind it, are held up only
 * that long; twice as long after each target failure of a try that
 * committed nothing (up to DDL_WAIT_MAX_MS), so that it gets the lock in
 * the end from readers that never leave the table free that long. */
static void
next_ddl_wait(run_state *st, int rc)
{
	int was = st->ddl_wait_ms;

	if (st->made_progress)
		st->ddl_wait_ms = SINK_DDL_LOCK_WAIT_MS;
	else if (rc == PGCONN_RETRY_TARGET)
		st->ddl_wait_ms = doubled(was, DDL_WAIT_MAX_MS);
	if (st->ddl_wait_ms > was)
		log_info("a schema change now waits up to %d s for its table's lock",
		         st->ddl_wait_ms / 1000);
}

static void
backoff_sleep(int ms)
{
	struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};

	while (stop_requests == 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* After a failure on the target, the next session applies what this one
 * had received one source transaction per target transaction (see
 * apply_single_until): a group that failed as a whole (the target's lock
 * table or memory too small for it) is not tried whole again and again. */
static void
one_by_one_after(run_state *st, int rc)
{
	char pos[LSN_TEXT_MAX];

	if (rc != PGCONN_RETRY_TARGET || st->received <= st->single_until)
		return;
	st->single_until = st->received;
	log_info("the next session applies the source transactions up to %s one per target "
	         "transaction, as they were committed", lsn_format(st->single_until, pos));
}

int
cmd_run(const cli_options *o)
{
	run_state st;
	int backoff_ms = 500;
	double busy_since = 0;
	int rc = cli_require(o, true, true);

	if (rc != TM_OK)
		return rc;
	memset(&st, 0, sizeof st);
	rc = policy_settings_parse(o->policy, o->table_policies, o->ntable_policies,
	                           "--table-policy", false, &st.policies);
	if (rc != TM_OK) {
		policy_settings_free(&st.policies);
		return rc;
	}
	st.opts = o;
	st.ddl_wait_ms = SINK_DDL_LOCK_WAIT_MS;
	/* before streaming: a port in use is said at once */
	if (o->metrics_listen != NULL &&
	    (rc = metrics_start(o->metrics_listen, TIDEMARK_VERSION, &st.metrics)) != TM_OK) {
		policy_settings_free(&st.policies);
		return rc;
	}
	arena_init(&st.scratch, 64 * 1024);
	pub_watch_init(&st.pub, o->publication, o->slot);
	slot_watch_init(&st.slot_wal, o->slot);
	install_signals();
	for (;;) {
		st.made_progress = false;
		rc = run_session(&st);
		if (rc == TM_OK && st.restart_now && stop_requests == 0) {
			st.restart_now = false;
			continue;
		}
		if (rc == TM_EXIT_POLICY && st.stop_before != LSN_INVALID) {
			/* apply what came before the stopping transaction, then stop */
			log_info("applying the transactions before the stop");
			continue;
		}
		metrics_error(st.metrics, rc);
		if (!PGCONN_IS_RETRY(rc) || stop_requests > 0)
			break;
		if (st.connect_failed && !st.streamed) {
			/* a wrong host or port, a server down: said at once */
			log_error("run could not connect (above); it retries only connections lost once "
			          "it streams. Fix: check the connection string and that the server runs, "
			          "then start it again");
			break;
		}
		if (rc != PGCONN_RETRY_SLOT_BUSY)
			busy_since = 0;
		else if (busy_since == 0)
			busy_since = clock_now_s();
		else if (clock_now_s() - busy_since > SLOT_BUSY_LIMIT_S) {
			log_error("the replication slot stayed in use by another process for %d s: giving up",
			          SLOT_BUSY_LIMIT_S);
			break;
		}
		backoff_ms = st.made_progress ? 500 : doubled(backoff_ms, BACKOFF_MAX_MS);
		next_ddl_wait(&st, rc);
		one_by_one_after(&st, rc);
		log_warn("resuming from the target's position in %.1f s", backoff_ms / 1000.0);
		metrics_retry(st.metrics, rc);
		backoff_sleep(backoff_ms);
	}
	arena_free(&st.scratch);
	policy_settings_free(&st.policies);
	pub_watch_free(&st.pub);
	metrics_free(st.metrics);
	if (PGCONN_IS_RETRY(rc) && stop_requests > 0)
		rc = TM_OK; /* stopped by a signal while retrying */
	if (rc == TM_OK && o->until_caught_up && stop_requests == 0)
		log_info("caught up: everything the source had written at start is applied");
	return rc;
}
