/*
 * ddl_parse.c: ddl_parse_text() and the result's lifecycle.
 *
 * The text is checked (length, UTF-8, estimated depth), parsed whole with
 * pg_query_parse, and its JSON loaded with jansson; each raw statement is
 * then cut out of the text (stmt_location, stmt_len), fingerprinted, and
 * walked by ddl_parse_stmt.c. Every libpg_query and jansson result is
 * freed before returning, on every path.
 */
#include "ddl_parse_int.h"

#include <pg_query.h>
#include <string.h>

#define RESULT_BLOCK_SIZE 8192

static const char *const kind_names[DDL_PARSE_KIND_COUNT] = {
	[DDL_PARSE_CREATE_TABLE] = "CREATE_TABLE",
	[DDL_PARSE_DROP_TABLE] = "DROP_TABLE",
	[DDL_PARSE_RENAME_TABLE] = "RENAME_TABLE",
	[DDL_PARSE_SET_SCHEMA] = "SET_SCHEMA",
	[DDL_PARSE_ADD_COLUMN] = "ADD_COLUMN",
	[DDL_PARSE_DROP_COLUMN] = "DROP_COLUMN",
	[DDL_PARSE_RENAME_COLUMN] = "RENAME_COLUMN",
	[DDL_PARSE_ALTER_COLUMN_TYPE] = "ALTER_COLUMN_TYPE",
	[DDL_PARSE_SET_NOT_NULL] = "SET_NOT_NULL",
	[DDL_PARSE_DROP_NOT_NULL] = "DROP_NOT_NULL",
	[DDL_PARSE_SET_DEFAULT] = "SET_DEFAULT",
	[DDL_PARSE_DROP_DEFAULT] = "DROP_DEFAULT",
	[DDL_PARSE_ADD_PRIMARY_KEY] = "ADD_PRIMARY_KEY",
	[DDL_PARSE_DROP_CONSTRAINT] = "DROP_CONSTRAINT",
	[DDL_PARSE_REPLICA_IDENTITY] = "REPLICA_IDENTITY",
	[DDL_PARSE_ATTACH_PARTITION] = "ATTACH_PARTITION",
	[DDL_PARSE_DETACH_PARTITION] = "DETACH_PARTITION",
	[DDL_PARSE_OTHER] = "OTHER",
	[DDL_PARSE_OPAQUE] = "OPAQUE",
	[DDL_PARSE_UNPARSABLE] = "UNPARSABLE",
};

const char *
ddl_parse_kind_name(ddl_parse_kind kind)
{
	if ((unsigned) kind >= DDL_PARSE_KIND_COUNT)
		return "?";
	return kind_names[kind];
}

const char *
ddl_parse_stmt_class_name(ddl_parse_stmt_class cls)
{
	switch (cls) {
	case DDL_PARSE_STMT_DDL: return "ddl";
	case DDL_PARSE_STMT_DML: return "dml";
	case DDL_PARSE_STMT_OPAQUE: return "opaque";
	case DDL_PARSE_STMT_IGNORED: return "ignored";
	case DDL_PARSE_STMT_UNPARSABLE: return "unparsable";
	}
	return "?";
}

static void
result_init(ddl_parse_result *res)
{
	memset(res, 0, sizeof(*res));
	arena_init(&res->mem, RESULT_BLOCK_SIZE);
}

void
ddl_parse_result_free(ddl_parse_result *res)
{
	if (res == NULL)
		return;
	arena_free(&res->mem);
	memset(res, 0, sizeof(*res));
}

/* The libpg_query fingerprint of text as 16 hex digits, or "". */
static void
fingerprint(const char *text, char out[17])
{
	PgQueryFingerprintResult fr = pg_query_fingerprint(text);

	out[0] = '\0';
	if (fr.error == NULL && fr.fingerprint_str != NULL && strlen(fr.fingerprint_str) == 16)
		memcpy(out, fr.fingerprint_str, 17);
	pg_query_free_fingerprint_result(fr);
}

