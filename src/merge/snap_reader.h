/*
 * snap_reader.h: the snapshot reader threads. Each has its own source
 * connection and copies tables chunk by chunk:
 *
 *   low watermark  pg_logical_emit_message(true, 'tidemark.wm', 'L <id>')
 *   read           BEGIN REPEATABLE READ READ ONLY; pg_current_snapshot();
 *                  COPY (SELECT ... WHERE key > last ORDER BY key LIMIT n)
 *                  TO STDOUT; COMMIT     -- one short transaction, no lock
 *                  beyond the ACCESS SHARE of any SELECT
 *   result         handed to the apply thread (snap_reader_take)
 *   high watermark pg_logical_emit_message(true, 'tidemark.wm', 'H <id>')
 *
 * The apply thread meets both watermarks in the stream and applies the
 * chunk at the high one (snapshot.c). A reader runs at most
 * SNAP_READER_AHEAD chunks ahead of what the apply thread has consumed, so
 * memory stays bounded.
 *
 * Memory: a chunk ends once the rows it holds take chunk_bytes, measured as
 * they arrive (the read is cancelled there, whatever the row count or the
 * size statistics say), or at chunk_rows rows. Each reader holds at most
 * SNAP_READER_AHEAD chunks not yet applied and reads one more; the apply
 * thread may copy the one it loads once (to drop rows the stream changed).
 * So the snapshot holds at most (readers x (SNAP_READER_AHEAD + 1) + 1) x
 * chunk_bytes of rows, plus one row beyond the bound per chunk.
 *
 * A table without a key (nkeys 0) has no order to page by: it is read in
 * one piece between its watermarks, in one REPEATABLE READ transaction
 * that lasts as long as the table takes to read, and its rows go straight
 * into a staging table on the target, through a target connection of the
 * reader's own (keyless_stage.h), never held in memory: the result holds
 * no rows, only the snapshot and the count (snap_keyless.h).
 */
#ifndef TIDEMARK_SNAP_READER_H
#define TIDEMARK_SNAP_READER_H

#include <stdbool.h>
#include <stdint.h>
#include <libpq-fe.h>

#include "codec.h"
#include "lsn.h"
#include "metrics.h"
#include "snap_visible.h"
#include "snap_window.h"

#define SNAP_READER_AHEAD 2
#define SNAP_WM_PREFIX "tidemark.wm"

/* A table to copy, from start_key (exclusive) on. */
typedef struct snap_job {
	int table_id;
	long generation;         /* bumped by the apply thread to restart a table */
	char *schema;            /* owned, like every string here */
	char *name;
	int nkeys;
	char **key_columns;
	char **start_key;        /* NULL: from the first row (of the range) */
	/* One key range of a table copied in several at once (snap_range.h):
	 * range_no, and the bounds on the first key column (lower exclusive,
	 * upper inclusive; NULL: open). A table copied whole: range_no -1. */
	int range_no;
	char *range_lower;
	char *range_upper;
	long chunk_rows;
	long long chunk_bytes;   /* a chunk ends once its rows take this many bytes */
	/* The target table's columns and their types (format_type): when every
	 * column the chunk reads has the same built-in type on the source, rows
	 * travel in binary COPY format, which the target loads faster. */
	int ntarget;
	char **target_names;
	char **target_types;
	/* Instead of a range: the rows with these keys (nreread keys of nkeys
	 * values each, flat), read again (snap_reader_reread). */
	char **reread_keys;
	int nreread;
	/* With reread_keys: read only the key columns of the rows that exist
	 * (text rows; a sweep's lookup, snap_sweep.h). */
	bool keys_only;
	/* Per key column, how the target orders its values (a CODEC_ORDER_SQL
	 * descriptor, codec.h; NULL: unknown). The reader compares each with
	 * the source's (see snap_result.by_keys). */
	char **target_order;
	/* The target table: a table without a key is read into its staging
	 * table, created with this table's column types. */
	char *target_schema;
	char *target_table;
} snap_job;

