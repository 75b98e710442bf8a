/*
 * ddl_parse_check.h: what must hold of every ddl_parse result, checked by
 * tests/unit/test_ddl_parse.c on the corpus and by
 * tests/fuzz/fuzz_ddl_parse.c on any text.
 */
#ifndef TIDEMARK_DDL_PARSE_CHECK_H
#define TIDEMARK_DDL_PARSE_CHECK_H

#include <stdbool.h>
#include <string.h>

#include "ddl_parse.h"
#include "strbuf.h"

static inline bool
ddl_check_hex16(const char *s)
{
	if (strlen(s) != 16)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* Statements are slices of the text, in order, with their changes. */
static inline const char *
ddl_check_stmts(const char *sql, const ddl_parse_result *res)
{
	size_t dml = 0, next_change = 0, end = 0;

	for (size_t i = 0; i < res->n_stmts; i++) {
		const ddl_parse_stmt *st = &res->stmts[i];

		if (st->length != strlen(st->text) || st->offset < end ||
			memcmp(sql + st->offset, st->text, st->length) != 0)
			return "statement text is not the slice at its offset, in order";
		end = st->offset + st->length;
		if (st->first_change != next_change)
			return "statement changes are not contiguous";
		next_change += st->n_changes;
		if (st->cls == DDL_PARSE_STMT_DML)
			dml++;
		if (st->cls != DDL_PARSE_STMT_UNPARSABLE &&
			(!ddl_check_hex16(st->fingerprint) || st->node == NULL))
			return "parsed statement without fingerprint or node";
		if ((st->cls == DDL_PARSE_STMT_DML || st->cls == DDL_PARSE_STMT_IGNORED) &&
			st->n_changes != 0)
			return "DML or ignored statement with changes";
	}
	if (next_change != res->n_changes || dml != res->n_dml)
		return "change or DML counts do not add up";
	return NULL;
}

/*
 * What must hold of every result: slices are the text's own bytes, changes
 * point at their statement, parsed statements have fingerprints, counts
 * add up. Returns a description of the first breach, or NULL.
 */
static inline const char *
ddl_check_invariants(const char *sql, const ddl_parse_result *res)
{
	const char *broken = ddl_check_stmts(sql, res);
	bool unparsable = false;

	if (broken != NULL)
		return broken;
	for (size_t i = 0; i < res->n_changes; i++) {
		const ddl_parse_change *ch = &res->changes[i];
		const ddl_parse_stmt *st;

		if (ch->stmt_index >= res->n_stmts)
			return "change points past the statements";
		st = &res->stmts[ch->stmt_index];
		if (i < st->first_change || i >= st->first_change + st->n_changes)
			return "change not within its statement's range";
		unparsable |= ch->kind == DDL_PARSE_UNPARSABLE;
	}
	if (unparsable != res->unparsable)
		return "unparsable flag wrong";
	return NULL;
}

/* Compares two types read from the parser: names, typmods, dimensions. */
static inline bool
ddl_check_same_type(const ddl_parse_type *a, const ddl_parse_type *b)
{
	if (a->n_names != b->n_names || a->n_typmods != b->n_typmods ||
		a->n_array_bounds != b->n_array_bounds || a->setof != b->setof ||
		strcmp(a->canonical, b->canonical) != 0)
		return false;
	for (size_t i = 0; i < a->n_names; i++)
		if (strcmp(a->names[i], b->names[i]) != 0)
			return false;
	for (size_t i = 0; i < a->n_typmods; i++) {
		const ddl_parse_typmod *x = &a->typmods[i], *y = &b->typmods[i];

		if (x->kind != y->kind || x->ival != y->ival ||
			(x->text != NULL) != (y->text != NULL) || (x->text && strcmp(x->text, y->text) != 0))
			return false;
	}
	return true;
}

/*
 * The canonical spelling of a type, parsed again as a column type, must
 * give the same type: it is what target DDL is built from.
 */
static inline bool
ddl_check_type_round_trips(const ddl_parse_type *t)
{
	strbuf sql = STRBUF_INIT;
	ddl_parse_result again;
	tm_error err;
	bool ok;

	if (t->canonical == NULL)
		return true;
	strbuf_appendf(&sql, "ALTER TABLE x ADD COLUMN c %s", t->canonical);
	ok = ddl_parse_text(strbuf_str(&sql), &again, &err) == 0 && again.n_changes == 1 &&
		again.changes[0].kind == DDL_PARSE_ADD_COLUMN &&
		ddl_check_same_type(t, &again.changes[0].column.type);
	ddl_parse_result_free(&again);
	strbuf_free(&sql);
	return ok;
}

#endif
