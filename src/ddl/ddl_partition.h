/*
 * ddl_partition.h: what a captured change means for a partitioned table
 * that tidemark replicates. Pure: the event and what tidemark knew in, a
 * plan out.
 *
 * A partitioned table is replicated as one table, its root: pgoutput sends
 * the changes of every partition as changes of the root (the publication's
 * publish_via_partition_root), and the copy reads the whole hierarchy. A
 * partition is never a table of its own on the target; tidemark keeps the
 * list of the root's partitions, at every level, by oid with their parent
 * (tidemark.partitions), to see what a change did to the hierarchy:
 *   - a partition created (CREATE TABLE ... PARTITION OF) holds no rows: it
 *     is recorded, nothing more;
 *   - a table attached (ATTACH PARTITION) brings its rows into the root, a
 *     partition detached (DETACH PARTITION, also CONCURRENTLY) or dropped
 *     takes its rows out, and no row change in the stream says so: the
 *     root is copied again (a copy over rows the target has deletes those
 *     the source no longer has).
 * A capture message lists every table a command touched together with all
 * of their partitions, at every level (migrations/source/001_capture.sql):
 * so a partition recorded under a listed table that the message no longer
 * lists has left the hierarchy.
 */
#ifndef TIDEMARK_DDL_PARTITION_H
#define TIDEMARK_DDL_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

#include "ddl_event.h"

/* A partition of a replicated root, as tidemark last knew it. */
typedef struct ddl_part_member {
	uint32_t relid;
	uint32_t parent;     /* its parent's relid: the root's, or another partition's */
	char *schema;        /* owned */
	char *name;          /* owned */
} ddl_part_member;

/* A replicated partitioned table and its recorded partitions. */
typedef struct ddl_part_root {
	int table_id;
	uint32_t relid;
	char *schema;              /* owned, may be NULL: its names, for the logs */
	char *name;
	int nmembers;
	ddl_part_member *members;  /* owned */
} ddl_part_root;

typedef struct ddl_part_plan {
	int nadd;
	ddl_part_member *add;      /* owned: partitions to record (new, or with another
	                            * parent or name) */
	int nremove;
	uint32_t *remove;          /* owned: partitions that left the hierarchy */
	bool recopy;               /* rows came or went without row changes: copy the
	                            * root again */
	char *why;                 /* owned: what happened, for the logs; NULL if nothing */
} ddl_part_plan;

/* Appends a member (strings copied). */
void ddl_part_root_add(ddl_part_root *r, uint32_t relid, uint32_t parent, const char *schema,
                       const char *name);
void ddl_part_root_clear(ddl_part_root *r);
const ddl_part_member *ddl_part_root_find(const ddl_part_root *r, uint32_t relid);

/* What a ddl or drop event means for one root (*out is new: free it with
 * ddl_part_plan_free). Other kinds give an empty plan. */
void ddl_partition_plan(const ddl_event *e, const ddl_part_root *root, ddl_part_plan *out);
void ddl_part_plan_free(ddl_part_plan *p);

/*
 * A partitioned table has no storage, so a column added to it with a
 * constant default has no stored value for existing rows there: its leaf
 * partitions have it (each the same). The root's columns with has_missing
 * and missing taken from a leaf partition listed in the event where the
 * root's own say nothing: a new array parallel to root->def->cols (free the
 * array only: its strings are the event's).
 */
ddl_event_column *ddl_partition_root_columns(const ddl_event *e, const ddl_event_table *root);

#endif
