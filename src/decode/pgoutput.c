/*
 * pgoutput.c: decoder for the replication copy stream and the pgoutput
 * logical replication protocol, versions 1 to 3 (PostgreSQL 15).
 *
 * Integers are big-endian. "String" is a NUL-terminated byte string; its NUL
 * must lie within the message. Offsets in error messages count from the
 * first byte of the message (the type byte, or the copy message type).
 *
 * Replication copy stream (payloads of CopyData messages)
 * -------------------------------------------------------
 * XLogData, server to client:
 *   Byte1 'w'    type
 *   Int64        WAL start: LSN of the data (0 when the server sends none)
 *   Int64        WAL end: the server's current end of WAL
 *   Int64        send time, microseconds since 2000-01-01
 *   Byte n       the rest: one pgoutput message (below)
 * Primary keepalive, server to client (18 bytes):
 *   Byte1 'k'    type
 *   Int64        WAL end: the server's current end of WAL
 *   Int64        send time, microseconds since 2000-01-01
 *   Byte1        1: reply as soon as possible (else 0)
 * Standby status update, client to server (34 bytes):
 *   Byte1 'r'    type
 *   Int64        last WAL byte + 1 received and written
 *   Int64        last WAL byte + 1 flushed
 *   Int64        last WAL byte + 1 applied
 *   Int64        client clock, microseconds since 2000-01-01
 *   Byte1        1: the client asks for a reply to this message (else 0)
 *
 * pgoutput messages
 * -----------------
 * [xid] marks an Int32 transaction id that is present only inside a
 * streamed block (between Stream Start and Stream Stop; protocol 2 and up).
 * It is the xid of the (sub)transaction that made the change.
 *
 * Begin:          Byte1 'B'; Int64 final LSN (of the commit record);
 *                 Int64 commit time; Int32 xid.
 * Commit:         Byte1 'C'; Int8 flags (0); Int64 commit LSN; Int64 end
 *                 LSN (end of the commit record); Int64 commit time.
 * Origin:         Byte1 'O'; Int64 LSN of the commit on the origin server;
 *                 String origin name.
 * Relation:       Byte1 'R'; [xid]; Int32 relation OID; String namespace
 *                 ("" for pg_catalog); String relation name; Int8 replica
 *                 identity ('d' default, 'n' nothing, 'f' full, 'i' index);
 *                 Int16 number of columns; then per column:
 *                   Int8 flags (0, or 1: part of the replica identity key);
 *                   String name; Int32 type OID; Int32 type modifier.
 * Type:           Byte1 'Y'; [xid]; Int32 type OID; String namespace ("" for
 *                 pg_catalog); String type name.
 * Insert:         Byte1 'I'; [xid]; Int32 relation OID; Byte1 'N';
 *                 TupleData new row.
 * Update:         Byte1 'U'; [xid]; Int32 relation OID; optionally Byte1 'K'
 *                 (old key) or 'O' (old row) and TupleData; Byte1 'N';
 *                 TupleData new row.
 * Delete:         Byte1 'D'; [xid]; Int32 relation OID; Byte1 'K' (old key)
 *                 or 'O' (old row); TupleData.
 * Truncate:       Byte1 'T'; [xid]; Int32 number of relations; Int8 options
 *                 (1 CASCADE, 2 RESTART IDENTITY); Int32 relation OID, once
 *                 per relation.
 * Message:        Byte1 'M'; [xid]; Int8 flags (1: transactional); Int64
 *                 LSN of the message; String prefix; Int32 content length n;
 *                 Byte n content.
 * Stream Start:   Byte1 'S'; Int32 xid; Int8 1 for the first segment of the
 *                 transaction, else 0.
 * Stream Stop:    Byte1 'E'.
 * Stream Commit:  Byte1 'c'; Int32 xid; Int8 flags (0); Int64 commit LSN;
 *                 Int64 end LSN; Int64 commit time.
 * Stream Abort:   Byte1 'A'; Int32 xid of the top transaction; Int32 xid of
 *                 the aborted subtransaction (equal to the first when the
 *                 whole transaction aborts).
 * TupleData:      Int16 number of columns; then per column Byte1 kind:
 *                   'n' NULL, nothing follows;
 *                   'u' unchanged TOASTed value, nothing follows;
 *                   't' text, then Int32 length n and Byte n value;
 *                   'b' binary, then Int32 length n and Byte n value.
 *
 * Not supported (two-phase commit, protocol 3): Begin Prepare 'b', Prepare
 * 'P', Commit Prepared 'K', Rollback Prepared 'r', Stream Prepare 'p'.
 */