/* A chunk read between its watermarks. */
typedef struct snap_result {
	char id[64];
	int table_id;
	long generation;
	int range_no;            /* the job's */
	snap_chunk *chunk;       /* owned */
	int nkeys;
	char **prev_key;         /* owned; NULL for the first chunk */
	char **last_key;         /* owned; NULL when the chunk is empty */
	bool final;              /* fewer rows than asked: the table (or its range) ends here */
	bool cut;                /* the read stopped at chunk_bytes: more rows follow */
	long rows_limit;         /* the LIMIT the chunk was read with */
	int nxip;
	uint64_t *xip;           /* owned: transactions in progress at the read */
	snap_visible snap;       /* owned: the read's whole snapshot (tables without a key) */
	bool staged;             /* a table without a key: its rows are in the staging
	                          * table (chunk holds only the column names) */
	long long rows_staged;
	bool behind;             /* not staged: the target table lacked columns the read
	                          * met, or refused a value read (refused): the source's
	                          * change of them had not reached the target */
	char *refused;           /* owned: the target's message for the value refused */
	char *definition;        /* owned, with refused: the columns and types read */
	long long estimate;      /* pg_class.reltuples at the first chunk */
	bool table_gone;         /* the table no longer exists on the source */
	/* The target does not order the key as the source does (another type or
	 * collation, or one whose order tidemark cannot compare): no decision
	 * about the chunk's rows may rest on a key range evaluated on the
	 * target, only on the keys the source returned (snap_load.h). */
	bool by_keys;
	char order_note[CODEC_ORDER_REASON_MAX]; /* which key column and both descriptors */
} snap_result;

typedef struct snap_reader snap_reader;

/* Starts nthreads readers; the conninfos are copied (target: where tables
 * without a key are staged). session: unique text that makes this
 * process's watermark ids its own. m (borrowed, may be NULL): where
 * the readers count their busy time. */
int snap_reader_start(const char *conninfo, const char *target, int nthreads,
                      const char *session, metrics *m, snap_reader **out);
/* Stops and joins the threads, frees everything not taken. */
void snap_reader_stop(snap_reader *r);

/* Copies (or copies again, with a new generation) a table or one of its
 * ranges. The job is copied. A free reader takes the waiting job of the
 * table with the fewest readers at work on it (then in submission order):
 * the ranges of one table share the readers with the other tables, one
 * reader per table first. */
void snap_reader_submit(snap_reader *r, const snap_job *job);
/* Forgets a table, all its ranges (copied to the end, or dropped). */
void snap_reader_forget(snap_reader *r, int table_id);
/* Is this table being copied, and with which generation? */
bool snap_reader_has(snap_reader *r, int table_id, long *generation);

/* Was this watermark id issued by this process? Sets *table_id, its
 * generation and its range. */
bool snap_reader_issued(snap_reader *r, const char *id, int *table_id, long *generation,
                        int *range_no);

/* The calling thread's source connection (the one rereads use), opened
 * on first use; NULL when it cannot be. Borrowed. */
PGconn *snap_reader_conn(snap_reader *r);
/* Takes the result of a chunk whose high watermark was met; NULL when
 * none (not ours, or already taken). The caller frees it with
 * snap_reader_release, which also lets the reader go on. */
snap_result *snap_reader_take(snap_reader *r, const char *id);
void snap_reader_release(snap_reader *r, snap_result *res);

/*
 * Reads again, on the calling thread, the rows with the job's reread_keys:
 * low watermark, one short read of `WHERE (keys) IN (...)`, high watermark,
 * like a chunk (same id space, same result). The caller owns *out (free it
 * with snap_reader_release) and meets both watermarks in the stream later.
 * Uses a source connection of its own, opened on first use.
 */
int snap_reader_reread(snap_reader *r, const snap_job *job, snap_result **out);

/* A reader's failure, as a status (TM_OK when all is well). */
int snap_reader_status(snap_reader *r);

void snap_job_clear(snap_job *job);
void snap_keys_free(char **keys, int n);
char **snap_keys_copy(char *const *keys, int n);

#endif
