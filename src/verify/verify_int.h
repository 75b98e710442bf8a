/*
 * verify_int.h: what verify.c (planning, the pass) and verify_check.c
 * (re-checks, waiting for the target) share, from verify_query.c:
 * statements sent to both sides at once, and reading rows. Not for other
 * modules: they use verify.h.
 */
#ifndef TIDEMARK_VERIFY_INT_H
#define TIDEMARK_VERIFY_INT_H

#include "pgconn.h"
#include "strbuf.h"
#include "verify.h"

/* One statement on one side of a table, sent without waiting. */
typedef struct verify_query {
	PGconn *conn;           /* borrowed */
	pgconn_side side;
	const char *what;       /* borrowed */
	strbuf sql;             /* owned */
	int nparams;
	int cap;
	const char **params;    /* owned array of borrowed strings */
	bool plain;             /* every column as plain text */
	bool strict;            /* a data exception is a failure (plain statements) */
	PGresult *res;          /* owned: the rows, after a successful wait */
	bool data_error;        /* failed with a data exception: compare as plain text */
} verify_query;

typedef void (*verify_sql_builder)(strbuf *sql, const verify_sql_table *t, unsigned flags);

/*
 * Prepares a statement on the source or the target of vt, built by build
 * with the bounds lo (exclusive) and hi (inclusive), each NULL when
 * unbounded, as its first parameters; plain: compare as plain text.
 */
void verify_query_init(verify_query *q, verify_table *vt, bool source);
void verify_query_build(verify_query *q, verify_table *vt, verify_sql_builder build,
                        char *const *lo, char *const *hi, bool plain);
void verify_query_param(verify_query *q, const char *value);
/* Adds a key's nkeys values as parameters (nothing for a NULL key). */
void verify_query_key(verify_query *q, char *const *key, int nkeys);
/* The builders' flags for q's side, bounds and plain; notes plain (and
 * strict) in q. */
unsigned verify_query_flags(verify_query *q, char *const *lo, char *const *hi, bool plain);
void verify_query_clear(verify_query *q);

/*
 * Sends a and b (either may be NULL) and waits for both, so that the two
 * servers work at the same time. A data exception (SQLSTATE class 22) in a
 * statement that is not strict sets data_error and is not a failure; any
 * other failure is logged once and its status returned.
 */
int verify_query_run(verify_query *a, verify_query *b);

/* One side's table, for the statement builders (borrows from vt). */
verify_sql_table verify_side_table(const verify_table *vt, bool source);

/* Appends the rows of a query's result to rows (width nkeys + ncols). */
void verify_rows_from_result(verify_rows *rows, const PGresult *r);


/* A table without a key, compared as a multiset (verify_multiset.c). */
int verify_multiset_pass(verify_table *vt);
int verify_multiset_recheck_source(verify_table *vt);
int verify_multiset_recheck_target(verify_table *vt);

/* Frees a re-check in progress (verify_check.c). */
void verify_check_clear(verify_table *vt);

#endif
