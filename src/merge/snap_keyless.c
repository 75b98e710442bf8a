#include "snap_keyless.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyless_sql.h"
#include "log.h"
#include "pgconn.h"
#include "strbuf.h"

static int
load_staged(sink *s, const keyless_change *t, long long *rows)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	int rc;

	keyless_sql_load(&sql, t->target_schema, t->target_table, t->ncols, t->cols, t->table_id);
	rc = sink_query(s, "loading a keyless table's copy", sql.data, 0, NULL, &r);
	if (rc == TM_OK)
		*rows = atoll(PQcmdTuples(r));
	PQclear(r);
	strbuf_free(&sql);
	return rc;
}

static int
drop_stage(sink *s, int table_id)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	strbuf_append(&sql, "DROP TABLE IF EXISTS ");
	keyless_sql_stage_name(&sql, table_id);
	rc = sink_command(s, "dropping a staging table", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
}

/* The target's rows go first, by DELETE rather than TRUNCATE: readers of
 * the table keep seeing its old rows until the load commits, never wait
 * for it, and never see it empty (MVCC; a TRUNCATE would hold an ACCESS
 * EXCLUSIVE lock until then, and snapshots taken before it would see no
 * rows afterwards). */
static int
delete_rows(sink *s, const keyless_change *t)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	strbuf_append(&sql, "DELETE FROM ");
	strbuf_append_qualified(&sql, t->target_schema, t->target_table);
	rc = sink_command(s, "replacing a keyless table's rows", sql.data, 0, NULL);
	strbuf_free(&sql);
	return rc;
}

int
snap_keyless_apply(sink *s, keyless *k, const snap_keyless_load *in, snap_keyless_loaded *out)
{
	int rc = delete_rows(s, &in->table);

	out->rows = 0;
	if (rc == TM_OK)
		rc = load_staged(s, &in->table, &out->rows);
	if (rc == TM_OK)
		rc = keyless_replay(k, &in->table, in->snap, in->page_bytes, &out->replayed);
	if (rc == TM_OK)
		rc = keyless_pending_clear(s, in->table.table_id);
	if (rc == TM_OK)
		rc = drop_stage(s, in->table.table_id);
	return rc;
}

/* The target table has the columns read, or the source's current version
 * of the table (the last one the stream brought) has other columns. */
#define TARGET_READY_SQL                                                                    \
	"SELECT (" KEYLESS_SQL_HAS_COLUMNS ") OR $2::jsonb IS DISTINCT FROM"                     \
	" (SELECT coalesce(jsonb_agg(c -> 'name' ORDER BY (c ->> 'attnum')::int), '[]')"         \
	"   FROM tidemark.schema_versions v, jsonb_array_elements(v.columns) c"                  \
	"   WHERE v.table_id = $3::int AND NOT c ? 'generated' AND v.version ="                  \
	"     (SELECT max(version) FROM tidemark.schema_versions WHERE table_id = $3::int))"

int
snap_keyless_check_target(sink *s, int table_id, const char *schema, const char *table,
                          int ncols, const char *const *cols, const char *display)
{
	char *name, *names, id[16];
	PGresult *r = NULL;
	int rc;

	snprintf(id, sizeof id, "%d", table_id);
	keyless_sql_has_columns_params(schema, table, ncols, cols, &name, &names);
	rc = sink_query(s, "reading the columns of a target table", TARGET_READY_SQL, 3,
	                (const char *const[]) {name, names, id}, &r);
	if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
		log_error("target: table %s lacks columns the source's table %s has (the stream has "
		          "brought their definition): the target table was altered by hand. Fix: "
		          "restore the columns (or drop and re-create the table with the source's "
		          "columns), then `tidemark snapshot %s`", name, display, display);
		rc = TM_EXIT_TARGET;
	}
	PQclear(r);
	free(name);
	free(names);
	return rc;
}

int
snap_keyless_drop_stale(sink *s, const int *live, int nlive)
{
	PGresult *r = NULL;
	int rc = sink_query(s, "looking for staging tables left behind",
	                    "SELECT substr(c.relname, 9)::int FROM pg_class c"
	                    " WHERE c.relnamespace = 'tidemark'::regnamespace AND c.relkind = 'r'"
	                    " AND c.relname ~ '^keyless [0-9]+$'", 0, NULL, &r);

	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++) {
		int id = atoi(PQgetvalue(r, i, 0));
		bool in_use = false;

		for (int j = 0; j < nlive && !in_use; j++)
			in_use = live[j] == id;
		if (!in_use)
			rc = drop_stage(s, id);
	}
	PQclear(r);
	return rc;
}