#include "pgoutput.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* From 1970-01-01 to 2000-01-01 (PostgreSQL's epoch), in microseconds. */
#define PG_EPOCH_UNIX_US INT64_C(946684800000000)

/*
 * A read position in one message. Every read checks the bytes left and
 * fails with a description naming the message, field and offset. The tuple
 * and column members only refine error messages.
 */
typedef struct cursor {
	const char *buf;      /* borrowed: the whole message */
	size_t len;
	size_t pos;
	const char *msg;      /* message name, e.g. "Update" */
	const char *tuple;    /* "old key", "old tuple", "new tuple" or NULL */
	unsigned col;         /* 1-based column being read; 0 if none */
	tm_error *err;
} cursor;

static void
cursor_init(cursor *c, const char *buf, size_t len, const char *msg, tm_error *err)
{
	c->buf = buf;
	c->len = len;
	c->pos = 0;
	c->msg = msg;
	c->tuple = NULL;
	c->col = 0;
	c->err = err;
}

static size_t
cursor_left(const cursor *c)
{
	return c->len - c->pos;
}

/*
 * Sets err to "<message>: [<tuple> ][column <n> ]<field> <detail> at offset
 * <at>" and returns -1.
 */
static int
cursor_fail(const cursor *c, size_t at, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
cursor_fail(const cursor *c, size_t at, const char *field, const char *fmt, ...)
{
	char where[64] = "";
	char detail[160];
	va_list ap;

	if (c->err == NULL)
		return -1;
	if (c->tuple != NULL)
		snprintf(where, sizeof where, "%s ", c->tuple);
	if (c->col > 0)
		snprintf(where + strlen(where), sizeof where - strlen(where), "column %u ", c->col);
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	return tm_error_set(c->err, "%s: %s%s %s at offset %zu", c->msg, where, field, detail, at);
}

/* Fails unless n more bytes are left for field. */
static int
cursor_need(const cursor *c, const char *field, size_t n)
{
	if (cursor_left(c) < n)
		return cursor_fail(c, c->pos, field, "needs %zu bytes but %zu are left", n,
						   cursor_left(c));
	return 0;
}

static uint64_t
get_be(const char *p, int nbytes)
{
	uint64_t v = 0;

	for (int i = 0; i < nbytes; i++)
		v = (v << 8) | (unsigned char) p[i];
	return v;
}

/* Reads an unsigned big-endian integer of nbytes (1, 2, 4 or 8). */
static int
read_uint(cursor *c, const char *field, int nbytes, uint64_t *out)
{
	if (cursor_need(c, field, (size_t) nbytes) != 0)
		return -1;
	*out = get_be(c->buf + c->pos, nbytes);
	c->pos += (size_t) nbytes;
	return 0;
}

static int
read_u8(cursor *c, const char *field, uint8_t *out)
{
	uint64_t v;

	if (read_uint(c, field, 1, &v) != 0)
		return -1;
	*out = (uint8_t) v;
	return 0;
}

static int
read_u16(cursor *c, const char *field, uint16_t *out)
{
	uint64_t v;

	if (read_uint(c, field, 2, &v) != 0)
		return -1;
	*out = (uint16_t) v;
	return 0;
}

static int
read_u32(cursor *c, const char *field, uint32_t *out)
{
	uint64_t v;

	if (read_uint(c, field, 4, &v) != 0)
		return -1;
	*out = (uint32_t) v;
	return 0;
}

static int
read_u64(cursor *c, const char *field, uint64_t *out)
{
	return read_uint(c, field, 8, out);
}

static int
read_i32(cursor *c, const char *field, int32_t *out)
{
	uint32_t v;

	if (read_u32(c, field, &v) != 0)
		return -1;
	*out = (int32_t) v;
	return 0;
}

static int
read_i64(cursor *c, const char *field, int64_t *out)
{
	uint64_t v;

	if (read_u64(c, field, &v) != 0)
		return -1;
	*out = (int64_t) v;
	return 0;
}

/* Reads a String; *out borrows from the message (its NUL is in bounds). */
static int
read_cstring(cursor *c, const char *field, const char **out)
{
	const char *start = c->buf + c->pos;
	const char *nul = memchr(start, '\0', cursor_left(c));

	if (nul == NULL)
		return cursor_fail(c, c->pos, field, "has no terminating NUL in the %zu bytes left",
						   cursor_left(c));
	*out = start;
	c->pos += (size_t) (nul - start) + 1;
	return 0;
}

/* Reads an Int32 length and that many bytes; *data borrows from the message. */
static int
read_counted_bytes(cursor *c, const char *field, uint32_t *len, const char **data)
{
	if (read_u32(c, field, len) != 0)
		return -1;
	if (*len > cursor_left(c))
		return cursor_fail(c, c->pos, field, "%u exceeds the %zu bytes left", *len,
						   cursor_left(c));
	*data = c->buf + c->pos;
	c->pos += *len;
	return 0;
}

/*
 * Fails unless count items of at least min_size bytes each can fit in what
 * is left: checked before allocating room for them.
 */
static int
check_count(const cursor *c, const char *field, uint64_t count, size_t min_size)
{
	if (count * min_size > cursor_left(c))
		return cursor_fail(c, c->pos, field,
						   "%" PRIu64 " needs at least %" PRIu64 " bytes but %zu are left",
						   count, count * min_size, cursor_left(c));
	return 0;
}

/* An OID or xid that must not be 0 (InvalidOid, InvalidTransactionId). */
static int
read_valid_id(cursor *c, const char *field, uint32_t *out)
{
	if (read_u32(c, field, out) != 0)
		return -1;
	if (*out == 0)
		return cursor_fail(c, c->pos - 4, field, "is 0 (invalid)");
	return 0;
}

/* A flags byte with no bits outside allowed. */
static int
read_flags(cursor *c, const char *field, uint8_t allowed, uint8_t *out)
{
	if (read_u8(c, field, out) != 0)
		return -1;
	if ((*out & ~allowed) != 0)
		return cursor_fail(c, c->pos - 1, field, "has unknown bits 0x%02x", *out & ~allowed);
	return 0;
}

/* A byte that must be 0 or 1. */
static int
read_bool(cursor *c, const char *field, bool *out)
{
	uint8_t v;

	if (read_u8(c, field, &v) != 0)
		return -1;
	if (v > 1)
		return cursor_fail(c, c->pos - 1, field, "is %u, expected 0 or 1", v);
	*out = v == 1;
	return 0;
}

/* A one-byte code that must be one of the characters in allowed. */
static int
read_code(cursor *c, const char *field, const char *allowed, char *out)
{
	uint8_t v;

	if (read_u8(c, field, &v) != 0)
		return -1;
	if (v == 0 || strchr(allowed, v) == NULL)
		return cursor_fail(c, c->pos - 1, field, "is 0x%02x, expected one of \"%s\"", v,
						   allowed);
	*out = (char) v;
	return 0;
}

static int
expect_end(const cursor *c)
{
	if (cursor_left(c) != 0)
		return cursor_fail(c, c->pos, "message", "is followed by %zu bytes of trailing data",
						   cursor_left(c));
	return 0;
}

/* ---- big-endian writing ---- */

static char *
put_u64(char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--)
		*p++ = (char) (v >> (i * 8));
	return p;
}

