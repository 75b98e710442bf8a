/*
 * sha256.h: SHA-256 (FIPS 180-4). Pure; used to authenticate the DDL
 * capture messages (ddl_auth.h), whose source side uses PostgreSQL's
 * built-in sha256().
 */
#ifndef TIDEMARK_SHA256_H
#define TIDEMARK_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

typedef struct sha256_ctx {
	uint32_t h[8];
	uint64_t total;          /* bytes hashed so far */
	uint8_t block[64];
	size_t used;             /* bytes in block */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t out[SHA256_LEN]);

/* The digest of one buffer. */
void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);

#endif
