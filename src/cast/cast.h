/*
 * cast.h: the casting matrix. What happens to the values of a column when
 * its type changes from one type to another, which type holds the values
 * of two types, whether one value fits a type, and the USING clause that
 * converts a target column.
 *
 * Types are sqltype parses of format_type() spellings ("integer",
 * "numeric(12,2)", "character varying(20)", "timestamp(3) with time zone",
 * "integer[]"); the catalog names (int4, varchar, timestamptz, ...), with or
 * without "pg_catalog.", are the same types. Any other type (a domain, an
 * enum, a type in another schema) is unknown: it is the same only as
 * itself, it never widens nor is widened to (to and from text it narrows:
 * a cast through text exists), and its values are not checked.
 *
 * Values are compared as PostgreSQL 15 compares them in the type they end
 * in, read from and written to their text forms (UTF-8, DateStyle ISO,
 * IntervalStyle postgres, extra_float_digits 3, bytea_output hex, as
 * tidemark's sessions set them):
 *   - numbers by numeric value: "12.5" in numeric(12,2) is "12.50", the
 *     same number; "12.505" would round, so it does not fit;
 *   - real and double precision by the number their shortest text denotes:
 *     "0.1" fits real (it reads back as "0.1"), "0.123456789" does not
 *     (it reads back as "0.12345679"); NaN, Infinity and -0 are values;
 *   - character(n) ignoring trailing spaces, as bpchar compares: they are
 *     padding, so "ab" fits character(3) (read back as "ab ") and so does
 *     "abc  " (stored as "abc"); varchar(n) and text keep trailing spaces,
 *     so "abc  " does not fit varchar(3) (an insert would cut the spaces);
 *   - timestamps by the instant or local time they denote.
 * When unsure, a change is not a widening: numeric(6,2) -> real keeps the
 * text of every value, yet is NARROW, as are unknown types -> text.
 *
 * Pure: no I/O, no state.
 */
#ifndef TIDEMARK_CAST_H
#define TIDEMARK_CAST_H

#include <stdbool.h>
#include <stddef.h>

#include "sqltype.h"
#include "strbuf.h"
#include "tm_error.h"

typedef enum cast_kind {
	/* The same type: nothing to convert. */
	CAST_SAME,
	/*
	 * Every value of the old type is held exactly by the new one, and
	 * ALTER COLUMN ... TYPE new (with cast_alter_using) converts it the same
	 * way on the target as on the source: smallint -> integer -> bigint ->
	 * numeric, integer -> numeric(12,2), numeric(10,2) -> numeric(12,3),
	 * real -> double precision (the binary value is kept; its shortest text
	 * grows, 0.1 -> 0.10000000149011612, on both sides alike),
	 * varchar(10) -> varchar(20) or text, character(n) -> character(m >= n)
	 * (re-padded), character(n) -> text or varchar(m >= n) (trailing spaces
	 * are dropped, on both sides alike), date -> timestamp,
	 * timestamp -> timestamptz (see cast_session_needs), jsonb -> json,
	 * cidr -> inet, any known scalar type -> text (as its cast to text
	 * writes it: boolean as true/false, inet with its prefix length),
	 * arrays element by element (integer[] -> bigint[]).
	 * Two exceptions PostgreSQL reports rather than hides: dates after
	 * 294276 AD have no timestamp (the ALTER fails), and a local time in a
	 * daylight-saving gap of the session TimeZone moves to the next hour.
	 */
	CAST_WIDEN,
	/*
	 * A cast exists and keeps some values exactly, not all: bigint ->
	 * integer, numeric(12,2) -> integer (rounds; NaN), numeric ->
	 * numeric(10,2), double -> real, float -> numeric (6 or 15 digits),
	 * text -> varchar(10), varchar -> character(n) (trailing spaces stop
	 * counting), timestamptz -> timestamp, time -> timetz, json -> jsonb
	 * (jsonb normalises), and any string type -> any known type
	 * (text -> integer: "42" parses to the same value, "4x2" does not).
	 * Check values with cast_value_fits.
	 */
	CAST_NARROW,
	/*
	 * No cast, or one that changes what every value means: boolean ->
	 * integer (true becomes 1), uuid -> integer, jsonb -> integer,
	 * date -> boolean, time -> interval, an array and a scalar other than
	 * a string type.
	 */
	CAST_INCOMPATIBLE,
} cast_kind;

/* Session settings a conversion's result depends on (cast_session_needs). */
#define CAST_NEEDS_TIMEZONE      0x01 /* TimeZone */
#define CAST_NEEDS_DATESTYLE     0x02 /* DateStyle (date/time text) */
#define CAST_NEEDS_INTERVALSTYLE 0x04 /* IntervalStyle */
#define CAST_NEEDS_FLOAT_DIGITS  0x08 /* extra_float_digits (float text) */
#define CAST_NEEDS_BYTEA_OUTPUT  0x10 /* bytea_output */

/* What a change of a column's type from `from` to `to` does to its values.
 * Malformed modifiers on a known type (numeric(0), varchar(-1)) make it an
 * unknown type. */
