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

#include "log.h"
#include "pgconn.h"
#include "xalloc.h"

/* Registers (or, when a table of another oid holds the name, registers
 * again) the relation's table from def, its history starting at at. */
static int
register_def(apply *a, apply_rel *r, const tabledef *def, tm_lsn at)
{
	catalog_table *known = NULL;
	bool added = false, values_added = false;
	int rc = catalog_load_table(a->sink, a->cfg.slot, r->nspname, r->relname, &known);

	if (rc == TM_OK && known != NULL) {
		rc = catalog_restart_table(a->sink, a->cfg.slot, known, def, at, false, NULL);
		if (rc == TM_OK && a->cfg.hooks.on_restart != NULL)
			a->cfg.hooks.on_restart(a->cfg.hooks.commit_ctx, known->table_id);
	} else if (rc == TM_OK)
		rc = catalog_add_table(a->sink, a->cfg.slot, def, at, &added, &values_added);
	/* values added to an enum: later source transactions may use them */
	a->commit_after_tx |= values_added;
	if (rc == TM_OK)
		log_info("new table %s.%s in replicated schema: created on the target, to be copied",
		         r->nspname, r->relname);
	catalog_table_free(known);
	/* the relation gets its table with the others' (apply_join_reloaded) */
	return rc == TM_OK ? apply_reload_tables(a) : rc;
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
	rc = a->cfg.resolve(a->cfg.resolve_ctx, r->nspname, r->relname, &def, &at);
	if (rc == TM_OK && def != NULL)
		rc = register_def(a, r, def, at);
	tabledef_free(def);
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
		catalog_table *t;

		if (!r->changed_in_tx)
			continue;
		r->changed_in_tx = false;
		if (r->table != NULL)
			continue;
		if ((t = apply_table_relid(a, r->relid)) != NULL)
			rc = apply_use_table(a, r, t);
		else if (h->described == NULL || !h->described(h->commit_ctx, r->relid))
			rc = register_from_source(a, r);
		else
			r->unmatched = false; /* decided by its capture messages */
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
			rc = apply_use_table(a, r, t);
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
	log_warn("source table %s: its replicated key (%d column(s)) is not among the %d columns "
	         "the stream sends: a schema change was not captured (DDL while the capture did "
	         "not run?). The table is set aside: registered again from the source's "
	         "definition now and copied again; the other tables go on", strbuf_str(&name),
	         t->nkeys, r->ncols);
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
		rc = sink_reset_statements(a->sink);
	if (rc == TM_OK)
		rc = apply_reload_tables(a);
	apply_forget_statements(a, table_id);
	if (rc == TM_OK && a->cfg.hooks.on_restart != NULL)
		a->cfg.hooks.on_restart(a->cfg.hooks.commit_ctx, table_id);
	if (r->table != NULL && strcmp(r->table->state, "dropped") == 0)
		r->table = NULL;
	strbuf_free(&name);
	free(aside);
	tabledef_free(def);
	return rc;
}
