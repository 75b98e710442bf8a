/*
 * ddl_parse_expr.c: a generated column's expression, checked and written
 * again from its parse tree (ddl_parse_generation_expr, see ddl_parse.h).
 *
 * The text is the source catalog's pg_get_expr(), carried by a capture
 * message: untrusted. It is parsed as "SELECT <expr>"; the JSON tree must
 * hold exactly that one expression, and every node in it must be one of a
 * short list of expression nodes (constants, column references of the same
 * row, operators, casts, CASE, COALESCE, function calls, ...); functions
 * known to return sets or to be volatile, aggregates, windows, subqueries
 * and parameters are refused. What the target is given is libpg_query's
 * deparse of the protobuf tree of the same text: SQL written from the
 * tree, not the text; and only when it parses back to the same tree.
 */
#include "ddl_parse_int.h"

#include <pg_query.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

#define PREFIX "SELECT "

static const char *const allowed_nodes[] = {
	"A_Expr", "A_Const", "ColumnRef", "FuncCall", "TypeCast", "String", "Integer", "Float",
	"Boolean", "BitString", "BoolExpr", "CaseExpr", "CaseWhen", "CoalesceExpr", "NullTest",
	"BooleanTest", "MinMaxExpr", "A_ArrayExpr", "A_Indirection", "A_Indices", "RowExpr",
	"CollateClause", NULL,
};

/* Set-returning or volatile: never in a generation expression. */
static const char *const refused_functions[] = {
	"generate_series", "generate_subscripts", "unnest", "json_each", "json_each_text",
	"jsonb_each", "jsonb_each_text", "json_array_elements", "json_array_elements_text",
	"jsonb_array_elements", "jsonb_array_elements_text", "json_object_keys", "jsonb_object_keys",
	"regexp_matches", "regexp_split_to_table", "string_to_table", "jsonb_path_query",
	"json_populate_recordset", "jsonb_populate_recordset", "json_to_recordset",
	"jsonb_to_recordset", "random", "random_normal", "setseed", "now", "clock_timestamp",
	"statement_timestamp", "transaction_timestamp", "timeofday", "nextval", "currval", "setval",
	"lastval", "txid_current", "pg_current_xact_id", "gen_random_uuid", "uuid_generate_v1",
	"uuid_generate_v4", "pg_sleep", "set_config", "current_setting", "pg_read_file",
	"pg_ls_dir", "dblink", NULL,
};

/* Keys of a FuncCall that make it an aggregate or window call. */
static const char *const aggregate_keys[] = {
	"agg_order", "agg_filter", "over", "agg_within_group", "agg_star", "agg_distinct", NULL,
};

static bool
in_list(const char *const *list, const char *s)
{
	for (int i = 0; list[i] != NULL; i++)
		if (strcmp(list[i], s) == 0)
			return true;
	return false;
}

static int check_value(const json_t *v, tm_error *err);

static int
check_func(const json_t *body, tm_error *err)
{
	json_t *names = ddl_json_array(body, "funcname");
	const char *last;

	for (int i = 0; aggregate_keys[i] != NULL; i++)
		if (ddl_json_get(body, aggregate_keys[i]) != NULL)
			return tm_error_set(err, "an aggregate or window call");
	last = ddl_json_str(ddl_json_node(json_array_get(names, json_array_size(names) - 1),
	                                  "String"), "sval");
	if (last == NULL)
		return tm_error_set(err, "a function call without a name");
	if (in_list(refused_functions, last))
		return tm_error_set(err, "function %.60s returns a set or is volatile", last);
	return 0;
}

static int
check_column(const json_t *body, tm_error *err)
{
	json_t *fields = ddl_json_array(body, "fields");

	if (json_array_size(fields) != 1 || ddl_json_node(json_array_get(fields, 0), "String") == NULL)
		return tm_error_set(err, "a reference to something other than a column of the row");
	return 0;
}

/* One node {"Name": {...}}: its name must be allowed, then its body. */
static int
check_node(const char *name, const json_t *body, tm_error *err)
{
	if (!in_list(allowed_nodes, name))
		return tm_error_set(err, "%.40s is not allowed in a generation expression", name);
	if (strcmp(name, "FuncCall") == 0 && check_func(body, err) != 0)
		return -1;
	if (strcmp(name, "ColumnRef") == 0 && check_column(body, err) != 0)
		return -1;
	return check_value(body, err);
}

static int
check_value(const json_t *v, tm_error *err)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach(v, i, item)
			if (check_value(item, err) != 0)
				return -1;
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	json_object_foreach((json_t *) v, key, item) {
		/* node names are capitalized; fields are lower case */
		int rc = key[0] >= 'A' && key[0] <= 'Z' ? check_node(key, item, err)
		                                        : check_value(item, err);

		if (rc != 0)
			return -1;
	}
	return 0;
}

/* The tree must be SELECT <one expression>, nothing else. */
static int
check_tree(const json_t *root, tm_error *err)
{
	json_t *stmts = ddl_json_array(root, "stmts");
	json_t *sel = ddl_json_node(ddl_json_get(json_array_get(stmts, 0), "stmt"), "SelectStmt");
	json_t *targets = ddl_json_array(sel, "targetList");
	json_t *target = ddl_json_node(json_array_get(targets, 0), "ResTarget");
	const char *key;
	json_t *v;

	if (json_array_size(stmts) != 1 || sel == NULL || json_array_size(targets) != 1 ||
	    target == NULL || ddl_json_get(target, "val") == NULL)
		return tm_error_set(err, "not exactly one expression");
	json_object_foreach(sel, key, v)
		if (strcmp(key, "targetList") != 0 && strcmp(key, "limitOption") != 0 &&
		    strcmp(key, "op") != 0)
			return tm_error_set(err, "not exactly one expression (%.40s)", key);
	json_object_foreach(target, key, v)
		if (strcmp(key, "val") != 0 && strcmp(key, "location") != 0)
			return tm_error_set(err, "not exactly one expression (%.40s)", key);
	return check_value(ddl_json_get(target, "val"), err);
}

