/*
 * apply.c: applying decoded changes (the logic; the wire format is in
 * src/decode/pgoutput.c, the target connection in sink.c): each change's
 * statements, the groups of source transactions, durability. The
 * relations and their statements are in apply_rel.c.
 */
#include "apply.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dml_sql.h"
#include "log.h"
#include "pgconn.h"
#include "strbuf.h"

#include "apply_int.h"
#include "clock.h"

/* ---- durability ---- */

/* A commit whose target WAL ends at target_lsn applied up to source_lsn.
 * When the list is full the newest entry absorbs it (a later, larger
 * position: only the report to the source waits a little longer). */
void
apply_note_commit(apply *a, tm_lsn target_lsn, tm_lsn source_lsn)
{
	if (a->npending == APPLY_PENDING)
		a->npending--;
	a->pending_target[a->npending] = target_lsn;
	a->pending_source[a->npending] = source_lsn;
	a->npending++;
}

/* The stored position may come from a commit not flushed yet (a previous
 * run's): it counts as durable once the target's WAL as of now is. */
static int
note_commit_at_start(apply *a)
{
	tm_lsn now = LSN_INVALID;
	PGresult *r = NULL;
	int rc = sink_query(a->sink, "reading the target's WAL position",
	                    "SELECT pg_current_wal_insert_lsn()", 0, NULL, &r);

	if (rc == TM_OK) {
		lsn_parse(PQgetvalue(r, 0, 0), &now);
		apply_note_commit(a, now, a->applied);
	}
	PQclear(r);
	return rc;
}

int
apply_refresh_durable(apply *a)
{
	tm_lsn flushed;
	int done = 0;
	int rc;

	if (a->npending == 0)
		return TM_OK;
	rc = sink_flushed(a->sink, &flushed);
	if (rc != TM_OK)
		return rc;
	while (done < a->npending && a->pending_target[done] <= flushed) {
		if (a->pending_source[done] > a->durable)
			a->durable = a->pending_source[done];
		done++;
	}
	memmove(a->pending_target, a->pending_target + done, sizeof(tm_lsn) * (size_t) (a->npending - done));
	memmove(a->pending_source, a->pending_source + done, sizeof(tm_lsn) * (size_t) (a->npending - done));
	a->npending -= done;
	return TM_OK;
}

int
apply_make_durable(apply *a)
{
	int rc;

	if (a->npending == 0 || sink_in_transaction(a->sink))
		return TM_OK;
	rc = catalog_flush_progress(a->sink, a->cfg.slot);
	return rc == TM_OK ? apply_refresh_durable(a) : rc;
}

int
apply_new(sink *s, const apply_config *cfg, apply **out)
{
	apply *a = calloc(1, sizeof *a);
	catalog_table *arr = NULL;
	int n = 0;
	int rc;

	if (a == NULL)
		abort();
	a->cfg = *cfg;
	a->sink = s;
	a->constraints_at = clock_coarse_s(); /* each table's read at its first use */
	rc = catalog_read_progress(s, cfg->slot, &a->applied);
	if (rc == TM_OK)
		rc = note_commit_at_start(a);
	if (rc == TM_OK)
		rc = catalog_load_tables(s, cfg->slot, &arr, &n);
	if (rc != TM_OK) {
		free(a);
		return rc;
	}
	for (int i = 0; i < n; i++)
		apply_adopt_table(a, &arr[i]);
	free(arr);
	a->keyless = keyless_new(s);
	a->net = cfg->net_changes ? net_new() : NULL;
	if ((rc = apply_workers_open(a)) != TM_OK) {
		apply_free(a);
		return rc;
	}
	_Static_assert(SINK_DDL_LOCK_WAIT_MS > APPLY_STREAM_STALL_MS,
	               "the stall guard ends a DDL's wait on the run's own transaction first");
	sink_set_stall(s, apply_stream_stalled, a, APPLY_STREAM_STALL_MS);
	*out = a;
	return TM_OK;
}

void
apply_free(apply *a)
{
	if (a == NULL)
		return;
	apply_stream_free(a);
	sink_set_stall(a->sink, NULL, NULL, 0);
	apply_workers_close(a);
	for (int i = 0; i < a->nrels; i++) {
		apply_keep_free(a, a->rels[i]);
		apply_rel_clear(a, a->rels[i]);
		free(a->rels[i]);
	}
	free(a->rels);
	for (int i = 0; i < a->ntables; i++)
		catalog_table_free(a->tables[i]);
	free(a->tables);
	free(a->marker);
	keyless_free(a->keyless);
	apply_net_free(a);
	free(a);
}

/* ---- values ---- */

