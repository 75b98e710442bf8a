#include "clock.h"

#include <time.h>

static double
seconds_of(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

double
clock_now_s(void)
{
	return seconds_of(CLOCK_MONOTONIC);
}

double
clock_coarse_s(void)
{
	return seconds_of(CLOCK_MONOTONIC_COARSE);
}
