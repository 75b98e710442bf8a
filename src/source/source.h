/*
 * source.h: the replication connection to the source. Starts pgoutput
 * streaming from a slot, hands over raw CopyData payloads (decoding is the
 * pure decoder's job) and sends standby status updates.
 *
 * The flush position reported to the source is only ever a position whose
 * effects are durably committed on the target: the caller passes it.
 */
#ifndef TIDEMARK_SOURCE_H
#define TIDEMARK_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>

#include "lsn.h"

typedef struct source source;

typedef struct source_options {
	const char *conninfo;     /* borrowed */
	const char *slot;
	const char *publication;
	tm_lsn start;             /* resume point: end of the last applied commit */
	int proto_version;        /* 2 */
	bool streaming;           /* ask for transactions in progress to be streamed */
} source_options;

/* Connects and issues START_REPLICATION. *out is new (source_close). */
int source_open(const source_options *o, source **out);
void source_close(source *s);

/*
 * Waits up to timeout_ms for the next CopyData payload. On TM_OK, *len is 0
 * when nothing arrived in time; otherwise *buf holds *len bytes, borrowed
 * until the next call. The stream ending is a PGCONN_RETRY_SOURCE.
 */
int source_read(source *s, int timeout_ms, const char **buf, size_t *len);

/* A wait of source_read also ends, with nothing read, when fd is readable
 * (the target answering a commit the apply waits for); -1: none. */
void source_wake_on(source *s, int fd);

/* Is a complete message already buffered (no wait needed)? */
bool source_has_pending(source *s);

/* Standby status update: write/flush/apply = flushed. */
int source_feedback(source *s, tm_lsn flushed, bool reply_requested);

/* The source server's identity, from a short replication connection of
 * its own: IDENTIFY_SYSTEM, and TIMELINE_HISTORY of its current timeline
 * when asked and the timeline is not the first. */
typedef struct source_identity {
	char system_id[32];
	uint32_t timeline;
	tm_lsn wal_end;           /* IDENTIFY_SYSTEM's xlogpos */
	char *history;            /* owned: the timeline's history file; NULL for timeline 1 */
	size_t history_len;
} source_identity;

int source_identify(const char *conninfo, bool history, source_identity *out);
void source_identity_clear(source_identity *id);

/* PostgreSQL 17 and later: makes an existing slot a failover slot
 * (ALTER_REPLICATION_SLOT ... (FAILOVER true)). */
int source_set_failover(const char *conninfo, const char *slot);

#endif
