/*
 * cli.c: the option table, the command-line parser and the help.
 *
 * Adding an option: a field in cli_options (cli.h) and one entry below,
 * which gives it to the command line, the help and the config file at
 * once; then its line in the man page (docs/tidemark.1.in) and the bash
 * completion (contrib/bash-completion/tidemark), which test_service checks
 * against the help. For example:
 *   {"metrics-listen", 0, "ADDR:PORT", STRING(metrics_listen), ON(RUN), ON(RUN),
 *    "serve Prometheus metrics on ADDR:PORT"},
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "exitcode.h"
#include "log.h"
#include "prom.h"

static const char *const command_names[CLI_NCOMMANDS] = {
	"setup", "run", "status", "snapshot", "schema", "ddl-log", "verify", "teardown", "policy",
	"mode", "resync",
};

/* ---- the option table ------------------------------------------------------ */

static int set_string(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n);
static int set_list(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n);
static int set_flag(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n);
static int set_long(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n);
static int set_int(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n);
static int set_seconds(cli_options *o, const cli_option *opt, const char *arg, char *err,
                       size_t n);
static int set_size(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n);
static int set_log_format(cli_options *o, const cli_option *opt, const char *arg, char *err,
                          size_t n);
static int set_verbose(cli_options *o, const cli_option *opt, const char *arg, char *err,
                       size_t n);
static int set_quiet(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n);
static int set_listen(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n);

/* Which commands: a bit per cli_command. */
#define ALL ((1u << CLI_NCOMMANDS) - 1)
#define ON(c) (1u << CLI_##c)
#define NONE 0u
/* resync goes on as run: it takes run's options */
#define RUNS (ON(RUN) | ON(RESYNC))

/* What an entry sets, and how (the kind of value, setter, field, count,
 * range): one of these per entry. */
#define F(f) offsetof(cli_options, f)
#define STRING(f) CLI_VALUE_TEXT, set_string, F(f), 0, 0, 0
#define LIST(f, n) CLI_VALUE_LIST, set_list, F(f), F(n), 0, 0
#define FLAG(f) CLI_VALUE_FLAG, set_flag, F(f), 0, 0, 0
#define LONG(f, lo, hi) CLI_VALUE_NUMBER, set_long, F(f), 0, lo, hi
#define INT(f, lo, hi) CLI_VALUE_NUMBER, set_int, F(f), 0, lo, hi
#define SECONDS(f, lo, hi) CLI_VALUE_NUMBER, set_seconds, F(f), 0, lo, hi
#define SIZE(f, lo, hi) CLI_VALUE_NUMBER, set_size, F(f), 0, lo, hi
#define CUSTOM(kind, fn, f) kind, fn, F(f), 0, 0, 0

#define KB 1024LL
#define MB (1024LL * 1024)

/*
 * Every option, once: name (also its config file key), short name,
 * argument, what it sets, the commands that take it on the command line,
 * those that take it from a config file (NONE: the command line only), and
 * its help. Options of every command come last, in the order --help lists
 * them.
 */
