/*
 * typesync.h: the source's user-defined types and collations on the
 * target, and how each column of a table looks there.
 *
 * A table's definition (tabledef, with the types its columns need, see
 * srctype.h) is made ready for the target by typesync_table, inside the
 * caller's target transaction:
 *   - each enum, composite type and domain is created in the same schema
 *     under the same name (labels and attributes in order, a domain over
 *     its base type without its constraints), types before the types that
 *     use them; a type of an extension is had by the extension itself
 *     (CREATE EXTENSION IF NOT EXISTS in the source's schema, when the
 *     target has it available and allows it). A type of that name already
 *     on the target is taken when its definition is the source's (an enum
 *     lacking some of the source's values gets them); each source type is
 *     remembered by its oid in tidemark.types, so that later changes follow
 *     it (typesync_follow);
 *   - each column's non-default collation is given the target column,
 *     created first when it is a user-created collation of the source;
 *   - each column gets its target_type (the source's type, or text / text[]
 *     when the target cannot have it), collate, and kept_as (why the
 *     target column differs, also for a generated column whose expression
 *     is refused: it is left out). Every such fallback is a warning naming
 *     the table, the column, the source type and why; none is an error.
 * Statements the target may refuse (CREATE EXTENSION, CREATE COLLATION,
 * CREATE TYPE) run under a savepoint (sink_try).
 *
 * typesync_follow follows a capture message's own types (ALTER TYPE ...
 * ADD VALUE / RENAME VALUE / ADD, DROP, RENAME, ALTER ATTRIBUTE / RENAME
 * TO / SET SCHEMA, ALTER DOMAIN) for the types the target has from this
 * replication; the others are left alone until a table needs them.
 *
 * Both tell, in *values_added, whether ALTER TYPE ... ADD VALUE ran: a
 * value added to an enum that existed before the target transaction cannot
 * be used in it (SQLSTATE 55P04), so that transaction must commit before
 * rows using it are written (see apply_type_boundary).
 */
#ifndef TIDEMARK_TYPESYNC_H
#define TIDEMARK_TYPESYNC_H

#include <stdbool.h>

#include "sink.h"
#include "srctype.h"
#include "strbuf.h"
#include "tabledef.h"

typedef struct typesync_result {
	bool values_added;   /* ALTER TYPE ... ADD VALUE ran */
	strbuf actions;      /* what was done, "; "-separated, for the audit log */
} typesync_result;

void typesync_result_free(typesync_result *r);

/* See above. def's columns are updated in place (def is the caller's). */
int typesync_table(sink *s, const char *slot, tabledef *def, typesync_result *res);

/* See above. */
int typesync_follow(sink *s, const char *slot, const srctype_list *types,
                    typesync_result *res);


#endif