static int
check_tuple(const apply_rel *r, const pgoutput_tuple *t)
{
	if (t->ncols != r->ncols) {
		log_error("source table %s.%s: a row has %d columns but its relation described %d",
		          r->nspname, r->relname, t->ncols, r->ncols);
		return TM_EXIT_SOURCE;
	}
	for (int i = 0; i < t->ncols; i++)
		if (t->values[i].kind == PGOUTPUT_VALUE_BINARY) {
			log_error("source table %s.%s: binary value received, but text was requested",
			          r->nspname, r->relname);
			return TM_EXIT_SOURCE;
		}
	return TM_OK;
}

/* Text parameters must be NUL-terminated: copied into scratch. */
static const char *
value_param(const pgoutput_value *v, arena *scratch)
{
	if (v->kind != PGOUTPUT_VALUE_TEXT)
		return NULL;
	return arena_strndup(scratch, v->data, v->len);
}

/* (room for the history's parameters after them: apply_shape_params) */
static const char **
tuple_params(const pgoutput_tuple *t, arena *scratch)
{
	const char **p = arena_alloc(scratch,
	                             sizeof(char *) * ((size_t) t->ncols + DML_SQL_HISTORY_PARAMS + 1));

	for (int i = 0; i < t->ncols; i++)
		p[i] = value_param(&t->values[i], scratch);
	return p;
}

static const char **
key_params(const apply_rel *r, const pgoutput_tuple *t, arena *scratch)
{
	const char **p = arena_alloc(scratch,
	                             sizeof(char *) * ((size_t) r->nkeys + DML_SQL_HISTORY_PARAMS + 1));

	for (int k = 0; k < r->nkeys; k++)
		p[k] = value_param(&t->values[r->key_idx[k]], scratch);
	return p;
}

bool
apply_key_differs(const apply_rel *r, const pgoutput_tuple *oldt, const pgoutput_tuple *newt)
{
	for (int k = 0; k < r->nkeys; k++) {
		const pgoutput_value *o = &oldt->values[r->key_idx[k]];
		const pgoutput_value *n = &newt->values[r->key_idx[k]];

		if (o->kind != n->kind || o->len != n->len ||
		    (o->len > 0 && memcmp(o->data, n->data, o->len) != 0))
			return true;
	}
	return false;
}

bool
apply_has_unchanged(const pgoutput_tuple *t)
{
	for (int i = 0; i < t->ncols; i++)
		if (t->values[i].kind == PGOUTPUT_VALUE_UNCHANGED)
			return true;
	return false;
}

/* ---- observers ---- */

bool
apply_watching(const apply *a, const apply_rel *r)
{
	const apply_hooks *h = &a->cfg.hooks;

	return h->watching != NULL && h->watching(h->ctx, r->table->table_id);
}

static void
key_text(const apply_rel *r, const pgoutput_tuple *t, arena *scratch, const char ***key,
         size_t **len)
{
	*key = arena_alloc(scratch, sizeof(char *) * (size_t) (r->nkeys + 1));
	*len = arena_alloc(scratch, sizeof(size_t) * (size_t) (r->nkeys + 1));
	for (int k = 0; k < r->nkeys; k++) {
		const pgoutput_value *v = &t->values[r->key_idx[k]];

		(*key)[k] = v->data ? v->data : "";
		(*len)[k] = v->len;
	}
}

static void
observe_row(apply *a, const apply_rel *r, const pgoutput_tuple *t, arena *scratch)
{
	const char **key;
	size_t *len;

	if (!apply_watching(a, r))
		return;
	key_text(r, t, scratch, &key, &len);
	a->cfg.hooks.on_row(a->cfg.hooks.ctx, r->table->table_id, key, len);
}

static void
observe_partial(apply *a, const apply_rel *r, const pgoutput_tuple *t, arena *scratch)
{
	const char **key, **names, **vals;
	size_t *len, *vlen;
	int n = 0;

	if (!apply_watching(a, r))
		return;
	key_text(r, t, scratch, &key, &len);
	names = arena_alloc(scratch, sizeof(char *) * (size_t) (r->ncols + 1));
	vals = arena_alloc(scratch, sizeof(char *) * (size_t) (r->ncols + 1));
	vlen = arena_alloc(scratch, sizeof(size_t) * (size_t) (r->ncols + 1));
	for (int i = 0; i < r->ncols; i++) {
		const pgoutput_value *v = &t->values[i];

		if (v->kind == PGOUTPUT_VALUE_UNCHANGED)
			continue;
		names[n] = r->colnames[i];
		vals[n] = v->kind == PGOUTPUT_VALUE_TEXT ? v->data : NULL;
		vlen[n++] = v->len;
	}
	a->cfg.hooks.on_partial(a->cfg.hooks.ctx, r->table->table_id, key, len, n, names, vals,
	                        vlen);
}

/* ---- changes ---- */

/* The relation of a change (NULL, logged, when the stream never described
 * it). One without a registered table is looked at again at the commit
 * (apply_join_at_commit). */
