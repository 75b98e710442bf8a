#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "log.h"
#include "prom.h"

static const char *const command_names[CLI_NCOMMANDS] = {
	"setup", "run", "status", "snapshot", "schema", "ddl-log", "verify", "teardown", "policy",
};

enum {
	OPT_SOURCE = 1000, OPT_TARGET, OPT_SLOT, OPT_PUBLICATION, OPT_TABLE, OPT_SCHEMA,
	OPT_UNTIL_CAUGHT_UP, OPT_JSON, OPT_CHUNK_ROWS, OPT_READERS, OPT_SINCE, OPT_POLICY,
	OPT_TABLE_POLICY, OPT_PROGRESS, OPT_DROP_TARGET, OPT_DROP_COLUMNS, OPT_DROP_TABLES,
	OPT_CHUNK_BYTES, OPT_EXCLUDE_TABLE, OPT_LOG_FORMAT, OPT_TARGET_SCHEMA, OPT_MAP_SCHEMA, OPT_ALL,
	OPT_DEFAULT, OPT_METRICS_LISTEN,
};

/* Which commands take which option: a bit per cli_command. */
#define ALL ((1u << CLI_NCOMMANDS) - 1)
#define ONLY(c) (1u << (c))

static const struct {
	struct option opt;
	unsigned commands;
} option_table[] = {
	{{"source", required_argument, NULL, OPT_SOURCE}, ALL},
	{{"target", required_argument, NULL, OPT_TARGET}, ALL},
	{{"slot", required_argument, NULL, OPT_SLOT}, ALL},
	{{"publication", required_argument, NULL, OPT_PUBLICATION}, ALL},
	{{"table", required_argument, NULL, OPT_TABLE},
	 ONLY(CLI_SETUP) | ONLY(CLI_VERIFY) | ONLY(CLI_DDL_LOG) | ONLY(CLI_SNAPSHOT)},
	{{"schema", required_argument, NULL, OPT_SCHEMA}, ONLY(CLI_SETUP)},
	{{"exclude-table", required_argument, NULL, OPT_EXCLUDE_TABLE}, ONLY(CLI_SETUP)},
	{{"target-schema", required_argument, NULL, OPT_TARGET_SCHEMA}, ONLY(CLI_SETUP)},
	{{"map-schema", required_argument, NULL, OPT_MAP_SCHEMA}, ONLY(CLI_SETUP)},
	{{"all", no_argument, NULL, OPT_ALL}, ONLY(CLI_STATUS) | ONLY(CLI_DDL_LOG)},
	{{"until-caught-up", no_argument, NULL, OPT_UNTIL_CAUGHT_UP}, ONLY(CLI_RUN)},
	{{"json", no_argument, NULL, OPT_JSON},
	 ONLY(CLI_STATUS) | ONLY(CLI_SCHEMA) | ONLY(CLI_DDL_LOG) | ONLY(CLI_VERIFY) | ONLY(CLI_POLICY)},
	{{"chunk-rows", required_argument, NULL, OPT_CHUNK_ROWS}, ONLY(CLI_RUN) | ONLY(CLI_VERIFY)},
	{{"chunk-bytes", required_argument, NULL, OPT_CHUNK_BYTES}, ONLY(CLI_RUN)},
	{{"snapshot-readers", required_argument, NULL, OPT_READERS}, ONLY(CLI_RUN)},
	{{"since", required_argument, NULL, OPT_SINCE}, ONLY(CLI_DDL_LOG)},
	{{"policy", required_argument, NULL, OPT_POLICY}, ONLY(CLI_RUN) | ONLY(CLI_SETUP)},
	{{"table-policy", required_argument, NULL, OPT_TABLE_POLICY}, ONLY(CLI_RUN) | ONLY(CLI_SETUP)},
	{{"default", required_argument, NULL, OPT_DEFAULT}, ONLY(CLI_POLICY)},
	{{"progress-interval", required_argument, NULL, OPT_PROGRESS}, ONLY(CLI_RUN)},
	{{"drop-target-catalog", no_argument, NULL, OPT_DROP_TARGET}, ONLY(CLI_TEARDOWN)},
	{{"drop-columns", no_argument, NULL, OPT_DROP_COLUMNS}, ONLY(CLI_RUN)},
	{{"drop-tables", no_argument, NULL, OPT_DROP_TABLES}, ONLY(CLI_RUN)},
	{{"metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN}, ONLY(CLI_RUN)},
	{{"log-format", required_argument, NULL, OPT_LOG_FORMAT}, ALL},
	{{"verbose", no_argument, NULL, 'v'}, ALL},
	{{"quiet", no_argument, NULL, 'q'}, ALL},
	{{"help", no_argument, NULL, 'h'}, ALL},
};
#define NOPTIONS (sizeof option_table / sizeof option_table[0])

static const char *const common_help =
	"Connection options (every command):\n"
	"  --source CONNINFO      source database (env TIDEMARK_SOURCE), a libpq connection\n"
	"                         string or postgresql:// URI\n"
	"  --target CONNINFO      target database (env TIDEMARK_TARGET)\n"
	"  --slot NAME            replication slot (default tidemark)\n"
	"  --publication NAME     publication (default tidemark)\n"
	"  --log-format FORMAT    text (default) or json: one JSON object per log line\n"
	"  -v, --verbose          more log output (repeat for debug)\n"
	"  -q, --quiet            warnings and errors only\n"
	"  -h, --help             this help\n";

static const char *const command_help[CLI_NCOMMANDS] = {
	[CLI_SETUP] =
		"Usage: tidemark setup [OPTIONS] (--table SCHEMA.TABLE | --schema NAME)...\n"
		"Prepares replication; safe to run again (it only adds what is missing).\n"
		"On the source: the DDL capture event trigger, the publication and the logical slot.\n"
		"On the target: the tidemark catalog and each replicated table, created with the\n"
		"source's columns, types and primary key. Existing rows are copied by `run`.\n"
		"  --table SCHEMA.TABLE   a table to replicate (repeatable); identifiers are read\n"
		"                         the SQL way: 'public.\"Line Items\"'\n"
		"  --schema NAME          every table of a schema, including tables created later\n"
		"  --exclude-table SCHEMA.TABLE  leave a table of a --schema out (repeatable); it is\n"
		"                         not replicated now nor when it is created again later\n"
		"  --target-schema NAME   put every table of this pipeline into schema NAME on the\n"
		"                         target (default: the source's schema names)\n"
		"  --map-schema SRC=DST   put the tables of source schema SRC into target schema DST\n"
		"                         (repeatable; before --target-schema)\n"
		"  --policy P             the default policy for a column type change that cannot\n"
		"                         widen: widen, follow, quarantine or stop (kept; see\n"
		"                         `tidemark policy`)\n"
		"  --table-policy SCHEMA.TABLE=P  the same, for one table of this setup (repeatable)\n"
		"A pipeline is named by its --slot: several (other source databases) can share one\n"
		"target database, each with its own slot, publication and target schemas.\n",
	[CLI_RUN] =
		"Usage: tidemark run [OPTIONS]\n"
		"Streams changes from the source into the target until stopped (SIGINT/SIGTERM\n"
		"finish the current target transaction and exit 0); copies the existing rows of\n"
		"new tables chunk by chunk meanwhile, without locks.\n"
		"  --until-caught-up      exit 0 once everything the source had written when run\n"
		"                         started is applied and no snapshot is pending\n"
		"  --chunk-rows N         snapshot chunk size in rows (default 20000)\n"
		"  --chunk-bytes SIZE     and in bytes, as read (default 32MB; kB, MB, GB)\n"
		"  --snapshot-readers N   parallel snapshot reader connections (default 1)\n"
		"  --policy P             for a column type change that cannot widen: widen,\n"
		"                         follow, quarantine or stop, for this run only (instead\n"
		"                         of the stored default: see `tidemark policy`)\n"
		"  --table-policy SCHEMA.TABLE=P  the same, for one table (repeatable; instead of\n"
		"                         the table's stored policy)\n"
		"  --drop-columns         drop on the target the columns dropped on the source\n"
		"                         (default: keep them, no longer filled)\n"
		"  --drop-tables          drop on the target the tables dropped on the source\n"
		"                         (default: keep them, no longer replicated)\n"
		"  --progress-interval S  seconds between progress lines (default 5)\n"
		"  --metrics-listen ADDR:PORT  serve Prometheus metrics at http://ADDR:PORT/metrics\n"
		"                         (127.0.0.1:9187, :9187 for every interface, [::1]:9187)\n",
	[CLI_STATUS] =
		"Usage: tidemark status [OPTIONS] [--json] [--all]\n"
		"Shows the slot, the WAL it retains, the applied position, the lag and each\n"
		"table's state (snapshot progress).\n"
		"  --all                  every pipeline of the target: its source, applied position\n"
		"                         and tables (from the target only; no --source needed)\n",
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
		"classification and what was done on the target.\n"
		"  --all                  the DDL of every pipeline of the target, each named\n",
	[CLI_VERIFY] =
		"Usage: tidemark verify [OPTIONS] [--table SCHEMA.TABLE]... [--json]\n"
		"Compares source and target by key ranges without long transactions; prints each\n"
		"differing key. Exits 0 when equal, 1 when not.\n"
		"  --table SCHEMA.TABLE   a replicated table to compare (repeatable; default: all)\n"
		"  --chunk-rows N         rows per compared page (default 10000)\n"
		"  --json                 the report as one JSON document\n",
	[CLI_TEARDOWN] =
		"Usage: tidemark teardown [OPTIONS] [--drop-target-catalog]\n"
		"Drops the slot, the publication and the DDL capture objects on the source\n"
		"(the replicated tables on the target are kept).\n"
		"  --drop-target-catalog  also drop the tidemark schema on the target\n",
	[CLI_POLICY] =
		"Usage: tidemark policy [OPTIONS] [SCHEMA.TABLE=P]... [--default P] [--json]\n"
		"Sets, then lists, the stored policies for a column type change that cannot widen\n"
		"(widen, follow, quarantine or stop): each table's and the default, used by every\n"
		"`run` (a run's --policy / --table-policy override them for that run only).\n"
		"  SCHEMA.TABLE=P         a replicated table's policy; P default: the table follows\n"
		"                         the default again\n"
		"  --default P            the default policy (initially widen)\n"
		"  --json                 the list as one JSON document\n",
};

const char *
cli_command_name(cli_command command)
{
	return command < CLI_NCOMMANDS ? command_names[command] : "?";
}

void
cli_print_help(cli_command command)
{
	if (command >= CLI_NCOMMANDS) {
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
		       "  policy     the stored schema-change policies\n\n"
		       "`tidemark COMMAND --help` describes a command; `tidemark --version` says which\n"
		       "tidemark this is.\n\n%s",
		       common_help);
		return;
	}
	printf("%s\n%s", command_help[command], common_help);
}

static void
push(const char ***arr, int *n, const char *value)
{
	const char **p = realloc(*arr, sizeof(char *) * (size_t) (*n + 1));

	if (p == NULL)
		abort();
	p[(*n)++] = value;
	*arr = p;
}

static int
parse_long(const char *name, const char *text, long min, long max, long *out)
{
	char *end;
	long v = strtol(text, &end, 10);

	if (*text == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "tidemark: --%s must be a whole number from %ld to %ld, not \"%s\"\n",
		        name, min, max, text);
		return TM_EXIT_USAGE;
	}
	*out = v;
	return TM_OK;
}

