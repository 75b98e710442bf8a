#include "sink.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "pgconn.h"
#include "strbuf.h"

#define TGT PGCONN_TARGET
/* Statements queued before a sync point: bounds client memory and keeps
 * the server's unread results far below socket buffer sizes. */
#define SINK_BATCH 512
/* Statement text the cache keeps, and keeps prepared on the server (a
 * prepared statement costs the target's session some multiple of its
 * text): beyond it, the least recently used are deallocated (and, when no
 * one holds them, forgotten), and prepared again when next used. */
#define SINK_STMT_BUDGET ((size_t) 4 * 1024 * 1024)
#define SINK_BUCKETS_MIN 256

/* Statements of one label that matched no row (sink_stmt_expect_row). */
typedef struct sink_misses {
	struct sink_misses *next;
	char *label;       /* owned */
	long count;
} sink_misses;

struct sink_stmt {
	sink_stmt *next;   /* bucket chain */
	sink_stmt *newer, *older; /* the cache's use order */
	char *sql;         /* owned */
	uint64_t hash;
	int nparams;
	bool prepared;     /* Parse sent on this connection */
	char name[24];
	sink_misses *misses; /* borrowed from the sink; NULL: a row count of 0 is fine */
	int holds;         /* sink_stmt_hold: kept by a caller, never forgotten */
	long round;        /* the sync round it was last queued in */
	size_t bytes;      /* what it costs the cache */
};

struct sink {
	PGconn *conn;                     /* owned */
	bool in_tx;
	int queued;                       /* statements since the last sync */
	const char *queued_sql[SINK_BATCH]; /* borrowed: what each queued statement is */
	bool queued_what[SINK_BATCH];       /* queued_sql[i] describes a query, not its SQL */
	sink_stmt *queued_stmt[SINK_BATCH]; /* borrowed: the execution's statement, or NULL */
	long nstatements;
	sink_tick_fn tick;                /* called while a result is long in coming */
	void *tick_ctx;
	int tick_ms;
	sink_tick_fn stall;               /* called once in a wait this long (sink_set_stall) */
	void *stall_ctx;
	int stall_ms;
	int trying;                       /* in sink_try or a region (nested): a statement
	                                   * error is kept, not logged */
	char *try_failure;                /* owned: that error's message */
	int nstmts;                       /* names given so far */
	long round;                       /* sync points passed */
	size_t nbuckets, nlive;           /* hash buckets, statements in them */
	sink_stmt **buckets;              /* owned chains */
	sink_stmt *newest, *oldest;       /* use order, borrowed from the chains */
	size_t bytes;                     /* every statement's cost */
	size_t prepared_bytes;            /* of those prepared on the server */
	size_t budget;                    /* SINK_STMT_BUDGET */
	int npending, ncap_pending;       /* DEALLOCATEs to send before the next statement */
	char **pending;                   /* owned */
	int nsent, ncap_sent;             /* DEALLOCATEs queued in this round */
	char **sent;                      /* owned until the round's results are read */
	sink_misses *misses;              /* owned list */
	/* a round whose sync point was sent and whose results are being read
	 * (read_round): the first failure, the statement they are at, the
	 * NULLs in a row, the last statement's result (owned) if kept */
	bool round_open;
	int rd_rc, rd_index, rd_nulls;
	bool rd_keep;
	PGresult *rd_last;
	sink_guard_fn guard;              /* called before a statement is sent */
	void *guard_ctx;
	int guarding;                     /* in the guard: not called again */
};

int
sink_open(const char *conninfo, const char *role, sink **out)
{
	PGconn *conn;
	sink *s;
	int rc = pgconn_open(conninfo, TGT, role, false, &conn);

	if (rc != TM_OK)
		return rc;
	/* commits do not wait for the disk; what the source is told is flushed
	 * follows the target's flushed WAL instead (sink_flushed). A lock held
	 * by another session on a target table is waited for a while, then the
	 * session is retried (with a clear message) rather than hang. */
	rc = pgconn_command(conn, TGT, "configuring the session",
	                    "SELECT set_config('synchronous_commit', 'off', false),"
	                    " set_config('lock_timeout', '30s', false)", 0, NULL);
	if (rc == TM_OK && PQenterPipelineMode(conn) != 1)
		rc = pgconn_fail(conn, TGT, "entering pipeline mode", NULL);
	if (rc != TM_OK) {
		PQfinish(conn);
		return rc;
	}
	s = calloc(1, sizeof *s);
	if (s == NULL)
		abort();
	s->conn = conn;
	s->nbuckets = SINK_BUCKETS_MIN;
	s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
	if (s->buckets == NULL)
		abort();
	s->budget = SINK_STMT_BUDGET;
	*out = s;
	return TM_OK;
}

