#include "snap_visible.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* One unsigned decimal number at *p, which moves past it. */
static bool
number(const char **p, uint64_t *out)
{
	uint64_t v = 0;
	const char *q = *p;

	if (*q < '0' || *q > '9')
		return false;
	for (; *q >= '0' && *q <= '9'; q++) {
		if (v > (UINT64_MAX - (uint64_t) (*q - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t) (*q - '0');
	}
	*p = q;
	*out = v;
	return true;
}

bool
snap_visible_parse(const char *text, snap_visible *out)
{
	const char *p = text;
	int cap = 0;

	memset(out, 0, sizeof *out);
	if (text == NULL || !number(&p, &out->xmin) || *p++ != ':' || !number(&p, &out->xmax) ||
	    *p++ != ':' || out->xmin > out->xmax)
		return false;
	for (const char *q = p; *q; q++)
		cap += *q == ',';
	out->xip = xcalloc((size_t) cap + 2, sizeof(uint64_t));
	while (*p != '\0') {
		if (!number(&p, &out->xip[out->nxip++]) || (*p != ',' && *p != '\0')) {
			snap_visible_clear(out);
			return false;
		}
		if (*p == ',' && *++p == '\0') {
			snap_visible_clear(out);
			return false;
		}
	}
	return true;
}

void
snap_visible_clear(snap_visible *s)
{
	free(s->xip);
	memset(s, 0, sizeof *s);
}

void
snap_visible_copy(snap_visible *dst, const snap_visible *src)
{
	*dst = *src;
	dst->xip = xcalloc((size_t) src->nxip + 1, sizeof(uint64_t));
	if (src->nxip > 0)
		memcpy(dst->xip, src->xip, sizeof(uint64_t) * (size_t) src->nxip);
}

uint64_t
snap_visible_widen(uint32_t xid, uint64_t near)
{
	uint64_t full = (near & ~(uint64_t) UINT32_MAX) | xid;

	if (full > near && full - near > (uint64_t) INT32_MAX && full > UINT32_MAX)
		full -= (uint64_t) 1 << 32;
	else if (full < near && near - full > (uint64_t) INT32_MAX)
		full += (uint64_t) 1 << 32;
	return full;
}

bool
snap_visible_committed(const snap_visible *s, uint32_t xid)
{
	uint64_t full = snap_visible_widen(xid, s->xmax);

	if (full < s->xmin)
		return true;
	if (full >= s->xmax)
		return false;
	for (int i = 0; i < s->nxip; i++)
		if (s->xip[i] == full)
			return false;
	return true;
}
