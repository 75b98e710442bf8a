/*
 * apply_join.c: relations that get a registered table at a transaction's
 * commit, and tables set aside when the stream's rows do not fit them (see
 * apply.h).
 *
 * A relation whose changes arrive while no registered table has its oid
 * is not registered at its first change: its rows may be written under a
 * definition the table has only for part of the transaction (CREATE TABLE
 * AS writes them before its capture message; a key may come later in the
 * transaction). At the commit, after the capture messages had their say
 * (hooks.before_commit), it gets the table that joined for it, or, when no
 * capture message described it (a table made while the capture did not
 * run), one registered from the source's definition as it is now, from
 * the position that definition was read at. Either way its rows of the
 * transaction are copied, not applied.
 */
#include "apply_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log.h"
#include "pgconn.h"
#include "xalloc.h"

/* ---- the changes of a relation without a table, kept for the commit ---- */

/* One change: a copy of its message, whose tuples point into vals and
 * data. */
typedef struct kept_change {
	pgoutput_msg m;
	pgoutput_value *vals;    /* owned */
	char *data;              /* owned */
	uint32_t relid;          /* a truncate's one relation */
} kept_change;

struct apply_kept {
	int n, cap;
	kept_change *changes;    /* owned */
	long long bytes;
	bool inserts_only;       /* no update or delete among them */
	bool given_up;           /* too large, or the stream's columns changed: copied */
	bool *keys;              /* owned, per column: the replica identity they were
	                          * written under */
	char replident;
};

static long long
tuple_bytes(const pgoutput_tuple *t)
{
	long long n = (long long) sizeof(pgoutput_value) * t->ncols;

	for (int i = 0; i < t->ncols; i++)
		n += t->values[i].len;
	return n;
}

/* Copies src into dst, its values into vals and their bytes after *data. */
static void
tuple_copy(pgoutput_tuple *dst, const pgoutput_tuple *src, pgoutput_value *vals, char **data)
{
	dst->ncols = src->ncols;
	dst->values = vals;
	for (int i = 0; i < src->ncols; i++) {
		vals[i] = src->values[i];
		if (src->values[i].data != NULL) {
			memcpy(*data, src->values[i].data, src->values[i].len);
			vals[i].data = *data;
			*data += src->values[i].len;
		}
	}
}

static void
kept_clear(apply_kept *k)
{
	for (int i = 0; i < k->n; i++) {
		free(k->changes[i].vals);
		free(k->changes[i].data);
	}
	free(k->changes);
	k->changes = NULL;
	k->n = k->cap = 0;
}

void
apply_keep_free(apply *a, apply_rel *r)
{
	if (r->kept == NULL)
		return;
	a->kept_bytes -= r->kept->bytes;
	kept_clear(r->kept);
	free(r->kept->keys);
	free(r->kept);
	r->kept = NULL;
}

static void
give_up(apply *a, apply_rel *r, const char *why)
{
	log_info("the changes of %s.%s in this transaction are not kept (%s): if the table joins "
	         "replication at its commit, its rows are copied", r->nspname, r->relname, why);
	a->kept_bytes -= r->kept->bytes;
	r->kept->bytes = 0;
	kept_clear(r->kept);
	r->kept->given_up = true;
}

void
apply_keep_type_changed(apply *a)
{
	for (int i = 0; i < a->nrels; i++) {
		apply_rel *r = a->rels[i];

		if (r->kept != NULL && !r->kept->given_up && r->kept->n > 0)
			give_up(a, r, "a type changed after they were written, which may spell their "
			        "values apart");
	}
}

