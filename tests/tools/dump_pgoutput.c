/*
 * dump_pgoutput: prints the messages of a capture file (records of a 4-byte
 * big-endian length and a CopyData payload, as capture_pgoutput writes
 * them), one line per message, to inspect fixtures.
 *
 *   dump_pgoutput [-v] FILE      (-v: also print tuple values)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgoutput.h"

static char *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long size;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
		fseek(f, 0, SEEK_SET) != 0) {
		perror(path);
		exit(1);
	}
	buf = malloc((size_t) size + 1);
	if (buf == NULL || fread(buf, 1, (size_t) size, f) != (size_t) size) {
		perror(path);
		exit(1);
	}
	fclose(f);
	*len = (size_t) size;
	return buf;
}

static void
print_tuple(const char *label, const pgoutput_tuple *t, bool verbose)
{
	printf(" %s[%u]", label, t->ncols);
	if (!verbose)
		return;
	for (unsigned i = 0; i < t->ncols; i++) {
		const pgoutput_value *v = &t->values[i];

		if (v->kind == PGOUTPUT_VALUE_TEXT)
			printf(" '%.*s'", v->len > 60 ? 60 : (int) v->len, v->data);
		else if (v->kind == PGOUTPUT_VALUE_BINARY)
			printf(" b(%u)", v->len);
		else
			printf(" %c", v->kind);
	}
}

static void
print_relation(const pgoutput_msg *m)
{
	printf(" %u \"%s\".\"%s\" ident=%c", m->u.relation.relid, m->u.relation.nspname,
		   m->u.relation.relname, m->u.relation.replident);
	for (unsigned i = 0; i < m->u.relation.ncols; i++) {
		const pgoutput_column *c = &m->u.relation.cols[i];

		printf(" %s\"%s\":%u/%d", c->is_key ? "*" : "", c->name, c->type_oid, c->typmod);
	}
}

static void
print_message(const pgoutput_msg *m, bool verbose)
{
	char a[LSN_TEXT_MAX], b[LSN_TEXT_MAX];

	printf("%s", pgoutput_kind_name(m->kind));
	if (m->stream_xid != 0)
		printf(" (xid %u)", m->stream_xid);
	switch (m->kind) {
		case PGOUTPUT_BEGIN:
			printf(" xid=%u final=%s", m->u.begin.xid, lsn_format(m->u.begin.final_lsn, a));
			break;
		case PGOUTPUT_COMMIT:
			printf(" commit=%s end=%s", lsn_format(m->u.commit.commit_lsn, a),
				   lsn_format(m->u.commit.end_lsn, b));
			break;
		case PGOUTPUT_ORIGIN:
			printf(" \"%s\" %s", m->u.origin.name, lsn_format(m->u.origin.origin_lsn, a));
			break;
		case PGOUTPUT_RELATION:
			print_relation(m);
			break;
		case PGOUTPUT_TYPE:
			printf(" %u \"%s\".\"%s\"", m->u.type.type_oid, m->u.type.nspname,
				   m->u.type.typname);
			break;
		case PGOUTPUT_INSERT:
			printf(" rel=%u", m->u.insert.relid);
			print_tuple("new", &m->u.insert.newtup, verbose);
			break;
		case PGOUTPUT_UPDATE:
			printf(" rel=%u", m->u.update.relid);
			if (m->u.update.old_kind != 0)
				print_tuple(m->u.update.old_kind == 'K' ? "key" : "old", &m->u.update.oldtup,
							verbose);
			print_tuple("new", &m->u.update.newtup, verbose);
			break;
		case PGOUTPUT_DELETE:
			printf(" rel=%u", m->u.delete.relid);
			print_tuple(m->u.delete.old_kind == 'K' ? "key" : "old", &m->u.delete.oldtup,
						verbose);
			break;
		case PGOUTPUT_TRUNCATE:
			printf(" options=%u", m->u.truncate.options);
			for (uint32_t i = 0; i < m->u.truncate.nrelids; i++)
				printf(" %u", m->u.truncate.relids[i]);
			break;
		case PGOUTPUT_MESSAGE:
			printf(" flags=%u lsn=%s prefix=\"%s\" len=%u", m->u.message.flags,
				   lsn_format(m->u.message.lsn, a), m->u.message.prefix, m->u.message.len);
			break;
		case PGOUTPUT_STREAM_START:
			printf(" xid=%u first=%d", m->u.stream_start.xid, m->u.stream_start.first_segment);
			break;
		case PGOUTPUT_STREAM_STOP:
			break;
		case PGOUTPUT_STREAM_COMMIT:
			printf(" xid=%u commit=%s end=%s", m->u.stream_commit.xid,
				   lsn_format(m->u.stream_commit.commit_lsn, a),
				   lsn_format(m->u.stream_commit.end_lsn, b));
			break;
		case PGOUTPUT_STREAM_ABORT:
			printf(" xid=%u subxid=%u", m->u.stream_abort.xid, m->u.stream_abort.subxid);
			break;
	}
	printf("\n");
}

int
main(int argc, char **argv)
{
	bool verbose = argc == 3 && strcmp(argv[1], "-v") == 0;
	size_t len, pos = 0;
	char *buf;
	pgoutput_reader reader;
	arena scratch;

	if (argc != 2 && !verbose) {
		fprintf(stderr, "usage: dump_pgoutput [-v] FILE\n");
		return 2;
	}
	buf = read_file(argv[argc - 1], &len);
	pgoutput_reader_init(&reader, 2);
	arena_init(&scratch, 8192);
	while (pos + 4 <= len) {
		uint32_t n = (uint32_t) (unsigned char) buf[pos] << 24 |
			(uint32_t) (unsigned char) buf[pos + 1] << 16 |
			(uint32_t) (unsigned char) buf[pos + 2] << 8 | (unsigned char) buf[pos + 3];
		pgoutput_copydata cd;
		pgoutput_msg m;
		tm_error err;

		if (n > len - pos - 4) {
			fprintf(stderr, "truncated record at offset %zu\n", pos);
			return 1;
		}
		if (pgoutput_read_copydata(buf + pos + 4, n, &cd, &err) != 0 ||
			(cd.kind == PGOUTPUT_COPY_XLOGDATA &&
			 pgoutput_read_message(&reader, cd.data, cd.len, &scratch, &m, &err) != 0)) {
			fprintf(stderr, "record at offset %zu: %s\n", pos, err.msg);
			return 1;
		}
		if (cd.kind == PGOUTPUT_COPY_KEEPALIVE)
			printf("keepalive reply=%d\n", cd.reply_requested);
		else
			print_message(&m, verbose);
		arena_reset(&scratch);
		pos += 4 + n;
	}
	arena_free(&scratch);
	free(buf);
	return pos == len ? 0 : 1;
}
