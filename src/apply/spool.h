/*
 * spool.h: a temporary file of records, written in order and read back in
 * order: the messages of a transaction the source streams while it is in
 * progress, kept until its commit (apply_stream.c). Memory stays bounded
 * whatever the transaction's size: only a write buffer and the record
 * being read are held.
 *
 * The file is made in the spool directory (spool_open's dir; NULL:
 * $TMPDIR, else /tmp) and unlinked at once, so that nothing is left behind
 * by a crash or a kill -9; its space is freed when it is closed.
 *
 * Each record is its length (4 bytes, network order) then its bytes.
 *
 * Ownership: a spool owns its file and buffers; spool_next's record is
 * borrowed until the next call on the spool.
 *
 * Failures (a full disk, an unwritable directory) are logged here, with
 * the directory and the fix, and returned as TM_EXIT_CONFIG.
 */
#ifndef TIDEMARK_SPOOL_H
#define TIDEMARK_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct spool spool;

int spool_open(const char *dir, spool **out);
void spool_close(spool *s); /* NULL is accepted */

/* Appends one record of len bytes. */
int spool_append(spool *s, const char *data, size_t len);
/* The bytes written so far: a point to cut back to. */
uint64_t spool_size(const spool *s);
/* Cuts the file back to size (a spool_size taken before), dropping every
 * record written after it. */
int spool_truncate(spool *s, uint64_t size);

/* Reads the records back in order, from pos (0: the first; or a
 * spool_size taken before): then each spool_next gives the next one,
 * *end true once none is left (*data and *len borrowed until the next
 * call). Records appended meanwhile are read too. */
int spool_seek(spool *s, uint64_t pos);
int spool_next(spool *s, const char **data, size_t *len, bool *end);

#endif
