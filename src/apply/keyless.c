/*
 * keyless.c: the target's side of tables without a key (see keyless.h):
 * statements built per table and per pattern of the rows they take, kept
 * changes, and their replay.
 */
#include "keyless.h"
#include "xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "dml_sql.h"
#include "keyless_sql.h"
#include "log.h"
#include "pgconn.h"
#include "sqltype.h"
#include "strbuf.h"
#include "target_ddl.h"

/* A statement for one kind of change and one pattern of its rows. */
typedef struct kl_stmt {
	struct kl_stmt *next;
	char op;
	char *pattern;        /* owned: 'u': which columns are set (1/0), then the old row's
	                       * pattern ('v', 'n', '-'); 'd': the old row's pattern */
	sink_stmt *stmt;      /* borrowed from the sink */
	int nparams;
} kl_stmt;

/* A table as the statements see it: the stream's columns, and how the
 * target compares each. */
typedef struct kl_table {
	struct kl_table *next;
	int table_id;
	int ncols;
	char **cols;          /* owned, the stream's column order */
	keyless_match *match; /* owned */
	char **types;         /* owned: the target types rendered, entries may be NULL */
	char *schema;         /* owned: the target table */
	char *name;
	kl_stmt *stmts;       /* owned list */
	sink_stmt *record[4]; /* borrowed: i, u, d, t */
} kl_table;

struct keyless {
	sink *sink;           /* borrowed */
	kl_table *tables;     /* owned list */
};

keyless *
keyless_new(sink *s)
{
	keyless *k = xcalloc(1, sizeof *k);

	k->sink = s;
	return k;
}

static void
table_free(keyless *k, kl_table *t)
{
	for (int i = 0; i < t->ncols; i++) {
		free(t->cols[i]);
		free(t->types[i]);
	}
	free(t->cols);
	free(t->types);
	free(t->match);
	free(t->schema);
	free(t->name);
	for (int i = 0; i < 4; i++)
		sink_stmt_release(k->sink, t->record[i]);
	while (t->stmts != NULL) {
		kl_stmt *next = t->stmts->next;

		sink_stmt_release(k->sink, t->stmts->stmt);
		free(t->stmts->pattern);
		free(t->stmts);
		t->stmts = next;
	}
	free(t);
}

void
keyless_free(keyless *k)
{
	if (k == NULL)
		return;
	while (k->tables != NULL) {
		kl_table *next = k->tables->next;

		table_free(k, k->tables);
		k->tables = next;
	}
	free(k);
}

void
keyless_forget(keyless *k, int table_id)
{
	for (kl_table **p = &k->tables; *p != NULL; p = &(*p)->next)
		if ((*p)->table_id == table_id) {
			kl_table *gone = *p;

			*p = gone->next;
			table_free(k, gone);
			return;
		}
}

/* ---- the table ---- */

/* The type as SQL, re-rendered from its parse; NULL when it does not parse. */
static char *
render_type(const char *text)
{
	strbuf sb = STRBUF_INIT;
	tm_error err;

	if (target_ddl_append_type(&sb, text, &err) != 0) {
		strbuf_free(&sb);
		return NULL;
	}
	return strbuf_steal(&sb);
}

/* How the target compares each of the stream's columns (a column the
 * target lacks is compared as text: the statement then fails, naming it). */
static int
load_columns(keyless *k, kl_table *t)
{
	const char *p[] = {t->schema, t->name};
	PGresult *r = NULL;
	int rc = sink_query(k->sink, "reading how the target compares a keyless table's columns",
	                    "SELECT a.attname, tidemark.column_match(a.atttypid, a.attcollation),"
	                    " format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
	                    " WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass"
	                    " AND a.attnum > 0 AND NOT a.attisdropped", 2, p, &r);

	for (int i = 0; rc == TM_OK && i < t->ncols; i++)
		for (int j = 0; j < PQntuples(r); j++)
			if (strcmp(PQgetvalue(r, j, 0), t->cols[i]) == 0) {
				t->match[i] = keyless_sql_match_parse(PQgetvalue(r, j, 1));
				t->types[i] = render_type(PQgetvalue(r, j, 2));
			}
	PQclear(r);
	return rc;
}

