/*
 * pgtest_proc.c: running tidemark (or any program) with its output captured.
 */
#include "pgtest_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUTPUT_TAIL 3000        /* bytes of output shown when a wait fails */

struct pgtest_proc {
	pid_t pid;                  /* also its process group */
	bool exited;
	int status;                 /* once exited: as pgtest_proc_wait returns */
	char *out_path;             /* owned: standard output and error */
	char *output;               /* owned: the last pgtest_proc_output */
};

static pgt_registry procs;          /* the ones not freed yet */
static unsigned proc_count;

static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

pgtest_proc *
pgtest_spawn_at(const char *file, int line, const char *path,
				const char *const argv[], const char *const env[])
{
	pgtest_proc *p = calloc(1, sizeof *p);
	size_t n = 0;
	char **full, **envp;
	int fd, err;

	if (p == NULL)
		abort();
	for (const char *const *a = argv; a && *a; a++)
		n++;
	full = calloc(n + 2, sizeof(char *));
	if (full == NULL)
		abort();
	full[0] = (char *) path;
	for (size_t i = 0; i < n; i++)
		full[i + 1] = (char *) argv[i];
	p->out_path = pgt_format("%s/proc-%u-%s.out", pgtest_dir(), ++proc_count, base_name(path));
	fd = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		pgt_fail(file, line, "cannot create %s: %s", p->out_path, strerror(errno));
	envp = pgt_environ(env);
	p->pid = pgt_fork_exec(path, full, envp, fd, fd, true);
	err = errno;
	close(fd);
	pgt_free_strv(envp);
	free(full);
	if (p->pid < 0)
		pgt_fail(file, line, "cannot run %s: %s", path, strerror(err));
	pgt_registry_add(&procs, p);
	return p;
}

/* Collects the exit status if the process has exited (waiting if block). */
static bool
reap(pgtest_proc *p, bool block)
{
	int status;
	pid_t r;

	if (p->exited)
		return true;
	do
		r = waitpid(p->pid, &status, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return false;
	p->exited = true;
	p->status = r > 0 ? pgt_decode_status(status) : -1;
	return true;
}

static void
kill_group(pgtest_proc *p)
{
	if (!p->exited) {
		kill(-p->pid, SIGKILL);
		kill(p->pid, SIGKILL);
		reap(p, true);
	}
}

int
pgtest_proc_wait_at(const char *file, int line, pgtest_proc *p, double timeout_s)
{
	double deadline = pgt_now() + timeout_s;
	const char *out;
	size_t len;

	while (!reap(p, false)) {
		if (pgt_now() >= deadline) {
			kill_group(p);
			out = pgtest_proc_output(p);
			len = strlen(out);
			pgt_fail(file, line, "process %d did not exit within %.1f s; it was killed. "
					 "Its output (%s) ends with:\n%s", (int) p->pid, timeout_s, p->out_path,
					 len > OUTPUT_TAIL ? out + len - OUTPUT_TAIL : out);
		}
		pgt_sleep(0.01);
	}
	return p->status;
}

bool
pgtest_proc_running(pgtest_proc *p)
{
	return !reap(p, false);
}

pid_t
pgtest_proc_pid(const pgtest_proc *p)
{
	return p->pid;
}

void
pgtest_proc_kill(pgtest_proc *p, int sig)
{
	if (!p->exited)
		kill(p->pid, sig);
}

const char *
pgtest_proc_output(pgtest_proc *p)
{
	int fd = open(p->out_path, O_RDONLY | O_CLOEXEC);

	free(p->output);
	if (fd < 0) {
		p->output = pgt_strdup("");
		return p->output;
	}
	p->output = pgt_read_fd(fd);
	close(fd);
	return p->output;
}

typedef struct output_wait {
	pgtest_proc *p;
	const char *needle;
	bool found;
} output_wait;

/* Done when the needle is there, or when it never will be. */
static bool
output_done(void *arg)
{
	output_wait *w = arg;
	bool exited = reap(w->p, false);

	w->found = strstr(pgtest_proc_output(w->p), w->needle) != NULL;
	return w->found || exited;
}

bool
pgtest_proc_wait_output(pgtest_proc *p, const char *needle, double timeout_s)
{
	output_wait w = {p, needle, false};

	pgtest_wait_for(output_done, &w, timeout_s);
	return w.found;
}

void
pgtest_proc_free(pgtest_proc *p)
{
	if (p == NULL)
		return;
	pgt_registry_take(&procs, p);
	kill_group(p);
	kill(-p->pid, SIGKILL);     /* children that outlived it */
	free(p->out_path);
	free(p->output);
	free(p);
}

int
pgtest_run_tidemark_at(const char *file, int line, const char *const argv[],
					   double timeout_s, char **output)
{
	pgtest_proc *p = pgtest_spawn_at(file, line, TIDEMARK_BIN, argv, NULL);
	int status = pgtest_proc_wait_at(file, line, p, timeout_s);

	if (output != NULL)
		*output = pgt_strdup(pgtest_proc_output(p));
	pgtest_proc_free(p);
	return status;
}

void
pgt_procs_cleanup(bool on_signal)
{
	pgtest_proc *p;

	while ((p = pgt_registry_take(&procs, NULL)) != NULL) {
		if (on_signal)
			kill(-p->pid, SIGKILL);
		else
			pgtest_proc_free(p);
	}
}
