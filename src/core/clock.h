/*
 * clock.h: seconds on the monotonic clock, for intervals (progress, rates,
 * backoff, deadlines), never for wall time.
 */
#ifndef TIDEMARK_CLOCK_H
#define TIDEMARK_CLOCK_H

double clock_now_s(void);

#endif
