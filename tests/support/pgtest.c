/*
 * pgtest.c: the process-wide part of the test harness: the per-process
 * directory, failure reporting, starting child processes, and ending
 * everything at exit or on SIGINT/SIGTERM.
 */
#include "pgtest_int.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

extern char **environ;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cleanup_lock = PTHREAD_MUTEX_INITIALIZER;
static char *test_dir;          /* owned; NULL until pgt_init */
static bool dir_removed;

/* ---- strings and failures ---------------------------------------------- */

char *
pgt_vformat(const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	return s;
}

char *
pgt_format(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = pgt_vformat(fmt, ap);
	va_end(ap);
	return s;
}

char *
pgt_strdup(const char *s)
{
	char *d = strdup(s);

	if (d == NULL)
		abort();
	return d;
}

char *
pgt_read_fd(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t r;

	if (buf == NULL)
		abort();
	for (;;) {
		if (cap - len < 2 && (buf = realloc(buf, cap *= 2)) == NULL)
			abort();
		r = read(fd, buf + len, cap - len - 1);
		if (r > 0)
			len += (size_t) r;
		else if (r == 0 || errno != EINTR)
			break;
	}
	buf[len] = '\0';
	return buf;
}

static void vfail(const char *file, int line, const char *fmt, va_list ap)
	__attribute__((noreturn, format(printf, 3, 0)));

static void
vfail(const char *file, int line, const char *fmt, va_list ap)
{
	char *msg = pgt_vformat(fmt, ap);

	print_error("%s:%d: %s\n", file, line, msg);
	free(msg);
	_fail(file, line);
	abort();                    /* _fail returns only if cmocka is misused */
}

void
pgt_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(file, line, fmt, ap);
}

void
pgt_fail_soft(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (pgt_in_workload()) {
		pgt_workload_count_error();
		return;
	}
	va_start(ap, fmt);
	vfail(file, line, fmt, ap);
}

/* ---- time ------------------------------------------------------------------ */

double
pgt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

void
pgt_sleep(double seconds)
{
	struct timespec ts;

	if (seconds <= 0)
		return;
	ts.tv_sec = (time_t) seconds;
	ts.tv_nsec = (long) ((seconds - (double) ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

bool
pgtest_wait_for(bool (*cond)(void *arg), void *arg, double timeout_s)
{
	double deadline = pgt_now() + timeout_s;
	double delay = 0.005;

	for (;;) {
		double left;

		if (cond(arg))
			return true;
		left = deadline - pgt_now();
		if (left <= 0)
			return false;
		pgt_sleep(delay < left ? delay : left);
		if (delay < 0.1)
			delay *= 2;
	}
}

/* ---- the per-process directory ---------------------------------------- */

/* $TMPDIR unless it would make socket paths too long for the kernel. */
static const char *
temp_base(void)
{
	const char *t = getenv("TMPDIR");

	if (t == NULL || t[0] != '/' || strlen(t) > 60)
		return "/tmp";
	return t;
}

static int
remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void) st;
	(void) flag;
	(void) ftw;
	remove(path);
	return 0;
}

/* True if path holds a directory: a cluster that a watchdog has not
 * removed yet. */
static bool
has_subdir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool found = false;

	while (d != NULL && !found && (e = readdir(d)) != NULL)
		found = e->d_type == DT_DIR && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	if (d != NULL)
		closedir(d);
	return found;
}

/* A directory pgtest-PID-PROGRAM-XXXXXX of a test process that was killed,
 * once its watchdogs have removed its clusters (only logs are left). */
static bool
is_stale_dir(const char *path, const char *name)
{
	char *end;
	long pid;

	if (strncmp(name, "pgtest-", 7) != 0)
		return false;
	pid = strtol(name + 7, &end, 10);
	if (end == name + 7 || *end != '-' || pid <= 0)
		return false;
	if (kill((pid_t) pid, 0) == 0 || errno != ESRCH)
		return false;
	return !has_subdir(path);
}

static void
remove_stale_dirs(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		char *path = pgt_format("%s/%s", base, e->d_name);

		if (is_stale_dir(path, e->d_name))
			nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		free(path);
	}
	if (d != NULL)
		closedir(d);
}

static void
make_test_dir(void)
{
	char *tmpl = pgt_format("%s/pgtest-%d-%.24s-XXXXXX", temp_base(), (int) getpid(),
							program_invocation_short_name);

	remove_stale_dirs(temp_base());
	if (mkdtemp(tmpl) == NULL) {
		fprintf(stderr, "pgtest: cannot create %s: %s\n", tmpl, strerror(errno));
		exit(1);
	}
	test_dir = tmpl;
}

const char *
pgtest_dir(void)
{
	pgt_init();
	return test_dir;
}

char *
pgtest_path(const char *name)
{
	return pgt_format("%s/%s", pgtest_dir(), name);
}

char *
pgtest_write_file_at(const char *file, int line, const char *name, const char *fmt, ...)
{
	char *path = pgtest_path(name);
	va_list ap;
	FILE *f;
	int failed;

	f = fopen(path, "w");
	if (f == NULL)
		pgt_fail(file, line, "cannot create %s: %s", path, strerror(errno));
	va_start(ap, fmt);
	failed = vfprintf(f, fmt, ap) < 0;
	va_end(ap);
	failed |= fclose(f) != 0;
	if (failed)
		pgt_fail(file, line, "cannot write %s: %s", path, strerror(errno));
	return path;
}

