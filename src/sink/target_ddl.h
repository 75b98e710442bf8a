/*
 * target_ddl.h: SQL for the target's tables, built from structure (a
 * tabledef, parsed type names) with every identifier quoted. Pure: the
 * statements are executed by the caller.
 */
#ifndef TIDEMARK_TARGET_DDL_H
#define TIDEMARK_TARGET_DDL_H

#include "strbuf.h"
#include "tabledef.h"
#include "tm_error.h"

/* CREATE SCHEMA IF NOT EXISTS "schema" */
void target_ddl_create_schema(strbuf *sql, const char *schema);

/* CREATE TABLE IF NOT EXISTS "schema"."name" (... , PRIMARY KEY (...)),
 * each column with its target_type (and COLLATE when c->collate). Generated
 * columns are left out: they are added one by one after
 * (target_ddl_add_generated), so that one the target refuses leaves the
 * others. Fails (nothing written) when a type does not parse as a type
 * name. */
int target_ddl_create_table(strbuf *sql, const char *schema, const char *name,
                            const tabledef *t, tm_error *err);

/* Appends a type, re-rendered from its parse (see sqltype.h). */
int target_ddl_append_type(strbuf *sql, const char *type_text, tm_error *err);

/* Appends " COLLATE "schema"."name"" (nothing when either is NULL). */
void target_ddl_append_collate(strbuf *sql, const char *schema, const char *name);

/* Appends a string literal: 'text' with quotes doubled (the sessions use
 * standard_conforming_strings = on). */
void target_ddl_append_literal(strbuf *sql, const char *value);

/* ALTER TABLE "schema"."table" ... for one change each. */
void target_ddl_rename_table(strbuf *sql, const char *schema, const char *table,
                             const char *new_name);
void target_ddl_set_schema(strbuf *sql, const char *schema, const char *table,
                           const char *new_schema);
void target_ddl_rename_column(strbuf *sql, const char *schema, const char *table,
                              const char *column, const char *new_name);
void target_ddl_drop_column(strbuf *sql, const char *schema, const char *table,
                            const char *column);
void target_ddl_not_null(strbuf *sql, const char *schema, const char *table, const char *column,
                         bool set);
/* ADD COLUMN "c" type [COLLATE "cs"."cn"] [DEFAULT 'value'::type]: existing
 * rows get value. coll_schema/coll_name NULL: no COLLATE. */
int target_ddl_add_column(strbuf *sql, const char *schema, const char *table, const char *column,
                          const char *type, const char *coll_schema, const char *coll_name,
                          const char *value, tm_error *err);
/* ADD COLUMN "c" type [COLLATE ...] GENERATED ALWAYS AS (expr) STORED; expr
 * as ddl_parse_generation_expr wrote it (never source text). */
int target_ddl_add_generated(strbuf *sql, const char *schema, const char *table,
                             const char *column, const char *type, const char *coll_schema,
                             const char *coll_name, const char *expr, tm_error *err);
/* ALTER COLUMN "c" DROP EXPRESSION: a generated column becomes an ordinary
 * one, keeping its values. */
void target_ddl_drop_expression(strbuf *sql, const char *schema, const char *table,
                                const char *column);
/* ALTER COLUMN "c" TYPE type COLLATE "cs"."cn" (coll NULL: the default). */
int target_ddl_set_collation(strbuf *sql, const char *schema, const char *table,
                             const char *column, const char *type, const char *coll_schema,
                             const char *coll_name, tm_error *err);
void target_ddl_drop_default(strbuf *sql, const char *schema, const char *table,
                             const char *column);
/* ALTER COLUMN "c" TYPE to USING "c"::to (via text when no direct cast). */
int target_ddl_alter_type(strbuf *sql, const char *schema, const char *table, const char *column,
                          const char *from, const char *to, tm_error *err);
/* DROP CONSTRAINT "old", ADD PRIMARY KEY (...); old may be NULL; no keys:
 * only the DROP (the table has no key any more). */
void target_ddl_set_key(strbuf *sql, const char *schema, const char *table, const char *old_pk,
                        int nkeys, char *const *keys);

#endif
