/*
 * apply_workers.c: parallel apply (apply.h). With cfg.workers connections
 * of their own, a group whose changes are all net changes (apply_net.c),
 * and that sent nothing else to the target, goes to a worker connection
 * when it ends instead of the apply's own: there it is sent whole (BEGIN,
 * its net changes, the stored position), and its COMMIT waits only for
 * the group before it, so that the target executes the group while the
 * one before commits and the apply reads the next from the stream.
 *
 * The rules that keep the stream's guarantees:
 *   - commit order: a group's COMMIT is sent only once every earlier group
 *     is confirmed committed (so the committed groups are always the first
 *     ones, whatever instant a crash comes at: the stored position, written
 *     by each group in its own transaction, stays exact); the UPDATE of the
 *     stored position, one row, orders them on the target too;
 *   - keys: the rows of a group whose keys a group not yet confirmed
 *     touched (src/apply/key_set.h) are sent only once every earlier group is
 *     confirmed, since a statement does not see, nor wait for, a row an
 *     open transaction inserted; its other rows go at once, and execute
 *     beside the earlier groups' (no two of them touch one key). Some
 *     tables go by table or with their whole group (apply_apart);
 *   - constraints: a unique, exclusion or foreign-key refusal of a
 *     worker's rows (a constraint added on the target since the tables'
 *     were read can meet rows sent apart) is a retry: the session resumes
 *     from the stored position, one source transaction per target
 *     transaction up to where it had read (sink_set_order_retry);
 *   - everything else (the snapshot's loads, schema changes, catalog
 *     writes, tables without a key or in another mode, quarantine) goes to
 *     the apply's own connection, whose guard first waits until no worker
 *     has a group open, and then begins the group there (lazily: a group
 *     sends BEGIN only once something must go). Such a group commits there,
 *     as without workers.
 */
#include <stdlib.h>
#include <string.h>

#include "apply_int.h"
#include "catalog.h"
#include "exitcode.h"
#include "key_set.h"
#include "log.h"
#include "xalloc.h"

/* One worker connection and the group it has in flight. */
struct apply_worker {
	sink *sink;             /* owned */
	bool busy;              /* a group's COMMIT sent, not yet confirmed */
	key_set keys;           /* the keys of that group */
	apply_done group;       /* what it counts for, once confirmed */
};

/* ---- the main connection's guard ---- */

static int
guard(void *ctx, sink *s)
{
	apply *a = ctx;
	int rc = apply_workers_settle(a);

	if (rc == TM_OK && a->group_open && !a->group_begun) {
		a->group_begun = true;
		rc = sink_begin(s);
	}
	return rc;
}

int
apply_workers_open(apply *a)
{
	int rc = TM_OK;

	if (a->cfg.workers < 2 || a->cfg.target == NULL || a->net == NULL)
		return TM_OK;
	a->workers = xcalloc((size_t) a->cfg.workers, sizeof *a->workers);
	for (int i = 0; rc == TM_OK && i < a->cfg.workers; i++) {
		rc = sink_open(a->cfg.target, "apply worker", &a->workers[i].sink);
		a->nworkers += rc == TM_OK;
	}
	if (rc != TM_OK) {
		apply_workers_close(a);
		return rc;
	}
	sink_set_guard(a->sink, guard, a);
	log_info("apply: %d worker connections apply groups in parallel, committing in source "
	         "order", a->nworkers);
	return TM_OK;
}

void
apply_workers_close(apply *a)
{
	if (a->nworkers > 0 || a->workers != NULL) {
		sink_set_guard(a->sink, NULL, NULL);
		if (a->par_groups > 0)
			log_info("apply: %ld groups applied by the workers, %ld of them with rows held until "
			         "an earlier group committed", a->par_groups, a->par_waits);
	}
	for (int i = 0; i < a->nworkers; i++) {
		sink_close(a->workers[i].sink); /* a group not committed rolls back */
		key_set_free(&a->workers[i].keys);
	}
	free(a->workers);
	a->workers = NULL;
	a->nworkers = 0;
	key_set_free(&a->group_keys);
}

