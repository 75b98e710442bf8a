/*
 * metrics.c: tidemark's metrics (the one list of them: families below)
 * and their HTTP endpoint (libmicrohttpd, its own polling thread).
 */
#include "metrics.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "ddl_track.h"
#include "exitcode.h"
#include "log.h"
#include "pgconn.h"
#include "prom.h"
#include "xalloc.h"

#define US 1000000
/* Scrapers at once; more wait for the listen queue. */
#define CONNECTION_LIMIT 16
#define CONNECTION_TIMEOUT_S 10

struct metrics {
	prom_registry *reg;           /* owned */
	prom_series *counters[METRICS_NCOUNTERS]; /* borrowed from reg, like every series */
	prom_series *gauges[METRICS_NGAUGES];
	prom_family *snapshot_rows, *snapshot_chunks, *schema_changes, *errors;
	struct MHD_Daemon *daemon;    /* owned */
	int fd;                       /* the listening socket until the daemon takes it
	                               * (MHD_stop_daemon closes it); -1: none */
};

/* ---- the families ---- */

static prom_family *
family(metrics *m, const char *name, prom_type type, const char *label, uint64_t scale,
       const char *help)
{
	prom_family *f = prom_family_new(m->reg, name, help, type, label, scale);

	if (f == NULL)
		abort(); /* a name above is not a valid metric name */
	return f;
}

static prom_series *
single(metrics *m, const char *name, prom_type type, uint64_t scale, const char *help)
{
	return prom_series_of(family(m, name, type, NULL, scale, help), NULL);
}

static const char *const error_classes[] = {"usage", "configuration", "source", "target",
                                            "policy", "internal"};

/* Schema changes, as labels: the ddl_action_kind names, and the others. */
static const char *
ddl_action_name(int kind)
{
	switch ((ddl_action_kind) kind) {
	case DDL_ACT_RENAME_TABLE: return "rename_table";
	case DDL_ACT_SET_SCHEMA: return "set_schema";
	case DDL_ACT_RENAME_COLUMN: return "rename_column";
	case DDL_ACT_ALTER_TYPE: return "alter_column_type";
	case DDL_ACT_DROP_COLUMN: return "drop_column";
	case DDL_ACT_KEEP_COLUMN: return "keep_column";
	case DDL_ACT_ADD_COLUMN: return "add_column";
	case DDL_ACT_SET_NOT_NULL: return "set_not_null";
	case DDL_ACT_DROP_NOT_NULL: return "drop_not_null";
	case DDL_ACT_SET_KEY: return "set_key";
	case DDL_ACT_ADD_GENERATED: return "add_generated_column";
	case DDL_ACT_DROP_EXPRESSION: return "drop_expression";
	case DDL_ACT_SET_COLLATION: return "set_collation";
	default: return "other";
	}
}

static const char *const other_schema_changes[] = {"copy_again", "create_table", "drop_table",
                                                   "type"};

static void
define_state(metrics *m, const char *version)
{
	struct timespec now;

	m->gauges[METRICS_UP] =
		single(m, "tidemark_up", PROM_GAUGE, 1,
		       "1 while run streams from the source into the target; 0 while it connects or "
		       "waits to reconnect.");
	prom_set(prom_series_of(family(m, "tidemark_build_info", PROM_GAUGE, "version", 1,
	                               "tidemark's version, as the label; the value is 1."),
	                        version), 1);
	clock_gettime(CLOCK_REALTIME, &now);
	prom_set(single(m, "tidemark_process_start_time_seconds", PROM_GAUGE, US,
	                "When the process started, in seconds since the Unix epoch."),
	         (uint64_t) now.tv_sec * US + (uint64_t) now.tv_nsec / 1000);
}