static bool
same_columns(const kl_table *t, const keyless_change *c)
{
	if (t->ncols != c->ncols || strcmp(t->schema, c->target_schema) != 0 ||
	    strcmp(t->name, c->target_table) != 0)
		return false;
	for (int i = 0; i < c->ncols; i++)
		if (strcmp(t->cols[i], c->cols[i]) != 0)
			return false;
	return true;
}

/* The table of a change, read on first use (and again when its columns
 * or names are not those the statements were built for). */
static int
table_of(keyless *k, const keyless_change *c, kl_table **out)
{
	kl_table *t;
	int rc;

	for (t = k->tables; t != NULL && t->table_id != c->table_id; t = t->next)
		;
	if (t != NULL && same_columns(t, c)) {
		*out = t;
		return TM_OK;
	}
	keyless_forget(k, c->table_id);
	t = xcalloc(1, sizeof *t);
	t->table_id = c->table_id;
	t->ncols = c->ncols;
	t->cols = xcalloc((size_t) c->ncols + 1, sizeof(char *));
	t->types = xcalloc((size_t) c->ncols + 1, sizeof(char *));
	t->match = xcalloc((size_t) c->ncols + 1, sizeof(keyless_match));
	for (int i = 0; i < c->ncols; i++) {
		t->cols[i] = xstrdup(c->cols[i]);
		t->match[i] = KEYLESS_MATCH_TEXT;
	}
	t->schema = xstrdup(c->target_schema);
	t->name = xstrdup(c->target_table);
	rc = load_columns(k, t);
	if (rc != TM_OK) {
		table_free(k, t);
		return rc;
	}
	t->next = k->tables;
	k->tables = t;
	*out = t;
	return TM_OK;
}

static keyless_sql_table
sql_table(const kl_table *t)
{
	keyless_sql_table st = {t->schema, t->name, t->ncols, (const char *const *) t->cols,
	                        t->match, (const char *const *) t->types};

	return st;
}

/* ---- statements ---- */

/* The old row's pattern: 'v' value, 'n' NULL, '-' not sent. */
static void
old_pattern(const keyless_change *c, strbuf *out)
{
	for (int i = 0; i < c->ncols; i++)
		strbuf_appendc(out, c->old_sent != NULL && !c->old_sent[i] ? '-'
		                    : c->old_row[i] == NULL ? 'n' : 'v');
}

static void
describe(strbuf *label, const keyless_change *c)
{
	strbuf_appendf(label, "%s of %s", c->op == 'u' ? "an update" : "a delete", c->display);
}

/* The update or delete statement for this change's pattern. */
static kl_stmt *
stmt_for(keyless *k, kl_table *t, const keyless_change *c)
{
	strbuf pattern = STRBUF_INIT, sql = STRBUF_INIT, label = STRBUF_INIT;
	keyless_sql_table st = sql_table(t);
	bool *set = xcalloc((size_t) c->ncols + 1, sizeof(bool));
	kl_stmt *s;

	for (int i = 0; c->op == 'u' && i < c->ncols; i++) {
		set[i] = c->unchanged == NULL || !c->unchanged[i];
		strbuf_appendc(&pattern, set[i] ? '1' : '0');
	}
	old_pattern(c, &pattern);
	for (s = t->stmts; s != NULL; s = s->next)
		if (s->op == c->op && strcmp(s->pattern, strbuf_str(&pattern)) == 0)
			break;
	if (s == NULL) {
		s = xcalloc(1, sizeof *s);
		s->op = c->op;
		s->pattern = xstrdup(strbuf_str(&pattern));
		if (c->op == 'u')
			keyless_sql_update(&sql, &st, set, s->pattern + c->ncols, &s->nparams);
		else
			keyless_sql_delete(&sql, &st, s->pattern, &s->nparams);
		s->stmt = sink_stmt_hold(k->sink, sql.data, s->nparams);
		describe(&label, c);
		sink_stmt_expect_row(k->sink, s->stmt, label.data);
		s->next = t->stmts;
		t->stmts = s;
	}
	strbuf_free(&pattern);
	strbuf_free(&sql);
	strbuf_free(&label);
	free(set);
	return s;
}

static int
apply_insert(keyless *k, kl_table *t, const keyless_change *c)
{
	strbuf sql = STRBUF_INIT;
	keyless_sql_table st = sql_table(t);
	sink_stmt *stmt;

	keyless_sql_insert(&sql, &st);
	stmt = sink_stmt_get(k->sink, sql.data, c->ncols);
	strbuf_free(&sql);
	return sink_send(k->sink, stmt, c->new_row, NULL);
}

