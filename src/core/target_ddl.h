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

#endif
