/*
 * Unit tests of spool.c: records written, read back in order, cut back to
 * an earlier size, read again from a point; nothing left in the directory.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "exitcode.h"
#include "spool.h"

static char dir[] = "/tmp/tidemark-spool-test-XXXXXX";

static int
files_in(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	while (d != NULL && (de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	if (d != NULL)
		closedir(d);
	return n;
}

static void
expect_next(spool *s, const char *want, size_t want_len)
{
	const char *d = NULL;
	size_t n = 0;
	bool end = true;

	assert_int_equal(spool_next(s, &d, &n, &end), TM_OK);
	assert_false(end);
	assert_int_equal(n, want_len);
	assert_memory_equal(d, want, want_len);
}

static void
expect_end(spool *s)
{
	const char *d;
	size_t n;
	bool end = false;

	assert_int_equal(spool_next(s, &d, &n, &end), TM_OK);
	assert_true(end);
}

static void
test_write_read_cut(void **state)
{
	spool *s = NULL;
	uint64_t mark;
	char big[70000];

	(void) state;
	memset(big, 'x', sizeof big);
	big[123] = '\0'; /* records are bytes, NULs included */
	assert_int_equal(spool_open(dir, &s), TM_OK);
	assert_int_equal(files_in(dir), 0); /* unlinked at once */
	assert_int_equal(spool_append(s, "one", 3), TM_OK);
	assert_int_equal(spool_append(s, "", 0), TM_OK);
	mark = spool_size(s);
	assert_int_equal(mark, 4 + 3 + 4);
	assert_int_equal(spool_append(s, big, sizeof big), TM_OK);
	assert_int_equal(spool_append(s, "four", 4), TM_OK);
	assert_int_equal(spool_seek(s, 0), TM_OK);
	expect_next(s, "one", 3);
	expect_next(s, "", 0);
	expect_next(s, big, sizeof big);
	expect_next(s, "four", 4);
	expect_end(s);
	/* read again from the mark, then cut back to it and write on */
	assert_int_equal(spool_seek(s, mark), TM_OK);
	expect_next(s, big, sizeof big);
	assert_int_equal(spool_truncate(s, mark), TM_OK);
	assert_int_equal(spool_size(s), mark);
	assert_int_equal(spool_append(s, "five", 4), TM_OK);
	assert_int_equal(spool_seek(s, 0), TM_OK);
	expect_next(s, "one", 3);
	expect_next(s, "", 0);
	expect_next(s, "five", 4);
	expect_end(s);
	/* appended while reading: read too */
	assert_int_equal(spool_append(s, "six", 3), TM_OK);
	expect_next(s, "six", 3);
	expect_end(s);
	spool_close(s);
	spool_close(NULL);
}

/* A directory that cannot hold the file: the configuration's failure. */
static void
test_bad_directory(void **state)
{
	spool *s = NULL;

	(void) state;
	assert_int_equal(spool_open("/nonexistent/tidemark", &s), TM_EXIT_CONFIG);
	assert_null(s);
}

static int
make_dir(void **state)
{
	(void) state;
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
remove_dir(void **state)
{
	(void) state;
	return rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read_cut),
		cmocka_unit_test(test_bad_directory),
	};

	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
