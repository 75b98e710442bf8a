#include "snap_window.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

/* ---- chunks ---- */

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (p == NULL)
		abort();
	return p;
}

snap_chunk *
snap_chunk_new(int ncols, const char *const *colnames, int nkeys, const int *key_idx)
{
	snap_chunk *c = xcalloc(1, sizeof *c);

	c->ncols = ncols;
	c->colnames = xcalloc((size_t) ncols, sizeof(char *));
	for (int i = 0; i < ncols; i++)
		if ((c->colnames[i] = strdup(colnames[i])) == NULL)
			abort();
	c->nkeys = nkeys;
	c->key_idx = xcalloc((size_t) nkeys, sizeof(int));
	memcpy(c->key_idx, key_idx, sizeof(int) * (size_t) nkeys);
	strbuf_init(&c->data);
	return c;
}

void
snap_chunk_free(snap_chunk *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < c->ncols; i++)
		free(c->colnames[i]);
	free(c->colnames);
	free(c->key_idx);
	free(c->line_end);
	strbuf_free(&c->data);
	free(c);
}

static size_t
row_start(const snap_chunk *c, int row)
{
	return row == 0 ? 0 : c->line_end[row - 1];
}

int
snap_copy_fields(const char *line, size_t len, const char **out, size_t *out_len, int max)
{
	int n = 0;
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && line[i] != '\t')
			continue;
		if (n == max)
			return -1;
		out[n] = line + start;
		out_len[n++] = i - start;
		start = i + 1;
	}
	return n;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One backslash escape at f[i] (f[i] == '\\'); appends its byte and
 * returns how many input bytes it used. */
static size_t
unescape_one(const char *f, size_t len, size_t i, strbuf *out)
{
	char c = i + 1 < len ? f[i + 1] : '\\';

	switch (c) {
	case 'n': strbuf_appendc(out, '\n'); return 2;
	case 't': strbuf_appendc(out, '\t'); return 2;
	case 'r': strbuf_appendc(out, '\r'); return 2;
	case 'b': strbuf_appendc(out, '\b'); return 2;
	case 'f': strbuf_appendc(out, '\f'); return 2;
	case 'v': strbuf_appendc(out, '\v'); return 2;
	case 'x':
		if (i + 2 < len && hexval(f[i + 2]) >= 0) {
			int v = hexval(f[i + 2]);
			size_t used = 3;

			if (i + 3 < len && hexval(f[i + 3]) >= 0) {
				v = v * 16 + hexval(f[i + 3]);
				used = 4;
			}
			strbuf_appendc(out, (char) v);
			return used;
		}
		strbuf_appendc(out, 'x');
		return 2;
	default:
		if (c >= '0' && c <= '7') {
			int v = 0;
			size_t used = 1;

			while (used <= 3 && i + used < len && f[i + used] >= '0' && f[i + used] <= '7')
				v = v * 8 + (f[i + used++] - '0');
			strbuf_appendc(out, (char) v);
			return used;
		}
		strbuf_appendc(out, c);
		return 2;
	}
}

bool
snap_copy_unescape(const char *f, size_t len, strbuf *out)
{
	if (len == 2 && f[0] == '\\' && f[1] == 'N')
		return false;
	for (size_t i = 0; i < len;) {
		if (f[i] != '\\') {
			size_t j = i;

			while (j < len && f[j] != '\\')
				j++;
			strbuf_appendn(out, f + i, j - i);
			i = j;
		} else
			i += unescape_one(f, len, i, out);
	}
	return true;
}

/* Counts a line's fields: one more than its tab characters. */
static int
count_fields(const char *line, size_t len)
{
	int n = 1;

	for (const char *p = line; (p = memchr(p, '\t', len - (size_t) (p - line))) != NULL; p++)
		n++;
	return n;
}

int
snap_chunk_add(snap_chunk *c, const char *text, size_t len, tm_error *err)
{
	size_t start = 0;

	strbuf_reserve(&c->data, len);
	while (start < len) {
		const char *nl = memchr(text + start, '\n', len - start);
		size_t end;

		if (nl == NULL)
			return tm_error_set(err, "snapshot chunk: a row does not end with a newline");
		end = (size_t) (nl - text);
		if (count_fields(text + start, end - start) != c->ncols)
			return tm_error_set(err, "snapshot chunk: row %d does not have %d columns",
			                    c->nrows + 1, c->ncols);
		strbuf_appendn(&c->data, text + start, end - start + 1);
		if (c->nrows == c->cap_rows) {
			c->cap_rows = c->cap_rows ? c->cap_rows * 2 : 1024;
			c->line_end = realloc(c->line_end, sizeof(size_t) * (size_t) c->cap_rows);
			if (c->line_end == NULL)
				abort();
		}
		c->line_end[c->nrows++] = c->data.len;
		start = end + 1;
	}
	return 0;
}

