/*
 * Unit tests of the chunk-window rule (core/snap_window.c): the scenarios
 * of fixtures/snap_window/ (*.seq) run against a model of source and target,
 * and direct tests of the COPY text handling.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "snap_window.h"

#define MAXROWS 64

typedef struct row {
	bool used;
	char key[32];
	char a[64];   /* "" + isnull flags below */
	char t[64];
	bool a_null, t_null;
} row;

typedef struct table {
	row rows[MAXROWS];
} table;

typedef struct scenario {
	table source, target;
	snap_window *window;   /* open between low and high */
	snap_chunk *chunk;     /* read between low and high */
	int expects;
	row expect[MAXROWS];
} scenario;

static const char *const colnames[] = {"k", "a", "t"};
static const int key_idx[] = {0};

/* "\t" and "\n" in fixture tokens stand for the real characters. */
static void
token_value(const char *tok, char *out, size_t size, bool *is_null)
{
	size_t n = 0;

	*is_null = strcmp(tok, "-") == 0;
	for (const char *p = tok; *p && !*is_null && n + 1 < size; p++) {
		if (p[0] == '\\' && p[1] == 't') {
			out[n++] = '\t';
			p++;
		} else if (p[0] == '\\' && p[1] == 'n') {
			out[n++] = '\n';
			p++;
		} else if (p[0] == '\\' && p[1] == '\\') {
			out[n++] = '\\';
			p++;
		} else
			out[n++] = *p;
	}
	out[n] = '\0';
}

static row *
find_row(table *t, const char *key)
{
	for (int i = 0; i < MAXROWS; i++)
		if (t->rows[i].used && strcmp(t->rows[i].key, key) == 0)
			return &t->rows[i];
	return NULL;
}

static row *
upsert_row(table *t, const row *r)
{
	row *dst = find_row(t, r->key);

	for (int i = 0; dst == NULL && i < MAXROWS; i++)
		if (!t->rows[i].used)
			dst = &t->rows[i];
	assert_non_null(dst);
	*dst = *r;
	dst->used = true;
	return dst;
}

static void
delete_row(table *t, const char *key)
{
	row *r = find_row(t, key);

	if (r != NULL)
		r->used = false;
}

static void
parse_row(char **tok, int ntok, row *r)
{
	memset(r, 0, sizeof *r);
	assert_true(ntok >= 2);
	snprintf(r->key, sizeof r->key, "%s", tok[1]);
	if (ntok > 2)
		token_value(tok[2], r->a, sizeof r->a, &r->a_null);
	if (ntok > 3)
		token_value(tok[3], r->t, sizeof r->t, &r->t_null);
}

/* ---- the stream's view of a change ---- */

static void
note_whole(scenario *s, const char *key)
{
	const char *k[] = {key};
	size_t kl[] = {strlen(key)};

	if (s->window != NULL)
		snap_window_note_row(s->window, k, kl);
}

static void
apply_partial(scenario *s, const row *r)
{
	row *src = find_row(&s->source, r->key);
	row *tgt = find_row(&s->target, r->key);

	assert_non_null(src);
	snprintf(src->a, sizeof src->a, "%s", r->a);
	src->a_null = r->a_null;
	if (tgt != NULL) { /* UPDATE ... SET a = $1 WHERE k = $2: no row, no effect */
		snprintf(tgt->a, sizeof tgt->a, "%s", r->a);
		tgt->a_null = r->a_null;
	}
	if (s->window != NULL) {
		const char *k[] = {r->key};
		size_t kl[] = {strlen(r->key)};
		const char *names[] = {"a"};
		const char *vals[] = {r->a_null ? NULL : r->a};
		size_t vl[] = {strlen(r->a)};

		snap_window_note_partial(s->window, k, kl, 1, names, vals, vl);
	}
}

static void
append_field(strbuf *sb, const char *v, bool is_null)
{
	if (is_null)
		strbuf_append(sb, "\\N");
	else
		strbuf_append_copy_text(sb, v, strlen(v));
}

/* The chunk as COPY TO STDOUT would write the source at this instant. */
static snap_chunk *
read_chunk(scenario *s)
{
	snap_chunk *c = snap_chunk_new(3, colnames, 1, key_idx);
	strbuf sb = STRBUF_INIT;
	tm_error err;

	for (int i = 0; i < MAXROWS; i++) {
		const row *r = &s->source.rows[i];

		if (!r->used)
			continue;
		append_field(&sb, r->key, false);
		strbuf_appendc(&sb, '\t');
		append_field(&sb, r->a, r->a_null);
		strbuf_appendc(&sb, '\t');
		append_field(&sb, r->t, r->t_null);
		strbuf_appendc(&sb, '\n');
	}
	assert_int_equal(snap_chunk_add(c, strbuf_str(&sb), sb.len, &err), 0);
	strbuf_free(&sb);
	return c;
}

