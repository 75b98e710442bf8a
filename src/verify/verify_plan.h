/*
 * verify_plan.h: the range bisection of `tidemark verify`. Pure.
 *
 * A key range is summed on both sides (count of rows, sum of row hashes:
 * verify_sql.h). Equal sums: the range is equal. Otherwise it is split into
 * up to `fanout` parts of equal size on the side that has more rows in it
 * (every part_rows-th row's key ends a part), all parts are summed by one
 * statement per side, and each part that differs is split again, until the
 * rows of a range are few enough to be read from both sides and compared
 * one by one. A range that one side has no rows in is read at once up to a
 * larger size: all its rows differ. With a fanout of 16, a single changed
 * row in a page of 10,000 costs about one more read of the page.
 */
#ifndef TIDEMARK_VERIFY_PLAN_H
#define TIDEMARK_VERIFY_PLAN_H

#include <stdbool.h>

#define VERIFY_PLAN_HASH_MAX 48

/* One side's sum of a range. */
typedef struct verify_plan_sum {
	long long rows;
	char hash[VERIFY_PLAN_HASH_MAX]; /* the sum of the row hashes, as text */
} verify_plan_sum;

typedef struct verify_plan_limits {
	long long leaf_rows;       /* read rows once neither side has more than this */
	long long one_sided_rows;  /* ... or once one side has none and the other no more */
	int max_depth;             /* read rows at this depth whatever the counts (rows
	                            * moving under a live source must not split forever) */
	int fanout;                /* parts per split, at least 2 */
} verify_plan_limits;

/* leaf_rows 32, one_sided_rows 10000, max_depth 64, fanout 16 */
extern const verify_plan_limits verify_plan_default_limits;

typedef enum verify_plan_action {
	VERIFY_PLAN_EQUAL,  /* nothing differs */
	VERIFY_PLAN_FETCH,  /* read the rows of both sides and compare them */
	VERIFY_PLAN_SPLIT,  /* split into parts of part_rows rows of one side */
} verify_plan_action;

typedef struct verify_plan_step {
	verify_plan_action action;
	bool split_on_target;  /* SPLIT: parts are counted on the target (else the source) */
	long long part_rows;   /* SPLIT: rows per part on that side (the last part: the rest) */
} verify_plan_step;

/* Fills a sum from the texts a range query returned. Returns false when
 * they are not a count and a number. */
bool verify_plan_sum_read(verify_plan_sum *sum, const char *rows, const char *hash);
bool verify_plan_sum_equal(const verify_plan_sum *a, const verify_plan_sum *b);

/*
 * What to do with a range at a split depth (0: a page). A split cuts the
 * side with more rows into parts of part_rows = ceil(rows / fanout) rows:
 * at least two parts, none empty on that side (a range is split only when
 * that side has more than leaf_rows >= 1 rows).
 */
verify_plan_step verify_plan_next(const verify_plan_sum *source, const verify_plan_sum *target,
                                  int depth, const verify_plan_limits *limits);

#endif
