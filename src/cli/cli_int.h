/*
 * cli_int.h: the option table, shared by the command-line parser (cli.c)
 * and the config file reader (cli_config.c). Not for other modules.
 */
#ifndef TIDEMARK_CLI_INT_H
#define TIDEMARK_CLI_INT_H

#include <stddef.h>

#include "cli.h"

/* What a config file may give for an option. */
typedef enum cli_value {
	CLI_VALUE_FLAG,   /* a boolean (on the command line: no argument) */
	CLI_VALUE_COUNT,  /* a boolean or a whole number (-v, repeatable) */
	CLI_VALUE_TEXT,   /* a string */
	CLI_VALUE_NUMBER, /* a whole number, or a string as on the command line */
	CLI_VALUE_LIST,   /* a string, or a list of strings (repeatable) */
} cli_value;

typedef struct cli_option cli_option;

/* Sets opt's field of o from arg (NULL for an option without argument;
 * "true"/"false" for a boolean of a config file). On a bad value returns
 * TM_EXIT_USAGE with the reason in err ("must be ..."), without the
 * option's name. arg must outlive o. */
typedef int (*cli_setter)(cli_options *o, const cli_option *opt, const char *arg, char *err,
                          size_t errlen);

struct cli_option {
	const char *name;       /* the long option, and the key in a config file */
	char short_name;        /* 0: none */
	const char *metavar;    /* the argument as help shows it; NULL: takes none */
	cli_value value;
	cli_setter set;
	size_t field;           /* offsetof the cli_options field it sets */
	size_t count;           /* lists: offsetof the count */
	long long min, max;     /* numbers and sizes */
	unsigned commands;      /* a bit per cli_command that takes it on the command line */
	unsigned in_file;       /* a bit per command a config file's value applies to;
	                         * 0: a command-line option only */
	const char *help;       /* lines after the first are indented */
};

/* The table, ends with name == NULL. An option may have several entries of
 * one name for disjoint sets of commands (its help differs). */
extern const cli_option cli_option_table[];

/* The entry of name for command, NULL if there is none; *exists: whether
 * some command has it. */
const cli_option *cli_option_find(const char *name, cli_command command, bool *exists);

/* Fields set on the command line: a config file's value for them is not
 * used. */
typedef struct cli_given {
	size_t fields[64];
	int n;
} cli_given;

bool cli_given_has(const cli_given *g, size_t field);

/* Reads the config file at path into o (the command's options, those not
 * in given), checking every key and value whatever the command. Returns
 * TM_OK or TM_EXIT_USAGE after printing "tidemark: FILE:LINE: key: why". */
int cli_config_read(const char *path, cli_options *o, const cli_given *given);

/* Keeps s (malloc'd) until cli_options_free; returns it. */
char *cli_own(cli_options *o, char *s);

#endif
