/*
 * cast.c: the casting matrix. One table says what tidemark knows of each
 * built-in type (family, rank, what its modifiers mean, how its values are
 * checked); a second says, family by family, what a change from one to
 * another does to the values. Everything else reads these two tables.
 */
#include "cast_int.h"

#include <stdio.h>
#include <string.h>

#define LEN_MAX 10485760         /* longest varchar(n), character(n), bit(n) */
#define NUMERIC_PREC_MAX 1000    /* numeric(p,s): 1 <= p <= 1000 */
#define NUMERIC_SCALE_MIN (-1000)
#define NUMERIC_SCALE_MAX 1000
#define TIME_PREC_MAX 6
#define DATETIME_TEXT (CAST_NEEDS_DATESTYLE)
#define ZONED_TEXT (CAST_NEEDS_DATESTYLE | CAST_NEEDS_TIMEZONE)

/* The built-in types, as format_type() spells them. */
static const cast_known known_types[] = {
	{.name = "smallint", .catalog = "int2", .family = FAM_INT, .rank = 1, .value_bits = 15,
	 .digits = 5, .min = INT16_MIN, .max = INT16_MAX, .max_text = 6, .fits = cast_fits_int},
	{.name = "integer", .catalog = "int4", .family = FAM_INT, .rank = 2, .value_bits = 31,
	 .digits = 10, .min = INT32_MIN, .max = INT32_MAX, .max_text = 11, .fits = cast_fits_int},
	{.name = "bigint", .catalog = "int8", .family = FAM_INT, .rank = 3, .value_bits = 63,
	 .digits = 19, .min = INT64_MIN, .max = INT64_MAX, .max_text = 20, .fits = cast_fits_int},
	{.name = "numeric", .family = FAM_NUMERIC, .mod = MOD_NUMERIC, .fits = cast_fits_numeric},
	{.name = "real", .catalog = "float4", .family = FAM_FLOAT, .rank = 1, .value_bits = 24,
	 .text_needs = CAST_NEEDS_FLOAT_DIGITS, .fits = cast_fits_float},
	{.name = "double precision", .catalog = "float8", .family = FAM_FLOAT, .rank = 2,
	 .value_bits = 53, .text_needs = CAST_NEEDS_FLOAT_DIGITS, .fits = cast_fits_float},
	{.name = "character varying", .catalog = "varchar", .family = FAM_STRING, .rank = 1,
	 .mod = MOD_LENGTH, .default_len = -1, .fits = cast_fits_string},
	{.name = "text", .family = FAM_STRING, .rank = 2, .default_len = -1,
	 .fits = cast_fits_string},
	/* "character" alone is character(1); "bpchar" is the unbounded one. */
	{.name = "character", .family = FAM_BPCHAR, .mod = MOD_LENGTH, .default_len = 1,
	 .fits = cast_fits_bpchar},
	{.name = "bpchar", .family = FAM_BPCHAR, .mod = MOD_LENGTH, .default_len = -1,
	 .fits = cast_fits_bpchar},
	{.name = "boolean", .catalog = "bool", .family = FAM_BOOL, .max_text = 5,
	 .fits = cast_fits_bool},
	{.name = "date", .family = FAM_DATE, .text_needs = DATETIME_TEXT, .clock = CLOCK_LOCAL,
	 .fits = cast_fits_date},
	{.name = "timestamp without time zone", .catalog = "timestamp", .family = FAM_TIMESTAMP,
	 .mod = MOD_PRECISION, .text_needs = DATETIME_TEXT, .clock = CLOCK_LOCAL,
	 .fits = cast_fits_timestamp},
	{.name = "timestamp with time zone", .catalog = "timestamptz", .family = FAM_TIMESTAMPTZ,
	 .mod = MOD_PRECISION, .text_needs = ZONED_TEXT, .clock = CLOCK_ZONED,
	 .fits = cast_fits_timestamp},
	{.name = "time without time zone", .catalog = "time", .family = FAM_TIME,
	 .mod = MOD_PRECISION, .text_needs = DATETIME_TEXT, .clock = CLOCK_LOCAL,
	 .fits = cast_fits_time},
	{.name = "time with time zone", .catalog = "timetz", .family = FAM_TIMETZ,
	 .mod = MOD_PRECISION, .text_needs = ZONED_TEXT, .clock = CLOCK_ZONED,
	 .fits = cast_fits_time},
	{.name = "interval", .family = FAM_INTERVAL, .mod = MOD_PRECISION,
	 .text_needs = CAST_NEEDS_INTERVALSTYLE},
	{.name = "uuid", .family = FAM_UUID, .max_text = 36, .fits = cast_fits_uuid},
	{.name = "json", .family = FAM_JSON},
	{.name = "jsonb", .family = FAM_JSONB},
	{.name = "bytea", .family = FAM_BYTEA, .text_needs = CAST_NEEDS_BYTEA_OUTPUT,
	 .fits = cast_fits_bytea},
	{.name = "inet", .family = FAM_INET},
	{.name = "cidr", .family = FAM_CIDR},
	{.name = "bit", .family = FAM_BIT, .mod = MOD_LENGTH, .default_len = 1,
	 .fits = cast_fits_bits},
	{.name = "bit varying", .catalog = "varbit", .family = FAM_VARBIT, .mod = MOD_LENGTH,
	 .default_len = -1, .fits = cast_fits_bits},
	{.name = "xml", .family = FAM_XML},
	{.name = "macaddr", .family = FAM_MACADDR, .max_text = 17},
};

