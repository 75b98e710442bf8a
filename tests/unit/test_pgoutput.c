/*
 * test_pgoutput.c: the pgoutput decoder against streams captured from
 * PostgreSQL 15 (fixtures/pgoutput, see its README) and against damaged
 * copies of them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "be32.h"
#include "pgoutput.h"

/* ---- loading fixtures ---- */

typedef struct record {
	const char *data;          /* borrowed from capture.buf */
	size_t len;
} record;

/*
 * A fixture file split into records and decoded. msgs[i] is the message of
 * record i (kind 0 for keepalives); in_stream[i] is the reader state before
 * it. The arrays of msgs live in the capture's arena.
 */
typedef struct capture {
	char *buf;                 /* owned: the file */
	size_t len;
	record *recs;              /* owned */
	size_t nrecs;
	pgoutput_copydata *copies; /* owned */
	pgoutput_msg *msgs;        /* owned */
	bool *in_stream;           /* owned */
	arena arena;
} capture;

static const char *const fixture_names[] = {"basic", "toast", "types", "types_binary", "stream"};
#define NFIXTURES (sizeof fixture_names / sizeof fixture_names[0])
static capture *loaded[NFIXTURES];

static char *
read_whole_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long size;
	char *buf;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	assert_true(size > 0);
	rewind(f);
	buf = malloc((size_t) size);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t) size, f), (size_t) size);
	fclose(f);
	*len = (size_t) size;
	return buf;
}

static uint64_t
get_be64(const char *p)
{
	return (uint64_t) be32_get(p) << 32 | be32_get(p + 4);
}

/*
 * Splits the file into [length][payload] records; the file must be exact.
 * With recs NULL only counts them.
 */
static size_t
scan_records(const capture *c, record *recs)
{
	size_t pos = 0, n = 0;

	while (pos < c->len) {
		uint32_t len;

		assert_true(c->len - pos >= 4);
		len = be32_get(c->buf + pos);
		assert_true(len <= c->len - pos - 4);
		if (recs != NULL)
			recs[n] = (record) {c->buf + pos + 4, len};
		n++;
		pos += 4 + len;
	}
	return n;
}

static void
split_records(capture *c)
{
	c->nrecs = scan_records(c, NULL);
	c->recs = calloc(c->nrecs, sizeof(record));
	assert_non_null(c->recs);
	scan_records(c, c->recs);
}

static void
decode_records(capture *c)
{
	pgoutput_reader r;
	tm_error err;

	pgoutput_reader_init(&r, 2);
	arena_init(&c->arena, 1 << 16);
	c->copies = calloc(c->nrecs, sizeof(pgoutput_copydata));
	c->msgs = calloc(c->nrecs, sizeof(pgoutput_msg));
	c->in_stream = calloc(c->nrecs, sizeof(bool));
	assert_true(c->copies && c->msgs && c->in_stream);
	for (size_t i = 0; i < c->nrecs; i++) {
		pgoutput_copydata *cd = &c->copies[i];

		err.msg[0] = '\0';
		if (pgoutput_read_copydata(c->recs[i].data, c->recs[i].len, cd, &err) != 0)
			fail_msg("record %zu: %s", i, err.msg);
		c->in_stream[i] = r.in_stream;
		if (cd->kind == PGOUTPUT_COPY_XLOGDATA &&
			pgoutput_read_message(&r, cd->data, cd->len, &c->arena, &c->msgs[i], &err) != 0)
			fail_msg("record %zu: %s", i, err.msg);
	}
	assert_false(r.in_stream);
}

static capture *
get_capture(const char *name)
{
	char path[512];
	capture *c;
	size_t i;

	for (i = 0; i < NFIXTURES; i++) {
		if (strcmp(fixture_names[i], name) == 0)
			break;
	}
	assert_true(i < NFIXTURES);
	if (loaded[i] != NULL)
		return loaded[i];
	c = calloc(1, sizeof *c);
	assert_non_null(c);
	snprintf(path, sizeof path, "%s/pgoutput/%s.bin", FIXTURES_DIR, name);
	c->buf = read_whole_file(path, &c->len);
	split_records(c);
	decode_records(c);
	loaded[i] = c;
	return c;
}

static int
free_captures(void **state)
{
	for (size_t i = 0; i < NFIXTURES; i++) {
		capture *c = loaded[i];

		if (c == NULL)
			continue;
		arena_free(&c->arena);
		free(c->copies);
		free(c->msgs);
		free(c->in_stream);
		free(c->recs);
		free(c->buf);
		free(c);
		loaded[i] = NULL;
	}
	return 0;
}

/* ---- looking things up ---- */

/* The index of the nth (0-based) message of kind at or after from; fails if none. */
static size_t
find_kind(const capture *c, int kind, size_t from, int nth)
{
	for (size_t i = from; i < c->nrecs; i++) {
		if (c->msgs[i].kind == (pgoutput_kind) kind && nth-- == 0)
			return i;
	}
	fail_msg("no message '%c' found", kind);
	return 0;
}

/* The index of the first copy message of a kind; fails if none. */
static size_t
find_copy(const capture *c, pgoutput_copy_kind kind)
{
	for (size_t i = 0; i < c->nrecs; i++) {
		if (c->copies[i].kind == kind)
			return i;
	}
	fail_msg("no copy message '%c' found", kind);
	return 0;
}

static size_t
count_kind(const capture *c, int kind)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nrecs; i++)
		n += c->msgs[i].kind == (pgoutput_kind) kind;
	return n;
}

/* The nth Relation message for relname. */
static const pgoutput_msg *
find_relation(const capture *c, const char *relname, int nth)
{
	for (size_t i = 0; i < c->nrecs; i++) {
		const pgoutput_msg *m = &c->msgs[i];

		if (m->kind == PGOUTPUT_RELATION && strcmp(m->u.relation.relname, relname) == 0 &&
			nth-- == 0)
			return m;
	}
	fail_msg("no Relation for %s", relname);
	return NULL;
}

static uint32_t
relid_of(const capture *c, const char *relname)
{
	return find_relation(c, relname, 0)->u.relation.relid;
}

