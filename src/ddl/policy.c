#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "ident.h"
#include "log.h"
#include "pgconn.h"
#include "xalloc.h"

/* "SCHEMA.TABLE=P" into *ps; the name is read the SQL way. */
static int
parse_one(const char *text, const char *option, bool allow_clear, policy_setting *ps)
{
	const char *eq = strrchr(text, '=');
	char *name;
	tm_error err;
	int rc;

	memset(ps, 0, sizeof *ps);
	if (eq != NULL && allow_clear && strcmp(eq + 1, "default") == 0)
		ps->clear = true;
	else if (eq == NULL || ddl_policy_parse(eq + 1, &ps->policy) != 0) {
		log_error("%s %s: expected SCHEMA.TABLE=widen|follow|quarantine|stop%s", option, text,
		          allow_clear ? "|default" : "");
		return TM_EXIT_USAGE;
	}
	if ((name = strndup(text, (size_t) (eq - text))) == NULL)
		abort();
	rc = ident_parse_qualified(name, "public", &ps->schema, &ps->name, &err);
	free(name);
	if (rc != 0) {
		log_error("%s %s: %s", option, text, err.msg);
		return TM_EXIT_USAGE;
	}
	return TM_OK;
}

int
policy_settings_parse(const char *def, const char *const *tables, int n, const char *option,
                      bool allow_clear, policy_settings *out)
{
	int rc = TM_OK;

	out->n = 0;
	out->items = xcalloc((size_t) n + 1, sizeof *out->items);
	if (def != NULL) {
		policy_setting *d = &out->items[out->n++];

		memset(d, 0, sizeof *d);
		if (ddl_policy_parse(def, &d->policy) != 0) {
			log_error("the default policy must be widen, follow, quarantine or stop, not \"%s\"",
			          def);
			rc = TM_EXIT_USAGE;
		}
	}
	for (int i = 0; rc == TM_OK && i < n; i++) {
		rc = parse_one(tables[i], option, allow_clear, &out->items[out->n]);
		out->n += out->items[out->n].name != NULL;
	}
	return rc;
}

void
policy_settings_free(policy_settings *ps)
{
	for (int i = 0; i < ps->n; i++) {
		free(ps->items[i].schema);
		free(ps->items[i].name);
	}
	free(ps->items);
	ps->items = NULL;
	ps->n = 0;
}