/* Upserts the merged rows into the target model, decoding the COPY text. */
static void
load_merged(scenario *s, const strbuf *merged, long nrows)
{
	const char *p = strbuf_str(merged);
	long seen = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		const char *f[3];
		size_t fl[3];
		strbuf v[3] = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT};
		row r;

		assert_non_null(nl);
		assert_int_equal(snap_copy_fields(p, (size_t) (nl - p), f, fl, 3), 3);
		memset(&r, 0, sizeof r);
		assert_true(snap_copy_unescape(f[0], fl[0], &v[0]));
		r.a_null = !snap_copy_unescape(f[1], fl[1], &v[1]);
		r.t_null = !snap_copy_unescape(f[2], fl[2], &v[2]);
		snprintf(r.key, sizeof r.key, "%s", strbuf_str(&v[0]));
		snprintf(r.a, sizeof r.a, "%s", strbuf_str(&v[1]));
		snprintf(r.t, sizeof r.t, "%s", strbuf_str(&v[2]));
		upsert_row(&s->target, &r);
		for (int i = 0; i < 3; i++)
			strbuf_free(&v[i]);
		seen++;
		p = nl + 1;
	}
	assert_int_equal(seen, nrows);
}

static void
close_window(scenario *s)
{
	strbuf merged = STRBUF_INIT;
	tm_error err;
	long n;

	assert_non_null(s->window);
	assert_non_null(s->chunk);
	n = snap_window_merge(s->window, s->chunk, &merged, &err);
	assert_true(n >= 0);
	load_merged(s, &merged, n);
	strbuf_free(&merged);
	snap_window_free(s->window);
	snap_chunk_free(s->chunk);
	s->window = NULL;
	s->chunk = NULL;
}

static void
step(scenario *s, char **tok, int ntok)
{
	row r;

	if (strcmp(tok[0], "row") == 0) {
		parse_row(tok, ntok, &r);
		upsert_row(&s->source, &r);
	} else if (strcmp(tok[0], "insert") == 0 || strcmp(tok[0], "update") == 0) {
		parse_row(tok, ntok, &r);
		upsert_row(&s->source, &r);
		upsert_row(&s->target, &r);
		note_whole(s, r.key);
	} else if (strcmp(tok[0], "partial") == 0) {
		parse_row(tok, ntok, &r);
		apply_partial(s, &r);
	} else if (strcmp(tok[0], "delete") == 0) {
		delete_row(&s->source, tok[1]);
		delete_row(&s->target, tok[1]);
		note_whole(s, tok[1]);
	} else if (strcmp(tok[0], "truncate") == 0) {
		memset(&s->source, 0, sizeof s->source);
		memset(&s->target, 0, sizeof s->target);
		if (s->window)
			snap_window_note_truncate(s->window);
	} else if (strcmp(tok[0], "low") == 0)
		s->window = snap_window_new(1);
	else if (strcmp(tok[0], "read") == 0)
		s->chunk = read_chunk(s);
	else if (strcmp(tok[0], "high") == 0)
		close_window(s);
	else if (strcmp(tok[0], "expect") == 0)
		parse_row(tok, ntok, &s->expect[s->expects++]);
	else
		fail_msg("unknown step \"%s\"", tok[0]);
}

static void
assert_rows_equal(const row *x, const row *y, const char *what)
{
	if (strcmp(x->a, y->a) != 0 || strcmp(x->t, y->t) != 0 || x->a_null != y->a_null ||
	    x->t_null != y->t_null)
		fail_msg("%s: key %s differs: (%s, %s) vs (%s, %s)", what, x->key, x->a, x->t, y->a,
		         y->t);
}

static void
check_result(scenario *s, const char *name)
{
	for (int i = 0; i < MAXROWS; i++) {
		const row *src = &s->source.rows[i];
		const row *tgt = &s->target.rows[i];

		if (src->used) {
			row *t = find_row(&s->target, src->key);

			if (t == NULL)
				fail_msg("%s: key %s is missing on the target", name, src->key);
			assert_rows_equal(src, t, name);
		}
		if (tgt->used && find_row(&s->source, tgt->key) == NULL)
			fail_msg("%s: key %s is on the target but not on the source (resurrected)", name,
			         tgt->key);
	}
	for (int i = 0; i < s->expects; i++) {
		row *t = find_row(&s->target, s->expect[i].key);

		if (t == NULL)
			fail_msg("%s: expected key %s is missing", name, s->expect[i].key);
		assert_rows_equal(&s->expect[i], t, name);
	}
}

