/*
 * Unit tests of codec.c: the SQL that asks a server for a value's output
 * text, the key encoding, and which ordering descriptors are trusted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "codec.h"

/* concat() calls the output function; ::text would not (char(n), inet,
 * boolean); names stay quoted identifiers. */
static void
test_text_sql(void **state)
{
	strbuf sql = STRBUF_INIT;

	(void) state;
	codec_append_key_text(&sql, NULL, "Order Id");
	assert_string_equal(sql.data, "concat(\"Order Id\")");
	strbuf_reset(&sql);
	codec_append_key_text(&sql, "t", "x\"; DROP TABLE y; --");
	assert_string_equal(sql.data, "concat(t.\"x\"\"; DROP TABLE y; --\")");
	strbuf_reset(&sql);
	codec_append_value_text(&sql, "\"c\"::numeric(12,2)");
	assert_string_equal(sql.data, "CASE WHEN (\"c\"::numeric(12,2)) IS NULL THEN NULL"
	                              " ELSE concat(\"c\"::numeric(12,2)) END");
	strbuf_free(&sql);
}

static void
test_key_encoding(void **state)
{
	const char *vals[] = {"ab", "", "c"};
	size_t lens[] = {2, 0, 1};
	strbuf sb = STRBUF_INIT, other = STRBUF_INIT;
	const char *v;
	size_t vl;

	(void) state;
	codec_key_encode(&sb, 3, vals, lens);
	assert_true(codec_key_part(sb.data, sb.len, 1, &v, &vl));
	assert_int_equal(vl, 0);
	assert_true(codec_key_part(sb.data, sb.len, 2, &v, &vl));
	assert_memory_equal(v, "c", 1);
	assert_false(codec_key_part(sb.data, sb.len, 3, &v, &vl));
	assert_false(codec_key_part(sb.data, sb.len - 1, 2, &v, &vl));
	assert_false(codec_key_part(sb.data, 3, 0, &v, &vl));
	/* ("ab", "", "c") and ("a", "b", "c"): the lengths keep them apart */
	vals[0] = "a";
	vals[1] = "b";
	lens[0] = lens[1] = 1;
	codec_key_encode(&other, 3, vals, lens);
	assert_false(codec_key_equal(sb.data, sb.len, other.data, other.len));
	assert_true(codec_key_equal(sb.data, sb.len, sb.data, sb.len));
	assert_true(codec_key_equal("", 0, NULL, 0));
	assert_int_equal(codec_key_hash(sb.data, sb.len), codec_key_hash(sb.data, sb.len));
	assert_true(codec_key_hash(sb.data, sb.len) != codec_key_hash(other.data, other.len));
	strbuf_free(&sb);
	strbuf_free(&other);
}

/* Descriptors of the kinds CODEC_ORDER_SQL writes: a server is trusted to
 * order like another only for kinds whose order tidemark knows. */
static void
test_order_known(void **state)
{
	(void) state;
	assert_true(codec_order_known("builtin 'number' -"));
	assert_true(codec_order_known("builtin 'text' coll:i:true:und-u-ks-level2::153.14"));
	assert_true(codec_order_known("enum 'mood' 'sad','ok','happy'"));
	assert_true(codec_order_known("ext 'citext' '1.6' 'citext' C"));
	assert_false(codec_order_known("other 'public.pair'"));
	assert_false(codec_order_known("builtin"));
	assert_false(codec_order_known(""));
	assert_false(codec_order_known(NULL));
	assert_non_null(strstr(CODEC_ORDER_SQL, "$1"));
	assert_non_null(strstr(CODEC_ORDER_SQL, "$2"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_sql),
		cmocka_unit_test(test_key_encoding),
		cmocka_unit_test(test_order_known),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
