/*
 * pipeline.c: a pipeline's source and mapping, recorded and checked (see
 * pipeline.h).
 */
#include "pipeline.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "log.h"
#include "lsn.h"
#include "pgconn.h"
#include "resume_check.h"
#include "source_query.h"
#include "xalloc.h"

static int
tq(pipeline_target t, const char *what, const char *sql, int n, const char *const *p,
   PGresult **r)
{
	if (t.sink != NULL)
		return sink_query(t.sink, what, sql, n, p, r);
	return pgconn_exec(t.conn, PGCONN_TARGET, what, sql, n, p, r);
}

static char *
value_or_null(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : xstrdup(PQgetvalue(r, row, col));
}

/* ---- the source ---- */

int
pipeline_source_read(PGconn *conn, pgconn_side side, const char *conninfo,
                     pipeline_source *out)
{
	char where[512];
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, side, "reading which server and database this is",
	                     "SELECT system_identifier::text, current_database(),"
	                     " (SELECT oid::text FROM pg_database WHERE datname = current_database())"
	                     " FROM pg_control_system()", 0, NULL, &r);

	memset(out, 0, sizeof *out);
	if (rc == TM_OK) {
		out->system_id = xstrdup(PQgetvalue(r, 0, 0));
		out->database = xstrdup(PQgetvalue(r, 0, 1));
		out->database_oid = xstrdup(PQgetvalue(r, 0, 2));
		out->address = xstrdup(pgconn_describe(conninfo, where, sizeof where));
	}
	PQclear(r);
	return rc;
}

void
pipeline_source_clear(pipeline_source *p)
{
	free(p->system_id);
	free(p->database);
	free(p->database_oid);
	free(p->address);
	memset(p, 0, sizeof *p);
}

/* ---- the target's record ---- */

static int
load_map(pipeline_target t, const char *slot, pipeline_info *out)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	tm_error err;
	int rc = tq(t, "reading the pipeline's schema mapping",
	            "SELECT source_schema, target_schema FROM tidemark.schema_map"
	            " WHERE slot_name = $1 ORDER BY source_schema", 1, p, &r);

	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++)
		if (schema_map_add(&out->map, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), &err) != 0) {
			log_error("target: tidemark.schema_map of pipeline \"%s\": %s", slot, err.msg);
			rc = TM_EXIT_TARGET;
		}
	PQclear(r);
	return rc;
}

int
pipeline_load(pipeline_target t, const char *slot, pipeline_info *out)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	bool catalog, pipelines;
	int rc = tq(t, "looking for tidemark's catalog",
	            "SELECT to_regclass('tidemark.progress') IS NOT NULL,"
	            " to_regclass('tidemark.schema_map') IS NOT NULL", 0, NULL, &r);

	memset(out, 0, sizeof *out);
	if (rc != TM_OK)
		return rc;
	catalog = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	pipelines = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	PQclear(r);
	r = NULL;
	if (!catalog)
		return TM_OK;
	rc = tq(t, "reading the pipeline",
	        /* source_database_oid: read through the row's JSON, a catalog
	         * before migration 017 has none (setup checks before migrating) */
	        pipelines ? "SELECT source_system_id, source_database, source_address, target_schema,"
	                    " to_jsonb(progress) ->> 'source_database_oid'"
	                    " FROM tidemark.progress WHERE slot_name = $1"
	                  : "SELECT NULL, NULL, NULL, NULL, NULL FROM tidemark.progress"
	                    " WHERE slot_name = $1",
	        1, p, &r);
	if (rc == TM_OK && PQntuples(r) == 1) {
		out->exists = true;
		out->recorded = !PQgetisnull(r, 0, 0);
		out->source.system_id = value_or_null(r, 0, 0);
		out->source.database = value_or_null(r, 0, 1);
		out->source.address = value_or_null(r, 0, 2);
		out->map.target_schema = value_or_null(r, 0, 3);
		out->source.database_oid = value_or_null(r, 0, 4);
	}
	PQclear(r);
	if (rc == TM_OK && out->exists && pipelines)
		rc = load_map(t, slot, out);
	return rc;
}

void
pipeline_info_clear(pipeline_info *p)
{
	pipeline_source_clear(&p->source);
	schema_map_clear(&p->map);
	memset(p, 0, sizeof *p);
}