/* The nth row change (I, U or D) of a kind for relname. */
static const pgoutput_msg *
find_change(const capture *c, int kind, const char *relname, int nth)
{
	uint32_t relid = relid_of(c, relname);

	for (size_t i = 0; i < c->nrecs; i++) {
		const pgoutput_msg *m = &c->msgs[i];

		/* relid is the first member of insert, update and delete alike */
		if (m->kind == (pgoutput_kind) kind && m->u.insert.relid == relid && nth-- == 0)
			return m;
	}
	fail_msg("no change '%c' for %s", kind, relname);
	return NULL;
}

static void
assert_text(const pgoutput_value *v, const char *expect)
{
	assert_int_equal(v->kind, PGOUTPUT_VALUE_TEXT);
	assert_int_equal(v->len, strlen(expect));
	assert_memory_equal(v->data, expect, v->len);
}

static void
assert_sql_null(const pgoutput_value *v)
{
	assert_int_equal(v->kind, PGOUTPUT_VALUE_NULL);
}

static void
assert_column(const pgoutput_column *col, const char *name, bool is_key, uint32_t type_oid)
{
	assert_string_equal(col->name, name);
	assert_int_equal(col->is_key, is_key);
	assert_int_equal(col->type_oid, type_oid);
}

/* ---- everything that was decoded stays inside its input ---- */

static bool
inside(const char *p, size_t n, const char *buf, size_t len)
{
	return p >= buf && n <= len && (size_t) (p - buf) <= len - n;
}

static void
assert_string_inside(const char *s, const char *buf, size_t len)
{
	assert_true(inside(s, 1, buf, len));
	assert_true(inside(s, strnlen(s, len) + 1, buf, len));
}

static void
assert_tuple_inside(const pgoutput_tuple *t, const char *buf, size_t len)
{
	for (unsigned i = 0; i < t->ncols; i++) {
		const pgoutput_value *v = &t->values[i];

		if (v->kind == PGOUTPUT_VALUE_TEXT || v->kind == PGOUTPUT_VALUE_BINARY)
			assert_true(inside(v->data, v->len, buf, len));
		else
			assert_true(v->kind == PGOUTPUT_VALUE_NULL || v->kind == PGOUTPUT_VALUE_UNCHANGED);
	}
}

static void
assert_msg_inside(const pgoutput_msg *m, const char *buf, size_t len)
{
	switch (m->kind) {
		case PGOUTPUT_ORIGIN:
			assert_string_inside(m->u.origin.name, buf, len);
			break;
		case PGOUTPUT_RELATION:
			assert_string_inside(m->u.relation.nspname, buf, len);
			assert_string_inside(m->u.relation.relname, buf, len);
			for (unsigned i = 0; i < m->u.relation.ncols; i++)
				assert_string_inside(m->u.relation.cols[i].name, buf, len);
			break;
		case PGOUTPUT_TYPE:
			assert_string_inside(m->u.type.nspname, buf, len);
			assert_string_inside(m->u.type.typname, buf, len);
			break;
		case PGOUTPUT_INSERT:
			assert_tuple_inside(&m->u.insert.newtup, buf, len);
			break;
		case PGOUTPUT_UPDATE:
			if (m->u.update.old_kind != 0)
				assert_tuple_inside(&m->u.update.oldtup, buf, len);
			assert_tuple_inside(&m->u.update.newtup, buf, len);
			break;
		case PGOUTPUT_DELETE:
			assert_tuple_inside(&m->u.delete.oldtup, buf, len);
			break;
		case PGOUTPUT_MESSAGE:
			assert_string_inside(m->u.message.prefix, buf, len);
			assert_true(inside(m->u.message.content, m->u.message.len, buf, len));
			break;
		default:
			break;
	}
}

/* ---- decoding the fixtures ---- */

static void
test_every_record_decodes(void **state)
{
	for (size_t f = 0; f < NFIXTURES; f++) {
		capture *c = get_capture(fixture_names[f]);
		size_t xlogdata = 0;

		assert_true(c->nrecs > 2);
		for (size_t i = 0; i < c->nrecs; i++) {
			if (c->copies[i].kind != PGOUTPUT_COPY_XLOGDATA)
				continue;
			xlogdata++;
			assert_true(c->copies[i].wal_end >= c->copies[i].wal_start);
			assert_msg_inside(&c->msgs[i], c->copies[i].data, c->copies[i].len);
		}
		assert_true(xlogdata > 0);
	}
}

/* Outside streamed blocks, Begin and Commit pair up with matching LSNs. */
static void
test_transactions_pair_up(void **state)
{
	for (size_t f = 0; f < NFIXTURES; f++) {
		capture *c = get_capture(fixture_names[f]);
		const pgoutput_msg *begin = NULL;

		for (size_t i = 0; i < c->nrecs; i++) {
			const pgoutput_msg *m = &c->msgs[i];

			if (m->kind == PGOUTPUT_BEGIN) {
				assert_null(begin);
				begin = m;
			} else if (m->kind == PGOUTPUT_COMMIT) {
				assert_non_null(begin);
				assert_int_equal(m->u.commit.commit_lsn, begin->u.begin.final_lsn);
				assert_true(m->u.commit.end_lsn > m->u.commit.commit_lsn);
				assert_int_equal(m->u.commit.commit_time, begin->u.begin.commit_time);
				begin = NULL;
			}
		}
		assert_null(begin);
	}
}

static void
test_basic_relation(void **state)
{
	capture *c = get_capture("basic");
	const pgoutput_msg *m = find_relation(c, "Line Items", 0);
	const pgoutput_column *cols = m->u.relation.cols;

	assert_string_equal(m->u.relation.nspname, "public");
	assert_int_equal(m->u.relation.replident, 'd');
	assert_int_equal(m->u.relation.ncols, 5);
	assert_column(&cols[0], "Order Id", true, 23);
	assert_column(&cols[1], "line", true, 23);
	assert_column(&cols[2], "Item Name", false, 25);
	assert_column(&cols[3], "qty", false, 1700);
	assert_column(&cols[4], "note", false, 25);
	assert_int_equal(cols[0].typmod, -1);
	assert_int_equal(cols[3].typmod, (10 << 16 | 2) + 4);  /* numeric(10,2) */

	/* after ALTER TABLE ADD COLUMN the next change brings a new Relation */
	m = find_relation(c, "Line Items", 1);
	assert_int_equal(m->u.relation.ncols, 6);
	assert_column(&m->u.relation.cols[5], "Added Later", false, 16);
	m = find_change(c, PGOUTPUT_INSERT, "Line Items", 2);
	assert_int_equal(m->u.insert.newtup.ncols, 6);
	assert_text(&m->u.insert.newtup.values[5], "t");
}