int
apply_reset_statements(apply *a)
{
	/* (the DDL ran on the apply's own connection: no worker is busy) */
	int rc = apply_workers_settle(a);

	if (rc == TM_OK)
		rc = sink_reset_statements(a->sink);
	if (rc == TM_OK)
		rc = apply_stream_reset_statements(a);
	for (int i = 0; rc == TM_OK && i < a->nworkers; i++)
		rc = sink_reset_statements(a->workers[i].sink);
	return rc;
}

bool
apply_workers_busy(const apply *a)
{
	if (a->own_busy != NULL)
		return true;
	for (int i = 0; i < a->nworkers; i++)
		if (a->workers[i].busy)
			return true;
	return false;
}

/* ---- confirmations ---- */

/* Group g, whose COMMIT went on s, committed (*done; not yet when !block
 * and its results have not all come): the position and the counts follow
 * it. */
static int
confirm_group(apply *a, sink *s, const apply_done *g, bool block, bool *done)
{
	tm_lsn wal_end = LSN_INVALID;
	int rc = sink_commit_wait(s, block, done, &wal_end);

	if (rc == TM_OK && *done)
		apply_group_committed(a, g, wal_end);
	return rc;
}

/* The worker's group, confirmed. */
static int
confirm(apply *a, apply_worker *w, bool block)
{
	bool done = false;
	int rc = w->busy ? confirm_group(a, w->sink, &w->group, block, &done) : TM_OK;

	if (done) {
		w->busy = false;
		key_set_clear(&w->keys);
	}
	return rc;
}

int
apply_wake_fd(const apply *a)
{
	if (a->own_busy != NULL)
		return sink_socket(a->own_busy);
	for (int i = 0; i < a->nworkers; i++)
		if (a->workers[i].busy)
			return sink_socket(a->workers[i].sink);
	return -1;
}

void
apply_own_sent(apply *a, sink *s, const apply_done *g)
{
	a->own_busy = s;
	a->own_group = *g;
}

/* The group the own connection committed without waiting, confirmed. */
static int
confirm_own(apply *a, bool block)
{
	bool done = false;
	int rc = a->own_busy != NULL ? confirm_group(a, a->own_busy, &a->own_group, block, &done)
	                             : TM_OK;

	if (done)
		a->own_busy = NULL;
	return rc;
}

static int
confirm_all(apply *a, bool block)
{
	int rc = confirm_own(a, block);

	for (int i = 0; rc == TM_OK && i < a->nworkers; i++)
		rc = confirm(a, &a->workers[i], block);
	return rc;
}

int
apply_workers_settle(apply *a)
{
	return confirm_all(a, true);
}

int
apply_workers_poll(apply *a)
{
	return confirm_all(a, false);
}

/* ---- dispatch ---- */

/* The relations' statements belong to the connection they were prepared
 * on: they are let go before the apply's statements go to another one
 * (and found again in that one's cache when next used). */
void
apply_use_sink(apply *a, sink *s)
{
	for (int i = 0; i < a->nrels; i++)
		apply_rel_release_statements(a, a->rels[i]);
	a->sink = s;
}

bool
apply_workers_take(const apply *a)
{
	return a->nworkers > 0 && a->group_open && !a->group_begun;
}

static apply_worker *
free_worker(apply *a)
{
	for (int i = 0; i < a->nworkers; i++) {
		apply_worker *w = &a->workers[(a->next_worker + i) % a->nworkers];

		if (!w->busy) {
			a->next_worker = (a->next_worker + i + 1) % a->nworkers;
			return w;
		}
	}
	return NULL;
}

/*
 * e's key, among the group's keys; is it one of a group still in flight?
 * How apart a table's rows may go is apply_apart's: a table whose key
 * values can be equal yet spelled apart (numeric 1.0 and 1.00, a
 * case-insensitive collation: the texts of one row before and after its
 * key was respelled, or deleted and inserted again) counts as one key, so
 * that a row upserted under the new spelling never meets the old one still
 * there or locked; a table the target's own constraints tie to other rows
 * holds the whole group, which then goes in its order once every earlier
 * group is committed.
 */
