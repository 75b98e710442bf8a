/*
 * test_pub_state.c: what two readings of the publication say of a table:
 * the same, left out, published again (or its row made again in between),
 * as a matrix of how a table is published before and now.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pub_state.h"

#define T 16384u  /* the table */
#define A 2200u   /* its schema */
#define B 2201u   /* another schema */

/* One reading: the publication (oid, FOR ALL TABLES), the table (its
 * schema, published, the row naming it) and up to two schema rows. */
typedef struct reading {
	uint32_t pub_oid;
	bool all;
	uint32_t nsp;
	bool published;
	uint32_t rel_row;
	uint32_t ns[2][2]; /* schema, row */
} reading;

static void
state_of(const reading *r, pub_state *s)
{
	int nns = (r->ns[0][0] != 0) + (r->ns[1][0] != 0);

	pub_state_init(s, 1, nns);
	s->pub_oid = r->pub_oid;
	s->all_tables = r->all;
	s->relids[0] = T;
	s->relnsp[0] = r->nsp;
	s->published[0] = r->published;
	s->rel_row[0] = r->rel_row;
	for (int i = 0; i < nns; i++) {
		s->nsp[i] = r->ns[i][0];
		s->nsp_row[i] = r->ns[i][1];
	}
}

static pub_change
compare(const reading *before, const reading *now)
{
	pub_state b, n;
	pub_change c;

	state_of(before, &b);
	state_of(now, &n);
	c = pub_state_compare(&b, &n, T);
	pub_state_free(&b);
	pub_state_free(&n);
	return c;
}

static pub_change
compare_by_token(const reading *before, const reading *now)
{
	char token[PUB_STATE_TOKEN_MAX];
	pub_state b, n;
	pub_change c;

	state_of(before, &b);
	state_of(now, &n);
	pub_state_token(&b, T, token, sizeof token);
	c = pub_state_compare_token(token, &n, T);
	pub_state_free(&b);
	pub_state_free(&n);
	return c;
}

static void
test_matrix(void **state)
{
	/* named by its row, FOR TABLES IN SCHEMA, FOR ALL TABLES */
	const reading named = {1, false, A, true, 500, {{0}}};
	const reading named_again = {1, false, A, true, 501, {{0}}};
	const reading dropped = {1, false, A, false, 0, {{0}}};
	const reading in_a = {1, false, A, true, 0, {{A, 600}}};
	const reading in_a_again = {1, false, A, true, 0, {{A, 601}}};
	const reading moved_to_b = {1, false, B, true, 0, {{A, 600}, {B, 700}}};
	const reading both_before = {1, false, A, true, 0, {{A, 600}, {B, 700}}};
	const reading b_added_late = {1, false, B, true, 0, {{A, 600}, {B, 701}}};
	const reading in_a_and_named = {1, false, A, true, 502, {{A, 600}}};
	const reading recreated = {2, false, A, true, 500, {{0}}};
	const reading all = {1, true, A, true, 0, {{0}}};
	const reading all_excepted = {1, true, A, false, 0, {{0}}};
	const struct {
		const reading *before, *now;
		pub_change expect;
		const char *what;
	} cases[] = {
		{&named, &named, PUB_SAME, "named throughout"},
		{&named, &dropped, PUB_LEFT, "dropped from the publication"},
		{&dropped, &dropped, PUB_SAME, "left out both times (said once)"},
		{&dropped, &named_again, PUB_BACK, "added back"},
		{&named, &named_again, PUB_BACK, "dropped and added back in between"},
		{&in_a, &in_a, PUB_SAME, "its schema throughout"},
		{&in_a, &in_a_again, PUB_BACK, "its schema dropped and added back in between"},
		{&both_before, &moved_to_b, PUB_SAME, "moved between two published schemas"},
		{&in_a, &b_added_late, PUB_BACK, "moved to a schema published later"},
		{&in_a, &in_a_and_named, PUB_SAME, "named too, its schema throughout"},
		{&in_a_and_named, &in_a, PUB_SAME, "no longer named, its schema throughout"},
		{&named, &in_a, PUB_BACK, "named, then by a schema row that was not there"},
		{&named, &recreated, PUB_BACK, "the publication made again"},
		{&all, &all, PUB_SAME, "FOR ALL TABLES throughout"},
		{&all, &all_excepted, PUB_LEFT, "put in the EXCEPT list"},
		{&all_excepted, &all, PUB_BACK, "taken out of the EXCEPT list"},
	};

	(void) state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		pub_change got = compare(cases[i].before, cases[i].now);
		pub_change by_token = compare_by_token(cases[i].before, cases[i].now);

		if (got != cases[i].expect)
			fail_msg("%s: %d, expected %d", cases[i].what, got, cases[i].expect);
		/* the token keeps only the table's own schema row: a move to a
		 * schema published throughout counts as published again */
		if (by_token != (cases[i].before->nsp != cases[i].now->nsp ? PUB_BACK : got))
			fail_msg("%s, by the token: %d, expected %d", cases[i].what, by_token, got);
	}
}

static void
test_tokens(void **state)
{
	const reading r = {4294967295u, true, 2200, true, 123456, {{2200, 77}}};
	char token[PUB_STATE_TOKEN_MAX];
	pub_state s;

	(void) state;
	state_of(&r, &s);
	pub_state_token(&s, T, token, sizeof token);
	assert_string_equal(token, "p4294967295 a1 t1 r123456 n2200:77");
	assert_int_equal(pub_state_compare_token(token, &s, T), PUB_SAME);
	pub_state_token(&s, T + 1, token, sizeof token);
	assert_string_equal(token, "");
	assert_int_equal(pub_state_compare_token(NULL, &s, T), PUB_UNKNOWN);
	assert_int_equal(pub_state_compare_token("", &s, T), PUB_UNKNOWN);
	assert_int_equal(pub_state_compare_token("p1 a0 t1 r5 n1:0 and more", &s, T), PUB_UNKNOWN);
	assert_int_equal(pub_state_compare_token("p1 a0 t1", &s, T), PUB_UNKNOWN);
	assert_int_equal(pub_state_compare_token("p1 a0 t1 r5 n2200:0", &s, T + 1), PUB_UNKNOWN);
	pub_state_free(&s);
}

static void
test_tables_not_in_both(void **state)
{
	pub_state a, b;

	(void) state;
	pub_state_init(&a, 0, 0);
	pub_state_init(&b, 1, 0);
	b.pub_oid = 1;
	b.relids[0] = T;
	b.published[0] = true;
	assert_int_equal(pub_state_compare(&a, &b, T), PUB_UNKNOWN);
	assert_int_equal(pub_state_compare(&b, &a, T), PUB_UNKNOWN);
	assert_int_equal(pub_state_compare(&b, &b, T + 1), PUB_UNKNOWN);
	assert_int_equal(pub_state_published(&b, T), 1);
	assert_int_equal(pub_state_published(&b, T + 1), -1);
	b.published[0] = false;
	assert_int_equal(pub_state_published(&b, T), 0);
	pub_state_free(&a);
	pub_state_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix),
		cmocka_unit_test(test_tables_not_in_both),
		cmocka_unit_test(test_tokens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