/* A size in bytes: a whole number with an optional kB, MB or GB (powers of
 * 1024, as PostgreSQL's settings read them). */
static int
parse_size(const char *name, const char *text, long long min, long long max, long long *out)
{
	static const struct {
		const char *unit;
		long long factor;
	} units[] = {{"", 1}, {"B", 1}, {"kB", 1024}, {"MB", 1024 * 1024},
	             {"GB", 1024LL * 1024 * 1024}};
	char *end;
	long long v = strtoll(text, &end, 10);

	for (size_t i = 0; *text != '\0' && end != text && i < sizeof units / sizeof units[0]; i++)
		if (strcmp(end, units[i].unit) == 0 && v >= 0 && v <= max / units[i].factor &&
		    v * units[i].factor >= min) {
			*out = v * units[i].factor;
			return TM_OK;
		}
	fprintf(stderr, "tidemark: --%s must be a size from %lld kB to %lld MB (a whole number, with "
	        "kB, MB or GB), not \"%s\"\n", name, min / 1024, max / (1024 * 1024), text);
	return TM_EXIT_USAGE;
}

static int
apply_option(cli_options *o, int c, const char *arg)
{
	long v;

	switch (c) {
	case OPT_SOURCE: o->source = arg; break;
	case OPT_TARGET: o->target = arg; break;
	case OPT_SLOT: o->slot = arg; break;
	case OPT_PUBLICATION: o->publication = arg; break;
	case OPT_TABLE: push(&o->tables, &o->ntables, arg); break;
	case OPT_SCHEMA: push(&o->schemas, &o->nschemas, arg); break;
	case OPT_UNTIL_CAUGHT_UP: o->until_caught_up = true; break;
	case OPT_JSON: o->json = true; break;
	case OPT_DROP_TARGET: o->drop_target = true; break;
	case OPT_DROP_COLUMNS: o->drop_columns = true; break;
	case OPT_DROP_TABLES: o->drop_tables = true; break;
	case OPT_SINCE: o->since = arg; break;
	case OPT_POLICY: o->policy = arg; break;
	case OPT_TABLE_POLICY: push(&o->table_policies, &o->ntable_policies, arg); break;
	case OPT_DEFAULT: o->policy = arg; break;
	case OPT_CHUNK_ROWS:
		if (parse_long("chunk-rows", arg, 1, 10000000, &v) != TM_OK)
			return TM_EXIT_USAGE;
		o->chunk_rows = v;
		break;
	case OPT_CHUNK_BYTES:
		if (parse_size("chunk-bytes", arg, 16 * 1024, 4096LL * 1024 * 1024, &o->chunk_bytes) !=
		    TM_OK)
			return TM_EXIT_USAGE;
		break;
	case OPT_EXCLUDE_TABLE: push(&o->exclude_tables, &o->nexclude_tables, arg); break;
	case OPT_TARGET_SCHEMA: o->target_schema = arg; break;
	case OPT_MAP_SCHEMA: push(&o->map_schemas, &o->nmap_schemas, arg); break;
	case OPT_ALL: o->all = true; break;
	case OPT_READERS:
		if (parse_long("snapshot-readers", arg, 1, 16, &v) != TM_OK)
			return TM_EXIT_USAGE;
		o->snapshot_readers = (int) v;
		break;
	case OPT_PROGRESS:
		if (parse_long("progress-interval", arg, 1, 3600, &v) != TM_OK)
			return TM_EXIT_USAGE;
		o->progress_interval = (double) v;
		break;
	case OPT_LOG_FORMAT:
		if (strcmp(arg, "text") != 0 && strcmp(arg, "json") != 0) {
			fprintf(stderr, "tidemark: --log-format takes text or json, not \"%s\"\n", arg);
			return TM_EXIT_USAGE;
		}
		o->log_json = strcmp(arg, "json") == 0;
		break;
	case OPT_METRICS_LISTEN: {
		char host[256];
		unsigned port;

		if (prom_parse_listen(arg, host, sizeof host, &port) != 0) {
			fprintf(stderr, "tidemark run: --metrics-listen takes ADDRESS:PORT, such as "
			        "127.0.0.1:9187, :9187 (every interface) or [::1]:9187, not \"%s\"\n", arg);
			return TM_EXIT_USAGE;
		}
		o->metrics_listen = arg;
		break;
	}
	case 'v': o->verbose = o->verbose < 0 ? 1 : o->verbose + 1; break;
	case 'q': o->verbose = -1; break;
	case 'h': o->help = true; break;
	default: return TM_EXIT_USAGE;
	}
	return TM_OK;
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
	o->progress_interval = 5;
}

