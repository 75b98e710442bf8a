#include "sink.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lock_watch.h"
#include "log.h"
#include "pgconn.h"
#include "strbuf.h"
#include "xalloc.h"

#define TGT PGCONN_TARGET
/* Statements queued before a sync point, and sync rounds in flight at
 * most: a round's statements are sent while the server executes the
 * rounds before (read as their results come), which bounds client memory
 * (what each statement is, and the results libpq buffers: tens of bytes
 * a statement) and lets tidemark prepare what comes next meanwhile. */
#define SINK_BATCH 512
#define SINK_ROUNDS 8
/* Statement text the cache keeps, and keeps prepared on the server (a
 * prepared statement costs the target's session some multiple of its
 * text): beyond it, the least recently used are deallocated (and, when no
 * one holds them, forgotten), and prepared again when next used. */
#define SINK_STMT_BUDGET ((size_t) 4 * 1024 * 1024)
#define SINK_BUCKETS_MIN 256
/* a wait this long says who it waits for: after the apply's stall guard
 * (APPLY_STREAM_STALL_MS, 5 s) has ended any wait on a session of its own,
 * before a DDL gives up (SINK_DDL_LOCK_WAIT_MS) */
#define SINK_NAME_AFTER_MS 5500
_Static_assert(SINK_NAME_AFTER_MS < SINK_DDL_LOCK_WAIT_MS, "named before a DDL gives up");

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

/* What an entry of a round is. */
typedef enum sink_entry {
	SINK_EXEC,      /* a statement; sql is its SQL */
	SINK_QUERY,     /* a query whose result is read; sql says what it is */
	SINK_PARSE,     /* the preparation of stmt */
	SINK_DEALLOC    /* a DEALLOCATE; sql is its text, owned by the round */
} sink_entry;

/* One sync round: the statements sent before its sync point, and what
 * reading their results needs. */
typedef struct sink_round {
	int n;                            /* statements */
	const char *sql[SINK_BATCH];      /* borrowed: what each statement is */
	char kind[SINK_BATCH];            /* sink_entry */
	sink_stmt *stmt[SINK_BATCH];      /* borrowed: the entry's statement, or NULL */
	char **sent;                      /* owned until read: its DEALLOCATE texts */
	int nsent, ncap_sent;
	bool keep_last;                   /* the last statement's result is kept (s->kept) */
	bool commit;                      /* a commit's: that result is its WAL position */
} sink_round;

struct sink {
	PGconn *conn;                     /* owned */
	bool in_tx;
	/* rounds[] is a ring: nring rounds sent (their sync point too), the
	 * oldest at head, being read; then the one being filled (fill()) */
	sink_round *rounds;               /* owned, SINK_ROUNDS + 1 */
	int head, nring;
	int commits;                      /* commit rounds among them (at most one) */
	tm_lsn commit_end;                /* the last commit read: its WAL position */
	int tx_rc;                        /* the first failure read since the last commit
	                                   * round (not one of sink_try's) */
	int commit_rc;                    /* the last commit's: its own failure or tx_rc
	                                   * (a COMMIT after a failure rolls back) */
	bool broken;                      /* a round failed: the failures of those after
	                                   * it are not logged again */
	long nstatements;
	sink_tick_fn tick;                /* called while a result is long in coming */
	void *tick_ctx;
	int tick_ms;
	sink_tick_fn stall;               /* called once in a wait this long (sink_set_stall) */
	void *stall_ctx;
	int stall_ms;
	bool order_retry;                 /* sink_set_order_retry */
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
	sink_misses *misses;              /* owned list */
	/* the oldest round's results read so far (read_oldest): its first
	 * failure, the statement they are at, the NULLs in a row, its last
	 * statement's result if kept (owned); then that result, once the
	 * round is read, until drain() hands it over (owned) */
	int rd_rc, rd_index, rd_nulls, rd_failed_at;
	PGresult *rd_last;
	PGresult *kept;
	sink_guard_fn guard;              /* called before a statement is sent */
	void *guard_ctx;
	int guarding;                     /* in the guard: not called again */
	char ddl_wait_sql[96];            /* sink_lock_wait's for DDL (sink_set_ddl_lock_wait) */
	char *conninfo;                   /* owned: for naming who a wait waits for */
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
	                    " set_config('lock_timeout', '" SINK_LOCK_WAIT "', false)", 0, NULL);
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
	s->rounds = xcalloc(SINK_ROUNDS + 1, sizeof *s->rounds);
	s->nbuckets = SINK_BUCKETS_MIN;
	s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
	if (s->buckets == NULL)
		abort();
	s->budget = SINK_STMT_BUDGET;
	s->conninfo = xstrdup(conninfo);
	sink_set_ddl_lock_wait(s, SINK_DDL_LOCK_WAIT_MS);
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
	for (int r = 0; r <= SINK_ROUNDS; r++) {
		for (int i = 0; i < s->rounds[r].nsent; i++)
			free(s->rounds[r].sent[i]);
		free(s->rounds[r].sent);
	}
	free(s->rounds);
	free(s->conninfo);
	while (s->misses != NULL) {
		sink_misses *next = s->misses->next;

		free(s->misses->label);
		free(s->misses);
		s->misses = next;
	}
	PQclear(s->rd_last);
	PQclear(s->kept);
	PQfinish(s->conn);
	free(s->try_failure);
	free(s);
}

