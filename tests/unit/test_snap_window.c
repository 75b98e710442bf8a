/*
 * Unit tests of the chunk-window rule (src/merge/snap_window.c): the scenarios
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

#include <arpa/inet.h>

#include "snap_window.h"

/* Each scenario runs with text chunks and again with binary chunks. */
static snap_chunk_format format;

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
	if (format == SNAP_CHUNK_BINARY) {
		uint32_t l = htonl(is_null ? 0xFFFFFFFFu : (uint32_t) strlen(v));

		strbuf_appendn(sb, (const char *) &l, 4);
		if (!is_null)
			strbuf_append(sb, v);
	} else if (is_null)
		strbuf_append(sb, "\\N");
	else
		strbuf_append_copy_text(sb, v, strlen(v));
}

static void
append_row(strbuf *sb, const row *r)
{
	if (format == SNAP_CHUNK_BINARY) {
		uint16_t n = htons(4); /* k::text, then k, a, t */

		strbuf_appendn(sb, (const char *) &n, 2);
		append_field(sb, r->key, false);
		append_field(sb, r->key, false);
		append_field(sb, r->a, r->a_null);
		append_field(sb, r->t, r->t_null);
		return;
	}
	append_field(sb, r->key, false);
	strbuf_appendc(sb, '\t');
	append_field(sb, r->a, r->a_null);
	strbuf_appendc(sb, '\t');
	append_field(sb, r->t, r->t_null);
	strbuf_appendc(sb, '\n');
}

/* The chunk as COPY TO STDOUT would write the source at this instant, fed
 * in pieces of a few bytes to exercise the reassembly of rows. */
static snap_chunk *
read_chunk(scenario *s)
{
	snap_chunk *c = snap_chunk_new(format, 3, colnames, 1, key_idx);
	strbuf sb = STRBUF_INIT;
	tm_error err;

	snap_chunk_copy_header(format, &sb);
	for (int i = 0; i < MAXROWS; i++)
		if (s->source.rows[i].used)
			append_row(&sb, &s->source.rows[i]);
	snap_chunk_copy_trailer(format, &sb);
	if (format == SNAP_CHUNK_BINARY) {
		for (size_t off = 0; off < sb.len; off += 7)
			assert_int_equal(snap_chunk_add(c, sb.data + off, sb.len - off < 7 ? sb.len - off : 7,
			                                &err), 0);
	} else
		assert_int_equal(snap_chunk_add(c, strbuf_str(&sb), sb.len, &err), 0);
	assert_int_equal(snap_chunk_finish(c, &err), 0);
	strbuf_free(&sb);
	return c;
}

static void
set_value(char *dst, size_t size, bool *is_null, const strbuf *v, bool null)
{
	*is_null = null;
	snprintf(dst, size, "%s", null ? "" : strbuf_str(v));
}

/* One binary tuple of the merged rows (k, a, t): its size. */
static size_t
parse_binary_row(const char *p, row *r)
{
	size_t off = 2;
	strbuf v = STRBUF_INIT;

	{
		uint16_t n;

		memcpy(&n, p, 2);
		assert_int_equal(ntohs(n), 3);
	}
	for (int i = 0; i < 3; i++) {
		int32_t l;

		memcpy(&l, p + off, 4);
		l = (int32_t) ntohl((uint32_t) l);
		off += 4;
		strbuf_reset(&v);
		if (l >= 0)
			strbuf_appendn(&v, p + off, (size_t) l);
		if (i == 0)
			snprintf(r->key, sizeof r->key, "%s", strbuf_str(&v));
		else if (i == 1)
			set_value(r->a, sizeof r->a, &r->a_null, &v, l < 0);
		else
			set_value(r->t, sizeof r->t, &r->t_null, &v, l < 0);
		off += l > 0 ? (size_t) l : 0;
	}
	strbuf_free(&v);
	return off;
}

static size_t
parse_text_row(const char *p, row *r)
{
	const char *nl = strchr(p, '\n');
	const char *f[3];
	size_t fl[3];
	strbuf v[3] = {STRBUF_INIT, STRBUF_INIT, STRBUF_INIT};
	bool null[3];

	assert_non_null(nl);
	assert_int_equal(snap_chunk_text_fields(p, (size_t) (nl - p), f, fl, 3), 3);
	for (int i = 0; i < 3; i++)
		null[i] = !snap_chunk_text_unescape(f[i], fl[i], &v[i]);
	assert_false(null[0]);
	snprintf(r->key, sizeof r->key, "%s", strbuf_str(&v[0]));
	set_value(r->a, sizeof r->a, &r->a_null, &v[1], null[1]);
	set_value(r->t, sizeof r->t, &r->t_null, &v[2], null[2]);
	for (int i = 0; i < 3; i++)
		strbuf_free(&v[i]);
	return (size_t) (nl - p) + 1;
}

