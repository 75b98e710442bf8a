/*
 * net_change.h: the net effect of a group's row changes, per table and
 * key. A target transaction holds whole source transactions and commits
 * at once, so readers never see the states inside it: only each key's
 * last state matters. Pure: values in, entries out.
 *
 * Each entry is a key's state after the changes put so far:
 *   NET_ROW      the whole row (an insert, or an update that sent every
 *                column, or one that sent some onto a known row): upserted
 *   NET_PARTIAL  some columns of a row not known here (an update whose
 *                unchanged TOAST values were not sent): updated by key
 *   NET_DELETE   no row: deleted by key
 * Putting a change onto a key's entry:
 *   row or delete          replaces it
 *   partial onto a row     sets the columns sent: a row still
 *   partial onto partial   sets them too: a partial of both columns' sets
 *   partial onto a delete  NET_CONFLICT (the source updated a row this
 *                          group deleted: cannot be; the caller flushes
 *                          and applies the change alone)
 * Entries come out in the order of their last change, so that a key
 * deleted before another takes its unique values still goes first.
 *
 * Ownership: the set copies every value it is given; entries are
 * borrowed by net_each's callback until net_clear.
 */
#ifndef TIDEMARK_NET_CHANGE_H
#define TIDEMARK_NET_CHANGE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum net_kind { NET_ROW = 1, NET_PARTIAL, NET_DELETE } net_kind;

typedef struct net_entry {
	int table;               /* the caller's number for the table */
	net_kind kind;
	int ncols;
	char **values;           /* ncols: NULL is SQL NULL (and, for a delete, a
	                          * column that is not a key column) */
	size_t *lens;
	bool *present;           /* ncols: the columns set (NET_PARTIAL); else all */
	/* internal */
	char *key;               /* the encoded key (codec.h) */
	size_t key_len;
	struct net_entry *prev, *next; /* the order of last change */
	struct net_entry *chain;       /* the hash bucket's next */
	size_t bytes;
} net_entry;

typedef struct net_set net_set;

/* NET_PUT_OVER_DELETE: a row put where the set held the key deleted (the
 * delete and the row are now one entry, the row); NET_CONFLICT: a partial
 * onto a delete, refused (nothing changed) */
typedef enum net_put_result { NET_PUT_OK, NET_PUT_OVER_DELETE, NET_CONFLICT } net_put_result;

net_set *net_new(void);
void net_free(net_set *ns);

/*
 * Puts one change of table (ncols columns, key columns key_idx[0..nkeys))
 * with values[i] (NULL: SQL NULL) of lens[i]; present (may be NULL: all):
 * the columns sent, for NET_PARTIAL. For NET_DELETE only the key columns'
 * values are read. The key columns must be present and not NULL.
 */
net_put_result net_put(net_set *ns, int table, net_kind kind, int ncols, int nkeys,
                       const int *key_idx, const char *const *values, const size_t *lens,
                       const bool *present);

/* Is the key of this change (as net_put reads it) held as a delete? */
bool net_deleted(net_set *ns, int table, int nkeys, const int *key_idx,
                 const char *const *values, const size_t *lens);

/* Entries held, and the bytes their values take. */
long net_count(const net_set *ns);
size_t net_bytes(const net_set *ns);
/* Changes put since the last clear (to report what netting saved). */
long net_puts(const net_set *ns);

/* Calls fn for each entry, in the order of last change, until fn returns
 * non-zero (returned); then the entries stay until net_clear. */
int net_each(const net_set *ns, int (*fn)(void *ctx, const net_entry *e), void *ctx);
/* Forgets every entry. */
void net_clear(net_set *ns);

#endif