static apply_held
key_of_group(void *ctx, apply_rel *r, const net_entry *e)
{
	apply *a = ctx;
	apply_apart apart = apply_net_apart(a, r);
	uint64_t h = apart == APPLY_APART_KEY ? key_set_hash(e->table, e->key, e->key_len)
	                                      : key_set_hash(e->table, "", 0);

	key_set_add(&a->group_keys, h);
	if (apart == APPLY_APART_GROUP)
		return APPLY_HELD_ALL;
	for (int i = 0; i < a->nworkers; i++)
		if (a->workers[i].busy && key_set_has(&a->workers[i].keys, h))
			return APPLY_HELD_YES;
	return APPLY_HELD_NO;
}

/* What s has queued goes to the server, to execute while every earlier
 * group is confirmed committed. */
static int
push_then_settle(apply *a, sink *s)
{
	int rc = sink_push(s);

	return rc == TM_OK ? apply_workers_settle(a) : rc;
}

/* Rows of the group held: every earlier group committed first; its free
 * rows, sent, execute meanwhile. */
static int
settle_between(void *ctx)
{
	apply *a = ctx;

	a->par_waits++;
	return push_then_settle(a, a->sink);
}

/*
 * The group's statements on w's connection, its COMMIT once every earlier
 * group is confirmed. The rows whose keys no group in flight touched go
 * first and execute beside those groups; the others are sent once every
 * earlier group is confirmed committed (a statement does not see, nor wait
 * for, a row an open transaction inserted), and the stored position's row
 * once every earlier group is committed, after them all (an earlier group's
 * statements may still be on their way, and would wait for that row behind
 * this group, itself waiting for them).
 */
static int
send_group(apply *a, apply_worker *w)
{
	sink *own = a->sink;
	int rc;

	/* its waits answer the source's keepalives as the apply's own do */
	sink_tick_like(w->sink, own);
	/* a constraint added since the tables' constraints were read may
	 * refuse rows sent apart: the group is applied again, in the source's
	 * order (the next session applies one source transaction per target
	 * transaction up to here, with the constraints read anew; a refusal
	 * there is the target's error) */
	sink_set_order_retry(w->sink, a->single_until == LSN_INVALID || a->group_end > a->single_until);
	apply_use_sink(a, w->sink);
	rc = sink_begin(w->sink);
	if (rc == TM_OK)
		rc = apply_net_flush_split(a, key_of_group, settle_between, a);
	apply_use_sink(a, own);
	/* every earlier group (w has none) before the stored position's row
	 * (done already when rows were held), the group's rows executing
	 * meanwhile */
	if (rc == TM_OK)
		rc = push_then_settle(a, w->sink);
	if (rc == TM_OK)
		rc = catalog_save_progress(w->sink, a->cfg.slot, a->group_end, a->group_commit_time);
	if (rc == TM_OK)
		rc = sink_commit_send(w->sink);
	return rc;
}

int
apply_workers_commit(apply *a)
{
	apply_worker *w;
	int rc = TM_OK;

	/* a group the own connection has in flight: its keys are not kept */
	if ((rc = confirm_own(a, true)) != TM_OK)
		return rc;
	key_set_clear(&a->group_keys); /* filled as the group is sent (key_of_group) */
	if ((w = free_worker(a)) == NULL) {
		rc = apply_workers_settle(a);
		w = free_worker(a);
	}
	if (rc == TM_OK)
		rc = send_group(a, w);
	if (rc != TM_OK)
		return rc;
	w->busy = true;
	key_set_clear(&w->keys);
	{
		key_set t = w->keys; /* the group's keys go with it; the set's table is reused */

		w->keys = a->group_keys;
		a->group_keys = t;
	}
	w->group = (apply_done) {a->group_end, a->group_commit_time, a->pending, a->marker_in_group};
	a->par_groups++;
	return TM_OK;
}
