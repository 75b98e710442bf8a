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
static log_format format = LOG_FORMAT_TEXT;

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

void
log_set_format(log_format f)
{
	format = f;
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

/* Line breaks (and the indentation after them) become one space. */
static size_t
one_line(char *text, size_t n)
{
	size_t out = 0;

	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		n--;
	for (size_t i = 0; i < n; i++) {
		if (text[i] != '\n' && text[i] != '\r') {
			text[out++] = text[i];
			continue;
		}
		while (i + 1 < n && (text[i + 1] == '\n' || text[i + 1] == '\r' || text[i + 1] == '\t' ||
		                     text[i + 1] == ' '))
			i++;
		text[out++] = ' ';
	}
	return out;
}

/* "2026-05-01T12:00:00.123Z" */
static void
timestamp(char *out, size_t size)
{
	struct timeval tv;
	struct tm tm;
	size_t n;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(out, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, size - n, ".%03dZ", (int) (tv.tv_usec / 1000));
}

/* A JSON string's body: quotes, backslashes and control characters escaped. */
static size_t
json_escape(const char *in, size_t n, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 7 < size; i++) {
		unsigned char c = (unsigned char) in[i];

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char) c;
		} else if (c < 0x20)
			o += (size_t) snprintf(out + o, size - o, "\\u%04x", c);
		else
			out[o++] = (char) c;
	}
	return o;
}

static void
emit(const char *line, size_t n)
{
	pthread_mutex_lock(&status_lock);
	if (status[0] != '\0')
		write_all("\r\033[K", 4);
	write_all(line, n);
	if (status[0] != '\0')
		write_all(status, strlen(status));
	pthread_mutex_unlock(&status_lock);
}

void
log_msg(log_level level, const char *fmt, ...)
{
	char msg[4096], line[8192], ts[32];
	size_t n;
	va_list ap;
	int w;

	if (level < threshold)
		return;
	timestamp(ts, sizeof ts);
	va_start(ap, fmt);
	w = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	n = w < 0 ? 0 : (size_t) w < sizeof msg ? (size_t) w : sizeof msg - 1;
	n = one_line(msg, n);
	if (format == LOG_FORMAT_JSON) {
		size_t o = (size_t) snprintf(line, sizeof line, "{\"time\": \"%s\", \"level\": \"%s\", "
		                             "\"message\": \"", ts, level_names[level]);

		o += json_escape(msg, n, line + o, sizeof line - o - 4);
		o += (size_t) snprintf(line + o, sizeof line - o, "\"}\n");
		emit(line, o);
		return;
	}
	w = snprintf(line, sizeof line, "%s tidemark %s: %.*s\n", ts, level_names[level], (int) n, msg);
	emit(line, w < 0 ? 0 : (size_t) w < sizeof line ? (size_t) w : sizeof line - 1);
}

void
log_status_line(const char *text)
{
	if (!log_is_tty() || format == LOG_FORMAT_JSON)
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
	/* asked at every turn of the stream's loop: standard error stays what
	 * it was when first asked */
	static int tty = -1;

	if (tty < 0)
		tty = isatty(STDERR_FILENO) == 1;
	return format == LOG_FORMAT_TEXT && tty == 1;
}

void
log_raw(const char *text)
{
	write_all(text, strlen(text));
}
