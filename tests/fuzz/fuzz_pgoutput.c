/*
 * fuzz_pgoutput.c: the replication stream decoder (src/decode/pgoutput.c).
 *
 * Input: records as in the files of fixtures/pgoutput, [Int32 length][CopyData
 * payload], the last one cut short by the end of the input. The records go
 * through pgoutput_read_copydata and, XLogData's content (or a record that
 * is no copy message), through pgoutput_read_message with one reader for
 * the whole input, so that streamed blocks open and close; the scratch
 * arena is reset after each message. The input is read once per protocol
 * version, 0 (any) to 3.
 *
 * Invariants:
 *   - a decoded message, encoded again from its fields, is its input byte
 *     for byte (so every length and string stays within the message);
 *   - a copy message's header likewise, and XLogData's content is the rest
 *     of the record;
 *   - data messages carry a stream xid exactly inside a streamed block;
 *     Stream Start / Stop move the reader in and out, a failure leaves it
 *     as it was and says why;
 *   - messages of protocol 2 are refused under protocol 1;
 *   - the scratch memory of a message is bounded by its length.
 */
#include "fuzz_common.h"

#include "arena.h"
#include "pgoutput.h"
#include "strbuf.h"

#define XLOGDATA_HEADER 25
#define KEEPALIVE_LEN 18

static void
put_be(strbuf *sb, uint64_t v, int nbytes)
{
	for (int i = nbytes - 1; i >= 0; i--)
		strbuf_appendc(sb, (char) (v >> (i * 8)));
}

static void
put_str(strbuf *sb, const char *s)
{
	strbuf_appendn(sb, s, strlen(s) + 1);
}

static void
put_tuple(strbuf *sb, const pgoutput_tuple *t)
{
	put_be(sb, t->ncols, 2);
	for (unsigned i = 0; i < t->ncols; i++) {
		const pgoutput_value *v = &t->values[i];

		strbuf_appendc(sb, (char) v->kind);
		if (v->kind == PGOUTPUT_VALUE_TEXT || v->kind == PGOUTPUT_VALUE_BINARY) {
			put_be(sb, v->len, 4);
			strbuf_appendn(sb, v->data, v->len);
		}
	}
}

static void
put_relation(strbuf *sb, const pgoutput_msg *m)
{
	put_be(sb, m->u.relation.relid, 4);
	put_str(sb, m->u.relation.nspname);
	put_str(sb, m->u.relation.relname);
	strbuf_appendc(sb, m->u.relation.replident);
	put_be(sb, m->u.relation.ncols, 2);
	for (unsigned i = 0; i < m->u.relation.ncols; i++) {
		const pgoutput_column *c = &m->u.relation.cols[i];

		strbuf_appendc(sb, c->is_key ? 1 : 0);
		put_str(sb, c->name);
		put_be(sb, c->type_oid, 4);
		put_be(sb, (uint32_t) c->typmod, 4);
	}
}

static void
put_commit(strbuf *sb, uint8_t flags, tm_lsn commit_lsn, tm_lsn end_lsn, pg_timestamp t)
{
	strbuf_appendc(sb, (char) flags);
	put_be(sb, commit_lsn, 8);
	put_be(sb, end_lsn, 8);
	put_be(sb, (uint64_t) t, 8);
}

/* The changes of a relation: Insert, Update, Delete, Truncate. */
static void
put_change(strbuf *sb, const pgoutput_msg *m)
{
	switch (m->kind) {
	case PGOUTPUT_INSERT:
		put_be(sb, m->u.insert.relid, 4);
		strbuf_appendc(sb, 'N');
		put_tuple(sb, &m->u.insert.newtup);
		break;
	case PGOUTPUT_UPDATE:
		put_be(sb, m->u.update.relid, 4);
		if (m->u.update.old_kind != 0) {
			strbuf_appendc(sb, m->u.update.old_kind);
			put_tuple(sb, &m->u.update.oldtup);
		}
		strbuf_appendc(sb, 'N');
		put_tuple(sb, &m->u.update.newtup);
		break;
	case PGOUTPUT_DELETE:
		put_be(sb, m->u.delete.relid, 4);
		strbuf_appendc(sb, m->u.delete.old_kind);
		put_tuple(sb, &m->u.delete.oldtup);
		break;
	default:
		put_be(sb, m->u.truncate.nrelids, 4);
		strbuf_appendc(sb, (char) m->u.truncate.options);
		for (uint32_t i = 0; i < m->u.truncate.nrelids; i++)
			put_be(sb, m->u.truncate.relids[i], 4);
	}
}