cast_kind cast_classify(const sqltype *from, const sqltype *to);

/*
 * Whether `to` holds every value of `from` with its meaning: SAME, or a
 * WIDEN after which the values compare, sort and take the operators of
 * their type as before (integer -> bigint or numeric, real -> double
 * precision, varchar(10) -> text, date -> timestamp, timestamp ->
 * timestamptz, cidr -> inet). A widening that keeps only a value's text is
 * not faithful: any type other than a string type -> text or varchar(n),
 * an array -> text, jsonb -> json (json has no equality, no containment,
 * no GIN index). Neither is anything NARROW or INCOMPATIBLE, nor an
 * unknown type other than itself (an enum, a domain, citext).
 */
bool cast_faithful(const sqltype *from, const sqltype *to);

/* The session settings (CAST_NEEDS_*) under which the conversion from
 * `from` to `to` must run on the target to give the source's result:
 * CAST_NEEDS_TIMEZONE for timestamp <-> timestamptz, date -> timestamptz,
 * timestamptz -> date, ...; the text-form settings for a conversion to or
 * from a string type. 0 when none matters. */
unsigned cast_session_needs(const sqltype *from, const sqltype *to);

/*
 * The `widen` policy's common type: the smallest type that holds every
 * value of a and of b exactly (integer + numeric(8,2) -> numeric(12,2),
 * bigint + integer -> bigint, varchar(10) + varchar(20) -> varchar(20),
 * timestamp + timestamptz -> timestamptz, jsonb + json -> json). Pairs
 * no type holds exactly, and anything with text, end at text: every value
 * has a text form (bigint + double precision -> text, uuid + integer ->
 * text); two arrays end at the common type of their elements, as an array
 * (integer[] + uuid[] -> text[]).
 * Writes *out. Returns 0, or -1 with err set when a or b is malformed.
 */
int cast_common_type(const sqltype *a, const sqltype *b, sqltype *out, tm_error *err);

/*
 * Whether a value, as the text its type's output function writes (len
 * bytes, not NUL-terminated), goes into type `to` without rounding,
 * truncation or loss of its time zone. When it does not, and reason is
 * not NULL, writes why (at most reason_size bytes, NUL-terminated).
 *   - integers: the range; "1e10" and "1.0" are not integers;
 *   - numeric(p,s): the digits before and after the point; NaN fits,
 *     Infinity fits only unconstrained numeric;
 *   - real, double precision: the shortest text reads back as the same
 *     number (see above); values out of range do not fit;
 *   - varchar(n), character(n): length in UTF-8 characters (character(n)
 *     without trailing spaces); text: any valid UTF-8 without NUL;
 *   - boolean: PostgreSQL's spellings (t, true, yes, on, 1, prefixes);
 *   - date, timestamp, timestamptz, time, timetz: ISO text; a value with a
 *     UTC offset does not fit timestamp, time or date (its zone would be
 *     dropped), nor does a fraction finer than the precision; a date takes
 *     a time of day only if it is midnight; a timestamptz without offset
 *     is read in the session TimeZone, a timetz needs one; other
 *     spellings ('epoch', other DateStyles, zone names) do not fit;
 *   - uuid: its input syntax; bytea: hex format; bit(n): exactly n binary
 *     digits, bit varying(n): at most n;
 *   - arrays ("{1,NULL,\"a b\"}"): every element, NULL elements fit;
 *     arrays written with bounds ("[0:1]={1,2}") are not checked;
 *   - json, jsonb, interval, inet, cidr, xml, macaddr and unknown types
 *     are not parsed: no value fits (use cast_value_fits_from, which does
 *     not look at values when the types are the same or widen).
 */
bool cast_value_fits(const sqltype *to, const char *value, size_t len, char *reason,
                     size_t reason_size);

/* As cast_value_fits, for a value of type `from`: true without looking at
 * the value when cast_classify(from, to) is CAST_SAME or CAST_WIDEN. */
bool cast_value_fits_from(const sqltype *from, const sqltype *to, const char *value, size_t len,
                          char *reason, size_t reason_size);

/*
 * Appends to sql_fragment the clause that converts a target column from
 * `from` to `to` in ALTER TABLE ... ALTER COLUMN "column":
 *   TYPE numeric(12,2) USING "total"::numeric
 * The cast names the type without its modifiers (character(n) as bpchar,
 * bit(n) as bit varying); ALTER COLUMN then applies them as an assignment
 * does, as on the source's own ALTER ... TYPE: a value too long for
 * varchar(n) fails the ALTER, where an explicit cast to varchar(n) would
 * cut it silently. Where PostgreSQL has no cast between the two types, the
 * conversion goes through text:  TYPE integer USING "c"::text::integer.
 * The column is always a quoted identifier and the types are rendered by
 * sqltype_render from parts sqltype_parse accepts, never copied from
 * source text. Returns 0, or -1 with err set (nothing appended) when a
 * type is malformed or the column name is empty.
 */
int cast_alter_using(const sqltype *from, const sqltype *to, const char *column,
                     strbuf *sql_fragment, tm_error *err);

#endif