const cli_option cli_option_table[] = {
	{"table", 0, "SCHEMA.TABLE", LIST(tables, ntables), ON(SETUP), ON(SETUP),
	 "a table to replicate (repeatable); identifiers are read\n"
	 "the SQL way: 'public.\"Line Items\"'"},
	{"schema", 0, "NAME", LIST(schemas, nschemas), ON(SETUP), ON(SETUP),
	 "every table of a schema, including tables created later\n(repeatable)"},
	{"exclude-table", 0, "SCHEMA.TABLE", LIST(exclude_tables, nexclude_tables), ON(SETUP),
	 ON(SETUP),
	 "leave a table of a --schema out (repeatable); it is\n"
	 "not replicated now nor when it is created again later"},
	{"target-schema", 0, "NAME", STRING(target_schema), ON(SETUP), ON(SETUP),
	 "put every table of this pipeline into schema NAME on the\n"
	 "target (default: the source's schema names)"},
	{"map-schema", 0, "SRC=DST", LIST(map_schemas, nmap_schemas), ON(SETUP), ON(SETUP),
	 "put the tables of source schema SRC into target schema DST\n"
	 "(repeatable; before --target-schema)"},
	{"policy", 0, "P", STRING(policy), ON(SETUP), ON(SETUP),
	 "the default policy for a column type change that cannot\n"
	 "widen: widen, follow, quarantine or stop (kept; see\n"
	 "`tidemark policy`)"},
	{"table-policy", 0, "SCHEMA.TABLE=P", LIST(table_policies, ntable_policies), ON(SETUP),
	 ON(SETUP), "the same, for one table of this setup (repeatable)"},
	{"table-mode", 0, "SCHEMA.TABLE=MODE", LIST(table_modes, ntable_modes), ON(SETUP),
	 ON(SETUP),
	 "what the target keeps of a table of this setup:\n"
	 "mirror, history, soft-delete or history,soft-delete\n"
	 "(repeatable; kept: see `tidemark mode`)"},
	{"metadata-columns", 0, NULL, FLAG(metadata_columns), ON(SETUP), ON(SETUP),
	 "the columns tidemark_lsn and tidemark_synced_at on\n"
	 "every table of this setup and the tables joining later"},
	{"until-caught-up", 0, NULL, FLAG(until_caught_up), RUNS, NONE,
	 "exit 0 once everything the source had written when run\n"
	 "started is applied and no snapshot is pending"},
	{"chunk-rows", 0, "N", LONG(chunk_rows, 1, 10000000), RUNS, RUNS,
	 "snapshot chunk size in rows (default 20000)"},
	{"chunk-bytes", 0, "SIZE", SIZE(chunk_bytes, 16 * KB, 4096 * MB), RUNS, RUNS,
	 "and in bytes, as read (default 32MB; kB, MB, GB)"},
	{"snapshot-readers", 0, "N", INT(snapshot_readers, 1, 16), RUNS, RUNS,
	 "parallel snapshot reader connections (default 1)"},
	{"apply-workers", 0, "N", INT(apply_workers, 1, 16), RUNS, RUNS,
	 "target connections applying groups in parallel,\n"
	 "committing in source order (default 2; 1: the apply's own only)"},
	/* a run's own policies are for that run: a file's are setup's, stored */
	{"policy", 0, "P", STRING(policy), RUNS, NONE,
	 "for a column type change that cannot widen: widen,\n"
	 "follow, quarantine or stop, for this run only (instead\n"
	 "of the stored default: see `tidemark policy`)"},
	{"table-policy", 0, "SCHEMA.TABLE=P", LIST(table_policies, ntable_policies), RUNS, NONE,
	 "the same, for one table (repeatable; instead of\n"
	 "the table's stored policy)"},
	{"drop-columns", 0, NULL, FLAG(drop_columns), RUNS, RUNS,
	 "drop on the target the columns dropped on the source\n"
	 "(default: keep them, no longer filled)"},
	{"no-net-changes", 0, NULL, FLAG(no_net_changes), RUNS, RUNS,
	 "apply every source change as it came (default: each\n"
	 "key's net change per target transaction)"},
	{"no-streaming", 0, NULL, FLAG(no_streaming), RUNS, RUNS,
	 "do not ask the source to stream large transactions while\n"
	 "they are in progress (default: it does, and they are\n"
	 "applied as they come where they can be)"},
	{"spool-dir", 0, "DIR", STRING(spool_dir), RUNS, RUNS,
	 "where streamed transactions wait for their commit\n"
	 "(default: $TMPDIR, else /tmp; files removed at once)"},
	{"drop-tables", 0, NULL, FLAG(drop_tables), RUNS, RUNS,
	 "drop on the target the tables dropped on the source\n"
	 "(default: keep them, no longer replicated)"},
	{"progress-interval", 0, "S", SECONDS(progress_interval, 1, 3600), RUNS, RUNS,
	 "seconds between progress lines (default 5)"},
	{"metrics-listen", 0, "ADDR:PORT", CUSTOM(CLI_VALUE_TEXT, set_listen, metrics_listen), RUNS,
	 RUNS,
	 "serve Prometheus metrics at http://ADDR:PORT/metrics\n"
	 "(127.0.0.1:9187, :9187 for every interface, [::1]:9187)"},
	{"table", 0, "SCHEMA.TABLE", LIST(tables, ntables), ON(RESYNC), NONE,
	 "copy only this table again (repeatable; only when the\n"
	 "target and the slot agree)"},
	{"source-upgraded", 0, NULL, FLAG(source_upgraded), ON(RESYNC), NONE,
	 "the source server was upgraded in place (pg_upgrade): take\n"
	 "it up as the pipeline's; with its slot kept (PostgreSQL\n"
	 "17 and later) nothing is copied again"},
	{"all", 0, NULL, FLAG(all), ON(STATUS), NONE,
	 "every pipeline of the target: its source, applied position\n"
	 "and tables (from the target only; no --source needed)"},
	{"all", 0, NULL, FLAG(all), ON(DDL_LOG), NONE, "the DDL of every pipeline of the target, each named"},
	{"default", 0, "P", STRING(policy), ON(POLICY), NONE,
	 "the default policy (initially widen)"},
	{"metadata-columns", 0, NULL, FLAG(metadata_columns), ON(MODE), NONE,
	 "the columns tidemark_lsn and tidemark_synced_at on\n"
	 "every replicated table and the tables joining later"},
	{"no-metadata-columns", 0, NULL, FLAG(no_metadata_columns), ON(MODE), NONE,
	 "remove them from every replicated table"},
	{"table", 0, "SCHEMA.TABLE", LIST(tables, ntables), ON(SNAPSHOT), NONE,
	 "a table to copy again (repeatable; or as an argument)"},
	{"table", 0, "SCHEMA.TABLE", LIST(tables, ntables), ON(DDL_LOG), NONE,
	 "only the DDL of this table"},
	{"since", 0, "POSITION", STRING(since), ON(DDL_LOG), NONE,
	 "only the DDL from this log position on"},
	{"table", 0, "SCHEMA.TABLE", LIST(tables, ntables), ON(VERIFY), NONE,
	 "a replicated table to compare (repeatable; default: all)"},
	{"chunk-rows", 0, "N", LONG(chunk_rows, 1, 10000000), ON(VERIFY), NONE,
	 "rows per compared page (default 10000)"},
	{"json", 0, NULL, FLAG(json),
	 ON(STATUS) | ON(SCHEMA) | ON(DDL_LOG) | ON(VERIFY) | ON(POLICY) | ON(MODE), NONE,
	 "the output as one JSON document"},
	{"drop-target-catalog", 0, NULL, FLAG(drop_target), ON(TEARDOWN), NONE,
	 "also drop the tidemark schema on the target"},
	/* every command */
	{"source", 0, "CONNINFO", STRING(source), ALL, ALL,
	 "source database (env TIDEMARK_SOURCE), a libpq connection\n"
	 "string or postgresql:// URI"},
	{"target", 0, "CONNINFO", STRING(target), ALL, ALL, "target database (env TIDEMARK_TARGET)"},
	{"source-password-file", 0, "FILE", STRING(source_password_file), ALL, ALL,
	 "the source's password: the first line of FILE (a systemd\n"
	 "credential, say); never shown"},
	{"target-password-file", 0, "FILE", STRING(target_password_file), ALL, ALL,
	 "the target's password, the same way"},
	{"slot", 0, "NAME", STRING(slot), ALL, ALL, "replication slot (default tidemark)"},
	{"publication", 0, "NAME", STRING(publication), ALL, ALL, "publication (default tidemark)"},
	{"config", 0, "FILE", STRING(config), ALL, NONE,
	 "read options from FILE (env TIDEMARK_CONFIG); the command\n"
	 "line overrides it"},
	{"log-format", 0, "FORMAT", CUSTOM(CLI_VALUE_TEXT, set_log_format, log_json), ALL, ALL,
	 "text (default) or json: one JSON object per log line"},
	{"verbose", 'v', NULL, CUSTOM(CLI_VALUE_COUNT, set_verbose, verbose), ALL, ALL,
	 "more log output (repeat for debug)"},
	{"quiet", 'q', NULL, CUSTOM(CLI_VALUE_FLAG, set_quiet, verbose), ALL, ALL,
	 "warnings and errors only"},
	{"help", 'h', NULL, FLAG(help), ALL, NONE, "this help"},
	{NULL, 0, NULL, 0, NULL, 0, 0, 0, 0, 0, 0, NULL},
};

