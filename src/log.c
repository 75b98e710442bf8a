#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The process's log threshold: set once by main from --verbose/--quiet
 * before any thread starts, read-only afterwards. */
static log_level threshold = LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warning", "error"};

/* The terminal status line: written by the apply thread, and cleared and
 * redrawn around every log line of any thread, under this lock. */
static pthread_mutex_t status_lock = PTHREAD_MUTEX_INITIALIZER;
static char status[1024];

void
log_set_level(log_level level)
{
	threshold = level;
}

log_level
log_get_level(void)
{
	return threshold;
}

static void
write_all(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n <= 0)
			return;
		buf += n;
		len -= (size_t) n;
	}
}

void
log_msg(log_level level, const char *fmt, ...)
{
	char line[4096];
	struct timeval tv;
	struct tm tm;
	size_t n;
	va_list ap;
	int w;

	if (level < threshold)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(line, sizeof line, "%Y-%m-%d %H:%M:%S", &tm);
	n += (size_t) snprintf(line + n, sizeof line - n, ".%03dZ tidemark %s: ",
	                       (int) (tv.tv_usec / 1000), level_names[level]);
	va_start(ap, fmt);
	w = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	va_end(ap);
	if (w < 0)
		w = 0;
	n += (size_t) w;
	if (n > sizeof line - 2)
		n = sizeof line - 2;
	/* drop a trailing newline from libpq messages, then end the line */
	while (n > 0 && line[n - 1] == '\n')
		n--;
	line[n++] = '\n';
	pthread_mutex_lock(&status_lock);
	if (status[0] != '\0')
		write_all("\r\033[K", 4);
	write_all(line, n);
	if (status[0] != '\0')
		write_all(status, strlen(status));
	pthread_mutex_unlock(&status_lock);
}

void
log_status_line(const char *text)
{
	if (!log_is_tty())
		return;
	pthread_mutex_lock(&status_lock);
	snprintf(status, sizeof status, "%s", text ? text : "");
	write_all("\r\033[K", 4);
	write_all(status, strlen(status));
	pthread_mutex_unlock(&status_lock);
}

int
log_tty_width(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
		return ws.ws_col;
	return 80;
}

bool
log_is_tty(void)
{
	return isatty(STDERR_FILENO) == 1;
}

void
log_raw(const char *text)
{
	write_all(text, strlen(text));
}
