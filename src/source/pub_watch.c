#include "pub_watch.h"

#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "clock.h"
#include "exitcode.h"
#include "log.h"
#include "source_query.h"
#include "strbuf.h"
#include "xalloc.h"

void
pub_watch_init(pub_watch *w, const char *publication, const char *slot)
{
	memset(w, 0, sizeof *w);
	w->publication = publication;
	w->slot = slot;
	pub_state_init(&w->last, 0, 0);
}

void
pub_watch_free(pub_watch *w)
{
	pub_state_free(&w->last);
	free(w->own);
	free(w->capture_gaps);
	w->capture_gaps = NULL;
	w->own = NULL;
	w->nown = 0;
	w->read = false;
}

void
pub_watch_own(pub_watch *w, uint32_t relid)
{
	w->own = xrealloc(w->own, sizeof *w->own * (size_t) (w->nown + 1));
	w->own[w->nown++] = relid;
}

static bool
owned(const pub_watch *w, uint32_t relid)
{
	for (int i = 0; i < w->nown; i++)
		if (w->own[i] == relid)
			return true;
	return false;
}

void
pub_watch_warn_left(const char *publication, const char *table)
{
	log_warn("source: table %s is replicated, but publication \"%s\" no longer publishes it "
	         "(dropped from it, or put in the EXCEPT list of a FOR ALL TABLES one): its changes "
	         "are not sent, and its target table falls behind. Fix: ALTER PUBLICATION \"%s\" "
	         "ADD TABLE ONLY %s; (or take it out of the EXCEPT list): it is then copied again",
	         table, publication, publication, table);
}

/* The table is published again after a while left out: copied again. */
static int
copy_again(pub_watch *w, sink *s, snapshot *snap, const catalog_table *t, const char *name)
{
	log_warn("source: publication \"%s\" publishes table %s again, which it left out for a "
	         "while: the changes written meanwhile were not sent; it is copied again",
	         w->publication, name);
	snapshot_restart(snap, t->table_id);
	return catalog_request_copy(s, t->table_id);
}

/* One table: left out (said), or published again after a while left out,
 * or by a row made again (copied again); compared with the last reading of
 * this run, else with the one the catalog kept from an earlier run. The
 * catalog keeps the new reading when it differs. */
static int
follow_table(pub_watch *w, sink *s, snapshot *snap, const catalog_table *t, const pub_state *now,
             bool *copy)
{
	char token[PUB_STATE_TOKEN_MAX];
	strbuf name = STRBUF_INIT;
	pub_change c = w->read ? pub_state_compare(&w->last, now, t->source_relid)
	                       : pub_state_compare_token(t->publication_token, now, t->source_relid);
	int rc = TM_OK;

	strbuf_append_qualified(&name, t->source_schema, t->source_table);
	if (c == PUB_LEFT && w->read) /* else said at the run's start (warn_unpublished) */
		pub_watch_warn_left(w->publication, name.data);
	else if (c == PUB_BACK && !owned(w, t->source_relid)) {
		rc = copy_again(w, s, snap, t, name.data);
		*copy = true;
	}
	pub_state_token(now, t->source_relid, token, sizeof token);
	if (rc == TM_OK && token[0] != '\0' &&
	    (t->publication_token == NULL || strcmp(token, t->publication_token) != 0))
		rc = catalog_set_publication_token(s, t->table_id, token);
	strbuf_free(&name);
	return rc;
}

static int
compare(pub_watch *w, sink *s, snapshot *snap, const catalog_table *tables, int n,
        const pub_state *now)
{
	bool copy = false;
	int rc = TM_OK;

	for (int i = 0; rc == TM_OK && i < n; i++)
		if (strcmp(tables[i].state, "dropped") != 0)
			rc = follow_table(w, s, snap, &tables[i], now, &copy);
	if (copy)
		snapshot_poll_soon(snap);
	return rc;
}

/* The capture's event triggers, said when what is wrong with them changes. */
static int
watch_capture(pub_watch *w, PGconn *control, metrics *m)
{
	char **gaps = NULL;
	strbuf now = STRBUF_INIT;
	int rc = source_query_capture_gaps(control, &gaps), n = 0;

	for (int i = 0; rc == TM_OK && gaps[i] != NULL; i++, n++)
		strbuf_appendf(&now, "%s%s", i > 0 ? "; " : "", gaps[i]);
	if (rc == TM_OK)
		metrics_set(m, METRICS_CAPTURE_GAPS, (uint64_t) n);
	if (rc == TM_OK && now.len > 0 &&
	    (w->capture_gaps == NULL || strcmp(w->capture_gaps, strbuf_str(&now)) != 0))
		log_warn("source: the DDL capture's event triggers are not whole: %s. Schema changes "
		         "made meanwhile are not captured: a table whose columns the stream then "
		         "describes otherwise is set aside and copied again, and a table renamed or "
		         "dropped is not followed. Fix: run `tidemark setup` again as a superuser (it "
		         "makes them whole), or ALTER EVENT TRIGGER ... ENABLE ALWAYS; for each",
		         strbuf_str(&now));
	else if (rc == TM_OK && now.len == 0 && w->capture_gaps != NULL && w->capture_gaps[0] != '\0')
		log_info("source: the DDL capture's event triggers are all enabled again");
	if (rc == TM_OK) {
		free(w->capture_gaps);
		w->capture_gaps = strbuf_steal(&now);
	}
	strbuf_free(&now);
	xstrings_free(gaps);
	return rc;
}

int
pub_watch_poll(pub_watch *w, PGconn *control, sink *s, snapshot *snap, metrics *mx)
{
	catalog_table *tables = NULL;
	uint32_t *relids = NULL;
	pub_state now;
	int n = 0, m = 0;
	int rc;

	if (w->read && clock_coarse_s() - w->read_at < PUB_WATCH_INTERVAL_S)
		return TM_OK;
	w->read_at = clock_coarse_s();
	memset(&now, 0, sizeof now); /* pub_state_free frees nothing of it */
	rc = catalog_load_tables(s, w->slot, &tables, &n);
	if (rc == TM_OK) {
		relids = catalog_source_relids(tables, n, &m);
		rc = source_query_pub_state(control, w->publication, relids, m, &now);
	}
	if (rc == TM_OK && now.pub_oid == 0) {
		source_query_publication_missing(w->publication);
		rc = TM_EXIT_CONFIG;
	}
	if (rc == TM_OK)
		rc = watch_capture(w, control, mx);
	if (rc == TM_OK)
		rc = compare(w, s, snap, tables, n, &now);
	if (rc == TM_OK) {
		pub_state_free(&w->last);
		w->last = now;
		w->read = true;
		w->nown = 0;
	} else
		pub_state_free(&now);
	free(relids);
	catalog_tables_free(tables, n);
	return rc;
}
