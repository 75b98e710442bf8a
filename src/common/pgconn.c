#include "pgconn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "strbuf.h"

/* Every session of tidemark: values printed in one way (the canonical
 * text) and read back the same way (an array's NULL is a NULL, an XML
 * fragment is XML, whatever a database or role sets), row-level security
 * that refuses rather than hides rows, the default isolation, and none of
 * the roles' timeouts (tidemark bounds its own waits: each kind of session
 * sets its lock and idle timeouts after it connects; an idle session of a
 * quiet stream is not closed). */
#define SESSION_OPTIONS                                                                   \
	"-c DateStyle=ISO,YMD -c IntervalStyle=postgres -c TimeZone=UTC "                     \
	"-c extra_float_digits=3 -c bytea_output=hex -c client_encoding=UTF8 "                \
	"-c lc_monetary=C -c client_min_messages=warning -c standard_conforming_strings=on "    \
	"-c array_nulls=on -c xmloption=content -c quote_all_identifiers=off "                  \
	"-c default_transaction_isolation=read\\ committed "                                   \
	"-c row_security=off -c statement_timeout=0 -c idle_in_transaction_session_timeout=0 " \
	"-c idle_session_timeout=0"

/* Set once by main from the password files, read by every connection. */
static const char *side_password[2];

void
pgconn_set_password(pgconn_side side, const char *password)
{
	side_password[side == PGCONN_SOURCE ? 0 : 1] = password;
}

bool
pgconn_has_password(const char *conninfo)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	bool has = false;

	if (opts == NULL)
		return false;
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		has = has || (strcmp(o->keyword, "password") == 0 && o->val != NULL && o->val[0] != '\0');
	PQconninfoFree(opts);
	return has;
}

void
pgconn_warn_encodings(PGconn *src, PGconn *dst)
{
	const char *se = PQparameterStatus(src, "server_encoding");
	const char *te = PQparameterStatus(dst, "server_encoding");

	/* UTF8 holds every character; SQL_ASCII stores the bytes it is given */
	if (se == NULL || te == NULL || strcmp(se, te) == 0 || strcmp(te, "UTF8") == 0 ||
	    strcmp(te, "SQL_ASCII") == 0)
		return;
	log_warn("target: the database's encoding is %s and the source's %s: a source character "
	         "that %s cannot hold stops the run (SQLSTATE 22P05); a target database in UTF8 "
	         "holds every character", te, se, te);
}

const char *
pgconn_side_name(pgconn_side side)
{
	return side == PGCONN_SOURCE ? "source" : "target";
}

/*
 * libpq's parse errors quote the offending part of the string, which may be
 * a password: never show them.
 */
int
pgconn_check_conninfo(const char *conninfo, const char *option_name)
{
	char *errmsg = NULL;
	PQconninfoOption *opts = PQconninfoParse(conninfo, &errmsg);

	if (opts == NULL) {
		log_error("the connection string given by %s is not valid; it is not shown because it "
		          "may hold a password: check its syntax (key=value pairs or a postgresql:// URI)",
		          option_name);
		PQfreemem(errmsg);
		return TM_EXIT_CONFIG;
	}
	PQconninfoFree(opts);
	return TM_OK;
}

static const char *
conninfo_value(PQconninfoOption *opts, const char *key)
{
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, key) == 0 && o->val != NULL && o->val[0] != '\0')
			return o->val;
	return NULL;
}

const char *
pgconn_describe(const char *conninfo, char *buf, size_t size)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	const char *host, *port, *db, *user;

	if (opts == NULL) {
		snprintf(buf, size, "(invalid connection string)");
		return buf;
	}
	host = conninfo_value(opts, "host");
	if (host == NULL)
		host = conninfo_value(opts, "hostaddr");
	port = conninfo_value(opts, "port");
	db = conninfo_value(opts, "dbname");
	user = conninfo_value(opts, "user");
	snprintf(buf, size, "host=%s port=%s dbname=%s user=%s", host ? host : "(default)",
	         port ? port : "(default)", db ? db : "(default)", user ? user : "(default)");
	PQconninfoFree(opts);
	return buf;
}

/* The user's own "options" come first so that ours win where they clash. */
static char *
session_options(const char *conninfo)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	const char *user_opts = opts ? conninfo_value(opts, "options") : NULL;
	strbuf sb = STRBUF_INIT;

	if (user_opts != NULL) {
		strbuf_append(&sb, user_opts);
		strbuf_appendc(&sb, ' ');
	}
	strbuf_append(&sb, SESSION_OPTIONS);
	if (opts != NULL)
		PQconninfoFree(opts);
	return strbuf_steal(&sb);
}

