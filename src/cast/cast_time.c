/*
 * cast_time.c: whether a date/time value's text goes into date,
 * timestamp, timestamptz, time or timetz exactly. The text is ISO, as the
 * output functions write it with DateStyle ISO:
 *   2024-02-29   2024-02-29 12:00:00.5   2024-02-29 12:00:00+05:30
 *   0044-03-15 12:00:00 BC   infinity   12:00:00   12:00:00+02
 * ('T' between date and time and 'Z' for +00 are read too). Other
 * spellings PostgreSQL reads (other DateStyles, zone names, 'epoch',
 * 'now') are refused: whether they keep their value depends on more than
 * the text.
 */
#include "cast_int.h"

#include <ctype.h>
#include <string.h>

#define ZONE_HOUR_MAX 15

typedef struct dt_parts {
	bool has_date, has_time, has_zone, bc;
	long year;
	int month, day;
	int hour, minute, second;
	const char *frac;   /* fractional digits of the seconds */
	size_t frac_len;
} dt_parts;

typedef struct dt_cursor {
	const char *s, *end;
} dt_cursor;

typedef struct ymd {
	long year; /* astronomical: 1 BC is 0 */
	int month, day;
} ymd;

/* Dates PostgreSQL holds (from Julian day 0). */
static const ymd date_min = {-4713, 11, 24};
static const ymd date_max = {5874897, 12, 31};
static const ymd timestamp_max = {294276, 12, 31};
/* A day inside the ends, so that no UTC offset crosses them. */
static const ymd timestamptz_min = {-4713, 11, 25};
static const ymd timestamptz_max = {294276, 12, 30};

static bool
at(const dt_cursor *c, char ch)
{
	return c->s < c->end && *c->s == ch;
}

/* Steps over ch if it is next. */
static bool
eat(dt_cursor *c, char ch)
{
	if (!at(c, ch))
		return false;
	c->s++;
	return true;
}

/* Reads between min and max digits. */
static bool
read_number(dt_cursor *c, int min, int max, long *out)
{
	int n = 0;

	*out = 0;
	while (c->s < c->end && isdigit((unsigned char) *c->s) && n < max) {
		*out = *out * 10 + (*c->s++ - '0');
		n++;
	}
	return n >= min && !(c->s < c->end && isdigit((unsigned char) *c->s));
}

static bool
read_int(dt_cursor *c, int digits, int lo, int hi, int *out)
{
	long v;

	if (!read_number(c, digits, digits, &v) || v < lo || v > hi)
		return false;
	*out = (int) v;
	return true;
}

static bool
read_date(dt_cursor *c, dt_parts *p)
{
	p->has_date = true;
	return read_number(c, 4, 7, &p->year) && p->year >= 1 && eat(c, '-') &&
		read_int(c, 2, 1, 12, &p->month) && eat(c, '-') && read_int(c, 2, 1, 31, &p->day);
}

/* HH:MM[:SS[.fraction]] */
static bool
read_time(dt_cursor *c, dt_parts *p)
{
	p->has_time = true;
	if (!read_int(c, 2, 0, 23, &p->hour) || !eat(c, ':') || !read_int(c, 2, 0, 59, &p->minute))
		return false;
	if (!eat(c, ':'))
		return true;
	if (!read_int(c, 2, 0, 59, &p->second))
		return false;
	if (!eat(c, '.'))
		return true;
	p->frac = c->s;
	while (c->s < c->end && isdigit((unsigned char) *c->s))
		c->s++;
	p->frac_len = (size_t) (c->s - p->frac);
	return p->frac_len > 0;
}

/* Z, or +HH[:MM[:SS]] / -HH[:MM[:SS]]. */
static bool
read_zone(dt_cursor *c, dt_parts *p)
{
	int h, m, s;

	p->has_zone = true;
	if (eat(c, 'Z'))
		return true;
	c->s++;
	if (!read_int(c, 2, 0, ZONE_HOUR_MAX, &h))
		return false;
	if (eat(c, ':') && !read_int(c, 2, 0, 59, &m))
		return false;
	if (eat(c, ':') && !read_int(c, 2, 0, 59, &s))
		return false;
	return true;
}

static bool
read_zone_and_era(dt_cursor *c, dt_parts *p)
{
	if ((at(c, '+') || at(c, '-') || at(c, 'Z')) && !read_zone(c, p))
		return false;
	if (c->end - c->s == 3 && strncmp(c->s, " BC", 3) == 0) {
		p->bc = true;
		c->s += 3;
	}
	return c->s == c->end;
}