#define N_KNOWN (sizeof known_types / sizeof known_types[0])

/* ---- reading a type ---- */

static const cast_known *
lookup_known(const sqltype *t)
{
	if (t->quoted || t->schema_quoted)
		return NULL;
	if (t->schema[0] != '\0' && strcmp(t->schema, "pg_catalog") != 0)
		return NULL;
	for (size_t i = 0; i < N_KNOWN; i++) {
		const cast_known *k = &known_types[i];

		if (strcmp(t->name, k->name) == 0 || (k->catalog && strcmp(t->name, k->catalog) == 0))
			return k;
	}
	return NULL;
}

static bool
in_range(int v, int lo, int hi)
{
	return v >= lo && v <= hi;
}

/* Reads the modifiers as the type's modkind says; false if malformed. */
static bool
read_mods(const sqltype *t, cast_type *c)
{
	const cast_known *k = c->k;

	if (t->fields[0] != '\0' && k->family != FAM_INTERVAL)
		return false;
	switch (k->mod) {
	case MOD_NONE:
		return t->nmods == 0;
	case MOD_LENGTH:
		c->len = t->nmods == 0 ? k->default_len : t->mods[0];
		return t->nmods <= 1 && (c->len == -1 || in_range(c->len, 1, LEN_MAX));
	case MOD_NUMERIC:
		if (t->nmods == 0)
			return true;
		c->prec = t->mods[0];
		c->scale = t->nmods == 2 ? t->mods[1] : 0;
		return t->nmods <= 2 && in_range(c->prec, 1, NUMERIC_PREC_MAX) &&
			in_range(c->scale, NUMERIC_SCALE_MIN, NUMERIC_SCALE_MAX);
	case MOD_PRECISION:
		if (t->nmods == 0)
			return true;
		c->prec = t->mods[0];
		return t->nmods == 1 && in_range(c->prec, 0, TIME_PREC_MAX);
	}
	return false;
}

void
cast_describe(const sqltype *t, cast_type *out)
{
	memset(out, 0, sizeof *out);
	out->t = t;
	out->array = t->ndims > 0;
	out->len = -1;
	out->prec = -1;
	out->k = lookup_known(t);
	out->valid = out->k == NULL || read_mods(t, out);
}

int
cast_time_precision(const cast_type *c)
{
	return c->prec < 0 ? TIME_PREC_MAX : c->prec;
}

/* Known and well-formed: what classification reads. */
static const cast_known *
known(const cast_type *c)
{
	return c->valid ? c->k : NULL;
}