bool
pipeline_source_same(const pipeline_source *a, const pipeline_source *b)
{
	if (strcmp(a->system_id, b->system_id) != 0)
		return false;
	if (a->database_oid != NULL && b->database_oid != NULL)
		return strcmp(a->database_oid, b->database_oid) == 0;
	return strcmp(a->database, b->database) == 0;
}

/* ---- a source upgraded in place ---- */

/* What the target records of the pipeline (its tables' source oids and
 * names, its position) against what the source has under those oids, and
 * the slot there: resume_upgrade_check's facts. */
static int
upgrade_facts_read(pipeline_target t, const char *slot, PGconn *src, const pipeline_info *info,
                   const pipeline_source *ps, upgrade_facts *f)
{
	const char *p[] = {slot, NULL};
	source_slot_state st;
	PGresult *r = NULL, *m = NULL;
	int rc = tq(t, "reading the pipeline's tables and position",
	            "SELECT count(*), coalesce(jsonb_agg(jsonb_build_object('r', source_relid,"
	            "  's', source_schema, 'n', source_table)), '[]')::text,"
	            " (SELECT applied_lsn::text FROM tidemark.progress WHERE slot_name = $1)"
	            " FROM tidemark.tables WHERE slot_name = $1 AND state <> 'dropped'"
	            "  AND source_relid IS NOT NULL", 1, p, &r);

	memset(f, 0, sizeof *f);
	f->target = LSN_INVALID;
	f->same_database = info->source.database_oid != NULL && ps->database_oid != NULL &&
	                   strcmp(info->source.database_oid, ps->database_oid) == 0;
	if (rc == TM_OK) {
		f->tables = atoi(PQgetvalue(r, 0, 0));
		if (!PQgetisnull(r, 0, 2) && !lsn_parse(PQgetvalue(r, 0, 2), &f->target))
			f->target = LSN_INVALID;
		p[0] = PQgetvalue(r, 0, 1);
		rc = pgconn_exec(src, PGCONN_SOURCE, "comparing the tables' oids",
		                 "SELECT count(*) FROM jsonb_to_recordset($1::jsonb) AS w(r oid, s text,"
		                 " n text) JOIN pg_catalog.pg_class c ON c.oid = w.r AND c.relname = w.n"
		                 " JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace"
		                 "  AND s.nspname = w.s", 1, p, &m);
	}
	if (rc == TM_OK)
		f->tables_same = atoi(PQgetvalue(m, 0, 0));
	PQclear(m);
	PQclear(r);
	if (rc == TM_OK)
		rc = source_query_slot_state(src, slot, &st);
	if (rc == TM_OK) {
		f->slot_exists = st.exists;
		f->slot_ours = st.ours;
		f->slot_invalidated = st.invalidated;
		f->confirmed = st.confirmed;
	}
	return rc;
}

/* What taking the upgraded server up does, for the messages. */
static const char *
upgrade_outcome(upgrade_verdict v)
{
	return v == UPGRADE_SLOT_KEPT
	           ? "pg_upgrade kept the slot: the stream resumes at its position, nothing is "
	             "copied again"
	           : "the slot was not kept (pg_upgrade keeps logical slots from PostgreSQL 17 on): "
	             "it is created again and every table copied again in place, the target "
	             "staying queryable";
}

/* A source other than the pipeline's: refused, naming both and the fix.
 * When it has the recorded database's oid, whether it looks like that
 * server upgraded in place (pg_upgrade) decides which fix. */