void
sink_close(sink *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->nbuckets; i++) {
		sink_stmt *st = s->buckets[i];

		while (st != NULL) {
			sink_stmt *next = st->next;

			free(st->sql);
			free(st);
			st = next;
		}
	}
	free(s->buckets);
	for (int i = 0; i < s->npending; i++)
		free(s->pending[i]);
	free(s->pending);
	for (int i = 0; i < s->nsent; i++)
		free(s->sent[i]);
	free(s->sent);
	while (s->misses != NULL) {
		sink_misses *next = s->misses->next;

		free(s->misses->label);
		free(s->misses);
		s->misses = next;
	}
	PQclear(s->rd_last);
	PQfinish(s->conn);
	free(s->try_failure);
	free(s);
}

/* Logs the first failure of a sync round with the statement it belongs to. */
static int
fail_result(sink *s, int index, PGresult *r)
{
	char what[200];
	const char *sql = index < s->queued ? s->queued_sql[index] : NULL;

	/* a statement refused; not a failure a retry may cure (a lock held,
	 * the disk full, the server going down) */
	if (s->trying > 0 && r != NULL && PQstatus(s->conn) == CONNECTION_OK &&
	    !PGCONN_IS_RETRY(pgconn_classify(TGT, PQresultErrorField(r, PG_DIAG_SQLSTATE), true))) {
		const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);

		if (s->try_failure == NULL)
			s->try_failure = strdup(msg != NULL ? msg : "failed");
		if (s->try_failure == NULL)
			abort();
		return TM_EXIT_TARGET;
	}
	if (index < s->queued && s->queued_what[index])
		snprintf(what, sizeof what, "%.190s", sql);
	else
		snprintf(what, sizeof what, "applying \"%.150s\"", sql ? sql : "(statement)");
	return pgconn_fail(s->conn, TGT, what, r);
}

void
sink_set_tick(sink *s, sink_tick_fn fn, void *ctx, int interval_ms)
{
	s->tick = fn;
	s->tick_ctx = ctx;
	s->tick_ms = interval_ms > 0 ? interval_ms : 1000;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1000.0 + (double) ts.tv_nsec / 1e6;
}

/* Waits until the next result can be read without blocking, calling the
 * tick every tick_ms meanwhile. A failure of the connection is left for
 * PQgetResult to report. */
static void
wait_result(sink *s)
{
	double start = now_ms(), last = start;
	bool stalled = false;

	while ((s->tick != NULL || s->stall != NULL) && PQisBusy(s->conn)) {
		struct pollfd p = {PQsocket(s->conn), POLLIN, 0};
		int n = poll(&p, 1, s->tick != NULL ? s->tick_ms : s->stall_ms);

		if ((n < 0 && errno != EINTR) || (n > 0 && PQconsumeInput(s->conn) == 0))
			return;
		if (s->tick != NULL && now_ms() - last >= s->tick_ms) {
			s->tick(s->tick_ctx);
			last = now_ms();
		}
		if (s->stall != NULL && !stalled && now_ms() - start >= s->stall_ms) {
			stalled = true;
			s->stall(s->stall_ctx);
		}
	}
}

/* A statement that was to change one row changed none: said with its
 * label, the first ten times, then at every power of ten. */
static void
count_miss(sink_misses *m)
{
	m->count++;
	if (m->count <= 10 || (m->count % 10 == 0 && (m->count == 100 || m->count == 1000 ||
	                                               m->count % 10000 == 0)))
		log_warn("target: %s found no row equal to the source's old row; it is skipped, as "
		         "PostgreSQL's own replication does (%ld so far)", m->label, m->count);
}