const cli_option *
cli_option_find(const char *name, cli_command command, bool *exists)
{
	*exists = false;
	for (const cli_option *opt = cli_option_table; opt->name != NULL; opt++)
		if (strcmp(opt->name, name) == 0) {
			*exists = true;
			if (command < CLI_NCOMMANDS && (opt->commands & (1u << command)))
				return opt;
		}
	return NULL;
}

/* ---- setters ----------------------------------------------------------------- */

#define FIELD(o, opt, type) ((type *) (void *) ((char *) (o) + (opt)->field))

static int
set_string(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n)
{
	*FIELD(o, opt, const char *) = arg;
	return TM_OK;
}

static int
set_list(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n)
{
	const char ***arr = FIELD(o, opt, const char **);
	int *count = (int *) (void *) ((char *) o + opt->count);
	const char **p = realloc(*arr, sizeof(char *) * (size_t) (*count + 1));

	if (p == NULL)
		abort();
	p[(*count)++] = arg;
	*arr = p;
	return TM_OK;
}

/* A boolean of a config file ("true"/"false"), or a flag given (NULL). */
static bool
flag_value(const char *arg)
{
	return arg == NULL || strcmp(arg, "true") == 0;
}

static int
set_flag(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n)
{
	*FIELD(o, opt, bool) = flag_value(arg);
	return TM_OK;
}