static void
put_stream(strbuf *sb, const pgoutput_msg *m)
{
	switch (m->kind) {
	case PGOUTPUT_STREAM_START:
		put_be(sb, m->u.stream_start.xid, 4);
		strbuf_appendc(sb, m->u.stream_start.first_segment ? 1 : 0);
		break;
	case PGOUTPUT_STREAM_COMMIT:
		put_be(sb, m->u.stream_commit.xid, 4);
		put_commit(sb, m->u.stream_commit.flags, m->u.stream_commit.commit_lsn,
				   m->u.stream_commit.end_lsn, m->u.stream_commit.commit_time);
		break;
	case PGOUTPUT_STREAM_ABORT:
		put_be(sb, m->u.stream_abort.xid, 4);
		put_be(sb, m->u.stream_abort.subxid, 4);
		break;
	default:
		break;
	}
}

/* The message as pgoutput would have sent it. */
static void
encode(const pgoutput_msg *m, strbuf *sb)
{
	strbuf_appendc(sb, (char) m->kind);
	if (m->stream_xid != 0)
		put_be(sb, m->stream_xid, 4);
	switch (m->kind) {
	case PGOUTPUT_BEGIN:
		put_be(sb, m->u.begin.final_lsn, 8);
		put_be(sb, (uint64_t) m->u.begin.commit_time, 8);
		put_be(sb, m->u.begin.xid, 4);
		break;
	case PGOUTPUT_COMMIT:
		put_commit(sb, m->u.commit.flags, m->u.commit.commit_lsn, m->u.commit.end_lsn,
				   m->u.commit.commit_time);
		break;
	case PGOUTPUT_ORIGIN:
		put_be(sb, m->u.origin.origin_lsn, 8);
		put_str(sb, m->u.origin.name);
		break;
	case PGOUTPUT_RELATION:
		put_relation(sb, m);
		break;
	case PGOUTPUT_TYPE:
		put_be(sb, m->u.type.type_oid, 4);
		put_str(sb, m->u.type.nspname);
		put_str(sb, m->u.type.typname);
		break;
	case PGOUTPUT_MESSAGE:
		strbuf_appendc(sb, (char) m->u.message.flags);
		put_be(sb, m->u.message.lsn, 8);
		put_str(sb, m->u.message.prefix);
		put_be(sb, m->u.message.len, 4);
		strbuf_appendn(sb, m->u.message.content, m->u.message.len);
		break;
	case PGOUTPUT_INSERT:
	case PGOUTPUT_UPDATE:
	case PGOUTPUT_DELETE:
	case PGOUTPUT_TRUNCATE:
		put_change(sb, m);
		break;
	default:
		put_stream(sb, m);
	}
}

static bool
is_data_kind(int kind)
{
	return kind != 0 && strchr("RYIUDTM", kind) != NULL;
}

static bool
is_stream_kind(int kind)
{
	return kind != 0 && strchr("SEcA", kind) != NULL;
}

static void
check_message(const pgoutput_reader *before, const pgoutput_reader *after, const char *buf,
			  size_t len, const pgoutput_msg *m, const arena *scratch)
{
	strbuf sb = STRBUF_INIT;

	encode(m, &sb);
	FUZZ_REQUIRE(sb.len == len && memcmp(sb.data, buf, len) == 0,
				 "a decoded message encodes back to its bytes");
	strbuf_free(&sb);
	FUZZ_REQUIRE((m->stream_xid != 0) == (before->in_stream && is_data_kind(m->kind)),
				 "a stream xid exactly on data messages inside a streamed block");
	FUZZ_REQUIRE(after->in_stream == (m->kind == PGOUTPUT_STREAM_START ||
									  (before->in_stream && m->kind != PGOUTPUT_STREAM_STOP)),
				 "Stream Start and Stop move the reader");
	FUZZ_REQUIRE(!is_stream_kind(m->kind) || before->proto_version != 1,
				 "streaming messages need protocol 2");
	FUZZ_REQUIRE(scratch->used_total <= 16 * len + 64, "scratch memory bounded by the message");
	FUZZ_REQUIRE(strcmp(pgoutput_kind_name(m->kind), "unknown") != 0, "a decoded kind has a name");
}