/* round i of those sent (0: the oldest), or the one being filled (nring) */
static sink_round *
round_at(sink *s, int i)
{
	return &s->rounds[(s->head + i) % (SINK_ROUNDS + 1)];
}

static sink_round *
fill(sink *s)
{
	return round_at(s, s->nring);
}

/* A refusal that an order of the rows other than the source's can cause
 * under a constraint of the target's own: a unique or exclusion
 * constraint (a row reaching it before the delete or move that freed its
 * value), a foreign key (a row before the one it references). */
static bool
order_refusal(const char *state)
{
	return state != NULL &&
	       (strcmp(state, "23505") == 0 || strcmp(state, "23P01") == 0 || strcmp(state, "23503") == 0);
}

/* Logs the first failure of a sync round with the statement it belongs
 * to; a failure of a round after one that failed (the statements of an
 * aborted transaction, skipped) is returned as the first one's status,
 * not logged again. */
static int
fail_result(sink *s, const sink_round *rd, int index, PGresult *r)
{
	char what[200];
	const char *sql = index < rd->n ? rd->sql[index] : NULL;

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
	/* the first failure decides: a retry may cure a lock held, and the
	 * statements after it only fail because it did */
	if (s->broken)
		return s->tx_rc != TM_OK ? s->tx_rc : TM_EXIT_TARGET;
	s->broken = true;
	if (s->order_retry && r != NULL && order_refusal(PQresultErrorField(r, PG_DIAG_SQLSTATE))) {
		const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
		const char *detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);

		log_warn("target: a constraint of the target's own refused rows applied apart from "
		         "the groups before them (%s%s%s); tidemark applies them again in the "
		         "source's order, one source transaction at a time, with the constraints "
		         "read anew: one added within the last minute is then known, and a refusal "
		         "there is the target's error",
		         msg != NULL ? msg : "refused", detail != NULL ? ": " : "",
		         detail != NULL ? detail : "");
		s->tx_rc = PGCONN_RETRY_TARGET;
		return s->tx_rc;
	}
	if (index < rd->n && rd->kind[index] == SINK_QUERY)
		snprintf(what, sizeof what, "%.190s", sql);
	else
		snprintf(what, sizeof what, "applying \"%.150s\"", sql ? sql : "(statement)");
	s->tx_rc = pgconn_fail(s->conn, TGT, what, r);
	return s->tx_rc;
}