/* The round's results read so far (read_round). */
static void
round_start(sink *s, bool keep_last)
{
	s->round_open = true;
	s->rd_rc = TM_OK;
	s->rd_index = 0;
	s->rd_nulls = 0;
	s->rd_keep = keep_last;
	s->rd_last = NULL;
}

static void
round_end(sink *s)
{
	s->round_open = false;
	s->queued = 0;
	s->round++;
	for (int i = 0; i < s->nsent; i++)
		free(s->sent[i]);
	s->nsent = 0;
}

/* One result of the round (r NULL: the end of a statement's results);
 * true at the sync point. */
static bool
round_result(sink *s, PGresult *r)
{
	ExecStatusType st;

	if (r == NULL) {
		/* one NULL ends each statement's results; two in a row mean the
		 * connection is gone before the sync point */
		if (++s->rd_nulls > 1 || PQstatus(s->conn) != CONNECTION_OK) {
			if (s->rd_rc == TM_OK)
				s->rd_rc = pgconn_fail(s->conn, TGT, "reading results", NULL);
			return true;
		}
		s->rd_index++;
		return false;
	}
	s->rd_nulls = 0;
	st = PQresultStatus(r);
	if (st == PGRES_PIPELINE_SYNC) {
		PQclear(r);
		return true;
	}
	if (st == PGRES_FATAL_ERROR && s->rd_rc == TM_OK)
		s->rd_rc = fail_result(s, s->rd_index, r);
	if (st == PGRES_COMMAND_OK && s->rd_rc == TM_OK && s->rd_index < s->queued &&
	    s->queued_stmt[s->rd_index] != NULL && s->queued_stmt[s->rd_index]->misses != NULL &&
	    strcmp(PQcmdTuples(r), "0") == 0)
		count_miss(s->queued_stmt[s->rd_index]->misses);
	if (s->rd_keep && s->rd_rc == TM_OK && s->rd_index == s->queued - 1) {
		PQclear(s->rd_last);
		s->rd_last = r;
	} else
		PQclear(r);
	return false;
}

/*
 * Reads the results of the round up to its sync point: all of them
 * (block), or those already arrived (*done false: the sync point has
 * not). At the end, *last (when kept) receives the result of the round's
 * last statement; the return is the round's first failure.
 */
static int
read_round(sink *s, bool block, bool *done, PGresult **last)
{
	*done = false;
	for (;;) {
		if (block)
			wait_result(s);
		else if (PQconsumeInput(s->conn) != 0 && PQisBusy(s->conn))
			return TM_OK; /* (a lost connection: PQgetResult says so) */
		if (!round_result(s, PQgetResult(s->conn)))
			continue;
		*done = true;
		if (last != NULL && s->rd_rc == TM_OK)
			*last = s->rd_last;
		else
			PQclear(s->rd_last);
		s->rd_last = NULL;
		round_end(s);
		return s->rd_rc;
	}
}

/*
 * Reads every result up to the sync point. Keeps the result of the last
 * statement in *last when asked. Returns the first failure's status.
 */
static int
drain(sink *s, PGresult **last)
{
	bool done;

	if (PQpipelineSync(s->conn) != 1)
		return pgconn_fail(s->conn, TGT, "sending a sync point", NULL);
	round_start(s, last != NULL);
	return read_round(s, true, &done, last);
}

int
sink_sync(sink *s)
{
	return drain(s, NULL);
}

static int
note_queued(sink *s, const char *sql)
{
	s->queued_what[s->queued] = false;
	s->queued_stmt[s->queued] = NULL;
	s->queued_sql[s->queued++] = sql;
	s->nstatements++;
	return s->queued >= SINK_BATCH - 1 ? sink_sync(s) : TM_OK;
}

static int send_deallocations(sink *s);

/* A query whose result is read (what: said of it in a failure) queued. */
static void
note_query(sink *s, const char *what)
{
	s->queued_what[s->queued] = true;
	s->queued_stmt[s->queued] = NULL;
	s->queued_sql[s->queued++] = what;
}

/* Before a statement is sent: the guard's say (sink_set_guard). */
static int
guard(sink *s)
{
	int rc;

	if (s->guard == NULL || s->guarding > 0)
		return TM_OK;
	s->guarding++;
	rc = s->guard(s->guard_ctx, s);
	s->guarding--;
	return rc;
}