static void
test_basic_insert(void **state)
{
	capture *c = get_capture("basic");
	const pgoutput_msg *m = find_change(c, PGOUTPUT_INSERT, "Line Items", 0);
	const pgoutput_value *v = m->u.insert.newtup.values;

	assert_int_equal(m->stream_xid, 0);
	assert_int_equal(m->u.insert.newtup.ncols, 5);
	assert_text(&v[0], "1");
	assert_text(&v[1], "1");
	assert_text(&v[2], "Widget");
	assert_text(&v[3], "2.50");
	assert_sql_null(&v[4]);

	m = find_change(c, PGOUTPUT_INSERT, "Line Items", 1);
	assert_text(&m->u.insert.newtup.values[2],
				"tab\there\nnew line, caf\xc3\xa9, \xe6\x97\xa5\xe6\x9c\xac, \xe2\x9c\x93");
}

static void
test_basic_update_and_delete(void **state)
{
	capture *c = get_capture("basic");
	const pgoutput_msg *m = find_change(c, PGOUTPUT_UPDATE, "Line Items", 0);

	/* a non-key column changed: no old tuple */
	assert_int_equal(m->u.update.old_kind, 0);
	assert_text(&m->u.update.newtup.values[3], "3.00");

	/* the key changed: old key, with the non-key columns as NULL */
	m = find_change(c, PGOUTPUT_UPDATE, "Line Items", 1);
	assert_int_equal(m->u.update.old_kind, 'K');
	assert_int_equal(m->u.update.oldtup.ncols, 5);
	assert_text(&m->u.update.oldtup.values[0], "1");
	assert_text(&m->u.update.oldtup.values[1], "2");
	assert_sql_null(&m->u.update.oldtup.values[2]);
	assert_sql_null(&m->u.update.oldtup.values[4]);
	assert_text(&m->u.update.newtup.values[1], "3");

	m = find_change(c, PGOUTPUT_DELETE, "Line Items", 0);
	assert_int_equal(m->u.delete.old_kind, 'K');
	assert_text(&m->u.delete.oldtup.values[0], "1");
	assert_text(&m->u.delete.oldtup.values[1], "1");
	assert_sql_null(&m->u.delete.oldtup.values[3]);
}

static void
test_basic_replica_identity_full(void **state)
{
	capture *c = get_capture("basic");
	const pgoutput_msg *m = find_relation(c, "audit_log", 0);

	assert_int_equal(m->u.relation.replident, 'f');
	assert_column(&m->u.relation.cols[0], "id", true, 20);
	assert_column(&m->u.relation.cols[1], "payload", true, 25);

	m = find_change(c, PGOUTPUT_UPDATE, "audit_log", 0);
	assert_int_equal(m->u.update.old_kind, 'O');
	assert_text(&m->u.update.oldtup.values[0], "1");
	assert_text(&m->u.update.oldtup.values[1], "first");
	assert_text(&m->u.update.newtup.values[1], "changed");

	m = find_change(c, PGOUTPUT_DELETE, "audit_log", 0);
	assert_int_equal(m->u.delete.old_kind, 'O');
	assert_text(&m->u.delete.oldtup.values[0], "2");
	assert_sql_null(&m->u.delete.oldtup.values[1]);
}

/* Whether record i lies between a Begin and its Commit. */
static bool
inside_transaction(const capture *c, size_t i)
{
	int depth = 0;

	for (size_t j = 0; j < i; j++)
		depth += (c->msgs[j].kind == PGOUTPUT_BEGIN) - (c->msgs[j].kind == PGOUTPUT_COMMIT);
	return depth == 1;
}

static void
assert_message(const pgoutput_msg *m, uint8_t flags, const char *content, size_t len)
{
	assert_int_equal(m->kind, PGOUTPUT_MESSAGE);
	assert_int_equal(m->u.message.flags, flags);
	assert_string_equal(m->u.message.prefix, "tidemark.test");
	assert_int_equal(m->u.message.len, len);
	assert_memory_equal(m->u.message.content, content, len);
	assert_true(m->u.message.lsn != 0);
}

static void
test_basic_messages(void **state)
{
	capture *c = get_capture("basic");
	size_t i = find_kind(c, PGOUTPUT_MESSAGE, 0, 0);
	size_t j = find_kind(c, PGOUTPUT_MESSAGE, 0, 1);

	assert_int_equal(count_kind(c, PGOUTPUT_MESSAGE), 2);
	assert_message(&c->msgs[i], PGOUTPUT_MESSAGE_TRANSACTIONAL, "transactional payload", 21);
	assert_true(inside_transaction(c, i));
	assert_message(&c->msgs[j], 0, "\x00\xff\n", 3);
	assert_false(inside_transaction(c, j));
}

static void
test_basic_truncate(void **state)
{
	capture *c = get_capture("basic");
	const pgoutput_msg *m = &c->msgs[find_kind(c, PGOUTPUT_TRUNCATE, 0, 0)];

	assert_int_equal(m->u.truncate.options,
					 PGOUTPUT_TRUNCATE_CASCADE | PGOUTPUT_TRUNCATE_RESTART_SEQS);
	assert_int_equal(m->u.truncate.nrelids, 2);
	assert_int_equal(m->u.truncate.relids[0], relid_of(c, "scratch"));
	assert_int_equal(m->u.truncate.relids[1], relid_of(c, "audit_log"));
}

static void
test_basic_origin(void **state)
{
	capture *c = get_capture("basic");
	size_t i = find_kind(c, PGOUTPUT_ORIGIN, 0, 0);
	const pgoutput_msg *m = &c->msgs[i];

	assert_int_equal(count_kind(c, PGOUTPUT_ORIGIN), 1);
	assert_string_equal(m->u.origin.name, "upstream node");
	assert_int_equal(m->u.origin.origin_lsn, 0x12345678);
	/* Origin follows Begin, whose commit time is the origin's timestamp */
	assert_int_equal(c->msgs[i - 1].kind, PGOUTPUT_BEGIN);
	assert_int_equal(pgoutput_timestamp_to_unix_us(c->msgs[i - 1].u.begin.commit_time),
					 INT64_C(1704164645) * 1000000);
}

