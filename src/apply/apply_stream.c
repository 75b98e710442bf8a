/*
 * apply_stream.c: transactions the source streams while they are in
 * progress (apply.h). pgoutput sends such a transaction in blocks (Stream
 * Start, its changes since the last block, Stream Stop) between the
 * transactions that commit meanwhile, then Stream Commit or Stream Abort
 * at its end. Each change carries the xid of the subtransaction that made
 * it; a Stream Abort names the top transaction and the subtransaction
 * rolled back (the same xid: all of it).
 *
 * Every data message of the transaction is appended to its spool (spool.h)
 * as it came. While the transaction is "direct", its changes are also
 * applied as they come on the stream connection (a->stream_sink), in a
 * target transaction of its own:
 *   - before a block is applied, the group open on the apply's own
 *     connection commits and the parallel workers' groups are settled, so
 *     that no earlier transaction's row locks stand in its way;
 *   - within a block, a->sink and a->net are the stream's (stream_enter),
 *     and the changes are the usual net changes (apply_net.c), flushed at
 *     the block's end;
 *   - a subtransaction's first change makes a savepoint (after a flush);
 *     its Stream Abort rolls back to it;
 *   - at Stream Commit the groups before it commit first, then it stores
 *     its end position and commits: source order and an exact position.
 * The first change it cannot apply that way (stream_direct_change's
 * reasons), or a barrier of the apply's own stream (apply_stream_barrier),
 * rolls that target transaction back: the transaction is then applied at
 * its Stream Commit from its spool through apply_message, as a transaction
 * sent whole at its commit would have been (its Relation messages, schema
 * changes, windows, quarantine and all).
 *
 * Ownership: the apply owns its streams (a->streams), each its spool and
 * subtransaction list; the stream connection and its net set are the
 * apply's, kept for the next transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply_int.h"
#include "exitcode.h"
#include "log.h"
#include "pgconn.h"
#include "spool.h"
#include "xalloc.h"

/* A subtransaction of a streamed transaction, from its first change. */
typedef struct stream_sub {
	uint32_t xid;
	uint64_t offset;     /* the spool's size before that change */
	bool savepoint;      /* a savepoint was made for it on the stream connection */
} stream_sub;

struct apply_stream {
	uint32_t xid;
	spool *file;         /* owned */
	bool direct;         /* also applied as it comes (see above) */
	bool messaged;       /* a tidemark message is among its messages */
	int nsubs, capsubs;
	stream_sub *subs;    /* owned, in the order of their first change */
	int nsavepoints;     /* of them, with a savepoint */
	long long inserts, updates, deletes; /* applied as they came */
	apply_stream *next;
};

/* ---- the list ---- */

static apply_stream *
stream_find(const apply *a, uint32_t xid)
{
	for (apply_stream *t = a->streams; t != NULL; t = t->next)
		if (t->xid == xid)
			return t;
	return NULL;
}

static bool
any_direct(const apply *a)
{
	for (const apply_stream *t = a->streams; t != NULL; t = t->next)
		if (t->direct)
			return true;
	return false;
}

static void
stream_free(apply *a, apply_stream *t)
{
	for (apply_stream **p = &a->streams; *p != NULL; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			break;
		}
	if (a->stream_in == t)
		a->stream_in = NULL;
	spool_close(t->file);
	free(t->subs);
	free(t);
}

/* ---- the stream connection ---- */

/* a->sink and a->net become the stream's, for a direct block. */
static void
stream_enter(apply *a)
{
	if (a->stream_swapped)
		return;
	a->own_sink = a->sink;
	a->own_net = a->net;
	apply_use_sink(a, a->stream_sink);
	a->net = a->stream_net;
	a->stream_swapped = true;
}

static void
stream_leave(apply *a)
{
	if (!a->stream_swapped)
		return;
	apply_use_sink(a, a->own_sink);
	a->net = a->own_net;
	a->stream_swapped = false;
}