static void
define_positions(metrics *m)
{
	m->gauges[METRICS_APPLIED_LSN] =
		single(m, "tidemark_applied_lsn_bytes", PROM_GAUGE, 1,
		       "The source position (LSN, as a byte offset) applied and committed on the "
		       "target.");
	m->gauges[METRICS_FLUSHED_LSN] =
		single(m, "tidemark_flushed_lsn_bytes", PROM_GAUGE, 1,
		       "The source position applied and flushed to the target's disk: the one "
		       "reported to the source, which may then remove older WAL.");
	m->gauges[METRICS_SOURCE_LSN] =
		single(m, "tidemark_source_lsn_bytes", PROM_GAUGE, 1,
		       "The end of the source's WAL, as the source last reported it.");
	m->gauges[METRICS_LAG_BYTES] =
		single(m, "tidemark_lag_bytes", PROM_GAUGE, 1,
		       "Bytes of source WAL not applied yet: source position minus applied position.");
	m->gauges[METRICS_LAG_US] =
		single(m, "tidemark_lag_seconds", PROM_GAUGE, US,
		       "Age of the last applied source transaction while WAL remains to apply; 0 when "
		       "caught up.");
	m->gauges[METRICS_SLOT_RETAINED] =
		single(m, "tidemark_slot_retained_wal_bytes", PROM_GAUGE, 1,
		       "Bytes of WAL the source keeps for the replication slot (its current "
		       "position minus the slot's restart point), read every 10 s.");
	m->gauges[METRICS_CAPTURE_GAPS] =
		single(m, "tidemark_capture_gaps", PROM_GAUGE, 1,
		       "The DDL capture's event triggers on the source that are missing or not "
		       "enabled ALWAYS (schema changes go uncaptured while above 0), read every 10 s.");
}

static void
define_apply(metrics *m)
{
	prom_family *rows, *streamed;

	m->counters[METRICS_SOURCE_TXS] =
		single(m, "tidemark_source_transactions_total", PROM_COUNTER, 1,
		       "Source transactions applied (committed on the target).");
	rows = family(m, "tidemark_rows_applied_total", PROM_COUNTER, "kind", 1,
	              "Row changes of the stream applied, by kind.");
	m->counters[METRICS_ROWS_INSERTED] = prom_series_of(rows, "insert");
	m->counters[METRICS_ROWS_UPDATED] = prom_series_of(rows, "update");
	m->counters[METRICS_ROWS_DELETED] = prom_series_of(rows, "delete");
	m->counters[METRICS_TRUNCATES] =
		single(m, "tidemark_truncates_applied_total", PROM_COUNTER, 1,
		       "TRUNCATE statements of the stream applied.");
	m->counters[METRICS_STREAM_BYTES] =
		single(m, "tidemark_applied_bytes_total", PROM_COUNTER, 1,
		       "Bytes of the source's change stream (pgoutput messages) applied.");
	m->counters[METRICS_TARGET_TXS] =
		single(m, "tidemark_target_transactions_total", PROM_COUNTER, 1,
		       "Target transactions committed with source transactions in them.");
	m->counters[METRICS_QUARANTINED] =
		single(m, "tidemark_rows_quarantined_total", PROM_COUNTER, 1,
		       "Rows written to tidemark.quarantine instead of their table (changes and "
		       "copied rows).");
	streamed = family(m, "tidemark_streamed_transactions_total", PROM_COUNTER, "applied", 1,
	                  "Source transactions streamed while in progress and applied, by how: as "
	                  "they came (committed at their source commit), or at their commit from "
	                  "their spool file.");
	m->counters[METRICS_STREAMED_DIRECT] = prom_series_of(streamed, "as_they_came");
	m->counters[METRICS_STREAMED_SPOOLED] = prom_series_of(streamed, "at_commit");
}

static void
define_snapshot(metrics *m)
{
	m->snapshot_rows = family(m, "tidemark_snapshot_rows_total", PROM_COUNTER, "table", 1,
	                          "Rows copied by the snapshot and loaded on the target, by source "
	                          "table.");
	m->snapshot_chunks = family(m, "tidemark_snapshot_chunks_total", PROM_COUNTER, "table", 1,
	                            "Snapshot chunks loaded on the target, by source table.");
	m->gauges[METRICS_TABLES_PENDING] =
		single(m, "tidemark_snapshot_tables_pending", PROM_GAUGE, 1,
		       "Tables whose copy is not finished.");
}

