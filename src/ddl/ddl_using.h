/*
 * ddl_using.h: what a captured statement text says of how the source
 * converted a table's columns in ALTER COLUMN ... TYPE: without USING,
 * with the plain cast of the column (the same conversion), or with an
 * expression that computed new values (ddl_parse.h reads each clause).
 *
 * The catalog definition says that a column's type changed, never how its
 * values were converted: that is only in the text, and only when the text
 * holds the ALTER itself. A DO block, a function call, an ALTER of an
 * inheritance parent (which converts its children too) or a message with
 * no text leave a column UNKNOWN: the caller then assumes the worst when
 * the source rewrote the table.
 *
 * Pure: a parse result in, a list out.
 */
#ifndef TIDEMARK_DDL_USING_H
#define TIDEMARK_DDL_USING_H

#include "ddl_parse.h"

typedef enum ddl_using_kind {
	DDL_USING_UNKNOWN, /* the text holds no ALTER ... TYPE of the column */
	DDL_USING_NONE,    /* ALTER ... TYPE without USING */
	DDL_USING_PLAIN,   /* USING c or c::type: the same conversion */
	DDL_USING_EXPR,    /* USING another expression: new values */
} ddl_using_kind;

typedef struct ddl_using_column {
	char *column;      /* owned: the column as the statement names it */
	ddl_using_kind kind;
	char *text;        /* owned: the USING expression as written, NULL without one */
} ddl_using_column;

typedef struct ddl_using_list {
	int n;
	ddl_using_column *cols; /* owned */
} ddl_using_list;

/*
 * The ALTER ... TYPE changes of a parsed text that name the table, under
 * its name after the command (schema, name) or before it (old_schema,
 * old_name; may be NULL): a name the statement leaves unqualified matches
 * any schema. One entry per column; a column altered more than once keeps
 * the strongest kind (EXPR over PLAIN over NONE). *out is new
 * (ddl_using_list_free).
 */
void ddl_using_for_table(const ddl_parse_result *pr, const char *schema, const char *name,
                         const char *old_schema, const char *old_name, ddl_using_list *out);
void ddl_using_list_free(ddl_using_list *l);

/* The entry of a column under either of its names (other may be NULL);
 * NULL when the list (which may be NULL) has none: UNKNOWN. */
const ddl_using_column *ddl_using_find(const ddl_using_list *l, const char *name,
                                       const char *other);

const char *ddl_using_kind_name(ddl_using_kind kind);

#endif
