/*
 * key_set.h: a set of row keys by 64-bit hash, for the parallel apply's
 * question "did a group still in flight touch this key?" (apply.h). Two
 * keys that hash alike count as the same: the answer may say yes for keys
 * that differ (the row then waits for that group, which costs time, never
 * correctness), never no for keys that are equal. Pure.
 *
 * Ownership: the set owns its table; free it with key_set_free.
 */
#ifndef TIDEMARK_KEY_SET_H
#define TIDEMARK_KEY_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct key_set {
	uint64_t *slots;   /* owned; 0 is an empty slot */
	size_t cap;        /* a power of two, or 0 */
	size_t n;
} key_set;

#define KEY_SET_INIT {NULL, 0, 0}

/* The hash of a table's key (the caller's table number, the encoded key
 * of codec.h); never 0. */
uint64_t key_set_hash(int table, const char *key, size_t len);
void key_set_add(key_set *ks, uint64_t hash);
bool key_set_has(const key_set *ks, uint64_t hash);
/* Empties the set, keeping its table (up to a bound) for reuse. */
void key_set_clear(key_set *ks);
void key_set_free(key_set *ks);

#endif
