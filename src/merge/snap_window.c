#include "snap_window.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "codec.h"

typedef struct change {
	struct change *next;
	const char *name;    /* arena */
	const char *value;   /* arena; NULL: SQL NULL */
	size_t len;
} change;

typedef struct entry {
	const char *key;     /* arena: encoded key */
	size_t keylen;
	uint64_t hash;
	bool whole;          /* a whole-row change: the chunk row is dropped */
	change *changes;     /* partial updates, newest first */
} entry;

struct snap_window {
	int nkeys;
	arena mem;
	entry *slots;        /* owned; open addressing */
	size_t nslots;
	size_t used;
	bool truncated;
	long changes;
	snap_overlay *overlays; /* owned: built by merge */
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
	free(w->overlays);
	free(w);
}

static entry *
lookup(const snap_window *w, const char *key, size_t len, uint64_t h)
{
	for (size_t i = h % w->nslots;; i = (i + 1) % w->nslots) {
		entry *e = &w->slots[i];

		if (e->key == NULL)
			return e;
		if (e->hash == h && codec_key_equal(e->key, e->keylen, key, len))
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
	codec_key_encode(&sb, w->nkeys, key, key_len);
	h = codec_key_hash(strbuf_str(&sb), sb.len);
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
		change *o = arena_alloc(&w->mem, sizeof *o);

		o->name = arena_strdup(&w->mem, names[i]);
		o->value = values[i] ? arena_strndup(&w->mem, values[i], value_len[i]) : NULL;
		o->len = values[i] ? value_len[i] : 0;
		o->next = e->changes;
		e->changes = o;
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

/* The newest value of each column an entry's partial updates sent. */
static void
build_overlay(snap_window *w, const entry *e, snap_overlay *o)
{
	int n = 0;
	const char **key = arena_alloc(&w->mem, sizeof(char *) * (size_t) w->nkeys);
	size_t *klen = arena_alloc(&w->mem, sizeof(size_t) * (size_t) w->nkeys);

	for (const change *c = e->changes; c != NULL; c = c->next)
		n++;
	o->names = arena_alloc(&w->mem, sizeof(char *) * (size_t) n);
	o->values = arena_alloc(&w->mem, sizeof(char *) * (size_t) n);
	o->lens = arena_alloc(&w->mem, sizeof(size_t) * (size_t) n);
	o->n = 0;
	for (const change *c = e->changes; c != NULL; c = c->next) {
		bool seen = false;

		for (int i = 0; i < o->n && !seen; i++)
			seen = strcmp(o->names[i], c->name) == 0;
		if (seen)
			continue; /* an older value of a column already set */
		o->names[o->n] = c->name;
		o->values[o->n] = c->value;
		((size_t *) o->lens)[o->n++] = c->len;
	}
	for (int k = 0; k < w->nkeys; k++)
		codec_key_part(e->key, e->keylen, k, &key[k], &klen[k]);
	o->key = key;
	o->key_len = klen;
}

/* The window's entry for a chunk row's key, or NULL when it has none. */
static const entry *
row_entry(const snap_window *w, const snap_chunk *c, int r)
{
	size_t klen;
	const char *key = snap_chunk_row_key(c, r, &klen);
	const entry *e = w->used > 0 ? lookup(w, key, klen, codec_key_hash(key, klen)) : NULL;

	return e != NULL && e->key != NULL ? e : NULL;
}

long
snap_window_merge(snap_window *w, const snap_chunk *c, strbuf *out, snap_overlay **overlays,
                  int *noverlays)
{
	long kept = 0;
	int nov = 0;

	free(w->overlays);
	w->overlays = xcalloc(w->used, sizeof(snap_overlay));
	for (int r = 0; r < c->nrows && !w->truncated; r++) {
		size_t rlen;
		const char *row = snap_chunk_row(c, r, &rlen);
		const entry *e = row_entry(w, c, r);

		if (e != NULL && e->whole)
			continue;
		strbuf_appendn(out, row, rlen);
		kept++;
		if (e != NULL && e->changes != NULL)
			build_overlay(w, e, &w->overlays[nov++]);
	}
	*overlays = w->overlays;
	*noverlays = nov;
	return kept;
}

/* One COPY text line of an encoded key's values. */
static void
key_copy_line(strbuf *out, const char *key, size_t keylen, int nkeys)
{
	for (int k = 0; k < nkeys; k++) {
		const char *v;
		size_t vl;

		if (!codec_key_part(key, keylen, k, &v, &vl))
			break;
		if (k > 0)
			strbuf_appendc(out, '\t');
		strbuf_append_copy_text(out, v, vl);
	}
	strbuf_appendc(out, '\n');
}

long
snap_window_keys_copy(const snap_window *w, strbuf *out)
{
	long n = 0;

	for (size_t i = 0; i < w->nslots; i++) {
		const entry *e = &w->slots[i];

		if (e->key == NULL)
			continue;
		key_copy_line(out, e->key, e->keylen, w->nkeys);
		n++;
	}
	return n;
}

long
snap_window_kept_keys_copy(const snap_window *w, const snap_chunk *c, strbuf *out)
{
	long n = 0;

	for (int r = 0; r < c->nrows && !w->truncated; r++) {
		size_t klen;
		const char *key = snap_chunk_row_key(c, r, &klen);
		const entry *e = row_entry(w, c, r);

		if (e != NULL && e->whole)
			continue;
		key_copy_line(out, key, klen, c->nkeys);
		n++;
	}
	return n;
}