void
apply_stream_free(apply *a)
{
	stream_leave(a); /* a session that ended inside a block */
	while (a->streams != NULL)
		stream_free(a, a->streams);
	sink_close(a->stream_sink); /* a transaction open on it rolls back */
	a->stream_sink = NULL;
	net_free(a->stream_net);
	a->stream_net = NULL;
}

/* Rolls t's target transaction back, if it has one. */
static void
rollback_direct(apply *a, apply_stream *t)
{
	if (!t->direct)
		return;
	stream_leave(a);
	if (a->stream_net != NULL)
		net_clear(a->stream_net);
	if (a->stream_sink != NULL)
		sink_rollback(a->stream_sink);
	t->direct = false;
	t->nsavepoints = 0;
	for (int i = 0; i < t->nsubs; i++)
		t->subs[i].savepoint = false;
}

/* t is applied from its spool at its commit instead (why: said once). */
static void
demote(apply *a, apply_stream *t, const char *why)
{
	if (!t->direct)
		return;
	rollback_direct(a, t);
	log_info("transaction %u, streamed while in progress: %s; it is applied at its commit",
	         t->xid, why);
}

/* rc of work on the stream connection for t: a statement the target
 * refused there (an intermediate state a unique index of the target's own
 * does not take, say) sends t to its spool, to be applied at its commit
 * the usual way; anything else is returned. */
static int
direct_result(apply *a, apply_stream *t, int rc)
{
	char *failure, why[300];

	if (rc != TM_EXIT_TARGET || a->stream_sink == NULL ||
	    (failure = sink_take_failure(a->stream_sink)) == NULL)
		return rc;
	snprintf(why, sizeof why, "the target refused a statement of it (%.200s)", failure);
	free(failure);
	demote(a, t, why);
	return TM_OK;
}

int
apply_stream_barrier(apply *a, const char *why)
{
	for (apply_stream *t = a->streams; t != NULL; t = t->next)
		demote(a, t, why);
	return TM_OK;
}

void
apply_stream_stalled(void *ctx)
{
	apply *a = ctx;

	if (!a->stream_swapped)
		apply_stream_barrier(a, "the apply's own connection waits for a lock it may hold");
}

int
apply_stream_reset_statements(apply *a)
{
	return a->stream_sink != NULL && !sink_in_transaction(a->stream_sink)
	               ? sink_reset_statements(a->stream_sink)
	               : TM_OK;
}

/* The stream connection, opened on first use, in a transaction. */
static int
stream_sink_ready(apply *a)
{
	int rc = TM_OK;

	if (a->stream_sink == NULL) {
		rc = sink_open(a->cfg.target, "apply stream", &a->stream_sink);
		if (rc != TM_OK)
			return rc;
		sink_tick_like(a->stream_sink, a->sink);
		sink_keep_failures(a->stream_sink); /* what it refuses goes the usual way */
		a->stream_net = net_new();
	}
	if (!sink_in_transaction(a->stream_sink))
		rc = sink_begin(a->stream_sink);
	return rc;
}

/* ---- Stream Start and Stop ---- */

static int
stream_new(apply *a, uint32_t xid, apply_stream **out)
{
	apply_stream *t = xcalloc(1, sizeof *t);
	int rc = spool_open(a->cfg.spool_dir, &t->file);

	if (rc != TM_OK) {
		free(t);
		return rc;
	}
	t->xid = xid;
	/* one at a time as it comes; the stop policy decides at Begin */
	t->direct = a->cfg.stream_direct && a->net != NULL && a->cfg.target != NULL &&
	            a->stop_before == LSN_INVALID && !any_direct(a);
	t->next = a->streams;
	a->streams = t;
	*out = t;
	return TM_OK;
}

