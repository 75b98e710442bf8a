/*
 * cli.h: the options of every command, from the command line and from a
 * config file.
 *
 * Each option is described once, in cli.c's option table: its name (the
 * long option, and the key in a config file), its argument, which commands
 * take it on the command line, which of them take it from a config file,
 * and its help. The parser, the help and the config reader (cli_config.c)
 * all read that table.
 *
 * Where a setting comes from, first found wins: the command line, the
 * config file (--config FILE, or TIDEMARK_CONFIG), the TIDEMARK_SOURCE /
 * TIDEMARK_TARGET variables, libpq's environment (PGHOST, PGSERVICE, ...)
 * for a side not given at all. A repeatable option (--table, --schema,
 * --exclude-table, --table-policy, --table-mode) given on the command
 * line replaces the file's list instead of adding to it.
 */
#ifndef TIDEMARK_CLI_H
#define TIDEMARK_CLI_H

#include <stdbool.h>

typedef enum cli_command {
	CLI_SETUP,
	CLI_RUN,
	CLI_STATUS,
	CLI_SNAPSHOT,
	CLI_SCHEMA,
	CLI_DDL_LOG,
	CLI_VERIFY,
	CLI_TEARDOWN,
	CLI_POLICY,
	CLI_MODE,
	CLI_RESYNC,               /* takes run's options too (it runs afterwards) */
	CLI_NCOMMANDS
} cli_command;

typedef struct cli_options {
	cli_command command;
	const char *source;       /* borrowed from argv/environ, or owned (config file) */
	const char *target;
	bool source_from_env;     /* no source given: "" (libpq's environment serves) */
	bool target_from_env;
	const char *slot;         /* default "tidemark" */
	const char *publication;  /* default "tidemark" */
	const char **tables;      /* owned array of borrowed strings: --table, or positional */
	int ntables;
	const char **schemas;     /* owned array: --schema */
	int nschemas;
	const char **exclude_tables; /* owned array: setup --exclude-table */
	int nexclude_tables;
	const char *target_schema;   /* setup --target-schema */
	const char **map_schemas;    /* owned array of borrowed "SRC=DST": setup --map-schema */
	int nmap_schemas;
	bool all;                    /* status, ddl-log --all: every pipeline of the target */
	bool until_caught_up;
	bool json;
	bool help;
	bool version;             /* tidemark --version */
	bool log_json;            /* --log-format json */
	bool drop_target;         /* teardown: also drop the target catalog */
	bool drop_columns;        /* run: drop on the target the columns dropped on the source */
	bool no_net_changes;      /* run: every change applied as it came (apply.h) */
	bool no_streaming;        /* run: transactions sent whole at their commit */
	char *spool_dir;          /* run: where streamed transactions are spooled */
	bool drop_tables;         /* run: drop on the target the tables dropped on the source */
	bool source_upgraded;     /* resync: the source was upgraded in place (pipeline.h) */
	long chunk_rows;          /* run: snapshot chunk size (0: default) */
	long long chunk_bytes;    /* run: snapshot chunk size in bytes read (0: default) */
	int snapshot_readers;     /* run: parallel snapshot reader connections */
	int apply_workers;        /* run: parallel apply connections (apply.h) */
	const char *since;        /* ddl-log: --since POSITION */
	const char *policy;       /* setup, run: --policy; policy: --default (widen, follow,
	                           * quarantine, stop) */
	const char **table_policies; /* owned array of borrowed "SCHEMA.TABLE=POLICY": setup and
	                              * run --table-policy, policy's arguments */
	int ntable_policies;
	const char **table_modes; /* owned array of borrowed "SCHEMA.TABLE=MODE": setup
	                           * --table-mode, mode's arguments */
	int ntable_modes;
	bool metadata_columns;    /* setup, mode: --metadata-columns */
	bool no_metadata_columns; /* mode: --no-metadata-columns */
	double progress_interval; /* run: seconds between progress lines */
	const char *metrics_listen; /* run: --metrics-listen ADDR:PORT, NULL: no metrics */
	int verbose;              /* -v count; -q sets -1 */
	const char *config;       /* --config or TIDEMARK_CONFIG (borrowed); NULL: none */
	const char *source_password_file; /* --source-password-file (borrowed or owned) */
	const char *target_password_file;
	char *source_password;    /* owned: read by cli_load_secrets; NULL: none */
	char *target_password;
	bool config_has_password; /* the config file's source or target holds a password */
	char **owned;             /* owned: the strings read from the config file */
	int nowned;
} cli_options;

/* Parses argv, then the config file. Returns TM_OK, or TM_EXIT_USAGE after
 * printing the reason (for the file: its name, the line and the key). */
int cli_parse(int argc, char **argv, cli_options *opts);
/* Frees what opts owns; passwords are overwritten first. */
void cli_options_free(cli_options *opts);

/* Reads the password files (--source-password-file, --target-password-file)
 * into opts->source_password / target_password, and warns (log) when a file
 * that holds a password can be read by other users. Call once logging is
 * set up. Returns TM_OK or TM_EXIT_CONFIG (logged, never showing a
 * password). */
int cli_load_secrets(cli_options *opts);

/* Prints the help of one command (or the overview for CLI_NCOMMANDS). */
void cli_print_help(cli_command command);

/* Checks that --source and/or --target were given (directly or by the
 * environment); prints what is missing. Returns TM_OK or TM_EXIT_USAGE. */
int cli_require(const cli_options *opts, bool source, bool target);

const char *cli_command_name(cli_command command);

#endif
