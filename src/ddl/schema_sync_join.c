/*
 * schema_sync_join.c: tables that join replication at the commit of the
 * source transaction that made them (see schema_sync.h).
 *
 * Within one source transaction a table may be created without a key,
 * filled (CREATE TABLE AS writes its rows before its capture message
 * comes), given a key, given a column that is its key, renamed, dropped
 * and created again. Whether it is replicated, and how, depends on what
 * it is at the commit: its capture messages are gathered here by relid
 * (the last definition wins) and decided at the commit. A table that
 * joins is registered with its definition at the end of the transaction,
 * from the end of its commit record on; its rows of the transaction are
 * then copied by the snapshot, whatever definitions they were written
 * under.
 */
#include "schema_sync_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pgconn.h"
#include "xalloc.h"

/* ---- the transaction's gathering ---- */

static void
event_table_clear(ddl_event_table *t)
{
	for (int i = 0; t->def != NULL && i < t->def->ncols; i++)
		free(t->cols[i].missing);
	free(t->cols);
	tabledef_free(t->def);
	memset(t, 0, sizeof *t);
}

static void
event_table_copy(ddl_event_table *dst, const ddl_event_table *src)
{
	*dst = *src;
	dst->def = tabledef_copy(src->def);
	dst->cols = xcalloc((size_t) src->def->ncols + 1, sizeof *dst->cols);
	for (int i = 0; i < src->def->ncols; i++) {
		dst->cols[i] = src->cols[i];
		dst->cols[i].missing = src->cols[i].missing ? xstrdup(src->cols[i].missing) : NULL;
	}
}

static void
join_clear(sync_join *j)
{
	event_table_clear(&j->table);
	ddl_part_root_clear(&j->tree);
}

static void
keyless_clear(schema_sync *ss)
{
	for (int i = 0; i < ss->nkeyless; i++) {
		free(ss->keyless[i].schema);
		free(ss->keyless[i].name);
	}
	free(ss->keyless);
	ss->keyless = NULL;
	ss->nkeyless = 0;
}

void
schema_sync_join_reset(schema_sync *ss)
{
	for (int i = 0; i < ss->njoins; i++)
		join_clear(&ss->joins[i]);
	free(ss->joins);
	ss->joins = NULL;
	ss->njoins = 0;
	keyless_clear(ss);
}

void
schema_sync_set_commit(schema_sync *ss, tm_lsn commit_lsn)
{
	if (commit_lsn != ss->cur_commit)
		schema_sync_join_reset(ss);
	ss->cur_commit = commit_lsn;
}

bool
schema_sync_before_join(const schema_sync *ss, const catalog_table *t)
{
	return ss->cur_commit < t->registered_lsn;
}

static sync_join *
join_find(const schema_sync *ss, uint32_t relid)
{
	for (int i = 0; i < ss->njoins; i++)
		if (ss->joins[i].table.def->relid == relid)
			return &ss->joins[i];
	return NULL;
}

const sync_join *
schema_sync_join_find(const schema_sync *ss, uint32_t relid)
{
	return join_find(ss, relid);
}

bool
schema_sync_described(const schema_sync *ss, uint32_t relid)
{
	return join_find(ss, relid) != NULL;
}

bool
schema_sync_created(const schema_sync *ss, uint32_t relid)
{
	const sync_join *j = join_find(ss, relid);

	return j != NULL && j->created && !j->rewritten && !j->dropped && !j->partition;
}

static bool
creates_table(const ddl_event *e)
{
	return strcmp(e->command_tag, "CREATE TABLE") == 0 ||
	       strcmp(e->command_tag, "CREATE TABLE AS") == 0 ||
	       strcmp(e->command_tag, "SELECT INTO") == 0;
}

void
schema_sync_join_note(schema_sync *ss, const ddl_event *e, const ddl_event_table *et, tm_lsn pos,
                      sync_note *note)
{
	sync_join *j = join_find(ss, et->def->relid);

	if (j == NULL) {
		ss->joins = xrealloc(ss->joins, sizeof *ss->joins * (size_t) (ss->njoins + 1));
		j = &ss->joins[ss->njoins++];
		memset(j, 0, sizeof *j);
		j->created = e->command_tag != NULL && creates_table(e);
		j->tree.relid = et->def->relid;
	} else
		event_table_clear(&j->table);
	event_table_copy(&j->table, et);
	j->position = pos;
	j->dropped = false;
	j->partition = false;
	schema_sync_note_list(&note->actions, "new table: joins replication at the commit of its "
	                                      "transaction, with its definition then");
}