static int
stream_start(apply *a, const pgoutput_msg *m)
{
	uint32_t xid = m->u.stream_start.xid;
	apply_stream *t = stream_find(a, xid);
	int rc = TM_OK;

	if (a->in_source_tx || a->stream_in != NULL) {
		log_error("internal: Stream Start of transaction %u inside another transaction", xid);
		return TM_EXIT_INTERNAL;
	}
	if (t == NULL && !m->u.stream_start.first_segment) {
		log_error("source: transaction %u is streamed from its middle; resuming from the "
		          "target's position", xid);
		return PGCONN_RETRY_SOURCE;
	}
	if (t == NULL && (rc = stream_new(a, xid, &t)) != TM_OK)
		return rc;
	a->stream_in = t;
	if (!t->direct)
		return TM_OK;
	/* no earlier transaction's row locks in its way (a long wait for them
	 * may have sent this one to its spool: apply_stream_stalled) */
	rc = apply_idle(a);
	if (rc == TM_OK)
		rc = apply_settle(a);
	if (rc == TM_OK && t->direct)
		rc = direct_result(a, t, stream_sink_ready(a));
	if (rc == TM_OK && t->direct)
		stream_enter(a);
	return rc;
}

static int
stream_stop(apply *a)
{
	int rc = TM_OK;

	if (a->stream_in != NULL && a->stream_in->direct) /* the target works on it meanwhile */
		rc = direct_result(a, a->stream_in, apply_net_flush(a));
	stream_leave(a);
	a->stream_in = NULL;
	return rc;
}

/* ---- changes as they come ---- */

/* Are t's columns r's, in text? */
static bool
tuple_fits(const apply_rel *r, const pgoutput_tuple *t)
{
	if (t->ncols != r->ncols)
		return false;
	for (int i = 0; i < t->ncols; i++)
		if (t->values[i].kind == PGOUTPUT_VALUE_BINARY)
			return false;
	return true;
}

/* The relation of a change applied as it comes: NULL with *why when the
 * change cannot be (the transaction goes back to its spool), NULL without
 * when it is not replicated (nothing to do). lsn: the change's position,
 * before the transaction's commit. */
static apply_rel *
direct_rel(apply *a, uint32_t relid, tm_lsn lsn, const pgoutput_tuple *t, const char **why)
{
	apply_rel *r = apply_find_rel(a, relid);

	if (r == NULL)
		*why = "a change of a relation not described";
	else if (r->table == NULL && !r->unmatched)
		return NULL; /* not replicated */
	else if (r->table == NULL)
		*why = "a change of a table that may join at its commit";
	else if (!r->keys_ok || r->table->nkeys == 0)
		*why = "a change of a table without its key";
	else if (r->uncaptured)
		*why = "a change of a table whose columns differ from its schema version";
	else if (apply_shaped(r))
		*why = "a change of a table kept in another mode than mirror";
	else if (r->nchecked > 0)
		*why = "values to check against the target's types";
	else if (lsn <= r->table->registered_lsn)
		*why = "a table that joined after it began";
	else if (apply_watching(a, r))
		*why = "a table being copied";
	else if (!tuple_fits(r, t))
		*why = "a row that does not match its relation";
	else
		return r;
	return NULL;
}

static bool
same_relation(const apply_rel *r, const pgoutput_msg *m)
{
	if (r->ncols != m->u.relation.ncols || r->replident != m->u.relation.replident ||
	    strcmp(r->nspname, m->u.relation.nspname) != 0 ||
	    strcmp(r->relname, m->u.relation.relname) != 0)
		return false;
	for (int i = 0; i < r->ncols; i++)
		if (strcmp(r->colnames[i], m->u.relation.cols[i].name) != 0 ||
		    r->coltypes[i] != m->u.relation.cols[i].type_oid ||
		    r->colkeys[i] != m->u.relation.cols[i].is_key)
			return false;
	return true;
}

/*
 * A Relation message of the transaction: the description the apply has
 * must be this one. One the apply lacks is taken: pgoutput describes the
 * relation again before any later change outside this transaction, as
 * long as it has not described it so in the session (and after this
 * transaction commits, it counts the stream's description as sent).
 */
