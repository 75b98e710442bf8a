/*
 * lsn.h: PostgreSQL log sequence numbers (pg_lsn) as 64-bit integers.
 */
#ifndef TIDEMARK_LSN_H
#define TIDEMARK_LSN_H

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t tm_lsn;

#define LSN_INVALID ((tm_lsn) 0)
#define LSN_TEXT_MAX 20 /* "FFFFFFFF/FFFFFFFF" plus NUL, rounded up */

/* Writes "X/X" (PostgreSQL's spelling) into out; returns out. */
char *lsn_format(tm_lsn lsn, char out[LSN_TEXT_MAX]);
/* Parses "X/X"; returns false (and leaves *out alone) on anything else. */
bool lsn_parse(const char *text, tm_lsn *out);

#endif