void
schema_sync_join_rewritten(schema_sync *ss, uint32_t relid)
{
	sync_join *j = join_find(ss, relid);

	if (j != NULL)
		j->rewritten = true;
}

void
schema_sync_join_partitioned(schema_sync *ss, uint32_t relid)
{
	sync_join *j = join_find(ss, relid);

	if (j != NULL)
		j->partition = true;
}

/* The plan's changes made to the partitions known of a joining root. */
static void
tree_follow(ddl_part_root *tree, const ddl_part_plan *plan)
{
	ddl_part_root kept = {0};

	for (int i = 0; i < tree->nmembers; i++) {
		const ddl_part_member *m = &tree->members[i];
		bool gone = false;

		for (int k = 0; k < plan->nremove && !gone; k++)
			gone = plan->remove[k] == m->relid;
		for (int k = 0; k < plan->nadd && !gone; k++)
			gone = plan->add[k].relid == m->relid; /* added again below, as it is now */
		if (!gone)
			ddl_part_root_add(&kept, m->relid, m->parent, m->schema, m->name);
	}
	for (int k = 0; k < plan->nadd; k++)
		ddl_part_root_add(&kept, plan->add[k].relid, plan->add[k].parent, plan->add[k].schema,
		                  plan->add[k].name);
	kept.relid = tree->relid;
	ddl_part_root_clear(tree);
	*tree = kept;
}

/* One joining partitioned table after a message: *detached (new, the
 * caller frees it with ddl_part_root_clear) gets the partitions that left
 * it into a table of their own. */
static void
join_tree(sync_join *j, const ddl_event *e, ddl_part_root *detached)
{
	ddl_part_plan plan;

	ddl_partition_plan(e, &j->tree, &plan);
	j->rewritten |= plan.recopy;
	for (int k = 0; e->kind == DDL_EVENT_DDL && k < plan.nremove; k++) {
		const ddl_part_member *m = ddl_part_root_find(&j->tree, plan.remove[k]);

		if (m != NULL && ddl_event_table_by_relid(e, m->relid) == NULL)
			ddl_part_root_add(detached, m->relid, m->parent, m->schema, m->name);
	}
	tree_follow(&j->tree, &plan);
	ddl_part_plan_free(&plan);
}

int
schema_sync_join_partitions(schema_sync *ss, const ddl_event *e, tm_lsn pos, sync_note *note,
                            schema_sync_result *res)
{
	ddl_part_root detached = {0};
	int rc = TM_OK;

	for (int i = 0; i < ss->njoins; i++)
		if (ss->joins[i].table.relkind == 'p' && !ss->joins[i].dropped)
			join_tree(&ss->joins[i], e, &detached);
	/* listed in the message, a detached table is followed as a new table
	 * already; this is for those it does not list */
	for (int i = 0; rc == TM_OK && i < detached.nmembers; i++)
		rc = schema_sync_part_register_detached(ss, &detached.members[i], pos, note, res);
	ddl_part_root_clear(&detached);
	return rc;
}

bool
schema_sync_join_dropped(schema_sync *ss, uint32_t relid, sync_note *note)
{
	sync_join *j = join_find(ss, relid);

	if (j == NULL)
		return false;
	j->dropped = true;
	schema_sync_note_list(&note->actions, "created and dropped in one transaction: nothing to "
	                                      "replicate");
	return true;
}

void
schema_sync_keyless_note(schema_sync *ss, const catalog_table *t, const ddl_event_table *now)
{
	sync_keyless *k = NULL;

	for (int i = 0; i < ss->nkeyless && k == NULL; i++)
		if (ss->keyless[i].table_id == t->table_id)
			k = &ss->keyless[i];
	if (k == NULL && tabledef_nkeys(now->def) > 0)
		return;
	if (k == NULL) {
		ss->keyless = xrealloc(ss->keyless, sizeof *ss->keyless * (size_t) (ss->nkeyless + 1));
		k = &ss->keyless[ss->nkeyless++];
		memset(k, 0, sizeof *k);
		k->table_id = t->table_id;
	}
	free(k->schema);
	free(k->name);
	k->schema = xstrdup(now->def->schema);
	k->name = xstrdup(now->def->name);
	k->keyless = tabledef_nkeys(now->def) == 0;
	k->replident = now->replident;
}

/* ---- the commit ---- */

