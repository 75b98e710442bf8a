/*
 * pub_state.h: what the source's publication says of the replicated
 * tables at one moment, and what changed between two such moments. Pure.
 *
 * The walsender leaves out the changes of a table its publication does not
 * publish when they were written (and from PostgreSQL 18 those of every
 * table while the publication does not exist). A table taken out of the
 * publication by hand (ALTER PUBLICATION ... DROP TABLE) and put back, or
 * whose schema was taken out and put back, lost the changes in between,
 * with nothing in the stream to say so. `run` reads the state every few
 * seconds (source_query_pub_state) and compares it with the one before:
 * a table left out is said; one published again, or whose publication row
 * was made again in between (a new oid), is copied again.
 */
#ifndef TIDEMARK_PUB_STATE_H
#define TIDEMARK_PUB_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pub_state {
	uint32_t pub_oid;  /* 0: the publication does not exist */
	bool all_tables;   /* FOR ALL TABLES */
	int n;             /* the tables asked about that exist */
	uint32_t *relids;  /* owned, n */
	uint32_t *relnsp;  /* owned, n: each table's schema */
	bool *published;   /* owned, n: the publication publishes it */
	uint32_t *rel_row; /* owned, n: the pg_publication_rel row naming it (not an
	                    * EXCEPT one), 0: none */
	int nns;
	uint32_t *nsp;     /* owned, nns: the schemas the publication names ... */
	uint32_t *nsp_row; /* owned, nns: ... and their pg_publication_namespace rows */
} pub_state;

/* Sizes a state for n tables and nns schemas, every field zero. */
void pub_state_init(pub_state *s, int n, int nns);
void pub_state_free(pub_state *s);

typedef enum pub_change {
	PUB_SAME,    /* published throughout as far as the two states show, or
	              * left out in both */
	PUB_LEFT,    /* published before, no longer */
	PUB_BACK,    /* published now, and left out at some time since before:
	              * left out then, or a row that published it was made again */
	PUB_UNKNOWN, /* not in one of the states: nothing to compare */
} pub_change;

/* Does the state say the publication publishes table relid? -1: the
 * state does not have it. */
int pub_state_published(const pub_state *s, uint32_t relid);

/* What happened to table relid between before and now. */
pub_change pub_state_compare(const pub_state *before, const pub_state *now, uint32_t relid);

/*
 * One table's slice of a state as text, kept in the target's catalog
 * (tidemark.tables.publication_token), so that a reading is compared with
 * the last one of an earlier run too: "p<pub oid> a<all tables> t<published>
 * r<row naming it> n<its schema>:<row naming the schema>", each a decimal
 * number. Empty when the state lacks the table.
 */
#define PUB_STATE_TOKEN_MAX 96
void pub_state_token(const pub_state *s, uint32_t relid, char *out, size_t size);

/* pub_state_compare with before read from a token: PUB_UNKNOWN when it
 * does not read. The token keeps only the table's own schema row: a table
 * moved to another schema since counts as published again. */
pub_change pub_state_compare_token(const char *token, const pub_state *now, uint32_t relid);

#endif
