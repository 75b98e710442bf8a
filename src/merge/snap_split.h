/*
 * snap_split.h: splitting a large table into key ranges copied at once
 * (snap_range.h), the pure part: how many ranges, and which bounds.
 *
 * A table is split only when it is large: at least SNAP_SPLIT_MIN_CHUNKS
 * chunks by its estimated size (its bytes over chunk_bytes, or its rows
 * over chunk_rows, whichever is more), and only with two readers or more.
 * It then gets one range per SNAP_SPLIT_CHUNKS_PER_RANGE chunks, at most
 * SNAP_SPLIT_PER_READER ranges per reader (more ranges than readers: a
 * range that ends early, stale statistics, leaves its reader another one)
 * and at most SNAP_SPLIT_MAX_RANGES.
 *
 * The bounds are values of the key's first column, in the source's order:
 * candidates (a histogram's bounds, or a sample's values, sorted and
 * distinct on the source) of which nranges - 1 are taken evenly spaced.
 * Range i holds the rows whose first key column is > bound i - 1 and
 * <= bound i, the first range from the first row, the last to the last:
 * whatever the candidates, the ranges cover every row once, and a first
 * column's duplicates all fall in one range.
 */
#ifndef TIDEMARK_SNAP_SPLIT_H
#define TIDEMARK_SNAP_SPLIT_H

#define SNAP_SPLIT_MIN_CHUNKS 8
#define SNAP_SPLIT_CHUNKS_PER_RANGE 4
#define SNAP_SPLIT_PER_READER 2
#define SNAP_SPLIT_MAX_RANGES 32

/* The number of ranges (1: not split). est_rows, est_bytes: the source's
 * estimates (<= 0: unknown). */
int snap_split_count(long long est_rows, long long est_bytes, long chunk_rows,
                     long long chunk_bytes, int readers);

/* Of ncand sorted candidates, the indexes of the bounds of nranges
 * ranges, evenly spaced and increasing, into idx (room for nranges - 1).
 * Returns how many (fewer when there are few candidates; 0: one range). */
int snap_split_pick(int ncand, int nranges, int *idx);

#endif
