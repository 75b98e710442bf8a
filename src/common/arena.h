/*
 * arena.h: a bump allocator for per-message scratch memory.
 *
 * Everything allocated from an arena is freed at once by arena_reset (kept
 * for reuse) or arena_free (returned to the system). The apply loop resets
 * its arena after each message, so memory use does not grow with the size
 * of a transaction. Allocation failure aborts: it is not a recoverable state
 * for a replicator and every caller would otherwise carry the same check.
 */
#ifndef TIDEMARK_ARENA_H
#define TIDEMARK_ARENA_H

#include <stddef.h>

typedef struct arena_block arena_block;

typedef struct arena {
	arena_block *head;   /* owned: the block being filled */
	size_t block_size;   /* size of ordinary blocks */
	size_t used_total;   /* bytes handed out since the last reset */
} arena;

void arena_init(arena *a, size_t block_size);
void *arena_alloc(arena *a, size_t size);        /* 16-byte aligned, uninitialised */
void *arena_zalloc(arena *a, size_t size);       /* zeroed */
char *arena_strndup(arena *a, const char *s, size_t len);
char *arena_strdup(arena *a, const char *s);
void arena_reset(arena *a);                      /* keeps the first block */
void arena_free(arena *a);

#endif
