/*
 * schema_sync_auth.c: which DDL capture messages schema_sync follows (see
 * src/ddl/ddl_auth.h). Anyone may write a message with the prefix
 * "tidemark.ddl"; tidemark's capture signs its own:
 *   - bound form (source migration 008): followed when its signature
 *     checks and it was written in the very transaction it arrives in, with
 *     a seq above the last one accepted in it; a copy emitted again in
 *     another transaction (a replay), or again in the same one, is ignored;
 *   - old form (002): followed only from before the bound form was
 *     installed (tidemark.capture_keys.bound_from), so that a backlog the
 *     old capture wrote still applies;
 *   - unsigned: followed only from before the source had a key (signed_from).
 * Everything else is ignored with a warning naming its position: the target
 * is unchanged.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "exitcode.h"
#include "log.h"
#include "schema_sync_int.h"

/* Where the bound form is required from (NULL: not known, setup has not run
 * since migration 011). */
static int
load_bound_from(schema_sync *ss)
{
	PGresult *r = NULL;
	int rc = sink_query(ss->sink, "reading where bound capture messages start",
	                    "SELECT bound_from::text FROM tidemark.capture_keys WHERE slot_name = $1",
	                    1, (const char *const[]) {ss->cfg.slot}, &r);

	ss->bound_known = false;
	if (rc == TM_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
		ss->bound_known = lsn_parse(PQgetvalue(r, 0, 0), &ss->bound_from);
	PQclear(r);
	return rc;
}

int
schema_sync_auth_load(schema_sync *ss)
{
	char *hex = NULL;
	int rc = catalog_read_capture_key(ss->sink, ss->cfg.slot, &hex, &ss->signed_from);

	ss->key_len = -1;
	if (rc == TM_OK && hex != NULL &&
	    (ss->key_len = ddl_auth_key_parse(hex, ss->key, sizeof ss->key)) < 0)
		log_warn("target: the capture key kept in tidemark.capture_keys is not valid");
	if (rc == TM_OK && ss->key_len < 0)
		log_warn("DDL capture messages are not authenticated for this replication: run "
		         "`tidemark setup` again (same options) to keep the source's capture key");
	free(hex);
	if (rc == TM_OK)
		rc = load_bound_from(ss);
	if (rc == TM_OK && ss->key_len >= 0 && !ss->bound_known)
		log_warn("DDL capture messages are not bound to their transaction for this replication "
		         "(a copy of a captured message emitted again would be followed): run `tidemark "
		         "setup` again (same options) to install the source's newer capture");
	return rc;
}

void
schema_sync_in_transaction(schema_sync *ss, uint64_t xid, tm_lsn commit_lsn)
{
	ss->cur_xid = xid;
	schema_sync_set_commit(ss, commit_lsn);
}

static void
ignored(const pgoutput_msg *m, const char *why)
{
	char at[LSN_TEXT_MAX];

	log_warn("a DDL capture message at %s %s and is ignored: it was not written by tidemark's "
	         "capture on the source (any role may write a message with the prefix tidemark.ddl). "
	         "Look for who wrote it; the target is unchanged",
	         lsn_format(m->u.message.lsn, at), why);
}

/* A bound message: written in this transaction, in order. */
static bool
bound_here(schema_sync *ss, const pgoutput_msg *m, const ddl_auth_msg *am)
{
	ddl_auth_bind b = ddl_auth_tx_accept(&ss->tx, ss->cur_xid, ss->cur_commit, am->xid, am->seq);
	char at[LSN_TEXT_MAX];

	if (b == DDL_AUTH_BIND_OK)
		return true;
	if (b == DDL_AUTH_BIND_OTHER_TX)
		log_warn("a DDL capture message at %s was written in source transaction %" PRIu64
		         " but arrives in transaction %" PRIu64 ", and is ignored: it is a copy of a "
		         "captured message emitted again (a replay: any role that can read a slot or "
		         "the WAL can copy one). Look for who wrote it; the target is unchanged",
		         lsn_format(m->u.message.lsn, at), am->xid, ss->cur_xid);
	else
		log_warn("a DDL capture message at %s repeats or goes back in its transaction %" PRIu64
		         " (seq %d after %d), and is ignored: it is a copy of a captured message emitted "
		         "again (a replay). Look for who wrote it; the target is unchanged",
		         lsn_format(m->u.message.lsn, at), am->xid, am->seq, ss->tx.last_seq);
	return false;
}

const char *
schema_sync_auth_body(schema_sync *ss, const pgoutput_msg *m, size_t *len)
{
	ddl_auth_msg am;
	tm_lsn at = m->u.message.lsn;
	ddl_auth_status st = ddl_auth_verify(ss->key, ss->key_len < 0 ? 0 : (size_t) ss->key_len,
	                                     m->u.message.content, m->u.message.len, &am);

	if (st == DDL_AUTH_FORGED) {
		ignored(m, "is signed with another key");
		return NULL;
	}
	if (st == DDL_AUTH_UNSIGNED && ss->key_len >= 0 && at >= ss->signed_from) {
		ignored(m, "is not signed");
		return NULL;
	}
	if (st == DDL_AUTH_SIGNED && !am.bound && ss->bound_known && at >= ss->bound_from) {
		ignored(m, "is signed without its transaction (the form of an older capture than the "
		           "one installed)");
		return NULL;
	}
	if (am.bound && !bound_here(ss, m, &am))
		return NULL;
	ss->msg = am;
	*len = am.body_len;
	return am.body;
}

bool
schema_sync_auth_matches(const schema_sync *ss, const ddl_event *e, const pgoutput_msg *m)
{
	if (!ss->msg.bound || ((uint64_t) e->xid == ss->msg.xid && e->seq == ss->msg.seq))
		return true;
	ignored(m, "signs another transaction or seq than its own");
	return false;
}