/* The user's application_name, if any, with tidemark's role after it, so
 * that pg_stat_activity tells pipelines apart and still says what each
 * connection of tidemark does. */
static void
application_name(const char *conninfo, const char *role, char *out, size_t size)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	const char *user = opts ? conninfo_value(opts, "application_name") : NULL;

	if (user == NULL)
		user = getenv("PGAPPNAME");
	if (user != NULL && user[0] != '\0')
		snprintf(out, size, "%s (tidemark %s)", user, role);
	else
		snprintf(out, size, "tidemark %s", role);
	if (opts != NULL)
		PQconninfoFree(opts);
}

/* The server refused a replication connection to a role without the
 * REPLICATION attribute (the message of PostgreSQL 15, and of 16 on). */
static bool
refused_replication(PGconn *conn)
{
	const char *m = conn ? PQerrorMessage(conn) : "";

	return strstr(m, "must be superuser or replication role") != NULL ||
	       strstr(m, "permission denied to start WAL sender") != NULL;
}

/* The length of libpq's message without its final line break. */
static size_t
message_length(PGconn *conn)
{
	const char *m = conn ? PQerrorMessage(conn) : "out of memory";
	size_t n = strlen(m);

	while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == ' '))
		n--;
	return n;
}

/* The fix when a connection pooler (pgbouncer) refuses the startup
 * options, or passes the session on without them. */
#define POOLER_FIX                                                                        \
	"Fix: connect tidemark to PostgreSQL directly, not through a pooler (pgbouncer): its " \
	"sessions need their own settings, prepared statements and transactions"

static bool
refused_options(PGconn *conn)
{
	return conn != NULL && strstr(PQerrorMessage(conn), "unsupported startup parameter") != NULL;
}

/* The fix of a failed connection, for the log line ("" when none). */
static const char *
connect_fix(PGconn *conn, char *buf, size_t size)
{
	if (refused_replication(conn))
		snprintf(buf, size, ". Fix: ALTER ROLE \"%s\" REPLICATION; (and a \"replication\" line "
		         "for it in pg_hba.conf)", PQuser(conn) ? PQuser(conn) : "the role");
	else if (refused_options(conn))
		snprintf(buf, size, ". " POOLER_FIX);
	else
		buf[0] = '\0';
	return buf;
}

/* The settings SESSION_OPTIONS asks for, as the server reports them once
 * connected: a pooler that drops the options would leave the values read
 * and written under the database's own (TM_EXIT_CONFIG, said). */
static int
check_settings(PGconn *conn, pgconn_side side, const char *conninfo)
{
	static const char *const want[][2] = {
		{"DateStyle", "ISO, YMD"}, {"IntervalStyle", "postgres"}, {"TimeZone", "UTC"}};
	char where[256];

	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const char *got = PQparameterStatus(conn, want[i][0]);

		if (got == NULL || strcmp(got, want[i][1]) == 0)
			continue;
		log_error("%s (%s): the session's settings were not applied: %s is \"%s\", not \"%s\": "
		          "something between tidemark and the server drops the startup options. " POOLER_FIX,
		          pgconn_side_name(side), pgconn_describe(conninfo, where, sizeof where),
		          want[i][0], got, want[i][1]);
		return TM_EXIT_CONFIG;
	}
	return TM_OK;
}

int
pgconn_open(const char *conninfo, pgconn_side side, const char *role, bool replication,
            PGconn **out)
{
	char appname[64];
	char *options = session_options(conninfo);
	/* later keywords override what the user's string says */
	const char *password = side_password[side == PGCONN_SOURCE ? 0 : 1];
	const char *keys[] = {"dbname", "application_name", "options", "connect_timeout",
	                      "keepalives", "keepalives_idle", "keepalives_interval",
	                      "keepalives_count", "password" /* NULL: ignored */,
	                      replication ? "replication" : NULL, NULL};
	const char *vals[] = {conninfo, appname, options, "10", "1", "10", "5", "3", password,
	                      "database", NULL};
	char where[256], fix[256];
	PGconn *conn;
	int rc;

	*out = NULL; /* also on failure: callers PQfinish it either way */
	application_name(conninfo, role, appname, sizeof appname);
	conn = PQconnectdbParams(keys, vals, 1);
	free(options);
	if (conn != NULL && PQstatus(conn) == CONNECTION_OK) {
		*out = conn;
		rc = check_settings(conn, side, conninfo);
		if (rc != TM_OK)
			return rc;
		/* as SESSION_OPTIONS' timeouts, for the one PostgreSQL 17 added */
		if (!replication && PQserverVersion(conn) >= 170000)
			return pgconn_command(conn, side, "setting the session's transaction_timeout",
			                      "SET transaction_timeout = 0", 0, NULL);
		return TM_OK;
	}
	rc = pgconn_classify(side, NULL, false);
	/* authentication and unknown database are configuration problems */
	if (conn != NULL && (strstr(PQerrorMessage(conn), "authentication failed") != NULL ||
	                     strstr(PQerrorMessage(conn), "does not exist") != NULL ||
	                     strstr(PQerrorMessage(conn), "no pg_hba.conf entry") != NULL ||
	                     strstr(PQerrorMessage(conn), "password") != NULL ||
	                     refused_replication(conn) || refused_options(conn)))
		rc = TM_EXIT_CONFIG;
	log_error("%s: cannot connect (%s) as %s: %.*s%s", pgconn_side_name(side),
	          pgconn_describe(conninfo, where, sizeof where), role,
	          (int) message_length(conn), conn ? PQerrorMessage(conn) : "out of memory",
	          connect_fix(conn, fix, sizeof fix));
	PQfinish(conn);
	return rc;
}

