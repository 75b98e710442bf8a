#include "lsn.h"

#include <stdio.h>
#include <stdlib.h>

char *
lsn_format(tm_lsn lsn, char out[LSN_TEXT_MAX])
{
	snprintf(out, LSN_TEXT_MAX, "%X/%X", (unsigned) (lsn >> 32), (unsigned) lsn);
	return out;
}

static bool
parse_hex32(const char *s, const char **end, uint32_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')) {
		int d = (*p <= '9') ? *p - '0' : (*p | 0x20) - 'a' + 10;
		v = v * 16 + (uint64_t) d;
		if (v > UINT32_MAX || p - s >= 8)
			return false;
		p++;
	}
	if (p == s)
		return false;
	*end = p;
	*out = (uint32_t) v;
	return true;
}

bool
lsn_parse(const char *text, tm_lsn *out)
{
	uint32_t hi, lo;
	const char *p;

	if (text == NULL || !parse_hex32(text, &p, &hi) || *p != '/')
		return false;
	if (!parse_hex32(p + 1, &p, &lo) || *p != '\0')
		return false;
	*out = ((tm_lsn) hi << 32) | lo;
	return true;
}
