/*
 * net_change.c: the net effect of a group's row changes (net_change.h).
 * A chained hash table of entries by (table, encoded key), and a doubly
 * linked list of them in the order of their last change.
 *
 * Memory: an entry and its encoded key are one allocation; its values are
 * another, one block (values, lens, present, then the values' bytes, each
 * NUL-terminated), replaced whole at each change put onto the entry. A
 * group of many small changes then costs two allocations per key and one
 * per change, not one per column.
 */
#include "net_change.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "strbuf.h"
#include "xalloc.h"

struct net_set {
	net_entry **buckets;  /* owned array; entries owned through the list */
	size_t nbuckets;      /* a power of two */
	long count;
	long puts;
	size_t bytes;
	net_entry *head, *tail;
	strbuf key;           /* the key being looked up (memory kept) */
};

net_set *
net_new(void)
{
	net_set *ns = xcalloc(1, sizeof *ns);

	ns->nbuckets = 1024;
	ns->buckets = xcalloc(ns->nbuckets, sizeof(net_entry *));
	return ns;
}

/* (values is the start of the values' block) */
static void
entry_free_values(net_entry *e)
{
	free(e->values);
	e->values = NULL;
	e->lens = NULL;
	e->present = NULL;
}

void
net_clear(net_set *ns)
{
	net_entry *e = ns->head;

	while (e != NULL) {
		net_entry *next = e->next;

		entry_free_values(e);
		free(e);
		e = next;
	}
	memset(ns->buckets, 0, ns->nbuckets * sizeof(net_entry *));
	ns->head = ns->tail = NULL;
	ns->count = 0;
	ns->puts = 0;
	ns->bytes = 0;
}

void
net_free(net_set *ns)
{
	if (ns == NULL)
		return;
	net_clear(ns);
	free(ns->buckets);
	strbuf_free(&ns->key);
	free(ns);
}

static size_t
bucket_of(const net_set *ns, int table, const char *key, size_t len)
{
	uint64_t h = codec_key_hash(key, len) ^ ((uint64_t) (unsigned) table * 0x9E3779B97F4A7C15ull);

	return (size_t) (h & (ns->nbuckets - 1));
}

static net_entry *
find(const net_set *ns, int table, const char *key, size_t len)
{
	for (net_entry *e = ns->buckets[bucket_of(ns, table, key, len)]; e != NULL; e = e->chain)
		if (e->table == table && codec_key_equal(e->key, e->key_len, key, len))
			return e;
	return NULL;
}

static void
grow(net_set *ns)
{
	size_t n = ns->nbuckets * 2;

	free(ns->buckets);
	ns->buckets = xcalloc(n, sizeof(net_entry *));
	ns->nbuckets = n;
	for (net_entry *e = ns->head; e != NULL; e = e->next) {
		size_t b = bucket_of(ns, e->table, e->key, e->key_len);

		e->chain = ns->buckets[b];
		ns->buckets[b] = e;
	}
}

static void
unlink_entry(net_set *ns, net_entry *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		ns->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	else
		ns->tail = e->prev;
	e->prev = e->next = NULL;
}

static void
append_entry(net_set *ns, net_entry *e)
{
	e->prev = ns->tail;
	if (ns->tail != NULL)
		ns->tail->next = e;
	else
		ns->head = e;
	ns->tail = e;
}

static bool
is_key_col(int nkeys, const int *key_idx, int col)
{
	for (int k = 0; k < nkeys; k++)
		if (key_idx[k] == col)
			return true;
	return false;
}

/* A new block for ncols values whose bytes take data_bytes (each value's
 * NUL included): the arrays zeroed, *data where the bytes go. */
static void
block_new(net_entry *e, size_t data_bytes, char **data)
{
	size_t n = (size_t) e->ncols + 1;
	size_t arrays = n * (sizeof(char *) + sizeof(size_t)) + n * sizeof(bool);
	char *b = xmalloc(arrays + data_bytes);

	memset(b, 0, arrays);
	e->values = (char **) (void *) b;
	e->lens = (size_t *) (void *) (b + n * sizeof(char *));
	e->present = (bool *) (b + n * (sizeof(char *) + sizeof(size_t)));
	*data = b + arrays;
}

/* Column i becomes v (len bytes; NULL: SQL NULL), copied to *data. */
static void
block_put(net_entry *e, int i, const char *v, size_t len, char **data)
{
	e->present[i] = true;
	if (v == NULL)
		return;
	memcpy(*data, v, len);
	(*data)[len] = '\0';
	e->values[i] = *data;
	e->lens[i] = len;
	*data += len + 1;
}

/* The entry's cost counted again from its new block, as net_bytes counts
 * it: the entry, its key, its columns' slots and its values' bytes. */
static void
recount(net_set *ns, net_entry *e)
{
	size_t b = sizeof *e + e->key_len + (size_t) e->ncols * (sizeof(char *) + sizeof(size_t) + 1);

	for (int i = 0; i < e->ncols; i++)
		if (e->values[i] != NULL)
			b += e->lens[i] + 1;
	ns->bytes = ns->bytes - e->bytes + b;
	e->bytes = b;
}

/* Column i of a change: whether the entry takes it (a row's every column,
 * a delete's keys, a partial's columns sent). */
static bool
taken(net_kind kind, int nkeys, const int *key_idx, const bool *present, int i)
{
	return kind == NET_DELETE ? is_key_col(nkeys, key_idx, i) : present == NULL || present[i];
}

