/*
 * tidemark as a service: `cmake --install` into a temporary prefix, and the
 * installed tree used the way an operator does. The installed program, run
 * from another directory with --config (passwords from password files
 * against servers that demand them), sets up and catches up a pipeline
 * until the target equals the source, stops on SIGTERM with exit 0, and
 * after an "upgrade" (migrations the catalogs lack on both sides) `setup`
 * applies them and replication goes on. The man page renders without a
 * warning and names every command and option of the help; the bash
 * completion loads and offers exactly each command's options; the systemd
 * unit verifies (systemd-analyze) and spares from restarts exactly the exit
 * codes that need a person.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "exitcode.h"
#include "pgtest.h"

static pgtest_cluster *src_cluster, *dst_cluster;
static char *prefix;        /* the installed tree */
static char *program;       /* prefix/bin/tidemark */
static char *workdir;       /* an empty directory the program runs in */

#define SRC_PASSWORD "src pass;word#1"
#define DST_PASSWORD "dst-Pa55"

static char *
format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
format(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

/* Runs a shell script (sh -c) with P set to the prefix and W to the work
 * directory; its exit status, its output (standard output and error) in
 * *out (caller frees). */
static int
sh(const char *script, double timeout_s, char **out)
{
	char *env_p = format("P=%s", prefix), *env_w = format("W=%s", workdir);
	const char *const argv[] = {"-c", script, NULL};
	const char *const env[] = {env_p, env_w, "LC_ALL=C", NULL};
	pgtest_proc *p = pgtest_spawn_program("/bin/sh", argv, env);
	int rc = pgtest_proc_wait(p, timeout_s);

	*out = strdup(pgtest_proc_output(p));
	pgtest_proc_free(p);
	free(env_p);
	free(env_w);
	return rc;
}

/* The installed program, from the work directory, with these arguments
 * (NULL-terminated); its exit status and output. */
static pgtest_proc *
spawn_installed(const char *first, va_list ap)
{
	const char *argv[32] = {"-c", "cd \"$W\" && exec \"$0\" \"$@\"", program, first};
	char *env_w = format("W=%s", workdir);
	const char *const env[] = {env_w, "TIDEMARK_SOURCE", "TIDEMARK_TARGET", "TIDEMARK_CONFIG",
	                           "PGPASSWORD", NULL};
	int n = 4;
	pgtest_proc *p;

	for (const char *a; n < 31 && (a = va_arg(ap, const char *)) != NULL;)
		argv[n++] = a;
	argv[n] = NULL;
	p = pgtest_spawn_program("/bin/sh", argv, env);
	free(env_w);
	return p;
}

static pgtest_proc *
spawn(const char *first, ...)
{
	va_list ap;
	pgtest_proc *p;

	va_start(ap, first);
	p = spawn_installed(first, ap);
	va_end(ap);
	return p;
}

static int
run(char **out, const char *first, ...)
{
	va_list ap;
	pgtest_proc *p;
	int rc;

	va_start(ap, first);
	p = spawn_installed(first, ap);
	va_end(ap);
	rc = pgtest_proc_wait(p, 180);
	*out = strdup(pgtest_proc_output(p));
	pgtest_proc_free(p);
	return rc;
}

static void
assert_has(const char *out, const char *needle)
{
	if (strstr(out, needle) == NULL)
		fail_msg("the output lacks \"%s\":\n%s", needle, out);
}

static void
assert_no_password(const char *out)
{
	if (strstr(out, SRC_PASSWORD) != NULL || strstr(out, DST_PASSWORD) != NULL)
		fail_msg("a password in the output:\n%s", out);
}

/* ---- the clusters and the installed tree ------------------------------------ */

/* Both servers demand a password (SCRAM) of the role svc, and trust the
 * test's own role. */
static pgtest_cluster *
start_cluster(const char *name, const char *password)
{
	char *hba_name = format("%s_hba.conf", name);
	char *hba = pgtest_write_file(hba_name,
	                              "local all all trust\n"
	                              "host all postgres 127.0.0.1/32 trust\n"
	                              "host replication postgres 127.0.0.1/32 trust\n"
	                              "host all svc 127.0.0.1/32 scram-sha-256\n"
	                              "host replication svc 127.0.0.1/32 scram-sha-256\n");
	char *setting = format("hba_file=%s", hba);
	pgtest_cluster *c = pgtest_cluster_start_with(name, setting, "max_wal_senders=10",
	                                              "max_replication_slots=10");
	PGconn *conn = pgtest_connect(c);

	pgtest_exec(conn, "SET password_encryption = 'scram-sha-256';"
	                  "CREATE ROLE svc LOGIN SUPERUSER REPLICATION PASSWORD '%s'", password);
	pgtest_exec(conn, "CREATE DATABASE svc_db OWNER svc");
	PQfinish(conn);
	free(hba_name);
	free(hba);
	free(setting);
	return c;
}

static int
group_setup(void **state)
{
	char *out = NULL, *script;
	int rc;

	(void) state;
	prefix = pgtest_path("prefix");
	program = format("%s/bin/tidemark", prefix);
	workdir = pgtest_path("elsewhere");
	if (mkdir(workdir, 0755) != 0)
		abort();
	script = format("\"%s\" --install \"%s\" --prefix \"$P\"", CMAKE_COMMAND, TIDEMARK_BUILD_DIR);
	rc = sh(script, 120, &out);
	if (rc != 0) {
		fprintf(stderr, "cmake --install exited %d:\n%s\n", rc, out);
		return -1;
	}
	free(out);
	free(script);
	src_cluster = start_cluster("src", SRC_PASSWORD);
	dst_cluster = start_cluster("dst", DST_PASSWORD);
	return 0;
}

static int
group_teardown(void **state)
{
	(void) state;
	if (src_cluster != NULL)
		pgtest_cluster_stop(src_cluster);
	if (dst_cluster != NULL)
		pgtest_cluster_stop(dst_cluster);
	free(prefix);
	free(program);
	free(workdir);
	return 0;
}

/* ---- the installed files ------------------------------------------------------ */

static void
test_installed_tree(void **state)
{
	static const char *const files[] = {
		"bin/tidemark", "share/man/man1/tidemark.1",
		"share/bash-completion/completions/tidemark", "share/doc/tidemark/tidemark@.service",
		"share/doc/tidemark/tidemark.conf.example", "share/doc/tidemark/README.md",
	};
	char *out = NULL;

	(void) state;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char *path = format("%s/%s", prefix, files[i]);

		if (access(path, R_OK) != 0)
			fail_msg("not installed: %s", path);
		free(path);
	}
	assert_int_equal(access(program, X_OK), 0);
	assert_int_equal(run(&out, "--version", NULL), 0);
	assert_has(out, "tidemark " TIDEMARK_VERSION);
	free(out);
	/* the example config is one the program takes */
	assert_int_equal(run(&out, "run", "--config", "../prefix/share/doc/tidemark/tidemark.conf.example",
	                     "--help", NULL), 0);
	free(out);
}