static bool
is_family(const cast_type *c, cast_family f)
{
	return known(c) != NULL && c->k->family == f;
}

/* A string type, not an array of one. */
static bool
is_string(const cast_type *c)
{
	return !c->array && (is_family(c, FAM_STRING) || is_family(c, FAM_BPCHAR));
}

/* Both known and with the same value set, spelled alike or not
 * ("int4" is "integer", numeric(10) is numeric(10,0)). */
static bool
same_known(const cast_type *a, const cast_type *b)
{
	return a->k->family == b->k->family && a->k->rank == b->k->rank && a->len == b->len &&
		a->prec == b->prec && a->scale == b->scale && strcmp(a->t->fields, b->t->fields) == 0;
}

/* Unknown types are the same only when named the same. Quotes change
 * nothing of a qualified name ("app_b"."mood" is app_b.mood); unqualified,
 * "integer" is not the keyword type integer. */
static bool
same_unknown(const sqltype *a, const sqltype *b, bool with_mods)
{
	if (strcmp(a->schema, b->schema) != 0 || strcmp(a->name, b->name) != 0 ||
		(a->schema[0] == '\0' && a->quoted != b->quoted))
		return false;
	if (!with_mods)
		return true;
	return a->nmods == b->nmods && memcmp(a->mods, b->mods, sizeof a->mods) == 0 &&
		strcmp(a->fields, b->fields) == 0;
}

static bool
same_type(const cast_type *a, const cast_type *b)
{
	if (a->array != b->array)
		return false;
	if (known(a) && known(b))
		return same_known(a, b);
	return !known(a) && !known(b) && same_unknown(a->t, b->t, true);
}

/* ---- what a change of type does: rules by family ---- */

typedef cast_kind (*rule_fn)(const cast_type *f, const cast_type *t);

typedef struct cast_rule {
	cast_family from, to; /* FAM_ANY: any known family */
	cast_kind kind;       /* when fn is NULL */
	rule_fn fn;
} cast_rule;

static cast_kind
widen_if(bool cond)
{
	return cond ? CAST_WIDEN : CAST_NARROW;
}

/* smallint -> integer -> bigint; real -> double precision. */
static cast_kind
rule_rank(const cast_type *f, const cast_type *t)
{
	return widen_if(t->k->rank >= f->k->rank);
}

/* The integer digits a numeric holds; INT_MAX when unconstrained. */
static int
numeric_int_digits(const cast_type *c)
{
	return c->prec < 0 ? INT32_MAX : c->prec - c->scale;
}

/* integer -> numeric(p,s) keeps every value when p-s >= 10 and s >= 0. */
static cast_kind
rule_int_numeric(const cast_type *f, const cast_type *t)
{
	return widen_if(t->prec < 0 || (t->scale >= 0 && numeric_int_digits(t) >= f->k->digits));
}

/* An integer is exact in a float whose mantissa has its bits. */
static cast_kind
rule_int_float(const cast_type *f, const cast_type *t)
{
	return widen_if(f->k->value_bits <= t->k->value_bits);
}

/* numeric(p,s) -> numeric(p2,s2): p2-s2 >= p-s and s2 >= s. Constrained
 * numerics hold no Infinity, so unconstrained -> constrained narrows. */
static cast_kind
rule_numeric(const cast_type *f, const cast_type *t)
{
	if (t->prec < 0)
		return CAST_WIDEN;
	if (f->prec < 0)
		return CAST_NARROW;
	return widen_if(numeric_int_digits(t) >= numeric_int_digits(f) && t->scale >= f->scale);
}

/* varchar(n) -> varchar(m >= n) or text; character(n) -> character(m >= n)
 * (re-padded; bpchar compares without the padding); character(n) ->
 * varchar(m >= n) or text (the cast drops trailing spaces, on the source as
 * on the target). Bit strings: bit(n) or varbit(n) -> varbit(m >= n). */
