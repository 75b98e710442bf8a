#include "ddl_auth.h"

#include <stdio.h>
#include <string.h>

#include "hex.h"
#include "sha256.h"

/* hex(sha256(key || inner)) */
static void
mac_of(const uint8_t *key, size_t key_len, const uint8_t inner[SHA256_LEN],
       char out[DDL_AUTH_MAC_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";
	uint8_t mac[SHA256_LEN];
	sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, key, key_len);
	sha256_update(&c, inner, SHA256_LEN);
	sha256_final(&c, mac);
	for (int i = 0; i < SHA256_LEN; i++) {
		out[2 * i] = digits[mac[i] >> 4];
		out[2 * i + 1] = digits[mac[i] & 15];
	}
	out[DDL_AUTH_MAC_HEX] = '\0';
}

void
ddl_auth_mac(const uint8_t *key, size_t key_len, const char *body, size_t body_len,
             char out[DDL_AUTH_MAC_HEX + 1])
{
	uint8_t inner[SHA256_LEN];

	sha256(body, body_len, inner);
	mac_of(key, key_len, inner, out);
}

/* The bound form's MAC: over "v2 <xid> <seq> " and the body. */
static void
bound_mac(const uint8_t *key, size_t key_len, const char *prefix, size_t prefix_len,
          const char *body, size_t body_len, char out[DDL_AUTH_MAC_HEX + 1])
{
	uint8_t inner[SHA256_LEN];
	sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, prefix, prefix_len);
	sha256_update(&c, body, body_len);
	sha256_final(&c, inner);
	mac_of(key, key_len, inner, out);
}

size_t
ddl_auth_bound_header(const uint8_t *key, size_t key_len, uint64_t xid, int seq,
                      const char *body, size_t body_len, char out[DDL_AUTH_HEADER_MAX + 1])
{
	int n = snprintf(out, DDL_AUTH_HEADER_MAX + 1, "v2 %llu %d ", (unsigned long long) xid, seq);

	bound_mac(key, key_len, out, (size_t) n, body, body_len, out + n);
	out[n + DDL_AUTH_MAC_HEX] = ' ';
	out[n + DDL_AUTH_MAC_HEX + 1] = '\0';
	return (size_t) n + DDL_AUTH_MAC_HEX + 1;
}

/* 64 lowercase hex digits and a space at content[pos]. */
static bool
has_mac(const char *content, size_t len, size_t pos)
{
	if (len <= pos + DDL_AUTH_MAC_HEX || content[pos + DDL_AUTH_MAC_HEX] != ' ')
		return false;
	for (size_t i = pos; i < pos + DDL_AUTH_MAC_HEX; i++)
		if (hex_digit(content[i]) < 0 || (content[i] >= 'A' && content[i] <= 'F'))
			return false;
	return true;
}

/* A decimal number without leading zeros, at most max, then a space;
 * returns the position after the space, 0 when there is none. */
static size_t
read_number(const char *s, size_t len, size_t pos, uint64_t max, uint64_t *out)
{
	size_t start = pos;
	uint64_t v = 0;

	while (pos < len && s[pos] >= '0' && s[pos] <= '9') {
		unsigned d = (unsigned) (s[pos] - '0');

		if (v > (max - d) / 10)
			return 0;
		v = v * 10 + d;
		pos++;
	}
	if (pos == start || pos >= len || s[pos] != ' ' || (s[start] == '0' && pos - start > 1))
		return 0;
	*out = v;
	return pos + 1;
}

/* Every byte compared: the time taken says nothing about the MAC. */
static bool
same_mac(const char *want, const char *got)
{
	unsigned diff = 0;

	for (int i = 0; i < DDL_AUTH_MAC_HEX; i++)
		diff |= (unsigned) (want[i] ^ got[i]);
	return diff == 0;
}

static ddl_auth_status
verify_bound(const uint8_t *key, size_t key_len, const char *content, size_t len,
             ddl_auth_msg *out)
{
	char want[DDL_AUTH_MAC_HEX + 1];
	uint64_t xid = 0, seq = 0;
	size_t pos = read_number(content, len, 3, INT64_MAX, &xid);

	if (pos > 0)
		pos = read_number(content, len, pos, INT32_MAX, &seq);
	if (pos == 0 || seq == 0 || !has_mac(content, len, pos))
		return DDL_AUTH_FORGED; /* in the bound form's clothes, but not in it */
	out->bound = true;
	out->xid = xid;
	out->seq = (int) seq;
	out->body = content + pos + DDL_AUTH_MAC_HEX + 1;
	out->body_len = len - pos - DDL_AUTH_MAC_HEX - 1;
	if (key_len == 0)
		return DDL_AUTH_SIGNED;
	bound_mac(key, key_len, content, pos, out->body, out->body_len, want);
	return same_mac(want, content + pos) ? DDL_AUTH_SIGNED : DDL_AUTH_FORGED;
}

ddl_auth_status
ddl_auth_verify(const uint8_t *key, size_t key_len, const char *content, size_t len,
                ddl_auth_msg *out)
{
	char want[DDL_AUTH_MAC_HEX + 1];

	memset(out, 0, sizeof *out);
	out->body = content;
	out->body_len = len;
	if (len >= 3 && memcmp(content, "v2 ", 3) == 0)
		return verify_bound(key, key_len, content, len, out);
	if (!has_mac(content, len, 0))
		return DDL_AUTH_UNSIGNED;
	out->body = content + DDL_AUTH_MAC_HEX + 1;
	out->body_len = len - DDL_AUTH_MAC_HEX - 1;
	if (key_len == 0)
		return DDL_AUTH_SIGNED;
	ddl_auth_mac(key, key_len, out->body, out->body_len, want);
	return same_mac(want, content) ? DDL_AUTH_SIGNED : DDL_AUTH_FORGED;
}

ddl_auth_status
ddl_auth_check(const uint8_t *key, size_t key_len, const char *content, size_t len,
               const char **body, size_t *body_len)
{
	ddl_auth_msg m;
	ddl_auth_status st = ddl_auth_verify(key, key_len, content, len, &m);

	*body = m.body;
	*body_len = m.body_len;
	return st;
}

int
ddl_auth_key_parse(const char *hex, uint8_t *out, size_t max)
{
	size_t n = strlen(hex);

	if (n % 2 != 0 || n / 2 > max)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t) (hi << 4 | lo);
	}
	return (int) (n / 2);
}

uint64_t
ddl_auth_widen_xid(uint64_t near, uint32_t xid)
{
	/* the signed distance from near's low bits to xid, in (-2^31, 2^31] */
	int64_t d = (int64_t) (int32_t) (xid - (uint32_t) near);

	if (d < 0 && (uint64_t) -d > near)
		return xid; /* before the first epoch: only xid itself can be meant */
	return near + (uint64_t) d;
}

ddl_auth_bind
ddl_auth_tx_accept(ddl_auth_tx *tx, uint64_t xid, uint64_t commit_lsn, uint64_t msg_xid,
                   int msg_seq)
{
	if (tx->xid != xid || tx->commit_lsn != commit_lsn) {
		tx->xid = xid;
		tx->commit_lsn = commit_lsn;
		tx->last_seq = 0;
	}
	if (msg_xid != xid)
		return DDL_AUTH_BIND_OTHER_TX;
	if (msg_seq <= tx->last_seq)
		return DDL_AUTH_BIND_SEQ;
	tx->last_seq = msg_seq;
	return DDL_AUTH_BIND_OK;
}