static apply_rel *
change_rel(apply *a, uint32_t relid, const pgoutput_msg *m, int *rc)
{
	apply_rel *r = apply_find_rel(a, relid);

	*rc = TM_OK;
	if (r == NULL) {
		log_error("a change refers to relation %u, which the stream never described", relid);
		*rc = TM_EXIT_SOURCE;
	} else if (r->unmatched && !a->skipping) {
		r->changed_in_tx = true;
		apply_keep(a, r, m);
	}
	return r;
}

/* Is a change of r applied? Not when its table is not replicated, or the
 * transaction was applied already or committed before the table joined;
 * when the stream's columns lack the table's key, or differ from its
 * schema version in force, the table is set aside (and the change is not
 * applied: its copy starts again). */
static bool
applies(apply *a, apply_rel *r, int *rc)
{
	*rc = TM_OK;
	if (r->table == NULL || a->skipping || (apply_before_join(a, r->table) && !a->replaying))
		return false;
	if (!r->keys_ok)
		*rc = apply_use_table(a, r, r->table);
	if (*rc == TM_OK && (!r->keys_ok || r->uncaptured))
		*rc = apply_set_aside(a, r);
	return *rc == TM_OK && r->table != NULL && r->keys_ok &&
	       (a->replaying || !apply_before_join(a, r->table));
}

static void
count_change(apply *a, metrics_counter kind)
{
	a->tx_wrote = true;
	a->group_changes++;
	a->pending.changes++;
	metrics_stage(a->cfg.metrics, kind, 1);
}

/* ---- tables without a key (keyless.h) ---- */

static bool
is_keyless(const apply_rel *r)
{
	return r->table != NULL && r->table->nkeys == 0;
}

static keyless_mode
keyless_mode_of(const apply *a, const apply_rel *r)
{
	const apply_hooks *h = &a->cfg.hooks;

	return h->keyless_mode == NULL ? KEYLESS_APPLY
	                               : h->keyless_mode(h->ctx, r->table->table_id, r->table->state);
}

static const char *
rel_display(const apply_rel *r, arena *scratch)
{
	strbuf sb = STRBUF_INIT;
	const char *out;

	strbuf_append_qualified(&sb, r->nspname, r->relname);
	out = arena_strndup(scratch, sb.data, sb.len);
	strbuf_free(&sb);
	return out;
}

static keyless_change
keyless_of(const apply_rel *r, char op, arena *scratch)
{
	keyless_change c = {r->table->table_id, r->table->target_schema, r->table->target_table,
	                    rel_display(r, scratch), r->ncols, (const char *const *) r->colnames,
	                    op, NULL, NULL, NULL, NULL};

	return c;
}

/* A change of a table without a key: applied by its whole old row, kept
 * for the copy under way, or skipped (the copy to come holds it). */
static int
keyless_change_rows(apply *a, const apply_rel *r, char op, const pgoutput_tuple *oldt,
                    const pgoutput_tuple *newt, arena *scratch)
{
	keyless_mode mode = keyless_mode_of(a, r);
	keyless_change c = keyless_of(r, op, scratch);
	char *sent = arena_alloc(scratch, (size_t) r->ncols + 1);
	bool *unchanged = arena_alloc(scratch, sizeof(bool) * ((size_t) r->ncols + 1));

	if (mode == KEYLESS_SKIP)
		return TM_OK;
	for (int i = 0; oldt != NULL && i < r->ncols; i++)
		sent[i] = oldt->values[i].kind != PGOUTPUT_VALUE_UNCHANGED;
	for (int i = 0; newt != NULL && i < r->ncols; i++)
		unchanged[i] = newt->values[i].kind == PGOUTPUT_VALUE_UNCHANGED;
	c.old_row = oldt ? tuple_params(oldt, scratch) : NULL;
	c.old_sent = oldt ? sent : NULL;
	c.new_row = newt ? tuple_params(newt, scratch) : NULL;
	c.unchanged = newt ? unchanged : NULL;
	count_change(a, op == 'i' ? METRICS_ROWS_INSERTED : op == 'u' ? METRICS_ROWS_UPDATED
	                : op == 'd' ? METRICS_ROWS_DELETED : METRICS_TRUNCATES);
	return mode == KEYLESS_RECORD ? keyless_record(a->keyless, &c, a->xid, a->final_lsn)
	                              : keyless_apply(a->keyless, &c);
}

/* An update of a keyless table needs the old row (REPLICA IDENTITY FULL):
 * without it there is nothing to find the row by. */
static int
keyless_update(apply *a, const apply_rel *r, const pgoutput_msg *m, arena *scratch)
{
	if (m->u.update.old_kind == 0) {
		log_warn("an update of %s.%s without its old row is skipped: the table has no key, so "
		         "only REPLICA IDENTITY FULL says which row changed. Fix: ALTER TABLE \"%s\".\"%s\""
		         " REPLICA IDENTITY FULL; then `tidemark snapshot '%s.%s'`", r->nspname,
		         r->relname, r->nspname, r->relname, r->nspname, r->relname);
		return TM_OK;
	}
	return keyless_change_rows(a, r, 'u', &m->u.update.oldtup, &m->u.update.newtup, scratch);
}