/* ---- the replication copy stream ---- */

static int
read_xlogdata(cursor *c, pgoutput_copydata *out)
{
	if (read_u64(c, "WAL start", &out->wal_start) != 0 ||
		read_u64(c, "WAL end", &out->wal_end) != 0 ||
		read_i64(c, "send time", &out->send_time) != 0)
		return -1;
	out->data = c->buf + c->pos;
	out->len = cursor_left(c);
	return 0;
}

static int
read_keepalive(cursor *c, pgoutput_copydata *out)
{
	if (read_u64(c, "WAL end", &out->wal_end) != 0 ||
		read_i64(c, "send time", &out->send_time) != 0 ||
		read_bool(c, "reply flag", &out->reply_requested) != 0)
		return -1;
	return expect_end(c);
}

int
pgoutput_read_copydata(const char *buf, size_t len, pgoutput_copydata *out, tm_error *err)
{
	cursor c;
	uint8_t type;

	memset(out, 0, sizeof *out);
	cursor_init(&c, buf, len, "copy message", err);
	if (read_u8(&c, "type", &type) != 0)
		return -1;
	if (type == 'w') {
		out->kind = PGOUTPUT_COPY_XLOGDATA;
		c.msg = "XLogData";
		return read_xlogdata(&c, out);
	}
	if (type == 'k') {
		out->kind = PGOUTPUT_COPY_KEEPALIVE;
		c.msg = "Primary keepalive";
		return read_keepalive(&c, out);
	}
	return cursor_fail(&c, 0, "type", "0x%02x is not XLogData 'w' or keepalive 'k'", type);
}