/* The entry's values become the change's. */
static void
set_values(net_set *ns, net_entry *e, net_kind kind, int nkeys, const int *key_idx,
           const char *const *values, const size_t *lens, const bool *present)
{
	size_t data_bytes = 0;
	char *data;

	for (int i = 0; i < e->ncols; i++)
		if (taken(kind, nkeys, key_idx, present, i) && values[i] != NULL)
			data_bytes += lens[i] + 1;
	entry_free_values(e);
	e->kind = kind;
	block_new(e, data_bytes, &data);
	for (int i = 0; i < e->ncols; i++)
		if (taken(kind, nkeys, key_idx, present, i))
			block_put(e, i, values[i], lens[i], &data);
	recount(ns, e);
}

/* Sets the columns sent onto the entry's (a partial onto a row or a
 * partial): a new block of the entry's values with those replaced. */
static void
merge_values(net_set *ns, net_entry *e, const char *const *values, const size_t *lens,
             const bool *present)
{
	char **old = e->values;
	size_t *old_lens = e->lens;
	bool *old_present = e->present;
	size_t data_bytes = 0;
	char *data;

	for (int i = 0; i < e->ncols; i++) {
		bool sent = present == NULL || present[i];
		const char *v = sent ? values[i] : old[i];

		if (v != NULL)
			data_bytes += (sent ? lens[i] : old_lens[i]) + 1;
	}
	block_new(e, data_bytes, &data);
	for (int i = 0; i < e->ncols; i++) {
		if (present == NULL || present[i])
			block_put(e, i, values[i], lens[i], &data);
		else if (old_present[i])
			block_put(e, i, old[i], old_lens[i], &data);
	}
	free(old);
	recount(ns, e);
}

/* A new entry holding a copy of the key being looked up. */
static net_entry *
new_entry(net_set *ns, int table, int ncols)
{
	net_entry *e = xcalloc(1, sizeof *e + ns->key.len + 1);
	size_t b;

	e->table = table;
	e->ncols = ncols;
	e->key_len = ns->key.len;
	e->key = (char *) (e + 1);
	if (ns->key.len > 0)
		memcpy(e->key, ns->key.data, ns->key.len);
	if (ns->count + 1 > (long) ns->nbuckets)
		grow(ns);
	b = bucket_of(ns, table, e->key, e->key_len);
	e->chain = ns->buckets[b];
	ns->buckets[b] = e;
	ns->count++;
	return e;
}

/* The change's key encoded into ns->key. */
#define KEYS_ON_STACK 16
static void
encode_key(net_set *ns, int nkeys, const int *key_idx, const char *const *values,
           const size_t *lens)
{
	const char *kv_stack[KEYS_ON_STACK];
	size_t kl_stack[KEYS_ON_STACK];
	const char **kv = nkeys <= KEYS_ON_STACK ? kv_stack : xcalloc((size_t) nkeys, sizeof(char *));
	size_t *kl = nkeys <= KEYS_ON_STACK ? kl_stack : xcalloc((size_t) nkeys, sizeof(size_t));

	for (int k = 0; k < nkeys; k++) {
		kv[k] = values[key_idx[k]];
		kl[k] = lens[key_idx[k]];
	}
	strbuf_reset(&ns->key);
	codec_key_encode(&ns->key, nkeys, kv, kl);
	if (kv != kv_stack) {
		free(kv);
		free(kl);
	}
}

net_put_result
net_put(net_set *ns, int table, net_kind kind, int ncols, int nkeys, const int *key_idx,
        const char *const *values, const size_t *lens, const bool *present)
{
	net_entry *e;
	bool over_delete;

	encode_key(ns, nkeys, key_idx, values, lens);
	e = find(ns, table, ns->key.data, ns->key.len);
	if (e != NULL && kind == NET_PARTIAL && e->kind == NET_DELETE)
		return NET_CONFLICT;
	over_delete = e != NULL && kind == NET_ROW && e->kind == NET_DELETE;
	ns->puts++;
	if (e == NULL)
		e = new_entry(ns, table, ncols);
	else
		unlink_entry(ns, e);
	append_entry(ns, e);
	if (kind == NET_PARTIAL && e->values != NULL)
		merge_values(ns, e, values, lens, present); /* stays a row, or a partial */
	else
		set_values(ns, e, kind, nkeys, key_idx, values, lens, present);
	return over_delete ? NET_PUT_OVER_DELETE : NET_PUT_OK;
}

bool
net_deleted(net_set *ns, int table, int nkeys, const int *key_idx, const char *const *values,
            const size_t *lens)
{
	const net_entry *e;

	encode_key(ns, nkeys, key_idx, values, lens);
	e = find(ns, table, ns->key.data, ns->key.len);
	return e != NULL && e->kind == NET_DELETE;
}

long
net_count(const net_set *ns)
{
	return ns->count;
}

size_t
net_bytes(const net_set *ns)
{
	return ns->bytes;
}

long
net_puts(const net_set *ns)
{
	return ns->puts;
}

int
net_each(const net_set *ns, int (*fn)(void *ctx, const net_entry *e), void *ctx)
{
	for (const net_entry *e = ns->head; e != NULL; e = e->next) {
		int rc = fn(ctx, e);

		if (rc != 0)
			return rc;
	}
	return 0;
}
