/*
 * ddl_auth.h: authenticating the DDL capture messages.
 *
 * Any source role may call pg_logical_emit_message, so a message with the
 * prefix "tidemark.ddl" proves nothing by itself. The capture functions
 * sign each message with a key that only their owner can read, a copy of
 * which `setup` keeps on the target. Two forms:
 *
 *   bound (migrations/source/008_capture_hardening.sql):
 *     content = "v2 " xid ' ' seq ' ' MAC ' ' body
 *               MAC: 64 lowercase hex digits of
 *               sha256(key || sha256("v2 " xid ' ' seq ' ' body))
 *     xid: the transaction the capture wrote the message in, 64-bit with
 *     epoch (txid_current()), seq: the message's number in it (1, 2, ...),
 *     both decimal without leading zeros and equal to the body's "xid" and
 *     "seq". A copy emitted again in another transaction, or again in the
 *     same one, is told apart by them (ddl_auth_tx below).
 *   old (migrations/source/002_capture_key.sql):
 *     content = MAC ' ' body     MAC: sha256(key || sha256(body)) in hex
 *     The signature says nothing of where the message was written: such
 *     a message is accepted only from before the bound form was installed
 *     (the caller's boundary position).
 *
 * (sha256 of a fixed-length digest: no length extension applies.) Pure.
 */
#ifndef TIDEMARK_DDL_AUTH_H
#define TIDEMARK_DDL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DDL_AUTH_KEY_MAX 64
#define DDL_AUTH_MAC_HEX 64
/* "v2 " + 20 + ' ' + 10 + ' ' + MAC + ' ' */
#define DDL_AUTH_HEADER_MAX (3 + 20 + 1 + 10 + 1 + DDL_AUTH_MAC_HEX + 1)

typedef enum ddl_auth_status {
	DDL_AUTH_SIGNED,     /* a MAC made with the key: *body is the message */
	DDL_AUTH_UNSIGNED,   /* no MAC: *body is the whole content */
	DDL_AUTH_FORGED,     /* a MAC, but not one made with the key */
} ddl_auth_status;

/* A message's parts, pointing into its content (borrowed). */
typedef struct ddl_auth_msg {
	const char *body;
	size_t body_len;
	bool bound;          /* the bound form: xid and seq are signed */
	uint64_t xid;        /* bound: the transaction it was written in */
	int seq;             /* bound: its number in that transaction */
} ddl_auth_msg;

/* Which of the three the content is, in either form. With key_len 0 the
 * MAC is not checked: a content in a signed form is SIGNED (the caller has
 * no key to check it with). */
ddl_auth_status ddl_auth_verify(const uint8_t *key, size_t key_len, const char *content,
                                size_t len, ddl_auth_msg *out);

/* The same, for callers that need only the body. */
ddl_auth_status ddl_auth_check(const uint8_t *key, size_t key_len, const char *content,
                               size_t len, const char **body, size_t *body_len);

/* The old form's MAC of body under key, as 64 hex digits and a NUL. */
void ddl_auth_mac(const uint8_t *key, size_t key_len, const char *body, size_t body_len,
                  char out[DDL_AUTH_MAC_HEX + 1]);

/* The bound form's header for body: "v2 <xid> <seq> <MAC> ", NUL-terminated
 * (the content is the header followed by the body). Returns its length. */
size_t ddl_auth_bound_header(const uint8_t *key, size_t key_len, uint64_t xid, int seq,
                             const char *body, size_t body_len,
                             char out[DDL_AUTH_HEADER_MAX + 1]);

/* Hex text (any case) into bytes; -1 unless it is even, at most max bytes
 * and all hex. */
int ddl_auth_key_parse(const char *hex, uint8_t *out, size_t max);

/*
 * Binding a bound message to the transaction it arrives in. pgoutput's
 * Begin carries a 32-bit xid; the message's is 64-bit. ddl_auth_widen_xid
 * gives the 64-bit xid with the low bits xid that lies within 2^31 of near
 * (a recent 64-bit xid of the source: its next xid, read at most seconds
 * ago). A decoded transaction is never further than that from the
 * source's next xid (wraparound protection keeps the slot's xmin within
 * 2^31), so the epoch is the source's, not guessed.
 */
uint64_t ddl_auth_widen_xid(uint64_t near, uint32_t xid);

/* The transaction the messages arrive in, and the last seq accepted in it. */
typedef struct ddl_auth_tx {
	uint64_t xid;        /* 64-bit; 0: none yet */
	uint64_t commit_lsn; /* with xid, tells one delivery of a transaction */
	int last_seq;        /* 0: no message accepted in it yet */
} ddl_auth_tx;

typedef enum ddl_auth_bind {
	DDL_AUTH_BIND_OK,
	DDL_AUTH_BIND_OTHER_TX,  /* written in another transaction */
	DDL_AUTH_BIND_SEQ,       /* its seq repeats or goes back in the transaction */
} ddl_auth_bind;

/* Accepts a bound message (msg_xid, msg_seq) arriving in the transaction
 * (xid, commit_lsn): a new transaction starts the count again. Only an
 * accepted message advances it. */
ddl_auth_bind ddl_auth_tx_accept(ddl_auth_tx *tx, uint64_t xid, uint64_t commit_lsn,
                                 uint64_t msg_xid, int msg_seq);

#endif