static cast_kind
rule_length(const cast_type *f, const cast_type *t)
{
	return widen_if(t->len < 0 || (f->len >= 0 && f->len <= t->len));
}

/* bit(n) -> bit(m), m != n: an explicit cast pads or cuts every value. */
static cast_kind
rule_bits(const cast_type *f, const cast_type *t)
{
	if (t->k->family == FAM_BIT)
		return f->k->family == FAM_BIT ? CAST_INCOMPATIBLE : CAST_NARROW;
	return rule_length(f, t);
}

/* timestamp(p) -> timestamp(q >= p), and the same for the others. */
static cast_kind
rule_precision(const cast_type *f, const cast_type *t)
{
	return widen_if(cast_time_precision(t) >= cast_time_precision(f));
}

/* An interval without fields or precision holds every interval; fields
 * (year to month, ...) drop what they do not name. */
static cast_kind
rule_interval(const cast_type *f, const cast_type *t)
{
	if (t->t->fields[0] == '\0' && t->prec < 0)
		return CAST_WIDEN;
	return widen_if(strcmp(f->t->fields, t->t->fields) == 0 &&
	                cast_time_precision(t) >= cast_time_precision(f));
}

/* The longest text of a type's cast to text; 0 when unbounded or not
 * known. numeric(p,s): sign, digits, point (or "NaN"). */
static int
max_text(const cast_type *c)
{
	int int_digits, frac;

	if (c->k->family == FAM_BIT || c->k->family == FAM_VARBIT)
		return c->len < 0 ? 0 : c->len;
	if (c->k->family != FAM_NUMERIC)
		return c->k->max_text;
	if (c->prec < 0)
		return 0;
	int_digits = c->prec - c->scale > 0 ? c->prec - c->scale : 1;
	frac = c->scale > 0 ? c->scale + 1 : 0;
	return 1 + int_digits + frac > 3 ? 1 + int_digits + frac : 3;
}

/* A known type to a string type: text holds any text form; varchar(n)
 * holds it when n covers the longest one (integer: 11, uuid: 36);
 * character(n) would let trailing spaces stop counting. */
static cast_kind
rule_to_string(const cast_type *f, const cast_type *t)
{
	int longest = max_text(f);

	if (t->k->family == FAM_STRING && t->len < 0)
		return CAST_WIDEN;
	if (t->k->family == FAM_BPCHAR)
		return CAST_NARROW;
	return widen_if(longest > 0 && longest <= t->len);
}

/* First match wins. PostgreSQL has a cast for every pair listed; pairs not
 * listed have none worth the name, and their USING clause goes through
 * text. */