static int
send_upsert(apply *a, apply_rel *r, const pgoutput_tuple *t, const char *op, arena *scratch)
{
	const char **p = tuple_params(t, scratch);

	apply_shape_params(a, r, p, r->ncols, op, scratch);
	return sink_send(a->sink, apply_stmt_upsert(a, r), p, NULL);
}

static int
send_delete(apply *a, apply_rel *r, const pgoutput_tuple *t, arena *scratch)
{
	const char **p = key_params(r, t, scratch);

	apply_shape_params(a, r, p, r->nkeys, "delete", scratch);
	return sink_send(a->sink, apply_stmt_delete(a, r), p, NULL);
}

int
apply_send_row(apply *a, apply_rel *r, const char **values, arena *scratch)
{
	(void) scratch;
	return sink_send(a->sink, apply_shaped(r) ? apply_stmt_upsert_plain(a, r) : apply_stmt_upsert(a, r),
	                 values, NULL);
}

static const char **
key_values(const apply_rel *r, const char *const *values, int extra, arena *scratch)
{
	const char **p = arena_alloc(scratch, sizeof(char *) * ((size_t) (r->nkeys + extra) +
	                                                        DML_SQL_HISTORY_PARAMS + 1));

	for (int k = 0; k < r->nkeys; k++)
		p[extra + k] = values[r->key_idx[k]];
	return p;
}

int
apply_send_delete_key(apply *a, apply_rel *r, const char *const *values, arena *scratch)
{
	const char **p = key_values(r, values, 0, scratch);

	apply_shape_params(a, r, p, r->nkeys, "delete", scratch);
	return sink_send(a->sink, apply_stmt_delete(a, r), p, NULL);
}

int
apply_send_partial(apply *a, apply_rel *r, const bool *present, const char *const *values,
                   arena *scratch)
{
	const char **p = key_values(r, values, r->ncols, scratch);
	int n = 0;

	for (int i = 0; i < r->ncols; i++)
		if (present[i])
			p[n++] = values[i];
	for (int k = 0; k < r->nkeys; k++)
		p[n + k] = p[r->ncols + k];
	n += r->nkeys;
	apply_shape_params(a, r, p, n, "update", scratch);
	return sink_send(a->sink, apply_stmt_partial(a, r, present, false), p, NULL);
}

/* A change of a table whose changes are netted (apply_nets), put. */
static int
net_change(apply *a, apply_rel *r, net_kind kind, const pgoutput_tuple *t)
{
	bool conflict;

	return apply_net_put(a, r, kind, t, NULL, &conflict);
}

static int
apply_insert(apply *a, const pgoutput_msg *m, arena *scratch)
{
	int rc;
	apply_rel *r = change_rel(a, m->u.insert.relid, m, &rc);

	if (r == NULL || !applies(a, r, &rc))
		return rc;
	if ((rc = check_tuple(r, &m->u.insert.newtup)) != TM_OK)
		return rc;
	if (apply_quarantined(a, r, "insert", &m->u.insert.newtup, &rc))
		return rc;
	if (is_keyless(r))
		return keyless_change_rows(a, r, 'i', NULL, &m->u.insert.newtup, scratch);
	if ((rc = apply_shape_ready(a, r)) != TM_OK)
		return rc;
	count_change(a, METRICS_ROWS_INSERTED);
	observe_row(a, r, &m->u.insert.newtup, scratch);
	switch (apply_net_way_of(a, r)) {
	case APPLY_NET_ALL:
		return net_change(a, r, NET_ROW, &m->u.insert.newtup);
	case APPLY_NET_ROWS:
		return apply_net_history_row(a, r, "insert", &m->u.insert.newtup, scratch);
	default:
		return send_upsert(a, r, &m->u.insert.newtup, "insert", scratch);
	}
}

/* An update some of whose columns were not sent (unchanged TOAST): set the
 * sent ones, keyed by the old key. When the key changed, the target may
 * not hold the row yet (its table still being copied): then the statement
 * asks for the new key to be read again from the source (snapshot.h). */
