/*
 * keyless.h: row changes of tables without a key, on the target.
 *
 * A source table with REPLICA IDENTITY FULL and no key at all (no primary
 * key, no replica identity index, no unique index on NOT NULL columns) is
 * replicated as a multiset: the target table has no primary key and may
 * hold exact duplicates. An insert is a plain INSERT; an update or a delete
 * changes one row equal to the whole old row the stream sent (FULL sends
 * it), as PostgreSQL's own replication does (src/apply/keyless_sql.h says how
 * each column is compared). When no row is equal, the change is skipped
 * with a warning naming the table, counted in the log, never a failure.
 *
 * Each update and delete looks for its row with one statement that the
 * target can serve with any index it has on the table; without one, each
 * scans the table (see README: what the target needs).
 *
 * While such a table is being copied, its changes between the copy's
 * watermarks are kept in tidemark.keyless_pending instead (keyless_record)
 * and applied over the copy later (keyless_replay, snap_keyless.h).
 *
 * Everything goes through the sink (borrowed), inside the caller's target
 * transaction.
 */
#ifndef TIDEMARK_KEYLESS_H
#define TIDEMARK_KEYLESS_H

#include <stdbool.h>
#include <stdint.h>

#include "lsn.h"
#include "sink.h"
#include "snap_visible.h"

/* What the apply does with a change of a keyless table (snapshot.h
 * decides): apply it, skip it (the copy to come holds it), or keep it
 * for the copy under way (between its watermarks). */
typedef enum keyless_mode {
	KEYLESS_APPLY,
	KEYLESS_SKIP,
	KEYLESS_RECORD,
} keyless_mode;

/* One change, every pointer borrowed. */
typedef struct keyless_change {
	int table_id;
	const char *target_schema;
	const char *target_table;
	const char *display;          /* the source table for messages, e.g. public.t */
	int ncols;
	const char *const *cols;      /* the stream's column names */
	char op;                      /* 'i' insert, 'u' update, 'd' delete, 't' truncate */
	const char *const *old_row;   /* 'u', 'd': ncols values (NULL: SQL NULL) */
	const char *old_sent;         /* 'u', 'd': per column 1 (sent) or 0 (not sent: not
	                               * compared); NULL: every column sent */
	const char *const *new_row;   /* 'i', 'u': ncols values (NULL: SQL NULL) */
	const bool *unchanged;        /* 'u': columns not sent (unchanged TOAST): they keep
	                               * the row's value; NULL: none */
} keyless_change;

typedef struct keyless keyless;

keyless *keyless_new(sink *s);
void keyless_free(keyless *k);

/* Forgets what was read and built for a table (its definition changed). */
void keyless_forget(keyless *k, int table_id);

/* Applies the change to the target table. */
int keyless_apply(keyless *k, const keyless_change *c);

/* Keeps the change in tidemark.keyless_pending, with its source
 * transaction's xid and commit position. */
int keyless_record(keyless *k, const keyless_change *c, uint32_t xid, tm_lsn commit_lsn);

/* Deletes the changes kept for a table. */
int keyless_pending_clear(sink *s, int table_id);

typedef struct keyless_replayed {
	long kept;      /* changes kept for the table */
	long seen;      /* of those, of transactions the snapshot saw: not applied */
	long applied;
} keyless_replayed;

/*
 * Applies, in stream order, the changes kept for table t->table_id whose
 * transactions the snapshot x did not see, reading them back in pages of
 * about page_bytes (at least one change). t gives the table (op and rows
 * ignored); the changes must have t->ncols columns, else TM_EXIT_INTERNAL.
 */
int keyless_replay(keyless *k, const keyless_change *t, const snap_visible *x,
                   long long page_bytes, keyless_replayed *out);

#endif
