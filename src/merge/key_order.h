/*
 * key_order.h: does the target order a table's key as the source does?
 *
 * The one comparison, made in one way: each side describes how it orders
 * each key column (codec.h: CODEC_ORDER_SQL), and codec_order_compare says
 * whether the two descriptions match. The snapshot makes it at each copy
 * (snap_reader.c), where it decides how a chunk is matched with the target;
 * setup and run make it too, so that the catalog
 * (tidemark.tables.key_order_same and key_order_reason) says it before any
 * copy, for `tidemark schema` and a warning.
 */
#ifndef TIDEMARK_KEY_ORDER_H
#define TIDEMARK_KEY_ORDER_H

#include <libpq-fe.h>

#include "catalog.h"
#include "sink.h"

/* The descriptors of a table's key columns (nkeys, in key order; an entry
 * is NULL for a column the table lacks) read on the source: *out new, the
 * caller frees each and the array. */
int key_order_source(PGconn *conn, const char *schema, const char *name, int nkeys,
                     char *const *keys, char ***out);
/* The same on the target, through the sink. */
int key_order_target(sink *s, const char *schema, const char *name, int nkeys,
                     char *const *keys, char ***out);

/* Compares the key's order on both servers and records the outcome in the
 * catalog, with a warning when they differ. The source is read as it is
 * now, by the table's name at the stream's position: when that name no
 * longer names the table or one of its key columns there (the stream is
 * behind a rename or a drop), nothing is judged, and the order is recorded
 * as not known (compared again at run's next start and at the table's
 * next schema change; a copy compares for itself). behind: the stream may
 * be behind the source's later changes (an enum's label added or renamed,
 * a collation changed after the position applied), so a difference is not
 * judged either: it is recorded as not known and *deferred set, for the
 * caller to compare again once caught up. */
int key_order_record(PGconn *source, sink *s, const catalog_table *t, bool behind,
                     bool *deferred);

#endif
