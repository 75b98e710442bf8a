/*
 * target_fit.h: does a table the target has already (made by hand before
 * setup, or by another tool) take the source table's rows? tidemark
 * creates a table only where none is, and otherwise writes into the one it
 * finds: that one must have every column the stream writes, the key's
 * unique index that its upserts name (ON CONFLICT), and no column of its
 * own that refuses a row without a value. Nor may it refuse values or
 * orders the source allows (a schema copied with pg_dump --schema-only has
 * these): an identity column GENERATED ALWAYS refuses the source's values;
 * a unique index besides the key refuses rows applied by key in another
 * order than the source wrote them (values swapped between rows in a
 * group of source transactions, a copy's chunk beside the stream; checked
 * at commit, a deferred one too); a foreign key refuses tables copied and
 * changed one by one. Pure: the target's columns are read by
 * the caller.
 */
#ifndef TIDEMARK_TARGET_FIT_H
#define TIDEMARK_TARGET_FIT_H

#include <stdbool.h>

#include "strbuf.h"
#include "tabledef.h"

/* A column of the target table (strings borrowed). */
typedef struct target_fit_column {
	const char *name;
	const char *type;     /* format_type() on the target, pg_catalog's unqualified */
	bool required;        /* NOT NULL without a default, identity or generation */
	bool identity_always; /* GENERATED ALWAYS AS IDENTITY: refuses given values */
} target_fit_column;

/* What the target table has. */
typedef struct target_fit_table {
	const target_fit_column *cols;
	int ncols;
	bool key_index;       /* a unique index on exactly def's key columns (valid,
	                       * immediate, not partial, no expressions) */
	const char *other_unique; /* the unique indexes besides the key's, "a, b";
	                       * "" or NULL for none */
	const char *foreign_keys; /* its foreign keys, and those of other tables
	                       * that name it, "fk_a, fk_b"; "" or NULL for none */
} target_fit_table;

/*
 * Appends to *why what keeps the table from taking def's rows, as one
 * sentence per problem, and returns true when nothing does. Appends to
 * *differ the columns of a built-in type that the target declares with
 * another ("v (text on the source, integer here)"): values are then converted by the
 * target, and one it refuses goes by the table's policy.
 */
bool target_fit_check(const tabledef *def, const target_fit_table *t, strbuf *why,
                      strbuf *differ);

#endif
