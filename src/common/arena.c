#include "arena.h"
#include "xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
	arena_block *next;
	size_t size;
	size_t used;
	max_align_t data[]; /* size bytes */
};

void
arena_init(arena *a, size_t block_size)
{
	a->head = NULL;
	a->block_size = block_size < 1024 ? 1024 : block_size;
	a->used_total = 0;
}

static arena_block *
block_new(size_t size, arena_block *next)
{
	arena_block *b = xmalloc(sizeof(arena_block) + size);

	b->next = next;
	b->size = size;
	b->used = 0;
	return b;
}

void *
arena_alloc(arena *a, size_t size)
{
	size_t need = (size + 15) & ~(size_t) 15;
	arena_block *b = a->head;
	void *p;

	if (need < size)
		abort();
	if (b == NULL || b->size - b->used < need) {
		size_t bsize = need > a->block_size ? need : a->block_size;

		b = block_new(bsize, a->head);
		a->head = b;
	}
	p = (char *) b->data + b->used;
	b->used += need;
	a->used_total += need;
	return p;
}

void *
arena_zalloc(arena *a, size_t size)
{
	void *p = arena_alloc(a, size);

	memset(p, 0, size);
	return p;
}

char *
arena_strndup(arena *a, const char *s, size_t len)
{
	char *p = arena_alloc(a, len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *
arena_strdup(arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

void
arena_reset(arena *a)
{
	arena_block *b = a->head;
	arena_block *keep = NULL;

	/* Keep one ordinary-sized block; free oversized ones and the rest. */
	while (b != NULL) {
		arena_block *next = b->next;

		if (keep == NULL && b->size == a->block_size) {
			keep = b;
			keep->next = NULL;
			keep->used = 0;
		} else
			free(b);
		b = next;
	}
	a->head = keep;
	a->used_total = 0;
}

void
arena_free(arena *a)
{
	arena_block *b = a->head;

	while (b != NULL) {
		arena_block *next = b->next;

		free(b);
		b = next;
	}
	a->head = NULL;
	a->used_total = 0;
}