/* Adds a statement for bytes [start, end) of the text, trimmed; returns
 * its index. */
static size_t
push_stmt(ddl_walk *w, size_t start, size_t end)
{
	ddl_parse_result *res = w->res;
	ddl_parse_stmt *st;

	ddl_scan_trim(w->sql, &start, &end);
	res->stmts = ddl_walk_grow(w, res->stmts, res->n_stmts, &w->stmts_cap, sizeof(*res->stmts));
	st = &res->stmts[res->n_stmts];
	memset(st, 0, sizeof(*st));
	st->text = arena_strndup(&res->mem, w->sql + start, end - start);
	st->offset = start;
	st->length = end - start;
	st->first_change = res->n_changes;
	return res->n_stmts++;
}

/* Closes statement idx: its class and the changes it gave. */
static void
finish_stmt(ddl_walk *w, size_t idx)
{
	ddl_parse_stmt *st = &w->res->stmts[idx];

	st->cls = w->cls;
	st->n_changes = w->res->n_changes - st->first_change;
	if (w->cls == DDL_PARSE_STMT_DML)
		w->res->n_dml++;
}

static void
push_unparsable(ddl_walk *w, const char *msg, int cursor)
{
	ddl_parse_change ch = {0};

	ch.kind = DDL_PARSE_UNPARSABLE;
	ch.detail = ddl_walk_strdup(w, msg);
	ch.cursor_pos = cursor;
	ddl_walk_push(w, &ch);
	w->cls = DDL_PARSE_STMT_UNPARSABLE;
	w->res->unparsable = true;
}

/* The whole text as one UNPARSABLE statement. cursor: 1-based character
 * position, 0 when unknown. Always returns 0. */
static int
unparsable_text(ddl_walk *w, int cursor, const char *msg)
{
	size_t idx = push_stmt(w, 0, w->sql_len);

	w->stmt_index = idx;
	push_unparsable(w, msg, cursor);
	finish_stmt(w, idx);
	return 0;
}

/* One raw statement: {"stmt": node, "stmt_location": n, "stmt_len": n}. */
static void
walk_one(ddl_walk *w, const json_t *raw, size_t start, size_t end)
{
	tm_error why = {{0}};
	json_t *node = ddl_json_get(raw, "stmt");
	const char *name = ddl_json_node_name(node);
	size_t idx = push_stmt(w, start, end);
	ddl_parse_stmt *st = &w->res->stmts[idx];
	int rc;

	st->node = ddl_walk_strdup(w, name);
	fingerprint(st->text, st->fingerprint);
	w->stmt_index = idx;
	w->cls = DDL_PARSE_STMT_DDL;
	w->err = &why;
	if (name == NULL)
		rc = tm_error_set(&why, "statement is not a parse node");
	else
		rc = ddl_walk_stmt(w, name, ddl_json_node_body(node));
	if (rc != 0) {
		w->res->n_changes = w->res->stmts[idx].first_change;
		push_unparsable(w, why.msg, ddl_scan_char_pos(w->sql, w->res->stmts[idx].offset));
	}
	w->err = NULL;
	finish_stmt(w, idx);
}

/* stmt_location is left out when 0, stmt_len when the statement runs to
 * the end of the text. */
static int
walk_stmts(ddl_walk *w, const json_t *root, tm_error *err)
{
	json_t *stmts = ddl_json_array(root, "stmts");
	size_t n = json_array_size(stmts);

	if (stmts == NULL)
		return tm_error_set(err, "libpg_query parse tree has no statement list");
	for (size_t i = 0; i < n; i++) {
		json_t *raw = json_array_get(stmts, i);
		int64_t loc = ddl_json_int(raw, "stmt_location", 0);
		int64_t len = ddl_json_int(raw, "stmt_len", 0);

		if (loc < 0 || (uint64_t) loc > w->sql_len || len < 0 ||
			(uint64_t) len > w->sql_len - (size_t) loc)
			return tm_error_set(err, "statement %zu lies outside the text", i + 1);
		walk_one(w, raw, (size_t) loc, len == 0 ? w->sql_len : (size_t) (loc + len));
	}
	return 0;
}

