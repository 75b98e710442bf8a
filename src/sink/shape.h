/*
 * shape.h: a table's mode (mirror, history, soft-delete, or history and
 * soft-delete) and its metadata columns on the target (README: Table
 * modes; migrations/target/014_table_modes.sql). The target's objects for
 * them are made and kept in line with the mirror by one catalog function,
 * tidemark.shape_sync, inside the caller's transaction: after a table is
 * registered or made again, after each schema change of it, after its mode
 * changes. The statements that write them are dml_sql.h's.
 */
#ifndef TIDEMARK_SHAPE_H
#define TIDEMARK_SHAPE_H

#include <stdbool.h>

#include "catalog.h"
#include "dml_sql.h"
#include "sink.h"
#include "tabledef.h"

#define SHAPE_HISTORY 1u
#define SHAPE_SOFT_DELETE 2u

/* "mirror", "history", "soft-delete", "history,soft-delete" (also
 * "soft-delete,history"): *mode gets SHAPE_* flags. Returns false for
 * anything else. */
bool shape_mode_parse(const char *text, unsigned *mode);
/* The catalog's name of the mode (static). */
const char *shape_mode_name(unsigned mode);
unsigned shape_mode_of(const catalog_table *t);

/* A column name tidemark gives its own columns (tidemark.shape_columns()). */
bool shape_reserved_column(const char *name);
/* The mirror's column that marks a row deleted on the source (soft-delete):
 * NULL on a live row. */
#define SHAPE_DELETED_AT "tidemark_deleted_at"
/* Is name one of the columns tidemark adds to a mirror in mode (SHAPE_*)
 * and with metadata columns or not: tidemark_deleted_at for soft deletes,
 * tidemark_lsn and tidemark_synced_at for metadata columns. A plain mirror
 * has none (a source column of such a name is the source's). */
bool shape_mirror_column(unsigned mode, bool metadata, const char *name);
/* Can def be replicated in mode (and with metadata columns)? When not,
 * says why, naming the table, and returns false. */
bool shape_fits(const tabledef *def, unsigned mode, bool metadata);

/* The table's target objects brought in line with its mode (shape_sync
 * above); renames: the column renames of the schema change just applied,
 * old and new name in turn (n pairs), or NULL. A plain mirror without
 * metadata columns costs one query. *done (may be NULL): what was done,
 * new string ("" for nothing). */
int shape_sync(sink *s, int table_id, const char *const *renames, int n, char **done);
/* The same for the registered table of source table schema.name. */
int shape_sync_named(sink *s, const char *slot, const char *schema, const char *name);

/* A table's shape as its statements need it (dml_sql.h), read from the
 * catalog; owns the strings shape points to. */
typedef struct shape_loaded {
	bool shaped;            /* not a plain mirror: shape applies */
	bool history_behind;    /* the history lacks what the mirror holds: the table's
	                         * copy looks its latest entries up (snap_load.c) */
	unsigned mode;          /* SHAPE_* */
	dml_sql_shape shape;
	char *history;          /* owned: shape.history */
	char **cols;            /* owned: shape.hist_cols */
	bool *text;             /* owned: shape.hist_text */
} shape_loaded;

/* Reads it; a table in history mode without its history table is an
 * error (TM_EXIT_TARGET) saying how to make it again. *out is filled
 * (shape_loaded_free, also after a failure). */
int shape_load(sink *s, int table_id, shape_loaded *out);
void shape_loaded_free(shape_loaded *l);

/* Sets the session's position and commit time (tidemark.lsn,
 * tidemark.commit_time) for the statements that follow in the open
 * transaction: the metadata columns' defaults, history entries and soft
 * deletes read them. commit_time: microseconds since 2000-01-01 UTC. Sent
 * in the pipeline (errors at the next sync point). */
int shape_set_position(sink *s, tm_lsn lsn, long long commit_time);
/* A commit time as text: ISO 8601 in UTC with microseconds, exact whatever
 * the session's DateStyle (SHAPE_TIME_TEXT_MAX bytes are enough). */
#define SHAPE_TIME_TEXT_MAX 96
void shape_format_commit_time(long long commit_time, char *out, size_t size);

#endif
