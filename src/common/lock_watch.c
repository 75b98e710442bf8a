#include "lock_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_holders.h"
#include "part_tree_sql.h"
#include "xalloc.h"

/* Every row: waiting, pid (0: a prepared transaction), gid, role,
 * application_name, state, since. Times print in UTC (SESSION_OPTIONS). */
static const char blockers_sql[] =
	"SELECT false, a.pid, NULL, a.usename, a.application_name, a.state,"
	" date_trunc('second', a.xact_start)::text"
	" FROM pg_stat_activity a WHERE a.pid = ANY (pg_blocking_pids($1::int))"
	" UNION ALL"
	" SELECT false, 0, p.gid, p.owner::text, NULL, NULL, date_trunc('second', p.prepared)::text"
	" FROM pg_prepared_xacts p WHERE p.transaction IN ("
	"  SELECT x.transactionid FROM pg_locks w"
	"  JOIN pg_locks h ON h.locktype = w.locktype AND h.granted AND h.pid IS NULL"
	"   AND h.database IS NOT DISTINCT FROM w.database"
	"   AND h.relation IS NOT DISTINCT FROM w.relation"
	"   AND h.transactionid IS NOT DISTINCT FROM w.transactionid"
	"  JOIN pg_locks x ON x.locktype = 'transactionid'"
	"   AND x.virtualtransaction = h.virtualtransaction"
	"  WHERE w.pid = $1::int AND NOT w.granted)"
	" ORDER BY 2, 3";

/* The ACCESS EXCLUSIVE locks on a table and its partitions, held or
 * asked for: what a read of it waits behind. */
static const char holders_sql[] =
	"WITH t AS (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
	"  WHERE n.nspname = $1 AND c.relname = $2),"
	" rel AS (SELECT oid AS relid FROM t"
	"  UNION SELECT p.relid FROM t, LATERAL " PART_TREE_SQL("t.oid") " p),"
	" l AS (SELECT l.granted, l.pid, l.virtualtransaction FROM pg_locks l"
	"  WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock'"
	"   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
	"   AND l.relation IN (SELECT relid FROM rel)"
	"   AND l.pid IS DISTINCT FROM pg_backend_pid())"
	" SELECT DISTINCT NOT l.granted, coalesce(l.pid, 0), p.gid,"
	"  coalesce(a.usename::text, p.owner::text), a.application_name, a.state,"
	"  date_trunc('second', coalesce(p.prepared, a.xact_start))::text"
	" FROM l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
	" LEFT JOIN pg_locks x ON l.pid IS NULL AND x.locktype = 'transactionid'"
	"  AND x.virtualtransaction = l.virtualtransaction"
	" LEFT JOIN pg_prepared_xacts p ON p.transaction = x.transactionid"
	" WHERE l.pid IS NOT NULL OR p.gid IS NOT NULL"
	" ORDER BY 1, 2, 3";

static const char *
field(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* The rows of blockers_sql or holders_sql, described. */
static void
describe(const PGresult *r, strbuf *out)
{
	int n = PQntuples(r);
	lock_holder *h = xcalloc((size_t) n + 1, sizeof *h);

	for (int i = 0; i < n; i++) {
		h[i].waiting = strcmp(PQgetvalue(r, i, 0), "t") == 0;
		h[i].pid = atoi(PQgetvalue(r, i, 1));
		h[i].gid = field(r, i, 2);
		h[i].role = field(r, i, 3);
		h[i].application = field(r, i, 4);
		h[i].state = field(r, i, 5);
		h[i].since = field(r, i, 6);
	}
	lock_holders_describe(h, n, out);
	free(h);
}

int
lock_watch_blockers(PGconn *conn, pgconn_side side, int pid, strbuf *out, int *n)
{
	char pidtext[16];
	const char *params[] = {pidtext};
	PGresult *r = NULL;
	int rc;

	snprintf(pidtext, sizeof pidtext, "%d", pid);
	rc = pgconn_exec(conn, side, "reading what a statement waits for", blockers_sql, 1, params,
	                 &r);
	*n = rc == TM_OK ? PQntuples(r) : 0;
	if (rc == TM_OK)
		describe(r, out);
	PQclear(r);
	return rc;
}

int
lock_watch_table_holders(PGconn *conn, pgconn_side side, const char *schema, const char *name,
                         strbuf *out)
{
	const char *params[] = {schema, name};
	PGresult *r = NULL;
	int rc = pgconn_exec(conn, side, "reading who holds a table's lock", holders_sql, 2, params,
	                     &r);

	if (rc == TM_OK)
		describe(r, out);
	PQclear(r);
	return rc;
}