static int
refuse_source(pipeline_target t, const char *slot, PGconn *src, const pipeline_info *p,
              const pipeline_source *ps)
{
	char why[160] = "";
	upgrade_facts f;
	upgrade_verdict v = UPGRADE_NOT_SAME;
	int rc = TM_OK;

	if (strcmp(p->source.system_id, ps->system_id) != 0 && p->source.database_oid != NULL &&
	    ps->database_oid != NULL && strcmp(p->source.database_oid, ps->database_oid) == 0 &&
	    (rc = upgrade_facts_read(t, slot, src, p, ps, &f)) == TM_OK)
		v = resume_upgrade_check(&f, why, sizeof why);
	if (rc != TM_OK)
		return rc;
	if (v != UPGRADE_NOT_SAME) {
		log_error("source: pipeline \"%s\" was set up from database \"%s\" of the server with "
		          "system identifier %s (%s); this --source is database \"%s\" of server %s "
		          "(%s), which has that database's oid and the oids of the pipeline's %d tables, "
		          "as pg_upgrade keeps them; nothing was changed. Fix: if it is the pipeline's "
		          "server upgraded in place, take it up with `tidemark resync "
		          "--source-upgraded` (%s); if not, point --source at the pipeline's database",
		          slot, p->source.database, p->source.system_id,
		          p->source.address ? p->source.address : "an unknown address", ps->database,
		          ps->system_id, ps->address, f.tables, upgrade_outcome(v));
		return TM_EXIT_CONFIG;
	}
	log_error("target: pipeline \"%s\" here replicates database \"%s\" of the PostgreSQL server "
	          "with system identifier %s (set up from %s), but this --source is database \"%s\" "
	          "of server %s (%s)%s%s%s; nothing was changed. Fix: point --source at that "
	          "database, or give this source a pipeline of its own beside it: `tidemark setup "
	          "--slot NAME --publication NAME --target-schema NAME ...` (NAME for instance the "
	          "database's name; its tables then go to that target schema)", slot,
	          p->source.database, p->source.system_id,
	          p->source.address ? p->source.address : "an unknown address", ps->database,
	          ps->system_id, ps->address, why[0] ? " (not the pipeline's server upgraded in "
	          "place: " : "", why, why[0] ? ")" : "");
	return TM_EXIT_CONFIG;
}

static int
check_source(pipeline_target t, const char *slot, PGconn *src, const pipeline_info *p,
             const pipeline_source *ps)
{
	if (!p->exists || !p->recorded || pipeline_source_same(&p->source, ps))
		return TM_OK;
	return refuse_source(t, slot, src, p, ps);
}

/* After check_source: the source recorded when it is not yet, its
 * database's oid when an older tidemark left it out, and its new name
 * (and address) when the database was renamed. */
static int
record_source(pipeline_target t, const char *slot, const pipeline_source *ps)
{
	const char *p[] = {slot, ps->system_id, ps->database, ps->address, ps->database_oid};
	PGresult *r = NULL;
	int rc = tq(t, "recording the pipeline's source",
	            "UPDATE tidemark.progress n SET source_system_id = $2, source_database = $3,"
	            " source_address = $4, source_database_oid = $5::oid"
	            " FROM (SELECT source_system_id IS NULL AS new, source_database AS name"
	            "  FROM tidemark.progress WHERE slot_name = $1) o"
	            " WHERE n.slot_name = $1 AND (n.source_system_id IS NULL"
	            "  OR n.source_database_oid IS NULL OR n.source_database <> $3)"
	            " RETURNING o.new, o.name", 5, p, &r);

	if (rc == TM_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0)
		log_info("target: pipeline \"%s\" is now recorded as replicating database \"%s\" of "
		         "server %s (%s): other sources are refused", slot, ps->database,
		         ps->system_id, ps->address);
	else if (rc == TM_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), ps->database) != 0)
		log_info("target: source database \"%s\" of pipeline \"%s\" is now named \"%s\" (the "
		         "same database, renamed): recorded", PQgetvalue(r, 0, 1), slot, ps->database);
	PQclear(r);
	return rc;
}

/* A pipeline recorded without its database's oid (by an older tidemark),
 * whose database now has another name: the same database when the
 * pipeline's slot is in it (a slot belongs to its database's oid). */
static int
oid_from_slot(PGconn *src, const char *slot, pipeline_info *info, const pipeline_source *ps)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	int rc;

	if (!info->recorded || info->source.database_oid != NULL ||
	    strcmp(info->source.system_id, ps->system_id) != 0 ||
	    strcmp(info->source.database, ps->database) == 0)
		return TM_OK;
	rc = pgconn_exec(src, PGCONN_SOURCE, "reading the slot's database",
	                 "SELECT datoid::text FROM pg_replication_slots WHERE slot_name = $1", 1, p, &r);
	if (rc == TM_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), ps->database_oid) == 0)
		info->source.database_oid = xstrdup(ps->database_oid);
	PQclear(r);
	return rc;
}

int
pipeline_check(pipeline_target t, const char *slot, PGconn *src, const char *src_conninfo,
               bool record)
{
	pipeline_source ps;
	pipeline_info info;
	int rc = pipeline_source_read(src, PGCONN_SOURCE, src_conninfo, &ps);

	if (rc == TM_OK)
		rc = pipeline_load(t, slot, &info);
	else
		memset(&info, 0, sizeof info);
	if (rc == TM_OK)
		rc = oid_from_slot(src, slot, &info, &ps);
	if (rc == TM_OK)
		rc = check_source(t, slot, src, &info, &ps);
	if (rc == TM_OK && record && info.exists)
		rc = record_source(t, slot, &ps);
	pipeline_info_clear(&info);
	pipeline_source_clear(&ps);
	return rc;
}

