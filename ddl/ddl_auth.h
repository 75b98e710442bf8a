/*
 * ddl_auth.h: authenticating the DDL capture messages.
 *
 * Any source role may call pg_logical_emit_message, so a message with the
 * prefix "tidemark.ddl" proves nothing by itself. The capture functions
 * (migrations/source/002_capture_key.sql) sign each message with a key
 * that only their owner can read, a copy of which `setup` keeps on the
 * target:
 *
 *   content = MAC ' ' body     MAC: 64 lowercase hex digits of
 *                              sha256(key || sha256(body))
 *
 * (sha256 of a fixed-length digest: no length extension applies.) Pure.
 */
#ifndef TIDEMARK_DDL_AUTH_H
#define TIDEMARK_DDL_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define DDL_AUTH_KEY_MAX 64
#define DDL_AUTH_MAC_HEX 64

typedef enum ddl_auth_status {
	DDL_AUTH_SIGNED,     /* a MAC made with the key: *body is the message */
	DDL_AUTH_UNSIGNED,   /* no MAC: *body is the whole content */
	DDL_AUTH_FORGED,     /* a MAC, but not one made with the key */
} ddl_auth_status;

/* Which of the three the content is; *body and *body_len point into it
 * (borrowed). */
ddl_auth_status ddl_auth_check(const uint8_t *key, size_t key_len, const char *content,
                               size_t len, const char **body, size_t *body_len);

/* The MAC of body under key, as 64 hex digits and a NUL. */
void ddl_auth_mac(const uint8_t *key, size_t key_len, const char *body, size_t body_len,
                  char out[DDL_AUTH_MAC_HEX + 1]);

/* Hex text (any case) into bytes; -1 unless it is even, at most max bytes
 * and all hex. */
int ddl_auth_key_parse(const char *hex, uint8_t *out, size_t max);

#endif