/* The set values (update), then the old row's sent values. */
static int
apply_match(keyless *k, kl_table *t, const keyless_change *c)
{
	kl_stmt *s = stmt_for(k, t, c);
	const char **p = xcalloc((size_t) 2 * (size_t) c->ncols + 1, sizeof(char *));
	int n = 0, rc;

	for (int i = 0; c->op == 'u' && i < c->ncols; i++)
		if (c->unchanged == NULL || !c->unchanged[i])
			p[n++] = c->new_row[i];
	for (int i = 0; i < c->ncols; i++)
		if ((c->old_sent == NULL || c->old_sent[i]) && c->old_row[i] != NULL)
			p[n++] = c->old_row[i];
	rc = sink_send(k->sink, s->stmt, p, NULL);
	free(p);
	return rc;
}

static int
apply_truncate(keyless *k, const keyless_change *c)
{
	const char *schemas[] = {c->target_schema}, *names[] = {c->target_table};

	return catalog_empty_tables(k->sink, 1, schemas, names);
}

int
keyless_apply(keyless *k, const keyless_change *c)
{
	kl_table *t = NULL;
	int rc;

	if (c->op == 't')
		return apply_truncate(k, c);
	rc = table_of(k, c, &t);
	if (rc != TM_OK)
		return rc;
	return c->op == 'i' ? apply_insert(k, t, c) : apply_match(k, t, c);
}

/* ---- kept changes ---- */

static int
op_index(char op)
{
	return op == 'i' ? 0 : op == 'u' ? 1 : op == 'd' ? 2 : 3;
}

/* "{2,5}": the unchanged columns (from 1), or NULL when none. */
static char *
unchanged_literal(const keyless_change *c)
{
	strbuf sb = STRBUF_INIT;

	for (int i = 0; c->op == 'u' && c->unchanged != NULL && i < c->ncols; i++)
		if (c->unchanged[i])
			strbuf_appendf(&sb, "%s%d", sb.len > 0 ? "," : "{", i + 1);
	if (sb.len == 0) {
		strbuf_free(&sb);
		return NULL;
	}
	strbuf_appendc(&sb, '}');
	return strbuf_steal(&sb);
}

int
keyless_record(keyless *k, const keyless_change *c, uint32_t xid, tm_lsn commit_lsn)
{
	kl_table *t = NULL;
	sink_stmt **stmt;
	const char **p = xcalloc((size_t) 2 * (size_t) c->ncols + 5, sizeof(char *));
	char id[16], lsn[LSN_TEXT_MAX], x[16], op[2] = {c->op, '\0'};
	char *unchanged = unchanged_literal(c);
	int n = 0, rc = table_of(k, c, &t);

	stmt = t != NULL ? &t->record[op_index(c->op)] : NULL;
	if (rc == TM_OK && *stmt == NULL) {
		strbuf sql = STRBUF_INIT;
		int nparams;

		keyless_sql_record(&sql, c->ncols, c->op, &nparams);
		*stmt = sink_stmt_hold(k->sink, sql.data, nparams);
		strbuf_free(&sql);
	}
	snprintf(id, sizeof id, "%d", c->table_id);
	snprintf(x, sizeof x, "%u", xid);
	p[n++] = id;
	p[n++] = lsn_format(commit_lsn, lsn);
	p[n++] = x;
	p[n++] = op;
	for (int i = 0; (c->op == 'u' || c->op == 'd') && i < c->ncols; i++)
		p[n++] = c->old_sent != NULL && !c->old_sent[i] ? NULL : c->old_row[i];
	for (int i = 0; (c->op == 'i' || c->op == 'u') && i < c->ncols; i++)
		p[n++] = c->unchanged != NULL && c->unchanged[i] ? NULL : c->new_row[i];
	if (c->op == 'u')
		p[n++] = unchanged;
	if (rc == TM_OK)
		rc = sink_send(k->sink, *stmt, p, NULL);
	free(unchanged);
	free(p);
	return rc;
}

int
keyless_pending_clear(sink *s, int table_id)
{
	char id[16];
	const char *p[] = {id};

	snprintf(id, sizeof id, "%d", table_id);
	return sink_command(s, "forgetting the changes kept for a keyless table's copy",
	                    "DELETE FROM tidemark.keyless_pending WHERE table_id = $1::int", 1, p);
}