/* ---- taking an upgraded server up ---- */

/*
 * The upgraded server becomes the pipeline's source, in one target
 * transaction: its identity; where pg_upgrade kept the slot, the position
 * the stream resumes from is the slot's (the old server's changes are all
 * on the target: pg_upgrade refuses a slot that has not confirmed them
 * all, and tidemark confirms only what the target holds); the old
 * server's timeline forgotten (the new one's is recorded at the start);
 * and the publication's readings forgotten (pg_upgrade made the
 * publication again, with new oids: not tables taken out and put back).
 */
static int
take_up(sink *s, const char *slot, const pipeline_source *ps, const upgrade_facts *f,
        upgrade_verdict v)
{
	char lsn[LSN_TEXT_MAX];
	const char *p[] = {slot, ps->system_id, ps->database, ps->address,
	                   v == UPGRADE_SLOT_KEPT ? lsn_format(f->confirmed, lsn) : NULL};
	int rc = sink_begin(s);

	if (rc == TM_OK)
		rc = sink_command(s, "recording the upgraded source",
		                  "UPDATE tidemark.progress SET source_system_id = $2,"
		                  " source_database = $3, source_address = $4,"
		                  " applied_lsn = coalesce($5::pg_lsn, applied_lsn),"
		                  " applied_at = CASE WHEN $5::pg_lsn IS NULL THEN applied_at ELSE now() END"
		                  " WHERE slot_name = $1", 5, p);
	if (rc == TM_OK)
		rc = sink_command(s, "forgetting the old server's timeline",
		                  "DELETE FROM tidemark.source_timeline WHERE slot_name = $1", 1, p);
	if (rc == TM_OK)
		rc = sink_command(s, "forgetting the old server's publication readings",
		                  "UPDATE tidemark.tables SET publication_token = NULL"
		                  " WHERE slot_name = $1 AND publication_token IS NOT NULL", 1, p);
	if (rc == TM_OK)
		return sink_commit(s, NULL);
	sink_rollback(s);
	return rc;
}

int
pipeline_take_upgrade(sink *s, const char *slot, PGconn *src, const char *src_conninfo)
{
	pipeline_target t = {s, NULL};
	pipeline_source ps;
	pipeline_info info;
	upgrade_facts f;
	upgrade_verdict v = UPGRADE_NOT_SAME;
	char why[160] = "";
	int rc = pipeline_source_read(src, PGCONN_SOURCE, src_conninfo, &ps);

	if (rc == TM_OK)
		rc = pipeline_load(t, slot, &info);
	else
		memset(&info, 0, sizeof info);
	if (rc == TM_OK && (!info.exists || !info.recorded || pipeline_source_same(&info.source, &ps)))
		log_info("source: database \"%s\" of server %s is pipeline \"%s\"'s source already: "
		         "nothing to take up", ps.database, ps.system_id, slot);
	else if (rc == TM_OK && (rc = upgrade_facts_read(t, slot, src, &info, &ps, &f)) == TM_OK &&
	         (v = resume_upgrade_check(&f, why, sizeof why)) == UPGRADE_NOT_SAME) {
		log_error("source: database \"%s\" of server %s (%s) is not taken up as pipeline "
		          "\"%s\"'s server (%s) upgraded in place: %s; nothing was changed. Fix: point "
		          "--source at the pipeline's database; a server restored from a dump, or another "
		          "one, needs a pipeline of its own (`tidemark setup`)", ps.database,
		          ps.system_id, ps.address, slot, info.source.system_id, why);
		rc = TM_EXIT_CONFIG;
	} else if (rc == TM_OK && (rc = take_up(s, slot, &ps, &f, v)) == TM_OK)
		log_warn("source: database \"%s\" of server %s (%s) taken up as pipeline \"%s\"'s "
		         "source, its server %s upgraded in place (the database's and the %d tables' "
		         "oids kept); %s", ps.database, ps.system_id, ps.address, slot,
		         info.source.system_id, f.tables, upgrade_outcome(v));
	pipeline_info_clear(&info);
	pipeline_source_clear(&ps);
	return rc;
}