static int
store_one(sink *s, const char *slot, const policy_setting *p)
{
	const char *name = ddl_policy_name(p->policy);
	PGresult *r = NULL;
	int rc;

	if (p->name == NULL)
		return sink_command(s, "storing the default policy",
		                    "INSERT INTO tidemark.policy_defaults (slot_name, policy)"
		                    " VALUES ($1, $2) ON CONFLICT (slot_name)"
		                    " DO UPDATE SET policy = EXCLUDED.policy, set_at = now()",
		                    2, (const char *const[]) {slot, name});
	rc = sink_query(s, "storing a table's policy",
	                "UPDATE tidemark.tables SET policy = $4 WHERE slot_name = $1"
	                " AND source_schema = $2 AND source_table = $3 AND state <> 'dropped'"
	                " RETURNING table_id",
	                4, (const char *const[]) {slot, p->schema, p->name, p->clear ? NULL : name},
	                &r);
	if (rc == TM_OK && PQntuples(r) == 0) {
		log_error("%s.%s is not replicated through slot \"%s\": no policy stored for it. Fix: "
		          "name a replicated table (`tidemark status` lists them)", p->schema, p->name,
		          slot);
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

static void
log_stored(const policy_setting *p)
{
	if (p->name == NULL)
		log_info("target: default schema-change policy: %s", ddl_policy_name(p->policy));
	else if (p->clear)
		log_info("target: %s.%s follows the default schema-change policy", p->schema, p->name);
	else
		log_info("target: schema-change policy of %s.%s: %s", p->schema, p->name,
		         ddl_policy_name(p->policy));
}

int
policy_store(sink *s, const char *slot, const policy_settings *ps)
{
	int rc = sink_begin(s);

	for (int i = 0; rc == TM_OK && i < ps->n; i++)
		rc = store_one(s, slot, &ps->items[i]);
	if (rc == TM_OK)
		rc = sink_commit(s, NULL);
	else
		sink_rollback(s);
	for (int i = 0; rc == TM_OK && i < ps->n; i++)
		log_stored(&ps->items[i]);
	return rc;
}

/* What a run's setting overrides, said once. */
static int
log_override(sink *s, const char *slot, const policy_setting *p)
{
	const char *name = ddl_policy_name(p->policy);
	PGresult *r = NULL;
	int rc;

	if (p->name == NULL) {
		rc = sink_query(s, "reading the default policy",
		                "SELECT policy FROM tidemark.policy_defaults WHERE slot_name = $1", 1,
		                (const char *const[]) {slot}, &r);
		if (rc == TM_OK)
			log_info("--policy %s overrides the stored default policy (%s) for this run", name,
			         PQntuples(r) ? PQgetvalue(r, 0, 0) : "none stored: widen");
		PQclear(r);
		return rc;
	}
	rc = sink_query(s, "reading a table's policy",
	                "SELECT policy FROM tidemark.tables WHERE slot_name = $1"
	                " AND source_schema = $2 AND source_table = $3 AND state <> 'dropped'",
	                3, (const char *const[]) {slot, p->schema, p->name}, &r);
	if (rc == TM_OK && PQntuples(r) == 0)
		log_warn("--table-policy %s.%s=%s: the table is not replicated (yet); the policy applies "
		         "to it in this run if it comes", p->schema, p->name, name);
	else if (rc == TM_OK && PQgetisnull(r, 0, 0))
		log_info("--table-policy %s.%s=%s overrides the default policy for the table for this "
		         "run", p->schema, p->name, name);
	else if (rc == TM_OK)
		log_info("--table-policy %s.%s=%s overrides the policy stored for the table (%s) for "
		         "this run", p->schema, p->name, name, PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

static int
record_run(sink *s, const char *slot, const policy_settings *ps, bool log_them)
{
	int rc = sink_command(s, "replacing an earlier run's policies",
	                      "DELETE FROM tidemark.run_policies WHERE slot_name = $1", 1,
	                      (const char *const[]) {slot});

	for (int i = 0; rc == TM_OK && i < ps->n; i++) {
		const policy_setting *p = &ps->items[i];

		rc = sink_command(s, "recording a run's policy",
		                  "INSERT INTO tidemark.run_policies (slot_name, source_schema,"
		                  " source_table, policy, backend_pid, backend_start)"
		                  " SELECT $1, $2, $3, $4, pid, backend_start FROM pg_stat_activity"
		                  " WHERE pid = pg_backend_pid()",
		                  4, (const char *const[]) {slot, p->schema, p->name,
		                                            ddl_policy_name(p->policy)});
		if (rc == TM_OK && log_them)
			rc = log_override(s, slot, p);
	}
	return rc;
}

int
policy_record_run(sink *s, const char *slot, const policy_settings *ps, bool log_them)
{
	int rc = sink_begin(s);

	if (rc == TM_OK)
		rc = record_run(s, slot, ps, log_them);
	if (rc == TM_OK)
		rc = sink_commit(s, NULL);
	else
		sink_rollback(s);
	return rc;
}

int
policy_in_force(sink *s, const char *slot, int table_id, ddl_policy *out, char **set_by)
{
	char id[16];
	PGresult *r = NULL;
	int rc;

	snprintf(id, sizeof id, "%d", table_id);
	rc = sink_query(s, "reading the policy in force",
	                "SELECT policy, set_by FROM tidemark.policy_in_force($1, $2::int)", 2,
	                (const char *const[]) {slot, id}, &r);
	*out = DDL_POLICY_WIDEN;
	if (rc == TM_OK && ddl_policy_parse(PQgetvalue(r, 0, 0), out) != 0) {
		log_error("target: tidemark.policy_in_force gave \"%s\", which is no policy",
		          PQgetvalue(r, 0, 0));
		rc = TM_EXIT_TARGET;
	}
	if (rc == TM_OK && set_by != NULL)
		*set_by = xstrdup(PQgetvalue(r, 0, 1));
	PQclear(r);
	return rc;
}

bool
policy_catalog_has(PGconn *conn)
{
	PGresult *r = NULL;
	bool has = pgconn_exec(conn, PGCONN_TARGET, "looking for stored policies",
	                       "SELECT to_regprocedure('tidemark.policy_in_force(text, integer)')"
	                       " IS NOT NULL", 0, NULL, &r) == TM_OK &&
	           strcmp(PQgetvalue(r, 0, 0), "t") == 0;

	PQclear(r);
	return has;
}
