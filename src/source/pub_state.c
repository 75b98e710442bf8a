#include "pub_state.h"

#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
pub_state_init(pub_state *s, int n, int nns)
{
	memset(s, 0, sizeof *s);
	s->n = n;
	s->relids = xcalloc((size_t) n + 1, sizeof *s->relids);
	s->relnsp = xcalloc((size_t) n + 1, sizeof *s->relnsp);
	s->published = xcalloc((size_t) n + 1, sizeof *s->published);
	s->rel_row = xcalloc((size_t) n + 1, sizeof *s->rel_row);
	s->nns = nns;
	s->nsp = xcalloc((size_t) nns + 1, sizeof *s->nsp);
	s->nsp_row = xcalloc((size_t) nns + 1, sizeof *s->nsp_row);
}

void
pub_state_free(pub_state *s)
{
	free(s->relids);
	free(s->relnsp);
	free(s->published);
	free(s->rel_row);
	free(s->nsp);
	free(s->nsp_row);
	memset(s, 0, sizeof *s);
}

static int
index_of(const pub_state *s, uint32_t relid)
{
	for (int i = 0; i < s->n; i++)
		if (s->relids[i] == relid)
			return i;
	return -1;
}

/* the row that names schema nsp in the publication, 0: none */
static uint32_t
schema_row(const pub_state *s, uint32_t nsp)
{
	for (int i = 0; i < s->nns; i++)
		if (s->nsp[i] == nsp)
			return s->nsp_row[i];
	return 0;
}

/* Table i of now is published by something that already published it
 * before: the same row naming it, the same row naming its schema, or FOR
 * ALL TABLES in both. */
static bool
published_throughout(const pub_state *before, int b, const pub_state *now, int i)
{
	uint32_t ns = schema_row(now, now->relnsp[i]);

	if (now->rel_row[i] != 0 && now->rel_row[i] == before->rel_row[b])
		return true;
	if (ns != 0 && ns == schema_row(before, now->relnsp[i]))
		return true;
	return now->all_tables && before->all_tables;
}

int
pub_state_published(const pub_state *s, uint32_t relid)
{
	int i = index_of(s, relid);

	return i < 0 ? -1 : s->published[i] ? 1 : 0;
}

pub_change
pub_state_compare(const pub_state *before, const pub_state *now, uint32_t relid)
{
	int b = index_of(before, relid), i = index_of(now, relid);

	if (b < 0 || i < 0)
		return PUB_UNKNOWN;
	if (!now->published[i])
		return before->published[b] ? PUB_LEFT : PUB_SAME;
	if (!before->published[b] || before->pub_oid != now->pub_oid)
		return PUB_BACK;
	return published_throughout(before, b, now, i) ? PUB_SAME : PUB_BACK;
}

void
pub_state_token(const pub_state *s, uint32_t relid, char *out, size_t size)
{
	int i = index_of(s, relid);

	if (size == 0)
		return;
	out[0] = '\0';
	if (i >= 0)
		snprintf(out, size, "p%u a%d t%d r%u n%u:%u", s->pub_oid, s->all_tables ? 1 : 0,
		         s->published[i] ? 1 : 0, s->rel_row[i], s->relnsp[i],
		         schema_row(s, s->relnsp[i]));
}

pub_change
pub_state_compare_token(const char *token, const pub_state *now, uint32_t relid)
{
	unsigned pub_oid, rel_row, nsp, nsp_row;
	int all, published, used = 0;
	pub_state before;
	pub_change c;

	if (token == NULL ||
	    sscanf(token, "p%u a%d t%d r%u n%u:%u%n", &pub_oid, &all, &published, &rel_row, &nsp,
	           &nsp_row, &used) != 6 || token[used] != '\0')
		return PUB_UNKNOWN;
	pub_state_init(&before, 1, nsp_row != 0 ? 1 : 0);
	before.pub_oid = pub_oid;
	before.all_tables = all != 0;
	before.relids[0] = relid;
	before.relnsp[0] = nsp;
	before.published[0] = published != 0;
	before.rel_row[0] = rel_row;
	if (nsp_row != 0) {
		before.nsp[0] = nsp;
		before.nsp_row[0] = nsp_row;
	}
	c = pub_state_compare(&before, now, relid);
	pub_state_free(&before);
	return c;
}