static int
direct_relation(apply *a, const pgoutput_msg *m, const char **why)
{
	apply_rel *r = apply_find_rel(a, m->u.relation.relid);

	if (r == NULL)
		return apply_relation(a, m);
	if (!same_relation(r, m))
		*why = "a relation described otherwise (a schema change)";
	return TM_OK;
}

static int
put(apply *a, apply_rel *r, net_kind kind, const pgoutput_tuple *t, const bool *present,
    const char **why)
{
	bool conflict = false;
	int rc = apply_net_put(a, r, kind, t, present, &conflict);

	if (conflict)
		*why = "an update of a row it deleted";
	return rc;
}

static int
direct_update(apply *a, apply_stream *t, const pgoutput_msg *m, tm_lsn lsn, arena *scratch,
              const char **why)
{
	const pgoutput_tuple *newt = &m->u.update.newtup, *oldt = &m->u.update.oldtup;
	apply_rel *r = direct_rel(a, m->u.update.relid, lsn, newt, why);
	bool moved;
	int rc;

	if (r == NULL)
		return TM_OK;
	if (m->u.update.old_kind != 0 && !tuple_fits(r, oldt)) {
		*why = "a row that does not match its relation";
		return TM_OK;
	}
	moved = m->u.update.old_kind != 0 && apply_key_differs(r, oldt, newt);
	t->updates++;
	if (apply_has_unchanged(newt)) {
		bool *present = arena_alloc(scratch, sizeof(bool) * (size_t) (r->ncols + 1));

		if (moved) {
			*why = "a key change that left unchanged TOAST values unsent";
			return TM_OK;
		}
		for (int i = 0; i < r->ncols; i++)
			present[i] = newt->values[i].kind != PGOUTPUT_VALUE_UNCHANGED;
		return put(a, r, NET_PARTIAL, newt, present, why);
	}
	if (moved && (rc = put(a, r, NET_DELETE, oldt, NULL, why)) != TM_OK)
		return rc;
	return put(a, r, NET_ROW, newt, NULL, why);
}

static bool
is_tidemark_message(const pgoutput_msg *m)
{
	return m->kind == PGOUTPUT_MESSAGE && (m->u.message.flags & PGOUTPUT_MESSAGE_TRANSACTIONAL) &&
	       strncmp(m->u.message.prefix, "tidemark.", 9) == 0;
}

/* One data message of a direct transaction, applied; *why set when it
 * cannot be (nothing of it sent). */
static int
direct_change(apply *a, apply_stream *t, const pgoutput_msg *m, tm_lsn lsn, arena *scratch,
              const char **why)
{
	apply_rel *r;

	switch (m->kind) {
	case PGOUTPUT_RELATION:
		return direct_relation(a, m, why);
	case PGOUTPUT_INSERT:
		if ((r = direct_rel(a, m->u.insert.relid, lsn, &m->u.insert.newtup, why)) == NULL)
			return TM_OK;
		t->inserts++;
		return put(a, r, NET_ROW, &m->u.insert.newtup, NULL, why);
	case PGOUTPUT_UPDATE:
		return direct_update(a, t, m, lsn, scratch, why);
	case PGOUTPUT_DELETE:
		if ((r = direct_rel(a, m->u.delete.relid, lsn, &m->u.delete.oldtup, why)) == NULL)
			return TM_OK;
		t->deletes++;
		return put(a, r, NET_DELETE, &m->u.delete.oldtup, NULL, why);
	case PGOUTPUT_TRUNCATE:
		*why = "a TRUNCATE";
		return TM_OK;
	case PGOUTPUT_MESSAGE:
		if (is_tidemark_message(m))
			*why = "a schema change or another message of tidemark's";
		return TM_OK;
	default:
		return TM_OK;
	}
}

/* A subtransaction's first change: where its spool part starts, and for a
 * direct transaction a savepoint (after the changes held before it). */