/* The JSON tree of sql, checked when check is set; *root new. */
static int
parse_tree(const char *sql, bool check, json_t **root, tm_error *err)
{
	PgQueryParseResult pr = pg_query_parse(sql);
	int rc = 0;

	*root = NULL;
	if (pr.error != NULL)
		rc = tm_error_set(err, "it does not parse: %.200s",
		                  pr.error->message ? pr.error->message : "syntax error");
	else if ((*root = json_loads(pr.parse_tree ? pr.parse_tree : "", 0, NULL)) == NULL)
		rc = tm_error_set(err, "its parse tree cannot be read (nested too deeply?)");
	else if (check)
		rc = check_tree(*root, err);
	pg_query_free_parse_result(pr);
	return rc;
}

/* Drops every "location" (byte offsets differ between two spellings). */
static void
strip_locations(json_t *v)
{
	const char *key;
	json_t *item;
	void *tmp;
	size_t i;

	if (json_is_array(v))
		json_array_foreach(v, i, item)
			strip_locations(item);
	else if (json_is_object(v))
		json_object_foreach_safe(v, tmp, key, item) {
			if (strcmp(key, "location") == 0 || strcmp(key, "stmt_len") == 0)
				json_object_del(v, key);
			else
				strip_locations(item);
		}
}

/* The rendering must parse back to the very tree of the text (libpg_query
 * 15-4.0 writes some trees as SQL that does not parse, such as a
 * subscripted ARRAY[...] without its brackets). */
static int
same_tree(json_t *tree, const char *rendered, tm_error *err)
{
	strbuf sql = STRBUF_INIT;
	json_t *again = NULL;
	tm_error why;
	int rc;

	strbuf_append(&sql, PREFIX);
	strbuf_append(&sql, rendered);
	rc = parse_tree(strbuf_str(&sql), false, &again, &why);
	if (rc == 0) {
		strip_locations(tree);
		strip_locations(again);
		if (!json_equal(tree, again))
			rc = -1;
	}
	if (rc != 0)
		tm_error_set(err, "libpg_query cannot write it back as the same expression");
	json_decref(again);
	strbuf_free(&sql);
	return rc;
}

/* libpg_query's SQL for the protobuf tree of sql, without PREFIX. */
static int
deparse(const char *sql, strbuf *out, tm_error *err)
{
	PgQueryProtobufParseResult pr = pg_query_parse_protobuf(sql);
	PgQueryDeparseResult dr = {0};
	int rc = 0;

	if (pr.error != NULL)
		rc = tm_error_set(err, "it does not parse");
	else {
		dr = pg_query_deparse_protobuf(pr.parse_tree);
		if (dr.error != NULL || dr.query == NULL ||
		    strncmp(dr.query, PREFIX, strlen(PREFIX)) != 0 || dr.query[strlen(PREFIX)] == '\0')
			rc = tm_error_set(err, "libpg_query cannot write it back");
		else
			strbuf_append(out, dr.query + strlen(PREFIX));
		pg_query_free_deparse_result(dr);
	}
	pg_query_free_protobuf_parse_result(pr);
	return rc;
}

int
ddl_parse_generation_expr(const char *expr, strbuf *out, tm_error *err)
{
	size_t len = expr != NULL ? strlen(expr) : 0;
	size_t at = 0;
	strbuf sql = STRBUF_INIT, rendered = STRBUF_INIT;
	json_t *tree = NULL;
	int rc;

	if (len == 0)
		return tm_error_set(err, "the expression is empty");
	if (len > DDL_PARSE_MAX_EXPR)
		return tm_error_set(err, "the expression is longer than %d bytes", DDL_PARSE_MAX_EXPR);
	if (!ddl_scan_utf8(expr, len, &at))
		return tm_error_set(err, "the expression is not valid UTF-8 (byte %zu)", at + 1);
	if (ddl_scan_depth(expr, len, &at) > DDL_PARSE_MAX_EXPR_DEPTH)
		return tm_error_set(err, "the expression is nested more than %d levels deep",
		                    DDL_PARSE_MAX_EXPR_DEPTH);
	strbuf_append(&sql, PREFIX);
	strbuf_append(&sql, expr);
	rc = parse_tree(strbuf_str(&sql), true, &tree, err);
	if (rc == 0)
		rc = deparse(strbuf_str(&sql), &rendered, err);
	if (rc == 0)
		rc = same_tree(tree, strbuf_str(&rendered), err);
	/* the rendering puts each operation in parentheses: a long chain of
	 * them (a + 1 + 1 ...) is accepted only if its rendering is, so that
	 * what is rendered once reads back */
	if (rc == 0 && ddl_scan_depth(strbuf_str(&rendered), rendered.len, &at) >
	                   DDL_PARSE_MAX_EXPR_DEPTH)
		rc = tm_error_set(err, "the expression, rendered, is nested more than %d levels deep",
		                  DDL_PARSE_MAX_EXPR_DEPTH);
	if (rc == 0)
		strbuf_append(out, strbuf_str(&rendered));
	json_decref(tree);
	strbuf_free(&rendered);
	strbuf_free(&sql);
	return rc;
}