void
sink_set_stall(sink *s, sink_tick_fn fn, void *ctx, int after_ms)
{
	s->stall = fn;
	s->stall_ctx = ctx;
	s->stall_ms = after_ms > 0 ? after_ms : 1000;
}

void
sink_tick_like(sink *dst, const sink *src)
{
	dst->tick = src->tick;
	dst->tick_ctx = src->tick_ctx;
	dst->tick_ms = src->tick_ms;
}

void
sink_set_guard(sink *s, sink_guard_fn fn, void *ctx)
{
	s->guard = fn;
	s->guard_ctx = ctx;
}

static int
send_params(sink *s, const char *sql, int nparams, const char *const *params)
{
	int rc = guard(s);

	if (rc != TM_OK)
		return rc;
	if (PQsendQueryParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 0) != 1)
		return pgconn_fail(s->conn, TGT, "sending a statement", NULL);
	return note_queued(s, sql);
}

static int
query(sink *s, const char *what, const char *sql, int nparams, const char *const *params,
      PGresult **res)
{
	PGresult *last = NULL;
	int rc;

	if ((rc = send_deallocations(s)) != TM_OK)
		return rc;
	if (s->queued > 0 && (rc = sink_sync(s)) != TM_OK)
		return rc;
	if (PQsendQueryParams(s->conn, sql, nparams, NULL, params, NULL, NULL, 0) != 1)
		return pgconn_fail(s->conn, TGT, what, NULL);
	note_query(s, what);
	rc = drain(s, &last);
	if (rc == TM_OK && res != NULL)
		*res = last;
	else
		PQclear(last);
	return rc;
}

int
sink_query(sink *s, const char *what, const char *sql, int nparams, const char *const *params,
           PGresult **res)
{
	int rc = guard(s);

	return rc == TM_OK ? query(s, what, sql, nparams, params, res) : rc;
}

int
sink_command(sink *s, const char *what, const char *sql, int nparams, const char *const *params)
{
	return sink_query(s, what, sql, nparams, params, NULL);
}

/* Leaves pipeline mode for work it does not allow (COPY, scripts). */
static int
pipeline_leave(sink *s)
{
	int rc = s->queued > 0 ? sink_sync(s) : TM_OK;

	if (rc == TM_OK && PQexitPipelineMode(s->conn) != 1)
		rc = pgconn_fail(s->conn, TGT, "leaving pipeline mode", NULL);
	return rc;
}

static int
pipeline_enter(sink *s)
{
	if (PQenterPipelineMode(s->conn) != 1)
		return pgconn_fail(s->conn, TGT, "entering pipeline mode", NULL);
	return TM_OK;
}

int
sink_script(sink *s, const char *what, const char *sql)
{
	int rc = guard(s);

	if (rc == TM_OK)
		rc = pipeline_leave(s);

	if (rc == TM_OK)
		rc = pgconn_script(s->conn, TGT, what, sql);
	if (rc == TM_OK)
		rc = pipeline_enter(s);
	return rc;
}

int
sink_try(sink *s, const char *what, const char *sql, char **failure)
{
	return sink_try_params(s, what, sql, 0, NULL, failure);
}

int
sink_try_params(sink *s, const char *what, const char *sql, int nparams,
                const char *const *params, char **failure)
{
	int rc = sink_command(s, "setting a savepoint", "SAVEPOINT tidemark_try", 0, NULL);

	*failure = NULL;
	if (rc != TM_OK)
		return rc;
	s->trying++;
	rc = sink_command(s, what, sql, nparams, params);
	s->trying--;
	if (s->try_failure != NULL) {
		*failure = s->try_failure;
		s->try_failure = NULL;
		return sink_command(s, "rolling back to the savepoint",
		                    "ROLLBACK TO SAVEPOINT tidemark_try", 0, NULL);
	}
	if (rc != TM_OK)
		return rc;
	return sink_command(s, "releasing the savepoint", "RELEASE SAVEPOINT tidemark_try", 0, NULL);
}

void
sink_keep_failures(sink *s)
{
	s->trying++;
}

char *
sink_take_failure(sink *s)
{
	char *f = s->try_failure;

	s->try_failure = NULL;
	return f;
}