size_t
pgoutput_write_status(char out[PGOUTPUT_STATUS_LEN], tm_lsn write, tm_lsn flush, tm_lsn apply,
					  pg_timestamp now, bool reply_requested)
{
	char *p = out;

	*p++ = 'r';
	p = put_u64(p, write);
	p = put_u64(p, flush);
	p = put_u64(p, apply);
	p = put_u64(p, (uint64_t) now);
	*p++ = reply_requested ? 1 : 0;
	return (size_t) (p - out);
}

/* ---- pgoutput messages ---- */

/* Smallest encodings: a Relation column (flags, "" name, type, typmod) and a
 * tuple value (a kind byte). */
#define MIN_COLUMN_SIZE 10
#define MIN_VALUE_SIZE 1

/* Room for n elements from the scratch arena; NULL for none. The caller has
 * bounded n by the message length, so n * size cannot overflow. */
static void *
alloc_array(arena *scratch, size_t n, size_t size)
{
	return n == 0 ? NULL : arena_alloc(scratch, n * size);
}

/* The fields Commit and Stream Commit share. */
static int
read_commit_fields(cursor *c, uint8_t *flags, tm_lsn *commit_lsn, tm_lsn *end_lsn,
				   pg_timestamp *commit_time)
{
	if (read_flags(c, "flags", 0, flags) != 0 ||
		read_u64(c, "commit LSN", commit_lsn) != 0 ||
		read_u64(c, "end LSN", end_lsn) != 0 ||
		read_i64(c, "commit time", commit_time) != 0)
		return -1;
	return 0;
}

static int
read_begin(cursor *c, arena *scratch, pgoutput_msg *m)
{
	if (read_u64(c, "final LSN", &m->u.begin.final_lsn) != 0 ||
		read_i64(c, "commit time", &m->u.begin.commit_time) != 0 ||
		read_valid_id(c, "xid", &m->u.begin.xid) != 0)
		return -1;
	return 0;
}

static int
read_commit(cursor *c, arena *scratch, pgoutput_msg *m)
{
	return read_commit_fields(c, &m->u.commit.flags, &m->u.commit.commit_lsn,
							  &m->u.commit.end_lsn, &m->u.commit.commit_time);
}

static int
read_origin(cursor *c, arena *scratch, pgoutput_msg *m)
{
	if (read_u64(c, "origin LSN", &m->u.origin.origin_lsn) != 0 ||
		read_cstring(c, "origin name", &m->u.origin.name) != 0)
		return -1;
	return 0;
}

static int
read_column(cursor *c, pgoutput_column *col)
{
	uint8_t flags;

	if (read_flags(c, "flags", 1, &flags) != 0 ||
		read_cstring(c, "name", &col->name) != 0 ||
		read_u32(c, "type OID", &col->type_oid) != 0 ||
		read_i32(c, "type modifier", &col->typmod) != 0)
		return -1;
	col->is_key = (flags & 1) != 0;
	return 0;
}

