/*
 * verify_plan.h: the range bisection of `tidemark verify`. Pure.
 *
 * A key range is summed on both sides (count of rows, sum of row hashes:
 * verify_sql.h). Equal sums: the range is equal. Otherwise it is split in
 * two at the middle row of the side that has more rows in it, and each half
 * is summed again, until the rows of a range are few enough to be read from
 * both sides and compared one by one. A range that one side has no rows in
 * is read at once up to a larger size: all its rows differ.
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
} verify_plan_limits;

/* leaf_rows 32, one_sided_rows 10000, max_depth 64 */
extern const verify_plan_limits verify_plan_default_limits;

typedef enum verify_plan_action {
	VERIFY_PLAN_EQUAL,  /* nothing differs */
	VERIFY_PLAN_FETCH,  /* read the rows of both sides and compare them */
	VERIFY_PLAN_SPLIT,  /* split at the row at `offset` (key order) of one side */
} verify_plan_action;

typedef struct verify_plan_step {
	verify_plan_action action;
	bool split_on_target;  /* SPLIT: the row is read from the target (else the source) */
	long long offset;      /* SPLIT: rows before it within the range, on that side */
} verify_plan_step;

/* Fills a sum from the texts a range query returned. Returns false when
 * they are not a count and a number. */
bool verify_plan_sum_read(verify_plan_sum *sum, const char *rows, const char *hash);
bool verify_plan_sum_equal(const verify_plan_sum *a, const verify_plan_sum *b);

/*
 * What to do with a range at a bisection depth (0: a page). A split ends
 * the first half at the row at offset rows/2 - 1 of the side with more
 * rows: each half holds half of that side's rows, and neither is empty (a
 * range is split only when that side has more than leaf_rows >= 1 rows).
 */
verify_plan_step verify_plan_next(const verify_plan_sum *source, const verify_plan_sum *target,
                                  int depth, const verify_plan_limits *limits);

#endif