static int
parse_number(const cli_option *opt, const char *arg, long long *out, char *err, size_t n)
{
	char *end;
	long long v = strtoll(arg, &end, 10);

	if (*arg == '\0' || *end != '\0' || v < opt->min || v > opt->max) {
		snprintf(err, n, "must be a whole number from %lld to %lld, not \"%s\"", opt->min,
		         opt->max, arg);
		return TM_EXIT_USAGE;
	}
	*out = v;
	return TM_OK;
}

/* set_long, set_int, set_seconds: a whole number in the entry's range,
 * into a field of that type */
#define NUMBER_SETTER(name, type)                                                         \
	static int name(cli_options *o, const cli_option *opt, const char *arg, char *err,    \
	                size_t n)                                                             \
	{                                                                                     \
		long long v;                                                                      \
		int rc = parse_number(opt, arg, &v, err, n);                                      \
                                                                                          \
		if (rc == TM_OK)                                                                  \
			*FIELD(o, opt, type) = (type) v;                                              \
		return rc;                                                                        \
	}
NUMBER_SETTER(set_long, long)
NUMBER_SETTER(set_int, int)
NUMBER_SETTER(set_seconds, double)

/* A size in bytes: a whole number with an optional kB, MB or GB (powers of
 * 1024, as PostgreSQL's settings read them). */
static int
set_size(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n)
{
	static const struct {
		const char *unit;
		long long factor;
	} units[] = {{"", 1}, {"B", 1}, {"kB", KB}, {"MB", MB}, {"GB", 1024 * MB}};
	char *end;
	long long v = strtoll(arg, &end, 10);

	for (size_t i = 0; *arg != '\0' && end != arg && i < sizeof units / sizeof units[0]; i++)
		if (strcmp(end, units[i].unit) == 0 && v >= 0 && v <= opt->max / units[i].factor &&
		    v * units[i].factor >= opt->min) {
			*FIELD(o, opt, long long) = v * units[i].factor;
			return TM_OK;
		}
	snprintf(err, n, "must be a size from %lld kB to %lld MB (a whole number, with kB, MB or GB), "
	         "not \"%s\"", opt->min / KB, opt->max / MB, arg);
	return TM_EXIT_USAGE;
}

static int
set_log_format(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n)
{
	if (strcmp(arg, "text") != 0 && strcmp(arg, "json") != 0) {
		snprintf(err, n, "takes text or json, not \"%s\"", arg);
		return TM_EXIT_USAGE;
	}
	*FIELD(o, opt, bool) = strcmp(arg, "json") == 0;
	return TM_OK;
}

/* -v counts; a config file says true, false or the count (0 to 2). */
static int
set_verbose(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n)
{
	static const cli_option count = {.min = 0, .max = 2};
	int *v = FIELD(o, opt, int);
	long long c;

	if (arg == NULL) {
		*v = *v < 0 ? 1 : *v + 1;
		return TM_OK;
	}
	if (strcmp(arg, "true") == 0 || strcmp(arg, "false") == 0) {
		*v = strcmp(arg, "true") == 0;
		return TM_OK;
	}
	if (parse_number(&count, arg, &c, err, n) != TM_OK)
		return TM_EXIT_USAGE;
	*v = (int) c;
	return TM_OK;
}