void
apply_keep(apply *a, apply_rel *r, const pgoutput_msg *m)
{
	const pgoutput_tuple *oldt = m->kind == PGOUTPUT_UPDATE ? &m->u.update.oldtup
	                           : m->kind == PGOUTPUT_DELETE ? &m->u.delete.oldtup : NULL;
	const pgoutput_tuple *newt = m->kind == PGOUTPUT_INSERT ? &m->u.insert.newtup
	                           : m->kind == PGOUTPUT_UPDATE ? &m->u.update.newtup : NULL;
	bool has_old = oldt != NULL && (m->kind == PGOUTPUT_DELETE || m->u.update.old_kind != 0);
	long long bytes = (long long) sizeof(kept_change) + (has_old ? tuple_bytes(oldt) : 0) +
	                  (newt != NULL ? tuple_bytes(newt) : 0);
	kept_change *c;
	char *data;

	if (r->kept == NULL) {
		r->kept = xcalloc(1, sizeof *r->kept);
		r->kept->inserts_only = true;
		r->kept->keys = xcalloc((size_t) r->ncols + 1, sizeof(bool));
		memcpy(r->kept->keys, r->colkeys, sizeof(bool) * (size_t) r->ncols);
		r->kept->replident = r->replident;
	}
	if (r->kept->given_up)
		return;
	if (a->kept_bytes + bytes > APPLY_KEEP_BYTES) {
		give_up(a, r, "more than the 16 MB kept per transaction");
		return;
	}
	if (r->kept->n == r->kept->cap) {
		/* doubled: a transaction's thousands of rows are not copied each time */
		r->kept->cap = r->kept->cap > 0 ? 2 * r->kept->cap : 64;
		r->kept->changes = xrealloc(r->kept->changes, sizeof *c * (size_t) r->kept->cap);
	}
	c = &r->kept->changes[r->kept->n++];
	memset(c, 0, sizeof *c);
	c->m = *m;
	c->vals = xcalloc((size_t) (has_old ? oldt->ncols : 0) + (newt ? newt->ncols : 0) + 1,
	                  sizeof(pgoutput_value));
	c->data = data = xmalloc((size_t) bytes + 1);
	if (m->kind == PGOUTPUT_INSERT)
		tuple_copy(&c->m.u.insert.newtup, newt, c->vals, &data);
	else if (m->kind == PGOUTPUT_UPDATE) {
		memset(&c->m.u.update.oldtup, 0, sizeof c->m.u.update.oldtup);
		if (has_old)
			tuple_copy(&c->m.u.update.oldtup, oldt, c->vals + newt->ncols, &data);
		tuple_copy(&c->m.u.update.newtup, newt, c->vals, &data);
	} else if (m->kind == PGOUTPUT_DELETE)
		tuple_copy(&c->m.u.delete.oldtup, oldt, c->vals, &data);
	else {
		/* its one relation; relids is set when it is applied (the array
		 * of changes moves as it grows) */
		c->relid = r->relid;
		c->m.u.truncate.nrelids = 1;
		c->m.u.truncate.relids = NULL;
	}
	r->kept->inserts_only &= m->kind == PGOUTPUT_INSERT || m->kind == PGOUTPUT_TRUNCATE;
	r->kept->bytes += bytes;
	a->kept_bytes += bytes;
}

void
apply_keep_described(apply *a, apply_rel *r, const pgoutput_msg *m)
{
	apply_kept *k = r->kept;
	bool same = true, same_key;

	if (k == NULL || k->given_up || k->n == 0)
		return;
	same = m->u.relation.ncols == r->ncols;
	for (int i = 0; same && i < r->ncols; i++)
		same = strcmp(m->u.relation.cols[i].name, r->colnames[i]) == 0 &&
		       m->u.relation.cols[i].type_oid == r->coltypes[i];
	same_key = same && m->u.relation.replident == k->replident;
	for (int i = 0; same_key && i < r->ncols; i++)
		same_key = m->u.relation.cols[i].is_key == k->keys[i];
	if (!same)
		give_up(a, r, "its columns changed");
	else if (!same_key && !k->inserts_only)
		give_up(a, r, "its key changed after rows were updated or deleted");
	else if (!same_key) {
		/* inserts alone: whatever the key, they are the rows */
		for (int i = 0; i < r->ncols; i++)
			k->keys[i] = m->u.relation.cols[i].is_key;
		k->replident = m->u.relation.replident;
	}
}

