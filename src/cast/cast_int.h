/*
 * cast_int.h: what cast.c (the type table, classification, common types,
 * USING clauses) shares with cast_value.c and cast_time.c (value checks).
 * Not for other modules: they use cast.h.
 */
#ifndef TIDEMARK_CAST_INT_H
#define TIDEMARK_CAST_INT_H

#include <stdarg.h>
#include <stdint.h>

#include "cast.h"

typedef enum cast_family {
	FAM_ANY, /* wildcard in rules; no type has it */
	FAM_INT,
	FAM_NUMERIC,
	FAM_FLOAT,
	FAM_STRING, /* character varying and text */
	FAM_BPCHAR,
	FAM_BOOL,
	FAM_DATE,
	FAM_TIMESTAMP,
	FAM_TIMESTAMPTZ,
	FAM_TIME,
	FAM_TIMETZ,
	FAM_INTERVAL,
	FAM_UUID,
	FAM_JSON,
	FAM_JSONB,
	FAM_BYTEA,
	FAM_INET,
	FAM_CIDR,
	FAM_BIT,
	FAM_VARBIT,
	FAM_XML,
	FAM_MACADDR,
} cast_family;

/* What a type's modifiers mean. */
typedef enum cast_modkind {
	MOD_NONE,      /* takes none */
	MOD_LENGTH,    /* (n): characters or bits */
	MOD_NUMERIC,   /* (p) or (p,s) */
	MOD_PRECISION, /* (p): fractional digits of seconds, 0..6 */
} cast_modkind;

/* Whether a date/time type reads its values in a time zone. */
typedef enum cast_clock {
	CLOCK_NONE,  /* not a date/time type */
	CLOCK_LOCAL, /* date, timestamp, time */
	CLOCK_ZONED, /* timestamptz, timetz */
} cast_clock;

typedef struct cast_type cast_type;
typedef struct cast_reason cast_reason;

/* Checks one value's text against a type of the family. */
typedef bool (*cast_fits_fn)(const cast_type *to, const char *v, size_t len, cast_reason *why);

/* A built-in type. */
typedef struct cast_known {
	const char *name;    /* as format_type() spells it */
	const char *catalog; /* pg_type.typname, also accepted */
	cast_family family;
	int rank;            /* within the family: a higher rank holds a lower one */
	cast_modkind mod;
	int default_len;     /* MOD_LENGTH without modifier: n, or -1 for no limit */
	int value_bits;      /* integers: magnitude bits; floats: mantissa bits */
	int digits;          /* integers: decimal digits of the range */
	int64_t min, max;    /* integers: the range */
	int max_text;        /* longest text of its cast to text; 0: no bound */
	unsigned text_needs; /* CAST_NEEDS_* its text form depends on */
	cast_clock clock;
	cast_fits_fn fits;   /* NULL: values are not checked */
} cast_known;

/* A sqltype looked up in the table, modifiers read. For an array, the
 * element type with array set. */
struct cast_type {
	const sqltype *t;
	const cast_known *k; /* NULL: unknown type */
	bool valid;          /* modifiers are well-formed for the type */
	bool array;
	int len;             /* MOD_LENGTH: -1 for no limit */
	int prec;            /* MOD_NUMERIC: -1 unconstrained; MOD_PRECISION: -1 default */
	int scale;
};

/* Where a value check writes why a value does not fit (buf may be NULL). */
struct cast_reason {
	char *buf;
	size_t size;
};

void cast_describe(const sqltype *t, cast_type *out);

/* The precision of a date/time type: its modifier, or 6. */
int cast_time_precision(const cast_type *c);

/* Writes the reason and returns false, for `return cast_refuse(...)`. */
bool cast_refuse(cast_reason *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Value checks by family (cast_value.c, cast_time.c). */
bool cast_fits_int(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_numeric(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_float(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_string(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_bpchar(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_bool(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_uuid(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_bytea(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_bits(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_date(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_timestamp(const cast_type *to, const char *v, size_t len, cast_reason *why);
bool cast_fits_time(const cast_type *to, const char *v, size_t len, cast_reason *why);

#endif