static void
test_toast_unchanged(void **state)
{
	capture *c = get_capture("toast");
	const pgoutput_msg *m = find_change(c, PGOUTPUT_INSERT, "big_doc", 0);
	const pgoutput_value *body = &m->u.insert.newtup.values[2];

	assert_int_equal(body->kind, PGOUTPUT_VALUE_TEXT);
	assert_int_equal(body->len, 40000 * 32);
	assert_memory_equal(body->data, "c4ca4238a0b923820dcc509a6f75849b", 32); /* md5('1') */

	m = find_change(c, PGOUTPUT_UPDATE, "big_doc", 0);
	assert_int_equal(m->u.update.old_kind, 0);
	assert_text(&m->u.update.newtup.values[1], "renamed");
	assert_int_equal(m->u.update.newtup.values[2].kind, PGOUTPUT_VALUE_UNCHANGED);
	assert_int_equal(m->u.update.newtup.values[2].len, 0);
	assert_null(m->u.update.newtup.values[2].data);

	m = find_change(c, PGOUTPUT_DELETE, "big_doc", 0);
	assert_int_equal(m->u.delete.old_kind, 'K');
	assert_text(&m->u.delete.oldtup.values[0], "1");
	assert_sql_null(&m->u.delete.oldtup.values[2]);
}

/* The Type message for typname; checks it comes before the Relation. */
static uint32_t
type_oid_of(const capture *c, const char *typname)
{
	for (size_t i = 0; i < c->nrecs; i++) {
		const pgoutput_msg *m = &c->msgs[i];

		if (m->kind == PGOUTPUT_RELATION)
			break;
		if (m->kind == PGOUTPUT_TYPE && strcmp(m->u.type.typname, typname) == 0) {
			assert_string_equal(m->u.type.nspname, "public");
			return m->u.type.type_oid;
		}
	}
	fail_msg("no Type %s before the Relation", typname);
	return 0;
}