static int
update_partial(apply *a, apply_rel *r, const pgoutput_tuple *oldt, const pgoutput_tuple *newt,
               bool moved, arena *scratch)
{
	bool *present = arena_alloc(scratch, sizeof(bool) * (size_t) r->ncols);
	const char **p = arena_alloc(scratch, sizeof(char *) * (size_t) (r->ncols + 2 * r->nkeys + 2 +
	                                                                 DML_SQL_HISTORY_PARAMS + 1));
	const char **keys = key_params(r, moved ? oldt : newt, scratch);
	int n = 0, rc;

	for (int i = 0; i < r->ncols; i++) {
		present[i] = newt->values[i].kind != PGOUTPUT_VALUE_UNCHANGED;
		if (present[i])
			p[n++] = value_param(&newt->values[i], scratch);
	}
	for (int k = 0; k < r->nkeys; k++)
		p[n++] = keys[k];
	if (moved) {
		char *id = arena_alloc(scratch, 16), *lsn = arena_alloc(scratch, LSN_TEXT_MAX);

		snprintf(id, 16, "%d", r->table->table_id);
		p[n++] = id;
		for (int k = 0; k < r->nkeys; k++) {
			const pgoutput_value *v = &newt->values[r->key_idx[k]];

			/* a key column not sent did not change */
			p[n++] = v->kind == PGOUTPUT_VALUE_UNCHANGED ? keys[k] : value_param(v, scratch);
		}
		p[n++] = lsn_format(a->final_lsn, lsn);
		if (a->cfg.hooks.on_reread != NULL)
			a->cfg.hooks.on_reread(a->cfg.hooks.ctx, r->table->table_id);
		if ((rc = apply_shape_before_move(a, r, keys, scratch)) != TM_OK)
			return rc;
	}
	apply_shape_params(a, r, p, n, "update", scratch);
	return sink_send(a->sink, apply_stmt_partial(a, r, present, moved), p, NULL);
}

/* An update some of whose columns were not sent: put as a net change,
 * unless it moves the key (it may ask for a reread, which depends on what
 * the target holds) or meets a delete of the group: then the target gets
 * every change held first, and this one alone. */
static int
net_or_partial(apply *a, apply_rel *r, const pgoutput_tuple *oldt, const pgoutput_tuple *newt,
               bool moved, arena *scratch)
{
	int rc = TM_OK;

	apply_net_way way = apply_net_way_of(a, r);

	if (way == APPLY_NET_NONE)
		return update_partial(a, r, oldt, newt, moved, scratch);
	if (way == APPLY_NET_ALL && !moved) {
		bool *present = arena_alloc(scratch, sizeof(bool) * (size_t) r->ncols);
		bool conflict;

		for (int i = 0; i < r->ncols; i++)
			present[i] = newt->values[i].kind != PGOUTPUT_VALUE_UNCHANGED;
		rc = apply_net_put(a, r, NET_PARTIAL, newt, present, &conflict);
		if (rc != TM_OK || !conflict)
			return rc;
	}
	if ((rc = apply_net_flush(a)) != TM_OK)
		return rc;
	return update_partial(a, r, oldt, newt, moved, scratch);
}

static int
apply_update(apply *a, const pgoutput_msg *m, arena *scratch)
{
	const pgoutput_tuple *newt = &m->u.update.newtup;
	const pgoutput_tuple *oldt = &m->u.update.oldtup;
	apply_net_way way;
	bool moved;
	int rc;
	apply_rel *r = change_rel(a, m->u.update.relid, m, &rc);

	if (r == NULL || !applies(a, r, &rc))
		return rc;
	if ((rc = check_tuple(r, newt)) != TM_OK ||
	    (m->u.update.old_kind != 0 && (rc = check_tuple(r, oldt)) != TM_OK))
		return rc;
	if (apply_quarantined(a, r, "update", newt, &rc))
		return rc;
	if (is_keyless(r))
		return keyless_update(a, r, m, scratch);
	if ((rc = apply_shape_ready(a, r)) != TM_OK)
		return rc;
	count_change(a, METRICS_ROWS_UPDATED);
	moved = m->u.update.old_kind != 0 && apply_key_differs(r, oldt, newt);
	if (moved)
		observe_row(a, r, oldt, scratch);
	if (apply_has_unchanged(newt)) {
		observe_partial(a, r, newt, scratch);
		return net_or_partial(a, r, oldt, newt, moved, scratch);
	}
	observe_row(a, r, newt, scratch);
	way = apply_net_way_of(a, r);
	if (way == APPLY_NET_ALL) {
		if (moved && (rc = net_change(a, r, NET_DELETE, oldt)) != TM_OK)
			return rc;
		return net_change(a, r, NET_ROW, newt);
	}
	if (way == APPLY_NET_ROWS && !moved)
		return apply_net_history_row(a, r, "update", newt, scratch);
	/* a history's key change: its entries read the mirror's row */
	if (way == APPLY_NET_ROWS && (rc = apply_net_flush(a)) != TM_OK)
		return rc;
	if (moved && (rc = send_delete(a, r, oldt, scratch)) != TM_OK)
		return rc;
	return send_upsert(a, r, newt, "update", scratch);
}