static int
read_relation(cursor *c, arena *scratch, pgoutput_msg *m)
{
	__typeof__(m->u.relation) *rel = &m->u.relation;

	if (read_valid_id(c, "relation OID", &rel->relid) != 0 ||
		read_cstring(c, "namespace", &rel->nspname) != 0 ||
		read_cstring(c, "relation name", &rel->relname) != 0 ||
		read_code(c, "replica identity", "dnfi", &rel->replident) != 0 ||
		read_u16(c, "column count", &rel->ncols) != 0 ||
		check_count(c, "column count", rel->ncols, MIN_COLUMN_SIZE) != 0)
		return -1;
	rel->cols = alloc_array(scratch, rel->ncols, sizeof(pgoutput_column));
	for (unsigned i = 0; i < rel->ncols; i++) {
		c->col = i + 1;
		if (read_column(c, &rel->cols[i]) != 0)
			return -1;
	}
	c->col = 0;
	return 0;
}

static int
read_type(cursor *c, arena *scratch, pgoutput_msg *m)
{
	if (read_valid_id(c, "type OID", &m->u.type.type_oid) != 0 ||
		read_cstring(c, "namespace", &m->u.type.nspname) != 0 ||
		read_cstring(c, "type name", &m->u.type.typname) != 0)
		return -1;
	return 0;
}

static int
read_value(cursor *c, pgoutput_value *v)
{
	char kind;

	if (read_code(c, "kind", "nutb", &kind) != 0)
		return -1;
	v->kind = (pgoutput_value_kind) kind;
	v->len = 0;
	v->data = NULL;
	if (kind == 't' || kind == 'b')
		return read_counted_bytes(c, "value length", &v->len, &v->data);
	return 0;
}

/* TupleData; which ("new tuple", "old key", ...) names it in errors. */
static int
read_tuple(cursor *c, arena *scratch, const char *which, pgoutput_tuple *t)
{
	c->tuple = which;
	if (read_u16(c, "column count", &t->ncols) != 0 ||
		check_count(c, "column count", t->ncols, MIN_VALUE_SIZE) != 0)
		return -1;
	t->values = alloc_array(scratch, t->ncols, sizeof(pgoutput_value));
	for (unsigned i = 0; i < t->ncols; i++) {
		c->col = i + 1;
		if (read_value(c, &t->values[i]) != 0)
			return -1;
	}
	c->col = 0;
	c->tuple = NULL;
	return 0;
}

static int
read_insert(cursor *c, arena *scratch, pgoutput_msg *m)
{
	char marker;

	if (read_valid_id(c, "relation OID", &m->u.insert.relid) != 0 ||
		read_code(c, "tuple marker", "N", &marker) != 0)
		return -1;
	return read_tuple(c, scratch, "new tuple", &m->u.insert.newtup);
}

static const char *
old_tuple_name(char marker)
{
	return marker == 'K' ? "old key" : "old tuple";
}

static int
read_update(cursor *c, arena *scratch, pgoutput_msg *m)
{
	__typeof__(m->u.update) *upd = &m->u.update;
	char marker;

	if (read_valid_id(c, "relation OID", &upd->relid) != 0 ||
		read_code(c, "tuple marker", "KON", &marker) != 0)
		return -1;
	if (marker != 'N') {
		upd->old_kind = marker;
		if (read_tuple(c, scratch, old_tuple_name(marker), &upd->oldtup) != 0 ||
			read_code(c, "new tuple marker", "N", &marker) != 0)
			return -1;
	}
	return read_tuple(c, scratch, "new tuple", &upd->newtup);
}

static int
read_delete(cursor *c, arena *scratch, pgoutput_msg *m)
{
	__typeof__(m->u.delete) *del = &m->u.delete;

	if (read_valid_id(c, "relation OID", &del->relid) != 0 ||
		read_code(c, "tuple marker", "KO", &del->old_kind) != 0)
		return -1;
	return read_tuple(c, scratch, old_tuple_name(del->old_kind), &del->oldtup);
}

