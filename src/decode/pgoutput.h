/*
 * pgoutput.h: the pure decoder for PostgreSQL's streaming replication copy
 * messages and the pgoutput logical decoding protocol (versions 1 to 3).
 *
 * No I/O, no globals, no libpq: bytes in, structs out. Every length is
 * checked against the input; a short or malformed message returns -1 with a
 * description in the tm_error, never reads outside the input.
 *
 * Ownership: the decoded structs borrow from two places and own nothing.
 *   - strings and value bytes point into the input buffer (which must stay
 *     alive and unchanged while the message is used);
 *   - arrays (columns, tuple values, relation ids) come from the caller's
 *     scratch arena, reset by the caller after each message.
 * Strings are NUL-terminated in place (pgoutput sends them that way); value
 * bytes ('t' and 'b') are NOT NUL-terminated: use len.
 *
 * The byte layout of every message is described at the top of pgoutput.c.
 */
#ifndef TIDEMARK_PGOUTPUT_H
#define TIDEMARK_PGOUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "lsn.h"
#include "tm_error.h"

/* Microseconds since 2000-01-01 00:00:00 UTC, PostgreSQL's TimestampTz. */
typedef int64_t pg_timestamp;

/* ---- the replication copy stream (CopyData payloads) ---- */

typedef enum pgoutput_copy_kind {
	PGOUTPUT_COPY_XLOGDATA = 'w',
	PGOUTPUT_COPY_KEEPALIVE = 'k',
} pgoutput_copy_kind;

typedef struct pgoutput_copydata {
	pgoutput_copy_kind kind;
	tm_lsn wal_start;        /* 'w': start of the data; unused for 'k' */
	tm_lsn wal_end;          /* 'w': server's current end of WAL; 'k': likewise */
	pg_timestamp send_time;
	bool reply_requested;    /* 'k' only */
	const char *data;        /* 'w': the pgoutput message (borrowed) */
	size_t len;
} pgoutput_copydata;

/* Reads one CopyData payload of a START_REPLICATION stream. */
int pgoutput_read_copydata(const char *buf, size_t len, pgoutput_copydata *out, tm_error *err);

/* Standby status update ('r'): writes 34 bytes into out, returns 34. */
#define PGOUTPUT_STATUS_LEN 34
size_t pgoutput_write_status(char out[PGOUTPUT_STATUS_LEN], tm_lsn write, tm_lsn flush,
                             tm_lsn apply, pg_timestamp now, bool reply_requested);

/* ---- pgoutput logical messages ---- */

typedef enum pgoutput_kind {
	PGOUTPUT_BEGIN = 'B',
	PGOUTPUT_COMMIT = 'C',
	PGOUTPUT_ORIGIN = 'O',
	PGOUTPUT_RELATION = 'R',
	PGOUTPUT_TYPE = 'Y',
	PGOUTPUT_INSERT = 'I',
	PGOUTPUT_UPDATE = 'U',
	PGOUTPUT_DELETE = 'D',
	PGOUTPUT_TRUNCATE = 'T',
	PGOUTPUT_MESSAGE = 'M',
	PGOUTPUT_STREAM_START = 'S',
	PGOUTPUT_STREAM_STOP = 'E',
	PGOUTPUT_STREAM_COMMIT = 'c',
	PGOUTPUT_STREAM_ABORT = 'A',
} pgoutput_kind;

/* One column value of a tuple. */
typedef enum pgoutput_value_kind {
	PGOUTPUT_VALUE_NULL = 'n',
	PGOUTPUT_VALUE_UNCHANGED = 'u', /* unchanged TOASTed value: not sent */
	PGOUTPUT_VALUE_TEXT = 't',
	PGOUTPUT_VALUE_BINARY = 'b',
} pgoutput_value_kind;

typedef struct pgoutput_value {
	pgoutput_value_kind kind;
	uint32_t len;        /* 't'/'b' only */
	const char *data;    /* 't'/'b' only; borrowed, not NUL-terminated */
} pgoutput_value;

typedef struct pgoutput_tuple {
	uint16_t ncols;
	pgoutput_value *values; /* scratch arena */
} pgoutput_tuple;