int
sink_region_begin(sink *s)
{
	int rc = sink_command(s, "setting a savepoint", "SAVEPOINT tidemark_region", 0, NULL);

	if (rc == TM_OK)
		s->trying++;
	return rc;
}

int
sink_region_end(sink *s, int rc, char **failure)
{
	*failure = NULL;
	if (rc == TM_OK)
		rc = sink_sync(s);
	s->trying--;
	if (s->try_failure != NULL) {
		*failure = s->try_failure;
		s->try_failure = NULL;
		return sink_command(s, "rolling back to the savepoint",
		                    "ROLLBACK TO SAVEPOINT tidemark_region", 0, NULL);
	}
	if (rc != TM_OK)
		return rc;
	return sink_command(s, "releasing the savepoint", "RELEASE SAVEPOINT tidemark_region", 0,
	                    NULL);
}

int
sink_send_static(sink *s, const char *sql)
{
	return send_params(s, sql, 0, NULL);
}

int
sink_begin(sink *s)
{
	int rc = send_params(s, "BEGIN", 0, NULL);

	if (rc == TM_OK)
		s->in_tx = true;
	return rc;
}

bool
sink_in_transaction(const sink *s)
{
	return s->in_tx;
}

int
sink_commit(sink *s, tm_lsn *wal_end)
{
	bool done;
	int rc = sink_commit_send(s);

	return rc == TM_OK ? sink_commit_wait(s, true, &done, wal_end) : rc;
}

int
sink_commit_send(sink *s)
{
	int rc = send_params(s, "COMMIT", 0, NULL);

	s->in_tx = false;
	/* inserted after our commit record, so at or past its end */
	if (rc == TM_OK && (rc = send_deallocations(s)) == TM_OK &&
	    PQsendQueryParams(s->conn, "SELECT pg_current_wal_insert_lsn()", 0, NULL, NULL, NULL,
	                      NULL, 0) != 1)
		rc = pgconn_fail(s->conn, TGT, "committing", NULL);
	if (rc != TM_OK)
		return rc;
	note_query(s, "committing");
	if (PQpipelineSync(s->conn) != 1)
		return pgconn_fail(s->conn, TGT, "sending a sync point", NULL);
	round_start(s, true);
	return TM_OK;
}

int
sink_commit_wait(sink *s, bool block, bool *done, tm_lsn *wal_end)
{
	PGresult *r = NULL;
	int rc;

	*done = true;
	if (!s->round_open)
		return TM_OK;
	rc = read_round(s, block, done, &r);
	if (rc == TM_OK && *done && r != NULL && wal_end != NULL)
		lsn_parse(PQgetvalue(r, 0, 0), wal_end);
	PQclear(r);
	return rc;
}

int
sink_flushed(sink *s, tm_lsn *out)
{
	PGresult *r = NULL;
	/* a read of the server's state, not of the transaction: unguarded */
	int rc = query(s, "reading the flushed position", "SELECT pg_current_wal_flush_lsn()", 0,
	               NULL, &r);

	if (rc == TM_OK)
		lsn_parse(PQgetvalue(r, 0, 0), out);
	PQclear(r);
	return rc;
}

void
sink_rollback(sink *s)
{
	s->in_tx = false;
	if (PQstatus(s->conn) != CONNECTION_OK)
		return;
	if (PQsendQueryParams(s->conn, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0) == 1) {
		s->queued_what[s->queued] = false;
		s->queued_stmt[s->queued] = NULL;
		s->queued_sql[s->queued++] = "ROLLBACK";
		(void) sink_sync(s);
	}
}

static uint64_t
hash_text(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char) *s) * 1099511628211ULL;
	return h;
}

/* ---- the statement cache ---- */

static void
push_string(char ***list, int *n, int *cap, char *str)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*list = realloc(*list, sizeof **list * (size_t) *cap);
		if (*list == NULL)
			abort();
	}
	(*list)[(*n)++] = str;
}

/* The DEALLOCATEs the cache decided on, queued before what comes next
 * (a statement prepared again under its name comes after its own). Their
 * texts live until the round's results are read. */
