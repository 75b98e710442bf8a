/*
 * net_change.c: the net effect of a group's row changes (net_change.h).
 * A chained hash table of entries by (table, encoded key), and a doubly
 * linked list of them in the order of their last change.
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
};

net_set *
net_new(void)
{
	net_set *ns = xcalloc(1, sizeof *ns);

	ns->nbuckets = 1024;
	ns->buckets = xcalloc(ns->nbuckets, sizeof(net_entry *));
	return ns;
}

static void
entry_free_values(net_entry *e)
{
	for (int i = 0; e->values != NULL && i < e->ncols; i++)
		free(e->values[i]);
	free(e->values);
	free(e->lens);
	free(e->present);
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
		free(e->key);
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

static char *
copy_value(const char *v, size_t len)
{
	char *c;

	if (v == NULL)
		return NULL;
	c = xmalloc(len + 1);
	memcpy(c, v, len);
	c[len] = '\0';
	return c;
}

static bool
is_key_col(int nkeys, const int *key_idx, int col)
{
	for (int k = 0; k < nkeys; k++)
		if (key_idx[k] == col)
			return true;
	return false;
}

/* The entry's values become the change's (a row, a delete's keys, a
 * partial's columns sent). */
static void
set_values(net_set *ns, net_entry *e, net_kind kind, int nkeys, const int *key_idx,
           const char *const *values, const size_t *lens, const bool *present)
{
	ns->bytes -= e->bytes;
	entry_free_values(e);
	e->kind = kind;
	e->values = xcalloc((size_t) e->ncols + 1, sizeof(char *));
	e->lens = xcalloc((size_t) e->ncols + 1, sizeof(size_t));
	e->present = xcalloc((size_t) e->ncols + 1, sizeof(bool));
	e->bytes = sizeof *e + e->key_len + (size_t) e->ncols * (sizeof(char *) + sizeof(size_t) + 1);
	for (int i = 0; i < e->ncols; i++) {
		bool keep = kind == NET_DELETE ? is_key_col(nkeys, key_idx, i)
		                               : present == NULL || present[i];

		e->present[i] = keep;
		if (keep && values[i] != NULL) {
			e->values[i] = copy_value(values[i], lens[i]);
			e->lens[i] = lens[i];
			e->bytes += lens[i] + 1;
		}
	}
	ns->bytes += e->bytes;
}

/* Sets the columns sent onto the entry's (a partial onto a row or a
 * partial). */
static void
merge_values(net_set *ns, net_entry *e, const char *const *values, const size_t *lens,
             const bool *present)
{
	for (int i = 0; i < e->ncols; i++) {
		if (present != NULL && !present[i])
			continue;
		if (e->values[i] != NULL) {
			e->bytes -= e->lens[i] + 1;
			ns->bytes -= e->lens[i] + 1;
		}
		free(e->values[i]);
		e->values[i] = copy_value(values[i], lens[i]);
		e->lens[i] = values[i] != NULL ? lens[i] : 0;
		e->present[i] = true;
		if (values[i] != NULL) {
			e->bytes += lens[i] + 1;
			ns->bytes += lens[i] + 1;
		}
	}
}

static net_entry *
new_entry(net_set *ns, int table, int ncols, strbuf *key)
{
	net_entry *e = xcalloc(1, sizeof *e);
	size_t b;

	e->table = table;
	e->ncols = ncols;
	e->key_len = key->len;
	e->key = strbuf_steal(key);
	if (ns->count + 1 > (long) ns->nbuckets)
		grow(ns);
	b = bucket_of(ns, table, e->key, e->key_len);
	e->chain = ns->buckets[b];
	ns->buckets[b] = e;
	ns->count++;
	return e;
}

net_put_result
net_put(net_set *ns, int table, net_kind kind, int ncols, int nkeys, const int *key_idx,
        const char *const *values, const size_t *lens, const bool *present)
{
	const char **kv = xcalloc((size_t) nkeys + 1, sizeof(char *));
	size_t *kl = xcalloc((size_t) nkeys + 1, sizeof(size_t));
	strbuf key = STRBUF_INIT;
	net_entry *e;

	for (int k = 0; k < nkeys; k++) {
		kv[k] = values[key_idx[k]];
		kl[k] = lens[key_idx[k]];
	}
	codec_key_encode(&key, nkeys, kv, kl);
	free(kv);
	free(kl);
	e = find(ns, table, key.data, key.len);
	if (e != NULL && kind == NET_PARTIAL && e->kind == NET_DELETE) {
		strbuf_free(&key);
		return NET_CONFLICT;
	}
	ns->puts++;
	if (e == NULL)
		e = new_entry(ns, table, ncols, &key);
	else
		unlink_entry(ns, e);
	strbuf_free(&key);
	append_entry(ns, e);
	if (kind == NET_PARTIAL && e->values != NULL)
		merge_values(ns, e, values, lens, present); /* stays a row, or a partial */
	else
		set_values(ns, e, kind, nkeys, key_idx, values, lens, present);
	return NET_PUT_OK;
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