static const cast_rule rules[] = {
	{FAM_INT, FAM_INT, 0, rule_rank},
	{FAM_INT, FAM_NUMERIC, 0, rule_int_numeric},
	{FAM_INT, FAM_FLOAT, 0, rule_int_float},
	{FAM_NUMERIC, FAM_INT, CAST_NARROW, NULL}, /* rounds; NaN */
	{FAM_NUMERIC, FAM_NUMERIC, 0, rule_numeric},
	{FAM_NUMERIC, FAM_FLOAT, CAST_NARROW, NULL},
	{FAM_FLOAT, FAM_INT, CAST_NARROW, NULL},
	/* float -> numeric keeps only 6 (real) or 15 (double) digits */
	{FAM_FLOAT, FAM_NUMERIC, CAST_NARROW, NULL},
	{FAM_FLOAT, FAM_FLOAT, 0, rule_rank},
	{FAM_STRING, FAM_STRING, 0, rule_length},
	{FAM_BPCHAR, FAM_STRING, 0, rule_length},
	{FAM_BPCHAR, FAM_BPCHAR, 0, rule_length},
	/* trailing spaces stop counting */
	{FAM_STRING, FAM_BPCHAR, CAST_NARROW, NULL},
	{FAM_DATE, FAM_TIMESTAMP, CAST_WIDEN, NULL},
	{FAM_DATE, FAM_TIMESTAMPTZ, CAST_WIDEN, NULL},
	{FAM_TIMESTAMP, FAM_TIMESTAMP, 0, rule_precision},
	{FAM_TIMESTAMP, FAM_TIMESTAMPTZ, 0, rule_precision},
	{FAM_TIMESTAMPTZ, FAM_TIMESTAMPTZ, 0, rule_precision},
	{FAM_TIMESTAMPTZ, FAM_TIMESTAMP, CAST_NARROW, NULL},
	{FAM_TIMESTAMP, FAM_DATE, CAST_NARROW, NULL},
	{FAM_TIMESTAMPTZ, FAM_DATE, CAST_NARROW, NULL},
	{FAM_TIMESTAMP, FAM_TIME, CAST_NARROW, NULL},
	{FAM_TIMESTAMPTZ, FAM_TIME, CAST_NARROW, NULL},
	{FAM_TIMESTAMPTZ, FAM_TIMETZ, CAST_NARROW, NULL},
	{FAM_TIME, FAM_TIME, 0, rule_precision},
	{FAM_TIMETZ, FAM_TIMETZ, 0, rule_precision},
	{FAM_TIME, FAM_TIMETZ, CAST_NARROW, NULL},
	{FAM_TIMETZ, FAM_TIME, CAST_NARROW, NULL},
	/* a time of day is not a duration */
	{FAM_TIME, FAM_INTERVAL, CAST_INCOMPATIBLE, NULL},
	{FAM_INTERVAL, FAM_TIME, CAST_INCOMPATIBLE, NULL},
	{FAM_INTERVAL, FAM_INTERVAL, 0, rule_interval},
	/* jsonb normalises (key order, duplicate keys, spacing); json keeps the text */
	{FAM_JSON, FAM_JSONB, CAST_NARROW, NULL},
	{FAM_JSONB, FAM_JSON, CAST_WIDEN, NULL},
	{FAM_CIDR, FAM_INET, CAST_WIDEN, NULL},
	{FAM_INET, FAM_CIDR, CAST_NARROW, NULL},
	{FAM_BIT, FAM_BIT, 0, rule_bits},
	{FAM_BIT, FAM_VARBIT, 0, rule_bits},
	{FAM_VARBIT, FAM_BIT, 0, rule_bits},
	{FAM_VARBIT, FAM_VARBIT, 0, rule_bits},
	/* every type has a text form, and is read from one */
	{FAM_ANY, FAM_STRING, 0, rule_to_string},
	{FAM_ANY, FAM_BPCHAR, 0, rule_to_string},
	{FAM_STRING, FAM_ANY, CAST_NARROW, NULL},
	{FAM_BPCHAR, FAM_ANY, CAST_NARROW, NULL},
};

#define N_RULES (sizeof rules / sizeof rules[0])

static const cast_rule *
find_rule(cast_family from, cast_family to)
{
	for (size_t i = 0; i < N_RULES; i++)
		if ((rules[i].from == from || rules[i].from == FAM_ANY) &&
			(rules[i].to == to || rules[i].to == FAM_ANY))
			return &rules[i];
	return NULL;
}

/* Unknown types: the same name with other modifiers may keep some values,
 * and text goes both ways (an I/O cast); nothing else is known. */
static cast_kind
classify_unknown(const cast_type *f, const cast_type *t)
{
	if (!known(f) && !known(t) && same_unknown(f->t, t->t, false))
		return CAST_NARROW;
	if (is_family(f, FAM_STRING) || is_family(f, FAM_BPCHAR) || is_family(t, FAM_STRING) ||
		is_family(t, FAM_BPCHAR))
		return CAST_NARROW;
	return CAST_INCOMPATIBLE;
}

/* Two scalars, or the elements of two arrays. */
static cast_kind
classify_elements(const cast_type *f, const cast_type *t)
{
	const cast_rule *r;

	if (known(f) && known(t) && same_known(f, t))
		return CAST_SAME;
	if (!known(f) || !known(t))
		return classify_unknown(f, t);
	r = find_rule(f->k->family, t->k->family);
	if (r == NULL)
		return CAST_INCOMPATIBLE;
	return r->fn ? r->fn(f, t) : r->kind;
}