static int
set_quiet(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n)
{
	if (flag_value(arg))
		*FIELD(o, opt, int) = -1;
	return TM_OK;
}

/* ADDRESS:PORT of the metrics endpoint (prom_parse_listen) */
static int
set_listen(cli_options *o, const cli_option *opt, const char *arg, char *err, size_t n)
{
	char host[256];
	unsigned port;

	if (prom_parse_listen(arg, host, sizeof host, &port) != 0) {
		snprintf(err, n, "takes ADDRESS:PORT, such as 127.0.0.1:9187, :9187 (every interface) "
		         "or [::1]:9187, not \"%s\"", arg);
		return TM_EXIT_USAGE;
	}
	*FIELD(o, opt, const char *) = arg;
	return TM_OK;
}

/* ---- help ------------------------------------------------------------------ */

static const char *const command_help[CLI_NCOMMANDS] = {
	[CLI_SETUP] =
		"Usage: tidemark setup [OPTIONS] (--table SCHEMA.TABLE | --schema NAME)...\n"
		"Prepares replication; safe to run again (it only adds what is missing).\n"
		"On the source: the DDL capture event trigger, the publication and the logical slot.\n"
		"On the target: the tidemark catalog and each replicated table, created with the\n"
		"source's columns, types and primary key. Existing rows are copied by `run`.\n"
		"A pipeline is named by its --slot: several (other source databases) can share one\n"
		"target database, each with its own slot, publication and target schemas.\n",
	[CLI_RUN] =
		"Usage: tidemark run [OPTIONS]\n"
		"Streams changes from the source into the target until stopped (SIGINT/SIGTERM\n"
		"finish the current target transaction and exit 0); copies the existing rows of\n"
		"new tables chunk by chunk meanwhile, without locks.\n",
	[CLI_STATUS] =
		"Usage: tidemark status [OPTIONS] [--json] [--all]\n"
		"Shows the slot, the WAL it retains, the applied position, the lag and each\n"
		"table's state (snapshot progress).\n",
	[CLI_SNAPSHOT] =
		"Usage: tidemark snapshot [OPTIONS] SCHEMA.TABLE...\n"
		"Asks a running (or the next) `run` to copy these tables again, chunk by chunk,\n"
		"while changes keep streaming.\n",
	[CLI_SCHEMA] =
		"Usage: tidemark schema [OPTIONS] SCHEMA.TABLE [--json]\n"
		"Shows the versions of a table's columns and types, with the log position from\n"
		"which each applies.\n",
	[CLI_DDL_LOG] =
		"Usage: tidemark ddl-log [OPTIONS] [--table SCHEMA.TABLE] [--since POSITION] [--json]\n"
		"Lists the captured DDL: position, transaction, time, user, statement,\n"
		"classification and what was done on the target.\n",
	[CLI_VERIFY] =
		"Usage: tidemark verify [OPTIONS] [--table SCHEMA.TABLE]... [--json]\n"
		"Compares source and target by key ranges without long transactions; prints each\n"
		"differing key. Exits 0 when equal, 1 when not.\n",
	[CLI_TEARDOWN] =
		"Usage: tidemark teardown [OPTIONS] [--drop-target-catalog]\n"
		"Drops the slot, the publication and the DDL capture objects on the source\n"
		"(the replicated tables on the target are kept).\n",
	[CLI_POLICY] =
		"Usage: tidemark policy [OPTIONS] [SCHEMA.TABLE=P]... [--default P] [--json]\n"
		"Sets, then lists, the stored policies for a column type change that cannot widen\n"
		"(widen, follow, quarantine or stop): each table's and the default, used by every\n"
		"`run` (a run's --policy / --table-policy override them for that run only).\n"
		"SCHEMA.TABLE=P sets a replicated table's policy; P default: the table follows the\n"
		"default again.\n",
	[CLI_MODE] =
		"Usage: tidemark mode [OPTIONS] [SCHEMA.TABLE=MODE]...\n"
		"                     [--metadata-columns | --no-metadata-columns] [--json]\n"
		"Sets, then lists, what the target keeps of each replicated table: mirror (the\n"
		"source's rows as they are now), history (also every version of every row, in\n"
		"<table>_history beside it), soft-delete (a row deleted on the source stays,\n"
		"marked with tidemark_deleted_at) or history,soft-delete. Turning history on\n"
		"copies the table again, so that its history starts with every row; turning\n"
		"soft-delete off removes the marked rows; a history turned off is kept, no\n"
		"longer written.\n",
	[CLI_RESYNC] =
		"Usage: tidemark resync [OPTIONS] [--table SCHEMA.TABLE]...\n"
		"After the target was restored from a backup, the slot was lost or invalidated, or\n"
		"the source failed over: copies every table again in place while streaming (no\n"
		"table is dropped or emptied; rows the source no longer has are removed), creating\n"
		"the slot again when it is gone, then goes on as `tidemark run` (with its options).\n"
		"A resync interrupted is finished by the next `run` or `resync`. After pg_upgrade of\n"
		"the source, `--source-upgraded` takes the new server up (nothing is copied again\n"
		"when pg_upgrade kept the slot).\n",
};

