/*
 * pgtest_cluster.c: throwaway clusters, through tests/tools/pgcluster.
 */
#include "pgtest_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PGCLUSTER_ARGS 16

static pgt_registry clusters;       /* the running ones */

/*
 * Runs pgcluster with args (NULL-terminated, after the program name). Its
 * standard error goes to ours, so its messages land in the test's log.
 * Returns its exit status; *out (the caller's) gets its standard output.
 */
static int
run_pgcluster(const char *const args[], char **out)
{
	char *argv[MAX_PGCLUSTER_ARGS * 2 + 4];
	size_t n = 0;
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) != 0)
		abort();
	argv[n++] = (char *) "bash";
	argv[n++] = (char *) PGCLUSTER_BIN;
	for (const char *const *a = args; *a; a++)
		argv[n++] = (char *) *a;
	argv[n] = NULL;
	pid = pgt_fork_exec("/bin/bash", argv, NULL, fds[1], -1, false);
	close(fds[1]);
	*out = pgt_read_fd(fds[0]);
	close(fds[0]);
	return pid > 0 ? pgt_wait_child(pid) : -1;
}

/* Runs "pgcluster CMD dir --name NAME [extra...]"; returns the port it
 * printed (start, restart) or 0, and -1 if it failed. */
static int
pgcluster_cmd(const char *cmd, const char *name, const char *const extra[])
{
	const char *args[MAX_PGCLUSTER_ARGS * 2];
	size_t n = 0;
	char *out;
	int rc, port;

	args[n++] = cmd;
	args[n++] = pgtest_dir();
	args[n++] = "--name";
	args[n++] = name;
	for (const char *const *e = extra; e && *e && n < MAX_PGCLUSTER_ARGS * 2 - 1; e++)
		args[n++] = *e;
	args[n] = NULL;
	rc = run_pgcluster(args, &out);
	port = rc == 0 ? atoi(out) : -1;
	free(out);
	return port;
}

static void
free_cluster(pgtest_cluster *c)
{
	free(c->name);
	free(c->conninfo);
	free(c->log_path);
	free(c);
}

/* Starts (cmd "start" or "standby", with its own arguments first) a
 * cluster owned by this process, with -c settings. */
static pgtest_cluster *
start_cluster(const char *file, int line, const char *cmd, const char *name,
              const char *const args[], const char *const settings[])
{
	const char *extra[MAX_PGCLUSTER_ARGS * 2];
	char owner[32];
	size_t n = 0;
	pgtest_cluster *c;
	int port;

	snprintf(owner, sizeof owner, "%d", (int) getpid());
	extra[n++] = "--owner-pid";
	extra[n++] = owner;
	for (const char *const *a = args; a && *a; a++)
		extra[n++] = *a;
	for (const char *const *s = settings; s && *s; s++) {
		if (n >= MAX_PGCLUSTER_ARGS * 2 - 3)
			pgt_fail(file, line, "too many settings for cluster %s", name);
		extra[n++] = "-c";
		extra[n++] = *s;
	}
	extra[n] = NULL;
	port = pgcluster_cmd(cmd, name, extra);
	if (port <= 0)
		pgt_fail(file, line, "could not start cluster %s (pgcluster's messages are above)", name);
	c = calloc(1, sizeof *c);
	if (c == NULL)
		abort();
	c->name = pgt_strdup(name);
	c->port = port;
	c->conninfo = pgtest_conninfo_db(c, "postgres");
	c->log_path = pgt_format("%s/%s.log", pgtest_dir(), name);
	pgt_registry_add(&clusters, c);
	return c;
}

pgtest_cluster *
pgtest_cluster_start_at(const char *file, int line, const char *name, const char *const settings[])
{
	return start_cluster(file, line, "start", name, NULL, settings);
}

pgtest_cluster *
pgtest_cluster_standby_at(const char *file, int line, const pgtest_cluster *primary,
                          const char *name, const char *slot, const char *const settings[])
{
	char port[16];
	const char *args[] = {"--primary-port", port, slot ? "--slot" : NULL, slot, NULL};

	snprintf(port, sizeof port, "%d", primary->port);
	return start_cluster(file, line, "standby", name, args, settings);
}

void
pgtest_cluster_promote_at(const char *file, int line, pgtest_cluster *c)
{
	if (pgcluster_cmd("promote", c->name, NULL) != c->port)
		pgt_fail(file, line, "could not promote cluster %s (pgcluster's messages are above)",
		         c->name);
}

void
pgtest_cluster_upgrade_at(const char *file, int line, pgtest_cluster *c)
{
	if (pgcluster_cmd("upgrade", c->name, NULL) != c->port)
		pgt_fail(file, line, "could not upgrade cluster %s (pgcluster's messages are above)",
		         c->name);
}

char *
pgtest_conninfo_db(const pgtest_cluster *c, const char *dbname)
{
	return pgt_format("host=127.0.0.1 port=%d dbname=%s user=postgres", c->port, dbname);
}

static void
stop_cluster(pgtest_cluster *c, const char *mode)
{
	const char *extra[] = {"--mode", mode, NULL};

	if (pgcluster_cmd("stop", c->name, extra) < 0)
		fprintf(stderr, "pgtest: could not stop cluster %s\n", c->name);
}

void
pgtest_cluster_stop(pgtest_cluster *c)
{
	if (c == NULL)
		return;
	pgt_registry_take(&clusters, c);
	stop_cluster(c, "fast");
	free_cluster(c);
}

void
pgtest_cluster_restart_at(const char *file, int line, pgtest_cluster *c, bool immediate)
{
	const char *extra[] = {"--mode", immediate ? "immediate" : "fast", NULL};
	int port = pgcluster_cmd("restart", c->name, extra);

	if (port != c->port)
		pgt_fail(file, line, "could not restart cluster %s (pgcluster's messages are above)", c->name);
}

void
pgtest_cluster_kill9_at(const char *file, int line, pgtest_cluster *c)
{
	if (pgcluster_cmd("kill9", c->name, NULL) < 0)
		pgt_fail(file, line, "could not kill cluster %s (pgcluster's messages are above)", c->name);
}

void
pgt_clusters_cleanup(bool on_signal)
{
	pgtest_cluster *c;

	while ((c = pgt_registry_take(&clusters, NULL)) != NULL) {
		stop_cluster(c, "immediate");
		if (!on_signal)
			free_cluster(c);
	}
}