static int
send_deallocations(sink *s)
{
	int rc = TM_OK, i;

	for (i = 0; rc == TM_OK && i < s->npending; i++) {
		char *sql = s->pending[i];

		push_string(&s->sent, &s->nsent, &s->ncap_sent, sql);
		rc = send_params(s, sql, 0, NULL);
		if (rc == TM_OK && s->queued >= SINK_BATCH - 1)
			rc = sink_sync(s);
	}
	for (int j = i; j < s->npending; j++)
		free(s->pending[j]);
	s->npending = 0;
	return rc;
}

static void
unprepare(sink *s, sink_stmt *st)
{
	strbuf sql = STRBUF_INIT;

	if (!st->prepared)
		return;
	st->prepared = false;
	s->prepared_bytes -= st->bytes;
	strbuf_append(&sql, "DEALLOCATE ");
	strbuf_append_ident(&sql, st->name);
	push_string(&s->pending, &s->npending, &s->ncap_pending, strbuf_steal(&sql));
}

static void
lru_unlink(sink *s, sink_stmt *st)
{
	if (st->newer != NULL)
		st->newer->older = st->older;
	else
		s->newest = st->older;
	if (st->older != NULL)
		st->older->newer = st->newer;
	else
		s->oldest = st->newer;
	st->newer = st->older = NULL;
}

static void
lru_push(sink *s, sink_stmt *st)
{
	st->older = s->newest;
	st->newer = NULL;
	if (s->newest != NULL)
		s->newest->newer = st;
	s->newest = st;
	if (s->oldest == NULL)
		s->oldest = st;
}

static void
forget(sink *s, sink_stmt *st)
{
	sink_stmt **p = &s->buckets[st->hash % s->nbuckets];

	while (*p != st)
		p = &(*p)->next;
	*p = st->next;
	lru_unlink(s, st);
	unprepare(s, st);
	s->bytes -= st->bytes;
	s->nlive--;
	free(st->sql);
	free(st);
}

/* More statements than twice the buckets: twice the buckets. */
static void
grow_buckets(sink *s)
{
	size_t n = s->nbuckets * 2;
	sink_stmt **b = calloc(n, sizeof *b);

	if (b == NULL)
		abort();
	for (size_t i = 0; i < s->nbuckets; i++)
		while (s->buckets[i] != NULL) {
			sink_stmt *st = s->buckets[i];

			s->buckets[i] = st->next;
			st->next = b[st->hash % n];
			b[st->hash % n] = st;
		}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
}

/* Over the budget: the least recently used statements are deallocated,
 * and forgotten when no one holds them and they are not queued in this
 * round (their results, and what each is, are still to be read). */
static void
trim(sink *s, const sink_stmt *keep)
{
	sink_stmt *st = s->oldest;

	while (st != NULL && (s->bytes > s->budget || s->prepared_bytes > s->budget)) {
		sink_stmt *next = st->newer;

		if (st == keep)
			;
		else if (st->holds == 0 && !(st->round == s->round && s->queued > 0))
			forget(s, st);
		else if (s->prepared_bytes > s->budget)
			unprepare(s, st);
		st = next;
	}
}

sink_stmt *
sink_stmt_get(sink *s, const char *sql, int nparams)
{
	uint64_t h = hash_text(sql);
	sink_stmt **bucket = &s->buckets[h % s->nbuckets];
	sink_stmt *st;

	for (st = *bucket; st != NULL; st = st->next)
		if (st->hash == h && strcmp(st->sql, sql) == 0) {
			lru_unlink(s, st);
			lru_push(s, st);
			return st;
		}
	st = calloc(1, sizeof *st);
	if (st == NULL || (st->sql = strdup(sql)) == NULL)
		abort();
	st->hash = h;
	st->nparams = nparams;
	st->round = -1;
	st->bytes = sizeof *st + strlen(sql) + 1;
	snprintf(st->name, sizeof st->name, "tm_%d", ++s->nstmts);
	st->next = *bucket;
	*bucket = st;
	lru_push(s, st);
	s->bytes += st->bytes;
	if (++s->nlive > 2 * s->nbuckets)
		grow_buckets(s);
	trim(s, st);
	return st;
}

sink_stmt *
sink_stmt_hold(sink *s, const char *sql, int nparams)
{
	sink_stmt *st = sink_stmt_get(s, sql, nparams);

	st->holds++;
	return st;
}