/* ---- setup's checks ---- */

/* A mapping may grow; it never moves a table already replicated. */
static int
check_moves(PGconn *target, const char *slot, const schema_map *merged)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	int rc = pgconn_exec(target, PGCONN_TARGET, "reading the pipeline's tables",
	                     "SELECT source_schema, source_table, target_schema, target_table"
	                     " FROM tidemark.tables WHERE slot_name = $1 AND state <> 'dropped'"
	                     " ORDER BY 1, 2", 1, p, &r);

	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++) {
		const char *want = schema_map_target(merged, PQgetvalue(r, i, 0));

		if (strcmp(want, PQgetvalue(r, i, 2)) == 0)
			continue;
		log_error("setup: %s.%s is replicated into %s.%s already, and the mapping asked would "
		          "put it into schema %s: a mapping cannot move the tables a pipeline "
		          "replicates; nothing was changed. Fix: leave --target-schema / --map-schema "
		          "out for the schemas it has, or start another pipeline (another --slot) with "
		          "the new mapping", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
		          PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), want);
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

/* Two tables of this setup with one target name. */
static int
check_own_claims(const schema_map *m, char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			const char *ti = schema_map_target(m, names[2 * i]);

			if (strcmp(names[2 * i + 1], names[2 * j + 1]) != 0 ||
			    strcmp(ti, schema_map_target(m, names[2 * j])) != 0)
				continue;
			log_error("setup: %s.%s and %s.%s would both be %s.%s on the target; nothing was "
			          "changed. Fix: --map-schema one of their schemas to a schema of its own",
			          names[2 * i], names[2 * i + 1], names[2 * j], names[2 * j + 1], ti,
			          names[2 * i + 1]);
			return TM_EXIT_CONFIG;
		}
	return TM_OK;
}

/* A target name already taken by another table of the catalog (of another
 * pipeline, or another source table of this one). */
static int
check_claims(PGconn *target, const char *slot, const schema_map *m, char *const *names, int n)
{
	json_t *want = json_array();
	char *want_text;
	const char *p[2] = {slot, NULL};
	PGresult *r = NULL;
	int rc;

	for (int i = 0; i < n; i++)
		json_array_append_new(want, json_pack("{s:s, s:s, s:s}", "ss", names[2 * i], "ts",
		                                      schema_map_target(m, names[2 * i]), "tn",
		                                      names[2 * i + 1]));
	want_text = json_dumps(want, JSON_COMPACT);
	p[1] = want_text;
	rc = pgconn_exec(target, PGCONN_TARGET, "looking for tables of other pipelines",
	                 "SELECT w.ss, w.tn, w.ts, t.slot_name, t.source_schema, t.source_table"
	                 " FROM jsonb_to_recordset($2::jsonb) AS w(ss text, ts text, tn text)"
	                 " JOIN tidemark.tables t ON t.target_schema = w.ts AND t.target_table = w.tn"
	                 "  AND t.state <> 'dropped'"
	                 " WHERE NOT (t.slot_name = $1 AND t.source_schema = w.ss"
	                 "  AND t.source_table = w.tn) ORDER BY 1, 2", 2, p, &r);
	for (int i = 0; rc == TM_OK && i < PQntuples(r); i++)
		log_error("setup: %s.%s would be %s.%s on the target, which pipeline \"%s\" fills from "
		          "its %s.%s; nothing was changed. Fix: give this pipeline a target schema of "
		          "its own (--target-schema NAME, or --map-schema %s=NAME)",
		          PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
		          PQgetvalue(r, i, 1), PQgetvalue(r, i, 3), PQgetvalue(r, i, 4),
		          PQgetvalue(r, i, 5), PQgetvalue(r, i, 0));
	if (rc == TM_OK && PQntuples(r) > 0)
		rc = TM_EXIT_CONFIG;
	PQclear(r);
	free(want_text);
	json_decref(want);
	return rc;
}

/* The slot, if the source server has it: this database's, and this
 * target's (two targets cannot stream from one slot). */