#define HELP_COLUMN 25

/* "  -v, --verbose", "  --slot NAME", padded to the help's column; the
 * help's later lines indented to it. */
static void
print_option(const cli_option *opt)
{
	char head[96];
	const char *help = opt->help;
	int len = opt->short_name ? snprintf(head, sizeof head, "  -%c, --%s", opt->short_name, opt->name)
	                          : snprintf(head, sizeof head, "  --%s", opt->name);

	if (opt->metavar != NULL)
		len += snprintf(head + len, sizeof head - (size_t) len, " %s", opt->metavar);
	printf("%s%*s", head, len < HELP_COLUMN - 1 ? HELP_COLUMN - len : 2, "");
	for (const char *nl; (nl = strchr(help, '\n')) != NULL; help = nl + 1)
		printf("%.*s\n%*s", (int) (nl - help), help, HELP_COLUMN, "");
	printf("%s\n", help);
}

/* The options of command (CLI_NCOMMANDS: those of every command). */
static void
print_options(cli_command command)
{
	unsigned bit = command < CLI_NCOMMANDS ? 1u << command : ALL;

	for (const cli_option *opt = cli_option_table; opt->name != NULL; opt++)
		if ((opt->commands & bit) && (opt->commands == ALL) == (command == CLI_NCOMMANDS))
			print_option(opt);
}

const char *
cli_command_name(cli_command command)
{
	return command < CLI_NCOMMANDS ? command_names[command] : "?";
}

void
cli_print_help(cli_command command)
{
	if (command >= CLI_NCOMMANDS)
		printf("tidemark: schema-evolution-aware PostgreSQL replication\n\n"
		       "Usage: tidemark COMMAND [OPTIONS]\n\n"
		       "Commands:\n"
		       "  setup      prepare source and target for the given tables or schemas\n"
		       "  run        stream changes and copy existing rows, until stopped\n"
		       "  status     slot, lag and per-table state\n"
		       "  snapshot   copy tables again without stopping the stream\n"
		       "  schema     a table's schema versions\n"
		       "  ddl-log    the DDL audit log\n"
		       "  verify     compare source and target\n"
		       "  teardown   remove the slot, publication and capture objects\n"
		       "  policy     the stored schema-change policies\n"
		       "  mode       what the target keeps of each table: history, soft deletes\n"
		       "  resync     copy everything again in place after a restore or a failover\n\n"
		       "`tidemark COMMAND --help` describes a command; `tidemark --version` says which\n"
		       "tidemark this is. A config file (--config) takes every option below and\n"
		       "those of setup and run, as `key = value;` lines (see man tidemark).\n");
	else
		printf("%s", command_help[command]);
	if (command < CLI_NCOMMANDS)
		print_options(command);
	printf("\nOptions of every command:\n");
	print_options(CLI_NCOMMANDS);
}

/* ---- parsing ------------------------------------------------------------------- */

bool
cli_given_has(const cli_given *g, size_t field)
{
	for (int i = 0; i < g->n; i++)
		if (g->fields[i] == field)
			return true;
	return false;
}

static void
given_add(cli_given *g, size_t field)
{
	if (!cli_given_has(g, field) && g->n < (int) (sizeof g->fields / sizeof g->fields[0]))
		g->fields[g->n++] = field;
}

char *
cli_own(cli_options *o, char *s)
{
	char **p = realloc(o->owned, sizeof(char *) * (size_t) (o->nowned + 1));

	if (p == NULL || s == NULL)
		abort();
	p[o->nowned++] = s;
	o->owned = p;
	return s;
}