static bool
sqlstate_is(const char *state, const char *prefix)
{
	return strncmp(state, prefix, strlen(prefix)) == 0;
}

int
pgconn_classify(pgconn_side side, const char *sqlstate, bool connection_ok)
{
	int side_code = side == PGCONN_SOURCE ? TM_EXIT_SOURCE : TM_EXIT_TARGET;

	int retry = side == PGCONN_SOURCE ? PGCONN_RETRY_SOURCE : PGCONN_RETRY_TARGET;

	if (!connection_ok || sqlstate == NULL)
		return retry;
	if (sqlstate_is(sqlstate, "08") ||          /* connection exception */
	    sqlstate_is(sqlstate, "57P") ||         /* admin/crash shutdown, cannot connect now */
	    sqlstate_is(sqlstate, "40") ||          /* serialization failure, deadlock */
	    strcmp(sqlstate, "55P03") == 0 ||       /* lock not available */
	    strcmp(sqlstate, "55006") == 0 ||       /* object in use (slot active elsewhere) */
	    strcmp(sqlstate, "25006") == 0 ||       /* read-only transaction: server in recovery */
	    strcmp(sqlstate, "53300") == 0 ||       /* too many connections */
	    strcmp(sqlstate, "53100") == 0 ||       /* disk full: retried, loudly */
	    strcmp(sqlstate, "53200") == 0)         /* out of memory */
		return retry;
	if (strcmp(sqlstate, "42501") == 0)         /* insufficient privilege */
		return TM_EXIT_CONFIG;
	return side_code;
}