static void
test_types_text(void **state)
{
	capture *c = get_capture("types");
	const pgoutput_msg *rel = find_relation(c, "all_types", 0);
	const pgoutput_msg *m = find_change(c, PGOUTPUT_INSERT, "all_types", 0);
	const pgoutput_value *v = m->u.insert.newtup.values;

	assert_int_equal(count_kind(c, PGOUTPUT_TYPE), 2);
	assert_int_equal(rel->u.relation.ncols, 23);
	assert_column(&rel->u.relation.cols[21], "c_mood", false, type_oid_of(c, "mood"));
	assert_column(&rel->u.relation.cols[22], "c_mood_array", false, type_oid_of(c, "_mood"));
	assert_int_equal(rel->u.relation.cols[9].typmod, 20 + 4);   /* varchar(20) */

	assert_int_equal(m->u.insert.newtup.ncols, 23);
	assert_text(&v[1], "-32768");
	assert_text(&v[3], "-9223372036854775808");
	assert_text(&v[4], "12345678.1234");
	assert_text(&v[7], "t");
	assert_text(&v[10], "ab   ");
	assert_text(&v[11], "\\xdeadbeef");
	assert_text(&v[14], "2024-02-29 12:34:56.789012+00");
	assert_text(&v[16], "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
	assert_text(&v[18], "{\"b\": {\"c\": null}}");
	assert_text(&v[20], "{\"x y\",\"q\\\"uote\"}");
	assert_text(&v[21], "happy");
	assert_text(&v[22], "{sad,ok}");

	m = find_change(c, PGOUTPUT_INSERT, "all_types", 1);
	assert_text(&m->u.insert.newtup.values[0], "2");
	for (unsigned i = 1; i < 23; i++)
		assert_sql_null(&m->u.insert.newtup.values[i]);
}

static void
assert_binary(const pgoutput_value *v, const char *expect, size_t len)
{
	assert_int_equal(v->kind, PGOUTPUT_VALUE_BINARY);
	assert_int_equal(v->len, len);
	assert_memory_equal(v->data, expect, len);
}

static void
test_types_binary(void **state)
{
	capture *c = get_capture("types_binary");
	const pgoutput_msg *m = find_change(c, PGOUTPUT_INSERT, "all_types", 0);
	const pgoutput_value *v = m->u.insert.newtup.values;

	for (unsigned i = 0; i < 23; i++)
		assert_int_equal(v[i].kind, PGOUTPUT_VALUE_BINARY);
	assert_binary(&v[0], "\0\0\0\0\0\0\0\1", 8);
	assert_binary(&v[1], "\x80\x00", 2);
	assert_binary(&v[2], "\x7f\xff\xff\xff", 4);
	assert_binary(&v[7], "\1", 1);
	assert_binary(&v[11], "\xde\xad\xbe\xef", 4);
	assert_binary(&v[16], "\xa0\xee\xbc\x99\x9c\x0b\x4e\xf8\xbb\x6d\x6b\xb9\xbd\x38\x0a\x11", 16);
	assert_binary(&v[21], "happy", 5);

	m = find_change(c, PGOUTPUT_INSERT, "all_types", 1);
	assert_binary(&m->u.insert.newtup.values[0], "\0\0\0\0\0\0\0\2", 8);
	assert_sql_null(&m->u.insert.newtup.values[22]);
}

/* ---- streamed transactions ---- */

#define MAX_STREAMED 16

/* What the walk over stream.bin saw of one streamed transaction. */
typedef struct streamed_txn {
	uint32_t xid;
	uint32_t subxids[4];      /* xids of data messages other than xid */
	int nsubxids;
	int blocks;
	long changes;
	bool committed;
	bool aborted;
	uint32_t aborted_subxid;  /* from a Stream Abort of a subtransaction */
} streamed_txn;

static streamed_txn *
streamed_lookup(streamed_txn *txns, int *ntxns, uint32_t xid, bool create)
{
	for (int i = 0; i < *ntxns; i++) {
		if (txns[i].xid == xid)
			return &txns[i];
	}
	assert_true(create);
	assert_true(*ntxns < MAX_STREAMED);
	txns[*ntxns] = (streamed_txn) {.xid = xid};
	return &txns[(*ntxns)++];
}

static void
note_subxid(streamed_txn *t, uint32_t xid)
{
	if (xid == t->xid)
		return;
	for (int i = 0; i < t->nsubxids; i++) {
		if (t->subxids[i] == xid)
			return;
	}
	assert_true(t->nsubxids < 4);
	t->subxids[t->nsubxids++] = xid;
}

static bool
has_subxid(const streamed_txn *t, uint32_t xid)
{
	for (int i = 0; i < t->nsubxids; i++) {
		if (t->subxids[i] == xid)
			return true;
	}
	return false;
}

static void
walk_stream_message(const pgoutput_msg *m, bool in_block, streamed_txn *txns, int *ntxns,
					streamed_txn **cur)
{
	streamed_txn *t;

	switch (m->kind) {
		case PGOUTPUT_STREAM_START:
			t = streamed_lookup(txns, ntxns, m->u.stream_start.xid, m->u.stream_start.first_segment);
			assert_int_equal(m->u.stream_start.first_segment, t->blocks == 0);
			assert_false(t->committed || t->aborted);
			t->blocks++;
			*cur = t;
			break;
		case PGOUTPUT_STREAM_STOP:
			*cur = NULL;
			break;
		case PGOUTPUT_STREAM_COMMIT:
			t = streamed_lookup(txns, ntxns, m->u.stream_commit.xid, false);
			assert_true(m->u.stream_commit.end_lsn > m->u.stream_commit.commit_lsn);
			assert_int_equal(m->u.stream_commit.flags, 0);
			t->committed = true;
			break;
		case PGOUTPUT_STREAM_ABORT:
			t = streamed_lookup(txns, ntxns, m->u.stream_abort.xid, false);
			if (m->u.stream_abort.subxid == t->xid)
				t->aborted = true;
			else
				t->aborted_subxid = m->u.stream_abort.subxid;
			break;
		default:
			assert_int_equal(m->stream_xid != 0, in_block);
			if (in_block) {
				note_subxid(*cur, m->stream_xid);
				(*cur)->changes += m->kind == PGOUTPUT_INSERT;
			}
			break;
	}
}

static void
test_stream_blocks(void **state)
{
	capture *c = get_capture("stream");
	streamed_txn txns[MAX_STREAMED];
	streamed_txn *cur = NULL;
	int ntxns = 0, commits = 0, whole_aborts = 0, sub_aborts = 0;

	for (size_t i = 0; i < c->nrecs; i++) {
		if (c->copies[i].kind == PGOUTPUT_COPY_XLOGDATA)
			walk_stream_message(&c->msgs[i], c->in_stream[i] && c->msgs[i].kind != PGOUTPUT_STREAM_STOP,
								txns, &ntxns, &cur);
	}
	assert_int_equal(ntxns, 4);
	for (int i = 0; i < ntxns; i++) {
		assert_true(txns[i].committed != txns[i].aborted);
		assert_true(txns[i].blocks > 1);
		commits += txns[i].committed;
		whole_aborts += txns[i].aborted;
		sub_aborts += txns[i].aborted_subxid != 0;
		/* a subtransaction's abort names an xid that tagged its changes */
		if (txns[i].aborted_subxid != 0)
			assert_true(has_subxid(&txns[i], txns[i].aborted_subxid));
	}
	assert_int_equal(commits, 3);
	assert_int_equal(whole_aborts, 1);
	assert_int_equal(sub_aborts, 1);
	assert_int_equal(txns[0].changes, 5000);
	assert_true(txns[0].committed);
	assert_true(txns[1].aborted);
}

/* Rows inserted in the rolled-back savepoint carry the subtransaction's xid. */
static void
test_stream_subtransaction(void **state)
{
	capture *c = get_capture("stream");
	size_t a = find_kind(c, PGOUTPUT_STREAM_ABORT, 0, 1);
	uint32_t subxid = c->msgs[a].u.stream_abort.subxid;
	long rolled_back = 0;

	assert_true(subxid != c->msgs[a].u.stream_abort.xid);
	for (size_t i = 0; i < a; i++) {
		const pgoutput_msg *m = &c->msgs[i];

		if (m->kind == PGOUTPUT_INSERT && m->u.insert.newtup.values[1].len == 11 &&
			memcmp(m->u.insert.newtup.values[1].data, "rolled back", 11) == 0) {
			assert_int_equal(m->stream_xid, subxid);
			rolled_back++;
		}
	}
	assert_true(rolled_back > 0);
	/* the transactional message after the rollback is in a streamed block */
	a = find_kind(c, PGOUTPUT_MESSAGE, 0, 0);
	assert_int_equal(c->msgs[a].u.message.flags, PGOUTPUT_MESSAGE_TRANSACTIONAL);
	assert_true(c->msgs[a].stream_xid != 0);
	assert_string_equal(c->msgs[a].u.message.prefix, "tidemark.stream");
}

/* A small transaction commits, whole, between blocks of an open one. */
static void
test_stream_interleaved(void **state)
{
	capture *c = get_capture("stream");
	size_t b = find_kind(c, PGOUTPUT_BEGIN, 0, 0);
	const pgoutput_msg *ins = &c->msgs[b + 1];
	uint32_t open_xid = c->msgs[find_kind(c, PGOUTPUT_STREAM_START, b, 0)].u.stream_start.xid;
	bool started_before = false;

	assert_int_equal(count_kind(c, PGOUTPUT_BEGIN), 1);
	assert_false(c->in_stream[b]);
	assert_int_equal(ins->kind, PGOUTPUT_INSERT);
	assert_int_equal(ins->stream_xid, 0);
	assert_text(&ins->u.insert.newtup.values[0], "30000");
	assert_int_equal(c->msgs[b + 2].kind, PGOUTPUT_COMMIT);
	for (size_t i = 0; i < b; i++) {
		if (c->msgs[i].kind == PGOUTPUT_STREAM_START && c->msgs[i].u.stream_start.xid == open_xid)
			started_before = true;
	}
	assert_true(started_before);
}

/* ---- damaged input ---- */

static int
decode_msg(pgoutput_reader r, const char *buf, size_t len, arena *scratch, tm_error *err)
{
	pgoutput_msg m;

	return pgoutput_read_message(&r, buf, len, scratch, &m, err);
}

/*
 * Every proper prefix of every record fails: the copy header, and the
 * pgoutput message of XLogData.
 */
static void
test_truncated_prefixes(void **state)
{
	arena scratch;
	tm_error err;

	arena_init(&scratch, 8192);
	for (size_t f = 0; f < NFIXTURES; f++) {
		capture *c = get_capture(fixture_names[f]);

		for (size_t i = 0; i < c->nrecs; i++) {
			pgoutput_copydata cd;
			pgoutput_reader r = {2, c->in_stream[i]};

			/* XLogData takes the rest as its message: only its header can be short */
			for (size_t n = 0; n < c->recs[i].len && n < 25; n++)
				assert_int_equal(pgoutput_read_copydata(c->recs[i].data, n, &cd, &err), -1);
			if (c->copies[i].kind != PGOUTPUT_COPY_XLOGDATA)
				continue;
			for (size_t n = 0; n < c->copies[i].len; n++) {
				if (decode_msg(r, c->copies[i].data, n, &scratch, &err) != -1)
					fail_msg("%s record %zu: prefix %zu decoded", fixture_names[f], i, n);
				arena_reset(&scratch);
			}
		}
	}
	arena_free(&scratch);
}

/* A copy of message i of fixture name, to damage. */
static char *
copy_message(const capture *c, size_t i, size_t *len)
{
	char *p = malloc(c->copies[i].len);

	assert_non_null(p);
	memcpy(p, c->copies[i].data, c->copies[i].len);
	*len = c->copies[i].len;
	return p;
}

static void
expect_error(const char *buf, size_t len, bool in_stream, const char *needle)
{
	pgoutput_reader r = {2, in_stream};
	arena scratch;
	tm_error err = {""};

	arena_init(&scratch, 1024);
	assert_int_equal(decode_msg(r, buf, len, &scratch, &err), -1);
	if (strstr(err.msg, needle) == NULL)
		fail_msg("error \"%s\" does not contain \"%s\"", err.msg, needle);
	arena_free(&scratch);
}

/* Every text value length of every Insert set to 0xFFFFFFF0. */
static void
test_huge_value_length(void **state)
{
	capture *c = get_capture("basic");

	for (size_t i = 0; i < c->nrecs; i++) {
		const pgoutput_msg *m = &c->msgs[i];

		if (m->kind != PGOUTPUT_INSERT)
			continue;
		for (unsigned col = 0; col < m->u.insert.newtup.ncols; col++) {
			const pgoutput_value *v = &m->u.insert.newtup.values[col];
			size_t len;
			char *buf;

			if (v->kind != PGOUTPUT_VALUE_TEXT)
				continue;
			buf = copy_message(c, i, &len);
			be32_put(buf + (v->data - c->copies[i].data) - 4, 0xFFFFFFF0);
			expect_error(buf, len, false, "value length 4294967280 exceeds the");
			free(buf);
		}
	}
}

/* Count fields set to their maximum. */
static void
test_huge_counts(void **state)
{
	capture *c = get_capture("basic");
	size_t len;
	char *buf;

	/* Insert: 'I', relid, 'N', ncols */
	buf = copy_message(c, find_kind(c, PGOUTPUT_INSERT, 0, 0), &len);
	buf[6] = buf[7] = (char) 0xFF;
	expect_error(buf, len, false, "Insert: new tuple column count 65535 needs at least 65535");
	free(buf);

	/* Relation: 'R', relid, "public", "Line Items", replident, ncols */
	buf = copy_message(c, find_kind(c, PGOUTPUT_RELATION, 0, 0), &len);
	assert_int_equal(buf[5 + 7 + 11], 'd');
	buf[5 + 7 + 11 + 1] = buf[5 + 7 + 11 + 2] = (char) 0xFF;
	expect_error(buf, len, false, "Relation: column count 65535 needs at least 655350");
	free(buf);

	/* Truncate: 'T', nrelids */
	buf = copy_message(c, find_kind(c, PGOUTPUT_TRUNCATE, 0, 0), &len);
	be32_put(buf + 1, 0xFFFFFFFF);
	expect_error(buf, len, false, "Truncate: relation count 4294967295 needs at least");
	free(buf);

	/* Message: 'M', flags, lsn, "tidemark.test", length */
	buf = copy_message(c, find_kind(c, PGOUTPUT_MESSAGE, 0, 0), &len);
	be32_put(buf + 1 + 1 + 8 + 14, 0xFFFFFFF0);
	expect_error(buf, len, false, "Message: content length 4294967280 exceeds the");
	free(buf);
}

static void
test_trailing_garbage(void **state)
{
	capture *c = get_capture("basic");
	size_t i = find_kind(c, PGOUTPUT_COMMIT, 0, 0);
	size_t len = c->copies[i].len;
	char *buf = malloc(len + 3);
	tm_error err;
	pgoutput_copydata cd;
	char ka[19];

	memcpy(buf, c->copies[i].data, len);
	memcpy(buf + len, "xyz", 3);
	expect_error(buf, len + 3, false,
				 "Commit: message is followed by 3 bytes of trailing data at offset 26");
	free(buf);

	/* a keepalive is exactly 18 bytes */
	memcpy(ka, c->recs[find_copy(c, PGOUTPUT_COPY_KEEPALIVE)].data, 18);
	ka[18] = 0;
	assert_int_equal(pgoutput_read_copydata(ka, 19, &cd, &err), -1);
	assert_non_null(strstr(err.msg, "Primary keepalive: message is followed by 1 bytes"));
}

/* The error for a value longer than what is left names field and offset. */
static void
test_error_names_field(void **state)
{
	/* 'U', relid 7, 'N', 3 columns: 'n', 'u', 't' with length 4000 and 12 bytes */
	char buf[64];
	size_t len = 0;

	buf[len++] = 'U';
	be32_put(buf + len, 7);
	len += 4;
	buf[len++] = 'N';
	buf[len++] = 0;
	buf[len++] = 3;
	buf[len++] = 'n';
	buf[len++] = 'u';
	buf[len++] = 't';
	be32_put(buf + len, 4000);
	len += 4;
	memset(buf + len, 'x', 12);
	len += 12;
	expect_error(buf, len, false,
				 "Update: new tuple column 3 value length 4000 exceeds the 12 bytes left at offset 15");
	buf[10] = 'q';
	expect_error(buf, len, false,
				 "Update: new tuple column 3 kind is 0x71, expected one of \"nutb\" at offset 10");
}

static void
test_relation_name_without_nul(void **state)
{
	char buf[] = {'R', 0, 0, 0, 9, 'p', 'u', 'b', 'l', 'i', 'c', 0, 'a', 'b', 'c'};

	expect_error(buf, sizeof buf, false,
				 "Relation: relation name has no terminating NUL in the 3 bytes left at offset 12");
	expect_error(buf, 9, false, "Relation: namespace has no terminating NUL");
}

/* Without an error record, failures are still failures. */
static void
test_null_error_record(void **state)
{
	char buf[] = {'R', 0, 0, 0, 9, 'p', 'u', 'b'};
	pgoutput_reader r = {2, false};
	pgoutput_copydata cd;
	pgoutput_msg m;
	arena scratch;

	arena_init(&scratch, 1024);
	assert_int_equal(pgoutput_read_message(&r, buf, sizeof buf, &scratch, &m, NULL), -1);
	assert_int_equal(pgoutput_read_message(&r, "P", 1, &scratch, &m, NULL), -1);
	assert_int_equal(pgoutput_read_copydata(buf, sizeof buf, &cd, NULL), -1);
	arena_free(&scratch);
}

static void
test_unsupported_types(void **state)
{
	const char *kinds = "bPKrp";
	const char *names[] = {"Begin Prepare", "Prepare", "Commit Prepared", "Rollback Prepared",
						   "Stream Prepare"};
	char want[128];

	for (int i = 0; kinds[i] != '\0'; i++) {
		char buf[32] = {kinds[i]};

		snprintf(want, sizeof want, "unsupported pgoutput message type '%c' (%s)", kinds[i],
				 names[i]);
		expect_error(buf, sizeof buf, false, want);
	}
	expect_error("z", 1, false, "unsupported pgoutput message type 'z'");
	expect_error("\x05", 1, false, "unsupported pgoutput message type 0x05");
	expect_error("", 0, false, "empty pgoutput message");
}

static bool
is_data_kind(pgoutput_kind k)
{
	return k != 0 && strchr("RYIUDTM", (int) k) != NULL;
}

/*
 * Decodes data message i of c in the opposite stream state, that is with a
 * stream xid read where there is none or the other way round. Row changes
 * must fail. A Relation, Type or Message can still parse, its strings
 * absorbing the shifted bytes (the protocol cannot tell; only the reader's
 * state keeps the two apart): then its id or prefix comes out different.
 */
static void
check_wrong_state(const capture *c, size_t i, arena *scratch)
{
	pgoutput_reader r = {2, !c->in_stream[i]};
	const pgoutput_msg *orig = &c->msgs[i];
	pgoutput_msg m;
	tm_error err;

	if (pgoutput_read_message(&r, c->copies[i].data, c->copies[i].len, scratch, &m, &err) != 0)
		return;
	assert_int_equal(m.kind, orig->kind);
	if (m.kind == PGOUTPUT_RELATION)
		assert_int_not_equal(m.u.relation.relid, orig->u.relation.relid);
	else if (m.kind == PGOUTPUT_TYPE)
		assert_int_not_equal(m.u.type.type_oid, orig->u.type.type_oid);
	else if (m.kind == PGOUTPUT_MESSAGE)
		assert_string_not_equal(m.u.message.prefix, orig->u.message.prefix);
	else
		fail_msg("record %zu ('%c') decoded in the wrong stream state", i, orig->kind);
}

static void
test_stream_xid_placement(void **state)
{
	arena scratch;
	size_t checked = 0;

	arena_init(&scratch, 8192);
	for (size_t f = 0; f < NFIXTURES; f++) {
		capture *c = get_capture(fixture_names[f]);

		for (size_t i = 0; i < c->nrecs; i++) {
			if (!is_data_kind(c->msgs[i].kind))
				continue;
			check_wrong_state(c, i, &scratch);
			arena_reset(&scratch);
			checked++;
		}
	}
	assert_true(checked > 19000);
	arena_free(&scratch);
}

static void
test_stream_state(void **state)
{
	char start[] = {'S', 0, 0, 0, 42, 1};
	char stop[] = {'E'};
	char begin[21] = {'B'};
	pgoutput_reader r;
	pgoutput_msg m;
	arena scratch;
	tm_error err;

	arena_init(&scratch, 1024);
	expect_error(stop, 1, false, "Stream Stop: outside a streamed block");
	expect_error(start, sizeof start, true, "Stream Start: inside a streamed block");
	expect_error(begin, sizeof begin, true, "Begin: inside a streamed block");

	pgoutput_reader_init(&r, 1);
	assert_int_equal(pgoutput_read_message(&r, start, sizeof start, &scratch, &m, &err), -1);
	assert_string_equal(err.msg, "Stream Start: needs protocol version 2, the stream uses 1");

	pgoutput_reader_init(&r, 2);
	assert_int_equal(pgoutput_read_message(&r, start, sizeof start, &scratch, &m, &err), 0);
	assert_true(r.in_stream);
	assert_int_equal(m.u.stream_start.xid, 42);
	assert_true(m.u.stream_start.first_segment);
	assert_int_equal(pgoutput_read_message(&r, stop, 1, &scratch, &m, &err), 0);
	assert_false(r.in_stream);

	/* a failed message leaves the state alone; xid 0 is invalid */
	start[4] = 0;
	assert_int_equal(pgoutput_read_message(&r, start, sizeof start, &scratch, &m, &err), -1);
	assert_false(r.in_stream);
	assert_string_equal(err.msg, "Stream Start: xid is 0 (invalid) at offset 1");
	start[4] = 42;
	start[5] = 2;
	assert_int_equal(pgoutput_read_message(&r, start, sizeof start, &scratch, &m, &err), -1);
	assert_string_equal(err.msg, "Stream Start: first segment is 2, expected 0 or 1 at offset 5");
	arena_free(&scratch);
}

/* Flipped bytes never make the decoder read outside its input. */
static void
test_random_damage(void **state)
{
	uint64_t seed = 0x9E3779B97F4A7C15u;
	arena scratch;
	tm_error err;

	arena_init(&scratch, 8192);
	for (size_t f = 0; f < NFIXTURES; f++) {
		capture *c = get_capture(fixture_names[f]);

		for (size_t i = 0; i < c->nrecs; i += (c->nrecs > 500 ? 37 : 1)) {
			pgoutput_reader r = {2, c->in_stream[i]};
			size_t len;
			char *buf;

			if (c->copies[i].kind != PGOUTPUT_COPY_XLOGDATA || c->copies[i].len > 4096)
				continue;
			buf = copy_message(c, i, &len);
			for (int round = 0; round < 200; round++) {
				pgoutput_reader rr = r;
				pgoutput_msg m;

				seed = seed * 6364136223846793005u + 1442695040888963407u;
				buf[(seed >> 33) % len] ^= (char) (1u << ((seed >> 29) & 7));
				if (pgoutput_read_message(&rr, buf, len, &scratch, &m, &err) == 0)
					assert_msg_inside(&m, buf, len);
				arena_reset(&scratch);
			}
			free(buf);
		}
	}
	arena_free(&scratch);
}

/* ---- the copy stream ---- */

static void
test_copydata(void **state)
{
	capture *c = get_capture("basic");
	size_t k = find_copy(c, PGOUTPUT_COPY_KEEPALIVE);
	size_t x = find_copy(c, PGOUTPUT_COPY_XLOGDATA);
	const pgoutput_copydata *ka = &c->copies[k];
	const pgoutput_copydata *w = &c->copies[x];
	char buf[18];
	pgoutput_copydata cd;
	tm_error err;

	assert_int_equal(ka->kind, PGOUTPUT_COPY_KEEPALIVE);
	assert_int_equal(c->recs[k].len, 18);
	assert_int_equal(ka->wal_end, get_be64(c->recs[k].data + 1));
	assert_int_equal(ka->send_time, (int64_t) get_be64(c->recs[k].data + 9));
	assert_int_equal(ka->reply_requested, c->recs[k].data[17]);
	assert_true(pgoutput_timestamp_to_unix_us(ka->send_time) > INT64_C(1700000000) * 1000000);

	assert_int_equal(w->wal_start, get_be64(c->recs[x].data + 1));
	assert_int_equal(w->wal_end, get_be64(c->recs[x].data + 9));
	assert_ptr_equal(w->data, c->recs[x].data + 25);
	assert_int_equal(w->len, c->recs[x].len - 25);

	memcpy(buf, c->recs[k].data, 18);
	buf[17] = 1;
	assert_int_equal(pgoutput_read_copydata(buf, 18, &cd, &err), 0);
	assert_true(cd.reply_requested);
	buf[17] = 7;
	assert_int_equal(pgoutput_read_copydata(buf, 18, &cd, &err), -1);
	buf[0] = 'x';
	assert_int_equal(pgoutput_read_copydata(buf, 18, &cd, &err), -1);
	assert_string_equal(err.msg,
						"copy message: type 0x78 is not XLogData 'w' or keepalive 'k' at offset 0");
}

static void
test_write_status(void **state)
{
	char out[PGOUTPUT_STATUS_LEN];
	size_t n = pgoutput_write_status(out, 0x0102030405060708u, 0x1122334455667788u,
									 0xA1B2C3D4E5F60718u, -5, true);

	assert_int_equal(n, 34);
	assert_int_equal(out[0], 'r');
	assert_int_equal(get_be64(out + 1), 0x0102030405060708u);
	assert_int_equal(get_be64(out + 9), 0x1122334455667788u);
	assert_int_equal(get_be64(out + 17), 0xA1B2C3D4E5F60718u);
	assert_int_equal((int64_t) get_be64(out + 25), -5);
	assert_int_equal(out[33], 1);
	assert_int_equal(pgoutput_write_status(out, 0, 0, 0, 0, false), 34);
	assert_int_equal(out[33], 0);
}

static void
test_timestamps(void **state)
{
	assert_int_equal(pgoutput_timestamp_to_unix_us(0), INT64_C(946684800000000));
	assert_int_equal(pgoutput_timestamp_from_unix_us(INT64_C(946684800000000)), 0);
	assert_int_equal(pgoutput_timestamp_from_unix_us(pgoutput_timestamp_to_unix_us(123456789)),
					 123456789);
	assert_int_equal(pgoutput_timestamp_to_unix_us(INT64_MAX), INT64_MAX);
	assert_int_equal(pgoutput_timestamp_from_unix_us(INT64_MIN), INT64_MIN);
}

static void
test_kind_names(void **state)
{
	assert_string_equal(pgoutput_kind_name(PGOUTPUT_INSERT), "Insert");
	assert_string_equal(pgoutput_kind_name(PGOUTPUT_STREAM_COMMIT), "Stream Commit");
	assert_string_equal(pgoutput_kind_name('P'), "Prepare");
	assert_string_equal(pgoutput_kind_name('z'), "unknown");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_record_decodes),
		cmocka_unit_test(test_transactions_pair_up),
		cmocka_unit_test(test_basic_relation),
		cmocka_unit_test(test_basic_insert),
		cmocka_unit_test(test_basic_update_and_delete),
		cmocka_unit_test(test_basic_replica_identity_full),
		cmocka_unit_test(test_basic_messages),
		cmocka_unit_test(test_basic_truncate),
		cmocka_unit_test(test_basic_origin),
		cmocka_unit_test(test_toast_unchanged),
		cmocka_unit_test(test_types_text),
		cmocka_unit_test(test_types_binary),
		cmocka_unit_test(test_stream_blocks),
		cmocka_unit_test(test_stream_subtransaction),
		cmocka_unit_test(test_stream_interleaved),
		cmocka_unit_test(test_truncated_prefixes),
		cmocka_unit_test(test_huge_value_length),
		cmocka_unit_test(test_huge_counts),
		cmocka_unit_test(test_trailing_garbage),
		cmocka_unit_test(test_error_names_field),
		cmocka_unit_test(test_relation_name_without_nul),
		cmocka_unit_test(test_null_error_record),
		cmocka_unit_test(test_unsupported_types),
		cmocka_unit_test(test_stream_xid_placement),
		cmocka_unit_test(test_stream_state),
		cmocka_unit_test(test_random_damage),
		cmocka_unit_test(test_copydata),
		cmocka_unit_test(test_write_status),
		cmocka_unit_test(test_timestamps),
		cmocka_unit_test(test_kind_names),
	};

	return cmocka_run_group_tests(tests, NULL, free_captures);
}