/* ---- replay ---- */

/* The kept changes after a position, in stream order: at most 1000, and
 * no more than $4 bytes of values after the first. */
static const char *const page_sql =
	"SELECT seq, xid, op, array_to_json(old)::text, array_to_json(new)::text,"
	" array_to_json(unchanged)::text FROM (SELECT q.*, sum(q.size) OVER (ORDER BY q.seq) AS upto"
	"   FROM (SELECT p.*, coalesce((SELECT sum(octet_length(v)) FROM unnest(p.old) v), 0)"
	"       + coalesce((SELECT sum(octet_length(v)) FROM unnest(p.new) v), 0) AS size"
	"     FROM tidemark.keyless_pending p WHERE p.table_id = $1::int AND p.seq > $2::bigint"
	"     ORDER BY p.seq LIMIT 1000) q) r"
	" WHERE r.upto - r.size < $3::bigint ORDER BY seq";

/* A JSON array of ncols strings or nulls (NULL text: none) into values
 * borrowed from arr; false when it has another length. */
static bool
row_values(json_t *arr, int ncols, const char **out)
{
	if (!json_is_array(arr) || (int) json_array_size(arr) != ncols)
		return false;
	for (int i = 0; i < ncols; i++)
		out[i] = json_string_value(json_array_get(arr, (size_t) i));
	return true;
}

/* One kept change (row i of a page) over the copy. */
static int
replay_one(keyless *k, const keyless_change *t, PGresult *r, int i)
{
	json_t *old = json_loads(PQgetvalue(r, i, 3), JSON_DECODE_ANY, NULL);
	json_t *new = json_loads(PQgetvalue(r, i, 4), JSON_DECODE_ANY, NULL);
	json_t *unch = json_loads(PQgetvalue(r, i, 5), JSON_DECODE_ANY, NULL);
	const char **ov = xcalloc((size_t) t->ncols + 1, sizeof(char *));
	const char **nv = xcalloc((size_t) t->ncols + 1, sizeof(char *));
	bool *unchanged = xcalloc((size_t) t->ncols + 1, sizeof(bool));
	keyless_change c = *t;
	bool ok = true;
	size_t j;
	json_t *v;
	int rc;

	c.op = PQgetvalue(r, i, 2)[0];
	c.old_row = ov;
	c.new_row = nv;
	c.old_sent = NULL;
	c.unchanged = unchanged;
	if (c.op == 'u' || c.op == 'd')
		ok = row_values(old, t->ncols, ov);
	if (ok && (c.op == 'i' || c.op == 'u'))
		ok = row_values(new, t->ncols, nv);
	json_array_foreach(unch, j, v)
		if (json_integer_value(v) >= 1 && json_integer_value(v) <= t->ncols)
			unchanged[json_integer_value(v) - 1] = true;
	rc = ok ? keyless_apply(k, &c) : TM_EXIT_INTERNAL;
	if (!ok)
		log_error("target: a change kept for %s does not have its %d columns", t->display,
		          t->ncols);
	json_decref(old);
	json_decref(new);
	json_decref(unch);
	free(ov);
	free(nv);
	free(unchanged);
	return rc;
}

int
keyless_replay(keyless *k, const keyless_change *t, const snap_visible *x, long long page_bytes,
               keyless_replayed *out)
{
	char id[16], after[24] = "0", bytes[24];
	const char *p[] = {id, after, bytes};
	int rc = TM_OK;

	memset(out, 0, sizeof *out);
	snprintf(id, sizeof id, "%d", t->table_id);
	snprintf(bytes, sizeof bytes, "%lld", page_bytes);
	for (;;) {
		PGresult *r = NULL;
		int n;

		rc = sink_query(k->sink, "reading the changes kept for a keyless table's copy", page_sql,
		                3, p, &r);
		n = rc == TM_OK ? PQntuples(r) : 0;
		for (int i = 0; rc == TM_OK && i < n; i++) {
			out->kept++;
			snprintf(after, sizeof after, "%s", PQgetvalue(r, i, 0));
			if (snap_visible_committed(x, (uint32_t) strtoul(PQgetvalue(r, i, 1), NULL, 10))) {
				out->seen++;
				continue;
			}
			rc = replay_one(k, t, r, i);
			out->applied += rc == TM_OK;
		}
		PQclear(r);
		if (rc != TM_OK || n == 0)
			return rc;
	}
}
