/*
 * tm_error.h: the error record filled by pure modules (decoder, DDL tracker,
 * casting). They do not log: they describe the failure here and return a
 * non-zero status; the caller that owns the context logs it once.
 */
#ifndef TIDEMARK_TM_ERROR_H
#define TIDEMARK_TM_ERROR_H

#define TM_ERROR_MAX 512

typedef struct tm_error {
	char msg[TM_ERROR_MAX];
} tm_error;

/* Sets err->msg (err may be NULL); always returns -1 so callers can
 * write `return tm_error_set(err, ...)`. */
int tm_error_set(tm_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