static int
apply_delete(apply *a, const pgoutput_msg *m, arena *scratch)
{
	int rc;
	apply_rel *r = change_rel(a, m->u.delete.relid, m, &rc);

	if (r == NULL || !applies(a, r, &rc))
		return rc;
	if ((rc = check_tuple(r, &m->u.delete.oldtup)) != TM_OK)
		return rc;
	if (is_keyless(r))
		return keyless_change_rows(a, r, 'd', &m->u.delete.oldtup, NULL, scratch);
	if ((rc = apply_shape_ready(a, r)) != TM_OK)
		return rc;
	count_change(a, METRICS_ROWS_DELETED);
	observe_row(a, r, &m->u.delete.oldtup, scratch);
	switch (apply_net_way_of(a, r)) {
	case APPLY_NET_ALL:
		return net_change(a, r, NET_DELETE, &m->u.delete.oldtup);
	case APPLY_NET_ROWS: /* its entry reads the mirror's row */
		if ((rc = apply_net_flush(a)) != TM_OK)
			return rc;
		/* fall through */
	default:
		return send_delete(a, r, &m->u.delete.oldtup, scratch);
	}
}

static int
apply_truncate(apply *a, const pgoutput_msg *m, arena *scratch)
{
	const char **schemas = arena_alloc(scratch, sizeof(char *) * (m->u.truncate.nrelids + 1));
	const char **names = arena_alloc(scratch, sizeof(char *) * (m->u.truncate.nrelids + 1));
	bool marked = false;
	int n = 0;
	int rc;

	if (a->skipping)
		return TM_OK;
	if ((rc = apply_stream_barrier(a, "a TRUNCATE before its commit")) != TM_OK ||
	    (rc = apply_net_flush(a)) != TM_OK)
		return rc;
	for (uint32_t i = 0; i < m->u.truncate.nrelids; i++) {
		apply_rel *r = change_rel(a, m->u.truncate.relids[i], m, &rc);
		bool applied = r != NULL && applies(a, r, &rc);
		bool keep;

		if (rc != TM_OK)
			return rc;
		if (!applied)
			continue;
		if (is_keyless(r) && keyless_mode_of(a, r) != KEYLESS_APPLY) {
			if (keyless_mode_of(a, r) == KEYLESS_RECORD &&
			    (rc = keyless_change_rows(a, r, 't', NULL, NULL, scratch)) != TM_OK)
				return rc;
			continue;
		}
		if ((rc = apply_shape_truncate(a, r, &keep)) != TM_OK)
			return rc;
		marked |= keep;
		if (!keep) {
			schemas[n] = r->table->target_schema;
			names[n++] = r->table->target_table;
		}
		if (apply_watching(a, r))
			a->cfg.hooks.on_truncate(a->cfg.hooks.ctx, r->table->table_id);
	}
	if (n == 0 && !marked)
		return TM_OK;
	count_change(a, METRICS_TRUNCATES);
	if (n == 0)
		return TM_OK;
	return catalog_empty_tables(a->sink, n, schemas, names);
}

/* ---- transactions ---- */

static int
elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	return (int) ((now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000);
}

void
apply_group_committed(apply *a, const apply_done *g, tm_lsn wal_end)
{
	a->applied = g->end;
	apply_note_commit(a, wal_end, g->end);
	a->stats.txs += g->counts.txs;
	a->stats.changes += g->counts.changes;
	a->stats.groups++;
	if (g->commit_time != 0)
		a->stats.last_commit_time = g->commit_time;
	if (g->marker)
		a->marker_reached = true;
}

/* The group ends: committed here, or sent to a parallel worker (which
 * counts it once its commit is confirmed: apply_workers.c). */
static int
group_commit(apply *a)
{
	bool to_worker = apply_workers_take(a);
	int rc;

	if (to_worker)
		rc = apply_workers_commit(a);
	else {
		rc = apply_net_flush(a);
		if (rc == TM_OK)
			rc = catalog_save_progress(a->sink, a->cfg.slot, a->group_end,
			                           a->group_commit_time);
		/* the group before, if it committed here too, is confirmed first */
		if (rc == TM_OK)
			rc = apply_workers_settle(a);
		if (rc == TM_OK)
			rc = sink_commit_send(a->sink);
	}
	a->group_open = false;
	a->group_begun = false;
	if (rc != TM_OK)
		return rc;
	if (!to_worker) {
		/* confirmed later (apply_settle, apply_idle), the next group read
		 * from the stream meanwhile */
		apply_done g = {a->group_end, a->group_commit_time, a->pending, a->marker_in_group};

		apply_own_sent(a, a->sink, &g);
	}
	metrics_add(a->cfg.metrics, METRICS_TARGET_TXS, 1);
	metrics_commit(a->cfg.metrics);
	memset(&a->pending, 0, sizeof a->pending);
	a->group_txs = 0;
	a->group_changes = 0;
	a->commit_after_tx = false;
	return TM_OK;
}