static int
find_command(const char *name, cli_command *out)
{
	for (int i = 0; i < CLI_NCOMMANDS; i++)
		if (strcmp(name, command_names[i]) == 0) {
			*out = (cli_command) i;
			return TM_OK;
		}
	return TM_EXIT_USAGE;
}

static void
set_defaults(cli_options *o)
{
	memset(o, 0, sizeof *o);
	o->command = CLI_NCOMMANDS;
	o->slot = "tidemark";
	o->publication = "tidemark";
	o->snapshot_readers = 1;
	o->apply_workers = 2;
	o->progress_interval = 5;
}

#define MAX_OPTIONS 64

/* getopt's table: each name once; val is the index of its first entry. */
static void
long_options(struct option *out, char *shorts, size_t shorts_size)
{
	int n = 0;
	size_t ns = 0;

	for (int i = 0; cli_option_table[i].name != NULL && n < MAX_OPTIONS; i++) {
		const cli_option *opt = &cli_option_table[i];
		bool seen = false;

		for (int j = 0; j < n; j++)
			seen = seen || strcmp(out[j].name, opt->name) == 0;
		if (seen)
			continue;
		out[n++] = (struct option) {opt->name, opt->metavar ? required_argument : no_argument,
		                            NULL, 1000 + i};
		if (opt->short_name && ns + 2 < shorts_size)
			shorts[ns++] = opt->short_name;
	}
	shorts[ns] = '\0';
	memset(&out[n], 0, sizeof out[0]);
}

/* The table entry getopt's c stands for. */
static const cli_option *
entry_of(int c)
{
	if (c >= 1000)
		return &cli_option_table[c - 1000];
	for (const cli_option *opt = cli_option_table; opt->name != NULL; opt++)
		if (opt->short_name == c)
			return opt;
	return NULL;
}

static int
parse_options(int argc, char **argv, cli_options *o, cli_given *g)
{
	struct option longopts[MAX_OPTIONS + 1];
	char shorts[16], err[256];

	long_options(longopts, shorts, sizeof shorts);
	optind = 0; /* GNU: start afresh (also for a second parse, in the tests) */
	for (;;) {
		int c = getopt_long(argc, argv, shorts, longopts, NULL);
		const cli_option *any, *opt;
		bool exists;

		if (c == -1)
			break;
		if (c == '?' || (any = entry_of(c)) == NULL)
			return TM_EXIT_USAGE;
		opt = cli_option_find(any->name, o->command, &exists);
		if (opt == NULL) {
			fprintf(stderr, "tidemark %s: --%s does not apply to this command\n",
			        command_names[o->command], any->name);
			return TM_EXIT_USAGE;
		}
		if (opt->set(o, opt, optarg, err, sizeof err) != TM_OK) {
			fprintf(stderr, "tidemark: --%s %s\n", opt->name, err);
			return TM_EXIT_USAGE;
		}
		given_add(g, opt->field);
	}
	return TM_OK;
}

/* snapshot's and schema's SCHEMA.TABLE arguments, policy's SCHEMA.TABLE=P,
 * mode's SCHEMA.TABLE=MODE */
static int
take_positionals(int argc, char **argv, cli_options *o, cli_given *g)
{
	static const cli_option tables = {.field = F(tables), .count = F(ntables)};
	static const cli_option policies = {.field = F(table_policies), .count = F(ntable_policies)};
	static const cli_option modes = {.field = F(table_modes), .count = F(ntable_modes)};
	const cli_option *into = o->command == CLI_POLICY ? &policies
	                         : o->command == CLI_MODE ? &modes
	                                                  : &tables;

	for (int i = optind; i < argc; i++) {
		if (o->command != CLI_SNAPSHOT && o->command != CLI_SCHEMA && o->command != CLI_POLICY &&
		    o->command != CLI_MODE) {
			fprintf(stderr, "tidemark %s: unexpected argument \"%s\"\n",
			        command_names[o->command], argv[i]);
			return TM_EXIT_USAGE;
		}
		set_list(o, into, argv[i], NULL, 0);
		given_add(g, into->field);
	}
	return TM_OK;
}

static bool
given(const char *conninfo)
{
	return conninfo != NULL && conninfo[0] != '\0';
}

