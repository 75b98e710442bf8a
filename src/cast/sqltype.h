/*
 * sqltype.h: type names as PostgreSQL's format_type() spells them
 * ("numeric(12,2)", "character varying(20)", "timestamp(3) with time zone",
 * "\"My Schema\".\"My Type\"[]"), parsed into parts and checked.
 *
 * A type name taken from a captured DDL message is untrusted text: it is
 * accepted into target DDL only if it parses here, and is then rendered
 * again from the parts, so nothing but a type name can reach the target.
 */
#ifndef TIDEMARK_SQLTYPE_H
#define TIDEMARK_SQLTYPE_H

#include <stdbool.h>

#include "strbuf.h"
#include "tm_error.h"

#define SQLTYPE_NAME_MAX 128
#define SQLTYPE_MAX_MODS 4

typedef struct sqltype {
	char schema[SQLTYPE_NAME_MAX]; /* "" when unqualified */
	char name[SQLTYPE_NAME_MAX];   /* e.g. "numeric", "character varying",
	                                * "timestamp with time zone", "My Type" */
	bool quoted;                   /* name was a quoted identifier */
	bool schema_quoted;
	int nmods;
	int mods[SQLTYPE_MAX_MODS];    /* typmod arguments: (12,2) -> 12, 2 */
	char fields[32];               /* interval fields: "year to month" */
	int ndims;                     /* array dimensions: [] count */
} sqltype;

/* Parses format_type() output. Returns 0, or -1 with err set. */
int sqltype_parse(const char *text, sqltype *out, tm_error *err);

/* Writes the type back as SQL: keyword names and plain lower-case names as
 * they are (a single token, such as integer or boolean), anything that was
 * quoted as a quoted identifier. */
void sqltype_render(const sqltype *t, strbuf *sb);

/* Whether t has the shape sqltype_parse gives: unquoted names are plain
 * lower-case tokens or keyword types, interval fields are format_type()'s
 * and only on interval, modifiers are within what sqltype_parse reads.
 * For a sqltype built by hand before it is rendered into SQL: a
 * well-formed type renders to text that parses back to the same type. */
bool sqltype_is_wellformed(const sqltype *t);

/* The same type without modifiers or array bounds ("numeric"). */
const char *sqltype_base(const sqltype *t);

/* Whether type_sql (format_type()'s spelling) is a built-in type, or an
 * array of one, whose values name objects of the database
 * that holds them: the reg* types (regclass, regtype, regproc, ...: an oid
 * there, printed as the object's name and read back by looking the name
 * up) and aclitem (roles). Another database has those objects under other
 * oids or not at all, so only their text means the same there. */
bool sqltype_names_objects(const char *type_sql);

#endif
