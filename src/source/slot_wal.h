/*
 * slot_wal.h: what a replication slot keeps of the source's WAL, and when
 * that is at risk. Pure.
 *
 * The source keeps every WAL segment from the slot's restart point on.
 * With max_slot_wal_keep_size set, it removes WAL past that size at a
 * checkpoint and invalidates the slot (wal_status 'lost'); 'unreserved'
 * says the next checkpoint may do it, and safe_wal_size how much the
 * source may write before the slot loses WAL it needs.
 */
#ifndef TIDEMARK_SLOT_WAL_H
#define TIDEMARK_SLOT_WAL_H

#include <stdbool.h>

/* -1 where the source does not say (no slot, or no limit). */
typedef struct slot_wal {
	bool exists;
	long long retained;       /* pg_current_wal_lsn() - restart_lsn, bytes */
	char status[16];          /* wal_status: reserved, extended, unreserved, lost */
	long long safe;           /* safe_wal_size, bytes; -1 without a limit */
	long long keep;           /* max_slot_wal_keep_size, bytes; -1: no limit */
} slot_wal;

/* At risk: 'unreserved', or less than a quarter of max_slot_wal_keep_size
 * left to write before the slot loses WAL. A slot already lost is not at
 * risk: it is invalidated (run's start says so). */
bool slot_wal_at_risk(const slot_wal *s);

#endif