void
sink_stmt_release(sink *s, sink_stmt *st)
{
	if (st == NULL || st->holds == 0)
		return;
	st->holds--;
	trim(s, NULL);
}

void
sink_set_statement_budget(sink *s, size_t bytes)
{
	s->budget = bytes;
	trim(s, NULL);
}

int
sink_prepared_statements(const sink *s, size_t *bytes)
{
	int n = 0;

	for (const sink_stmt *st = s->newest; st != NULL; st = st->older)
		n += st->prepared;
	if (bytes != NULL)
		*bytes = s->prepared_bytes;
	return n;
}

int
sink_reset_statements(sink *s)
{
	for (sink_stmt *st = s->newest; st != NULL; st = st->older)
		st->prepared = false;
	s->prepared_bytes = 0;
	for (int i = 0; i < s->npending; i++)
		free(s->pending[i]);
	s->npending = 0; /* DEALLOCATE ALL does theirs */
	return send_params(s, "DEALLOCATE ALL", 0, NULL);
}

int
sink_send(sink *s, sink_stmt *st, const char *const *values, const int *lengths)
{
	int rc = guard(s);

	if (rc == TM_OK)
		rc = send_deallocations(s);

	if (rc != TM_OK)
		return rc;
	if (!st->prepared) {
		if (PQsendPrepare(s->conn, st->name, st->sql, st->nparams, NULL) != 1)
			return pgconn_fail(s->conn, TGT, "preparing a statement", NULL);
		st->prepared = true;
		s->prepared_bytes += st->bytes;
		if ((rc = note_queued(s, st->sql)) != TM_OK)
			return rc;
		trim(s, st);
		if ((rc = send_deallocations(s)) != TM_OK)
			return rc;
	}
	st->round = s->round;
	if (PQsendQueryPrepared(s->conn, st->name, st->nparams, values, lengths, NULL, 0) != 1)
		return pgconn_fail(s->conn, TGT, "sending a statement", NULL);
	s->queued_stmt[s->queued] = st;
	s->queued_what[s->queued] = false;
	s->queued_sql[s->queued++] = st->sql;
	s->nstatements++;
	return s->queued >= SINK_BATCH - 1 ? sink_sync(s) : TM_OK;
}

void
sink_stmt_expect_row(sink *s, sink_stmt *st, const char *label)
{
	sink_misses *m;

	for (m = s->misses; m != NULL && strcmp(m->label, label) != 0; m = m->next)
		;
	if (m == NULL) {
		m = calloc(1, sizeof *m);
		if (m == NULL || (m->label = strdup(label)) == NULL)
			abort();
		m->next = s->misses;
		s->misses = m;
	}
	st->misses = m;
}

long
sink_misses_of(const sink *s, const char *label)
{
	for (const sink_misses *m = s->misses; m != NULL; m = m->next)
		if (strcmp(m->label, label) == 0)
			return m->count;
	return 0;
}

int
sink_copy_begin(sink *s, const char *sql)
{
	PGresult *r;
	int rc = guard(s);

	if (rc == TM_OK)
		rc = pipeline_leave(s);
	if (rc != TM_OK)
		return rc;
	r = PQexec(s->conn, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN) {
		rc = pgconn_fail(s->conn, TGT, "starting COPY", r);
		PQclear(r);
		(void) pipeline_enter(s);
		return rc;
	}
	PQclear(r);
	return TM_OK;
}

int
sink_copy_data(sink *s, const char *data, int len)
{
	if (PQputCopyData(s->conn, data, len) != 1)
		return pgconn_fail(s->conn, TGT, "sending COPY data", NULL);
	return TM_OK;
}

int
sink_copy_end(sink *s)
{
	PGresult *r;
	int rc = TM_OK;

	if (PQputCopyEnd(s->conn, NULL) != 1)
		rc = pgconn_fail(s->conn, TGT, "ending COPY", NULL);
	wait_result(s);
	while ((r = PQgetResult(s->conn)) != NULL) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == TM_OK)
			rc = pgconn_fail(s->conn, TGT, "loading rows with COPY", r);
		PQclear(r);
	}
	if (rc == TM_OK)
		rc = pipeline_enter(s);
	return rc;
}

long
sink_statements(const sink *s)
{
	return s->nstatements;
}