/* The audit log entry of the table's last message says how it ended. */
static int
log_outcome(schema_sync *ss, const sync_join *j, const char *outcome, int version)
{
	char lsn[LSN_TEXT_MAX], ver[16];
	const char *p[] = {ss->cfg.slot, lsn_format(j->position, lsn), outcome,
	                   version > 0 ? ver : NULL};

	snprintf(ver, sizeof ver, "%d", version);
	return sink_command(ss->sink, "writing the DDL audit log",
	                    "UPDATE tidemark.ddl_log SET target_action = target_action || '; at the "
	                    "commit: ' || $3, schema_version = coalesce($4::int, schema_version)"
	                    " WHERE ddl_id = (SELECT max(ddl_id) FROM tidemark.ddl_log"
	                    "   WHERE slot_name = $1 AND position = $2::pg_lsn)", 4, p);
}

/*
 * A registered table of the new one's name that is not dropped is another
 * table (another oid) whose drop was not captured: the new one takes its
 * place, its history starting here (catalog_restart_table).
 */
static int
take_place(schema_sync *ss, const sync_join *j, catalog_table *old, tm_lsn end_lsn,
           schema_sync_result *res)
{
	char *aside = NULL;
	int rc = catalog_restart_table(ss->sink, ss->cfg.slot, old, j->table.def, end_lsn, false,
	                               &aside);

	if (rc == TM_OK) {
		log_warn("table %s.%s is another table (oid %u) than the one registered under its name, "
		         "whose drop was not captured: it is replicated from here, created again on the "
		         "target and copied%s%s%s", j->table.def->schema, j->table.def->name,
		         j->table.def->relid, aside ? " (the old target table is kept as \"" : "",
		         aside ? aside : "", aside ? "\")" : "");
		schema_sync_result_add(res, old->table_id);
		rc = log_outcome(ss, j, "replaces the table registered under its name; copied", 0);
	}
	free(aside);
	return rc;
}

static int
join_table(schema_sync *ss, const sync_join *j, tm_lsn end_lsn, schema_sync_result *res)
{
	sync_note note = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT, 0};
	catalog_table *old = NULL;
	bool added = false;
	int rc = catalog_load_table(ss->sink, ss->cfg.slot, j->table.def->schema,
	                            j->table.def->name, &old);

	if (rc == TM_OK && old != NULL && old->source_relid != 0 &&
	    old->source_relid != j->table.def->relid)
		rc = take_place(ss, j, old, end_lsn, res);
	else if (rc == TM_OK) {
		rc = schema_sync_add_table(ss, j->table.def, end_lsn, &note, res, &added);
		if (rc == TM_OK && added && j->table.relkind == 'p')
			/* made in the transaction, its partitions are those its
			 * messages listed; the source's now may be later ones */
			rc = j->created ? schema_sync_part_record_members(ss, j->table.def, &j->tree)
			                : schema_sync_part_record_tree(ss, j->table.def);
		if (rc == TM_OK)
			rc = log_outcome(ss, j, note.actions.len > 0 ? strbuf_str(&note.actions)
			                                             : "nothing", added ? 1 : 0);
	}
	catalog_table_free(old);
	strbuf_free(&note.tables);
	strbuf_free(&note.classes);
	strbuf_free(&note.actions);
	return rc;
}

static void
warn_keyless(const sync_keyless *k)
{
	if (!k->keyless || k->replident == 'f')
		return;
	log_warn("%s.%s has no key any more and its REPLICA IDENTITY is not FULL: the source "
	         "refuses its UPDATE and DELETE while it is published (or, when its replica "
	         "identity is over a generated column, which logical decoding does not send, "
	         "publishes them without their row's key), and tidemark could not find their rows. "
	         "Fix: ALTER TABLE \"%s\".\"%s\" REPLICA IDENTITY FULL; then `tidemark snapshot "
	         "'%s.%s'`", k->schema, k->name, k->schema, k->name, k->schema, k->name);
}

int
schema_sync_commit(schema_sync *ss, tm_lsn end_lsn, schema_sync_result *res)
{
	int rc = TM_OK;

	memset(res, 0, sizeof *res);
	for (int i = 0; rc == TM_OK && i < ss->njoins; i++) {
		if (!ss->joins[i].dropped && !ss->joins[i].decided && !ss->joins[i].partition)
			rc = join_table(ss, &ss->joins[i], end_lsn, res);
		ss->joins[i].decided = true;
	}
	for (int i = 0; rc == TM_OK && i < ss->nkeyless; i++)
		warn_keyless(&ss->keyless[i]);
	keyless_clear(ss);
	return rc;
}
