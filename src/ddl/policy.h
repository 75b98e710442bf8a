/*
 * policy.h: the schema-change policies (ddl_track.h: widen, follow,
 * quarantine, stop), kept in the target catalog
 * (migrations/target/011_policies.sql):
 *   - each replicated table's own (tidemark.tables.policy), and the
 *     replication's default (tidemark.policy_defaults): set by `setup
 *     --policy P --table-policy SCHEMA.TABLE=P` and `tidemark policy`;
 *   - what a `run` was given on its command line (--policy,
 *     --table-policy): in force for that run only (tidemark.run_policies,
 *     tied to the run's apply connection).
 * Which one is in force for a table is decided in one place, the catalog's
 * tidemark.policy_in_force(slot, table_id): a run's --table-policy for the
 * table, the table's own, a run's --policy, the stored default, widen.
 * Table names are read the SQL way ('public."Line Items"=follow').
 */
#ifndef TIDEMARK_POLICY_H
#define TIDEMARK_POLICY_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "ddl_track.h"
#include "sink.h"

/* One policy given on a command line: for a table, or (schema and name
 * NULL) the default. */
typedef struct policy_setting {
	char *schema;        /* owned */
	char *name;          /* owned */
	ddl_policy policy;
	bool clear;          /* SCHEMA.TABLE=default: the table's own is removed */
} policy_setting;

typedef struct policy_settings {
	int n;
	policy_setting *items; /* owned */
} policy_settings;

/*
 * A command line's policies: the default (def, may be NULL) and per table
 * ("SCHEMA.TABLE=P", n of them; allow_clear: P may be "default"). option
 * names the flag in messages ("--table-policy"). *out is filled
 * (policy_settings_free, also after a failure). Returns TM_OK, or
 * TM_EXIT_USAGE after saying what is wrong.
 */
int policy_settings_parse(const char *def, const char *const *tables, int n, const char *option,
                          bool allow_clear, policy_settings *out);
void policy_settings_free(policy_settings *ps);

/* Stores them, in one transaction of their own, and says so: the default,
 * and each table's (a table not replicated through slot: TM_EXIT_CONFIG,
 * naming it, and nothing is stored). */
int policy_store(sink *s, const char *slot, const policy_settings *ps);

/* A run's command-line policies, in force for as long as the sink's
 * connection lives (replacing those of any earlier run). With log_them,
 * each is logged with what it overrides. */
int policy_record_run(sink *s, const char *slot, const policy_settings *ps, bool log_them);

/* The policy in force for a registered table, and what set it ("table",
 * "default", "run --policy", ...: *set_by a new string, may be NULL). */
int policy_in_force(sink *s, const char *slot, int table_id, ddl_policy *out, char **set_by);

/* Does the catalog on conn know stored policies (a catalog from before
 * migration 011 does not)? */
bool policy_catalog_has(PGconn *conn);

#endif