static int
read_truncate(cursor *c, arena *scratch, pgoutput_msg *m)
{
	__typeof__(m->u.truncate) *tr = &m->u.truncate;

	if (read_u32(c, "relation count", &tr->nrelids) != 0 ||
		read_flags(c, "options", PGOUTPUT_TRUNCATE_CASCADE | PGOUTPUT_TRUNCATE_RESTART_SEQS,
				   &tr->options) != 0 ||
		check_count(c, "relation count", tr->nrelids, 4) != 0)
		return -1;
	tr->relids = alloc_array(scratch, tr->nrelids, sizeof(uint32_t));
	for (uint32_t i = 0; i < tr->nrelids; i++) {
		if (read_valid_id(c, "relation OID", &tr->relids[i]) != 0)
			return -1;
	}
	return 0;
}

static int
read_message(cursor *c, arena *scratch, pgoutput_msg *m)
{
	__typeof__(m->u.message) *msg = &m->u.message;

	if (read_flags(c, "flags", PGOUTPUT_MESSAGE_TRANSACTIONAL, &msg->flags) != 0 ||
		read_u64(c, "LSN", &msg->lsn) != 0 ||
		read_cstring(c, "prefix", &msg->prefix) != 0 ||
		read_counted_bytes(c, "content length", &msg->len, &msg->content) != 0)
		return -1;
	return 0;
}

static int
read_stream_start(cursor *c, arena *scratch, pgoutput_msg *m)
{
	if (read_valid_id(c, "xid", &m->u.stream_start.xid) != 0 ||
		read_bool(c, "first segment", &m->u.stream_start.first_segment) != 0)
		return -1;
	return 0;
}

static int
read_stream_stop(cursor *c, arena *scratch, pgoutput_msg *m)
{
	return 0;
}

static int
read_stream_commit(cursor *c, arena *scratch, pgoutput_msg *m)
{
	__typeof__(m->u.stream_commit) *sc = &m->u.stream_commit;

	if (read_valid_id(c, "xid", &sc->xid) != 0)
		return -1;
	return read_commit_fields(c, &sc->flags, &sc->commit_lsn, &sc->end_lsn, &sc->commit_time);
}

static int
read_stream_abort(cursor *c, arena *scratch, pgoutput_msg *m)
{
	if (read_valid_id(c, "xid", &m->u.stream_abort.xid) != 0 ||
		read_valid_id(c, "subtransaction xid", &m->u.stream_abort.subxid) != 0)
		return -1;
	return 0;
}

/* ---- dispatch ---- */

typedef int (*message_reader) (cursor *c, arena *scratch, pgoutput_msg *m);

/* Where a message may appear relative to a streamed block. */
typedef enum placement {
	OUTSIDE_STREAM,  /* only outside a streamed block */
	ANYWHERE,        /* Origin: also right after Stream Start */
	DATA,            /* anywhere; inside a block it carries an xid */
	INSIDE_STREAM,   /* only inside a streamed block: Stream Stop */
} placement;

typedef struct message_info {
	char kind;
	const char *name;
	message_reader read;     /* NULL: known but not supported */
	placement where;
	int min_version;         /* lowest protocol version that sends it */
} message_info;

static const message_info messages[] = {
	{'B', "Begin", read_begin, OUTSIDE_STREAM, 1},
	{'C', "Commit", read_commit, OUTSIDE_STREAM, 1},
	{'O', "Origin", read_origin, ANYWHERE, 1},
	{'R', "Relation", read_relation, DATA, 1},
	{'Y', "Type", read_type, DATA, 1},
	{'I', "Insert", read_insert, DATA, 1},
	{'U', "Update", read_update, DATA, 1},
	{'D', "Delete", read_delete, DATA, 1},
	{'T', "Truncate", read_truncate, DATA, 1},
	{'M', "Message", read_message, DATA, 1},
	{'S', "Stream Start", read_stream_start, OUTSIDE_STREAM, 2},
	{'E', "Stream Stop", read_stream_stop, INSIDE_STREAM, 2},
	{'c', "Stream Commit", read_stream_commit, OUTSIDE_STREAM, 2},
	{'A', "Stream Abort", read_stream_abort, OUTSIDE_STREAM, 2},
	{'b', "Begin Prepare", NULL, OUTSIDE_STREAM, 3},
	{'P', "Prepare", NULL, OUTSIDE_STREAM, 3},
	{'K', "Commit Prepared", NULL, OUTSIDE_STREAM, 3},
	{'r', "Rollback Prepared", NULL, OUTSIDE_STREAM, 3},
	{'p', "Stream Prepare", NULL, OUTSIDE_STREAM, 3},
};

