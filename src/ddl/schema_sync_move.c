/*
 * schema_sync_move.c: a replicated table moved by SET SCHEMA out of the
 * schemas the pipeline replicates (setup --schema) into one it does not.
 *
 * A schema publication (FOR TABLES IN SCHEMA) publishes a table only while
 * it lies in the schema: from the move on, the source sends none of its
 * changes. The table stays in the pipeline: the publication is made to
 * publish it by name (ALTER PUBLICATION ... ADD TABLE, on run's control
 * connection, committed on the source at once), and since the changes
 * between the move and that were not published, the table is copied again
 * in place, its copy starting after the publication has changed. A table
 * given by --table is published by name from the start: nothing to do.
 *
 * A replicated schema renamed (ALTER SCHEMA ... RENAME TO) moves each of
 * its tables to the new name too, but the publication names the schema by
 * oid and goes on publishing them: the pipeline's schema takes the new
 * name first, so that its tables are not seen as moved out, and tables
 * created later under the new name join as before.
 */
#include "schema_sync_int.h"

#include <string.h>

#include "catalog.h"
#include "exitcode.h"
#include "log.h"

/* Is the schema one the pipeline replicates (excluded tables aside: the
 * publication covers them all the same)? */
static int
replicated_schema(schema_sync *ss, const char *schema, const char *name, bool *out)
{
	bool covered = false, excluded = false;
	int rc = catalog_schema_covers(ss->sink, ss->cfg.slot, schema, name, &covered, &excluded);

	*out = covered || excluded;
	return rc;
}

int
schema_sync_moved_out(schema_sync *ss, const catalog_table *t, const tabledef *now,
                      sync_note *note, bool *recopy)
{
	bool was_in = false, is_in = true;
	uint32_t relid = now->relid != 0 ? now->relid : t->source_relid;
	int rc;

	*recopy = false;
	if (strcmp(t->source_schema, now->schema) == 0)
		return TM_OK;
	rc = replicated_schema(ss, t->source_schema, t->source_table, &was_in);
	if (rc == TM_OK && was_in)
		rc = replicated_schema(ss, now->schema, now->name, &is_in);
	if (rc != TM_OK || !was_in || is_in)
		return rc;
	if (ss->cfg.source.publish == NULL || relid == 0) {
		log_warn("table %s.%s moved to schema %s, which is not replicated: the publication no "
		         "longer sends its changes. Fix: `tidemark setup --table '%s.%s'`, then "
		         "`tidemark snapshot %s.%s`", t->source_schema, t->source_table, now->schema,
		         now->schema, now->name, now->schema, now->name);
		schema_sync_note_list(&note->actions, "moved out of the replicated schemas: no longer "
		                                      "published");
		return TM_OK;
	}
	rc = ss->cfg.source.publish(ss->cfg.source.ctx, relid, recopy);
	if (rc == TM_OK && *recopy) {
		log_info("table %s.%s moved to schema %s, which is not replicated: it stays replicated, "
		         "published by name, and is copied again in place (its changes since the move "
		         "were not published)", t->source_schema, t->source_table, now->schema);
		schema_sync_note_list(&note->actions, "moved out of the replicated schemas: published "
		                                      "by name, copied again");
	}
	return rc;
}

/*
 * ALTER SCHEMA's message lists the schema's tables under their new schema
 * name: a registered table whose catalog entry has another schema, one the
 * pipeline replicates, tells the old name (ALTER SCHEMA changes a table's
 * schema name only by renaming its schema). Once renamed in the catalog,
 * the schema's other tables find nothing more to do here.
 */
int
schema_sync_schema_renamed(schema_sync *ss, const ddl_event *e, sync_note *note)
{
	int rc = TM_OK;

	if (e->command_tag == NULL || strcmp(e->command_tag, "ALTER SCHEMA") != 0)
		return TM_OK;
	for (int i = 0; rc == TM_OK && i < e->ntables; i++) {
		const tabledef *now = e->tables[i].def;
		catalog_table *t = NULL;
		bool was_in = false;

		rc = catalog_load_table_relid(ss->sink, ss->cfg.slot, now->relid, &t);
		if (rc == TM_OK && t != NULL && strcmp(t->source_schema, now->schema) != 0)
			rc = replicated_schema(ss, t->source_schema, t->source_table, &was_in);
		if (rc == TM_OK && was_in) {
			rc = catalog_rename_schema(ss->sink, ss->cfg.slot, t->source_schema, now->schema);
			log_info("schema %s renamed to %s on the source: replicated under its new name, "
			         "its tables moved on the target as by SET SCHEMA, nothing copied again",
			         t->source_schema, now->schema);
			schema_sync_note_list(&note->actions, "replicated schema renamed: followed");
		}
		catalog_table_free(t);
	}
	return rc;
}