static void
remove_test_dir(void)
{
	const char *keep = getenv("PGTEST_KEEP");

	if (test_dir == NULL || dir_removed)
		return;
	dir_removed = true;
	if (keep != NULL && strcmp(keep, "1") == 0)
		fprintf(stderr, "pgtest: kept %s\n", test_dir);
	else
		nftw(test_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- ending everything ---------------------------------------------------- */

void
pgt_registry_add(pgt_registry *r, void *item)
{
	pthread_mutex_lock(&registry_lock);
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 8;
		r->items = realloc(r->items, r->cap * sizeof(void *));
		if (r->items == NULL)
			abort();
	}
	r->items[r->n++] = item;
	pthread_mutex_unlock(&registry_lock);
}

void *
pgt_registry_take(pgt_registry *r, void *item)
{
	void *found = NULL;

	pthread_mutex_lock(&registry_lock);
	for (size_t i = r->n; i-- > 0 && found == NULL;) {
		if (item == NULL || r->items[i] == item) {
			found = r->items[i];
			r->items[i] = r->items[--r->n];
		}
	}
	pthread_mutex_unlock(&registry_lock);
	return found;
}

/* Processes first: a tidemark still running would log errors about the
 * servers going away. */
static void
cleanup_at_exit(void)
{
	pthread_mutex_lock(&cleanup_lock);
	pgt_workloads_cleanup();
	pgt_procs_cleanup(false);
	pgt_clusters_cleanup(false);
	remove_test_dir();
	pthread_mutex_unlock(&cleanup_lock);
}

/* Waits for SIGINT or SIGTERM, ends what the harness started, then lets the
 * signal end the process as it would have. The test goes on meanwhile, so
 * nothing is freed; workload threads die with the process. */
static void *
signal_thread(void *arg)
{
	sigset_t *set = arg;
	int sig;

	while (sigwait(set, &sig) != 0)
		;
	fprintf(stderr, "pgtest: %s: stopping what the harness started\n", strsignal(sig));
	pthread_mutex_lock(&cleanup_lock);
	pgt_procs_cleanup(true);
	pgt_clusters_cleanup(true);
	remove_test_dir();
	signal(sig, SIG_DFL);
	pthread_sigmask(SIG_UNBLOCK, set, NULL);
	raise(sig);
	_exit(128 + sig);
}

static void
init_once_fn(void)
{
	static sigset_t set;
	pthread_t th;

	make_test_dir();
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(&th, NULL, signal_thread, &set) != 0) {
		fprintf(stderr, "pgtest: cannot start the signal thread\n");
		exit(1);
	}
	pthread_detach(th);
	atexit(cleanup_at_exit);
}

void
pgt_init(void)
{
	pthread_once(&init_once, init_once_fn);
}

/* ---- child processes -------------------------------------------------------- */

void
pgt_free_strv(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/* True if entry ("N=V") is the variable named by spec ("N=V" or "N"). */
static bool
same_variable(const char *entry, const char *spec)
{
	size_t n = strcspn(spec, "=");

	return strncmp(entry, spec, n) == 0 && entry[n] == '=';
}

static bool
overridden(const char *entry, const char *const overrides[])
{
	for (const char *const *o = overrides; *o; o++)
		if (same_variable(entry, *o))
			return true;
	return false;
}

char **
pgt_environ(const char *const overrides[])
{
	static const char *const none[] = {NULL};
	size_t n = 0, k = 0;
	char **env;

	if (overrides == NULL)
		overrides = none;
	for (char **e = environ; *e; e++)
		n++;
	for (const char *const *o = overrides; *o; o++)
		n++;
	env = calloc(n + 1, sizeof(char *));
	if (env == NULL)
		abort();
	for (char **e = environ; *e; e++)
		if (!overridden(*e, overrides))
			env[k++] = pgt_strdup(*e);
	for (const char *const *o = overrides; *o; o++)
		if (strchr(*o, '=') != NULL)
			env[k++] = pgt_strdup(*o);
	return env;
}

/* Runs in the child between fork and exec: async-signal-safe calls only.
 * If exec fails, its errno goes to report_fd. */
static void
exec_child(const char *path, char *const argv[], char *const envp[],
		   int out_fd, int err_fd, bool own_group, pid_t parent, int report_fd)
{
	sigset_t none;
	int devnull = open("/dev/null", O_RDONLY);
	int err;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	if (out_fd >= 0)
		dup2(out_fd, STDOUT_FILENO);
	if (err_fd >= 0)
		dup2(err_fd, STDERR_FILENO);
	if (report_fd > 3)
		close_range(3, (unsigned) report_fd - 1, 0);
	close_range((unsigned) report_fd + 1, ~0U, 0);
	if (own_group) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
	}
	if (envp != NULL)
		environ = (char **) envp;
	if (strchr(path, '/') != NULL)
		execv(path, argv);
	else
		execvp(path, argv);
	err = errno;
	if (write(report_fd, &err, sizeof err) < 0)
		_exit(126);
	_exit(127);
}

pid_t
pgt_fork_exec(const char *path, char *const argv[], char *const envp[],
			  int out_fd, int err_fd, bool own_group)
{
	pid_t parent = getpid();
	int report[2];
	int err;
	pid_t pid;

	pgt_init();
	if (pipe2(report, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid == 0)
		exec_child(path, argv, envp, out_fd, err_fd, own_group, parent, report[1]);
	close(report[1]);
	if (pid > 0 && own_group)
		setpgid(pid, pid);      /* also here: no race with a quick kill */
	if (pid > 0 && read(report[0], &err, sizeof err) == (ssize_t) sizeof err) {
		pgt_wait_child(pid);
		errno = err;
		pid = -1;
	}
	close(report[0]);
	return pid;
}

int
pgt_decode_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

int
pgt_wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return pgt_decode_status(status);
}