static void
read_message(pgoutput_reader *r, const char *buf, size_t len, arena *scratch)
{
	pgoutput_reader before = *r;
	pgoutput_msg m;
	tm_error err;

	err.msg[0] = '\0';
	if (pgoutput_read_message(r, buf, len, scratch, &m, &err) == 0)
		check_message(&before, r, buf, len, &m, scratch);
	else {
		FUZZ_REQUIRE(r->in_stream == before.in_stream, "a failure leaves the reader as it was");
		FUZZ_REQUIRE(err.msg[0] != '\0', "a failure says why");
	}
	arena_reset(scratch);
}

/* The copy message header, encoded again, and the standby reply to it. */
static void
check_copydata(const char *buf, size_t len, const pgoutput_copydata *cd)
{
	strbuf sb = STRBUF_INIT;
	char status[PGOUTPUT_STATUS_LEN];

	strbuf_appendc(&sb, (char) cd->kind);
	if (cd->kind == PGOUTPUT_COPY_XLOGDATA)
		put_be(&sb, cd->wal_start, 8);
	put_be(&sb, cd->wal_end, 8);
	put_be(&sb, (uint64_t) cd->send_time, 8);
	if (cd->kind == PGOUTPUT_COPY_XLOGDATA)
		FUZZ_REQUIRE(cd->data == buf + XLOGDATA_HEADER && cd->len == len - XLOGDATA_HEADER,
					 "XLogData's content is the rest of the record");
	else {
		strbuf_appendc(&sb, cd->reply_requested ? 1 : 0);
		FUZZ_REQUIRE(len == KEEPALIVE_LEN, "a keepalive has its length");
	}
	FUZZ_REQUIRE(sb.len <= len && memcmp(sb.data, buf, sb.len) == 0,
				 "a copy message header encodes back to its bytes");
	/* the reply's first position is the message's WAL end, as sent */
	FUZZ_REQUIRE(pgoutput_write_status(status, cd->wal_end, 0, 0, cd->send_time,
									   cd->reply_requested) == PGOUTPUT_STATUS_LEN &&
				 status[0] == 'r' &&
				 memcmp(status + 1, buf + (cd->kind == PGOUTPUT_COPY_XLOGDATA ? 9 : 1), 8) == 0,
				 "a standby status update carries the positions");
	strbuf_free(&sb);
}

static void
read_record(pgoutput_reader *r, const char *buf, size_t len, arena *scratch)
{
	pgoutput_copydata cd;
	tm_error err;

	if (pgoutput_read_copydata(buf, len, &cd, &err) != 0) {
		read_message(r, buf, len, scratch);
		return;
	}
	check_copydata(buf, len, &cd);
	if (cd.kind == PGOUTPUT_COPY_XLOGDATA)
		read_message(r, cd.data, cd.len, scratch);
}

static void
read_stream(const uint8_t *data, size_t size, int proto_version)
{
	fuzz_input in = {data, size};
	pgoutput_reader r;
	arena scratch;

	pgoutput_reader_init(&r, proto_version);
	arena_init(&scratch, 4096);
	while (in.left > 0) {
		uint32_t n = 0;
		size_t len;
		char *rec;

		for (int i = 0; i < 4; i++)
			n = (n << 8) | fuzz_byte(&in);
		rec = fuzz_take(&in, n, &len);
		read_record(&r, rec, len, &scratch);
		free(rec);
	}
	arena_free(&scratch);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int v = 0; v <= 3; v++)
		read_stream(data, size, v);
	return 0;
}
