/*
 * log.h: log lines on stderr, one write(2) per line so that lines from the
 * snapshot reader thread and the apply loop never interleave. A record is
 * always one line (line breaks in a message, from libpq or the server,
 * become spaces), with an ISO 8601 UTC time: text
 *   2026-05-01T12:00:00.123Z tidemark error: source: ...
 * or, for log shippers (--log-format json), one JSON object per line:
 *   {"time": "2026-05-01T12:00:00.123Z", "level": "error", "message": "..."}
 *
 * Nothing that may hold a password is ever passed here: connection strings
 * are logged only through conninfo_describe().
 */
#ifndef TIDEMARK_LOG_H
#define TIDEMARK_LOG_H

#include <stdbool.h>

typedef enum log_level {
	LOG_DEBUG = 0,
	LOG_INFO = 1,
	LOG_WARN = 2,
	LOG_ERROR = 3,
} log_level;

typedef enum log_format {
	LOG_FORMAT_TEXT = 0,
	LOG_FORMAT_JSON = 1,
} log_format;

void log_set_level(log_level level);
/* Set once by main, before any thread starts. */
void log_set_format(log_format format);
log_level log_get_level(void);
void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* True when stderr is a terminal (progress bars instead of log lines). */
bool log_is_tty(void);
/* Writes a raw line (no prefix). */
void log_raw(const char *text);

/* On a terminal: a status line (progress bars) kept at the bottom, redrawn
 * in place; log lines are written above it. NULL or "" removes it. Does
 * nothing when stderr is not a terminal. */
void log_status_line(const char *text);
/* The terminal's width in columns (80 when unknown). */
int log_tty_width(void);

#endif
