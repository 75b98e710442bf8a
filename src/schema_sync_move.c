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