/* Splits a stored row into its fields (without the newline). */
static int
row_fields(const snap_chunk *c, int row, const char **f, size_t *flen)
{
	size_t s = row_start(c, row);
	size_t e = c->line_end[row] - 1;

	return snap_copy_fields(c->data.data + s, e - s, f, flen, c->ncols);
}

int
snap_chunk_row_key(const snap_chunk *c, int row, char ***vals, tm_error *err)
{
	const char **f = xcalloc((size_t) c->ncols, sizeof(char *));
	size_t *flen = xcalloc((size_t) c->ncols, sizeof(size_t));
	char **out = xcalloc((size_t) c->nkeys + 1, sizeof(char *));
	int rc = 0;

	if (row < 0 || row >= c->nrows || row_fields(c, row, f, flen) != c->ncols)
		rc = tm_error_set(err, "snapshot chunk: no row %d", row);
	for (int k = 0; rc == 0 && k < c->nkeys; k++) {
		strbuf sb = STRBUF_INIT;

		if (!snap_copy_unescape(f[c->key_idx[k]], flen[c->key_idx[k]], &sb)) {
			strbuf_free(&sb);
			rc = tm_error_set(err, "snapshot chunk: row %d has a NULL key", row);
		} else
			out[k] = strbuf_steal(&sb);
	}
	free(f);
	free(flen);
	if (rc != 0) {
		for (int k = 0; k < c->nkeys; k++)
			free(out[k]);
		free(out);
		return rc;
	}
	*vals = out;
	return 0;
}

/* ---- the window ---- */

typedef struct overlay {
	struct overlay *next;
	const char *name;    /* arena */
	const char *value;   /* arena; NULL: SQL NULL */
	size_t len;
} overlay;

typedef struct entry {
	const char *key;     /* arena: encoded key */
	size_t keylen;
	uint64_t hash;
	bool whole;          /* a whole-row change: the chunk row is dropped */
	overlay *overlays;   /* newest first */
} entry;

struct snap_window {
	int nkeys;
	arena mem;
	entry *slots;        /* owned; open addressing */
	size_t nslots;
	size_t used;
	bool truncated;
	long changes;
};

snap_window *
snap_window_new(int nkeys)
{
	snap_window *w = xcalloc(1, sizeof *w);

	w->nkeys = nkeys;
	arena_init(&w->mem, 16 * 1024);
	w->nslots = 64;
	w->slots = xcalloc(w->nslots, sizeof(entry));
	return w;
}

void
snap_window_free(snap_window *w)
{
	if (w == NULL)
		return;
	arena_free(&w->mem);
	free(w->slots);
	free(w);
}

/* Key values as one byte string: each value's 4-byte length, then it. */
static void
encode_key(strbuf *sb, int n, const char *const *vals, const size_t *lens)
{
	for (int k = 0; k < n; k++) {
		uint32_t l = (uint32_t) lens[k];

		strbuf_appendn(sb, (const char *) &l, sizeof l);
		strbuf_appendn(sb, vals[k], lens[k]);
	}
}

static uint64_t
hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char) s[i]) * 1099511628211ULL;
	return h;
}

static entry *
lookup(const snap_window *w, const char *key, size_t len, uint64_t h)
{
	for (size_t i = h % w->nslots;; i = (i + 1) % w->nslots) {
		entry *e = &w->slots[i];

		if (e->key == NULL)
			return e;
		if (e->hash == h && e->keylen == len && memcmp(e->key, key, len) == 0)
			return e;
	}
}

static void
grow(snap_window *w)
{
	entry *old = w->slots;
	size_t n = w->nslots;

	w->nslots *= 2;
	w->slots = xcalloc(w->nslots, sizeof(entry));
	for (size_t i = 0; i < n; i++)
		if (old[i].key != NULL)
			*lookup(w, old[i].key, old[i].keylen, old[i].hash) = old[i];
	free(old);
}

static entry *
find_or_add(snap_window *w, const char *const *key, const size_t *key_len)
{
	strbuf sb = STRBUF_INIT;
	uint64_t h;
	entry *e;

	if ((w->used + 1) * 2 > w->nslots)
		grow(w);
	encode_key(&sb, w->nkeys, key, key_len);
	h = hash_bytes(strbuf_str(&sb), sb.len);
	e = lookup(w, strbuf_str(&sb), sb.len, h);
	if (e->key == NULL) {
		e->key = arena_strndup(&w->mem, strbuf_str(&sb), sb.len);
		e->keylen = sb.len;
		e->hash = h;
		w->used++;
	}
	strbuf_free(&sb);
	w->changes++;
	return e;
}

void
snap_window_note_row(snap_window *w, const char *const *key, const size_t *key_len)
{
	find_or_add(w, key, key_len)->whole = true;
}

void
snap_window_note_partial(snap_window *w, const char *const *key, const size_t *key_len, int n,
                         const char *const *names, const char *const *values,
                         const size_t *value_len)
{
	entry *e = find_or_add(w, key, key_len);

	for (int i = 0; i < n; i++) {
		overlay *o = arena_alloc(&w->mem, sizeof *o);

		o->name = arena_strdup(&w->mem, names[i]);
		o->value = values[i] ? arena_strndup(&w->mem, values[i], value_len[i]) : NULL;
		o->len = values[i] ? value_len[i] : 0;
		o->next = e->overlays;
		e->overlays = o;
	}
}

