/*
 * schema_sync_rewrite.c: what schema_sync knows of how the source
 * converted a table's values, and the target's side of a type change.
 *
 * - Rewrites: each table the source rewrote in a transaction, with the
 *   table_rewrite reasons, for the transaction (a computed default, a
 *   conversion) and for the command the next ddl message ends (a rewrite
 *   message comes before its command's ddl message). Grows with the
 *   transaction: a migration that rewrites hundreds of tables has each one
 *   noted.
 * - The statement text's ALTER ... TYPE clauses (ddl_using.h), parsed once
 *   per text: a script sent as one string carries hundreds of them, and
 *   its messages come one per command.
 * - The target's ALTER COLUMN ... TYPE: under the source session's
 *   settings when the plan says so (SET LOCAL by set_config, restored
 *   right after, so that nothing else of the target transaction runs
 *   under them), and in a plan that copies the table again, on an emptied
 *   table when its rows refuse the conversion.
 */
#include "schema_sync_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dml_sql.h"
#include "exitcode.h"
#include "log.h"
#include "target_ddl.h"
#include "xalloc.h"

/* table_rewrite's reason for a column's values converted */
#define REWRITE_CONVERTED 4

/* ---- rewrites ---- */

static void
begin_xact(schema_sync *ss, long long xid)
{
	if (xid == ss->rewrite_xid)
		return;
	ss->rewrite_xid = xid;
	ss->nrewrites = 0;
}

static sync_rewrite *
rewrite_of(const schema_sync *ss, long long xid, uint32_t relid)
{
	if (xid != ss->rewrite_xid)
		return NULL;
	for (int i = 0; i < ss->nrewrites; i++)
		if (ss->rewrites[i].relid == relid)
			return &ss->rewrites[i];
	return NULL;
}

void
schema_sync_note_rewrite(schema_sync *ss, const ddl_event *e)
{
	/* a capture that does not say why: taken for a conversion */
	int reason = e->rewrite_reason != 0 ? e->rewrite_reason : REWRITE_CONVERTED;
	sync_rewrite *r;

	begin_xact(ss, e->xid);
	if (e->rewrite_relid == 0)
		return;
	r = rewrite_of(ss, e->xid, e->rewrite_relid);
	if (r == NULL) {
		if (ss->nrewrites == ss->rewrites_cap) {
			ss->rewrites_cap = ss->rewrites_cap ? 2 * ss->rewrites_cap : 64;
			ss->rewrites = xrealloc(ss->rewrites, sizeof *ss->rewrites * (size_t) ss->rewrites_cap);
		}
		r = &ss->rewrites[ss->nrewrites++];
		memset(r, 0, sizeof *r);
		r->relid = e->rewrite_relid;
	}
	r->reasons |= reason;
	r->command_reasons |= reason;
}

bool
schema_sync_was_rewritten(const schema_sync *ss, long long xid, uint32_t relid)
{
	return rewrite_of(ss, xid, relid) != NULL;
}

static bool
converted_now(const schema_sync *ss, long long xid, uint32_t relid)
{
	const sync_rewrite *r = rewrite_of(ss, xid, relid);

	return r != NULL && (r->command_reasons & REWRITE_CONVERTED) != 0;
}

bool
schema_sync_converted(const schema_sync *ss, const ddl_event *e, uint32_t relid)
{
	if (converted_now(ss, e->xid, relid))
		return true;
	/* a partitioned table's rows are its partitions' */
	for (int i = 0; i < e->ntables; i++)
		if (e->tables[i].partition_root == relid &&
		    converted_now(ss, e->xid, e->tables[i].def->relid))
			return true;
	return false;
}

void
schema_sync_command_done(schema_sync *ss)
{
	for (int i = 0; i < ss->nrewrites; i++)
		ss->rewrites[i].command_reasons = 0;
}

bool
schema_sync_truncated_first(schema_sync *ss, long long xid, uint32_t relid)
{
	if (xid != ss->truncate_xid) {
		ss->truncate_xid = xid;
		ss->ntruncated = 0;
	}
	for (int i = 0; i < ss->ntruncated; i++)
		if (ss->truncated[i] == relid)
			return false;
	if (ss->ntruncated == ss->truncated_cap) {
		ss->truncated_cap = ss->truncated_cap ? 2 * ss->truncated_cap : 64;
		ss->truncated = xrealloc(ss->truncated, sizeof *ss->truncated * (size_t) ss->truncated_cap);
	}
	ss->truncated[ss->ntruncated++] = relid;
	return true;
}

/* ---- the statement's parse ---- */

static void
forget_parse(schema_sync *ss)
{
	if (ss->parsed_ok)
		ddl_parse_result_free(&ss->parsed);
	ss->parsed_ok = false;
	free(ss->parsed_text);
	ss->parsed_text = NULL;
}

const ddl_parse_result *
schema_sync_parse(schema_sync *ss, const char *statement)
{
	tm_error err;

	if (statement == NULL)
		return NULL;
	if (ss->parsed_text == NULL || strcmp(ss->parsed_text, statement) != 0) {
		forget_parse(ss);
		ss->parsed_text = xstrdup(statement);
		ss->parsed_ok = ddl_parse_text(statement, &ss->parsed, &err) == 0;
		if (!ss->parsed_ok)
			ddl_parse_result_free(&ss->parsed);
	}
	return ss->parsed_ok ? &ss->parsed : NULL;
}

