/*
 * test_cli.c: the options of the command line and of the config file
 * (fixtures/config/), read through the one option table: every key and
 * value checked with its file, line and key named, lists, the command line
 * over the file over the environment, and the password files.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"
#include "exitcode.h"
#include "mode.h"
#include "shape.h"

#define CONFIG_DIR FIXTURES_DIR "/config/"

/* The last parse's standard error. */
static char stderr_text[8192];

static FILE *capture;
static int saved_stderr;

/* Standard error (stdio and log's write(2)s) from here to capture_end goes
 * to stderr_text. */
static void
capture_begin(void)
{
	capture = tmpfile();
	assert_non_null(capture);
	fflush(stderr);
	saved_stderr = dup(2);
	dup2(fileno(capture), 2);
}

static void
capture_end(void)
{
	size_t n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	rewind(capture);
	n = fread(stderr_text, 1, sizeof stderr_text - 1, capture);
	stderr_text[n] = '\0';
	fclose(capture);
}

/* cli_parse of the NULL-terminated arguments (after the program name),
 * standard error kept in stderr_text. */
static int
parse(cli_options *o, ...)
{
	char *argv[64];
	int argc = 0, rc;
	va_list ap;

	argv[argc++] = "tidemark";
	va_start(ap, o);
	for (char *a; argc < 63 && (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	capture_begin();
	rc = cli_parse(argc, argv, o);
	capture_end();
	return rc;
}

/* cli_load_secrets, standard error kept in stderr_text. */
static int
load_secrets(cli_options *o)
{
	int rc;

	capture_begin();
	rc = cli_load_secrets(o);
	capture_end();
	return rc;
}

static void
assert_stderr_has(const char *needle)
{
	if (strstr(stderr_text, needle) == NULL)
		fail_msg("standard error lacks \"%s\": %s", needle, stderr_text);
}

static void
assert_list(const char *const *items, int n, const char *const *want)
{
	int i = 0;

	for (; want[i] != NULL; i++) {
		assert_true(i < n);
		assert_string_equal(items[i], want[i]);
	}
	assert_int_equal(n, i);
}

#define LIST(...) ((const char *const[]) {__VA_ARGS__, NULL})

/* The options the command line has always had, as before the table. */
static void
test_command_line(void **state)
{
	cli_options o;

	(void) state;
	assert_int_equal(parse(&o, "run", "--source", "host=a", "--target", "host=b", "--chunk-bytes",
	                       "64MB", "--chunk-rows", "500", "--snapshot-readers", "3",
	                       "--progress-interval", "2", "--policy", "follow", "--table-policy",
	                       "a.b=stop", "--table-policy", "a.c=widen", "--drop-columns",
	                       "--until-caught-up", "--log-format", "json", "-v", "-v", NULL),
	                 TM_OK);
	assert_int_equal(o.command, CLI_RUN);
	assert_string_equal(o.source, "host=a");
	assert_string_equal(o.target, "host=b");
	assert_int_equal(o.chunk_bytes, 64LL * 1024 * 1024);
	assert_int_equal(o.chunk_rows, 500);
	assert_int_equal(o.snapshot_readers, 3);
	assert_true(o.progress_interval == 2.0);
	assert_string_equal(o.policy, "follow");
	assert_list(o.table_policies, o.ntable_policies, LIST("a.b=stop", "a.c=widen"));
	assert_true(o.drop_columns && !o.drop_tables && o.until_caught_up && o.log_json);
	assert_int_equal(o.verbose, 2);
	assert_string_equal(o.slot, "tidemark");
	assert_string_equal(o.publication, "tidemark");
	cli_options_free(&o);

	assert_int_equal(parse(&o, "snapshot", "--target", "host=b", "public.t", "--table", "public.u",
	                       "-q", NULL), TM_OK);
	assert_list(o.tables, o.ntables, LIST("public.u", "public.t"));
	assert_int_equal(o.verbose, -1);
	cli_options_free(&o);

	assert_int_equal(parse(&o, "schema", "--target", "host=b", "public.t", "--json", NULL), TM_OK);
	assert_list(o.tables, o.ntables, LIST("public.t"));
	assert_true(o.json);
	cli_options_free(&o);

	assert_int_equal(parse(&o, "status", "--chunk-rows", "5", NULL), TM_EXIT_USAGE);
	assert_stderr_has("--chunk-rows does not apply to this command");
	cli_options_free(&o);
	assert_int_equal(parse(&o, "run", "--chunk-rows", "0", NULL), TM_EXIT_USAGE);
	assert_stderr_has("--chunk-rows must be a whole number from 1 to 10000000, not \"0\"");
	cli_options_free(&o);
	assert_int_equal(parse(&o, "run", "--chunk-bytes", "1kB", NULL), TM_EXIT_USAGE);
	assert_stderr_has("--chunk-bytes must be a size from 16 kB");
	cli_options_free(&o);
	assert_int_equal(parse(&o, "verify", "--log-format", "xml", NULL), TM_EXIT_USAGE);
	assert_stderr_has("--log-format takes text or json, not \"xml\"");
	cli_options_free(&o);
	assert_int_equal(parse(&o, "setup", "stray", NULL), TM_EXIT_USAGE);
	assert_stderr_has("unexpected argument \"stray\"");
	cli_options_free(&o);
	assert_int_equal(parse(&o, "frobnicate", NULL), TM_EXIT_USAGE);
	cli_options_free(&o);
	assert_int_equal(parse(&o, "--version", NULL), TM_OK);
	assert_true(o.version);
	cli_options_free(&o);
}

/* setup --table-mode and --metadata-columns; mode's SCHEMA.TABLE=MODE
 * arguments and its metadata flags; neither where they do not apply. */
static void
test_table_modes(void **state)
{
	cli_options o;

	(void) state;
	assert_int_equal(parse(&o, "setup", "--table", "a.b", "--table-mode",
	                       "public.\"Line Items\"=history", "--table-mode", "a.b=soft-delete",
	                       "--metadata-columns", NULL), TM_OK);
	assert_list(o.table_modes, o.ntable_modes,
	            LIST("public.\"Line Items\"=history", "a.b=soft-delete"));
	assert_true(o.metadata_columns && !o.no_metadata_columns);
	cli_options_free(&o);

	assert_int_equal(parse(&o, "mode", "--target", "host=b", "public.t=history,soft-delete",
	                       "u=mirror", "--no-metadata-columns", "--json", NULL), TM_OK);
	assert_int_equal(o.command, CLI_MODE);
	assert_list(o.table_modes, o.ntable_modes, LIST("public.t=history,soft-delete", "u=mirror"));
	assert_true(o.no_metadata_columns && !o.metadata_columns && o.json);
	assert_int_equal(o.ntables, 0);
	cli_options_free(&o);
	assert_int_equal(parse(&o, "mode", "--target", "host=b", "--metadata-columns", NULL), TM_OK);
	assert_true(o.metadata_columns);
	assert_int_equal(o.ntable_modes, 0);
	cli_options_free(&o);

	assert_int_equal(parse(&o, "mode", "--table-mode", "a.b=history", NULL), TM_EXIT_USAGE);
	assert_stderr_has("--table-mode does not apply to this command");
	cli_options_free(&o);
	assert_int_equal(parse(&o, "run", "--metadata-columns", NULL), TM_EXIT_USAGE);
	assert_stderr_has("--metadata-columns does not apply to this command");
	cli_options_free(&o);
	assert_int_equal(parse(&o, "setup", "--no-metadata-columns", NULL), TM_EXIT_USAGE);
	assert_stderr_has("--no-metadata-columns does not apply to this command");
	cli_options_free(&o);
	assert_int_equal(parse(&o, "setup", "a.b=history", NULL), TM_EXIT_USAGE);
	assert_stderr_has("unexpected argument \"a.b=history\"");
	cli_options_free(&o);
}

/* mode_settings_parse, standard error kept in stderr_text. */
static int
parse_modes(const char *const *texts, mode_settings *ms)
{
	int n = 0, rc;

	while (texts[n] != NULL)
		n++;
	capture_begin();
	rc = mode_settings_parse(texts, n, "--table-mode", ms);
	capture_end();
	return rc;
}

/* SCHEMA.TABLE=MODE: names read the SQL way, the schema public by default,
 * either order of history and soft-delete; a mode that is none, a name
 * that does not parse, or one table with two modes is exit 2. */
static void
test_table_mode_values(void **state)
{
	mode_settings ms;

	(void) state;
	assert_int_equal(parse_modes(LIST("public.\"Line Items\"=history", "Orders=soft-delete",
	                                  "\"a=b\".c=soft-delete,history", "x.y=mirror",
	                                  "x.y=mirror"), &ms), TM_OK);
	assert_int_equal(ms.n, 4);
	assert_string_equal(ms.items[0].schema, "public");
	assert_string_equal(ms.items[0].name, "Line Items");
	assert_int_equal(ms.items[0].mode, SHAPE_HISTORY);
	assert_string_equal(ms.items[1].schema, "public");
	assert_string_equal(ms.items[1].name, "orders");
	assert_int_equal(ms.items[1].mode, SHAPE_SOFT_DELETE);
	assert_string_equal(ms.items[2].schema, "a=b");
	assert_int_equal(ms.items[2].mode, SHAPE_HISTORY | SHAPE_SOFT_DELETE);
	assert_int_equal(ms.items[3].mode, 0);
	assert_non_null(mode_settings_find(&ms, "public", "Line Items"));
	assert_null(mode_settings_find(&ms, "public", "line items"));
	mode_settings_free(&ms);

	assert_int_equal(parse_modes(LIST("public.t=archive"), &ms), TM_EXIT_USAGE);
	assert_stderr_has("--table-mode public.t=archive: expected "
	                  "SCHEMA.TABLE=mirror|history|soft-delete|history,soft-delete");
	mode_settings_free(&ms);
	assert_int_equal(parse_modes(LIST("public.t"), &ms), TM_EXIT_USAGE);
	assert_stderr_has("--table-mode public.t: expected SCHEMA.TABLE=");
	mode_settings_free(&ms);
	assert_int_equal(parse_modes(LIST("public.t=History"), &ms), TM_EXIT_USAGE);
	mode_settings_free(&ms);
	assert_int_equal(parse_modes(LIST("a.b.c=history"), &ms), TM_EXIT_USAGE);
	assert_stderr_has("--table-mode a.b.c=history: ");
	mode_settings_free(&ms);
	assert_int_equal(parse_modes(LIST("public.t=history", "t=mirror"), &ms), TM_EXIT_USAGE);
	assert_stderr_has("public.t is given two modes, history and mirror");
	mode_settings_free(&ms);
}

/* Every key of the file, for the commands that take it. */
static void
test_config_valid(void **state)
{
	cli_options o;

	(void) state;
	assert_int_equal(parse(&o, "run", "--config", CONFIG_DIR "valid.conf", NULL), TM_OK);
	assert_string_equal(o.source, "host=src.example port=5433 dbname=shop user=tidemark");
	assert_string_equal(o.target, "postgresql://tidemark@warehouse.example/dw");
	assert_string_equal(o.slot, "shop");
	assert_string_equal(o.publication, "shop_pub");
	assert_int_equal(o.chunk_rows, 5000);
	assert_int_equal(o.chunk_bytes, 8LL * 1024 * 1024);
	assert_int_equal(o.snapshot_readers, 2);
	assert_true(o.progress_interval == 30.0);
	/* a file's policies are setup's (stored), not a run's for that run only */
	assert_null(o.policy);
	assert_int_equal(o.ntable_policies, 0);
	assert_true(o.drop_columns && !o.drop_tables && o.log_json);
	assert_int_equal(o.verbose, 2);
	assert_string_equal(o.source_password_file,
	                    "/run/credentials/tidemark@shop.service/source-password");
	assert_false(o.config_has_password);
	/* setup's keys are not run's */
	assert_int_equal(o.ntables, 0);
	assert_int_equal(o.nschemas, 0);
	cli_options_free(&o);

	assert_int_equal(parse(&o, "setup", "--config", CONFIG_DIR "valid.conf", NULL), TM_OK);
	assert_list(o.schemas, o.nschemas, LIST("shop", "billing"));
	assert_list(o.exclude_tables, o.nexclude_tables, LIST("shop.sessions"));
	assert_list(o.tables, o.ntables, LIST("public.\"Line Items\""));
	assert_int_equal(o.chunk_rows, 0); /* run's keys are not setup's */
	assert_string_equal(o.policy, "quarantine");
	assert_list(o.table_policies, o.ntable_policies,
	            LIST("shop.orders=follow", "billing.invoices=stop"));
	assert_list(o.table_modes, o.ntable_modes, LIST("shop.orders=history"));
	assert_true(o.metadata_columns);
	assert_string_equal(o.slot, "shop");
	cli_options_free(&o);

	/* setup's modes are not the mode command's (its flags are for the
	 * command line) */
	assert_int_equal(parse(&o, "mode", "--config", CONFIG_DIR "valid.conf", NULL), TM_OK);
	assert_int_equal(o.ntable_modes, 0);
	assert_false(o.metadata_columns);
	cli_options_free(&o);

	/* verify has its own --chunk-rows (a page), and --table of its own */
	assert_int_equal(parse(&o, "verify", "--config", CONFIG_DIR "valid.conf", NULL), TM_OK);
	assert_int_equal(o.chunk_rows, 0);
	assert_int_equal(o.ntables, 0);
	assert_string_equal(o.target, "postgresql://tidemark@warehouse.example/dw");
	cli_options_free(&o);
}

/* The file, the line and the key, and exit 2 (usage). */
static void
test_config_errors(void **state)
{
	static const struct {
		const char *file;
		const char *message;
	} cases[] = {
		{"unknown_key.conf", "unknown_key.conf:4: unknown key \"chunk_rows\" (did you mean "
		                     "chunk-rows?)"},
		{"bad_value.conf", "bad_value.conf:4: chunk-bytes must be a size from 16 kB to 4096 MB"},
		{"cli_only.conf", "cli_only.conf:2: until-caught-up: a command-line option only"},
		{"wrong_type.conf", "wrong_type.conf:1: drop-tables: expected true or false"},
		{"syntax_error.conf", "syntax_error.conf:2: syntax error"},
		{"missing.conf", "cannot read the config file " CONFIG_DIR "missing.conf: No such file"},
	};
	cli_options o;
	char path[512];

	(void) state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(path, sizeof path, CONFIG_DIR "%s", cases[i].file);
		/* checked whatever the command: status takes none of run's keys */
		assert_int_equal(parse(&o, "status", "--config", path, NULL), TM_EXIT_USAGE);
		assert_stderr_has(cases[i].message);
		cli_options_free(&o);
	}
}

/* A list in the file, or one string; the command line's list replaces the
 * file's. */
static void
test_config_repeatable(void **state)
{
	cli_options o;

	(void) state;
	assert_int_equal(parse(&o, "setup", "--config", CONFIG_DIR "repeatable.conf", NULL), TM_OK);
	assert_list(o.tables, o.ntables, LIST("public.a", "public.b"));
	assert_list(o.schemas, o.nschemas, LIST("app"));
	assert_list(o.exclude_tables, o.nexclude_tables, LIST("app.tmp", "app.log"));
	cli_options_free(&o);

	assert_int_equal(parse(&o, "setup", "--config", CONFIG_DIR "repeatable.conf", "--table", "x.y",
	                       "--exclude-table", "app.z", NULL), TM_OK);
	assert_list(o.tables, o.ntables, LIST("x.y"));
	assert_list(o.schemas, o.nschemas, LIST("app"));
	assert_list(o.exclude_tables, o.nexclude_tables, LIST("app.z"));
	cli_options_free(&o);

	assert_int_equal(parse(&o, "setup", "--config", CONFIG_DIR "repeatable.conf", NULL), TM_OK);
	assert_list(o.table_policies, o.ntable_policies, LIST("public.a=stop"));
	cli_options_free(&o);
}

/* The command line over the file, the file over TIDEMARK_SOURCE/TARGET;
 * TIDEMARK_CONFIG names the file, --config '' none. */
static void
test_config_override(void **state)
{
	cli_options o;

	(void) state;
	assert_int_equal(parse(&o, "run", "--config", CONFIG_DIR "override.conf", "--slot", "cli",
	                       "--chunk-rows", "7", "-v", NULL), TM_OK);
	assert_string_equal(o.slot, "cli");
	assert_int_equal(o.chunk_rows, 7);
	assert_int_equal(o.verbose, 1); /* -v over the file's quiet */
	assert_true(o.drop_columns);
	assert_string_equal(o.source, "host=file-source dbname=shop");
	cli_options_free(&o);

	assert_int_equal(parse(&o, "run", "--config", CONFIG_DIR "override.conf", NULL), TM_OK);
	assert_int_equal(o.verbose, -1);
	assert_int_equal(o.chunk_rows, 100);
	cli_options_free(&o);

	setenv("TIDEMARK_CONFIG", CONFIG_DIR "override.conf", 1);
	setenv("TIDEMARK_SOURCE", "host=env-source", 1);
	setenv("TIDEMARK_TARGET", "host=env-target", 1);
	assert_int_equal(parse(&o, "setup", "--target", "host=cli-target", NULL), TM_OK);
	assert_string_equal(o.config, CONFIG_DIR "override.conf");
	assert_string_equal(o.source, "host=file-source dbname=shop");
	assert_string_equal(o.target, "host=cli-target");
	assert_list(o.tables, o.ntables, LIST("public.from_file"));
	cli_options_free(&o);

	assert_int_equal(parse(&o, "setup", "--config", "", NULL), TM_OK);
	assert_null(o.config);
	assert_string_equal(o.source, "host=env-source");
	assert_string_equal(o.target, "host=env-target");
	assert_int_equal(o.ntables, 0);
	cli_options_free(&o);
	unsetenv("TIDEMARK_CONFIG");
	unsetenv("TIDEMARK_SOURCE");
	unsetenv("TIDEMARK_TARGET");

	/* --help is help, whatever the file says */
	assert_int_equal(parse(&o, "run", "--config", CONFIG_DIR "unknown_key.conf", "--help", NULL),
	                 TM_OK);
	assert_true(o.help);
	cli_options_free(&o);
}

static char *
write_temp(const char *name, const char *text, mode_t mode)
{
	char *path = malloc(256);
	int fd;

	snprintf(path, 256, "%s/tidemark-test-cli-%d-%s", P_tmpdir, (int) getpid(), name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

/* The password files: the first line, without its line break; a file
 * without one, or missing, is exit 3; a password in the config file is
 * noticed (for the warning about its mode). */
static void
test_password_files(void **state)
{
	char *pw = write_temp("pw", "s3cret pass\r\nignored\n", 0600);
	char *empty = write_temp("empty", "\n", 0600);
	cli_options o;

	(void) state;
	assert_int_equal(parse(&o, "status", "--source-password-file", pw, "--target-password-file",
	                       pw, NULL), TM_OK);
	assert_int_equal(cli_load_secrets(&o), TM_OK);
	assert_string_equal(o.source_password, "s3cret pass");
	assert_string_equal(o.target_password, "s3cret pass");
	cli_options_free(&o);
	assert_null(o.source_password);

	assert_int_equal(parse(&o, "status", "--source-password-file", empty, NULL), TM_OK);
	assert_int_equal(cli_load_secrets(&o), TM_EXIT_CONFIG);
	cli_options_free(&o);
	assert_int_equal(parse(&o, "status", "--target-password-file", "/nonexistent/pw", NULL),
	                 TM_OK);
	assert_int_equal(cli_load_secrets(&o), TM_EXIT_CONFIG);
	cli_options_free(&o);

	assert_int_equal(parse(&o, "status", "--config", CONFIG_DIR "valid.conf", NULL), TM_OK);
	assert_false(o.config_has_password);
	cli_options_free(&o);
	unlink(pw);
	unlink(empty);
	free(pw);
	free(empty);
}

/* A file that holds a password and that others may read: a warning with
 * its mode and the chmod; none for mode 0600, none without a password. */
static void
test_password_file_modes(void **state)
{
	char *conf = write_temp("pw.conf", "source = \"host=src password=s3cret\";\n", 0644);
	char *nopw = write_temp("nopw.conf", "source = \"host=src\";\n", 0644);
	char *pw = write_temp("pw-shared", "s3cret\n", 0640);
	const char *warning = "holds a password and other users than its owner may read it";
	cli_options o;

	(void) state;
	assert_int_equal(parse(&o, "status", "--config", conf, NULL), TM_OK);
	assert_true(o.config_has_password);
	assert_int_equal(load_secrets(&o), TM_OK);
	assert_stderr_has(warning);
	assert_stderr_has("(mode 0644): chmod 600 ");
	assert_null(strstr(stderr_text, "s3cret"));
	assert_int_equal(chmod(conf, 0600), 0);
	assert_int_equal(load_secrets(&o), TM_OK);
	assert_null(strstr(stderr_text, warning));
	cli_options_free(&o);

	assert_int_equal(parse(&o, "status", "--config", nopw, NULL), TM_OK);
	assert_int_equal(load_secrets(&o), TM_OK);
	assert_null(strstr(stderr_text, warning));
	cli_options_free(&o);

	assert_int_equal(parse(&o, "status", "--source-password-file", pw, NULL), TM_OK);
	assert_int_equal(load_secrets(&o), TM_OK);
	assert_stderr_has("the source password file");
	assert_stderr_has("(mode 0640)");
	assert_null(strstr(stderr_text, "s3cret"));
	cli_options_free(&o);
	unlink(conf);
	unlink(nopw);
	unlink(pw);
	free(conf);
	free(nopw);
	free(pw);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_line),
		cmocka_unit_test(test_table_modes),
		cmocka_unit_test(test_table_mode_values),
		cmocka_unit_test(test_config_valid),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_config_repeatable),
		cmocka_unit_test(test_config_override),
		cmocka_unit_test(test_password_files),
		cmocka_unit_test(test_password_file_modes),
	};

	unsetenv("TIDEMARK_CONFIG");
	unsetenv("TIDEMARK_SOURCE");
	unsetenv("TIDEMARK_TARGET");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