/* Do the stream's columns of r (those its kept changes have) match the
 * table's definition as it joined, and its key theirs? */
static int
kept_fit(apply *a, apply_rel *r, bool *fit)
{
	char id[16], n[16];
	const char *p[] = {id, NULL, n};
	strbuf names = STRBUF_INIT;
	PGresult *res = NULL;
	bool same_key = r->table->nkeys == 0 ? r->kept->inserts_only : true;
	int rc;

	for (int k = 0; same_key && k < r->table->nkeys; k++)
		same_key = r->kept->inserts_only || r->kept->keys[r->key_idx[k]];
	snprintf(id, sizeof id, "%d", r->table->table_id);
	snprintf(n, sizeof n, "%d", r->ncols);
	strbuf_appendc(&names, '[');
	for (int i = 0; i < r->ncols; i++) {
		json_t *s = json_string(r->colnames[i]);
		char *text = json_dumps(s, JSON_ENCODE_ANY);

		strbuf_appendf(&names, "%s%s", i > 0 ? "," : "", text);
		free(text);
		json_decref(s);
	}
	strbuf_appendc(&names, ']');
	p[1] = names.data;
	rc = sink_query(a->sink, "comparing a table's columns with the stream's",
	                "SELECT count(*) = $3::int AND count(*) FILTER (WHERE c->>'name' IN"
	                "   (SELECT jsonb_array_elements_text($2::jsonb))) = $3::int"
	                " FROM tidemark.schema_versions v, jsonb_array_elements(v.columns) c"
	                " WHERE v.table_id = $1::int AND c->>'generated' IS NULL AND v.version ="
	                "   (SELECT max(version) FROM tidemark.schema_versions WHERE table_id = $1::int)",
	                3, p, &res);
	*fit = rc == TM_OK && same_key && r->keys_ok && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	strbuf_free(&names);
	return rc;
}

/*
 * A table created in the transaction that made it join: the stream holds
 * every change it had, kept here (unless given up); they are its rows, so
 * they are applied and the table needs no copy. Else it is copied.
 */
static int
apply_kept_changes(apply *a, apply_rel *r, bool created)
{
	bool fit = false;
	arena scratch;
	char id[16];
	const char *p[] = {id};
	int n = r->kept != NULL ? r->kept->n : 0;
	int rc = TM_OK;

	if (!created || r->kept == NULL || r->kept->given_up || r->table == NULL)
		return TM_OK;
	rc = kept_fit(a, r, &fit);
	if (rc != TM_OK || !fit)
		return rc;
	snprintf(id, sizeof id, "%d", r->table->table_id);
	rc = sink_command(a->sink, "marking a table copied",
	                  "UPDATE tidemark.tables SET state = 'streaming', snapshot_requested_at = NULL,"
	                  " snapshot_started_at = now(), snapshot_finished_at = now()"
	                  " WHERE table_id = $1::int", 1, p);
	if (rc == TM_OK)
		rc = apply_reload_tables(a);
	arena_init(&scratch, 64 * 1024);
	a->replaying = true;
	for (int i = 0; rc == TM_OK && i < n; i++) {
		kept_change *c = &r->kept->changes[i];

		if (c->m.kind == PGOUTPUT_TRUNCATE)
			c->m.u.truncate.relids = &c->relid;
		rc = apply_message(a, &c->m, &scratch);
		arena_reset(&scratch);
	}
	a->replaying = false;
	arena_free(&scratch);
	if (rc == TM_OK)
		log_info("new table %s.%s: its %d change(s) of the transaction that created it are "
		         "applied from the stream instead of a copy", r->nspname, r->relname, n);
	return rc;
}

/* Registers (or, when a table of another oid holds the name, registers
 * again) the relation's table from def, its history starting at at. */
