/*
 * codec.h: the one way tidemark spells, encodes and compares values.
 *
 * A value is its type's output function text: the bytes pgoutput sends for
 * it, and the bytes COPY ... TO (FORMAT text) writes, in sessions with the
 * output settings every tidemark connection has (pgconn.h: DateStyle ISO,
 * TimeZone UTC, extra_float_digits 3, ...). Wherever tidemark matches a row
 * of one place with a row of another (a chunk row with a change of the
 * stream, a key read again, a staged key, a row of verify), it compares
 * these texts, byte for byte, and nothing else.
 *
 * A SQL cast to text is not that text for every type: char(n)::text strips
 * the padding, inet::text adds the mask (10.0.0.1/32 for 10.0.0.1),
 * boolean::text says true where the output function says t, and a type may
 * have a cast of its own. So a server is asked for a value's text with
 * concat(), which calls the output function, never with ::text.
 *
 * Pure: no I/O.
 */
#ifndef TIDEMARK_CODEC_H
#define TIDEMARK_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/* SQL for the output text of a value: concat(expr). For a NOT NULL column
 * (a key); a NULL would become the empty string. alias (may be NULL)
 * qualifies the column, which is quoted. */
void codec_append_key_text(strbuf *sql, const char *alias, const char *column);

/* SQL for the output text of any expression, NULL kept NULL:
 * CASE WHEN (expr) IS NULL THEN NULL ELSE concat(expr) END. expr is SQL
 * the caller built (quoted identifiers, re-rendered types). */
void codec_append_value_text(strbuf *sql, const char *expr);

/*
 * Comparing keys in SQL. A key value travels as text (a literal or an
 * untyped parameter), which the server types by the column it meets; that
 * fails for a composite key (an anonymous record) and for a domain over an
 * enum (such a domain has no operators of its own). So a key column and
 * the value compared with it are both cast to the column's base type (the
 * type itself, or a domain's base type), given as SQL built with quoted
 * identifiers ("schema"."name", no typmod): a cast that changes nothing,
 * which the planner looks through, so the key's index still serves.
 * CODEC_KEY_TYPE_COLUMNS is a query fragment that yields, for a column
 * a of pg_attribute, the base type's schema and name as "key_type_schema"
 * and "key_type_name".
 */
#define CODEC_KEY_TYPE_COLUMNS                                                                \
	" (SELECT bn.nspname FROM pg_type kt JOIN pg_type bt ON bt.oid = CASE WHEN kt.typtype"     \
	" = 'd' THEN kt.typbasetype ELSE kt.oid END JOIN pg_namespace bn ON bn.oid ="             \
	" bt.typnamespace WHERE kt.oid = a.atttypid) AS key_type_schema,"                         \
	" (SELECT bt.typname FROM pg_type kt JOIN pg_type bt ON bt.oid = CASE WHEN kt.typtype"     \
	" = 'd' THEN kt.typbasetype ELSE kt.oid END WHERE kt.oid = a.atttypid) AS key_type_name"

/* alias."column"::type (type may be NULL: no cast; alias may be NULL). */
void codec_append_key_operand(strbuf *sql, const char *alias, const char *column,
                              const char *type);
/* $n::type (type may be NULL). */
void codec_append_key_param(strbuf *sql, int n, const char *type);

/*
 * Keys. A row's key is its key columns' texts, encoded as one byte string
 * so that two keys are equal exactly when their bytes are: for each value,
 * its length (4 bytes, host order) then its bytes. Never stored or sent:
 * only compared within one process.
 */
void codec_key_encode(strbuf *sb, int n, const char *const *vals, const size_t *lens);
/* The i-th value of an encoded key; false when there is none (or the
 * encoding is cut short). */
bool codec_key_part(const char *key, size_t len, int i, const char **val, size_t *vlen);
bool codec_key_equal(const char *a, size_t alen, const char *b, size_t blen);
/* A hash of an encoded key (FNV-1a), for hash tables of keys. */
uint64_t codec_key_hash(const char *key, size_t len);

/*
 * Ordering. Whether a server orders a column's values as another does
 * depends on more than the type's name: the collation (its provider, its
 * locale, the version of the library behind it), an enum's labels in their
 * order. CODEC_ORDER_SQL, run on each side with the table's schema and name
 * as $1 and $2, returns per column (attname, descriptor); two columns order
 * their values alike when their descriptors are equal and codec_order_known
 * says the descriptor is one tidemark can trust (a type whose order it
 * knows: built-in types, enums, and collations compared by provider,
 * locale, determinism and version).
 */
extern const char *const CODEC_ORDER_SQL;
bool codec_order_known(const char *descriptor);

/* Do both servers order a key of nkeys columns alike: for every column
 * both descriptors known, equal and trusted? When not, reason says which
 * column and both descriptors (reason may be NULL). */
#define CODEC_ORDER_REASON_MAX 320
bool codec_order_compare(int nkeys, const char *const *keys, const char *const *source,
                         const char *const *target, char *reason, size_t size);

#endif