/* An array and a scalar: only the text form relates them. */
static cast_kind
classify_array_scalar(const cast_type *f, const cast_type *t)
{
	if (t->array)
		return is_string(f) ? CAST_NARROW : CAST_INCOMPATIBLE;
	if (!is_string(t))
		return CAST_INCOMPATIBLE;
	return widen_if(is_family(t, FAM_STRING) && t->len < 0 && known(f) != NULL);
}

static cast_kind
classify_types(const cast_type *f, const cast_type *t)
{
	if (same_type(f, t))
		return CAST_SAME;
	if (f->array != t->array)
		return classify_array_scalar(f, t);
	return classify_elements(f, t);
}

cast_kind
cast_classify(const sqltype *from, const sqltype *to)
{
	cast_type f, t;

	cast_describe(from, &f);
	cast_describe(to, &t);
	return classify_types(&f, &t);
}

/* ---- faithful holds ---- */

static bool
string_family(const cast_type *c)
{
	return is_family(c, FAM_STRING) || is_family(c, FAM_BPCHAR);
}

bool
cast_faithful(const sqltype *from, const sqltype *to)
{
	cast_type f, t;
	cast_kind k = cast_classify(from, to);

	if (k != CAST_WIDEN)
		return k == CAST_SAME;
	cast_describe(from, &f);
	cast_describe(to, &t);
	/* an array, or a value of another family, kept as its text */
	if (f.array != t.array || (string_family(&t) && !string_family(&f)))
		return false;
	/* json keeps the text of a jsonb value, not its equality or operators */
	return !(is_family(&f, FAM_JSONB) && is_family(&t, FAM_JSON));
}

/* ---- session settings ---- */

static unsigned
text_needs(const cast_type *c)
{
	return known(c) ? c->k->text_needs : 0;
}

unsigned
cast_session_needs(const sqltype *from, const sqltype *to)
{
	cast_type f, t;
	unsigned needs = 0;

	cast_describe(from, &f);
	cast_describe(to, &t);
	if (f.array && t.array)
		f.array = t.array = false;
	if (is_string(&t) && !is_string(&f))
		needs |= text_needs(&f);
	if (is_string(&f) && !is_string(&t))
		needs |= text_needs(&t);
	if (known(&f) && known(&t) && f.k->clock != CLOCK_NONE && t.k->clock != CLOCK_NONE &&
		f.k->clock != t.k->clock)
		needs |= CAST_NEEDS_TIMEZONE;
	return needs;
}

/* ---- common type ---- */

static void
make_type(sqltype *out, const char *name, int nmods, int m0, int m1)
{
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "%s", name);
	out->nmods = nmods;
	out->mods[0] = m0;
	out->mods[1] = m1;
}

static int
max_int(int a, int b)
{
	return a > b ? a : b;
}

/* Integer digits and scale of an integer or numeric type. */
static void
numeric_shape(const cast_type *c, int *int_digits, int *scale)
{
	if (c->k->family == FAM_INT) {
		*int_digits = c->k->digits;
		*scale = 0;
	} else {
		*int_digits = numeric_int_digits(c);
		*scale = c->scale;
	}
}

/* numeric(8,2) + numeric(5,4) -> numeric(10,4); integer + numeric(8,2)
 * -> numeric(12,2); numeric when a side is unconstrained or p > 1000. */
static void
join_numeric(const cast_type *a, const cast_type *b, sqltype *out)
{
	int ia, sa, ib, sb, digits, scale;

	numeric_shape(a, &ia, &sa);
	numeric_shape(b, &ib, &sb);
	digits = max_int(ia, ib);
	scale = max_int(sa, sb);
	if (digits == INT32_MAX || digits + scale > NUMERIC_PREC_MAX)
		make_type(out, "numeric", 0, 0, 0);
	else
		make_type(out, "numeric", 2, digits + scale, scale);
}