/* The checks made before the parser sees the text; 1 when it was refused
 * (and recorded UNPARSABLE). */
static int
refuse_text(ddl_walk *w)
{
	tm_error msg;
	size_t at;
	size_t depth;

	if (w->sql_len > DDL_PARSE_MAX_TEXT) {
		tm_error_set(&msg, "statement text is longer than %d bytes", DDL_PARSE_MAX_TEXT);
		return unparsable_text(w, 0, msg.msg) + 1;
	}
	if (!ddl_scan_utf8(w->sql, w->sql_len, &at)) {
		tm_error_set(&msg, "statement text is not valid UTF-8 (byte %zu)", at + 1);
		return unparsable_text(w, ddl_scan_char_pos(w->sql, at), msg.msg) + 1;
	}
	depth = ddl_scan_depth(w->sql, w->sql_len, &at);
	if (depth > DDL_PARSE_MAX_DEPTH) {
		tm_error_set(&msg, "statement nested too deeply to parse safely (about %zu levels, limit %d)",
					 depth, DDL_PARSE_MAX_DEPTH);
		return unparsable_text(w, ddl_scan_char_pos(w->sql, at), msg.msg) + 1;
	}
	return 0;
}

/* jansson refuses trees deeper than its limit, and bytes that are not
 * UTF-8: those texts are UNPARSABLE; anything else is a failure. */
static int
load_failed(ddl_walk *w, const json_error_t *jerr, tm_error *err)
{
	tm_error msg;

	switch (json_error_code(jerr)) {
	case json_error_stack_overflow:
		tm_error_set(&msg, "statement nested too deeply to read (%s)", jerr->text);
		return unparsable_text(w, 0, msg.msg);
	case json_error_invalid_utf8:
		tm_error_set(&msg, "statement text is not valid UTF-8 (%s)", jerr->text);
		return unparsable_text(w, 0, msg.msg);
	default:
		return tm_error_set(err, "cannot read libpg_query's parse tree: %s", jerr->text);
	}
}

static int
parse_and_walk(ddl_walk *w, tm_error *err)
{
	PgQueryParseResult pr = pg_query_parse(w->sql);
	bool have_tree = pr.error == NULL && pr.parse_tree != NULL;
	json_error_t jerr;
	json_t *root = NULL;
	int rc;

	if (pr.error != NULL) {
		rc = unparsable_text(w, pr.error->cursorpos,
							 pr.error->message != NULL ? pr.error->message : "syntax error");
		pg_query_free_parse_result(pr);
		return rc;
	}
	if (have_tree)
		root = json_loads(pr.parse_tree, 0, &jerr);
	pg_query_free_parse_result(pr);
	if (!have_tree)
		return tm_error_set(err, "libpg_query gave neither a parse tree nor an error");
	if (root == NULL)
		return load_failed(w, &jerr, err);
	rc = walk_stmts(w, root, err);
	json_decref(root);
	return rc;
}

int
ddl_parse_text(const char *sql, ddl_parse_result *out, tm_error *err)
{
	ddl_walk w;
	int rc;

	if (out == NULL)
		return tm_error_set(err, "ddl_parse_text: no result to fill");
	result_init(out);
	if (sql == NULL)
		return tm_error_set(err, "ddl_parse_text: no statement text");
	memset(&w, 0, sizeof(w));
	w.res = out;
	w.sql = sql;
	w.sql_len = strlen(sql);
	if (refuse_text(&w))
		return 0;
	rc = parse_and_walk(&w, err);
	if (rc != 0) {
		ddl_parse_result_free(out);
		result_init(out);
	}
	return rc;
}