/*
 * Where a command needs one side that was not given, while the other side
 * (if it needs one) was: libpq's own environment serves for it (PGHOST,
 * PGPORT, PGDATABASE, PGUSER, PGSERVICE, ~/.pgpass, ...), as for psql: an
 * empty connection string. With both sides missing it would be a guess.
 */
static void
libpq_environment(cli_options *o)
{
	bool source = o->command != CLI_SNAPSHOT && o->command != CLI_SCHEMA &&
	              o->command != CLI_DDL_LOG && o->command != CLI_MODE;
	bool target = o->command != CLI_TEARDOWN || o->drop_target;

	if (source && !given(o->source) && (!target || given(o->target))) {
		o->source = "";
		o->source_from_env = true;
	} else if (target && !given(o->target) && (!source || given(o->source))) {
		o->target = "";
		o->target_from_env = true;
	}
}

/* The config file: --config, else TIDEMARK_CONFIG ("" for none). */
static int
read_config(cli_options *o, const cli_given *g)
{
	if (o->config == NULL)
		o->config = getenv("TIDEMARK_CONFIG");
	if (o->config == NULL || o->config[0] == '\0') {
		o->config = NULL;
		return TM_OK;
	}
	return cli_config_read(o->config, o, g);
}

int
cli_parse(int argc, char **argv, cli_options *o)
{
	cli_given g = {.n = 0};

	set_defaults(o);
	if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
		o->version = true;
		return TM_OK;
	}
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		o->help = true;
		return argc < 2 ? TM_EXIT_USAGE : TM_OK;
	}
	if (find_command(argv[1], &o->command) != TM_OK) {
		fprintf(stderr, "tidemark: unknown command \"%s\" (see tidemark --help)\n", argv[1]);
		return TM_EXIT_USAGE;
	}
	if (parse_options(argc - 1, argv + 1, o, &g) != TM_OK ||
	    take_positionals(argc - 1, argv + 1, o, &g) != TM_OK) {
		fprintf(stderr, "(see tidemark %s --help)\n", command_names[o->command]);
		return TM_EXIT_USAGE;
	}
	if (o->help)
		return TM_OK;
	if (read_config(o, &g) != TM_OK)
		return TM_EXIT_USAGE;
	if (o->source == NULL)
		o->source = getenv("TIDEMARK_SOURCE");
	if (o->target == NULL)
		o->target = getenv("TIDEMARK_TARGET");
	libpq_environment(o);
	return TM_OK;
}

int
cli_require(const cli_options *o, bool source, bool target)
{
	const char *cmd = command_names[o->command];

	if (source && !given(o->source) && !o->source_from_env) {
		fprintf(stderr, "tidemark %s: no source given: use --source CONNINFO or set "
		        "TIDEMARK_SOURCE (or give only --target: libpq's environment, PGHOST and the "
		        "like, then chooses the source)\n", cmd);
		return TM_EXIT_USAGE;
	}
	if (target && !given(o->target) && !o->target_from_env) {
		fprintf(stderr, "tidemark %s: no target given: use --target CONNINFO or set "
		        "TIDEMARK_TARGET (or give only --source: libpq's environment, PGHOST and the "
		        "like, then chooses the target)\n", cmd);
		return TM_EXIT_USAGE;
	}
	if (source && o->source_from_env)
		log_info("no --source: libpq's environment chooses the source (PGHOST, PGPORT, "
		         "PGDATABASE, PGUSER, PGSERVICE, ~/.pgpass)");
	if (target && o->target_from_env)
		log_info("no --target: libpq's environment chooses the target (PGHOST, PGPORT, "
		         "PGDATABASE, PGUSER, PGSERVICE, ~/.pgpass)");
	return TM_OK;
}

static void
free_secret(char **s)
{
	if (*s != NULL) {
		explicit_bzero(*s, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

void
cli_options_free(cli_options *o)
{
	free(o->tables);
	free(o->schemas);
	free(o->table_policies);
	free(o->table_modes);
	free(o->exclude_tables);
	free(o->map_schemas);
	o->tables = o->schemas = o->table_policies = o->table_modes = o->exclude_tables =
		o->map_schemas = NULL;
	free_secret(&o->source_password);
	free_secret(&o->target_password);
	for (int i = 0; i < o->nowned; i++)
		free_secret(&o->owned[i]); /* a connection string of the file may hold a password */
	free(o->owned);
	o->owned = NULL;
	o->nowned = 0;
}