static int
register_def(apply *a, apply_rel *r, const tabledef *def, tm_lsn at)
{
	catalog_table *known = NULL;
	bool added = false, values_added = false;
	int rc = catalog_load_table(a->sink, a->cfg.slot, r->nspname, r->relname, &known);

	if (rc == TM_OK && known != NULL)
		rc = catalog_restart_table(a->sink, a->cfg.slot, known, def, at, false, NULL);
	else if (rc == TM_OK)
		rc = catalog_add_table(a->sink, a->cfg.slot, def, at, &added, &values_added);
	/* values added to an enum: later source transactions may use them */
	a->commit_after_tx |= values_added;
	if (rc == TM_OK)
		log_info("new table %s.%s in replicated schema: created on the target, to be copied",
		         r->nspname, r->relname);
	catalog_table_free(known);
	/* the relation gets its table with the others' (apply_join_reloaded) */
	if (rc == TM_OK)
		rc = apply_reload_tables(a);
	if (rc == TM_OK && a->cfg.hooks.on_registered != NULL && r->table != NULL)
		a->cfg.hooks.on_registered(a->cfg.hooks.commit_ctx, r->table->table_id);
	return rc;
}

/* Does the stream describe r with a key, or with REPLICA IDENTITY FULL? */
static bool
stream_keyed(const apply_rel *r)
{
	for (int i = 0; i < r->ncols; i++)
		if (r->colkeys[i])
			return true;
	return r->replident == 'f';
}

/*
 * A relation with changes that no capture message made known: registered
 * when its schema is replicated, from the source's definition now; else
 * skipped with a warning. Waiting for a change matters for partitions:
 * with publish_via_partition_root, pgoutput describes a leaf partition next
 * to its root, but sends its changes as the root's, so a partition never
 * gets here.
 */
static int
register_from_source(apply *a, apply_rel *r)
{
	tabledef *def = NULL;
	tm_lsn at = LSN_INVALID;
	bool replicated = false, excluded = false;
	int rc = catalog_schema_covers(a->sink, a->cfg.slot, r->nspname, r->relname, &replicated,
	                               &excluded);

	r->unmatched = false;
	if (rc == TM_OK && excluded)
		log_info("changes of %s.%s are skipped: the table is excluded (setup --exclude-table)",
		         r->nspname, r->relname);
	else if (rc == TM_OK && !replicated)
		log_warn("changes of %s.%s arrive but the table is not registered for replication; "
		         "they are skipped. Fix: tidemark setup --table '%s.%s'", r->nspname, r->relname,
		         r->nspname, r->relname);
	if (rc != TM_OK || !replicated || a->cfg.resolve == NULL)
		return rc;
	if (!stream_keyed(r)) {
		log_info("changes of %s.%s are skipped: the stream describes it without a key and "
		         "without REPLICA IDENTITY FULL, so it is not replicated (it joins when it gets "
		         "either)", r->nspname, r->relname);
		return TM_OK;
	}
	rc = a->cfg.resolve(a->cfg.resolve_ctx, r->nspname, r->relname, &def, &at);
	if (rc == TM_OK && def != NULL && def->relid != 0 && def->relid != r->relid)
		log_info("changes of %s.%s are skipped: the source's table of that name is another "
		         "one now (oid %u, not %u), decided about by its own schema changes", r->nspname,
		         r->relname, def->relid, r->relid);
	else if (rc == TM_OK && def != NULL)
		rc = register_def(a, r, def, at);
	tabledef_free(def);
	return rc;
}

/* A relation gets the table that joined for it: the stream described it
 * before, perhaps under an earlier definition of the transaction. */
static int
join_rel(apply *a, apply_rel *r, catalog_table *t)
{
	int rc = apply_use_table(a, r, t);

	r->described_before = true;
	return rc;
}

