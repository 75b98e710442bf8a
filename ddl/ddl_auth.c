#include "ddl_auth.h"

#include <stdbool.h>
#include <string.h>

#include "hex.h"
#include "sha256.h"

void
ddl_auth_mac(const uint8_t *key, size_t key_len, const char *body, size_t body_len,
             char out[DDL_AUTH_MAC_HEX + 1])
{
	static const char digits[] = "0123456789abcdef";
	uint8_t inner[SHA256_LEN], mac[SHA256_LEN];
	sha256_ctx c;

	sha256(body, body_len, inner);
	sha256_init(&c);
	sha256_update(&c, key, key_len);
	sha256_update(&c, inner, sizeof inner);
	sha256_final(&c, mac);
	for (int i = 0; i < SHA256_LEN; i++) {
		out[2 * i] = digits[mac[i] >> 4];
		out[2 * i + 1] = digits[mac[i] & 15];
	}
	out[DDL_AUTH_MAC_HEX] = '\0';
}

/* "<64 lowercase hex> ": the form of a signed message's start. */
static bool
has_mac(const char *content, size_t len)
{
	if (len <= DDL_AUTH_MAC_HEX || content[DDL_AUTH_MAC_HEX] != ' ')
		return false;
	for (int i = 0; i < DDL_AUTH_MAC_HEX; i++)
		if (hex_digit(content[i]) < 0 || (content[i] >= 'A' && content[i] <= 'F'))
			return false;
	return true;
}

ddl_auth_status
ddl_auth_check(const uint8_t *key, size_t key_len, const char *content, size_t len,
               const char **body, size_t *body_len)
{
	char want[DDL_AUTH_MAC_HEX + 1];
	unsigned diff = 0;

	*body = content;
	*body_len = len;
	if (!has_mac(content, len))
		return DDL_AUTH_UNSIGNED;
	*body = content + DDL_AUTH_MAC_HEX + 1;
	*body_len = len - DDL_AUTH_MAC_HEX - 1;
	ddl_auth_mac(key, key_len, *body, *body_len, want);
	/* every byte compared: the time taken says nothing about the MAC */
	for (int i = 0; i < DDL_AUTH_MAC_HEX; i++)
		diff |= (unsigned) (want[i] ^ content[i]);
	return diff == 0 ? DDL_AUTH_SIGNED : DDL_AUTH_FORGED;
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
