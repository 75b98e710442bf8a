/*
 * mode.h: table modes as the command line sets them (`setup --table-mode
 * SCHEMA.TABLE=MODE --metadata-columns`, `tidemark mode`; README: Table
 * modes). The target's objects for a mode are shape.h's; here a table
 * goes from one mode to another in the caller's transaction:
 *   - turned on: the mode stored, then tidemark.shape_sync; history turned
 *     on for a table copied already (or its history made again) asks for
 *     the table to be copied again, so that the history starts with a
 *     'copy' entry of every row;
 *   - soft-delete turned off: the rows kept as deleted are removed, then
 *     the column tidemark_deleted_at;
 *   - metadata columns turned off: tidemark_lsn and tidemark_synced_at
 *     dropped from the mirror;
 *   - history turned off: the history and its view are kept, no longer
 *     written; turned on again, the same history goes on (without the
 *     changes made in between).
 * A column of the source's own under one of tidemark's names is never
 * dropped. Table names are read the SQL way ('public."Line Items"=history').
 */
#ifndef TIDEMARK_MODE_H
#define TIDEMARK_MODE_H

#include <jansson.h>
#include <stdbool.h>

#include "sink.h"
#include "tabledef.h"

/* One SCHEMA.TABLE=MODE of a command line. */
typedef struct mode_setting {
	char *schema;        /* owned */
	char *name;          /* owned */
	unsigned mode;       /* SHAPE_* */
} mode_setting;

typedef struct mode_settings {
	int n;
	mode_setting *items; /* owned */
} mode_settings;

/* "SCHEMA.TABLE=MODE", n of them, into *out (mode_settings_free, also
 * after a failure); option names them in messages ("--table-mode"). A
 * table given twice with two modes is refused. Returns TM_OK, or
 * TM_EXIT_USAGE after saying what is wrong. */
int mode_settings_parse(const char *const *tables, int n, const char *option,
                        mode_settings *out);
void mode_settings_free(mode_settings *ms);
/* The setting for source table schema.name, or NULL. */
const mode_setting *mode_settings_find(const mode_settings *ms, const char *schema,
                                       const char *name);

/* What a registered table is to become. */
typedef struct mode_target {
	int table_id;
	unsigned mode;       /* SHAPE_* */
	bool metadata;
	const tabledef *def; /* its source definition (setup's, or the catalog's latest
	                      * schema version): its columns are never dropped */
} mode_target;

/*
 * Brings the table to t's mode and metadata columns (above), in the
 * caller's transaction. *change: NULL when nothing changed, else a new
 * object: "table" (SCHEMA.TABLE), "mode" and "was", "metadata_columns" and
 * "was_metadata_columns", "copy_again" (true: a copy was asked for),
 * "synced" (what tidemark.shape_sync did, "" for nothing: logged by
 * shape_sync) and "done" (the rest, an array of sentences).
 */
int mode_change(sink *s, const mode_target *t, json_t **change);

/* The pipeline's metadata columns for the tables that join it later
 * (tidemark.progress.metadata_columns), in the caller's transaction. */
int mode_set_default(sink *s, const char *slot, bool metadata);

/* The table's latest schema version as a definition (*def new): what
 * `tidemark mode` checks a mode against (shape_fits). */
int mode_load_def(sink *s, int table_id, const char *schema, const char *name, tabledef **def);

/* Does the catalog on s know table modes (migration 014)? When not, says
 * so with the fix and returns TM_EXIT_CONFIG. */
int mode_check_catalog(sink *s);

/*
 * The histories and versions views of slot's tables found again by their
 * names beside each table where the oids recorded no longer name them (a
 * target copied with pg_dump and pg_restore: migrations/target/
 * 024_history_refound.sql), each logged; before anything uses the oids
 * (run's sessions, `mode`). Nothing on a catalog without that migration.
 */
int mode_refind_histories(sink *s, const char *slot);

#endif
