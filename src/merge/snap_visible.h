/*
 * snap_visible.h: which source transactions a snapshot sees, for the copy
 * of a table without a key (snap_keyless.h).
 *
 * That copy is one read under a REPEATABLE READ snapshot X, taken with
 * pg_current_snapshot() ("xmin:xmax:xip,..."; 64-bit transaction ids,
 * epoch included). The stream names each transaction by its top-level xid
 * in 32 bits (pgoutput's Begin). A transaction the stream shows committed
 * is visible to X when its xid is below xmin, or below xmax and not among
 * the xids X lists as in progress; otherwise X did not see it and its
 * changes must be applied over the copy.
 *
 * 32 to 64 bits: a transaction of the stream near X (committed between the
 * copy's two watermarks) is less than 2^31 transactions away from X's
 * xmax, so its 64-bit id is the one of that distance.
 *
 * Pure: no I/O.
 */
#ifndef TIDEMARK_SNAP_VISIBLE_H
#define TIDEMARK_SNAP_VISIBLE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct snap_visible {
	uint64_t xmin;
	uint64_t xmax;
	int nxip;
	uint64_t *xip;      /* owned: in progress at the snapshot */
} snap_visible;

/* Parses pg_current_snapshot()'s text into *out (snap_visible_clear frees
 * it). False, with *out empty, when the text is not a snapshot. */
bool snap_visible_parse(const char *text, snap_visible *out);
void snap_visible_clear(snap_visible *s);
/* A copy (the xip array too). */
void snap_visible_copy(snap_visible *dst, const snap_visible *src);

/* The 64-bit id of a 32-bit xid less than 2^31 away from near. */
uint64_t snap_visible_widen(uint32_t xid, uint64_t near);

/* Was the transaction with this (32-bit, top-level) xid, which committed,
 * visible to the snapshot? */
bool snap_visible_committed(const snap_visible *s, uint32_t xid);

#endif
