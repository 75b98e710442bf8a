/*
 * capture_pgoutput: records the raw replication stream of a logical slot
 * using the pgoutput plugin, for decoder fixtures.
 *
 *   capture_pgoutput -d CONNINFO -s SLOT -o FILE [-p PUBLICATION] [-V PROTO]
 *                    [-S] [-b] [-t IDLE_SECONDS]
 *
 * Connects with replication=database, runs
 *   START_REPLICATION SLOT <slot> LOGICAL 0/0 (proto_version '<proto>',
 *     publication_names '<publication>', messages 'true'
 *     [, streaming 'on'] [, binary 'true'])
 * and writes every CopyData payload it receives (XLogData and keepalives
 * alike) to FILE as a record: a 4-byte big-endian length, then the payload.
 * It stops once no XLogData has arrived for IDLE_SECONDS (default 3).
 *
 * Keepalives that ask for a reply get a status update that reports the
 * received position as written but nothing as flushed, so the slot does not
 * advance and the same changes can be captured again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "pgoutput.h"

typedef struct options {
	const char *conninfo;
	const char *slot;
	const char *outfile;
	const char *publication;
	int proto_version;
	bool streaming;
	bool binary;
	int idle_seconds;
} options;

typedef struct capture {
	PGconn *conn;
	FILE *out;
	tm_lsn received;    /* highest WAL end seen */
	long records;
	long xlogdata;
} capture;

static void
usage(void)
{
	fprintf(stderr,
			"usage: capture_pgoutput -d CONNINFO -s SLOT -o FILE [-p PUBLICATION]\n"
			"                        [-V PROTO] [-S] [-b] [-t IDLE_SECONDS]\n"
			"  -S  streaming 'on'   -b  binary 'true'   (defaults: -p p -V 2 -t 3)\n");
	exit(2);
}

static void
parse_options(int argc, char **argv, options *o)
{
	int ch;

	*o = (options) {NULL, NULL, NULL, "p", 2, false, false, 3};
	while ((ch = getopt(argc, argv, "d:s:o:p:V:Sbt:")) != -1) {
		switch (ch) {
			case 'd': o->conninfo = optarg; break;
			case 's': o->slot = optarg; break;
			case 'o': o->outfile = optarg; break;
			case 'p': o->publication = optarg; break;
			case 'V': o->proto_version = atoi(optarg); break;
			case 'S': o->streaming = true; break;
			case 'b': o->binary = true; break;
			case 't': o->idle_seconds = atoi(optarg); break;
			default: usage();
		}
	}
	if (o->conninfo == NULL || o->slot == NULL || o->outfile == NULL || optind != argc ||
		o->proto_version < 1 || o->idle_seconds < 1)
		usage();
}

static void
die(capture *cap, const char *what)
{
	fprintf(stderr, "capture_pgoutput: %s: %s", what,
			cap->conn != NULL ? PQerrorMessage(cap->conn) : "\n");
	exit(1);
}

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static pg_timestamp
now_pg(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return pgoutput_timestamp_from_unix_us((int64_t) tv.tv_sec * 1000000 + tv.tv_usec);
}

/* Connects in logical replication mode; conninfo may be a URI or key=value. */
static void
connect_replication(capture *cap, const char *conninfo)
{
	const char *keys[] = {"dbname", "replication", NULL};
	const char *values[] = {conninfo, "database", NULL};

	cap->conn = PQconnectdbParams(keys, values, 1);
	if (PQstatus(cap->conn) != CONNECTION_OK)
		die(cap, "connection failed");
}

static void
start_replication(capture *cap, const options *o)
{
	char *slot = PQescapeIdentifier(cap->conn, o->slot, strlen(o->slot));
	char *pub = PQescapeLiteral(cap->conn, o->publication, strlen(o->publication));
	char sql[1024];
	PGresult *res;

	if (slot == NULL || pub == NULL)
		die(cap, "escaping names");
	snprintf(sql, sizeof sql,
			 "START_REPLICATION SLOT %s LOGICAL 0/0 (proto_version '%d', "
			 "publication_names %s, messages 'true'%s%s)",
			 slot, o->proto_version, pub, o->streaming ? ", streaming 'on'" : "",
			 o->binary ? ", binary 'true'" : "");
	PQfreemem(slot);
	PQfreemem(pub);
	res = PQexec(cap->conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_BOTH)
		die(cap, "START_REPLICATION");
	PQclear(res);
}

