#include "source.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "log.h"
#include "pgconn.h"
#include "pgoutput.h"
#include "source_query.h"
#include "strbuf.h"

#define SRC PGCONN_SOURCE

struct source {
	PGconn *conn;       /* owned */
	char *slot;         /* owned */
	char *publication;  /* owned */
	char *conninfo;     /* owned: for explanations over an ordinary connection */
	char *pending;      /* owned by libpq (PQfreemem): the last payload handed out */
	char *peeked;       /* owned by libpq: a payload read ahead by source_has_pending */
	int peeked_len;
	int wake_fd;        /* source_wake_on: also ends a wait when readable; -1 none */
};

/* The walsender found no publication for a change: gone, or dropped and
 * created again, in which case the changes written while it did not exist
 * stop the stream at every try (PostgreSQL before 18 decodes each change
 * with the publications of its time). */
static void
publication_missing(const source *s)
{
	PGconn *control = NULL;
	bool exists = false;

	if (pgconn_open(s->conninfo, SRC, "control", false, &control) == TM_OK &&
	    source_query_publication_exists(control, s->publication, &exists) == TM_OK && exists)
		log_error("source: publication \"%s\" was dropped and created again: the changes "
		          "written while it did not exist cannot be read through it, and the stream "
		          "stops at them at every try. Fix: drop the slot (SELECT "
		          "pg_drop_replication_slot('%s')), then `tidemark resync` (a new slot; every "
		          "table copied again in place)", s->publication, s->slot);
	else
		source_query_publication_missing(s->publication);
	PQfinish(control);
}

/*
 * What a replication error means for the user, from its SQLSTATE and text,
 * with the fix. The status: configuration problems end `run` (code 3), an
 * invalidated slot too (code 4), a slot in use by another process is
 * retried (run gives up after a while).
 */
static int
explain(source *s, const PGresult *r)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = r ? PQresultErrorMessage(r) : "";
	PGconn *control = NULL;

	if (state == NULL)
		return TM_OK;
	if (strcmp(state, "42704") == 0 && strstr(msg, "publication") != NULL) {
		publication_missing(s);
		return TM_EXIT_CONFIG;
	}
	if (strstr(msg, "wal_level") != NULL) {
		log_error("source: logical decoding is off (wal_level is not logical). Fix: ALTER SYSTEM "
		          "SET wal_level = logical; then restart the source server");
		return TM_EXIT_CONFIG;
	}
	if (pgconn_open(s->conninfo, SRC, "control", false, &control) == TM_OK)
		source_query_explain_slot(control, s->slot);
	PQfinish(control);
	if (strcmp(state, "42704") == 0)
		return TM_EXIT_CONFIG; /* the slot is gone */
	if (strcmp(state, "55006") == 0)
		return PGCONN_RETRY_SLOT_BUSY;
	if (strcmp(state, "55000") == 0)
		return TM_EXIT_SOURCE; /* invalidated: WAL removed */
	return TM_OK;
}

static int
start_replication(source *s, const source_options *o)
{
	strbuf sql = STRBUF_INIT;
	char lsn[LSN_TEXT_MAX];
	PGresult *r;
	int rc = TM_OK;
	char *pub = PQescapeLiteral(s->conn, o->publication, strlen(o->publication));

	strbuf_append(&sql, "START_REPLICATION SLOT ");
	strbuf_append_ident(&sql, o->slot);
	strbuf_appendf(&sql, " LOGICAL %s (proto_version '%d', publication_names %s,"
	               " messages 'true'%s)", lsn_format(o->start, lsn), o->proto_version, pub,
	               o->streaming ? ", streaming 'on'" : "");
	PQfreemem(pub);
	r = PQexec(s->conn, sql.data);
	if (PQresultStatus(r) != PGRES_COPY_BOTH) {
		int why;

		rc = pgconn_fail(s->conn, SRC, "starting replication", r);
		why = explain(s, r);
		if (why != TM_OK)
			rc = why;
	}
	PQclear(r);
	strbuf_free(&sql);
	return rc;
}

int
source_open(const source_options *o, source **out)
{
	source *s = calloc(1, sizeof *s);
	int rc;

	if (s == NULL)
		abort();
	s->wake_fd = -1;
	s->slot = strdup(o->slot);
	s->publication = strdup(o->publication);
	s->conninfo = strdup(o->conninfo);
	rc = pgconn_open(o->conninfo, SRC, "stream", true, &s->conn);
	if (rc == TM_OK)
		rc = start_replication(s, o);
	if (rc != TM_OK) {
		source_close(s);
		return rc;
	}
	*out = s;
	return TM_OK;
}

void
source_close(source *s)
{
	if (s == NULL)
		return;
	if (s->pending)
		PQfreemem(s->pending);
	if (s->peeked)
		PQfreemem(s->peeked);
	PQfinish(s->conn);
	free(s->slot);
	free(s->publication);
	free(s->conninfo);
	free(s);
}

/* The stream ended or failed: a retry, with the server's reason. */
static int
stream_ended(source *s)
{
	PGresult *r = PQgetResult(s->conn);
	int rc;

	if (r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK) {
		log_warn("source: the server ended the replication stream");
		rc = PGCONN_RETRY_SOURCE;
	} else {
		int why;

		rc = pgconn_fail(s->conn, SRC, "reading the replication stream", r);
		why = explain(s, r);
		if (why != TM_OK)
			rc = why;
	}
	PQclear(r);
	return rc;
}

/* Reads a buffered payload without waiting: >0 length, 0 none, <0 error. */
static int
read_nowait(source *s, char **buf)
{
	int n = PQgetCopyData(s->conn, buf, 1);

	if (n == 0) {
		if (PQconsumeInput(s->conn) != 1)
			return -2;
		n = PQgetCopyData(s->conn, buf, 1);
	}
	return n;
}

