/*
 * verify_multiset.c: comparing a table without a key (verify.h). There is
 * no key to page by or to name a row with, and rows may be exact
 * duplicates: each side is summed whole, the count of its rows and the sum
 * of their row hashes (the hash the keyed comparison uses,
 * verify_sql.h), which does not depend on the order rows are read in and
 * counts every duplicate. Equal sums mean equal multisets (up to a hash
 * collision); different sums say that they differ and both counts, not
 * which rows.
 *
 * The re-check follows the keyed one: the source is summed again, the
 * target once it has applied what the source had written by then.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "verify_int.h"

/* One side's sum of every row; converted values first, as plain text
 * when one does not convert. */
static int
sum_side(verify_table *vt, bool source, verify_plan_sum *out)
{
	for (int plain = 0;; plain++) {
		verify_query q;
		int rc;

		verify_query_init(&q, vt, source);
		verify_query_build(&q, vt, verify_sql_range_sum, NULL, NULL, plain);
		rc = verify_query_run(&q, NULL);
		if (rc == TM_OK && q.data_error && !plain) {
			verify_query_clear(&q);
			vt->stats.plain_ranges++;
			continue;
		}
		if (rc == TM_OK && (PQntuples(q.res) != 1 ||
		                    !verify_plan_sum_read(out, PQgetvalue(q.res, 0, VERIFY_SQL_COL_ROWS),
		                                          PQgetvalue(q.res, 0, VERIFY_SQL_COL_HASH)))) {
			log_error("%s: %s: a sum is not a count and a number", pgconn_side_name(q.side),
			          vt->what);
			rc = TM_EXIT_INTERNAL;
		}
		verify_query_clear(&q);
		return rc;
	}
}

static void
note_sums(verify_table *vt)
{
	vt->stats.source_rows = vt->multiset_source.rows;
	vt->stats.target_rows = vt->multiset_target.rows;
	vt->multiset_differs = !verify_plan_sum_equal(&vt->multiset_source, &vt->multiset_target);
	vt->stats.candidates = vt->multiset_differs;
}

int
verify_multiset_pass(verify_table *vt)
{
	double start = clock_now_s();
	int rc = sum_side(vt, true, &vt->multiset_source);

	if (rc == TM_OK)
		rc = sum_side(vt, false, &vt->multiset_target);
	if (rc == TM_OK) {
		vt->stats.ranges++;
		note_sums(vt);
	}
	vt->stats.seconds += clock_now_s() - start;
	return rc;
}

int
verify_multiset_recheck_source(verify_table *vt)
{
	double start = clock_now_s();
	int rc = sum_side(vt, true, &vt->multiset_source);

	vt->stats.seconds += clock_now_s() - start;
	return rc;
}

int
verify_multiset_recheck_target(verify_table *vt)
{
	double start = clock_now_s();
	int rc = sum_side(vt, false, &vt->multiset_target);

	if (rc == TM_OK)
		note_sums(vt);
	vt->stats.seconds += clock_now_s() - start;
	return rc;
}
