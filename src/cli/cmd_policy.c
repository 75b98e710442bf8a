/*
 * cmd_policy.c: `tidemark policy [SCHEMA.TABLE=P]... [--default P]
 * [--json]`: sets the stored schema-change policies (policy.h), then lists
 * them with the policy in force for each replicated table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "exitcode.h"
#include "log.h"
#include "policy.h"
#include "report.h"

static void
print_text(json_t *doc)
{
	json_t *def = json_object_get(doc, "default"), *t;
	size_t i;

	printf("default policy: %s%s\n", report_str(def, "policy"),
	       json_is_true(json_object_get(def, "stored")) ? "" : " (none stored)");
	json_array_foreach(json_object_get(doc, "tables"), i, t)
		printf("  %-40s %-10s (set by: %s)\n", report_str(t, "table"), report_str(t, "policy"),
		       report_str(t, "set_by"));
}

static int
list(sink *s, const cli_options *o)
{
	const char *p[] = {o->slot};
	PGresult *d = NULL, *r = NULL;
	json_t *doc;
	int rc = sink_query(s, "reading the default policy",
	                    "SELECT coalesce((SELECT policy FROM tidemark.policy_defaults"
	                    " WHERE slot_name = $1), 'widen') AS policy, EXISTS (SELECT 1 FROM"
	                    " tidemark.policy_defaults WHERE slot_name = $1) AS stored", 1, p, &d);

	if (rc == TM_OK)
		rc = sink_query(s, "reading the tables' policies",
		                "SELECT format('%s.%s', quote_ident(t.source_schema),"
		                " quote_ident(t.source_table)) AS table, f.policy, f.set_by,"
		                " t.policy AS stored FROM tidemark.tables t,"
		                " tidemark.policy_in_force($1, t.table_id) f"
		                " WHERE t.slot_name = $1 AND t.state <> 'dropped' ORDER BY 1", 1, p, &r);
	if (rc == TM_OK) {
		doc = json_pack("{s:o, s:o}", "default", report_row(d, 0), "tables", report_rows(r));
		if (o->json)
			report_print_json(doc);
		else
			print_text(doc);
		json_decref(doc);
	}
	PQclear(d);
	PQclear(r);
	return rc;
}

/* A catalog from before stored policies (migration 011) is brought up to
 * date by setup or run, not here. */
static int
check_catalog(sink *s)
{
	PGresult *r = NULL;
	int rc = sink_query(s, "looking for stored policies",
	                    "SELECT to_regprocedure('tidemark.policy_in_force(text, integer)')"
	                    " IS NOT NULL", 0, NULL, &r);

	if (rc == TM_OK && strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
		log_error("target: the tidemark catalog has no stored policies yet (it is older, or "
		          "missing). Fix: `tidemark setup` again with the same options (or start "
		          "`tidemark run`, which brings the catalog up to date)");
		rc = TM_EXIT_CONFIG;
	}
	PQclear(r);
	return rc;
}

int
cmd_policy(const cli_options *o)
{
	policy_settings ps = {0};
	sink *s = NULL;
	int rc = cli_require(o, false, true);

	if (rc == TM_OK)
		rc = policy_settings_parse(o->policy, o->table_policies, o->ntable_policies, "policy",
		                           true, &ps);
	if (rc == TM_OK)
		rc = sink_open(o->target, "policy", &s);
	if (rc == TM_OK)
		rc = check_catalog(s);
	if (rc == TM_OK && ps.n > 0)
		rc = policy_store(s, o->slot, &ps);
	if (rc == TM_OK)
		rc = list(s, o);
	sink_close(s);
	policy_settings_free(&ps);
	return rc;
}
