/*
 * test_strbuf.c: the growable string, identifier quoting and COPY escaping.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "strbuf.h"

static void
test_empty_and_growth(void **state)
{
	strbuf sb = STRBUF_INIT;
	char *s;

	(void) state;
	assert_string_equal(strbuf_str(&sb), "");
	for (int i = 0; i < 1000; i++)
		strbuf_appendc(&sb, (char) ('a' + i % 26));
	assert_int_equal(sb.len, 1000);
	assert_int_equal(strlen(sb.data), 1000);
	assert_true(sb.cap > sb.len);
	strbuf_reset(&sb);
	assert_int_equal(sb.len, 0);
	assert_string_equal(strbuf_str(&sb), "");
	strbuf_appendf(&sb, "%s-%d-%05.1f", "x", 42, 3.14159);
	assert_string_equal(strbuf_str(&sb), "x-42-003.1");
	s = strbuf_steal(&sb);
	assert_string_equal(s, "x-42-003.1");
	assert_null(sb.data);
	assert_int_equal(sb.len, 0);
	free(s);
	s = strbuf_steal(&sb);     /* never NULL, even when empty */
	assert_string_equal(s, "");
	free(s);
	strbuf_free(&sb);
}

static void
test_appendf_long(void **state)
{
	strbuf sb = STRBUF_INIT;
	char big[5000];

	(void) state;
	memset(big, 'z', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	strbuf_append(&sb, "<");
	strbuf_appendf(&sb, "%s>", big);
	assert_int_equal(sb.len, sizeof big + 1);
	assert_int_equal(sb.data[0], '<');
	assert_int_equal(sb.data[sb.len - 1], '>');
	assert_int_equal(sb.data[sb.len], '\0');
	strbuf_free(&sb);
}

static void
assert_ident(const char *name, const char *expected)
{
	strbuf sb = STRBUF_INIT;

	strbuf_append_ident(&sb, name);
	assert_string_equal(strbuf_str(&sb), expected);
	strbuf_free(&sb);
}

static void
test_ident_quoting(void **state)
{
	(void) state;
	assert_ident("t", "\"t\"");
	assert_ident("MixedCase", "\"MixedCase\"");
	assert_ident("", "\"\"");
	assert_ident("a\"b", "\"a\"\"b\"");
	assert_ident("\"", "\"\"\"\"");
	assert_ident("x\"; DROP TABLE y; --", "\"x\"\"; DROP TABLE y; --\"");
	assert_ident("sp ace.dot", "\"sp ace.dot\"");
	assert_ident("\xc3\xa9t\xc3\xa9", "\"\xc3\xa9t\xc3\xa9\"");
}

static void
test_qualified(void **state)
{
	strbuf sb = STRBUF_INIT;

	(void) state;
	strbuf_append_qualified(&sb, "my\"schema", "t.1");
	assert_string_equal(strbuf_str(&sb), "\"my\"\"schema\".\"t.1\"");
	strbuf_free(&sb);
}

static void
assert_copy(const char *in, size_t n, const char *expected)
{
	strbuf sb = STRBUF_INIT;

	strbuf_append_copy_text(&sb, in, n);
	assert_string_equal(strbuf_str(&sb), expected);
	assert_int_equal(sb.len, strlen(expected));
	strbuf_free(&sb);
}

static void
test_copy_escaping(void **state)
{
	(void) state;
	assert_copy("plain", 5, "plain");
	assert_copy("", 0, "");
	assert_copy("a\\b", 3, "a\\\\b");
	assert_copy("line1\nline2", 11, "line1\\nline2");
	assert_copy("cr\rlf\n", 6, "cr\\rlf\\n");
	assert_copy("tab\there", 8, "tab\\there");
	assert_copy("\\N", 2, "\\\\N");    /* data that looks like NULL stays data */
	assert_copy("'\"", 2, "'\"");
	assert_copy("abcdef", 3, "abc");   /* only n bytes */
}

static void
test_copy_appends(void **state)
{
	strbuf sb = STRBUF_INIT;

	(void) state;
	strbuf_append(&sb, "1\t");
	strbuf_append_copy_text(&sb, "x\ty", 3);
	strbuf_appendc(&sb, '\n');
	assert_string_equal(strbuf_str(&sb), "1\tx\\ty\n");
	strbuf_free(&sb);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_and_growth),
		cmocka_unit_test(test_appendf_long),
		cmocka_unit_test(test_ident_quoting),
		cmocka_unit_test(test_qualified),
		cmocka_unit_test(test_copy_escaping),
		cmocka_unit_test(test_copy_appends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
