/*
 * cast_value.c: whether one value's text goes into a type exactly. The
 * parsers follow PostgreSQL 15's input functions (int4in, numeric_in,
 * float8in, varchar, bpchar, boolin, uuid_in, byteain, array_in) closely
 * enough to say yes only where the server would store the same value;
 * where they are stricter than the server, the answer is no.
 */
#include "cast_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUMERIC_DIGITS_MAX 131072 /* digits before the point */
#define NUMERIC_DSCALE_MAX 16383  /* digits after the point, as written */
#define ARRAY_DIMS_MAX 6

bool
cast_refuse(cast_reason *why, const char *fmt, ...)
{
	va_list ap;

	if (why == NULL || why->buf == NULL || why->size == 0)
		return false;
	va_start(ap, fmt);
	vsnprintf(why->buf, why->size, fmt, ap);
	va_end(ap);
	return false;
}

/* ---- numbers ---- */

/* A decimal number as written: sign, mantissa digits (with at most one
 * point), exponent; and where its significant digits sit. */
typedef struct decnum {
	bool neg;
	bool nan, inf;
	bool has_point, has_exp;
	const char *mant;
	size_t mant_len;
	long exp10;
	size_t nsig;      /* significant digits; 0 for zero */
	size_t first;     /* index in mant of the first and the last */
	size_t last;      /* significant (non-zero-bounded) digit */
	long msd, lsd;    /* power of ten of the most and least significant digit */
	long frac_digits; /* digits after the point as written, less the exponent */
} decnum;

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* The value without the leading and trailing white space input functions skip. */
static void
trim(const char **v, size_t *len)
{
	while (*len > 0 && is_space(**v)) {
		(*v)++;
		(*len)--;
	}
	while (*len > 0 && is_space((*v)[*len - 1]))
		(*len)--;
}

static bool
word_is(const char *v, size_t len, const char *word)
{
	return strlen(word) == len && strncasecmp(v, word, len) == 0;
}

/* NaN, Infinity, inf with a sign, as numeric_in and float8in accept them. */
static bool
read_special(const char *v, size_t len, decnum *d)
{
	const char *s = v;
	size_t n = len;

	if (word_is(v, len, "nan")) {
		d->nan = true;
		return true;
	}
	if (n > 0 && (*s == '+' || *s == '-')) {
		d->neg = *s == '-';
		s++;
		n--;
	}
	d->inf = word_is(s, n, "infinity") || word_is(s, n, "inf");
	return d->inf;
}

static long
digit_power(const decnum *d, size_t i, size_t point)
{
	long p = i < point ? (long) (point - i) - 1 : (long) point - (long) i;

	return p + d->exp10;
}

/* Finds the significant digits of the mantissa. */
static void
locate_digits(decnum *d)
{
	const char *dot = memchr(d->mant, '.', d->mant_len);
	size_t point = dot ? (size_t) (dot - d->mant) : d->mant_len;
	bool any = false;

	d->frac_digits = (long) (d->mant_len - (dot ? point + 1 : d->mant_len)) - d->exp10;
	for (size_t i = 0; i < d->mant_len; i++) {
		if (d->mant[i] == '.' || d->mant[i] == '0')
			continue;
		if (!any)
			d->first = i;
		d->last = i;
		any = true;
	}
	if (!any)
		return;
	d->msd = digit_power(d, d->first, point);
	d->lsd = digit_power(d, d->last, point);
	for (size_t i = d->first; i <= d->last; i++)
		d->nsig += d->mant[i] != '.';
}

static bool
read_exponent(const char *s, const char *end, decnum *d)
{
	bool neg = false;
	long e = 0;

	if (s < end && (*s == '+' || *s == '-'))
		neg = *s++ == '-';
	if (s == end)
		return false;
	for (; s < end; s++) {
		if (!isdigit((unsigned char) *s))
			return false;
		if (e > 100000000)
			return false;
		e = e * 10 + (*s - '0');
	}
	d->has_exp = true;
	d->exp10 = neg ? -e : e;
	return true;
}