static void
write_record(capture *cap, const char *buf, int len)
{
	unsigned char hdr[4] = {
		(unsigned char) (len >> 24), (unsigned char) (len >> 16),
		(unsigned char) (len >> 8), (unsigned char) len,
	};

	if (fwrite(hdr, 1, 4, cap->out) != 4 || fwrite(buf, 1, (size_t) len, cap->out) != (size_t) len) {
		fprintf(stderr, "capture_pgoutput: write: %s\n", strerror(errno));
		exit(1);
	}
	cap->records++;
}

static void
send_status(capture *cap, bool reply_requested)
{
	char msg[PGOUTPUT_STATUS_LEN];
	size_t n = pgoutput_write_status(msg, cap->received, LSN_INVALID, LSN_INVALID, now_pg(),
									 reply_requested);

	if (PQputCopyData(cap->conn, msg, (int) n) != 1 || PQflush(cap->conn) != 0)
		die(cap, "sending status update");
}

/* Records one payload; returns true if it was XLogData. */
static bool
handle_payload(capture *cap, const char *buf, int len)
{
	pgoutput_copydata cd;
	tm_error err;

	write_record(cap, buf, len);
	if (pgoutput_read_copydata(buf, (size_t) len, &cd, &err) != 0) {
		fprintf(stderr, "capture_pgoutput: warning: %s\n", err.msg);
		return false;
	}
	if (cd.wal_end > cap->received)
		cap->received = cd.wal_end;
	if (cd.kind == PGOUTPUT_COPY_KEEPALIVE && cd.reply_requested)
		send_status(cap, false);
	if (cd.kind == PGOUTPUT_COPY_XLOGDATA)
		cap->xlogdata++;
	return cd.kind == PGOUTPUT_COPY_XLOGDATA;
}

/* Waits up to timeout seconds for the socket to become readable. */
static void
wait_readable(capture *cap, double timeout)
{
	int sock = PQsocket(cap->conn);
	fd_set rfds;
	struct timeval tv;

	FD_ZERO(&rfds);
	FD_SET(sock, &rfds);
	tv.tv_sec = (time_t) timeout;
	tv.tv_usec = (suseconds_t) ((timeout - (double) tv.tv_sec) * 1e6);
	if (select(sock + 1, &rfds, NULL, NULL, &tv) < 0 && errno != EINTR)
		die(cap, "select");
	if (PQconsumeInput(cap->conn) == 0)
		die(cap, "reading");
}

static void
capture_stream(capture *cap, int idle_seconds)
{
	double last_data = now_seconds();

	for (;;) {
		char *buf = NULL;
		int len = PQgetCopyData(cap->conn, &buf, 1);
		double idle = now_seconds() - last_data;

		if (len > 0) {
			if (handle_payload(cap, buf, len))
				last_data = now_seconds();
			PQfreemem(buf);
		} else if (len == 0) {
			if (idle >= idle_seconds)
				return;
			wait_readable(cap, idle_seconds - idle);
		} else if (len == -1)
			return;             /* the server ended the copy */
		else
			die(cap, "receiving copy data");
	}
}

/* Ends the copy cleanly, discarding whatever the server still sends. */
static void
finish_copy(capture *cap)
{
	PGresult *res;
	char *buf;

	if (PQputCopyEnd(cap->conn, NULL) != 1 || PQflush(cap->conn) != 0)
		die(cap, "ending copy");
	while (PQgetCopyData(cap->conn, &buf, 0) > 0)
		PQfreemem(buf);
	while ((res = PQgetResult(cap->conn)) != NULL)
		PQclear(res);
}

int
main(int argc, char **argv)
{
	options o;
	capture cap = {0};

	parse_options(argc, argv, &o);
	connect_replication(&cap, o.conninfo);
	cap.out = fopen(o.outfile, "wb");
	if (cap.out == NULL) {
		fprintf(stderr, "capture_pgoutput: %s: %s\n", o.outfile, strerror(errno));
		return 1;
	}
	start_replication(&cap, &o);
	capture_stream(&cap, o.idle_seconds);
	finish_copy(&cap);
	PQfinish(cap.conn);
	if (fclose(cap.out) != 0) {
		fprintf(stderr, "capture_pgoutput: %s: %s\n", o.outfile, strerror(errno));
		return 1;
	}
	printf("%s: %ld records, %ld XLogData\n", o.outfile, cap.records, cap.xlogdata);
	return 0;
}
