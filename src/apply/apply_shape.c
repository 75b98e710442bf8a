/*
 * apply_shape.c: the apply's part of table modes (shape.h): a shaped
 * table's statements carry its history, soft deletes and metadata columns
 * (dml_sql.h), and read the source transaction's position from the
 * session, set once per source transaction before its first such change.
 * History entries are numbered by their place in the source transaction
 * (tidemark_seq from 1), the same on every replay of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply_int.h"
#include "exitcode.h"
#include "log.h"
#include "shape.h"

bool
apply_shaped(const apply_rel *r)
{
	const catalog_table *t = r->table;

	return t != NULL && (t->history || t->soft_delete || t->metadata);
}

const dml_sql_shape *
apply_shape_of(const apply_rel *r)
{
	return apply_shaped(r) && r->shape_ready && r->shape.shaped ? &r->shape.shape : NULL;
}

void
apply_shape_forget(apply_rel *r)
{
	shape_loaded_free(&r->shape);
	r->shape_ready = false;
}

/* The session's position: what a mirror's metadata, a soft delete's mark
 * and a copy's or a TRUNCATE's history entries read. */
static int
session_position(apply *a)
{
	int rc = TM_OK;

	if (!a->position_set) {
		rc = shape_set_position(a->sink, a->final_lsn, (long long) a->commit_time);
		a->position_set = rc == TM_OK;
	}
	return rc;
}

int
apply_shape_ready(apply *a, apply_rel *r)
{
	int rc = TM_OK;

	if (!apply_shaped(r))
		return TM_OK;
	if (!r->shape_ready) {
		/* statements built before are of another shape */
		apply_shape_forget(r);
		if ((rc = shape_load(a->sink, r->table->table_id, &r->shape)) != TM_OK)
			return rc;
		r->shape_ready = true;
	}
	/* a history's entries take the position as parameters */
	if (r->table->metadata || r->table->soft_delete)
		rc = session_position(a);
	return rc;
}

void
apply_shape_params(apply *a, const apply_rel *r, const char **p, int n, const char *op,
                   arena *scratch)
{
	char *seq;

	if (!apply_shaped(r) || !r->table->history)
		return;
	seq = arena_alloc(scratch, 24);
	snprintf(seq, 24, "%lld", ++a->hist_seq);
	if (!a->position_text) {
		lsn_format(a->final_lsn, a->pos_lsn);
		shape_format_commit_time((long long) a->commit_time, a->pos_time, sizeof a->pos_time);
		a->position_text = true;
	}
	p[n] = op;
	p[n + 1] = seq;
	p[n + 2] = a->pos_lsn;
	p[n + 3] = a->pos_time;
}

static dml_sql_table
shape_table(const apply_rel *r)
{
	dml_sql_table t = {r->table->target_schema, r->table->target_table, r->ncols,
	                   (const char *const *) r->colnames, r->nkeys, r->key_idx,
	                   (const char *const *) r->key_types, &r->shape.shape};

	return t;
}

int
apply_shape_before_move(apply *a, apply_rel *r, const char **key, arena *scratch)
{
	const char **p;
	strbuf sql = STRBUF_INIT;
	dml_sql_table t;
	int rc;

	if (!apply_shaped(r) || !r->table->history)
		return TM_OK;
	t = shape_table(r);
	p = arena_alloc(scratch, sizeof(char *) * ((size_t) r->nkeys + DML_SQL_HISTORY_PARAMS + 1));
	memcpy(p, key, sizeof(char *) * (size_t) r->nkeys);
	apply_shape_params(a, r, p, r->nkeys, "delete", scratch);
	dml_sql_history_of_key(&sql, &t);
	rc = sink_send(a->sink,
	               sink_stmt_get(a->sink, sql.data, r->nkeys + DML_SQL_HISTORY_PARAMS), p, NULL);
	strbuf_free(&sql);
	return rc;
}

int
apply_shape_truncate(apply *a, apply_rel *r, bool *keep)
{
	strbuf sql = STRBUF_INIT;
	dml_sql_table t;
	char base[24];
	const char *p[] = {base};
	PGresult *res = NULL;
	int rc;

	*keep = false;
	if (!apply_shaped(r))
		return TM_OK;
	if ((rc = apply_shape_ready(a, r)) != TM_OK || (rc = session_position(a)) != TM_OK)
		return rc;
	t = shape_table(r);
	if (!dml_sql_truncate_shaped(&sql, &t))
		return TM_OK;
	snprintf(base, sizeof base, "%lld", a->hist_seq);
	/* waited for: the entries' count numbers what follows */
	rc = sink_query(a->sink, "recording a TRUNCATE in a table's history or marks", sql.data, 1,
	                p, &res);
	if (rc == TM_OK && r->table->history)
		a->hist_seq += atoll(PQcmdTuples(res));
	*keep = r->table->soft_delete;
	PQclear(res);
	strbuf_free(&sql);
	return rc;
}
