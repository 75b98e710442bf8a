/*
 * ddl_event.h: the DDL capture message, as the source's event triggers
 * write it (migrations/source/001_capture.sql documents the JSON), read
 * into structs. Pure: text in, structs out; anything malformed is an error
 * with context, never a crash. The content is untrusted (any role can emit
 * a logical message with any prefix): type names in it are checked before
 * they reach target DDL (see sqltype.h), and identifiers are only ever
 * quoted.
 */
#ifndef TIDEMARK_DDL_EVENT_H
#define TIDEMARK_DDL_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "tabledef.h"
#include "tm_error.h"

typedef enum ddl_event_kind {
	DDL_EVENT_DDL,       /* ddl_command_end: the resulting definitions */
	DDL_EVENT_DROP,      /* sql_drop: what was dropped */
	DDL_EVENT_REWRITE,   /* table_rewrite: existing values may have changed */
	DDL_EVENT_TRUNCATE,  /* a partition, or a partitioned table, was truncated
	                      * (migrations/source/005_partitions.sql): "tables"
	                      * holds it */
} ddl_event_kind;

/* Per column of a table's resulting definition, beyond tabledef. */
typedef struct ddl_event_column {
	bool has_missing;    /* existing rows got a stored value (fast default) */
	char *missing;       /* owned: that value as text, NULL when none or NULL */
	bool has_default;
} ddl_event_column;

typedef struct ddl_event_table {
	tabledef *def;       /* owned: schema, name, relid, columns, the types they need */
	char relkind;
	char replident;
	uint32_t partition_of;   /* a partition: its parent's relid, else 0 */
	uint32_t partition_root; /* a partition: its topmost partitioned ancestor's, else 0 */
	ddl_event_column *cols; /* owned: parallel to def->cols */
} ddl_event_table;

typedef struct ddl_event_dropped {
	char *object_type;   /* owned: "table", "table column", ... */
	char *schema;        /* owned, may be NULL */
	char *name;          /* owned: object name (a column's name for columns) */
	char *identity;      /* owned */
	uint32_t objid;
	int objsubid;        /* attnum for a column */
} ddl_event_dropped;

typedef struct ddl_event {
	ddl_event_kind kind;
	char *command_tag;   /* owned, like every string here */
	char *statement;     /* NULL when an earlier message of the transaction holds it: */
	int statement_seq;   /* the seq of the message with the statement text */
	char *user;
	char *time;
	char *timezone;
	/* The session's DateStyle, IntervalStyle, extra_float_digits and
	 * bytea_output as the command ran (migrations/source/006): NULL from a
	 * capture that does not send them. */
	char *datestyle;
	char *intervalstyle;
	char *float_digits;
	char *bytea_output;
	long long xid;
	int seq;
	int ntables;
	ddl_event_table *tables;
	int ndropped;
	ddl_event_dropped *dropped;
	uint32_t rewrite_relid;   /* kind REWRITE */
	int rewrite_reason;
	srctype_list types;       /* kind DDL: the types the command created or
	                           * altered, with those they need (004) */
	char *error;              /* the trigger's own error, NULL when none */
} ddl_event;

/* Parses a message's content (len bytes, not NUL-terminated). *out is new
 * (ddl_event_free). Returns 0, or -1 with err set. */
int ddl_event_parse(const char *content, size_t len, ddl_event **out, tm_error *err);
void ddl_event_free(ddl_event *e);

/* The table of the event with this relid, or NULL. */
const ddl_event_table *ddl_event_table_by_relid(const ddl_event *e, uint32_t relid);

#endif
