/*
 * pub_watch.h: `run` reads the source's publication again every
 * PUB_WATCH_INTERVAL_S seconds and compares it with the reading before
 * (pub_state.h). The walsender leaves out, saying nothing in the stream,
 * the changes of a table its publication does not publish when they are
 * written, and from PostgreSQL 18 those of every table while the
 * publication does not exist. A table left out is said, with the fix; one
 * published again, or taken out and put back in between, is copied again
 * (the changes meanwhile were not sent); a publication gone, or dropped
 * and created again, stops the run (exit 3).
 *
 * At each reading it also checks the DDL capture's event triggers: one
 * missing or not enabled ALWAYS is said when first seen (and again when
 * what is wrong changes), and its mending too. Schema changes it misses
 * are still caught where the stream describes a table otherwise (the
 * table is then set aside and copied again: apply_set_aside), but a
 * rename or a drop of a table is not.
 */
#ifndef TIDEMARK_PUB_WATCH_H
#define TIDEMARK_PUB_WATCH_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "metrics.h"
#include "pub_state.h"
#include "sink.h"
#include "snapshot.h"

#define PUB_WATCH_INTERVAL_S 10

typedef struct pub_watch {
	const char *publication; /* borrowed */
	const char *slot;        /* borrowed: the tables replicated through it */
	pub_state last;          /* owned: the last reading */
	bool read;               /* ... once there is one */
	double read_at;          /* ... when (clock_now_s) */
	uint32_t *own;           /* owned: tables run itself published since (and copies) */
	int nown;
	char *capture_gaps;      /* owned: what the last reading found wrong with the
	                          * capture's event triggers ("" when nothing) */
} pub_watch;

void pub_watch_init(pub_watch *w, const char *publication, const char *slot);
void pub_watch_free(pub_watch *w);

/* Reads the publication again when PUB_WATCH_INTERVAL_S have gone by since
 * the last reading, through control (the source) and the sink's catalog
 * (outside an apply transaction); tables to copy again are asked for in
 * the catalog and of snap. The capture's triggers not whole are counted in
 * mx (METRICS_CAPTURE_GAPS; NULL: not counted). */
int pub_watch_poll(pub_watch *w, PGconn *control, sink *s, snapshot *snap, metrics *mx);

/* run itself published the table (pub_watch_poll would take it for one
 * put back by hand) and copies it: not copied again for that. */
void pub_watch_own(pub_watch *w, uint32_t relid);

/* The warning for a replicated table the publication does not publish. */
void pub_watch_warn_left(const char *publication, const char *table);

#endif
