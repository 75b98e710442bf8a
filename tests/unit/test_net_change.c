/*
 * test_net_change.c: a group's net changes per key: every order of row,
 * partial and delete, the order entries come out in, and generated
 * sequences checked against a model that applies each change in turn
 * (and the bytes the set says it holds against its entries).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net_change.h"

/* t (k, a, b) keyed by k */
static const int key_idx[] = {0};

static net_put_result
put_as(net_set *ns, net_kind kind, const char *k, const char *a, const char *b,
       const bool *present)
{
	const char *v[] = {k, a, b};
	size_t l[] = {k ? strlen(k) : 0, a ? strlen(a) : 0, b ? strlen(b) : 0};

	return net_put(ns, 1, kind, 3, 1, key_idx, v, l, present);
}

static void
put(net_set *ns, net_kind kind, const char *k, const char *a, const char *b, const bool *present)
{
	assert_int_equal(put_as(ns, kind, k, a, b, present), NET_PUT_OK);
}

/* "kind:k,a,b" per entry in order, '-' for a column not present, '~' for NULL */
static int
describe(void *ctx, const net_entry *e)
{
	char *out = ctx;
	size_t n = strlen(out);

	snprintf(out + n, 512 - n, "%s%c:", n ? " " : "",
	         e->kind == NET_ROW ? 'R' : e->kind == NET_PARTIAL ? 'P' : 'D');
	for (int i = 0; i < e->ncols; i++) {
		n = strlen(out);
		snprintf(out + n, 512 - n, "%s%s", i ? "," : "",
		         !e->present[i] ? "-" : e->values[i] ? e->values[i] : "~");
	}
	return 0;
}

static void
assert_entries(net_set *ns, const char *expected)
{
	char out[512] = "";

	net_each(ns, describe, out);
	assert_string_equal(out, expected);
}

static void
test_rules(void **state)
{
	static const bool only_b[] = {true, false, true};
	static const bool only_a[] = {true, true, false};
	net_set *ns = net_new();

	(void) state;
	put(ns, NET_ROW, "1", "a", "b", NULL);
	put(ns, NET_PARTIAL, "1", NULL, "b2", only_b); /* onto a row: a row */
	put(ns, NET_PARTIAL, "2", NULL, "x", only_b);   /* unknown row: a partial */
	put(ns, NET_PARTIAL, "2", "y", NULL, only_a);   /* both columns now */
	put(ns, NET_DELETE, "3", NULL, NULL, NULL);
	/* deleted then inserted: a row, said to have replaced a delete */
	assert_int_equal(put_as(ns, NET_ROW, "3", "back", NULL, NULL), NET_PUT_OVER_DELETE);
	assert_entries(ns, "R:1,a,b2 P:2,y,x R:3,back,~");
	put(ns, NET_DELETE, "1", "ignored", "ignored", NULL);
	assert_entries(ns, "P:2,y,x R:3,back,~ D:1,-,-"); /* the last change's order */
	{
		const char *v[] = {"1", NULL, "z"};
		size_t l[] = {1, 0, 1};

		assert_int_equal(net_put(ns, 1, NET_PARTIAL, 3, 1, key_idx, v, l, only_b),
		                 NET_CONFLICT);
	}
	{
		/* which keys are held as deletes (net_deleted), of which table */
		const char *v1[] = {"1", NULL, NULL}, *v3[] = {"3", NULL, NULL}, *v9[] = {"9", NULL, NULL};
		size_t l[] = {1, 0, 0};

		assert_true(net_deleted(ns, 1, 1, key_idx, v1, l));
		assert_false(net_deleted(ns, 2, 1, key_idx, v1, l));
		assert_false(net_deleted(ns, 1, 1, key_idx, v3, l));
		assert_false(net_deleted(ns, 1, 1, key_idx, v9, l));
	}
	assert_int_equal(net_count(ns), 3);
	assert_int_equal(net_puts(ns), 7);
	net_clear(ns);
	assert_int_equal(net_count(ns), 0);
	assert_int_equal(net_bytes(ns), 0);
	assert_entries(ns, "");
	net_free(ns);
}

/* Two tables with the same key are two entries. */
static void
test_tables_apart(void **state)
{
	net_set *ns = net_new();
	const char *v[] = {"1", "a", "b"};
	size_t l[] = {1, 1, 1};

	(void) state;
	assert_int_equal(net_put(ns, 1, NET_ROW, 3, 1, key_idx, v, l, NULL), NET_PUT_OK);
	assert_int_equal(net_put(ns, 2, NET_ROW, 3, 1, key_idx, v, l, NULL), NET_PUT_OK);
	assert_int_equal(net_count(ns), 2);
	net_free(ns);
}