typedef struct pgoutput_column {
	bool is_key;         /* flags bit 1: part of the replica identity */
	const char *name;    /* borrowed */
	uint32_t type_oid;
	int32_t typmod;
} pgoutput_column;

#define PGOUTPUT_TRUNCATE_CASCADE 1
#define PGOUTPUT_TRUNCATE_RESTART_SEQS 2
#define PGOUTPUT_MESSAGE_TRANSACTIONAL 1

typedef struct pgoutput_msg {
	pgoutput_kind kind;
	/* Set for data messages (R, Y, I, U, D, T, M) sent inside a streamed
	 * transaction block (between Stream Start and Stream Stop): the xid of
	 * the streamed transaction. 0 otherwise. */
	uint32_t stream_xid;
	union {
		struct {
			tm_lsn final_lsn;         /* LSN of the commit record */
			pg_timestamp commit_time;
			uint32_t xid;
		} begin;
		struct {
			uint8_t flags;
			tm_lsn commit_lsn;        /* LSN of the commit record */
			tm_lsn end_lsn;           /* end of the commit record: resume point */
			pg_timestamp commit_time;
		} commit;
		struct {
			tm_lsn origin_lsn;
			const char *name;
		} origin;
		struct {
			uint32_t relid;
			const char *nspname;
			const char *relname;
			char replident;           /* 'd', 'n', 'f' or 'i' */
			uint16_t ncols;
			pgoutput_column *cols;    /* scratch arena */
		} relation;
		struct {
			uint32_t type_oid;
			const char *nspname;
			const char *typname;
		} type;
		struct {
			uint32_t relid;
			pgoutput_tuple newtup;
		} insert;
		struct {
			uint32_t relid;
			char old_kind;            /* 0 (none), 'K' (old key) or 'O' (old row) */
			pgoutput_tuple oldtup;    /* valid when old_kind != 0 */
			pgoutput_tuple newtup;
		} update;
		struct {
			uint32_t relid;
			char old_kind;            /* 'K' or 'O' */
			pgoutput_tuple oldtup;
		} delete;
		struct {
			uint8_t options;          /* PGOUTPUT_TRUNCATE_* */
			uint32_t nrelids;
			uint32_t *relids;         /* scratch arena */
		} truncate;
		struct {
			uint8_t flags;            /* PGOUTPUT_MESSAGE_TRANSACTIONAL */
			tm_lsn lsn;
			const char *prefix;
			uint32_t len;
			const char *content;      /* borrowed, not NUL-terminated */
		} message;
		struct {
			uint32_t xid;
			bool first_segment;
		} stream_start;
		struct {
			uint32_t xid;
			uint8_t flags;
			tm_lsn commit_lsn;
			tm_lsn end_lsn;
			pg_timestamp commit_time;
		} stream_commit;
		struct {
			uint32_t xid;
			uint32_t subxid;
		} stream_abort;
	} u;
} pgoutput_msg;

/*
 * Decoder state across messages: whether we are inside a streamed block
 * (data messages then carry a leading xid). Zero-initialise it, or use
 * pgoutput_reader_init.
 */
typedef struct pgoutput_reader {
	int proto_version;   /* 1..3; streaming needs 2; 0 accepts all */
	bool in_stream;      /* between Stream Start and Stream Stop */
} pgoutput_reader;

void pgoutput_reader_init(pgoutput_reader *r, int proto_version);

/*
 * Decodes one pgoutput message (the payload of an XLogData copy message).
 * Arrays go to scratch. Returns 0, or -1 with err set on malformed input.
 */
int pgoutput_read_message(pgoutput_reader *r, const char *buf, size_t len, arena *scratch,
                          pgoutput_msg *out, tm_error *err);

/* Name of a message kind for logs ("Insert", "Stream Commit", ...). */
const char *pgoutput_kind_name(int kind);

/* pg_timestamp <-> Unix time in microseconds. */
int64_t pgoutput_timestamp_to_unix_us(pg_timestamp t);
pg_timestamp pgoutput_timestamp_from_unix_us(int64_t us);

#endif
