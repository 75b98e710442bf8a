/*
 * keyless_stage.h: the target side of the one read that copies a table
 * without a key (snap_keyless.h). A snapshot reader thread streams the
 * source's COPY TO STDOUT straight into a staging table on the target,
 * through a target connection of its own, piece by piece as it arrives:
 * no row is held in memory beyond the one being forwarded.
 *
 *   BEGIN
 *   (every column read is checked to exist in the target table: a column
 *    the source added that the stream has not brought yet puts the read
 *    off, see keyless_stage_begin)
 *   DROP TABLE IF EXISTS tidemark."keyless <table id>"
 *   CREATE UNLOGGED TABLE tidemark."keyless <table id>" AS
 *       SELECT <the copied columns> FROM <target table> WITH NO DATA
 *   COPY tidemark."keyless <table id>" (<columns>) FROM STDIN [binary]
 *   ... the source's COPY data, as it comes ...
 *   COMMIT
 *
 * The staging table is unlogged: a target crash empties it, but a crash
 * also starts the copy over (a new read), and the load at the high
 * watermark copies its rows into the target table in a logged transaction.
 * Commits do not wait for the disk (synchronous_commit = off), for the same
 * reason.
 */
#ifndef TIDEMARK_KEYLESS_STAGE_H
#define TIDEMARK_KEYLESS_STAGE_H

#include <stdbool.h>

typedef struct keyless_stage keyless_stage;

/* A stage for this target (conninfo copied); it connects at the first begin. */
int keyless_stage_open(const char *conninfo, keyless_stage **out);
void keyless_stage_close(keyless_stage *st);

/* Starts the staging transaction and its COPY. Everything is borrowed.
 * The target table is locked (ACCESS SHARE) until the staging ends.
 * *behind, with nothing started, TM_OK: the target table lacks some of the
 * columns read (the source's change of them has not reached the target
 * yet), or has no longer its name (the stream renamed it meanwhile); the
 * read is of no use, and is made again. */
int keyless_stage_begin(keyless_stage *st, int table_id, const char *target_schema,
                        const char *target_table, int ncols, const char *const *cols,
                        bool binary, bool *behind);
/* Forwards COPY data (any split: whole rows in text, anything in binary). */
int keyless_stage_data(keyless_stage *st, const char *buf, int len);
/* Ends the COPY and commits; *rows: the rows staged. *refused: NULL, or
 * when the target's type refused a value read (invalid text or binary
 * form, out of range, too long: the source's change of a column's type may
 * not have reached the target table yet) the server's message (caller
 * owns, free): nothing logged, the staging abandoned, TM_OK. */
int keyless_stage_commit(keyless_stage *st, long long *rows, char **refused);
/* Abandons the staging transaction (after a failure on either side); a
 * broken connection is closed and opened again at the next begin. */
void keyless_stage_abort(keyless_stage *st);

#endif