static int
apply_begin(apply *a, const pgoutput_msg *m)
{
	int rc;

	if (a->stop_before != LSN_INVALID && m->u.begin.final_lsn >= a->stop_before) {
		/* everything before the stopping transaction is kept */
		rc = apply_idle(a);
		if (rc == TM_OK)
			rc = apply_settle(a);
		return rc == TM_OK ? TM_EXIT_POLICY : rc;
	}
	a->in_source_tx = true;
	a->tx_wrote = false;
	a->xid = m->u.begin.xid;
	a->final_lsn = m->u.begin.final_lsn;
	a->commit_time = m->u.begin.commit_time;
	a->position_set = false;
	a->position_text = false;
	a->hist_seq = 0;
	a->tx_messaged = false;
	/* the server resumes after our position; this guards the rule */
	a->skipping = m->u.begin.final_lsn < a->applied;
	if (a->skipping)
		return TM_OK;
	if (!a->group_open) {
		/* with parallel workers, BEGIN goes to the apply's own connection
		 * only once something must (apply_workers.c) */
		if (a->nworkers == 0 && (rc = sink_begin(a->sink)) != TM_OK)
			return rc;
		a->group_open = true;
		a->group_begun = a->nworkers == 0;
		clock_gettime(CLOCK_MONOTONIC_COARSE, &a->group_started);
	}
	apply_net_reread_when_due(a);
	return TM_OK;
}

static bool
group_full(const apply *a)
{
	/* with parallel workers, a group ends before its net changes must be
	 * sent in the middle (a group sent in the middle goes to the apply's
	 * own connection, not to a worker) */
	if (a->nworkers > 0 && net_bytes(a->net) >= APPLY_NET_BYTES / 2)
		return true;
	if (a->single_until != LSN_INVALID && a->group_end <= a->single_until)
		return true;
	return a->group_txs >= a->cfg.group_max_txs || a->group_changes >= a->cfg.group_max_changes ||
	       elapsed_ms(&a->group_started) >= a->cfg.group_max_ms || a->marker_in_group ||
	       a->commit_after_tx;
}

static int
apply_commit(apply *a, const pgoutput_msg *m)
{
	int rc = TM_OK;

	if (a->skipping) {
		a->in_source_tx = false;
		a->skipping = false;
		return TM_OK;
	}
	/* tables that join at this commit, in its target transaction: after a
	 * capture message, what it left for the commit meets the target
	 * holding the changes before it */
	if (a->tx_messaged)
		rc = apply_net_flush(a);
	if (rc == TM_OK && a->cfg.hooks.before_commit != NULL)
		rc = a->cfg.hooks.before_commit(a->cfg.hooks.commit_ctx, m->u.commit.end_lsn);
	if (rc == TM_OK)
		rc = apply_join_at_commit(a, m->u.commit.end_lsn);
	a->in_source_tx = false;
	if (rc != TM_OK)
		return rc;
	if (a->cfg.hooks.on_commit != NULL)
		a->cfg.hooks.on_commit(a->cfg.hooks.ctx, a->xid, m->u.commit.commit_lsn);
	a->group_txs++;
	a->pending.txs++;
	metrics_stage(a->cfg.metrics, METRICS_SOURCE_TXS, 1);
	a->group_end = m->u.commit.end_lsn;
	a->group_commit_time = m->u.commit.commit_time;
	if (a->watch_xid != 0 && a->xid == a->watch_xid)
		a->watch_end = m->u.commit.end_lsn;
	return group_full(a) ? group_commit(a) : TM_OK;
}

static int
apply_logical_message(apply *a, const pgoutput_msg *m)
{
	if (!(m->u.message.flags & PGOUTPUT_MESSAGE_TRANSACTIONAL) || a->skipping)
		return TM_OK;
	if (strcmp(m->u.message.prefix, "tidemark.mark") == 0) {
		if (a->marker != NULL && m->u.message.len == strlen(a->marker) &&
		    memcmp(m->u.message.content, a->marker, m->u.message.len) == 0)
			a->marker_in_group = true;
		return TM_OK;
	}
	if (strncmp(m->u.message.prefix, "tidemark.", 9) == 0 && a->cfg.hooks.on_message != NULL) {
		/* what it runs (a schema change, a chunk's load) meets the target
		 * holding every change before it, and no streamed transaction's */
		int rc = apply_stream_barrier(a, "a schema change or a copy before its commit");

		if (rc == TM_OK)
			rc = apply_net_flush(a);

		a->tx_messaged = true;
		if (rc == TM_OK)
			rc = a->cfg.hooks.on_message(a->cfg.hooks.message_ctx, m, a->commit_time);

		a->tx_wrote = true;
		return rc;
	}
	return TM_OK;
}

void
apply_commit_after(apply *a)
{
	if (a->in_source_tx && !a->skipping)
		a->commit_after_tx = true;
}

int
apply_type_boundary(apply *a)
{
	int rc = TM_OK;

	if (!a->in_source_tx || a->skipping)
		return TM_OK;
	apply_keep_type_changed(a);
	a->commit_after_tx = true;
	if (a->tx_wrote || !a->group_open || a->group_txs == 0)
		return TM_OK;
	/* nothing of this source transaction is in the group yet: the group
	 * ends with the previous one, and this one starts its own */
	rc = group_commit(a);
	a->commit_after_tx = true;
	if (rc == TM_OK)
		rc = sink_begin(a->sink);
	if (rc == TM_OK) {
		a->group_open = true;
		a->group_begun = true;
		clock_gettime(CLOCK_MONOTONIC_COARSE, &a->group_started);
	}
	return rc;
}