static void
run_file(const char *path, const char *name)
{
	scenario *s = calloc(1, sizeof *s);
	FILE *f = fopen(path, "r");
	char line[512];

	assert_non_null(f);
	while (fgets(line, sizeof line, f) != NULL) {
		char *tok[8];
		int ntok = 0;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		for (char *t = strtok(line, " "); t && ntok < 8; t = strtok(NULL, " "))
			tok[ntok++] = t;
		step(s, tok, ntok);
	}
	fclose(f);
	assert_null(s->window);
	check_result(s, name);
	free(s);
}

static void
test_sequences(void **state)
{
	const char *dir = FIXTURES_DIR "/snap_window";
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	(void) state;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[1024];
		size_t len = strlen(e->d_name);

		if (len < 5 || strcmp(e->d_name + len - 4, ".seq") != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		run_file(path, e->d_name);
		n++;
	}
	closedir(d);
	assert_true(n >= 15);
}

/* Without the rule, between_after_read would resurrect stale values: make
 * sure the model notices (the test can fail). */
static void
test_model_detects_stale(void **state)
{
	scenario *s = calloc(1, sizeof *s);
	char *steps[][4] = {{"row", "1", "a", "t"}, {"low"}, {"read"}, {"update", "1", "b", "t"}};
	strbuf merged = STRBUF_INIT;
	tm_error err;

	(void) state;
	step(s, steps[0], 4);
	step(s, steps[1], 1);
	step(s, steps[2], 1);
	step(s, steps[3], 4);
	/* merge with an empty window instead of the real one: the chunk's stale
	 * row comes back */
	{
		snap_window *empty = snap_window_new(1);
		long n = snap_window_merge(empty, s->chunk, &merged, &err);

		assert_int_equal(n, 1);
		load_merged(s, &merged, n);
		snap_window_free(empty);
	}
	assert_string_equal(find_row(&s->target, "1")->a, "a");
	assert_string_equal(find_row(&s->source, "1")->a, "b");
	strbuf_free(&merged);
	snap_window_free(s->window);
	snap_chunk_free(s->chunk);
	free(s);
}

static void
test_copy_unescape(void **state)
{
	strbuf sb = STRBUF_INIT;
	const char *esc = "a\\tb\\nc\\\\d\\101\\x41\\r";

	(void) state;
	assert_true(snap_copy_unescape(esc, strlen(esc), &sb));
	assert_string_equal(strbuf_str(&sb), "a\tb\nc\\dAA\r");
	assert_false(snap_copy_unescape("\\N", 2, &sb));
	strbuf_free(&sb);
}

static void
test_chunk_malformed(void **state)
{
	snap_chunk *c = snap_chunk_new(3, colnames, 1, key_idx);
	tm_error err;
	char **key;

	(void) state;
	assert_int_equal(snap_chunk_add(c, "1\ta\tb\n", 6, &err), 0);
	assert_int_equal(snap_chunk_add(c, "1\ta\n", 4, &err), -1);
	assert_non_null(strstr(err.msg, "columns"));
	assert_int_equal(snap_chunk_add(c, "2\ta\tb", 5, &err), -1);
	assert_int_equal(snap_chunk_add(c, "\\N\ta\tb\n", 7, &err), 0);
	assert_int_equal(snap_chunk_row_key(c, 0, &key, &err), 0);
	assert_string_equal(key[0], "1");
	free(key[0]);
	free(key);
	assert_int_equal(snap_chunk_row_key(c, 1, &key, &err), -1);
	assert_int_equal(snap_chunk_row_key(c, 7, &key, &err), -1);
	snap_chunk_free(c);
}

/* Composite keys: values that would collide if simply concatenated. */
static void
test_composite_key(void **state)
{
	const char *names[] = {"k1", "k2", "v"};
	const int kidx[] = {0, 1};
	snap_chunk *c = snap_chunk_new(3, names, 2, kidx);
	snap_window *w = snap_window_new(2);
	const char *k[] = {"ab", "c"};
	size_t kl[] = {2, 1};
	strbuf out = STRBUF_INIT;
	tm_error err;

	(void) state;
	assert_int_equal(snap_chunk_add(c, "a\tbc\t1\nab\tc\t2\n", 14, &err), 0);
	snap_window_note_row(w, k, kl);
	assert_int_equal(snap_window_merge(w, c, &out, &err), 1);
	assert_string_equal(strbuf_str(&out), "a\tbc\t1\n");
	strbuf_free(&out);
	snap_window_free(w);
	snap_chunk_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequences),
		cmocka_unit_test(test_model_detects_stale),
		cmocka_unit_test(test_copy_unescape),
		cmocka_unit_test(test_chunk_malformed),
		cmocka_unit_test(test_composite_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
