/*
 * main.c: command dispatch. The only place that exits the process; its
 * exit code comes from the table in exitcode.h.
 */
#include <stdio.h>

#include "cli.h"
#include "commands.h"
#include "exitcode.h"
#include "log.h"
#include "pgconn.h"

typedef int (*command_fn)(const cli_options *opts);

static const command_fn commands[CLI_NCOMMANDS] = {
	[CLI_SETUP] = cmd_setup,       [CLI_RUN] = cmd_run,         [CLI_STATUS] = cmd_status,
	[CLI_SNAPSHOT] = cmd_snapshot, [CLI_SCHEMA] = cmd_schema,   [CLI_DDL_LOG] = cmd_ddl_log,
	[CLI_VERIFY] = cmd_verify,     [CLI_TEARDOWN] = cmd_teardown, [CLI_POLICY] = cmd_policy,
	[CLI_MODE] = cmd_mode,         [CLI_RESYNC] = cmd_resync,
};

const char *
tm_exit_name(int code)
{
	switch (code) {
	case TM_EXIT_OK: return "ok";
	case TM_EXIT_DIFFERENT: return "differences found";
	case TM_EXIT_USAGE: return "usage error";
	case TM_EXIT_CONFIG: return "configuration error";
	case TM_EXIT_SOURCE: return "source error";
	case TM_EXIT_TARGET: return "target error";
	case TM_EXIT_POLICY: return "stopped by schema-change policy";
	default: return "internal error";
	}
}

int
main(int argc, char **argv)
{
	cli_options opts;
	int rc = cli_parse(argc, argv, &opts);

	if (rc == TM_OK && opts.version) {
		printf("tidemark %s (libpq %d)\n", TIDEMARK_VERSION, PQlibVersion());
		return TM_OK;
	}
	/* a usage error has said what is wrong and where the help is */
	if (opts.help) {
		cli_print_help(opts.command);
		cli_options_free(&opts);
		return rc;
	}
	if (rc != TM_OK) {
		cli_options_free(&opts);
		return rc;
	}
	log_set_level(opts.verbose > 1 ? LOG_DEBUG : opts.verbose < 0 ? LOG_WARN : LOG_INFO);
	log_set_format(opts.log_json ? LOG_FORMAT_JSON : LOG_FORMAT_TEXT);
	rc = cli_load_secrets(&opts);
	pgconn_set_password(PGCONN_SOURCE, opts.source_password);
	pgconn_set_password(PGCONN_TARGET, opts.target_password);
	/* a string libpq cannot read: exit 3 before any command, never shown */
	if (rc == TM_OK && opts.source != NULL && opts.source[0] != '\0')
		rc = pgconn_check_conninfo(opts.source, "--source");
	if (rc == TM_OK && opts.target != NULL && opts.target[0] != '\0')
		rc = pgconn_check_conninfo(opts.target, "--target");
	if (rc == TM_OK)
		rc = commands[opts.command](&opts);
	cli_options_free(&opts);
	rc = pgconn_exit_code(rc);
	if (rc != TM_OK && rc != TM_EXIT_DIFFERENT && rc != TM_EXIT_USAGE)
		log_error("%s stopped: %s (exit code %d)", cli_command_name(opts.command),
		          tm_exit_name(rc), rc);
	return rc;
}