/* The options `tidemark [CMD] --help` lists, one per line: the long name
 * of each line that starts with "  -". */
static char *
help_options(const char *command)
{
	char *script = format("\"$P/bin/tidemark\" %s --help | sed -n 's/^  \\(-[a-zA-Z], \\)\\{0,1\\}"
	                      "\\(--[a-z-]*\\).*/\\2/p' | sort -u", command);
	char *out = NULL;

	assert_int_equal(sh(script, 30, &out), 0);
	free(script);
	return out;
}

/* The commands `tidemark --help` lists, one per line. */
static char *
help_commands(void)
{
	char *out = NULL;

	assert_int_equal(sh("\"$P/bin/tidemark\" --help | sed -n '/^Commands:/,/^$/s/^  \\([a-z-]*\\) .*/"
	                    "\\1/p'", 30, &out), 0);
	return out;
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* ---- the man page --------------------------------------------------------------- */

static void
test_man_page(void **state)
{
	char *out = NULL, *commands = help_commands();

	(void) state;
	/* man's and groff's warnings are on standard error: the page has none */
	assert_int_equal(sh("MANWIDTH=80 man --warnings -l \"$P/share/man/man1/tidemark.1\" 2>&1 "
	                    ">/dev/null", 60, &out), 0);
	if (out[0] != '\0')
		fail_msg("man warns:\n%s", out);
	free(out);
	assert_int_equal(sh("groff -man -ww -z \"$P/share/man/man1/tidemark.1\" 2>&1", 60, &out), 0);
	if (out[0] != '\0')
		fail_msg("groff warns:\n%s", out);
	free(out);
	assert_int_equal(sh("MANWIDTH=80 man -l \"$P/share/man/man1/tidemark.1\" 2>/dev/null", 60, &out),
	                 0);
	for (const char *sections[] = {"NAME", "SYNOPSIS", "COMMANDS", "OPTIONS", "CONFIGURATION FILE",
	                               "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", NULL},
	     **s = sections; *s != NULL; s++)
		assert_has(out, *s);
	/* every command, every option of every command's help */
	for (char *line = commands, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		char *opts, *entry;

		*nl = '\0';
		entry = format("\n       %s ", line); /* a command's entry in COMMANDS */
		if (strstr(out, entry) == NULL) {
			free(entry);
			entry = format("\n       %s\n", line);
			assert_has(out, entry);
		}
		free(entry);
		opts = help_options(line);
		for (char *o = opts, *onl; (onl = strchr(o, '\n')) != NULL; o = onl + 1) {
			*onl = '\0';
			assert_has(out, o);
		}
		free(opts);
	}
	/* the exit codes of exitcode.h, each an entry of EXIT STATUS */
	for (const int *code = (const int[]) {TM_EXIT_OK, TM_EXIT_DIFFERENT, TM_EXIT_USAGE,
	                                      TM_EXIT_CONFIG, TM_EXIT_SOURCE, TM_EXIT_TARGET,
	                                      TM_EXIT_POLICY, TM_EXIT_INTERNAL, -1};
	     *code >= 0; code++) {
		char *item = format("\n       %d ", *code);

		assert_has(strstr(out, "EXIT STATUS"), item);
		free(item);
	}
	free(out);
	free(commands);
}

/* ---- bash completion ---------------------------------------------------------- */

/* What the completion offers for `tidemark WORDS... CUR`, sorted. */
static char *
complete_words(const char *words)
{
	char *script = format("bash --norc -c 'source \"$P/share/bash-completion/completions/tidemark\" &&"
	                      " COMP_WORDS=(tidemark %s) && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) &&"
	                      " _tidemark && printf \"%%s\\n\" \"${COMPREPLY[@]}\"' | sort -u", words);
	char *out = NULL;

	assert_int_equal(sh(script, 30, &out), 0);
	free(script);
	return out;
}

static void
test_completion(void **state)
{
	char *out = NULL, *commands = help_commands(), *offered;

	(void) state;
	assert_int_equal(sh("bash --norc -c 'source \"$P/share/bash-completion/completions/tidemark\""
	                    " && complete -p tidemark'", 30, &out), 0);
	assert_has(out, "complete -F _tidemark tidemark");
	free(out);
	/* the commands, then each command's options: exactly those of the help */
	offered = complete_words("\"\"");
	assert_int_equal(sh("\"$P/bin/tidemark\" --help | sed -n '/^Commands:/,/^$/s/^  \\([a-z-]*\\) .*/"
	                    "\\1/p'; printf -- '--help\\n--version\\n'", 30, &out), 0);
	{
		char *sorted = NULL, *script = format("printf '%%s' '%s' | sort -u", out);

		assert_int_equal(sh(script, 30, &sorted), 0);
		assert_string_equal(offered, sorted);
		free(sorted);
		free(script);
	}
	free(out);
	free(offered);
	assert_true(count_lines(commands) >= 8);
	for (char *line = commands, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		char *words, *want;

		*nl = '\0';
		words = format("%s --", line);
		offered = complete_words(words);
		want = help_options(line);
		if (strcmp(offered, want) != 0)
			fail_msg("tidemark %s --<TAB> offers\n%s\nbut its --help lists\n%s", line, offered,
			         want);
		free(words);
		free(offered);
		free(want);
	}
	offered = complete_words("run --policy \"\"");
	assert_string_equal(offered, "follow\nquarantine\nstop\nwiden\n");
	free(offered);
	free(commands);
}

/* ---- the systemd unit ----------------------------------------------------------- */

static void
test_systemd_unit(void **state)
{
	char *out = NULL, *want;

	(void) state;
	/* a misconfiguration is not restarted in a loop: usage, configuration, stop policy */
	want = format("\nRestartPreventExitStatus=%d %d %d\n", TM_EXIT_USAGE, TM_EXIT_CONFIG,
	              TM_EXIT_POLICY);
	assert_int_equal(sh("cat \"$P/share/doc/tidemark/tidemark@.service\"", 30, &out), 0);
	assert_has(out, want);
	assert_has(out, "\nExecStart=");
	assert_has(out, program); /* the installed program */
	assert_has(out, "\nRestart=on-failure\n");
	assert_has(out, "\nKillSignal=SIGTERM\n");
	free(want);
	free(out);
	if (sh("command -v systemd-analyze", 30, &out) != 0) {
		printf("systemd-analyze is not installed: the unit is not verified\n");
		free(out);
		return;
	}
	free(out);
	/* an instance of the template, with the installed man page in reach
	 * (Documentation=man:tidemark(1)); verify warns on standard error */
	assert_int_equal(sh("mkdir -p \"$W/units\" && cp \"$P/share/doc/tidemark/tidemark@.service\" "
	                    "\"$W/units/tidemark@shop.service\" && MANPATH=\"$P/share/man\" "
	                    "systemd-analyze verify \"$W/units/tidemark@shop.service\" 2>&1", 60, &out),
	                 0);
	if (out[0] != '\0')
		fail_msg("systemd-analyze verify:\n%s", out);
	free(out);
}

/* ---- a pipeline run by the installed program ------------------------------------- */

typedef struct pipeline {
	char *src, *dst;        /* the test's own connections' conninfo */
	PGconn *s, *t;
	char *config;           /* the config file */
} pipeline;

static char *
write_private(const char *name, const char *text)
{
	char *path = pgtest_write_file(name, "%s", text);

	assert_int_equal(chmod(path, 0600), 0);
	return path;
}

static void
pipeline_start(pipeline *p)
{
	char *src_pw = write_private("source-password", SRC_PASSWORD "\n");
	char *dst_pw = write_private("target-password", DST_PASSWORD "\n");
	char *text;

	p->src = pgtest_conninfo_db(src_cluster, "svc_db");
	p->dst = pgtest_conninfo_db(dst_cluster, "svc_db");
	p->s = pgtest_connect_str(p->src);
	p->t = pgtest_connect_str(p->dst);
	/* no password in the file: the password files give them */
	text = format("# the pipeline of test_service\n"
	              "source = \"host=127.0.0.1 port=%d dbname=svc_db user=svc\";\n"
	              "target = \"postgresql://svc@127.0.0.1:%d/svc_db\";\n"
	              "source-password-file = \"%s\";\n"
	              "target-password-file = \"%s\";\n"
	              "slot = \"svc_shop\";\n"
	              "publication = \"svc_shop\";\n"
	              "schema = [\"shop\"];\n"
	              "exclude-table = [\"shop.sessions\"];\n"
	              "chunk-rows = 500;\n"
	              "chunk-bytes = \"1MB\";\n"
	              "snapshot-readers = 2;\n"
	              "progress-interval = 1;\n"
	              "log-format = \"json\";\n",
	              src_cluster->port, dst_cluster->port, src_pw, dst_pw);
	p->config = write_private("shop.conf", text);
	free(text);
	free(src_pw);
	free(dst_pw);
}

static void
pipeline_free(pipeline *p)
{
	PQfinish(p->s);
	PQfinish(p->t);
	free(p->src);
	free(p->dst);
	free(p->config);
}

static void
assert_equal_table(pipeline *p, const char *table, const char *order_by)
{
	char *diff = NULL;

	if (!pgtest_tables_equal(p->s, p->t, table, order_by, &diff))
		fail_msg("%s differs between source and target: %s", table, diff ? diff : "?");
}

static void
assert_pipeline_equal(pipeline *p)
{
	assert_equal_table(p, "shop.orders", "id");
	assert_equal_table(p, "shop.customers", "id");
	assert_null(pgtest_query_value(p->t, "SELECT to_regclass('shop.sessions')"));
}

/* Every output line a JSON log record (log-format from the file). */
static void
assert_json_lines(const char *out)
{
	for (const char *line = out; *line != '\0';) {
		const char *nl = strchr(line, '\n');

		if (strncmp(line, "{\"time\": ", 9) != 0)
			fail_msg("not a JSON log record: %.*s", nl ? (int) (nl - line) : (int) strlen(line),
			         line);
		line = nl ? nl + 1 : line + strlen(line);
	}
}

static void
catch_up(pipeline *p)
{
	char *out = NULL;
	int rc = run(&out, "run", "--config", p->config, "--until-caught-up", NULL);

	if (rc != 0)
		fail_msg("run --until-caught-up exited %d:\n%s", rc, out);
	assert_no_password(out);
	assert_json_lines(out);
	free(out);
}

/* The source of an older tidemark: without its latest capture migration
 * (005, which re-runs as it is) and a target without the catalog's 008. */
static void
make_catalogs_older(pipeline *p)
{
	pgtest_exec(p->s, "DROP EVENT TRIGGER tidemark_partition_truncate;"
	                  "DELETE FROM tidemark.migrations WHERE version = 5");
	pgtest_exec(p->t, "DROP TABLE tidemark.keyless_pending;"
	                  "DROP FUNCTION tidemark.column_match(oid, oid);"
	                  "DELETE FROM tidemark.migrations WHERE version = 8");
}

static void
test_pipeline_from_config(void **state)
{
	pipeline p;
	char *out = NULL, *no_pw;
	pgtest_proc *r;
	long src_migrations, dst_migrations;

	(void) state;
	pipeline_start(&p);
	pgtest_exec(p.s, "CREATE SCHEMA shop;"
	                 "CREATE TABLE shop.customers (id int PRIMARY KEY, name text);"
	                 "CREATE TABLE shop.orders (id bigint PRIMARY KEY, customer int, total numeric(12,2),"
	                 "  placed timestamptz DEFAULT now());"
	                 "CREATE TABLE shop.sessions (id int PRIMARY KEY, token text);"
	                 "INSERT INTO shop.customers SELECT g, 'c' || g FROM generate_series(1, 300) g;"
	                 "INSERT INTO shop.orders SELECT g, g %% 300 + 1, g * 1.25 FROM generate_series(1, 3000) g;"
	                 "INSERT INTO shop.sessions VALUES (1, 'secret')");

	/* without the password files, the servers refuse: exit 3 */
	no_pw = format("source = \"host=127.0.0.1 port=%d dbname=svc_db user=svc\";\n"
	               "target = \"host=127.0.0.1 port=%d dbname=svc_db user=svc\";\n"
	               "schema = \"shop\";\n", src_cluster->port, dst_cluster->port);
	{
		char *path = write_private("no-password.conf", no_pw);

		assert_int_equal(run(&out, "setup", "--config", path, NULL), TM_EXIT_CONFIG);
		assert_has(out, "password");
		free(out);
		free(path);
	}
	free(no_pw);

	/* setup and a first catch-up, all from the file */
	assert_int_equal(run(&out, "setup", "--config", p.config, NULL), 0);
	assert_no_password(out);
	free(out);
	catch_up(&p);
	assert_pipeline_equal(&p);
	assert_int_equal(run(&out, "status", "--config", p.config, NULL), 0);
	assert_has(out, "svc_shop");
	assert_no_password(out);
	free(out);

	/* as the service does: run until SIGTERM, which ends it with exit 0 */
	r = spawn("run", "--config", p.config, NULL);
	if (!pgtest_proc_wait_output(r, "streaming from slot", 60))
		fail_msg("run did not stream:\n%s", pgtest_proc_output(r));
	pgtest_exec(p.s, "UPDATE shop.orders SET total = total + 1 WHERE id %% 7 = 0;"
	                 "INSERT INTO shop.customers VALUES (1000, 'new');"
	                 "DELETE FROM shop.orders WHERE id %% 11 = 0");
	assert_true(pgtest_wait_value(p.t, "SELECT count(*) FROM shop.customers WHERE id = 1000", "1",
	                              60));
	pgtest_proc_kill(r, SIGTERM);
	assert_int_equal(pgtest_proc_wait(r, 60), 0);
	assert_no_password(pgtest_proc_output(r));
	pgtest_proc_free(r);
	catch_up(&p);
	assert_pipeline_equal(&p);

	/* the upgrade: the new tidemark's migrations are missing on both
	 * sides; setup again applies them, and replication goes on */
	src_migrations = pgtest_query_long(p.s, "SELECT count(*) FROM tidemark.migrations");
	dst_migrations = pgtest_query_long(p.t, "SELECT count(*) FROM tidemark.migrations");
	make_catalogs_older(&p);
	pgtest_exec(p.s, "INSERT INTO shop.orders VALUES (5000, 1, 9.99)");
	assert_int_equal(run(&out, "setup", "--config", p.config, NULL), 0);
	assert_has(out, "source: applied migration 005_partitions");
	assert_has(out, "target: applied migration 008_keyless");
	free(out);
	assert_int_equal(pgtest_query_long(p.s, "SELECT count(*) FROM tidemark.migrations"),
	                 src_migrations);
	assert_int_equal(pgtest_query_long(p.t, "SELECT count(*) FROM tidemark.migrations"),
	                 dst_migrations);
	assert_int_equal(pgtest_query_long(p.s, "SELECT count(*) FROM pg_event_trigger"
	                                        " WHERE evtname = 'tidemark_partition_truncate'"), 1);
	/* nothing is copied again */
	assert_int_equal(pgtest_query_long(p.t, "SELECT count(*) FROM tidemark.tables"
	                                        " WHERE state <> 'streaming'"), 0);
	/* and setup once more changes nothing */
	assert_int_equal(run(&out, "setup", "--config", p.config, NULL), 0);
	if (strstr(out, "applied migration") != NULL)
		fail_msg("a second setup applied migrations again:\n%s", out);
	free(out);
	pgtest_exec(p.s, "ALTER TABLE shop.orders ADD COLUMN note text DEFAULT 'n';"
	                 "INSERT INTO shop.orders VALUES (5001, 2, 1.00, now(), 'after upgrade')");
	catch_up(&p);
	assert_pipeline_equal(&p);
	pipeline_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_installed_tree),
		cmocka_unit_test(test_man_page),
		cmocka_unit_test(test_completion),
		cmocka_unit_test(test_systemd_unit),
		cmocka_unit_test(test_pipeline_from_config),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
