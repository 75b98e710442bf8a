/*
 * cli_config.c: the config file (--config FILE, TIDEMARK_CONFIG), read with
 * libconfig. Its keys are the long options of cli.c's table, one setting
 * each: `chunk-rows = 20000;`, `schema = ["shop", "billing"];`,
 * `drop-columns = true;`. Every key and value is checked whatever the
 * command; a value is used by the commands that take it from a file and
 * only where the command line did not give it.
 */
#include <errno.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "exitcode.h"
#include "pgconn.h"

typedef struct reader {
	const char *path;
	cli_options *o;
	const cli_given *given;
	cli_options scratch;     /* takes the values the command does not use */
} reader;

static int
fail_at(const reader *r, const config_setting_t *s, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
fail_at(const reader *r, const config_setting_t *s, const char *fmt, ...)
{
	const char *file = config_setting_source_file(s);
	va_list ap;

	fprintf(stderr, "tidemark: %s:%d: ", file != NULL ? file : r->path,
	        (int) config_setting_source_line(s));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return TM_EXIT_USAGE;
}

/* The entry a file's key stands for: the command's own when the command
 * takes it from a file (*applies), else one that some command takes from a
 * file (checked, not used); NULL when no command does. */
static const cli_option *
file_entry(const char *name, cli_command command, bool *applies)
{
	const cli_option *any = NULL;

	*applies = false;
	for (const cli_option *opt = cli_option_table; opt->name != NULL; opt++) {
		if (strcmp(opt->name, name) != 0 || opt->in_file == 0)
			continue;
		if (command < CLI_NCOMMANDS && (opt->in_file & (1u << command)) &&
		    (opt->commands & (1u << command))) {
			*applies = true;
			return opt;
		}
		if (any == NULL)
			any = opt;
	}
	return any;
}

static int
unknown_key(const reader *r, const config_setting_t *s, const char *name)
{
	char dashed[128];
	bool exists;

	snprintf(dashed, sizeof dashed, "%s", name);
	for (char *p = dashed; *p != '\0'; p++)
		if (*p == '_')
			*p = '-';
	cli_option_find(name, CLI_NCOMMANDS, &exists);
	if (exists)
		return fail_at(r, s, "%s: a command-line option only, not for a config file", name);
	cli_option_find(dashed, CLI_NCOMMANDS, &exists);
	if (exists && strcmp(dashed, name) != 0)
		return fail_at(r, s, "unknown key \"%s\" (did you mean %s?)", name, dashed);
	return fail_at(r, s, "unknown key \"%s\" (the keys are the long options of the command "
	               "line: see tidemark --help and man tidemark)", name);
}

/* One value (a scalar setting or a list's element) as the command line's
 * text: "true"/"false" for a boolean, digits for a number. NULL when its
 * type does not fit the option. */
static const char *
value_text(const config_setting_t *s, cli_value want, char *buf, size_t size)
{
	int type = config_setting_type(s);

	if (type == CONFIG_TYPE_STRING &&
	    (want == CLI_VALUE_TEXT || want == CLI_VALUE_LIST || want == CLI_VALUE_NUMBER))
		return config_setting_get_string(s);
	if ((type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64) &&
	    (want == CLI_VALUE_NUMBER || want == CLI_VALUE_COUNT)) {
		snprintf(buf, size, "%lld", config_setting_get_int64(s));
		return buf;
	}
	if (type == CONFIG_TYPE_BOOL && (want == CLI_VALUE_FLAG || want == CLI_VALUE_COUNT))
		return config_setting_get_bool(s) ? "true" : "false";
	return NULL;
}

static const char *
expected(cli_value want)
{
	switch (want) {
	case CLI_VALUE_FLAG: return "true or false";
	case CLI_VALUE_COUNT: return "true, false or a whole number";
	case CLI_VALUE_TEXT: return "a string in double quotes";
	case CLI_VALUE_NUMBER: return "a whole number, or a string";
	case CLI_VALUE_LIST: return "a string, or a list of strings: [\"a\", \"b\"]";
	}
	return "?";
}

/* Sets one value, into the options when they take it, else into scratch. */
static int
set_value(reader *r, const cli_option *opt, bool use, const config_setting_t *value)
{
	char buf[32], err[256];
	const char *text = value_text(value, opt->value, buf, sizeof buf);
	cli_options *dest = use ? r->o : &r->scratch;

	if (text == NULL)
		return fail_at(r, value, "%s: expected %s", opt->name, expected(opt->value));
	if (use && text != buf)
		text = cli_own(r->o, strdup(text));
	if (opt->set(dest, opt, text, err, sizeof err) != TM_OK)
		return fail_at(r, value, "%s %s", opt->name, err);
	if ((strcmp(opt->name, "source") == 0 || strcmp(opt->name, "target") == 0) &&
	    pgconn_has_password(text))
		r->o->config_has_password = true;
	return TM_OK;
}

static int
read_setting(reader *r, const config_setting_t *s)
{
	const char *name = config_setting_name(s);
	bool applies;
	const cli_option *opt;
	bool use;
	int type = config_setting_type(s);

	if (type == CONFIG_TYPE_GROUP)
		return fail_at(r, s, "%s: groups ({ ... }) are not used: one `key = value;` per option",
		               name);
	if ((opt = file_entry(name, r->o->command, &applies)) == NULL)
		return unknown_key(r, s, name);
	use = applies && !cli_given_has(r->given, opt->field);
	if (type != CONFIG_TYPE_ARRAY && type != CONFIG_TYPE_LIST)
		return set_value(r, opt, use, s);
	if (opt->value != CLI_VALUE_LIST)
		return fail_at(r, s, "%s: expected %s, not a list", name, expected(opt->value));
	for (int i = 0; i < config_setting_length(s); i++) {
		int rc = set_value(r, opt, use, config_setting_get_elem(s, i));

		if (rc != TM_OK)
			return rc;
	}
	return TM_OK;
}

static int
read_settings(reader *r, config_t *cfg)
{
	const config_setting_t *root = config_root_setting(cfg);

	for (int i = 0; i < config_setting_length(root); i++) {
		int rc = read_setting(r, config_setting_get_elem(root, i));

		if (rc != TM_OK)
			return rc;
	}
	return TM_OK;
}

int
cli_config_read(const char *path, cli_options *o, const cli_given *given)
{
	reader r = {.path = path, .o = o, .given = given};
	FILE *f = fopen(path, "r");
	config_t cfg;
	int rc;

	if (f == NULL) {
		fprintf(stderr, "tidemark: cannot read the config file %s: %s\n", path, strerror(errno));
		return TM_EXIT_USAGE;
	}
	memset(&r.scratch, 0, sizeof r.scratch);
	r.scratch.command = o->command;
	config_init(&cfg);
	if (config_read(&cfg, f) != CONFIG_TRUE) {
		const char *file = config_error_file(&cfg);

		fprintf(stderr, "tidemark: %s:%d: %s (the format: `key = value;` lines, strings in "
		        "double quotes; see man tidemark)\n", file != NULL ? file : path,
		        config_error_line(&cfg), config_error_text(&cfg));
		rc = TM_EXIT_USAGE;
	} else
		rc = read_settings(&r, &cfg);
	cli_options_free(&r.scratch);
	config_destroy(&cfg);
	fclose(f);
	return rc;
}
