#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The process's log threshold: set once by main from --verbose/--quiet
 * before any thread starts, read-only afterwards. */
static log_level threshold = LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warning", "error"};

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
	write_all(line, n);
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