static void
define_events(metrics *m)
{
	prom_family *retries;

	m->schema_changes = family(m, "tidemark_schema_changes_total", PROM_COUNTER, "action", 1,
	                           "Schema changes done on the target, by action.");
	for (int k = DDL_ACT_RENAME_TABLE; k <= DDL_ACT_SET_COLLATION; k++)
		if (k != DDL_ACT_RESNAPSHOT) /* counted as copy_again, when asked for */
			(void) prom_series_of(m->schema_changes, ddl_action_name(k));
	for (size_t i = 0; i < sizeof other_schema_changes / sizeof *other_schema_changes; i++)
		(void) prom_series_of(m->schema_changes, other_schema_changes[i]);
	retries = family(m, "tidemark_retries_total", PROM_COUNTER, "side", 1,
	                 "New sessions started after a connection to this side failed or was lost.");
	m->counters[METRICS_RETRIES_SOURCE] = prom_series_of(retries, "source");
	m->counters[METRICS_RETRIES_TARGET] = prom_series_of(retries, "target");
	m->errors = family(m, "tidemark_errors_total", PROM_COUNTER, "class", 1,
	                   "Sessions ended by an error, by class (the exit code's: configuration 3, "
	                   "source 4, target 5, policy 6, internal 70).");
	for (size_t i = 0; i < sizeof error_classes / sizeof *error_classes; i++)
		(void) prom_series_of(m->errors, error_classes[i]);
	m->counters[METRICS_APPLY_BUSY_US] =
		single(m, "tidemark_apply_busy_seconds_total", PROM_COUNTER, US,
		       "Time the apply loop spent working (decoding, writing to the target, "
		       "committing, snapshot loads) rather than waiting for the source.");
	m->counters[METRICS_READER_BUSY_US] =
		single(m, "tidemark_snapshot_reader_busy_seconds_total", PROM_COUNTER, US,
		       "Time the snapshot reader threads spent reading chunks from the source, summed "
		       "over the threads.");
}

/* ---- updates ---- */

void
metrics_add(metrics *m, metrics_counter c, uint64_t n)
{
	if (m != NULL)
		prom_add(m->counters[c], n);
}

void
metrics_set(metrics *m, metrics_gauge g, uint64_t value)
{
	if (m != NULL)
		prom_set(m->gauges[g], value);
}

static const char *
error_class(int status)
{
	switch (status) {
	case TM_EXIT_USAGE: return "usage";
	case TM_EXIT_CONFIG: return "configuration";
	case TM_EXIT_SOURCE:
	case PGCONN_RETRY_SOURCE:
	case PGCONN_RETRY_SLOT_BUSY: return "source";
	case TM_EXIT_TARGET:
	case PGCONN_RETRY_TARGET: return "target";
	case TM_EXIT_POLICY: return "policy";
	default: return "internal";
	}
}

void
metrics_error(metrics *m, int status)
{
	if (m != NULL && status != TM_OK)
		prom_add(prom_series_of(m->errors, error_class(status)), 1);
}

void
metrics_retry(metrics *m, int status)
{
	metrics_add(m, status == PGCONN_RETRY_TARGET ? METRICS_RETRIES_TARGET : METRICS_RETRIES_SOURCE,
	            1);
}

void
metrics_stage(metrics *m, metrics_counter c, uint64_t n)
{
	if (m != NULL)
		prom_stage(m->reg, m->counters[c], n);
}

void
metrics_stage_chunk(metrics *m, const char *schema, const char *name, uint64_t rows)
{
	char table[256];

	if (m == NULL)
		return;
	snprintf(table, sizeof table, "%s.%s", schema, name);
	prom_stage(m->reg, prom_series_of(m->snapshot_rows, table), rows);
	prom_stage(m->reg, prom_series_of(m->snapshot_chunks, table), 1);
}

void
metrics_stage_ddl_action(metrics *m, int action_kind)
{
	metrics_stage_schema_change(m, ddl_action_name(action_kind));
}

void
metrics_stage_schema_change(metrics *m, const char *action)
{
	if (m != NULL)
		prom_stage(m->reg, prom_series_of(m->schema_changes, action), 1);
}

void
metrics_commit(metrics *m)
{
	if (m != NULL)
		prom_publish(m->reg);
}

void
metrics_rollback(metrics *m)
{
	if (m != NULL)
		prom_discard(m->reg);
}

/* ---- the endpoint ---- */

static enum MHD_Result
reply(struct MHD_Connection *conn, unsigned status, const char *type, char *body)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body,
	                                                         MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ok;

	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ok = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
           const char *version, const char *upload, size_t *upload_size, void **req)
{
	metrics *m = cls;
	strbuf body = STRBUF_INIT;

	(void) version;
	(void) upload;
	(void) upload_size;
	(void) req;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
		             xstrdup("only GET and HEAD\n"));
	if (strcmp(url, "/metrics") == 0) {
		prom_render(m->reg, &body);
		return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
		             strbuf_steal(&body));
	}
	if (strcmp(url, "/") == 0)
		return reply(conn, MHD_HTTP_OK, "text/plain; charset=utf-8",
		             xstrdup("tidemark: metrics at /metrics\n"));
	return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
	             xstrdup("not found: metrics are at /metrics\n"));
}

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char text[512];

	(void) cls;
	vsnprintf(text, sizeof text, fmt, ap);
	log_warn("metrics endpoint: %s", text);
}

