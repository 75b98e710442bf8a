/*
 * ddl_parse_int.h: shared by the ddl_parse_*.c files; not a public header.
 *
 * libpg_query's JSON leaves out false booleans, zero integers, NULL
 * pointers and empty lists, writes enums as strings and chars as one-letter
 * strings: every accessor below accepts a missing key or a value of the
 * wrong type and answers "absent".
 */
#ifndef TIDEMARK_DDL_PARSE_INT_H
#define TIDEMARK_DDL_PARSE_INT_H

#include <jansson.h>

#include "ddl_parse.h"

/* State of one walk over a parse tree. */
typedef struct ddl_walk {
	ddl_parse_result *res; /* where changes go; owns what is copied */
	const char *sql; /* the whole input: parse locations index it */
	size_t sql_len;
	size_t stmt_index; /* statement being walked */
	ddl_parse_stmt_class cls; /* its class, set by the node handlers */
	const char *default_schema; /* schema of CREATE SCHEMA ... elements */
	size_t stmts_cap; /* allocated length of res->stmts */
	size_t changes_cap; /* allocated length of res->changes */
	tm_error   *err; /* why the current statement could not be read */
} ddl_walk;

/* ddl_parse_json.c: checked reads of libpg_query's JSON */
json_t *ddl_json_get(const json_t *obj, const char *key);
json_t *ddl_json_array(const json_t *obj, const char *key);
const char *ddl_json_str(const json_t *obj, const char *key);
bool ddl_json_bool(const json_t *obj, const char *key);
int64_t ddl_json_int(const json_t *obj, const char *key, int64_t dflt);
char ddl_json_char(const json_t *obj, const char *key);
bool ddl_json_str_is(const json_t *obj, const char *key, const char *value);
const char *ddl_json_node_name(const json_t *node);
json_t *ddl_json_node_body(const json_t *node);
json_t *ddl_json_node(const json_t *node, const char *name);

/* ddl_parse_json.c: copies into the result's arena */
char *ddl_walk_strdup(ddl_walk *w, const char *s);
void *ddl_walk_grow(ddl_walk *w, void *items, size_t n, size_t *cap, size_t elsize);
int ddl_walk_names(ddl_walk *w, const json_t *list, const char ***names, size_t *n);
char *ddl_walk_quoted_names(ddl_walk *w, const json_t *list);
int ddl_walk_push(ddl_walk *w, const ddl_parse_change *ch);

/* ddl_parse_type.c */
int ddl_type_read(ddl_walk *w, const json_t *type_name, ddl_parse_type *out);
int ddl_int_const(ddl_walk *w, const json_t *a_const, int64_t *out);

/* ddl_parse_scan.c: reading the text itself */
size_t ddl_scan_skip_space(const char *s, size_t len, size_t pos);
void ddl_scan_trim(const char *s, size_t *start, size_t *end);
int ddl_scan_char_pos(const char *s, size_t byte);
bool ddl_scan_utf8(const char *s, size_t len, size_t *bad);
size_t ddl_scan_depth(const char *s, size_t len, size_t *where);
int ddl_scan_int_at(const char *s, size_t len, size_t pos, int64_t *out);
size_t ddl_scan_expr_end(const char *s, size_t len, size_t pos);

/* The token at pos (s[pos] is not past len): its kind, and the position
 * after it. A string is '...', E'...' (with its E) or $tag$...$tag$; an
 * unterminated one runs to len. */
typedef enum ddl_scan_tok {
	DDL_TOK_SPACE,
	DDL_TOK_COMMENT,	/* -- to the end of the line, or nested slash-star */
	DDL_TOK_STRING,
	DDL_TOK_IDENT,		/* "quoted" */
	DDL_TOK_WORD,		/* a keyword, an identifier, a number, $1 */
	DDL_TOK_OTHER		/* one byte: an operator's, a bracket, a comma, ... */
} ddl_scan_tok;
size_t ddl_scan_token(const char *s, size_t len, size_t pos, ddl_scan_tok *tok);

/* ddl_parse_stmt.c, ddl_parse_alter.c: one statement */
int ddl_walk_stmt(ddl_walk *w, const char *node, const json_t *body);
int ddl_walk_alter_table(ddl_walk *w, const json_t *body);
int ddl_walk_relation(ddl_walk *w, const json_t *rangevar, ddl_parse_change *ch);
int ddl_walk_column(ddl_walk *w, const json_t *coldef, ddl_parse_column *col);
int ddl_walk_other(ddl_walk *w, const char *node, const json_t *body,
						   const char *detail);

#endif
