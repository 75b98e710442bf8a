/*
 * verify.h: comparing a replicated table between the source and the target
 * (`tidemark verify`), without stopping replication and without long
 * source transactions: every statement is one short query in its own
 * transaction.
 *
 * The pass: the source is walked in key order by keyset pages (WHERE key >
 * last ORDER BY key LIMIT n); each page is summed on the source (count, sum
 * of row hashes: src/verify/verify_sql.h) and the same key range on the target,
 * (previous last key, this page's last key], the last page without an upper
 * bound so that target rows after the source's last key count as extra.
 * The target's range is summed while the source reads its next page. A
 * range whose sums differ is split into parts (src/verify/verify_plan.h), all
 * summed by one statement per side, and the parts that differ again, until
 * the rows of a part are few enough to be read from both sides and
 * compared one by one (src/verify/verify_diff.h). What that finds is a candidate.
 *
 * The re-check: the target lags the source, so a candidate may be a change
 * in flight. Candidates are read again by key, on the source first, then on
 * the target once it has applied everything the source had written by then
 * (verify_catch_up); only differences found again are kept.
 *
 * Values that a conversion cannot take (verify_sql.h) make the statement
 * fail with a data exception: that range, or that key, is then compared as
 * each side's plain text.
 *
 * A table in soft-delete mode (shape.h) keeps the rows deleted on the
 * source in its mirror, marked: every statement on the target reads its
 * live rows only, and the marked ones are counted apart, not differences.
 */
#ifndef TIDEMARK_VERIFY_H
#define TIDEMARK_VERIFY_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "catalog.h"
#include "lsn.h"
#include "pgconn.h"
#include "sink.h"
#include "verify_diff.h"
#include "verify_plan.h"
#include "verify_sql.h"

/* Default keyset page size (--chunk-rows). */
#define VERIFY_DEFAULT_CHUNK_ROWS 10000
/* Keys per re-check statement. */
#define VERIFY_LOOKUP_BATCH 100

/* Session settings for a verify connection: statements end within
 * minutes, no transaction is left open, nothing is written, no JIT. */
int verify_session_setup(PGconn *conn, pgconn_side side);

typedef struct verify_stats {
	long long source_rows;   /* rows the pass summed on each side */
	long long target_rows;
	long pages;              /* source pages */
	long ranges;             /* ranges summed on both sides, pages included */
	long long rows_read;     /* rows read one by one, both sides */
	long plain_ranges;       /* ranges or keys compared as plain text */
	long long kept_deleted;  /* target rows kept as deleted (soft-delete), after the
	                          * pass: not compared, not in target_rows */
	int candidates;          /* keys the pass found different, to re-check */
	double seconds;          /* pass and re-checks */
} verify_stats;

/* A re-check batch: consecutive candidates, read by key on both sides. */
typedef struct verify_batch verify_batch;

/*
 * One table. The fields are read-only for callers; names ending in
 * "display" are spelled as SQL shows them (quoted where needed).
 */
typedef struct verify_table {
	char *source_schema;      /* owned, like every string here */
	char *source_name;
	char *target_schema;
	char *target_name;
	char *display;            /* the source table: public."Line Items" */
	bool source_partitioned;  /* read with its partitions; any other source table
	                           * is read ONLY (an inheritance child is a table of
	                           * its own) */
	unsigned shape_mode;      /* the table's mode (shape.h: SHAPE_*) */
	bool shape_metadata;      /* the mirror has metadata columns */
	bool soft_delete;         /* only the target's live rows are compared: those
	                           * marked deleted (SHAPE_DELETED_AT) are counted */
	int nkeys;
	char **keys;              /* the key columns (catalog order) */
	int *key_idx;             /* their indexes among cols */
	char **source_key_types;  /* each key column's base type on each side (codec.h: */
	char **target_key_types;  /* what its values are compared in); entries may be NULL */
	char **key_display;
	int ncols;
	verify_sql_column *cols;  /* the compared columns, source order */
	char **col_display;
	int nskipped;
	char **skipped;           /* columns of one side only: not compared */
	char **skipped_display;
	bool *skipped_on_target;  /* for each: on the target only (else the source only) */
	verify_diffs diffs;       /* candidates, then what the re-checks kept */
	verify_stats stats;
	/* A table without a key (nkeys 0) is compared as a multiset: each side
	 * summed whole (verify_multiset.c); no row is named, only whether the
	 * sums differ. */
	bool multiset;
	bool multiset_differs;
	verify_plan_sum multiset_source;
	verify_plan_sum multiset_target;

	/* private */
	PGconn *source;           /* borrowed */
	PGconn *target;           /* borrowed */
	char *what;               /* "comparing <display>", for error messages */
	long chunk_rows;
	char limit[24];           /* chunk_rows and chunk_rows - 1, as parameters */
	char last_offset[24];
	verify_plan_limits limits;
	int nbatches;
	verify_batch *batches;    /* owned: the re-check in progress */
} verify_table;

/*
 * Plans a table: the source's current columns that the target has by name
 * are compared, with the catalog's key columns; the columns tidemark adds
 * to the mirror in the table's mode (shape.h) are neither compared nor
 * listed as not compared. source and target stay the
 * caller's and must outlive the table. *out is new (verify_table_free) on
 * TM_OK. A key column missing on either side is a target error, logged.
 */
int verify_table_open(PGconn *source, PGconn *target, const catalog_table *ct, long chunk_rows,
                      verify_table **out);
void verify_table_free(verify_table *vt);

/* "schema.name" as SQL shows it (quote_ident, asked of the target);
 * *out is new (caller frees). */
int verify_display_name(PGconn *target, const char *schema, const char *name, char **out);

/* The pass over every key range; differences go to vt->diffs (a table
 * without a key: its two sums, multiset_differs). Then, in soft-delete
 * mode, the target's rows kept as deleted are counted (stats). */
int verify_table_pass(verify_table *vt);
/* Differences found: keys, or 1 for a multiset that differs. */
int verify_table_differences(const verify_table *vt);

/*
 * A re-check round of vt->diffs: reads the candidates on the source, then
 * (after the caller has waited for the target to catch up with the source)
 * on the target, and keeps the differences found again.
 */
int verify_table_recheck_source(verify_table *vt);
int verify_table_recheck_target(verify_table *vt);

typedef struct verify_catch_up {
	bool running;        /* the slot is active on the source */
	bool caught_up;      /* the target applied everything up to source_lsn */
	tm_lsn source_lsn;   /* the source's WAL insert position when asked */
	tm_lsn applied_lsn;  /* the target's applied position, last read */
	double waited;       /* seconds */
} verify_catch_up;

/*
 * Reads the source's WAL position and, if replication is running (its slot
 * is active), waits up to timeout_s seconds for the target's applied
 * position (read through catalog) to reach it.
 */
int verify_catch_up_wait(PGconn *source, sink *catalog, const char *slot, double timeout_s,
                         verify_catch_up *out);

#endif
