/*
 * clock.h: seconds on the monotonic clock, for intervals (progress, rates,
 * backoff, deadlines), never for wall time.
 */
#ifndef TIDEMARK_CLOCK_H
#define TIDEMARK_CLOCK_H

double clock_now_s(void);
/* The same clock read cheaply, to a few milliseconds (the kernel's tick):
 * for the interval checks made at every message of the stream. */
double clock_coarse_s(void);

#endif
