#include "verify_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const verify_plan_limits verify_plan_default_limits = {32, 10000, 64, 16};

/* An optional minus sign, then digits only. */
static bool
is_integer(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

bool
verify_plan_sum_read(verify_plan_sum *sum, const char *rows, const char *hash)
{
	if (rows == NULL || hash == NULL || !is_integer(rows) || rows[0] == '-' ||
	    !is_integer(hash) || strlen(hash) >= sizeof sum->hash)
		return false;
	sum->rows = strtoll(rows, NULL, 10);
	snprintf(sum->hash, sizeof sum->hash, "%s", hash);
	return true;
}

bool
verify_plan_sum_equal(const verify_plan_sum *a, const verify_plan_sum *b)
{
	return a->rows == b->rows && strcmp(a->hash, b->hash) == 0;
}

verify_plan_step
verify_plan_next(const verify_plan_sum *source, const verify_plan_sum *target, int depth,
                 const verify_plan_limits *limits)
{
	verify_plan_step step = {VERIFY_PLAN_EQUAL, false, 0};
	long long most = source->rows > target->rows ? source->rows : target->rows;
	long long least = source->rows < target->rows ? source->rows : target->rows;

	if (verify_plan_sum_equal(source, target))
		return step;
	if (most <= limits->leaf_rows || (least == 0 && most <= limits->one_sided_rows) ||
	    depth >= limits->max_depth || most < 2 || limits->fanout < 2) {
		step.action = VERIFY_PLAN_FETCH;
		return step;
	}
	step.action = VERIFY_PLAN_SPLIT;
	step.split_on_target = target->rows > source->rows;
	step.part_rows = (most + limits->fanout - 1) / limits->fanout;
	return step;
}
