/*
 * typesync_int.h: what typesync.c (types) and typesync_cols.c (collations,
 * columns, key order) share. Not for other modules: they use typesync.h.
 */
#ifndef TIDEMARK_TYPESYNC_INT_H
#define TIDEMARK_TYPESYNC_INT_H

#include "typesync.h"

/* What the target has for one source type. */
typedef struct ts_type {
	uint32_t oid;            /* the source's */
	char *schema;            /* owned: the target's type, NULL when kept as text */
	char *name;              /* owned */
	char *reason;            /* owned: why kept as text, or how the target's
	                          * type differs from the source's; NULL otherwise */
} ts_type;

/* A collation looked for on the target during one call. */
typedef struct ts_coll {
	char *schema;            /* owned */
	char *name;              /* owned */
	char *why;               /* owned: why the target cannot have it, NULL when it can */
} ts_coll;

/* One call's state. */
typedef struct ts {
	sink *sink;              /* borrowed */
	const char *slot;        /* borrowed */
	typesync_result *res;    /* borrowed */
	ts_type *types;          /* owned */
	int ntypes;
	ts_coll *colls;          /* owned */
	int ncolls;
} ts;

void ts_init(ts *x, sink *s, const char *slot, typesync_result *res);
void ts_clear(ts *x);
const ts_type *ts_find(const ts *x, uint32_t oid);
/* Appends to the audit notes. */
void ts_note(ts *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* typesync.c: one type, its dependencies done (create: it may be created). */
int ts_sync_type(ts *x, const srctype *t);

/* typesync_cols.c */
/* The target's type for a source type_sql naming type_ref (0: a built-in
 * type, kept as it is): written to out. *why: NULL, or (borrowed) why the
 * target has text instead or how its type differs. */
void ts_type_text(const ts *x, const char *type_sql, uint32_t type_ref, strbuf *out,
                  const char **why, bool *fallback);
/* Whether COLLATE c can be written on the target (created first when it is
 * a user's collation); *why (borrowed) when not. c NULL or the default:
 * *use false, *why NULL. */
int ts_collation(ts *x, const srctype_collation *c, bool *use, const char **why);
/* Whether two format_type() spellings name the same type. */
bool ts_same_type_text(const char *a, const char *b);

#endif
