/*
 * be32.h: 32-bit integers in network byte order (big-endian), as the
 * PostgreSQL protocol and tidemark's spool files write them. Pure.
 */
#ifndef TIDEMARK_BE32_H
#define TIDEMARK_BE32_H

#include <stdint.h>

/* v written into the 4 bytes at p. */
static inline void
be32_put(char *p, uint32_t v)
{
	p[0] = (char) (v >> 24);
	p[1] = (char) (v >> 16);
	p[2] = (char) (v >> 8);
	p[3] = (char) v;
}

/* The 4 bytes at p read as one integer. */
static inline uint32_t
be32_get(const char *p)
{
	const unsigned char *u = (const unsigned char *) p;

	return (uint32_t) u[0] << 24 | (uint32_t) u[1] << 16 | (uint32_t) u[2] << 8 | u[3];
}

#endif