static int
note_sub(apply *a, apply_stream *t, uint32_t xid)
{
	stream_sub *s;
	int rc = TM_OK;

	for (int i = t->nsubs - 1; i >= 0; i--)
		if (t->subs[i].xid == xid)
			return TM_OK;
	if (t->nsubs == t->capsubs) {
		t->capsubs = t->capsubs > 0 ? 2 * t->capsubs : 8;
		t->subs = realloc(t->subs, sizeof *t->subs * (size_t) t->capsubs);
		if (t->subs == NULL)
			abort();
	}
	s = &t->subs[t->nsubs++];
	*s = (stream_sub){xid, spool_size(t->file), false};
	if (!t->direct)
		return TM_OK;
	if (t->nsavepoints >= APPLY_STREAM_SAVEPOINTS) {
		demote(a, t, "more subtransactions than a target transaction should hold");
		return TM_OK;
	}
	rc = apply_net_flush(a);
	if (rc == TM_OK)
		rc = sink_send_static(a->stream_sink, "SAVEPOINT tidemark_sub");
	s->savepoint = rc == TM_OK;
	t->nsavepoints += s->savepoint;
	return direct_result(a, t, rc);
}

/* A message between Stream Start and Stop. */
static int
stream_data(apply *a, const pgoutput_msg *m, const char *raw, size_t len, tm_lsn lsn,
            arena *scratch)
{
	apply_stream *t = a->stream_in;
	const char *why = NULL;
	int rc = TM_OK;

	if (t == NULL) {
		log_error("internal: a streamed %s outside a Stream Start", pgoutput_kind_name(m->kind));
		return TM_EXIT_INTERNAL;
	}
	if (m->kind == PGOUTPUT_TYPE || m->kind == PGOUTPUT_ORIGIN)
		return TM_OK; /* not applied (apply_message) */
	if (m->stream_xid != t->xid && (rc = note_sub(a, t, m->stream_xid)) != TM_OK)
		return rc;
	if ((rc = spool_append(t->file, raw, len)) != TM_OK)
		return rc;
	t->messaged |= is_tidemark_message(m);
	if (!t->direct)
		return TM_OK;
	rc = direct_result(a, t, direct_change(a, t, m, lsn, scratch, &why));
	if (rc == TM_OK && why != NULL)
		demote(a, t, why);
	return rc;
}

/* ---- Stream Abort ---- */

/* Cuts t's spool back to off; the Relation messages cut are written again:
 * pgoutput describes a relation once per streamed transaction, and later
 * changes of the relation rely on that description. */
static int
spool_cut(apply_stream *t, uint64_t off)
{
	spool *keep = NULL;
	const char *d;
	size_t n;
	bool end = false;
	int rc = spool_open(NULL, &keep);

	if (rc == TM_OK)
		rc = spool_seek(t->file, off);
	while (rc == TM_OK && (rc = spool_next(t->file, &d, &n, &end)) == TM_OK && !end)
		if (n > 0 && d[0] == PGOUTPUT_RELATION)
			rc = spool_append(keep, d, n);
	if (rc == TM_OK)
		rc = spool_truncate(t->file, off);
	if (rc == TM_OK)
		rc = spool_seek(keep, 0);
	while (rc == TM_OK && (rc = spool_next(keep, &d, &n, &end)) == TM_OK && !end)
		rc = spool_append(t->file, d, n);
	spool_close(keep);
	return rc;
}

/* Back to where subtransaction i began. The savepoints, all named alike,
 * are undone and released from the latest down to i's own, so that the
 * server's stack of them stays the list's. */
static int
sub_abort(apply *a, apply_stream *t, int i)
{
	int rc = spool_cut(t, t->subs[i].offset);
	int undo = 0;

	for (int j = i; t->direct && j < t->nsubs; j++)
		undo += t->subs[j].savepoint;
	for (int j = 0; rc == TM_OK && j < undo; j++) {
		rc = sink_send_static(a->stream_sink, "ROLLBACK TO SAVEPOINT tidemark_sub");
		if (rc == TM_OK)
			rc = sink_send_static(a->stream_sink, "RELEASE SAVEPOINT tidemark_sub");
	}
	t->nsavepoints -= undo;
	t->nsubs = i;
	return undo > 0 ? direct_result(a, t, rc) : rc;
}

