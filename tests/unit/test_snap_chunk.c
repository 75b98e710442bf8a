/*
 * Unit tests of snapshot chunks (src/merge/snap_chunk.c): COPY text and binary
 * rows, their keys, reassembly of rows split across messages, and
 * malformed input.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snap_chunk.h"

static const char *const cols[] = {"id", "v"};
static const int key0[] = {0};

static void
put_field(strbuf *sb, const char *v, int32_t len)
{
	uint32_t l = htonl((uint32_t) len);

	strbuf_appendn(sb, (const char *) &l, 4);
	if (len > 0)
		strbuf_appendn(sb, v, (size_t) len);
}

/* A binary tuple (key text, id, v) with nfields fields. */
static void
put_tuple(strbuf *sb, int nfields, const char *key, const char *v)
{
	uint16_t n = htons((uint16_t) nfields);

	strbuf_appendn(sb, (const char *) &n, 2);
	put_field(sb, key, (int32_t) strlen(key));
	put_field(sb, "\0\0\0\5", 4); /* id as binary int4 5 */
	if (nfields > 2)
		put_field(sb, v, v ? (int32_t) strlen(v) : -1);
}

static void
test_text_rows_and_keys(void **state)
{
	snap_chunk *c = snap_chunk_new(SNAP_CHUNK_TEXT, 2, cols, 1, key0);
	const char *data = "a\\tb\t1\n\\x41\\101\t\\N\n";
	char **key;
	size_t len;
	tm_error err;

	(void) state;
	assert_int_equal(snap_chunk_add(c, data, strlen(data), &err), 0);
	assert_int_equal(snap_chunk_finish(c, &err), 0);
	assert_int_equal(c->nrows, 2);
	assert_int_equal(snap_chunk_key_values(c, 0, &key, &err), 0);
	assert_string_equal(key[0], "a\tb");
	free(key[0]);
	free(key);
	assert_int_equal(snap_chunk_key_values(c, 1, &key, &err), 0);
	assert_string_equal(key[0], "AA");
	free(key[0]);
	free(key);
	{
		const char *row = snap_chunk_row(c, 1, &len);

		assert_int_equal(len, 12);
		assert_memory_equal(row, "\\x41\\101\t\\N\n", len);
	}
	assert_int_equal(snap_chunk_key_values(c, 2, &key, &err), -1);
	snap_chunk_free(c);
}

static void
test_text_malformed(void **state)
{
	snap_chunk *c = snap_chunk_new(SNAP_CHUNK_TEXT, 2, cols, 1, key0);
	tm_error err;

	(void) state;
	assert_int_equal(snap_chunk_add(c, "1\t2\t3\n", 6, &err), -1);
	assert_non_null(strstr(err.msg, "columns"));
	assert_int_equal(snap_chunk_add(c, "1\t2", 3, &err), -1);
	assert_int_equal(snap_chunk_add(c, "\\N\t2\n", 5, &err), -1);
	assert_non_null(strstr(err.msg, "NULL key"));
	assert_int_equal(c->nrows, 0);
	snap_chunk_free(c);
}

static void
test_binary_rows_split_anywhere(void **state)
{
	strbuf in = STRBUF_INIT;

	(void) state;
	snap_chunk_copy_header(SNAP_CHUNK_BINARY, &in);
	put_tuple(&in, 3, "k-one", "first");
	put_tuple(&in, 3, "k-two", NULL);
	snap_chunk_copy_trailer(SNAP_CHUNK_BINARY, &in);
	/* every split point, including inside the header and the trailer */
	for (size_t cut = 1; cut < in.len; cut++) {
		snap_chunk *c = snap_chunk_new(SNAP_CHUNK_BINARY, 2, cols, 1, key0);
		char **key;
		size_t len;
		const char *row;
		tm_error err;

		assert_int_equal(snap_chunk_add(c, in.data, cut, &err), 0);
		assert_int_equal(snap_chunk_add(c, in.data + cut, in.len - cut, &err), 0);
		assert_int_equal(snap_chunk_finish(c, &err), 0);
		assert_int_equal(c->nrows, 2);
		assert_int_equal(snap_chunk_key_values(c, 1, &key, &err), 0);
		assert_string_equal(key[0], "k-two");
		free(key[0]);
		free(key);
		/* the key text is taken off: 2 fields left, count rewritten */
		row = snap_chunk_row(c, 0, &len);
		{
			uint16_t n;

			memcpy(&n, row, 2);
			assert_int_equal(ntohs(n), 2);
		}
		assert_int_equal(len, 2 + 4 + 4 + 4 + 5);
		snap_chunk_free(c);
	}
	strbuf_free(&in);
}

static void
expect_binary_error(const strbuf *in, const char *needle)
{
	snap_chunk *c = snap_chunk_new(SNAP_CHUNK_BINARY, 2, cols, 1, key0);
	tm_error err;
	int rc = snap_chunk_add(c, in->data, in->len, &err);

	if (rc == 0)
		rc = snap_chunk_finish(c, &err);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err.msg, needle));
	snap_chunk_free(c);
}

static void
test_binary_malformed(void **state)
{
	strbuf in = STRBUF_INIT;

	(void) state;
	strbuf_appendn(&in, "NOTPGCOPY\n\0\0\0\0\0\0\0\0\0", 19);
	expect_binary_error(&in, "not a binary COPY");
	strbuf_reset(&in);
	snap_chunk_copy_header(SNAP_CHUNK_BINARY, &in);
	put_tuple(&in, 2, "k", NULL); /* one field short */
	expect_binary_error(&in, "malformed");
	strbuf_reset(&in);
	snap_chunk_copy_header(SNAP_CHUNK_BINARY, &in);
	put_tuple(&in, 3, "k", "v");
	expect_binary_error(&in, "ended early"); /* no trailer */
	snap_chunk_copy_trailer(SNAP_CHUNK_BINARY, &in);
	strbuf_append(&in, "junk");
	expect_binary_error(&in, "after the end");
	strbuf_reset(&in);
	snap_chunk_copy_header(SNAP_CHUNK_BINARY, &in);
	{
		uint16_t n = htons(3);

		strbuf_appendn(&in, (const char *) &n, 2);
		put_field(&in, NULL, -1); /* a NULL key */
	}
	expect_binary_error(&in, "malformed");
	strbuf_free(&in);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_rows_and_keys),
		cmocka_unit_test(test_text_malformed),
		cmocka_unit_test(test_binary_rows_split_anywhere),
		cmocka_unit_test(test_binary_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