bool
schema_sync_using(schema_sync *ss, const ddl_event *e, const tabledef *old,
                  const tabledef *now, ddl_using_list *out)
{
	const ddl_parse_result *pr = schema_sync_parse(ss, e->statement);

	memset(out, 0, sizeof *out);
	if (pr == NULL)
		return false;
	ddl_using_for_table(pr, now->schema, now->name, old->schema, old->name, out);
	return true;
}

ddl_track_session
schema_sync_session(const ddl_event *e)
{
	ddl_track_session s = {e->timezone, e->datestyle, e->intervalstyle, e->float_digits,
	                       e->bytea_output};

	return s;
}

void
schema_sync_rewrite_free(schema_sync *ss)
{
	free(ss->rewrites);
	free(ss->truncated);
	forget_parse(ss);
}

/* ---- the target's ALTER COLUMN ... TYPE ---- */

/* "SELECT set_config($1, $2, true), ..." for n settings. */
static void
set_config_sql(int n, strbuf *sql)
{
	strbuf_append(sql, "SELECT ");
	for (int i = 0; i < n; i++)
		strbuf_appendf(sql, "%sset_config($%d, $%d, true)", i ? ", " : "", 2 * i + 1, 2 * i + 2);
}

/* The target session's values of the settings, to restore: *saved new
 * strings (n of them). */
static int
read_settings(schema_sync *ss, int n, const char **names, char **saved)
{
	strbuf sql = STRBUF_INIT;
	PGresult *r = NULL;
	int rc;

	strbuf_append(&sql, "SELECT ");
	for (int i = 0; i < n; i++)
		strbuf_appendf(&sql, "%scurrent_setting($%d)", i ? ", " : "", i + 1);
	rc = sink_query(ss->sink, "reading the target session's settings", strbuf_str(&sql), n,
	                names, &r);
	for (int i = 0; rc == TM_OK && i < n; i++)
		saved[i] = xstrdup(PQgetvalue(r, 0, i));
	PQclear(r);
	strbuf_free(&sql);
	return rc;
}

/* Sets the n settings to values for the rest of the target transaction;
 * *refused: the target does not take one (its message, new string). */
static int
apply_settings(schema_sync *ss, int n, const char **names, const char *const *values,
               bool try, char **refused)
{
	const char *p[10];
	strbuf sql = STRBUF_INIT;
	int rc;

	for (int i = 0; i < n; i++) {
		p[2 * i] = names[i];
		p[2 * i + 1] = values[i];
	}
	set_config_sql(n, &sql);
	if (try)
		rc = sink_try_params(ss->sink, "setting the source session's settings", strbuf_str(&sql),
		                     2 * n, p, refused);
	else
		rc = sink_command(ss->sink, "restoring the session's settings", strbuf_str(&sql), 2 * n,
		                  p);
	strbuf_free(&sql);
	return rc;
}

/* The ALTER, on an emptied table when the rows refuse it (recopied). */
static int
alter(schema_sync *ss, const char *schema, const char *table, const ddl_action *a, strbuf *sql,
      sync_note *note)
{
	char *refused = NULL;
	int rc;

	if (!a->recopied)
		return sink_command(ss->sink, "changing a target column's type", strbuf_str(sql), 0, NULL);
	rc = sink_try(ss->sink, "changing a target column's type", strbuf_str(sql), &refused);
	if (rc != TM_OK || refused == NULL)
		return rc;
	log_warn("target: %s.%s: its rows do not take column %s's conversion to %s (%s): the "
	         "source computed the new values itself; the table is emptied and copied again",
	         schema, table, a->column, a->type, refused);
	schema_sync_note_list(&note->actions, "the target's rows did not take the conversion: "
	                      "the table was emptied for its copy");
	free(refused);
	rc = schema_sync_empty_for_copy(ss, schema, table);
	if (rc == TM_OK)
		rc = sink_command(ss->sink, "changing a target column's type", strbuf_str(sql), 0, NULL);
	return rc;
}

int
schema_sync_alter_type(schema_sync *ss, const char *schema, const char *table,
                       const ddl_action *a, const ddl_track_session *session,
                       sync_note *note, bool *recopy)
{
	const char *names[5], *values[5];
	char *saved[5] = {NULL}, *refused = NULL;
	int n = a->settings != 0 ? ddl_track_settings(session, a->settings, names, values) : 0;
	strbuf sql = STRBUF_INIT;
	tm_error err;
	int rc;

	if (target_ddl_alter_type(&sql, schema, table, a->column, a->from_type, a->type, &err) != 0) {
		log_error("target: cannot %s: %s", a->why, err.msg);
		strbuf_free(&sql);
		return TM_EXIT_TARGET;
	}
	rc = n > 0 ? read_settings(ss, n, names, saved) : TM_OK;
	if (rc == TM_OK && n > 0)
		rc = apply_settings(ss, n, names, values, true, &refused);
	if (rc == TM_OK && refused != NULL) {
		log_warn("target: %s.%s: the target does not take the source session's settings for "
		         "column %s's conversion (%s): it is converted under tidemark's, and the table "
		         "is copied again", schema, table, a->column, refused);
		schema_sync_note_list(&note->actions, "the target refused the source session's "
		                      "settings: copied again");
		*recopy = true;
		n = 0;
	}
	if (rc == TM_OK)
		rc = alter(ss, schema, table, a, &sql, note);
	if (rc == TM_OK && n > 0)
		rc = apply_settings(ss, n, names, (const char *const *) saved, false, NULL);
	for (int i = 0; i < 5; i++)
		free(saved[i]);
	free(refused);
	strbuf_free(&sql);
	return rc;
}