/* Binds and listens on host:port; *fd the socket, or -1 with errno. An
 * empty host is every interface (IPv6 and IPv4 when the system has both). */
static int
listen_on(const char *host, unsigned port, int *fd, char *shown, size_t shown_size)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	char service[8];
	int rc, err = 0;

	snprintf(service, sizeof service, "%u", port);
	if (*host == '\0')
		hints.ai_family = AF_INET6;
	rc = getaddrinfo(*host ? host : NULL, service, &hints, &res);
	if (rc != 0 && *host == '\0') {
		hints.ai_family = AF_INET;
		rc = getaddrinfo(NULL, service, &hints, &res);
	}
	if (rc != 0) {
		snprintf(shown, shown_size, "%s", gai_strerror(rc));
		return -1;
	}
	*fd = -1;
	for (struct addrinfo *a = res; a != NULL && *fd < 0; a = a->ai_next) {
		int s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol), one = 1,
		    zero = 0;

		if (s < 0) {
			err = errno;
			continue;
		}
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (a->ai_family == AF_INET6 && *host == '\0')
			setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
		if (bind(s, a->ai_addr, a->ai_addrlen) == 0 && listen(s, 64) == 0)
			*fd = s;
		else {
			err = errno;
			close(s);
		}
	}
	freeaddrinfo(res);
	if (*fd < 0)
		snprintf(shown, shown_size, "%s", strerror(err));
	return *fd < 0 ? -1 : 0;
}

/* The port the socket got (port 0 asks for any free one). */
static unsigned
bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	if (getsockname(fd, (struct sockaddr *) &ss, &len) != 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
	return ntohs(((struct sockaddr_in *) &ss)->sin_port);
}

/* The daemon's thread takes no stop signal: they are the run loop's, whose
 * sleeps they must interrupt. */
static struct MHD_Daemon *
start_daemon(metrics *m)
{
	sigset_t block, old;
	struct MHD_Daemon *d;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	                     on_request, m, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
	                     MHD_OPTION_LISTEN_SOCKET, m->fd, MHD_OPTION_CONNECTION_LIMIT,
	                     (unsigned) CONNECTION_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
	                     (unsigned) CONNECTION_TIMEOUT_S, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return d;
}

int
metrics_start(const char *listen, const char *version, metrics **out)
{
	char host[256], why[256];
	unsigned port = 0;
	metrics *m;
	bool v6;

	*out = NULL;
	if (prom_parse_listen(listen, host, sizeof host, &port) != 0) {
		log_error("--metrics-listen %s: expected ADDRESS:PORT, such as 127.0.0.1:9187, :9187 "
		          "(every interface) or [::1]:9187", listen);
		return TM_EXIT_USAGE;
	}
	m = xcalloc(1, sizeof *m);
	m->fd = -1;
	if (listen_on(host, port, &m->fd, why, sizeof why) != 0) {
		log_error("metrics: cannot listen on %s: %s. Fix: choose a free port (another process "
		          "listens on this one: `ss -ltnp` names it) or an address of this machine, "
		          "with --metrics-listen", listen, why);
		free(m);
		return TM_EXIT_CONFIG;
	}
	m->reg = prom_new();
	define_state(m, version);
	define_positions(m);
	define_apply(m);
	define_snapshot(m);
	define_events(m);
	port = bound_port(m->fd);
	if ((m->daemon = start_daemon(m)) == NULL) {
		log_error("metrics: cannot start the HTTP server on %s", listen);
		metrics_free(m);
		return TM_EXIT_CONFIG;
	}
	m->fd = -1; /* the daemon's now */
	v6 = strchr(host, ':') != NULL;
	log_info("metrics: serving http://%s%s%s:%u/metrics", v6 ? "[" : "", *host ? host : "*",
	         v6 ? "]" : "", port);
	*out = m;
	return TM_OK;
}

void
metrics_free(metrics *m)
{
	if (m == NULL)
		return;
	if (m->daemon != NULL)
		MHD_stop_daemon(m->daemon);
	if (m->fd >= 0)
		close(m->fd);
	prom_free(m->reg);
	free(m);
}
