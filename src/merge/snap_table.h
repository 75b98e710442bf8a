/*
 * snap_table.h: a table being copied, as the snapshot (snapshot.h) keeps
 * it on the apply thread: its catalog row (tidemark.tables) read and
 * refreshed, its progress (the last key copied, rows, chunks) written in
 * the target transaction of each chunk, the target's column types and
 * key order the reads go by, the values a chunk must quarantine, and its
 * progress line.
 *
 * The scan's query (snapshot.c) yields, per table: table_id, source
 * schema and table, key columns (JSON), snapshot_last_key (JSON), the
 * request stamp, snapshot_rows, snapshot_chunks, target schema and table,
 * state, key_order_same and key_order_reason: the row snap_table_new and
 * snap_table_refresh read.
 */
#ifndef TIDEMARK_SNAP_TABLE_H
#define TIDEMARK_SNAP_TABLE_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "lsn.h"
#include "metrics.h"
#include "sink.h"
#include "snap_commits.h"
#include "snap_range.h"
#include "snap_reader.h"
#include "snap_window.h"
#include "sqltype.h"
#include "strbuf.h"

/* A table being copied. */
typedef struct snap_table {
	int table_id;
	char *schema;            /* owned, like every string here */
	char *name;
	char *target_schema;
	char *target_table;
	int nkeys;
	char **key_columns;
	char **key_types;        /* owned: the key columns' types on the target (may be NULL) */
	int nkey_types;          /* key_types' length (the key may change meanwhile) */
	char **applied_key;      /* snapshot_last_key as the scan read it: where a table copied
	                          * whole resumes (its range -1 starts from it) */
	char *request;           /* snapshot_requested_at as text, "" if none */
	long generation;
	int key_order;           /* what the catalog says of the key's order on the target
	                          * (key_order.h): 1 alike, 0 not, -1 not known */
	char *key_order_reason;  /* owned: why not (NULL when alike or not known) */
	bool done;
	bool restart;            /* read again from each range's applied key at the next poll */
	bool keyless;            /* no key: copied in one read (snap_keyless.h) */
	bool recording;          /* keyless: between the watermarks of its read */
	snap_commits *at_low;    /* owned: the recent commits as the keyless read's low
	                          * watermark met them, while its
	                          * window is open: however many commits come before its
	                          * high watermark, those before the low one stay known */
	long long rows;
	long long estimate;
	int chunks;
	double started;
	int nchecks;             /* columns whose source values may not fit the target: */
	char **check_cols;       /* owned: their names */
	sqltype *check_src;      /* owned: the source type in force */
	sqltype *check_tgt;      /* owned: the target column's type */
	char wm_id[96];          /* keyless: its read's watermark id */
	char *refused_definition; /* owned, keyless: the columns as read when the target
	                          * last refused a value read; NULL when it did not */
	tm_lsn low_lsn;          /* the low watermark of the read (or of the chunk) loading */
	/* A table with a key: its ranges (snap_range.h), one (no -1) when it is
	 * copied whole; none until the copy is planned (snapshot.c). */
	snap_range *ranges;      /* owned */
	int nranges;
	/* rows to read again by key (tidemark.snapshot_rereads) */
	char **reread_keys;      /* owned: nreread keys of nkeys values, from the last scan */
	int nreread;
	snap_result *reread;     /* owned: read, waiting for its high watermark */
	char *reread_json;       /* owned: its keys, a JSON array of arrays */
	snap_window *reread_window; /* owned: open between its watermarks */
	snap_commits *reread_at_low; /* owned: the recent commits as its low watermark met them */
	tm_lsn reread_low_lsn;
} snap_table;

/* Where a chunk's misfits go (borrowed). */
typedef struct snap_table_sink {
	sink *sink;
	const char *slot;
	metrics *metrics;        /* NULL: none */
} snap_table_sink;

/* A new table from row `row` of the scan (the caller owns it). */
snap_table *snap_table_new(PGresult *r, int row);
void snap_table_free(snap_table *t);

/* The names and key as the catalog has them now (a table renamed, moved,
 * or whose key changed its number of columns). */
void snap_table_refresh(snap_table *t, PGresult *r, int row);

/* JSON array text (or NULL) into a new array of n new strings, or NULL;
 * and back (NULL for NULL; the caller frees). */
char **snap_table_keys_from_json(const char *text, int n);
char *snap_table_keys_json(char *const *keys, int n);

/* The range with this number, or NULL; are all done? */
snap_range *snap_table_range(snap_table *t, int no);
bool snap_table_ranges_done(const snap_table *t);
/* Forgets the ranges (the copy is planned again). */
void snap_table_ranges_clear(snap_table *t);

/* The target table's columns, types and key order into the job (the job
 * owns them: snap_table_job_free), and the key's types into t. On failure
 * the job goes without (text rows, rows matched by key). */
void snap_table_target_types(sink *sk, snap_table *t, snap_job *job);
void snap_table_job_free(snap_job *job);

/* The columns whose source values may not fit the target's type (a
 * quarantine policy kept it), checked before a chunk loads. */
void snap_table_load_checks(sink *sk, snap_table *t, const snap_job *job);

/* Rows (COPY text) whose values all fit go to out, the others to
 * quarantine. Returns the rows kept, or -1. */
long snap_table_filter_misfits(const snap_table_sink *ts, const snap_table *t,
                               const snap_chunk *c, const strbuf *rows, strbuf *out);

/* In the chunk's target transaction: its progress, of range g (a newer
 * `tidemark snapshot` request, another stamp, is left alone). */
int snap_table_save_progress(sink *sk, const snap_table *t, const snap_range *g,
                             const snap_result *res, long rows);

/* The copy's finding on the key's order, when the catalog says otherwise. */
int snap_table_record_key_order(sink *sk, snap_table *t, const snap_result *res);

/* The table is gone on the source: marked dropped, its rereads forgotten. */
int snap_table_mark_gone(sink *sk, snap_table *t);

/* A chunk of range g applied: counts, the key reached; true when the
 * table is done (logged). */
bool snap_table_chunk_done(snap_table *t, snap_range *g, const snap_result *res, long rows,
                           bool fast, metrics *m);

/* Progress: a log line, or a bar ("public.orders [####....]  35% 3m10s"). */
void snap_table_report_line(const snap_table *t, double now);
void snap_table_append_bar(strbuf *sb, const snap_table *t, double now);

#endif