/* Upserts the merged rows into the target model. */
static void
load_merged(scenario *s, const strbuf *merged, long nrows)
{
	size_t off = 0;
	long seen = 0;

	while (off < merged->len) {
		row r;

		memset(&r, 0, sizeof r);
		off += format == SNAP_CHUNK_BINARY ? parse_binary_row(merged->data + off, &r)
		                                   : parse_text_row(merged->data + off, &r);
		upsert_row(&s->target, &r);
		seen++;
	}
	assert_int_equal(seen, nrows);
}

/* UPDATE ... SET <sent columns> WHERE k = ...: only an existing row. */
static void
apply_overlays(scenario *s, const snap_overlay *ov, int n)
{
	for (int i = 0; i < n; i++) {
		char key[32];
		row *t;

		snprintf(key, sizeof key, "%.*s", (int) ov[i].key_len[0], ov[i].key[0]);
		t = find_row(&s->target, key);
		for (int j = 0; t != NULL && j < ov[i].n; j++) {
			bool null = ov[i].values[j] == NULL;
			char *dst = strcmp(ov[i].names[j], "a") == 0 ? t->a : t->t;

			snprintf(dst, sizeof t->a, "%.*s", null ? 0 : (int) ov[i].lens[j],
			         null ? "" : ov[i].values[j]);
			if (strcmp(ov[i].names[j], "a") == 0)
				t->a_null = null;
			else
				t->t_null = null;
		}
	}
}

static void
close_window(scenario *s)
{
	strbuf merged = STRBUF_INIT;
	snap_overlay *ov;
	int nov;
	long n;

	assert_non_null(s->window);
	assert_non_null(s->chunk);
	n = snap_window_merge(s->window, s->chunk, &merged, &ov, &nov);
	assert_true(n >= 0);
	load_merged(s, &merged, n);
	apply_overlays(s, ov, nov);
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
		format = SNAP_CHUNK_TEXT;
		run_file(path, e->d_name);
		format = SNAP_CHUNK_BINARY;
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

	(void) state;
	step(s, steps[0], 4);
	step(s, steps[1], 1);
	step(s, steps[2], 1);
	step(s, steps[3], 4);
	/* merge with an empty window instead of the real one: the chunk's stale
	 * row comes back */
	{
		snap_window *empty = snap_window_new(1);
		snap_overlay *ov;
		int nov;
		long n = snap_window_merge(empty, s->chunk, &merged, &ov, &nov);

		assert_int_equal(n, 1);
		assert_int_equal(nov, 0);
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

/* Composite keys: values that would collide if simply concatenated. */
static void
test_composite_key(void **state)
{
	const char *names[] = {"k1", "k2", "v"};
	const int kidx[] = {0, 1};
	snap_chunk *c = snap_chunk_new(SNAP_CHUNK_TEXT, 3, names, 2, kidx);
	snap_window *w = snap_window_new(2);
	const char *k[] = {"ab", "c"};
	size_t kl[] = {2, 1};
	strbuf out = STRBUF_INIT;
	snap_overlay *ov;
	int nov;
	tm_error err;

	(void) state;
	assert_int_equal(snap_chunk_add(c, "a\tbc\t1\nab\tc\t2\n", 14, &err), 0);
	snap_window_note_row(w, k, kl);
	assert_int_equal(snap_window_merge(w, c, &out, &ov, &nov), 1);
	assert_string_equal(strbuf_str(&out), "a\tbc\t1\n");
	strbuf_free(&out);
	snap_window_free(w);
	snap_chunk_free(c);
}

/* The keys the window saw, as COPY text of the key columns. */
static void
test_keys_copy(void **state)
{
	snap_window *w = snap_window_new(2);
	const char *k1[] = {"tab\there", "7"};
	size_t l1[] = {8, 1};
	strbuf out = STRBUF_INIT;

	(void) state;
	snap_window_note_row(w, k1, l1);
	snap_window_note_row(w, k1, l1);
	assert_int_equal(snap_window_keys_copy(w, &out), 1);
	assert_string_equal(strbuf_str(&out), "tab\\there\t7\n");
	assert_int_equal(snap_window_changes(w), 2);
	strbuf_free(&out);
	snap_window_free(w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequences),
		cmocka_unit_test(test_model_detects_stale),
		cmocka_unit_test(test_composite_key),
		cmocka_unit_test(test_keys_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