/* [+-] digits [. digits] [e [+-] digits], or [+-] . digits [...]. */
static bool
read_decimal(const char *v, size_t len, decnum *d)
{
	const char *s = v, *end = v + len;
	size_t ndigits = 0;

	memset(d, 0, sizeof *d);
	if (read_special(v, len, d))
		return true;
	if (s < end && (*s == '+' || *s == '-'))
		d->neg = *s++ == '-';
	d->mant = s;
	for (; s < end && (isdigit((unsigned char) *s) || (*s == '.' && !d->has_point)); s++) {
		d->has_point |= *s == '.';
		ndigits += *s != '.';
	}
	d->mant_len = (size_t) (s - d->mant);
	if (ndigits == 0)
		return false;
	if (s < end && (*s == 'e' || *s == 'E') && !read_exponent(s + 1, end, d))
		return false;
	if (s < end && !d->has_exp)
		return false;
	locate_digits(d);
	return true;
}

/* The value of an integer's digits, if it is at most limit. */
static bool
integer_magnitude(const decnum *d, uint64_t limit, uint64_t *out)
{
	uint64_t v = 0;

	for (size_t i = 0; i < d->mant_len; i++) {
		unsigned digit = (unsigned) (d->mant[i] - '0');

		if (v > (limit - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	*out = v;
	return true;
}

bool
cast_fits_int(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	decnum d;
	uint64_t mag, limit;

	trim(&v, &len);
	if (!read_decimal(v, len, &d) || d.nan || d.inf || d.has_point || d.has_exp)
		return cast_refuse(why, "not an integer");
	limit = d.neg ? (uint64_t) -(to->k->min + 1) + 1 : (uint64_t) to->k->max;
	if (!integer_magnitude(&d, limit, &mag))
		return cast_refuse(why, "out of range for %s", to->k->name);
	return true;
}

/* numeric(p,s): p-s digits before the point, s after (s may be negative,
 * or larger than p, since PostgreSQL 15). */
static bool
fits_numeric_typmod(const cast_type *to, const decnum *d, cast_reason *why)
{
	if (d->inf)
		return cast_refuse(why, "numeric(%d,%d) holds no infinity", to->prec, to->scale);
	if (d->nan || d->nsig == 0)
		return true;
	if (d->lsd < -(long) to->scale)
		return cast_refuse(why, "numeric(%d,%d) would round it to %d decimal places",
		                   to->prec, to->scale, to->scale);
	if (d->msd + 1 > (long) to->prec - to->scale)
		return cast_refuse(why, "numeric(%d,%d) holds %d digits before the point", to->prec,
		                   to->scale, to->prec - to->scale);
	return true;
}

bool
cast_fits_numeric(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	decnum d;

	trim(&v, &len);
	if (!read_decimal(v, len, &d))
		return cast_refuse(why, "not a number");
	if ((d.nsig > 0 && d.msd >= NUMERIC_DIGITS_MAX) || d.frac_digits > NUMERIC_DSCALE_MAX)
		return cast_refuse(why, "out of range for numeric");
	if (to->prec >= 0)
		return fits_numeric_typmod(to, &d, why);
	return true;
}

/* Significant digits and exponent of a double as "%.*e" writes it
 * ("1.25e-03" -> "125", -3); the radix character may be any. */
static void
e_digits(const char *s, char *digits, size_t size, long *msd)
{
	size_t n = 0;

	for (; *s && *s != 'e'; s++)
		if (isdigit((unsigned char) *s) && n + 1 < size)
			digits[n++] = *s;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	*msd = *s == 'e' ? strtol(s + 1, NULL, 10) : 0;
}

/* The shortest "%.*e" text that reads back as x, as the output function
 * writes it (extra_float_digits > 0). */
static void
shortest_text(double x, bool single, char *buf, size_t size)
{
	int max = single ? 9 : 17;

	for (int p = 1; p <= max; p++) {
		snprintf(buf, size, "%.*e", p - 1, x);
		if (single ? strtof(buf, NULL) == (float) x : strtod(buf, NULL) == x)
			return;
	}
}

/* Whether the input's significant digits, read from d, are `digits`. */
static bool
same_digits(const decnum *d, const char *digits)
{
	size_t n = 0;

	for (size_t i = d->first; i <= d->last; i++) {
		if (d->mant[i] == '.')
			continue;
		if (digits[n] != d->mant[i])
			return false;
		n++;
	}
	return digits[n] == '\0';
}

/* Reads the number as the float type reads it ("DIGITSeLSD": no radix
 * character, so no locale). */
static double
read_float(const decnum *d, bool single)
{
	char buf[64];
	size_t n = 0;

	if (d->neg)
		buf[n++] = '-';
	for (size_t i = d->first; i <= d->last; i++)
		if (d->mant[i] != '.')
			buf[n++] = d->mant[i];
	snprintf(buf + n, sizeof buf - n, "e%ld", d->lsd);
	return single ? (double) strtof(buf, NULL) : strtod(buf, NULL);
}

/* Compared by text form: the shortest text of the stored float must
 * denote the number written. */
bool
cast_fits_float(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	bool single = to->k->rank == 1;
	decnum d;
	double x;
	char text[64], digits[32];
	long msd;

	trim(&v, &len);
	if (!read_decimal(v, len, &d))
		return cast_refuse(why, "not a number");
	if (d.nan || d.inf || d.nsig == 0)
		return true;
	if (d.nsig > (single ? 9u : 17u))
		return cast_refuse(why, "more digits than %s keeps", to->k->name);
	x = read_float(&d, single);
	if (isinf(x) || x == 0)
		return cast_refuse(why, "out of range for %s", to->k->name);
	shortest_text(x, single, text, sizeof text);
	e_digits(text, digits, sizeof digits, &msd);
	if (msd != d.msd || !same_digits(&d, digits))
		return cast_refuse(why, "%s reads it back as another number", to->k->name);
	return true;
}

/* ---- strings ---- */

/* Counts UTF-8 characters; false on a malformed sequence or a NUL. */
static bool
utf8_chars(const unsigned char *s, size_t len, size_t *count)
{
	size_t n = 0;

	for (size_t i = 0; i < len; n++) {
		unsigned c = s[i];
		size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 :
		           (c & 0xF8) == 0xF0 ? 4 : 0;

		if (c == 0 || k == 0 || i + k > len || (k == 2 && c < 0xC2) || (k == 4 && c > 0xF4))
			return false;
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xC0) != 0x80)
				return false;
		i += k;
	}
	*count = n;
	return true;
}

static bool
fits_length(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	size_t n;

	if (!utf8_chars((const unsigned char *) v, len, &n))
		return cast_refuse(why, "not valid UTF-8 text");
	if (to->len >= 0 && n > (size_t) to->len)
		return cast_refuse(why, "%zu characters, %s(%d) holds %d", n, to->k->name, to->len,
		                   to->len);
	return true;
}

/* varchar(n), text: trailing spaces count (an insert would drop those
 * beyond n: a change of value). */
bool
cast_fits_string(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	return fits_length(to, v, len, why);
}

/* character(n): trailing spaces are padding. */
bool
cast_fits_bpchar(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	while (len > 0 && v[len - 1] == ' ')
		len--;
	return fits_length(to, v, len, why);
}

/* bit(n): exactly n bits; bit varying(n): at most n. Binary digits only
 * (x'..' hex input is not checked). */
bool
cast_fits_bits(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	for (size_t i = 0; i < len; i++)
		if (v[i] != '0' && v[i] != '1')
			return cast_refuse(why, "not a string of binary digits");
	if (to->len < 0)
		return true;
	if (to->k->family == FAM_BIT ? len != (size_t) to->len : len > (size_t) to->len)
		return cast_refuse(why, "%zu bits, %s(%d) holds %s%d", len, to->k->name, to->len,
		                   to->k->family == FAM_BIT ? "exactly " : "", to->len);
	return true;
}

/* ---- boolean, uuid, bytea ---- */

/* A prefix of word, at least min characters long. */
static bool
prefix_of(const char *v, size_t len, const char *word, size_t min)
{
	return len >= min && len <= strlen(word) && strncasecmp(v, word, len) == 0;
}

/* boolin: true, yes, on, 1 and false, no, off, 0, and unique prefixes. */
bool
cast_fits_bool(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	trim(&v, &len);
	if (prefix_of(v, len, "true", 1) || prefix_of(v, len, "false", 1) ||
		prefix_of(v, len, "yes", 1) || prefix_of(v, len, "no", 1) ||
		prefix_of(v, len, "on", 2) || prefix_of(v, len, "off", 2) || word_is(v, len, "1") ||
		word_is(v, len, "0"))
		return true;
	return cast_refuse(why, "not a boolean");
}

/* uuid_in: 32 hex digits, a hyphen allowed after each group of four but
 * the last, the whole optionally in braces. */
bool
cast_fits_uuid(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	const char *s = v, *end = v + len;
	bool braces = s < end && *s == '{';

	s += braces;
	for (int i = 0; i < 16; i++) {
		if (end - s < 2 || !isxdigit((unsigned char) s[0]) || !isxdigit((unsigned char) s[1]))
			return cast_refuse(why, "not a uuid");
		s += 2;
		if (s < end && *s == '-' && i % 2 == 1 && i < 15)
			s++;
	}
	if (braces && (s == end || *s++ != '}'))
		return cast_refuse(why, "not a uuid");
	if (s != end)
		return cast_refuse(why, "not a uuid");
	return true;
}

/* Hex format only: \x and pairs of hex digits. */
bool
cast_fits_bytea(const cast_type *to, const char *v, size_t len, cast_reason *why)
{
	if (len < 2 || v[0] != '\\' || v[1] != 'x' || len % 2 != 0)
		return cast_refuse(why, "not bytea in hex format");
	for (size_t i = 2; i < len; i++)
		if (!isxdigit((unsigned char) v[i]))
			return cast_refuse(why, "not bytea in hex format");
	return true;
}

/* ---- arrays ---- */

typedef struct array_walk {
	const char *s, *end;
	const sqltype *elem;    /* the element type */
	int ndims;              /* dimensions, once the first element is seen */
	int dims[ARRAY_DIMS_MAX]; /* length of each, once known */
	size_t nelems;
	strbuf buf;             /* the element being read, unescaped */
	cast_reason *why;
} array_walk;

static void
skip_space(array_walk *w)
{
	while (w->s < w->end && is_space(*w->s))
		w->s++;
}

/* A quoted element: "..." with backslash escapes. */
static bool
read_quoted(array_walk *w)
{
	for (w->s++; w->s < w->end && *w->s != '"'; w->s++) {
		if (*w->s == '\\' && ++w->s == w->end)
			break;
		strbuf_appendc(&w->buf, *w->s);
	}
	if (w->s == w->end)
		return cast_refuse(w->why, "unterminated quoted array element");
	w->s++;
	return true;
}

/* An unquoted element, up to , or }; white space around it is dropped,
 * backslash escapes kept; *is_null for NULL. */
static bool
read_unquoted(array_walk *w, bool *is_null)
{
	size_t keep = 0;
	bool escaped = false;

	for (; w->s < w->end && *w->s != ',' && *w->s != '}'; w->s++) {
		if (*w->s == '"' || *w->s == '{')
			return cast_refuse(w->why, "malformed array element");
		if (*w->s == '\\') {
			if (++w->s == w->end)
				break;
			escaped = true;
			strbuf_appendc(&w->buf, *w->s);
			keep = w->buf.len;
			continue;
		}
		strbuf_appendc(&w->buf, *w->s);
		if (!is_space(*w->s))
			keep = w->buf.len;
	}
	w->buf.len = keep;
	w->buf.data[keep] = '\0';
	if (keep == 0)
		return cast_refuse(w->why, "empty array element");
	*is_null = !escaped && keep == 4 && strncasecmp(w->buf.data, "null", 4) == 0;
	return true;
}

static bool
check_element(array_walk *w)
{
	char inner[256];
	bool is_null = false;

	strbuf_reset(&w->buf);
	if (*w->s == '"' ? !read_quoted(w) : !read_unquoted(w, &is_null))
		return false;
	w->nelems++;
	if (is_null)
		return true;
	if (cast_value_fits(w->elem, w->buf.data, w->buf.len, inner, sizeof inner))
		return true;
	return cast_refuse(w->why, "element %zu: %s", w->nelems, inner);
}

static bool read_level(array_walk *w, int depth);

/* One item of a level at depth: a sub-array or an element. Elements sit at
 * one depth only, the same in the whole value. */
static bool
read_item(array_walk *w, int depth)
{
	bool sub = *w->s == '{';

	if (w->ndims == 0)
		w->ndims = sub ? 0 : depth + 1;
	if (!sub && w->ndims != depth + 1)
		return cast_refuse(w->why, "malformed array: elements at different depths");
	if (sub && (w->ndims != 0 && depth + 1 >= w->ndims))
		return cast_refuse(w->why, "malformed array: elements at different depths");
	return sub ? read_level(w, depth + 1) : check_element(w);
}

/* The items of one {...}, and the length of its dimension. */
static bool
read_level(array_walk *w, int depth)
{
	int n = 0;

	if (depth >= ARRAY_DIMS_MAX)
		return cast_refuse(w->why, "more than %d array dimensions", ARRAY_DIMS_MAX);
	w->s++;
	skip_space(w);
	if (w->s < w->end && *w->s == '}' && depth == 0) {
		w->s++;
		return true;
	}
	for (;;) {
		skip_space(w);
		if (w->s == w->end || !read_item(w, depth))
			return w->s == w->end ? cast_refuse(w->why, "unterminated array") : false;
		n++;
		skip_space(w);
		if (w->s < w->end && *w->s == ',') {
			w->s++;
			continue;
		}
		if (w->s < w->end && *w->s == '}')
			break;
		return cast_refuse(w->why, "malformed array");
	}
	w->s++;
	if (w->dims[depth] != 0 && w->dims[depth] != n)
		return cast_refuse(w->why, "sub-arrays of different lengths");
	w->dims[depth] = n;
	return true;
}

/* array_in's text: {...} nested, no bounds decoration ([0:2]={...}). */
static bool
fits_array(const sqltype *to, const char *v, size_t len, cast_reason *why)
{
	sqltype elem = *to;
	array_walk w = {.s = v, .end = v + len, .elem = &elem, .why = why};
	bool ok;

	elem.ndims = 0;
	skip_space(&w);
	if (w.s == w.end || *w.s != '{')
		return cast_refuse(why, "not an array (or one with explicit bounds)");
	strbuf_init(&w.buf);
	strbuf_reserve(&w.buf, 64); /* data is never NULL from here */
	ok = read_level(&w, 0);
	skip_space(&w);
	if (ok && w.s != w.end)
		ok = cast_refuse(why, "text after the array");
	strbuf_free(&w.buf);
	return ok;
}

bool
cast_value_fits(const sqltype *to, const char *value, size_t len, char *reason,
                size_t reason_size)
{
	cast_reason why = {reason, reason_size};
	cast_type t;

	if (reason != NULL && reason_size > 0)
		reason[0] = '\0';
	cast_describe(to, &t);
	if (!t.valid)
		return cast_refuse(&why, "type %s: modifiers out of range", to->name);
	if (t.k == NULL || t.k->fits == NULL)
		return cast_refuse(&why, "values of type %s are not checked", to->name);
	if (t.array)
		return fits_array(to, value, len, &why);
	return t.k->fits(&t, value, len, &why);
}
