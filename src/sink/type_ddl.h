/*
 * type_ddl.h: SQL for the target's types, collations and extensions, built
 * from structure (srctype.h definitions, type names parsed by sqltype)
 * with every identifier quoted and every value a quoted literal. Pure: the
 * statements are run by the caller. A type name that does not parse fails
 * the builder (nothing written), so nothing but a type name reaches SQL.
 */
#ifndef TIDEMARK_TYPE_DDL_H
#define TIDEMARK_TYPE_DDL_H

#include "srctype.h"
#include "strbuf.h"
#include "tm_error.h"

/* One attribute of a composite type as the target gets it. */
typedef struct type_ddl_attr {
	const char *name;
	const char *type;          /* format_type() text, re-rendered */
	const char *coll_schema;   /* COLLATE "schema"."name", or NULL */
	const char *coll_name;
} type_ddl_attr;

/* CREATE TYPE "s"."n" AS ENUM ('a', 'b', ...) */
void type_ddl_create_enum(strbuf *sql, const char *schema, const char *name,
                          const srctype_label *labels, int nlabels);
/* CREATE TYPE "s"."n" AS ("a" type [COLLATE ...], ...) */
int type_ddl_create_composite(strbuf *sql, const char *schema, const char *name,
                              const type_ddl_attr *attrs, int nattrs, tm_error *err);
/* CREATE DOMAIN "s"."n" AS base [COLLATE ...]: no constraint, no default
 * (see README.md: the target never refuses a value the source took). */
int type_ddl_create_domain(strbuf *sql, const char *schema, const char *name,
                           const char *base_type, const char *coll_schema,
                           const char *coll_name, tm_error *err);
/* CREATE EXTENSION IF NOT EXISTS "e" SCHEMA "s" */
void type_ddl_create_extension(strbuf *sql, const char *extension, const char *schema);
/* CREATE COLLATION IF NOT EXISTS "s"."n" (provider = ..., locale = '...' |
 * lc_collate = '...', lc_ctype = '...', deterministic = ...). Fails when
 * the collation is not srctype_collation_wellformed. */
int type_ddl_create_collation(strbuf *sql, const srctype_collation *c, tm_error *err);

/* ALTER TYPE / ALTER DOMAIN "s"."n" RENAME TO "new" | SET SCHEMA "new" */
void type_ddl_rename(strbuf *sql, bool domain, const char *schema, const char *name,
                     const char *new_name);
void type_ddl_set_schema(strbuf *sql, bool domain, const char *schema, const char *name,
                         const char *new_schema);

/* One step of srctype_enum_steps / srctype_composite_steps on the type
 * "s"."n": ALTER TYPE ... RENAME VALUE / ADD VALUE ... BEFORE|AFTER /
 * RENAME ATTRIBUTE / DROP ATTRIBUTE / ADD ATTRIBUTE / ALTER ATTRIBUTE ...
 * TYPE. For ADD_ATTR and ALTER_ATTR, attr is the attribute as the target
 * gets it (its type already resolved). */
int type_ddl_step(strbuf *sql, const char *schema, const char *name, const srctype_step *step,
                  const type_ddl_attr *attr, tm_error *err);

#endif