static int
parse_options(int argc, char **argv, cli_options *o)
{
	struct option longopts[NOPTIONS + 1];
	unsigned bit = 1u << o->command;

	for (size_t i = 0; i < NOPTIONS; i++)
		longopts[i] = option_table[i].opt;
	memset(&longopts[NOPTIONS], 0, sizeof longopts[0]);
	optind = 1;
	for (;;) {
		int idx = -1;
		int c = getopt_long(argc, argv, "vqh", longopts, &idx);

		if (c == -1)
			break;
		if (c == '?')
			return TM_EXIT_USAGE;
		for (size_t i = 0; i < NOPTIONS; i++)
			if (option_table[i].opt.val == c && !(option_table[i].commands & bit)) {
				fprintf(stderr, "tidemark %s: --%s does not apply to this command\n",
				        command_names[o->command], option_table[i].opt.name);
				return TM_EXIT_USAGE;
			}
		if (apply_option(o, c, optarg) != TM_OK)
			return TM_EXIT_USAGE;
	}
	return TM_OK;
}

static int
take_positionals(int argc, char **argv, cli_options *o)
{
	for (int i = optind; i < argc; i++) {
		if (o->command == CLI_POLICY)
			push(&o->table_policies, &o->ntable_policies, argv[i]);
		else if (o->command == CLI_SNAPSHOT || o->command == CLI_SCHEMA)
			push(&o->tables, &o->ntables, argv[i]);
		else {
			fprintf(stderr, "tidemark %s: unexpected argument \"%s\"\n",
			        command_names[o->command], argv[i]);
			return TM_EXIT_USAGE;
		}
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
	              o->command != CLI_DDL_LOG;
	bool target = o->command != CLI_TEARDOWN || o->drop_target;

	if (source && !given(o->source) && (!target || given(o->target))) {
		o->source = "";
		o->source_from_env = true;
	} else if (target && !given(o->target) && (!source || given(o->source))) {
		o->target = "";
		o->target_from_env = true;
	}
}

int
cli_parse(int argc, char **argv, cli_options *o)
{
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
	if (parse_options(argc - 1, argv + 1, o) != TM_OK ||
	    take_positionals(argc - 1, argv + 1, o) != TM_OK) {
		fprintf(stderr, "(see tidemark %s --help)\n", command_names[o->command]);
		return TM_EXIT_USAGE;
	}
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

void
cli_options_free(cli_options *o)
{
	free(o->tables);
	free(o->schemas);
	free(o->table_policies);
	free(o->exclude_tables);
	free(o->map_schemas);
	o->tables = o->schemas = o->table_policies = o->exclude_tables = o->map_schemas = NULL;
}
