/*
 * tabledef.h: a table's definition as tidemark keeps it: columns by attnum
 * with their types, collations, NOT NULL flags, generation expressions and
 * the key, and the user-defined types the columns need. Built from the
 * source's catalog (setup), from DDL capture messages, and stored per
 * schema version on the target as JSON.
 */
#ifndef TIDEMARK_TABLEDEF_H
#define TIDEMARK_TABLEDEF_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "srctype.h"
#include "tm_error.h"

typedef struct tabledef_column {
	int attnum;
	char *name;       /* owned */
	char *type_sql;   /* owned: the source type as SQL, e.g. numeric(12,2) */
	char *target_type;/* owned: the type a new target column gets: the same
	                   * (enums, domains, composite and extension types
	                   * created on the target), or text when the target
	                   * cannot have it (kept_as says why) */
	uint32_t type_oid;
	int32_t typmod;
	uint32_t type_ref;/* the user-defined type it names (its element for an
	                   * array), 0 for pg_catalog's */
	srctype_collation *collation; /* owned: its effective collation on the
	                   * source; NULL when not collatable */
	bool collate;     /* the target column has COLLATE of collation's name */
	char *generated;  /* owned: a stored generated column's expression as the
	                   * source wrote it (never pasted: see ddl_parse.h), NULL */
	char *kept_as;    /* owned: why the target column differs from the source's
	                   * (type kept as text, collation missing, generated
	                   * column left out), NULL when it does not */
	bool not_null;
	bool is_key;      /* part of the primary key / replica identity */
	int key_pos;      /* its place in the key's index, 1, 2, ...; 0 when not
	                   * known (definitions from before key positions) */
} tabledef_column;

typedef struct tabledef {
	char *schema;     /* owned */
	char *name;       /* owned */
	uint32_t relid;
	char replident;   /* pg_class.relreplident: d, n, f, i ('d' when not known) */
	char persistence; /* pg_class.relpersistence: p, u ('p' when not known) */
	int ncols;
	tabledef_column *cols; /* owned array, in attnum order */
	srctype_list types;    /* owned: the user-defined types the columns need */
} tabledef;

tabledef *tabledef_new(const char *schema, const char *name, uint32_t relid);
/* Appends a column; strings are copied. Returns the new column. */
tabledef_column *tabledef_add_column(tabledef *t, int attnum, const char *name,
                                     const char *type_sql, uint32_t type_oid, int32_t typmod,
                                     bool not_null, bool is_key);
/* Sets a column's target type (copied); NULL means "same as type_sql". */
void tabledef_set_target_type(tabledef_column *c, const char *target_type);
/* Sets (copies) or clears (NULL) why the target column differs. */
void tabledef_set_kept_as(tabledef_column *c, const char *reason);
void tabledef_free(tabledef *t);
tabledef *tabledef_copy(const tabledef *t);

int tabledef_nkeys(const tabledef *t);
/* How many columns the stream carries (tabledef_column_streamed). A table
 * without any is not replicated: its rows would be nothing but their
 * number. */
int tabledef_nstored(const tabledef *t);
/* The key columns in key order (by key_pos where every key column has
 * one, else by attnum): fills out (room for t->ncols) and returns their
 * count. */
int tabledef_key_columns(const tabledef *t, const tabledef_column **out);
const tabledef_column *tabledef_find(const tabledef *t, const char *name);

/* The key columns' names as JSON array text (new string, caller frees). */
char *tabledef_keys_json(const tabledef *t);

/* The columns as a JSON array (new reference). */
json_t *tabledef_columns_to_json(const tabledef *t);
/* Adds the columns of a JSON array made by tabledef_columns_to_json (or by
 * the source's capture trigger) to t. Returns 0, or -1 with err set (also
 * when two columns have the same attnum or name). */
int tabledef_columns_from_json(tabledef *t, const json_t *cols, tm_error *err);
/* Adds the "types" of a table object (the capture's) to t->types. */
int tabledef_types_from_json(tabledef *t, const json_t *types, tm_error *err);
/* A table object of the capture (tidemark.capture_tables: "relid",
 * "schema", "name", "replident", "persistence", "columns", "types") into a
 * new tabledef (*out, caller frees). Returns 0, or -1 with err set and
 * *out NULL (a table without schema, name or relid; a column or type that
 * cannot be read). */
int tabledef_from_json(const json_t *o, tabledef **out, tm_error *err);

/* Does the stream send this column? (pgoutput leaves generated columns out.) */
bool tabledef_column_streamed(const tabledef_column *c);

#endif
