/*
 * ident.h: reading SQL identifiers the way PostgreSQL does, for names given
 * on the command line ('public."Line Items"', 'Sales.Orders').
 */
#ifndef TIDEMARK_IDENT_H
#define TIDEMARK_IDENT_H

#include "tm_error.h"

/*
 * Splits "schema.name" into its two identifiers: unquoted parts are folded
 * to lower case, quoted parts are kept as written ("" is a quote). Without a
 * schema, default_schema is used. *schema and *name are new strings (caller
 * frees). Returns 0, or -1 with err set.
 */
int ident_parse_qualified(const char *text, const char *default_schema, char **schema,
                          char **name, tm_error *err);

/* The bytes PostgreSQL keeps of a name (NAMEDATALEN - 1). */
#define IDENT_NAME_BYTES 63

/*
 * The n-th name (n >= 1) to move something dropped on the source aside
 * under on the target: "name (dropped)", "name (dropped 2)", ..., the name
 * cut at a character boundary so that the whole fits IDENT_NAME_BYTES.
 */
void ident_aside_name(const char *name, int n, char out[IDENT_NAME_BYTES + 1]);
/* The same with another word: "name (set aside)", "name (set aside 2)". */
void ident_aside_label(const char *name, const char *label, int n,
                       char out[IDENT_NAME_BYTES + 1]);

#endif