static int
stream_abort(apply *a, const pgoutput_msg *m)
{
	apply_stream *t = stream_find(a, m->u.stream_abort.xid);
	uint32_t sub = m->u.stream_abort.subxid;

	if (t == NULL)
		return TM_OK;
	if (sub == t->xid) {
		rollback_direct(a, t);
		stream_free(a, t);
		return TM_OK;
	}
	if (t->messaged) {
		/* the messages carry the top transaction's xid: those of the
		 * subtransaction are not known */
		log_info("transaction %u, streamed while in progress, rolled back a subtransaction "
		         "after a message of tidemark's (a DDL in a savepoint): the stream starts again "
		         "without streaming until it is applied", t->xid);
		a->restart_unstreamed = true;
		a->restart_xid = t->xid;
		stream_free(a, t); /* (it was not direct: it had a tidemark message) */
		return TM_OK;
	}
	for (int i = 0; i < t->nsubs; i++)
		if (t->subs[i].xid == sub) {
			log_info("transaction %u, streamed while in progress: the streamed rows of a "
			         "subtransaction rolled back are dropped%s", t->xid,
			         t->direct ? " (rolled back to its savepoint on the target)" : "");
			return sub_abort(a, t, i);
		}
	return TM_OK; /* no change of it was sent */
}

/* ---- Stream Commit ---- */

/* t applied as it came (the groups before it committed): it commits, with
 * its position. */
static int
direct_commit(apply *a, apply_stream *t, const pgoutput_msg *m)
{
	apply_done g = {m->u.stream_commit.end_lsn, m->u.stream_commit.commit_time, {0}, false};
	tm_lsn wal_end = LSN_INVALID;
	int rc = catalog_save_progress(a->stream_sink, a->cfg.slot, g.end, g.commit_time);

	if (rc == TM_OK)
		rc = sink_commit(a->stream_sink, &wal_end);
	if (rc != TM_OK)
		return rc;
	if (a->cfg.hooks.on_commit != NULL)
		a->cfg.hooks.on_commit(a->cfg.hooks.ctx, t->xid, m->u.stream_commit.commit_lsn);
	g.counts.txs = 1;
	g.counts.changes = t->inserts + t->updates + t->deletes;
	metrics_stage(a->cfg.metrics, METRICS_ROWS_INSERTED, (uint64_t) t->inserts);
	metrics_stage(a->cfg.metrics, METRICS_ROWS_UPDATED, (uint64_t) t->updates);
	metrics_stage(a->cfg.metrics, METRICS_ROWS_DELETED, (uint64_t) t->deletes);
	metrics_stage(a->cfg.metrics, METRICS_SOURCE_TXS, 1);
	metrics_stage(a->cfg.metrics, METRICS_STREAMED_DIRECT, 1);
	metrics_add(a->cfg.metrics, METRICS_TARGET_TXS, 1);
	metrics_commit(a->cfg.metrics);
	apply_group_committed(a, &g, wal_end);
	a->stream_direct++;
	log_info("transaction %u, streamed while in progress, committed: %lld changes applied "
	         "as they came", t->xid, (long long) g.counts.changes);
	return TM_OK;
}