int
apply_message(apply *a, const pgoutput_msg *m, arena *scratch)
{
	switch (m->kind) {
	case PGOUTPUT_BEGIN: return apply_begin(a, m);
	case PGOUTPUT_COMMIT: return apply_commit(a, m);
	case PGOUTPUT_RELATION: return apply_relation(a, m);
	case PGOUTPUT_INSERT: return apply_insert(a, m, scratch);
	case PGOUTPUT_UPDATE: return apply_update(a, m, scratch);
	case PGOUTPUT_DELETE: return apply_delete(a, m, scratch);
	case PGOUTPUT_TRUNCATE: return apply_truncate(a, m, scratch);
	case PGOUTPUT_MESSAGE: return apply_logical_message(a, m);
	case PGOUTPUT_ORIGIN:
	case PGOUTPUT_TYPE:
		return TM_OK;
	default:
		log_error("internal: a %s message outside the streamed transactions' path",
		          pgoutput_kind_name(m->kind));
		return TM_EXIT_INTERNAL;
	}
}

void
apply_watch_commit(apply *a, uint32_t xid)
{
	a->watch_xid = xid;
	a->watch_end = LSN_INVALID;
}

bool
apply_watched_applied(const apply *a)
{
	return a->watch_end != LSN_INVALID && a->applied >= a->watch_end;
}

int
apply_idle(apply *a)
{
	int rc = TM_OK;

	if (a->group_open && !a->in_source_tx && a->group_txs > 0)
		rc = group_commit(a);
	return rc == TM_OK ? apply_workers_poll(a) : rc;
}

int
apply_settle(apply *a)
{
	return apply_workers_settle(a);
}

int
apply_advance(apply *a, tm_lsn lsn)
{
	int rc;

	if (a->group_open || a->in_source_tx)
		return TM_OK;
	if ((rc = apply_workers_settle(a)) != TM_OK || lsn <= a->applied)
		return rc;
	tm_lsn wal_end = LSN_INVALID;

	rc = sink_begin(a->sink);
	if (rc == TM_OK)
		rc = catalog_save_progress(a->sink, a->cfg.slot, lsn, 0);
	if (rc == TM_OK)
		rc = sink_commit(a->sink, &wal_end);
	if (rc == TM_OK) {
		a->applied = lsn;
		apply_note_commit(a, wal_end, lsn);
	}
	return rc;
}

tm_lsn
apply_position(const apply *a)
{
	return a->durable;
}

tm_lsn
apply_committed(const apply *a)
{
	return a->applied;
}

bool
apply_in_transaction(const apply *a)
{
	return a->in_source_tx || a->group_open || apply_workers_busy(a);
}

bool
apply_in_source_transaction(const apply *a)
{
	return a->in_source_tx;
}

const apply_stats *
apply_get_stats(const apply *a)
{
	return &a->stats;
}

void
apply_set_marker(apply *a, const char *content)
{
	free(a->marker);
	a->marker = content ? xstrdup(content) : NULL;
	a->marker_in_group = false;
	a->marker_reached = false;
}

bool
apply_marker_reached(const apply *a)
{
	return a->marker_reached;
}

keyless *
apply_keyless(apply *a)
{
	return a->keyless;
}

void
apply_forget_statements(apply *a, int table_id)
{
	keyless_forget(a->keyless, table_id);
	for (int i = 0; i < a->nrels; i++)
		if (a->rels[i]->table != NULL && a->rels[i]->table->table_id == table_id) {
			apply_rel_forget_statements(a, a->rels[i]);
			/* its key may be another: looked for again at the next change */
			a->rels[i]->keys_ok = false;
			a->rels[i]->described_before = true;
		}
}

bool
apply_stream_columns(const apply *a, int table_id, int *ncols, const char *const **names)
{
	for (int i = 0; i < a->nrels; i++) {
		const apply_rel *r = a->rels[i];

		/* a description from before the table joined is of another definition */
		if (r->table != NULL && r->table->table_id == table_id && !r->described_before &&
		    r->described_in >= r->table->registered_lsn) {
			*ncols = r->ncols;
			*names = (const char *const *) r->colnames;
			return true;
		}
	}
	return false;
}

void
apply_stop_before(apply *a, tm_lsn commit_lsn)
{
	a->stop_before = commit_lsn;
}

void
apply_single_until(apply *a, tm_lsn lsn)
{
	a->single_until = lsn;
}

tm_lsn
apply_current_commit_lsn(const apply *a)
{
	return a->final_lsn;
}

uint32_t
apply_current_xid(const apply *a)
{
	return a->xid;
}

pg_timestamp
apply_current_commit_time(const apply *a)
{
	return a->commit_time;
}