static int
wait_socket(source *s, int timeout_ms)
{
	struct pollfd pfd[2] = {{PQsocket(s->conn), POLLIN, 0}, {s->wake_fd, POLLIN, 0}};
	int n = poll(pfd, s->wake_fd >= 0 ? 2 : 1, timeout_ms);

	if (n < 0 && errno != EINTR) {
		log_error("source: waiting for the stream: %s", strerror(errno));
		return PGCONN_RETRY_SOURCE;
	}
	return TM_OK;
}

int
source_read(source *s, int timeout_ms, const char **buf, size_t *len)
{
	char *data = NULL;
	int n;

	if (s->pending) {
		PQfreemem(s->pending);
		s->pending = NULL;
	}
	*len = 0;
	if (s->peeked) {
		s->pending = s->peeked;
		*buf = s->peeked;
		*len = (size_t) s->peeked_len;
		s->peeked = NULL;
		return TM_OK;
	}
	n = read_nowait(s, &data);
	if (n == 0) {
		int rc = wait_socket(s, timeout_ms);

		if (rc != TM_OK)
			return rc;
		n = read_nowait(s, &data);
	}
	if (n == 0)
		return TM_OK;
	if (n < 0)
		return stream_ended(s);
	s->pending = data;
	*buf = data;
	*len = (size_t) n;
	return TM_OK;
}

void
source_wake_on(source *s, int fd)
{
	s->wake_fd = fd;
}

bool
source_has_pending(source *s)
{
	char *data = NULL;
	int n;

	if (s->peeked)
		return true;
	n = read_nowait(s, &data);
	if (n > 0) {
		s->peeked = data;
		s->peeked_len = n;
		return true;
	}
	return false;
}

static pg_timestamp
now_pg(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return pgoutput_timestamp_from_unix_us((int64_t) tv.tv_sec * 1000000 + tv.tv_usec);
}

int
source_feedback(source *s, tm_lsn flushed, bool reply_requested)
{
	char msg[PGOUTPUT_STATUS_LEN];
	size_t n = pgoutput_write_status(msg, flushed, flushed, flushed, now_pg(), false);

	(void) reply_requested;
	if (PQputCopyData(s->conn, msg, (int) n) != 1 || PQflush(s->conn) != 0)
		return pgconn_fail(s->conn, SRC, "sending a status update", NULL);
	return TM_OK;
}

/* ---- the server's identity ---- */

/* TIMELINE_HISTORY's content column: the file as it is (bytea in text
 * form, hex, from a server that sends it so). */
static void
take_history(const PGresult *r, source_identity *out)
{
	const char *v = PQgetvalue(r, 0, 1);
	size_t n = (size_t) PQgetlength(r, 0, 1);

	if (n >= 2 && v[0] == '\\' && v[1] == 'x') {
		size_t len = 0;
		unsigned char *raw = PQunescapeBytea((const unsigned char *) v, &len);

		if (raw == NULL)
			abort();
		out->history = malloc(len + 1);
		if (out->history == NULL)
			abort();
		memcpy(out->history, raw, len);
		out->history_len = len;
		PQfreemem(raw);
	} else {
		out->history = malloc(n + 1);
		if (out->history == NULL)
			abort();
		memcpy(out->history, v, n);
		out->history_len = n;
	}
	out->history[out->history_len] = '\0';
}

static int
read_history(PGconn *conn, source_identity *out)
{
	char sql[64];
	PGresult *r;
	int rc = TM_OK;

	snprintf(sql, sizeof sql, "TIMELINE_HISTORY %u", out->timeline);
	r = PQexec(conn, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 || PQnfields(r) < 2)
		rc = pgconn_fail(conn, SRC, "reading the source's timeline history", r);
	else
		take_history(r, out);
	PQclear(r);
	return rc;
}

int
source_identify(const char *conninfo, bool history, source_identity *out)
{
	PGconn *conn = NULL;
	PGresult *r = NULL;
	int rc = pgconn_open(conninfo, SRC, "check", true, &conn);

	memset(out, 0, sizeof *out);
	if (rc == TM_OK) {
		r = PQexec(conn, "IDENTIFY_SYSTEM");
		if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 || PQnfields(r) < 3)
			rc = pgconn_fail(conn, SRC, "identifying the source server", r);
	}
	if (rc == TM_OK) {
		snprintf(out->system_id, sizeof out->system_id, "%s", PQgetvalue(r, 0, 0));
		out->timeline = (uint32_t) strtoul(PQgetvalue(r, 0, 1), NULL, 10);
		lsn_parse(PQgetvalue(r, 0, 2), &out->wal_end);
	}
	PQclear(r);
	if (rc == TM_OK && history && out->timeline > 1)
		rc = read_history(conn, out);
	PQfinish(conn);
	return rc;
}

void
source_identity_clear(source_identity *id)
{
	free(id->history);
	memset(id, 0, sizeof *id);
}

int
source_set_failover(const char *conninfo, const char *slot)
{
	strbuf sql = STRBUF_INIT;
	PGconn *conn = NULL;
	PGresult *r;
	int rc = pgconn_open(conninfo, SRC, "setup", true, &conn);

	strbuf_append(&sql, "ALTER_REPLICATION_SLOT ");
	strbuf_append_ident(&sql, slot);
	strbuf_append(&sql, " (FAILOVER true)");
	if (rc == TM_OK) {
		r = PQexec(conn, sql.data);
		if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
			rc = pgconn_fail(conn, SRC, "making the slot a failover slot", r);
		PQclear(r);
	}
	if (rc == TM_OK)
		log_info("source: replication slot \"%s\" is now a failover slot", slot);
	strbuf_free(&sql);
	PQfinish(conn);
	return rc;
}