/* t from its spool, as a transaction sent whole at its commit. */
static int
replay(apply *a, apply_stream *t, const pgoutput_msg *m)
{
	pgoutput_msg begin = {.kind = PGOUTPUT_BEGIN}, commit = {.kind = PGOUTPUT_COMMIT}, dm;
	pgoutput_reader rd;
	arena scratch;
	tm_error err;
	const char *d;
	size_t n;
	bool end = false;
	long long count = 0;
	int rc;

	begin.u.begin.final_lsn = m->u.stream_commit.commit_lsn;
	begin.u.begin.commit_time = m->u.stream_commit.commit_time;
	begin.u.begin.xid = t->xid;
	commit.u.commit.flags = m->u.stream_commit.flags;
	commit.u.commit.commit_lsn = m->u.stream_commit.commit_lsn;
	commit.u.commit.end_lsn = m->u.stream_commit.end_lsn;
	commit.u.commit.commit_time = m->u.stream_commit.commit_time;
	pgoutput_reader_init(&rd, 2);
	rd.in_stream = true; /* the spooled messages carry their xid */
	arena_init(&scratch, 64 * 1024);
	rc = apply_message(a, &begin, &scratch);
	if (rc == TM_OK)
		rc = spool_seek(t->file, 0);
	while (rc == TM_OK && (rc = spool_next(t->file, &d, &n, &end)) == TM_OK && !end) {
		if (pgoutput_read_message(&rd, d, n, &scratch, &dm, &err) != 0) {
			log_error("internal: a spooled message of transaction %u does not decode: %s",
			          t->xid, err.msg);
			rc = TM_EXIT_INTERNAL;
		} else
			rc = apply_message(a, &dm, &scratch);
		arena_reset(&scratch);
		count++;
	}
	/* counted with the group that commits it */
	if (rc == TM_OK && !a->skipping)
		metrics_stage(a->cfg.metrics, METRICS_STREAMED_SPOOLED, 1);
	if (rc == TM_OK)
		rc = apply_message(a, &commit, &scratch);
	arena_free(&scratch);
	if (rc == TM_OK) {
		a->stream_spooled++;
		log_info("transaction %u, streamed while in progress, committed: %lld messages "
		         "applied at its commit", t->xid, count);
	}
	return rc;
}

static int
stream_commit(apply *a, const pgoutput_msg *m)
{
	apply_stream *t = stream_find(a, m->u.stream_commit.xid);
	int rc;

	if (t == NULL) {
		log_error("source: Stream Commit of transaction %u, whose start was not seen; resuming "
		          "from the target's position", m->u.stream_commit.xid);
		return PGCONN_RETRY_SOURCE;
	}
	/* applied already, or the stop policy stops before it: the usual path */
	if (t->direct && (m->u.stream_commit.commit_lsn < a->applied ||
	                  (a->stop_before != LSN_INVALID &&
	                   m->u.stream_commit.commit_lsn >= a->stop_before)))
		demote(a, t, "not to be applied now");
	/* the groups before it commit first (a long wait for them may send it
	 * to its spool: apply_stream_stalled) */
	rc = t->direct ? apply_idle(a) : TM_OK;
	if (rc == TM_OK && t->direct)
		rc = apply_settle(a);
	if (rc == TM_OK && t->direct)
		rc = direct_result(a, t, direct_commit(a, t, m));
	if (rc == TM_OK && !t->direct) /* (also one whose commit was refused) */
		rc = replay(a, t, m);
	stream_free(a, t);
	return rc;
}

/* ---- entry ---- */

int
apply_received(apply *a, const pgoutput_msg *m, const char *raw, size_t len, tm_lsn lsn,
               arena *scratch)
{
	switch (m->kind) {
	case PGOUTPUT_STREAM_START: return stream_start(a, m);
	case PGOUTPUT_STREAM_STOP: return stream_stop(a);
	case PGOUTPUT_STREAM_COMMIT: return stream_commit(a, m);
	case PGOUTPUT_STREAM_ABORT: return stream_abort(a, m);
	default:
		if (a->stream_in != NULL)
			return stream_data(a, m, raw, len, lsn, scratch);
		return apply_message(a, m, scratch);
	}
}

bool
apply_stream_restart(const apply *a, uint32_t *xid)
{
	*xid = a->restart_xid;
	return a->restart_unstreamed;
}

void
apply_stream_counts(const apply *a, long *direct, long *spooled)
{
	*direct = a->stream_direct;
	*spooled = a->stream_spooled;
}
