/*
 * metrics.h: `run --metrics-listen ADDR:PORT`, tidemark's metrics for
 * Prometheus at http://ADDR:PORT/metrics (text format 0.0.4).
 *
 * The metrics (the README's "Metrics" section lists them) live in a
 * registry (src/common/prom.h) that the run loop, the apply, the schema changes
 * and the snapshot readers update; libmicrohttpd serves them from a thread
 * of its own, rendering the registry at each scrape.
 *
 * Every function takes a NULL metrics (no --metrics-listen) and then does
 * nothing, so that callers need no test of their own.
 *
 * Two kinds of update:
 *   metrics_add / metrics_set   at once, from any thread;
 *   metrics_stage*              counts of work done inside the apply's
 *                               target transaction, from the apply thread
 *                               only: visible once that transaction commits
 *                               (metrics_commit, called by the apply), and
 *                               forgotten when it does not (metrics_rollback,
 *                               when the session ends), so that work applied
 *                               again after a failure is counted once.
 * Updates of unlabelled metrics are one relaxed atomic operation; a
 * labelled series (a table's, a schema change's) is found by its label,
 * made at its first use: tables' series are bounded by the tables
 * replicated.
 */
#ifndef TIDEMARK_METRICS_H
#define TIDEMARK_METRICS_H

#include <stdint.h>

typedef struct metrics metrics;

typedef enum metrics_counter {
	METRICS_SOURCE_TXS,      /* source transactions applied */
	METRICS_ROWS_INSERTED,   /* rows applied, by kind */
	METRICS_ROWS_UPDATED,
	METRICS_ROWS_DELETED,
	METRICS_TRUNCATES,       /* TRUNCATE statements applied */
	METRICS_STREAM_BYTES,    /* bytes of the change stream applied */
	METRICS_TARGET_TXS,      /* target transactions committed */
	METRICS_QUARANTINED,     /* rows (changes and copied rows) quarantined */
	METRICS_RETRIES_SOURCE,  /* new sessions after a failure of one side */
	METRICS_RETRIES_TARGET,
	METRICS_APPLY_BUSY_US,   /* the apply loop's time not waiting for the source */
	METRICS_READER_BUSY_US,  /* the snapshot readers' time reading chunks */
	METRICS_STREAMED_DIRECT, /* transactions streamed in progress: applied as they came, */
	METRICS_STREAMED_SPOOLED, /* and from their spool at their commit */
	METRICS_NCOUNTERS
} metrics_counter;

typedef enum metrics_gauge {
	METRICS_UP,              /* 1 while a session streams */
	METRICS_APPLIED_LSN,     /* committed on the target */
	METRICS_FLUSHED_LSN,     /* ... and flushed there: reported to the source */
	METRICS_SOURCE_LSN,      /* the source's WAL end, as last reported by it */
	METRICS_LAG_BYTES,
	METRICS_LAG_US,
	METRICS_TABLES_PENDING,  /* tables whose copy is not finished */
	METRICS_SLOT_RETAINED,   /* WAL the source keeps for the slot (slot_watch.h) */
	METRICS_CAPTURE_GAPS,    /* capture event triggers not whole (pub_watch.h) */
	METRICS_NGAUGES
} metrics_gauge;

/*
 * Parses listen (ADDR:PORT, :PORT or [IPV6]:PORT), binds it and starts
 * serving. *out new (metrics_free). Returns TM_OK; TM_EXIT_USAGE for an
 * address that is none of these forms; TM_EXIT_CONFIG when it cannot be
 * listened on (the port in use, an address not of this machine): said
 * once, with the fix.
 */
int metrics_start(const char *listen, const char *version, metrics **out);
/* Stops serving and frees everything. */
void metrics_free(metrics *m);

void metrics_add(metrics *m, metrics_counter c, uint64_t n);
void metrics_set(metrics *m, metrics_gauge g, uint64_t value);

/* A session ended with this status (an exit class or PGCONN_RETRY_*):
 * counted by class (configuration, source, target, ...). */
void metrics_error(metrics *m, int status);
/* A new session starts after a failure with this status (by side). */
void metrics_retry(metrics *m, int status);

/* ---- staged: the apply thread's, visible at the target's commit ---- */
void metrics_stage(metrics *m, metrics_counter c, uint64_t n);
/* A chunk of the copy of schema.name (source names) loaded with rows rows. */
void metrics_stage_chunk(metrics *m, const char *schema, const char *name, uint64_t rows);
/* A schema change done on the target: a ddl_action_kind (ddl_track.h) ... */
void metrics_stage_ddl_action(metrics *m, int action_kind);
/* ... or one of "copy_again", "create_table", "drop_table", "type". */
void metrics_stage_schema_change(metrics *m, const char *action);
void metrics_commit(metrics *m);
void metrics_rollback(metrics *m);

#endif