/* The fix for the failures users meet, by SQLSTATE. */
static const struct {
	const char *state;
	pgconn_side side;
	const char *hint;
} hints[] = {
	{"53100", PGCONN_TARGET, "the target's disk is full: free space there; tidemark retries until "
	                         "it can write, and loses nothing meanwhile"},
	{"53100", PGCONN_SOURCE, "the source's disk is full"},
	{"53200", PGCONN_TARGET, "the target ran out of memory, or of room in its lock table (a "
	                         "target transaction holds a lock on each table it writes, and the "
	                         "table has max_locks_per_transaction x max_connections entries): "
	                         "tidemark retries, applying the source transactions one per target "
	                         "transaction past this point; if one alone writes more tables than "
	                         "that, raise max_locks_per_transaction on the target (a restart)"},
	{"25006", PGCONN_TARGET, "the target refuses writes: it is a standby in recovery, or "
	                         "default_transaction_read_only is on for tidemark's role or the "
	                         "database (SHOW default_transaction_read_only; ALTER ROLE / ALTER "
	                         "DATABASE ... RESET default_transaction_read_only); tidemark retries "
	                         "until it accepts them, and loses nothing meanwhile"},
	{"55P03", PGCONN_TARGET, "a lock on the target table is held by another session (a long "
	                         "query or an open transaction: see pg_locks and pg_stat_activity); "
	                         "a schema change or TRUNCATE waits for it a few seconds at a time, "
	                         "so that the table's readers do not queue behind it, and tidemark "
	                         "retries with growing pauses"},
	{"42703", PGCONN_TARGET, "a column tidemark writes is missing on the target: the target table "
	                         "was altered by hand. Fix: restore the column (or drop and re-create "
	                         "the table with the source's columns), then `tidemark snapshot` it"},
	{"42P01", PGCONN_TARGET, "the target table is missing (dropped by hand?). Fix: `tidemark setup` "
	                         "again for it (it is created), then `tidemark snapshot` it"},
	{"22P02", PGCONN_TARGET, "a target column's type no longer takes the source's values: it was "
	                         "altered by hand. Fix: give it back a type that holds them"},
	{"42804", PGCONN_TARGET, "a target column's type was altered by hand. Fix: give it back a type "
	                         "that holds the source's values"},
	{"23502", PGCONN_TARGET, "a NOT NULL constraint added by hand on the target refuses the "
	                         "source's rows. Fix: drop it"},
	{"23505", PGCONN_TARGET, "a unique index added by hand on the target refuses the source's "
	                         "rows. Fix: drop it"},
	{"23503", PGCONN_TARGET, "a foreign key added by hand on the target refuses the source's "
	                         "order of changes, or a table of the target's own references a row "
	                         "the source deleted (the message names the key and its table). Fix: "
	                         "drop the key, or give it ON DELETE CASCADE or SET NULL"},
	{"23514", PGCONN_TARGET, "a CHECK constraint added by hand on the target refuses the "
	                         "source's rows (the target takes what the source took). Fix: drop "
	                         "it"},
	{"23P01", PGCONN_TARGET, "an exclusion constraint added by hand on the target refuses the "
	                         "source's rows. Fix: drop it"},
	{"22021", PGCONN_SOURCE, "a source value is not valid UTF-8, the encoding tidemark reads in "
	                         "(an SQL_ASCII database stores any bytes). Fix: make the values valid "
	                         "UTF-8 on the source. A change already in the WAL with such a value "
	                         "stops the stream at it every time: once the values are fixed, drop "
	                         "the slot (pg_drop_replication_slot) and `tidemark resync` (a new "
	                         "slot; every table copied again in place)"},
	{"428C9", PGCONN_TARGET, "the stream sends a generated column, which the target computes "
	                         "itself: the publication published generated columns "
	                         "(publish_generated_columns) when these changes were written. Fix: "
	                         "ALTER PUBLICATION ... SET (publish_generated_columns = none); the "
	                         "slot still holds what it sent that way: drop the slot "
	                         "(pg_drop_replication_slot) and `tidemark resync`"},
	{"22P05", PGCONN_TARGET, "a source character has no equivalent in the target database's "
	                         "encoding. Fix: replicate into a target database in UTF8, which "
	                         "holds every character (CREATE DATABASE ... ENCODING 'UTF8' "
	                         "TEMPLATE template0, then `tidemark setup` into it)"},
	{"42501", PGCONN_TARGET, "the target role lacks a privilege. Fix: grant it"},
	{"42501", PGCONN_SOURCE, "the source role lacks a privilege (SELECT on the tables, REPLICATION, "
	                         "or a superuser for setup's event trigger). Fix: grant it"},
};

/* tidemark's own fix for a SQLSTATE on a side, or NULL. */
static const char *
hint_of(pgconn_side side, const char *state)
{
	for (size_t i = 0; state != NULL && i < sizeof hints / sizeof hints[0]; i++)
		if (hints[i].side == side && strcmp(hints[i].state, state) == 0)
			return hints[i].hint;
	return NULL;
}

/* The server's error as one line: message, detail, hint, SQLSTATE (not the
 * statement's text, which LINE and caret lines would quote). */
static void
append_server_error(strbuf *sb, const PGresult *res, const char *fallback)
{
	const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
	const char *hint = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_HINT) : NULL;
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

	strbuf_append(sb, primary ? primary : fallback);
	if (detail != NULL)
		strbuf_appendf(sb, " (%s)", detail);
	if (hint != NULL)
		strbuf_appendf(sb, " (hint: %s)", hint);
	if (state != NULL)
		strbuf_appendf(sb, " SQLSTATE %s", state);
}

/* Row-level security would hide or spare rows of a table from the role:
 * with row_security off (SESSION_OPTIONS) the server refuses instead, as
 * the copy must read every row the stream sends, and the target take every
 * row written. */
static void
rls_fix(PGconn *conn, pgconn_side side, strbuf *fix)
{
	const char *role = conn && PQuser(conn) ? PQuser(conn) : "the role";

	strbuf_appendf(fix, "row-level security would hide rows of the %s table from role \"%s\", "
	                    "and tidemark must %s every row. Fix (as a superuser): ALTER ROLE ",
	               pgconn_side_name(side), role, side == PGCONN_SOURCE ? "read" : "write");
	strbuf_append_ident(fix, role);
	strbuf_append(fix, " BYPASSRLS; or connect as the table's owner (without FORCE ROW LEVEL "
	                   "SECURITY)");
}