/* The value without surrounding white space; false if it is empty. */
static bool
open_cursor(dt_cursor *c, const char *v, size_t len)
{
	c->s = v;
	c->end = v + len;
	while (c->s < c->end && isspace((unsigned char) *c->s))
		c->s++;
	while (c->end > c->s && isspace((unsigned char) c->end[-1]))
		c->end--;
	return c->s < c->end;
}

/* A date, then optionally a time, zone and era. */
static bool
parse_datetime(const char *v, size_t len, dt_parts *p)
{
	dt_cursor c;

	memset(p, 0, sizeof *p);
	if (!open_cursor(&c, v, len) || !read_date(&c, p))
		return false;
	if ((at(&c, ' ') || at(&c, 'T')) && c.end - c.s > 3 && strncmp(c.s, " BC", 3) != 0) {
		c.s++;
		if (!read_time(&c, p))
			return false;
	}
	return read_zone_and_era(&c, p);
}

/* A time of day, optionally with a zone. */
static bool
parse_time(const char *v, size_t len, dt_parts *p)
{
	dt_cursor c;

	memset(p, 0, sizeof *p);
	return open_cursor(&c, v, len) && read_time(&c, p) && read_zone_and_era(&c, p) && !p->bc;
}

static bool
is_infinity(const char *v, size_t len)
{
	dt_cursor c;
	size_t n;

	if (!open_cursor(&c, v, len))
		return false;
	n = (size_t) (c.end - c.s);
	return (n == 8 && strncmp(c.s, "infinity", 8) == 0) ||
		(n == 9 && strncmp(c.s, "-infinity", 9) == 0);
}

static bool
is_leap(long y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
compare_ymd(ymd a, ymd b)
{
	if (a.year != b.year)
		return a.year < b.year ? -1 : 1;
	if (a.month != b.month)
		return a.month < b.month ? -1 : 1;
	return a.day < b.day ? -1 : a.day > b.day;
}

/* The date in astronomical years, if the day exists in its month. */
static bool
real_date(const dt_parts *p, ymd *out)
{
	static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	out->year = p->bc ? 1 - p->year : p->year;
	out->month = p->month;
	out->day = p->day;
	return p->day <= days[p->month - 1] + (p->month == 2 && is_leap(out->year));
}

static bool
date_between(const dt_parts *p, ymd lo, ymd hi, cast_reason *why)
{
	ymd d;

	if (!real_date(p, &d))
		return cast_refuse(why, "no such day");
	if (compare_ymd(d, lo) < 0 || compare_ymd(d, hi) > 0)
		return cast_refuse(why, "date out of range");
	return true;
}

/* Digits of the fraction beyond the type's precision must be zeros. */
static bool
fraction_fits(const cast_type *to, const dt_parts *p, cast_reason *why)
{
	size_t keep = (size_t) cast_time_precision(to);

	for (size_t i = keep; i < p->frac_len; i++)
		if (p->frac[i] != '0')
			return cast_refuse(why, "%s keeps %zu fractional digits", to->k->name, keep);
	return true;
}

static bool
zone_allowed(const cast_type *to, const dt_parts *p, cast_reason *why)
{
	if (p->has_zone && to->k->clock == CLOCK_LOCAL)
		return cast_refuse(why, "%s would drop the UTC offset", to->k->name);
	return true;
}

static bool
is_midnight(const dt_parts *p)
{
	for (size_t i = 0; i < p->frac_len; i++)
		if (p->frac[i] != '0')
			return false;
	return p->hour == 0 && p->minute == 0 && p->second == 0;
}

bool
cast_fits_date(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	dt_parts p;

	if (is_infinity(v, len))
		return true;
	if (!parse_datetime(v, len, &p))
		return cast_refuse(why, "not an ISO date");
	if (!zone_allowed(to, &p, why))
		return false;
	if (p.has_time && !is_midnight(&p))
		return cast_refuse(why, "date would drop the time of day");
	return date_between(&p, date_min, date_max, why);
}

bool
cast_fits_timestamp(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	bool zoned = to->k->clock == CLOCK_ZONED;
	dt_parts p;

	if (is_infinity(v, len))
		return true;
	if (!parse_datetime(v, len, &p))
		return cast_refuse(why, "not an ISO timestamp");
	if (!zone_allowed(to, &p, why) || !fraction_fits(to, &p, why))
		return false;
	return date_between(&p, zoned ? timestamptz_min : date_min,
	                    zoned ? timestamptz_max : timestamp_max, why);
}

bool
cast_fits_time(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	dt_parts p;

	if (!parse_time(v, len, &p))
		return cast_refuse(why, "not an ISO time of day");
	if (!p.has_zone && to->k->clock == CLOCK_ZONED)
		return cast_refuse(why, "no UTC offset for %s", to->k->name);
	return zone_allowed(to, &p, why) && fraction_fits(to, &p, why);
}
