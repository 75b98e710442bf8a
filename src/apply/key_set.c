#include "key_set.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* A cleared set keeps a table of at most this many slots. */
#define KEY_SET_KEEP 65536

uint64_t
key_set_hash(int table, const char *key, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	/* the table's number, byte by byte, then the key's bytes */
	for (int i = 0; i < 4; i++)
		h = (h ^ (((uint32_t) table >> (8 * i)) & 0xff)) * 1099511628211ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char) key[i]) * 1099511628211ULL;
	/* the bits mixed so that the low ones, the slot, depend on all */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h == 0 ? 1 : h;
}

static void
put(uint64_t *slots, size_t cap, uint64_t hash)
{
	size_t i = (size_t) hash & (cap - 1);

	while (slots[i] != 0 && slots[i] != hash)
		i = (i + 1) & (cap - 1);
	slots[i] = hash;
}

static void
grow(key_set *ks)
{
	size_t cap = ks->cap == 0 ? 64 : ks->cap * 2;
	uint64_t *slots = xcalloc(cap, sizeof *slots);

	for (size_t i = 0; i < ks->cap; i++)
		if (ks->slots[i] != 0)
			put(slots, cap, ks->slots[i]);
	free(ks->slots);
	ks->slots = slots;
	ks->cap = cap;
}

void
key_set_add(key_set *ks, uint64_t hash)
{
	if (key_set_has(ks, hash))
		return;
	if ((ks->n + 1) * 2 > ks->cap) /* at most half full */
		grow(ks);
	put(ks->slots, ks->cap, hash);
	ks->n++;
}

bool
key_set_has(const key_set *ks, uint64_t hash)
{
	if (ks->cap == 0)
		return false;
	for (size_t i = (size_t) hash & (ks->cap - 1); ks->slots[i] != 0; i = (i + 1) & (ks->cap - 1))
		if (ks->slots[i] == hash)
			return true;
	return false;
}

void
key_set_clear(key_set *ks)
{
	if (ks->cap > KEY_SET_KEEP) {
		key_set_free(ks);
		return;
	}
	if (ks->cap > 0)
		memset(ks->slots, 0, ks->cap * sizeof *ks->slots);
	ks->n = 0;
}

void
key_set_free(key_set *ks)
{
	free(ks->slots);
	ks->slots = NULL;
	ks->cap = ks->n = 0;
}