/* The length or precision a type is bounded by; -1 for none or default. */
static int
bound(const cast_type *c)
{
	return c->k->mod == MOD_LENGTH ? c->len : c->prec;
}

/* name(max of both bounds), or name alone when a side has no bound. */
static void
make_bounded(sqltype *out, const char *name, const cast_type *a, const cast_type *b)
{
	if (bound(a) < 0 || bound(b) < 0)
		make_type(out, name, 0, 0, 0);
	else
		make_type(out, name, 1, max_int(bound(a), bound(b)), 0);
}

/* varchar(n) or character(n) + varchar(m) -> varchar(max); text when a
 * side is text, varchar when a side has no limit. */
static void
join_varchar(const cast_type *a, const cast_type *b, sqltype *out)
{
	if ((a->k->family == FAM_STRING && a->k->rank == 2) ||
		(b->k->family == FAM_STRING && b->k->rank == 2))
		make_type(out, "text", 0, 0, 0);
	else
		make_bounded(out, "character varying", a, b);
}

/* timestamp(p) + timestamptz(q) -> timestamptz(max(p, q)). */
static void
join_timestamptz(const cast_type *a, const cast_type *b, sqltype *out)
{
	make_bounded(out, "timestamp with time zone", a, b);
}

/* bit(3) + bit(5) -> bit varying(5). */
static void
join_varbit(const cast_type *a, const cast_type *b, sqltype *out)
{
	make_bounded(out, "bit varying", a, b);
}

typedef void (*join_fn)(const cast_type *a, const cast_type *b, sqltype *out);

/* Pairs where neither type holds the other but a third holds both: the
 * one fn writes, or else the one named; the order of a pair does not
 * matter. */
static const struct {
	cast_family a, b;
	join_fn fn;
	const char *name;
} joins[] = {
	{FAM_INT, FAM_NUMERIC, join_numeric, NULL},
	{FAM_NUMERIC, FAM_NUMERIC, join_numeric, NULL},
	/* integer + real; bigint + real has none (checked after) */
	{FAM_INT, FAM_FLOAT, NULL, "double precision"},
	{FAM_STRING, FAM_STRING, join_varchar, NULL},
	{FAM_BPCHAR, FAM_STRING, join_varchar, NULL},
	{FAM_BPCHAR, FAM_BPCHAR, join_varchar, NULL},
	{FAM_TIMESTAMP, FAM_TIMESTAMPTZ, join_timestamptz, NULL},
	{FAM_INTERVAL, FAM_INTERVAL, NULL, "interval"},
	{FAM_BIT, FAM_BIT, join_varbit, NULL},
	{FAM_BIT, FAM_VARBIT, join_varbit, NULL},
	{FAM_VARBIT, FAM_VARBIT, join_varbit, NULL},
};

static bool
join_known(const cast_type *a, const cast_type *b, sqltype *out)
{
	if (!known(a) || !known(b))
		return false;
	for (size_t i = 0; i < sizeof joins / sizeof joins[0]; i++) {
		bool ab = joins[i].a == a->k->family && joins[i].b == b->k->family;
		bool ba = joins[i].a == b->k->family && joins[i].b == a->k->family;

		if (!ab && !ba)
			continue;
		if (joins[i].fn == NULL)
			make_type(out, joins[i].name, 0, 0, 0);
		else
			joins[i].fn(ab ? a : b, ab ? b : a, out);
		return true;
	}
	return false;
}

static bool
holds(const sqltype *from, const sqltype *to)
{
	cast_kind k = cast_classify(from, to);

	return k == CAST_SAME || k == CAST_WIDEN;
}

/* The common type of two scalars, or of two arrays' elements. */
static void
common_elements(const sqltype *a, const sqltype *b, sqltype *out)
{
	cast_type ca, cb;

	if (holds(a, b)) {
		*out = *b;
		return;
	}
	if (holds(b, a)) {
		*out = *a;
		return;
	}
	cast_describe(a, &ca);
	cast_describe(b, &cb);
	if (join_known(&ca, &cb, out) && holds(a, out) && holds(b, out))
		return;
	make_type(out, "text", 0, 0, 0);
}