/* Generated sequences of changes over a few keys: the net entries, applied
 * to a starting state, give what each change applied in turn gives. */
#define KEYS 7
typedef struct model_row {
	bool exists;
	char a[16], b[16];
} model_row;

typedef struct apply_ctx {
	model_row *rows;
} apply_ctx;

static int
apply_entry(void *ctx, const net_entry *e)
{
	model_row *r = &((apply_ctx *) ctx)->rows[atoi(e->values[0])];

	if (e->kind == NET_DELETE) {
		r->exists = false;
	} else if (e->kind == NET_ROW) {
		r->exists = true;
		snprintf(r->a, sizeof r->a, "%s", e->values[1]);
		snprintf(r->b, sizeof r->b, "%s", e->values[2]);
	} else if (r->exists) { /* a partial updates a row that is there */
		if (e->present[1])
			snprintf(r->a, sizeof r->a, "%s", e->values[1]);
		if (e->present[2])
			snprintf(r->b, sizeof r->b, "%s", e->values[2]);
	}
	return 0;
}

/* What net_bytes says the entries hold: each entry, its key, its
 * columns' slots, and its values with their NULs. */
static int
add_bytes(void *ctx, const net_entry *e)
{
	size_t *sum = ctx;

	*sum += sizeof *e + e->key_len + (size_t) e->ncols * (sizeof(char *) + sizeof(size_t) + 1);
	for (int i = 0; i < e->ncols; i++)
		if (e->present[i] && e->values[i] != NULL) {
			assert_int_equal(strlen(e->values[i]), e->lens[i]);
			*sum += e->lens[i] + 1;
		}
	return 0;
}

static void
assert_bytes(const net_set *ns)
{
	size_t sum = 0;

	net_each(ns, add_bytes, &sum);
	assert_int_equal(net_bytes(ns), sum);
}

static void
test_generated_sequences(void **state)
{
	unsigned seed = 12345;

	(void) state;
	for (int round = 0; round < 2000; round++) {
		model_row start[KEYS], direct[KEYS], netted[KEYS];
		bool deleted[KEYS] = {false};
		net_set *ns = net_new();
		apply_ctx ctx = {netted};

		for (int k = 0; k < KEYS; k++) {
			start[k].exists = rand_r(&seed) % 2;
			snprintf(start[k].a, sizeof start[k].a, "a0");
			snprintf(start[k].b, sizeof start[k].b, "b0");
		}
		memcpy(direct, start, sizeof start);
		memcpy(netted, start, sizeof start);
		for (int c = 0; c < 12; c++) {
			int k = (int) (rand_r(&seed) % KEYS);
			char key[8], a[16], b[16];
			const char *v[] = {key, a, b};
			size_t l[3];
			bool present[3] = {true, rand_r(&seed) % 2 == 0, true};
			net_kind kind;
			net_put_result res;

			snprintf(key, sizeof key, "%d", k);
			snprintf(a, sizeof a, "a%d", c + 1);
			snprintf(b, sizeof b, "b%d", c + 1);
			l[0] = strlen(key), l[1] = strlen(a), l[2] = strlen(b);
			/* what the source can send: an insert of a missing row, an
			 * update or delete of a present one */
			if (!direct[k].exists)
				kind = NET_ROW;
			else
				kind = (net_kind) (1 + rand_r(&seed) % 3);
			if (kind == NET_PARTIAL && !present[1])
				present[2] = true;
			res = net_put(ns, 1, kind, 3, 1, key_idx, v, l, kind == NET_PARTIAL ? present : NULL);
			if (res == NET_CONFLICT)
				fail_msg("a partial of a present row cannot meet a delete");
			/* a row over a delete of this set, said so, and only then */
			assert_int_equal(res == NET_PUT_OVER_DELETE, kind == NET_ROW && deleted[k]);
			deleted[k] = kind == NET_DELETE; /* the key's entry now */
			assert_bytes(ns);
			if (kind == NET_DELETE)
				direct[k].exists = false;
			else {
				direct[k].exists = true;
				if (kind == NET_ROW || present[1])
					snprintf(direct[k].a, sizeof direct[k].a, "%s", a);
				snprintf(direct[k].b, sizeof direct[k].b, "%s", b);
			}
		}
		net_each(ns, apply_entry, &ctx);
		for (int k = 0; k < KEYS; k++) {
			assert_int_equal(netted[k].exists, direct[k].exists);
			if (direct[k].exists) {
				assert_string_equal(netted[k].a, direct[k].a);
				assert_string_equal(netted[k].b, direct[k].b);
			}
		}
		net_free(ns);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_tables_apart),
		cmocka_unit_test(test_generated_sequences),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