int
apply_join_at_commit(apply *a, tm_lsn end_lsn)
{
	const apply_hooks *h = &a->cfg.hooks;
	int rc = TM_OK;

	(void) end_lsn;
	for (int i = 0; rc == TM_OK && i < a->nrels; i++) {
		apply_rel *r = a->rels[i];
		apply_described d = h->described == NULL ? APPLY_NOT_DESCRIBED
		                                          : h->described(h->commit_ctx, r->relid);
		catalog_table *t;

		if (!r->changed_in_tx)
			continue;
		r->changed_in_tx = false;
		/* the table that joined (the reload of the table list at the
		 * commit may have given it already) */
		if (r->table == NULL && (t = apply_table_relid(a, r->relid)) != NULL)
			rc = join_rel(a, r, t);
		if (rc == TM_OK && r->table != NULL)
			rc = apply_kept_changes(a, r, d == APPLY_CREATED);
		else if (r->table == NULL && d == APPLY_NOT_DESCRIBED)
			rc = register_from_source(a, r);
		else if (r->table == NULL)
			r->unmatched = false; /* decided by its capture messages */
		apply_keep_free(a, r);
	}
	return rc;
}

int
apply_join_reloaded(apply *a)
{
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < a->nrels; i++) {
		apply_rel *r = a->rels[i];
		catalog_table *t;

		if (r->table == NULL && r->ncols > 0 && (t = apply_table_relid(a, r->relid)) != NULL)
			rc = join_rel(a, r, t);
	}
	return rc;
}

/* ---- set aside ---- */

int
apply_set_aside(apply *a, apply_rel *r)
{
	catalog_table *t = r->table;
	int table_id = t->table_id;
	tabledef *def = NULL;
	tm_lsn at = LSN_INVALID;
	char *aside = NULL;
	strbuf name = STRBUF_INIT;
	int rc = TM_OK;

	strbuf_append_qualified(&name, r->nspname, r->relname);
	if (!r->keys_ok)
		log_warn("source table %s: its replicated key (%d column(s)) is not among the %d "
		         "columns the stream sends: a schema change was not captured (DDL while the "
		         "capture did not run?). The table is set aside: registered again from the "
		         "source's definition now and copied again; the other tables go on",
		         strbuf_str(&name), t->nkeys, r->ncols);
	else
		log_warn("source table %s: the stream describes %d columns that differ, by name, type "
		         "or key, from the %d of its schema version in force: a schema change was not "
		         "captured (DDL while the capture's event trigger was disabled?). The table is "
		         "set aside: registered again from the source's definition now and copied "
		         "again; the other tables go on", strbuf_str(&name), r->ncols, r->version_cols);
	if (a->cfg.resolve != NULL)
		rc = a->cfg.resolve(a->cfg.resolve_ctx, r->nspname, r->relname, &def, &at);
	if (rc == TM_OK && def != NULL)
		rc = catalog_restart_table(a->sink, a->cfg.slot, t, def, at, false, &aside);
	else if (rc == TM_OK) {
		log_warn("source table %s cannot be registered again (see above): it is no longer "
		         "replicated. Fix: make it replicable, then tidemark setup --table '%s.%s'",
		         strbuf_str(&name), r->nspname, r->relname);
		rc = catalog_retire_table(a->sink, table_id);
	}
	if (rc == TM_OK && aside != NULL)
		log_info("target: the table of %s before it was set aside is kept as \"%s\"",
		         strbuf_str(&name), aside);
	if (rc == TM_OK)
		rc = apply_reset_statements(a);
	if (rc == TM_OK)
		rc = apply_reload_tables(a);
	apply_forget_statements(a, table_id);
	if (rc == TM_OK && a->cfg.hooks.on_registered != NULL)
		a->cfg.hooks.on_registered(a->cfg.hooks.commit_ctx, table_id);
	if (r->table != NULL && strcmp(r->table->state, "dropped") == 0)
		r->table = NULL;
	strbuf_free(&name);
	free(aside);
	tabledef_free(def);
	return rc;
}