static int
check_valid(const sqltype *t, tm_error *err)
{
	cast_type c;

	cast_describe(t, &c);
	if (t->name[0] == '\0')
		return tm_error_set(err, "empty type name");
	if (!c.valid)
		return tm_error_set(err, "type %s: modifiers out of range", t->name);
	return 0;
}

int
cast_common_type(const sqltype *a, const sqltype *b, sqltype *out, tm_error *err)
{
	if (check_valid(a, err) != 0 || check_valid(b, err) != 0)
		return -1;
	if (a->ndims > 0 && b->ndims > 0 && !holds(a, b) && !holds(b, a)) {
		sqltype ea = *a, eb = *b;

		ea.ndims = eb.ndims = 0;
		common_elements(&ea, &eb, out);
		out->ndims = max_int(a->ndims, b->ndims);
		return 0;
	}
	common_elements(a, b, out);
	return 0;
}

/* ---- value checks ---- */

bool
cast_value_fits_from(const sqltype *from, const sqltype *to, const char *value, size_t len,
                     char *reason, size_t reason_size)
{
	if (holds(from, to))
		return true;
	return cast_value_fits(to, value, len, reason, reason_size);
}

/* ---- USING clause ---- */

/* Whether PostgreSQL has a cast from f to t, so "c"::t converts. */
static bool
direct_cast(const cast_type *f, const cast_type *t)
{
	if (is_string(f) || is_string(t))
		return true;
	if (f->array != t->array)
		return false;
	if (is_family(f, FAM_STRING) || is_family(f, FAM_BPCHAR) || is_family(t, FAM_STRING) ||
		is_family(t, FAM_BPCHAR))
		return true; /* arrays of strings: element by element, through I/O */
	if (!known(f) || !known(t))
		return same_unknown(f->t, t->t, false);
	return find_rule(f->k->family, t->k->family) != NULL;
}

/* sqltype_render writes unquoted names and interval fields as they are:
 * accept only types in the shape sqltype_parse gives them. */
static int
check_renderable(const sqltype *t, tm_error *err)
{
	if (check_valid(t, err) != 0)
		return -1;
	if (!sqltype_is_wellformed(t))
		return tm_error_set(err, "type %s: not a type name sqltype_parse gives", t->name);
	return 0;
}

/*
 * The type a USING expression casts to: `to` without its modifiers
 * (character(n) is then bpchar, bit(n) bit varying). ALTER COLUMN applies
 * the modifiers to the expression's result as an assignment does, so a
 * value too long for varchar(n) fails the ALTER as it fails the source's
 * own ALTER; an explicit cast to varchar(n) would cut it silently.
 */
static void
unmodified(const cast_type *to, sqltype *out)
{
	*out = *to->t;
	out->nmods = 0;
	out->fields[0] = '\0';
	if (is_family(to, FAM_BPCHAR))
		snprintf(out->name, sizeof out->name, "bpchar");
	else if (is_family(to, FAM_BIT))
		snprintf(out->name, sizeof out->name, "bit varying");
}

int
cast_alter_using(const sqltype *from, const sqltype *to, const char *column,
                 strbuf *sql_fragment, tm_error *err)
{
	cast_type f, t;
	sqltype target;

	if (check_renderable(from, err) != 0 || check_renderable(to, err) != 0)
		return -1;
	if (column == NULL || column[0] == '\0')
		return tm_error_set(err, "empty column name");
	cast_describe(from, &f);
	cast_describe(to, &t);
	unmodified(&t, &target);
	strbuf_append(sql_fragment, "TYPE ");
	sqltype_render(to, sql_fragment);
	strbuf_append(sql_fragment, " USING ");
	strbuf_append_ident(sql_fragment, column);
	strbuf_append(sql_fragment, "::");
	if (!direct_cast(&f, &t))
		strbuf_append(sql_fragment, "text::");
	sqltype_render(&target, sql_fragment);
	return 0;
}
