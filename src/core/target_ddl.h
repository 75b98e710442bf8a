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
 * each column with its target_type. Fails (nothing written) when a type
 * does not parse as a type name. */
int target_ddl_create_table(strbuf *sql, const char *schema, const char *name,
                            const tabledef *t, tm_error *err);

/* Appends a type, re-rendered from its parse (see sqltype.h). */
int target_ddl_append_type(strbuf *sql, const char *type_text, tm_error *err);

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
/* ADD COLUMN "c" type [DEFAULT 'value'::type]: existing rows get value. */
int target_ddl_add_column(strbuf *sql, const char *schema, const char *table, const char *column,
                          const char *type, const char *value, tm_error *err);
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