void
snap_window_note_truncate(snap_window *w)
{
	w->truncated = true;
	w->changes++;
}

long
snap_window_changes(const snap_window *w)
{
	return w->changes;
}

/* The newest overlay of a column, or NULL. */
static const overlay *
newest_overlay(const entry *e, const char *name)
{
	for (const overlay *o = e->overlays; o != NULL; o = o->next)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

static void
write_overlaid(const snap_chunk *c, const entry *e, const char **f, const size_t *flen,
               strbuf *out)
{
	for (int i = 0; i < c->ncols; i++) {
		const overlay *o = newest_overlay(e, c->colnames[i]);

		if (i > 0)
			strbuf_appendc(out, '\t');
		if (o == NULL)
			strbuf_appendn(out, f[i], flen[i]);
		else if (o->value == NULL)
			strbuf_append(out, "\\N");
		else
			strbuf_append_copy_text(out, o->value, o->len);
	}
	strbuf_appendc(out, '\n');
}

/* The entry of a chunk row's key, or NULL when the window never saw it. */
static const entry *
row_entry(const snap_window *w, const snap_chunk *c, const char **f, const size_t *flen,
          strbuf *scratch)
{
	strbuf keyval = STRBUF_INIT;

	strbuf_reset(scratch);
	for (int k = 0; k < c->nkeys; k++) {
		uint32_t l;

		strbuf_reset(&keyval);
		snap_copy_unescape(f[c->key_idx[k]], flen[c->key_idx[k]], &keyval);
		l = (uint32_t) keyval.len;
		strbuf_appendn(scratch, (const char *) &l, sizeof l);
		strbuf_appendn(scratch, strbuf_str(&keyval), keyval.len);
	}
	strbuf_free(&keyval);
	{
		const entry *e = lookup(w, strbuf_str(scratch), scratch->len,
		                        hash_bytes(strbuf_str(scratch), scratch->len));

		return e->key != NULL ? e : NULL;
	}
}

long
snap_window_merge(snap_window *w, const snap_chunk *c, strbuf *out, tm_error *err)
{
	const char **f = xcalloc((size_t) c->ncols, sizeof(char *));
	size_t *flen = xcalloc((size_t) c->ncols, sizeof(size_t));
	strbuf scratch = STRBUF_INIT;
	long kept = 0;

	if (c->nkeys != w->nkeys) {
		kept = tm_error_set(err, "snapshot chunk has %d key columns, the window %d", c->nkeys,
		                    w->nkeys);
		goto done;
	}
	if (w->used == 0 && !w->truncated) {
		strbuf_appendn(out, strbuf_str(&c->data), c->data.len);
		kept = c->nrows;
		goto done;
	}
	for (int r = 0; r < c->nrows && !w->truncated; r++) {
		const entry *e;

		if (row_fields(c, r, f, flen) != c->ncols) {
			kept = tm_error_set(err, "snapshot chunk: row %d is malformed", r);
			goto done;
		}
		e = w->used > 0 ? row_entry(w, c, f, flen, &scratch) : NULL;
		if (e == NULL)
			strbuf_appendn(out, c->data.data + row_start(c, r), c->line_end[r] - row_start(c, r));
		else if (e->whole)
			continue;
		else
			write_overlaid(c, e, f, flen, out);
		kept++;
	}
done:
	strbuf_free(&scratch);
	free(f);
	free(flen);
	return kept;
}

/* Decodes an encoded key back into its values and writes them as a line. */
static void
write_key_line(const snap_chunk *c, const entry *e, const char *suffix, strbuf *out)
{
	for (int i = 0; i < c->ncols; i++) {
		int k = -1;

		for (int j = 0; j < c->nkeys && k < 0; j++)
			if (c->key_idx[j] == i)
				k = j;
		if (i > 0)
			strbuf_appendc(out, '\t');
		if (k < 0) {
			strbuf_append(out, "\\N");
			continue;
		}
		{
			/* values are in key order: find the k-th */
			const char *q = e->key;
			uint32_t l = 0;

			for (int j = 0; j <= k; j++) {
				memcpy(&l, q, sizeof l);
				if (j < k)
					q += sizeof l + l;
			}
			strbuf_append_copy_text(out, q + sizeof l, l);
		}
	}
	strbuf_append(out, suffix);
	strbuf_appendc(out, '\n');
}

long
snap_window_keys_copy(const snap_window *w, const snap_chunk *c, const char *suffix, strbuf *out)
{
	long n = 0;

	for (size_t i = 0; i < w->nslots; i++)
		if (w->slots[i].key != NULL) {
			write_key_line(c, &w->slots[i], suffix, out);
			n++;
		}
	return n;
}