static const message_info *
find_message(int kind)
{
	for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++) {
		if (messages[i].kind == kind)
			return &messages[i];
	}
	return NULL;
}

const char *
pgoutput_kind_name(int kind)
{
	const message_info *info = find_message(kind);

	return info != NULL ? info->name : "unknown";
}

static int
fail_unsupported(unsigned char kind, const message_info *info, tm_error *err)
{
	if (info != NULL)
		return tm_error_set(err, "unsupported pgoutput message type '%c' (%s)", kind,
							info->name);
	if (kind >= 0x20 && kind < 0x7f)
		return tm_error_set(err, "unsupported pgoutput message type '%c'", kind);
	return tm_error_set(err, "unsupported pgoutput message type 0x%02x", kind);
}

/* Checks the protocol version and the message's place in the stream. */
static int
check_placement(const pgoutput_reader *r, const message_info *info, tm_error *err)
{
	if (r->proto_version < 0 || r->proto_version > 3)
		return tm_error_set(err, "unsupported pgoutput protocol version %d",
							r->proto_version);
	if (r->proto_version != 0 && r->proto_version < info->min_version)
		return tm_error_set(err, "%s: needs protocol version %d, the stream uses %d",
							info->name, info->min_version, r->proto_version);
	if (r->in_stream && info->where == OUTSIDE_STREAM)
		return tm_error_set(err, "%s: inside a streamed block (Stream Start without Stream Stop)",
							info->name);
	if (!r->in_stream && info->where == INSIDE_STREAM)
		return tm_error_set(err, "%s: outside a streamed block", info->name);
	return 0;
}

void
pgoutput_reader_init(pgoutput_reader *r, int proto_version)
{
	r->proto_version = proto_version;
	r->in_stream = false;
}

int
pgoutput_read_message(pgoutput_reader *r, const char *buf, size_t len, arena *scratch,
					  pgoutput_msg *out, tm_error *err)
{
	const message_info *info;
	cursor c;

	memset(out, 0, sizeof *out);
	if (len == 0)
		return tm_error_set(err, "empty pgoutput message");
	info = find_message(buf[0]);
	if (info == NULL || info->read == NULL)
		return fail_unsupported((unsigned char) buf[0], info, err);
	if (check_placement(r, info, err) != 0)
		return -1;
	cursor_init(&c, buf, len, info->name, err);
	c.pos = 1;
	out->kind = (pgoutput_kind) info->kind;
	if (r->in_stream && info->where == DATA &&
		read_valid_id(&c, "stream xid", &out->stream_xid) != 0)
		return -1;
	if (info->read(&c, scratch, out) != 0 || expect_end(&c) != 0)
		return -1;
	if (out->kind == PGOUTPUT_STREAM_START)
		r->in_stream = true;
	else if (out->kind == PGOUTPUT_STREAM_STOP)
		r->in_stream = false;
	return 0;
}

/* ---- timestamps ---- */

int64_t
pgoutput_timestamp_to_unix_us(pg_timestamp t)
{
	if (t > INT64_MAX - PG_EPOCH_UNIX_US)
		return INT64_MAX;       /* PostgreSQL's 'infinity' */
	return t + PG_EPOCH_UNIX_US;
}

pg_timestamp
pgoutput_timestamp_from_unix_us(int64_t us)
{
	if (us < INT64_MIN + PG_EPOCH_UNIX_US)
		return INT64_MIN;       /* PostgreSQL's '-infinity' */
	return us - PG_EPOCH_UNIX_US;
}