/* 42501 raised by row-level security, whatever the server's language: the
 * function that raised it, else its English text. */
static bool
is_rls_refusal(const PGresult *res, const char *msg)
{
	const char *fn = res ? PQresultErrorField(res, PG_DIAG_SOURCE_FUNCTION) : NULL;

	return (fn != NULL && strcmp(fn, "check_enable_rls") == 0) ||
	       (msg != NULL && strstr(msg, "row-level security") != NULL);
}

/* GRANT SELECT for a table the role could not read, and for the tables
 * created later in its schema. */
static void
grant_fix(PGconn *conn, const pgconn_subject *t, strbuf *fix)
{
	const char *role = conn && PQuser(conn) ? PQuser(conn) : "the role";

	strbuf_appendf(fix, "role \"%s\" may not read ", role);
	strbuf_append_qualified(fix, t->schema, t->table);
	strbuf_append(fix, ". Fix: GRANT SELECT ON ");
	strbuf_append_qualified(fix, t->schema, t->table);
	strbuf_append(fix, " TO ");
	strbuf_append_ident(fix, role);
	strbuf_append(fix, "; and, for the tables created later in the schema: ALTER DEFAULT "
	                   "PRIVILEGES FOR ROLE ");
	if (t->owner != NULL)
		strbuf_append_ident(fix, t->owner);
	else
		strbuf_append(fix, "the_role_that_creates_them");
	strbuf_append(fix, " IN SCHEMA ");
	strbuf_append_ident(fix, t->schema);
	strbuf_append(fix, " GRANT SELECT ON TABLES TO ");
	strbuf_append_ident(fix, role);
	strbuf_appendc(fix, ';');
}

int
pgconn_fail(PGconn *conn, pgconn_side side, const char *what, const PGresult *res)
{
	return pgconn_fail_on(conn, side, what, res, NULL);
}

int
pgconn_fail_on(PGconn *conn, pgconn_side side, const char *what, const PGresult *res,
               const pgconn_subject *subject)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorMessage(res) : NULL;
	const char *fix = hint_of(side, state);
	bool ok = conn != NULL && PQstatus(conn) == CONNECTION_OK;
	strbuf line = STRBUF_INIT, grant = STRBUF_INIT;
	int rc;

	if (state != NULL && strcmp(state, "42501") == 0 && is_rls_refusal(res, msg)) {
		rls_fix(conn, side, &grant);
		fix = strbuf_str(&grant);
	} else if (subject != NULL && side == PGCONN_SOURCE && state != NULL &&
	           strcmp(state, "42501") == 0) {
		grant_fix(conn, subject, &grant);
		fix = strbuf_str(&grant);
	}

	if (msg == NULL || msg[0] == '\0')
		msg = conn ? PQerrorMessage(conn) : "no connection";
	rc = pgconn_classify(side, state, ok);
	append_server_error(&line, res, msg);
	log_error("%s: %s: %s%s%s", pgconn_side_name(side), what, strbuf_str(&line),
	          fix ? "; " : "", fix ? fix : "");
	strbuf_free(&line);
	strbuf_free(&grant);
	return rc;
}

int
pgconn_exec(PGconn *conn, pgconn_side side, const char *what, const char *sql, int nparams,
            const char *const *params, PGresult **res)
{
	return pgconn_result(conn, side, what,
	                     PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0), res);
}

int
pgconn_result(PGconn *conn, pgconn_side side, const char *what, PGresult *r, PGresult **res)
{
	ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
	int rc;

	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		if (res != NULL)
			*res = r;
		else
			PQclear(r);
		return TM_OK;
	}
	rc = pgconn_fail(conn, side, what, r);
	PQclear(r);
	return rc;
}

int
pgconn_command(PGconn *conn, pgconn_side side, const char *what, const char *sql, int nparams,
               const char *const *params)
{
	return pgconn_exec(conn, side, what, sql, nparams, params, NULL);
}

int
pgconn_script(PGconn *conn, pgconn_side side, const char *what, const char *sql)
{
	PGresult *r = PQexec(conn, sql);
	ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
	int rc = TM_OK;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = pgconn_fail(conn, side, what, r);
	PQclear(r);
	return rc;
}

int
pgconn_exit_code(int rc)
{
	if (rc == PGCONN_RETRY_SOURCE)
		return TM_EXIT_SOURCE;
	if (rc == PGCONN_RETRY_TARGET)
		return TM_EXIT_TARGET;
	if (rc == PGCONN_RETRY_SLOT_BUSY)
		return TM_EXIT_CONFIG;
	return rc;
}