void
sink_set_order_retry(sink *s, bool on)
{
	s->order_retry = on;
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

/* Once a wait has lasted SINK_NAME_AFTER_MS: who it waits for, when it
 * waits for others' transactions (a lock on a target table: a long query,
 * a session idle in a transaction, a prepared transaction), read through a
 * connection of its own. Only logged: a failure to read says nothing. */
static void
name_blockers(sink *s)
{
	PGconn *other = NULL;
	strbuf sb = STRBUF_INIT;
	int n = 0;

	if (pgconn_open(s->conninfo, TGT, "wait report", false, &other) == TM_OK &&
	    lock_watch_blockers(other, TGT, PQbackendPID(s->conn), &sb, &n) == TM_OK && n > 0)
		log_warn("target: tidemark's transaction has waited %.1f s for a lock, held by: %s",
		         SINK_NAME_AFTER_MS / 1000.0, strbuf_str(&sb));
	PQfinish(other);
	strbuf_free(&sb);
}

/* How long wait_result's next poll may last, elapsed ms into the wait:
 * until the tick is due, or the stall, or the naming of who it waits for. */
static int
poll_ms(const sink *s, double elapsed, bool named)
{
	int ms = s->tick != NULL ? s->tick_ms : s->stall_ms;

	if (s->tick != NULL && !named && SINK_NAME_AFTER_MS - elapsed < ms)
		ms = (int) (SINK_NAME_AFTER_MS - elapsed) + 1;
	return ms > 0 ? ms : 1;
}

/* Waits until the next result can be read without blocking, calling the
 * tick every tick_ms meanwhile. A failure of the connection is left for
 * PQgetResult to report. */
static void
wait_result(sink *s)
{
	double start = now_ms(), last = start;
	bool stalled = false, named = false;

	while ((s->tick != NULL || s->stall != NULL) && PQisBusy(s->conn)) {
		struct pollfd p = {PQsocket(s->conn), POLLIN, 0};
		int n = poll(&p, 1, poll_ms(s, now_ms() - start, named));

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
		if (s->tick != NULL && !named && now_ms() - start >= SINK_NAME_AFTER_MS) {
			named = true;
			name_blockers(s);
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

/* One result of the oldest round (r NULL: the end of a statement's
 * results); true at its sync point. */
static bool
round_result(sink *s, sink_round *rd, PGresult *r)
{
	ExecStatusType st;

	if (r == NULL) {
		/* one NULL ends each statement's results; two in a row mean the
		 * connection is gone before the sync point */
		if (++s->rd_nulls > 1 || PQstatus(s->conn) != CONNECTION_OK) {
			if (s->rd_rc == TM_OK) {
				s->rd_failed_at = s->rd_index;
				s->rd_rc = s->broken ? PGCONN_RETRY_TARGET
				                     : pgconn_fail(s->conn, TGT, "reading results", NULL);
				s->broken = true;
				if (s->tx_rc == TM_OK)
					s->tx_rc = s->rd_rc;
			}
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
	if (st == PGRES_FATAL_ERROR && s->rd_rc == TM_OK) {
		s->rd_failed_at = s->rd_index;
		s->rd_rc = fail_result(s, rd, s->rd_index, r);
	}
	if (st == PGRES_COMMAND_OK && s->rd_rc == TM_OK && s->rd_index < rd->n &&
	    rd->stmt[s->rd_index] != NULL && rd->stmt[s->rd_index]->misses != NULL &&
	    strcmp(PQcmdTuples(r), "0") == 0)
		count_miss(rd->stmt[s->rd_index]->misses);
	if ((rd->keep_last || rd->commit) && s->rd_rc == TM_OK && s->rd_index == rd->n - 1) {
		PQclear(s->rd_last);
		s->rd_last = r;
	} else
		PQclear(r);
	return false;
}

static void push_string(char ***list, int *n, int *cap, char *str);

/* A round failed at entry from: the server skipped it and what follows
 * it. The statements it prepared are not prepared, and its DEALLOCATEs
 * are sent again before the next statement. */
static void
round_skipped(sink *s, sink_round *rd, int from)
{
	for (int i = from; i < rd->n; i++)
		if (rd->kind[i] == SINK_PARSE && rd->stmt[i]->prepared) {
			rd->stmt[i]->prepared = false;
			s->prepared_bytes -= rd->stmt[i]->bytes;
		} else if (rd->kind[i] == SINK_DEALLOC)
			push_string(&s->pending, &s->npending, &s->ncap_pending, xstrdup(rd->sql[i]));
}

/* The oldest round read to its end: what it kept goes where it belongs,
 * its DEALLOCATE texts are freed, and the next round is the oldest. */
static int
round_done(sink *s, sink_round *rd)
{
	int rc = s->rd_rc;

	if (rc != TM_OK)
		round_skipped(s, rd, s->rd_failed_at);

	if (rd->commit) {
		s->commits--;
		s->commit_rc = rc != TM_OK ? rc : s->tx_rc;
		s->tx_rc = TM_OK;
		if (s->commit_rc == TM_OK && s->rd_last != NULL)
			lsn_parse(PQgetvalue(s->rd_last, 0, 0), &s->commit_end);
	} else if (rd->keep_last && rc == TM_OK) {
		PQclear(s->kept);
		s->kept = s->rd_last;
		s->rd_last = NULL;
	}
	PQclear(s->rd_last);
	s->rd_last = NULL;
	for (int i = 0; i < rd->nsent; i++)
		free(rd->sent[i]);
	rd->nsent = 0;
	rd->n = 0;
	rd->keep_last = rd->commit = false;
	s->rd_rc = TM_OK;
	s->rd_index = 0;
	s->rd_nulls = 0;
	s->head = (s->head + 1) % (SINK_ROUNDS + 1);
	s->nring--;
	if (rc == TM_OK)
		s->broken = false; /* (a round after a failure succeeds once it ended) */
	return rc;
}

/*
 * Reads the results of the oldest round sent up to its sync point: all of
 * them (block), or those already arrived (*ended false: the sync point has
 * not). Returns the round's first failure once it ended.
 */
static int
read_oldest(sink *s, bool block, bool *ended)
{
	sink_round *rd = round_at(s, 0);

	*ended = false;
	for (;;) {
		if (block)
			wait_result(s);
		else if (PQconsumeInput(s->conn) != 0 && PQisBusy(s->conn))
			return TM_OK; /* (a lost connection: PQgetResult says so) */
		if (!round_result(s, rd, PQgetResult(s->conn)))
			continue;
		*ended = true;
		return round_done(s, rd);
	}
}

/* Reads the rounds sent: those whose results have come (block false), or
 * all of them; returns the first failure. */
static int
read_rounds(sink *s, bool block)
{
	int rc = TM_OK, r;
	bool ended = true;

	while (s->nring > 0 && ended)
		if ((r = read_oldest(s, block, &ended)) != TM_OK && rc == TM_OK)
			rc = r;
	return rc;
}

/*
 * The round being filled sent with its sync point (commit: it ends with a
 * COMMIT and the query of its WAL position). Then the results that have
 * come are read, and with SINK_ROUNDS rounds in flight the oldest is
 * waited for.
 */
static int
ship(sink *s, bool keep_last, bool commit)
{
	int rc = TM_OK;
	bool ended = true;

	if (PQpipelineSync(s->conn) != 1)
		return pgconn_fail(s->conn, TGT, "sending a sync point", NULL);
	fill(s)->keep_last = keep_last;
	fill(s)->commit = commit;
	s->commits += commit;
	s->nring++;
	s->round++;
	while (rc == TM_OK && s->nring > 0 && ended)
		rc = read_oldest(s, s->nring >= SINK_ROUNDS, &ended);
	return rc;
}

/*
 * Sends what is queued with a sync point and reads every result. Keeps the
 * result of the last statement in *last when asked. Returns the first
 * failure's status.
 */
static int
drain(sink *s, PGresult **last)
{
	int rc = TM_OK, read_rc;

	if (fill(s)->n > 0 || s->nring == 0 || last != NULL)
		rc = ship(s, last != NULL, false);
	/* every round sent is read, whatever failed first */
	read_rc = read_rounds(s, true);
	if (rc == TM_OK)
		rc = read_rc;
	if (rc == TM_OK && last != NULL) {
		*last = s->kept;
		s->kept = NULL;
	}
	PQclear(s->kept);
	s->kept = NULL;
	return rc;
}

int
sink_sync(sink *s)
{
	return drain(s, NULL);
}

/* An entry added to the round being filled. */
static void
add_entry(sink *s, const char *sql, sink_entry kind, sink_stmt *st)
{
	sink_round *rd = fill(s);

	rd->kind[rd->n] = (char) kind;
	rd->stmt[rd->n] = st;
	rd->sql[rd->n++] = sql;
}

/* An entry queued: the round is sent once it is full. */
static int
queue_one(sink *s, const char *sql, sink_entry kind, sink_stmt *st)
{
	add_entry(s, sql, kind, st);
	return fill(s)->n >= SINK_BATCH - 1 ? ship(s, false, false) : TM_OK;
}

static int
note_queued(sink *s, const char *sql)
{
	s->nstatements++;
	return queue_one(s, sql, SINK_EXEC, NULL);
}

static int send_deallocations(sink *s);

/* A query whose result is read (what: said of it in a failure) queued,
 * its round sent by the caller (queue_one leaves room for it). */
static void
note_query(sink *s, const char *what)
{
	add_entry(s, what, SINK_QUERY, NULL);
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
	/* what came before is a round of its own: its failure is its own */
	if (fill(s)->n > 0 && (rc = ship(s, false, false)) != TM_OK) {
		(void) read_rounds(s, true);
		return rc;
	}
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
	int rc = fill(s)->n > 0 || s->nring > 0 ? sink_sync(s) : TM_OK;

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

void
sink_set_ddl_lock_wait(sink *s, int ms)
{
	snprintf(s->ddl_wait_sql, sizeof s->ddl_wait_sql,
	         "SELECT set_config('lock_timeout', '%dms', true)", ms);
}

int
sink_lock_wait(sink *s, bool ddl)
{
	/* queued: no round trip of its own (the text lives as long as s) */
	return sink_send_static(s, ddl ? s->ddl_wait_sql
	                               : "SELECT set_config('lock_timeout', '" SINK_LOCK_WAIT "', true)");
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
sink_push(sink *s)
{
	/* a blocking connection: everything in libpq's buffer is written */
	if (PQflush(s->conn) != 0)
		return pgconn_fail(s->conn, TGT, "sending statements", NULL);
	return TM_OK;
}

int
sink_commit_send(sink *s)
{
	bool done;
	/* one commit in flight at a time: the one before is confirmed first,
	 * so that no COMMIT follows a transaction whose failure is not known */
	int rc = sink_commit_wait(s, true, &done, NULL);

	s->commit_rc = TM_OK;
	if (rc == TM_OK)
		rc = send_params(s, "COMMIT", 0, NULL);
	s->in_tx = false;
	/* inserted after our commit record, so at or past its end */
	if (rc == TM_OK && (rc = send_deallocations(s)) == TM_OK &&
	    PQsendQueryParams(s->conn, "SELECT pg_current_wal_insert_lsn()", 0, NULL, NULL, NULL,
	                      NULL, 0) != 1)
		rc = pgconn_fail(s->conn, TGT, "committing", NULL);
	if (rc != TM_OK)
		return rc;
	note_query(s, "committing");
	return ship(s, false, true);
}

int
sink_commit_wait(sink *s, bool block, bool *done, tm_lsn *wal_end)
{
	int rc = TM_OK;
	bool ended = true;

	while (rc == TM_OK && s->commits > 0 && ended)
		rc = read_oldest(s, block, &ended);
	*done = s->commits == 0;
	/* a failure of the transaction read before (by any call) counts too */
	if (rc == TM_OK && *done)
		rc = s->commit_rc;
	if (rc == TM_OK && *done && wal_end != NULL)
		*wal_end = s->commit_end;
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

int
sink_socket(const sink *s)
{
	return PQsocket(s->conn);
}

void
sink_rollback(sink *s)
{
	s->in_tx = false;
	if (PQstatus(s->conn) != CONNECTION_OK)
		return;
	/* what is queued first, in rounds of its own: after a failure the
	 * server skips the rest of a round, and would skip the ROLLBACK */
	(void) sink_sync(s);
	if (PQsendQueryParams(s->conn, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0) == 1) {
		(void) queue_one(s, "ROLLBACK", SINK_EXEC, NULL); /* (first of its round) */
		(void) sink_sync(s);
		/* (that transaction is over, and the caller knows it failed) */
		s->tx_rc = s->commit_rc = TM_OK;
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
	/* taken out first: a round read meanwhile may queue some again */
	char **list = s->pending;
	int n = s->npending, rc = TM_OK, i;

	s->pending = NULL;
	s->npending = s->ncap_pending = 0;
	for (i = 0; rc == TM_OK && i < n; i++) {
		/* (the round it is queued in keeps its text) */
		push_string(&fill(s)->sent, &fill(s)->nsent, &fill(s)->ncap_sent, list[i]);
		if (PQsendQueryParams(s->conn, list[i], 0, NULL, NULL, NULL, NULL, 0) != 1)
			rc = pgconn_fail(s->conn, TGT, "sending a statement", NULL);
		else
			rc = queue_one(s, list[i], SINK_DEALLOC, NULL);
	}
	for (; i < n; i++)
		push_string(&s->pending, &s->npending, &s->ncap_pending, list[i]);
	free(list);
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
 * and forgotten when no one holds them and they are not queued in a round
 * not read yet (their results, and what each is, are still to be read). */
static void
trim(sink *s, const sink_stmt *keep)
{
	sink_stmt *st = s->oldest;

	while (st != NULL && (s->bytes > s->budget || s->prepared_bytes > s->budget)) {
		sink_stmt *next = st->newer;

		if (st == keep)
			;
		else if (st->holds == 0 && st->round < s->round - s->nring)
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
	return sink_send_formats(s, st, values, lengths, NULL);
}

int
sink_send_formats(sink *s, sink_stmt *st, const char *const *values, const int *lengths,
                  const int *formats)
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
		s->nstatements++;
		if ((rc = queue_one(s, st->sql, SINK_PARSE, st)) != TM_OK)
			return rc;
		trim(s, st);
		if ((rc = send_deallocations(s)) != TM_OK)
			return rc;
	}
	st->round = s->round;
	if (PQsendQueryPrepared(s->conn, st->name, st->nparams, values, lengths, formats, 0) != 1)
		return pgconn_fail(s->conn, TGT, "sending a statement", NULL);
	s->nstatements++;
	return queue_one(s, st->sql, SINK_EXEC, st);
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