static int
check_slot(PGconn *src, const char *slot, bool registered)
{
	const char *p[] = {slot};
	PGresult *r = NULL;
	int rc = pgconn_exec(src, PGCONN_SOURCE, "looking up the replication slot",
	                     "SELECT database, database = current_database(), active"
	                     " FROM pg_replication_slots WHERE slot_name = $1", 1, p, &r);

	if (rc == TM_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "t") != 0) {
		log_error("source: replication slot \"%s\" belongs to database \"%s\" of this server, "
		          "another pipeline's; nothing was changed. Fix: give this pipeline its own "
		          "slot and publication (--slot NAME --publication NAME)", slot,
		          PQgetisnull(r, 0, 0) ? "(none: a physical slot)" : PQgetvalue(r, 0, 0));
		rc = TM_EXIT_CONFIG;
	} else if (rc == TM_OK && PQntuples(r) == 1 && !registered) {
		log_error("source: replication slot \"%s\" exists already (%s), but this target has no "
		          "pipeline of that name: another target may stream from it, and two cannot "
		          "share a slot; nothing was changed. Fix: choose another --slot; if the slot "
		          "is left over and nothing uses it, drop it on the source: SELECT "
		          "pg_drop_replication_slot('%s')", slot,
		          strcmp(PQgetvalue(r, 0, 2), "t") == 0 ? "in use now" : "not in use now", slot);
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

static int
has_tables(PGconn *target, bool *has)
{
	PGresult *r = NULL;
	int rc = pgconn_exec(target, PGCONN_TARGET, "looking for tidemark's catalog",
	                     "SELECT to_regclass('tidemark.tables') IS NOT NULL", 0, NULL, &r);

	*has = rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return rc;
}

int
pipeline_check_setup(PGconn *target, PGconn *src, const char *slot,
                     const pipeline_source *ps, const schema_map *want, char *const *names,
                     int n, schema_map *merged)
{
	pipeline_info info;
	tm_error err;
	bool tables = false;
	int rc = pipeline_load((pipeline_target){NULL, target}, slot, &info);

	memset(merged, 0, sizeof *merged);
	if (rc == TM_OK)
		rc = oid_from_slot(src, slot, &info, ps);
	if (rc == TM_OK)
		rc = check_source((pipeline_target){NULL, target}, slot, src, &info, ps);
	if (rc == TM_OK) {
		*merged = info.map;
		memset(&info.map, 0, sizeof info.map);
		if (schema_map_merge(merged, want, &err) != 0) {
			log_error("setup: %s; nothing was changed. Fix: leave the option out (the recorded "
			          "mapping stays), or start another pipeline (another --slot) for another "
			          "mapping", err.msg);
			rc = TM_EXIT_CONFIG;
		}
	}
	if (rc == TM_OK)
		rc = check_own_claims(merged, names, n);
	if (rc == TM_OK && info.exists)
		rc = check_moves(target, slot, merged);
	if (rc == TM_OK)
		rc = has_tables(target, &tables);
	if (rc == TM_OK && tables) /* other pipelines' tables count too */
		rc = check_claims(target, slot, merged, names, n);
	if (rc == TM_OK)
		rc = check_slot(src, slot, info.exists);
	pipeline_info_clear(&info);
	return rc;
}

/* ---- recording ---- */

int
pipeline_save(sink *s, const char *slot, const pipeline_source *ps, const schema_map *map)
{
	const char *p[] = {slot, map->target_schema};
	int rc = record_source((pipeline_target){s, NULL}, slot, ps);

	if (rc == TM_OK)
		rc = sink_command(s, "recording the pipeline's target schema",
		                  "UPDATE tidemark.progress SET target_schema = $2 WHERE slot_name = $1"
		                  " AND target_schema IS DISTINCT FROM $2", 2, p);
	for (int i = 0; rc == TM_OK && i < map->n; i++) {
		const char *mp[] = {slot, map->from[i], map->to[i]};

		rc = sink_command(s, "recording the pipeline's schema mapping",
		                  "INSERT INTO tidemark.schema_map (slot_name, source_schema, target_schema)"
		                  " VALUES ($1, $2, $3) ON CONFLICT (slot_name, source_schema) DO NOTHING",
		                  3, mp);
	}
	return rc;
}

int
pipeline_target_schema(sink *s, const char *slot, const char *source_schema, char **out)
{
	const char *p[] = {slot, source_schema};
	PGresult *r = NULL;
	int rc = sink_query(s, "finding the target schema", "SELECT tidemark.map_schema($1, $2)", 2,
	                    p, &r);

	*out = rc == TM_OK ? xstrdup(PQgetvalue(r, 0, 0)) : NULL;
	PQclear(r);
	return rc;
}
