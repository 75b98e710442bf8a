/*
 * ddl_parse_stmt.c: one statement of the parse tree, by node type.
 *
 * Each handler reads the node's body, sets w->cls when the statement is not
 * DDL, and pushes its changes. A handler that returns -1 (w->err set) has
 * met a tree it cannot read: the caller drops what the statement pushed and
 * records it as UNPARSABLE.
 */
#include "ddl_parse_int.h"

#include <string.h>

/* Deepest JSON nesting searched for a function call (jansson refuses to
 * load deeper trees anyway). */
#define FUNCCALL_SEARCH_DEPTH 2048

typedef int (*node_handler) (ddl_walk *w, const json_t *body);

int
ddl_walk_relation(ddl_walk *w, const json_t *rangevar, ddl_parse_change *ch)
{
	const char *relname = ddl_json_str(rangevar, "relname");
	const char *schema = ddl_json_str(rangevar, "schemaname");

	if (relname == NULL)
		return tm_error_set(w->err, "relation name missing");
	ch->table = ddl_walk_strdup(w, relname);
	ch->schema = ddl_walk_strdup(w, schema != NULL ? schema : w->default_schema);
	ch->only = !ddl_json_bool(rangevar, "inh");
	return 0;
}

/* OTHER, on the statement's "relation" when it has one (IndexStmt, ...). */
int
ddl_walk_other(ddl_walk *w, const char *node, const json_t *body, const char *detail)
{
	ddl_parse_change ch = {0};
	json_t *rel = ddl_json_get(body, "relation");

	ch.kind = DDL_PARSE_OTHER;
	ch.node = ddl_walk_strdup(w, node);
	ch.detail = ddl_walk_strdup(w, detail);
	if (ddl_json_str(rel, "relname") != NULL)
		ddl_walk_relation(w, rel, &ch);
	return ddl_walk_push(w, &ch);
}

/* The first FuncCall below v, depth first. 1 with *call set (NULL when the
 * tree is too deep to search), 0 when there is none. */
static int
find_funccall(const json_t *v, int depth, const json_t **call)
{
	const char *key;
	json_t *child;
	size_t i;

	if (depth > FUNCCALL_SEARCH_DEPTH) {
		*call = NULL;
		return 1;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, child)
			if (find_funccall(child, depth + 1, call))
				return 1;
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *) v, key, child) {
			if (strcmp(key, "FuncCall") == 0 && json_is_object(child)) {
				*call = child;
				return 1;
			}
			if (find_funccall(child, depth + 1, call))
				return 1;
		}
	}
	return 0;
}

static int
push_opaque(ddl_walk *w, const char *node, const json_t *funccall)
{
	ddl_parse_change ch = {0};

	w->cls = DDL_PARSE_STMT_OPAQUE;
	ch.kind = DDL_PARSE_OPAQUE;
	ch.node = ddl_walk_strdup(w, node);
	if (funccall != NULL)
		ch.detail = ddl_walk_quoted_names(w, ddl_json_array(funccall, "funcname"));
	return ddl_walk_push(w, &ch);
}

/* CREATE TABLE ... AS / SELECT ... INTO: the query decides the columns. */
static int
push_create_from_query(ddl_walk *w, const json_t *into, bool if_not_exists)
{
	ddl_parse_change ch = {0};
	json_t *rel = ddl_json_get(into, "rel");

	ch.kind = DDL_PARSE_CREATE_TABLE;
	if (ddl_walk_relation(w, rel, &ch) != 0)
		return -1;
	ch.only = false;
	ch.persistence = ddl_json_char(rel, "relpersistence");
	ch.columns_from_catalog = true;
	ch.if_exists = if_not_exists;
	return ddl_walk_push(w, &ch);
}

/*
 * SELECT: SELECT ... INTO creates a table; a SELECT that calls a function
 * anywhere may have run DDL inside it (OPAQUE); any other is DML.
 */
static int
walk_select(ddl_walk *w, const json_t *body)
{
	const json_t *call = NULL;
	json_t *into = ddl_json_get(body, "intoClause");

	if (into != NULL)
		return push_create_from_query(w, into, false);
	if (find_funccall(body, 0, &call))
		return push_opaque(w, "SelectStmt", call);
	w->cls = DDL_PARSE_STMT_DML;
	return 0;
}

static int
walk_create_table_as(ddl_walk *w, const json_t *body)
{
	if (!ddl_json_str_is(body, "objtype", "OBJECT_TABLE"))
		return ddl_walk_other(w, "CreateTableAsStmt", NULL, ddl_json_str(body, "objtype"));
	return push_create_from_query(w, ddl_json_get(body, "into"),
								  ddl_json_bool(body, "if_not_exists"));
}

static int
walk_do(ddl_walk *w, const json_t *body)
{
	return push_opaque(w, "DoStmt", NULL);
}

static int
walk_call(ddl_walk *w, const json_t *body)
{
	return push_opaque(w, "CallStmt", ddl_json_get(body, "funccall"));
}

/* EXECUTE of a prepared statement: its text is not here. */
static int
walk_execute(ddl_walk *w, const json_t *body)
{
	return push_opaque(w, "ExecuteStmt", NULL);
}

/* EXPLAIN [ANALYZE] is read as the statement it explains. */
static int
walk_explain(ddl_walk *w, const json_t *body)
{
	json_t *query = ddl_json_get(body, "query");
	const char *node = ddl_json_node_name(query);

	if (node == NULL || strcmp(node, "ExplainStmt") == 0)
		return tm_error_set(w->err, "EXPLAIN without a statement");
	return ddl_walk_stmt(w, node, ddl_json_node_body(query));
}

/* The parent of CREATE TABLE ... PARTITION OF (its one inhRelation). */
static int
read_partition_parent(ddl_walk *w, const json_t *body, ddl_parse_change *ch)
{
	json_t *parents = ddl_json_array(body, "inhRelations");
	ddl_parse_change parent = {0};

	if (json_array_size(parents) != 1)
		return tm_error_set(w->err, "PARTITION OF without one parent");
	if (ddl_walk_relation(w, ddl_json_node(json_array_get(parents, 0), "RangeVar"), &parent) != 0)
		return -1;
	ch->parent_schema = parent.schema;
	ch->parent_table = parent.table;
	return 0;
}

/* A table constraint of CREATE TABLE: only the primary key is kept. */
static int
read_table_constraint(ddl_walk *w, const json_t *con, ddl_parse_change *ch)
{
	if (!ddl_json_str_is(con, "contype", "CONSTR_PRIMARY") || ch->n_key_columns > 0)
		return 0;
	ch->constraint_name = ddl_walk_strdup(w, ddl_json_str(con, "conname"));
	ch->index_name = ddl_walk_strdup(w, ddl_json_str(con, "indexname"));
	return ddl_walk_names(w, ddl_json_array(con, "keys"), &ch->key_columns, &ch->n_key_columns);
}

static int
read_table_element(ddl_walk *w, const json_t *elt, ddl_parse_change *ch)
{
	json_t *body;

	if ((body = ddl_json_node(elt, "ColumnDef")) != NULL) {
		ddl_parse_column *col = &ch->columns[ch->n_columns];

		if (ddl_walk_column(w, body, col) != 0)
			return -1;
		ch->n_columns++;
		if (col->primary_key && ch->n_key_columns == 0) {
			ch->key_columns = arena_alloc(&w->res->mem, sizeof(*ch->key_columns));
			ch->key_columns[0] = col->name;
			ch->n_key_columns = 1;
		}
	} else if ((body = ddl_json_node(elt, "Constraint")) != NULL)
		return read_table_constraint(w, body, ch);
	else if (ddl_json_node(elt, "TableLikeClause") != NULL) {
		ch->like = true;
		ch->columns_from_catalog = true;
	}
	return 0;
}

static int
walk_create(ddl_walk *w, const json_t *body)
{
	ddl_parse_change ch = {0};
	json_t *rel = ddl_json_get(body, "relation");
	json_t *elts = ddl_json_array(body, "tableElts");
	size_t n = json_array_size(elts);

	ch.kind = DDL_PARSE_CREATE_TABLE;
	if (ddl_walk_relation(w, rel, &ch) != 0)
		return -1;
	ch.only = false;
	ch.persistence = ddl_json_char(rel, "relpersistence");
	ch.if_exists = ddl_json_bool(body, "if_not_exists");
	ch.partitioned = ddl_json_get(body, "partspec") != NULL;
	if (n > 0)
		ch.columns = arena_zalloc(&w->res->mem, n * sizeof(*ch.columns));
	for (size_t i = 0; i < n; i++)
		if (read_table_element(w, json_array_get(elts, i), &ch) != 0)
			return -1;
	if (ddl_json_get(body, "partbound") != NULL && read_partition_parent(w, body, &ch) != 0)
		return -1;
	if (ddl_json_array(body, "inhRelations") != NULL || ddl_json_get(body, "ofTypename") != NULL)
		ch.columns_from_catalog = true;
	return ddl_walk_push(w, &ch);
}

/* DROP TABLE a, s.b: one change per table. */
static int
walk_drop(ddl_walk *w, const json_t *body)
{
	json_t *objects = ddl_json_array(body, "objects");
	size_t n = json_array_size(objects);

	if (!ddl_json_str_is(body, "removeType", "OBJECT_TABLE"))
		return ddl_walk_other(w, "DropStmt", NULL, ddl_json_str(body, "removeType"));
	for (size_t i = 0; i < n; i++) {
		ddl_parse_change ch = {0};
		const char **names;
		size_t n_names;

		if (ddl_walk_names(w, ddl_json_array(ddl_json_node(json_array_get(objects, i), "List"), "items"),
						   &names, &n_names) != 0)
			return -1;
		if (n_names == 0 || n_names > 3)
			return tm_error_set(w->err, "DROP TABLE name has %zu parts", n_names);
		ch.kind = DDL_PARSE_DROP_TABLE;
		ch.table = names[n_names - 1];
		ch.schema = n_names > 1 ? names[n_names - 2] : NULL;
		ch.if_exists = ddl_json_bool(body, "missing_ok");
		ch.cascade = ddl_json_str_is(body, "behavior", "DROP_CASCADE");
		ddl_walk_push(w, &ch);
	}
	return 0;
}

/* Pushes *ch on the statement's relation, its new name (or schema) read
 * from body[key]: RENAME and SET SCHEMA. */
static int
push_renaming(ddl_walk *w, const json_t *body, ddl_parse_change *ch, const char *key)
{
	if (ddl_walk_relation(w, ddl_json_get(body, "relation"), ch) != 0)
		return -1;
	ch->new_name = ddl_walk_strdup(w, ddl_json_str(body, key));
	if (ch->new_name == NULL)
		return tm_error_set(w->err, "%s without %s", ddl_parse_kind_name(ch->kind), key);
	ch->if_exists = ddl_json_bool(body, "missing_ok");
	return ddl_walk_push(w, ch);
}

/*
 * ALTER TABLE ... RENAME [COLUMN]. relationType is the enum's first value
 * (OBJECT_ACCESS_METHOD) when not set, so renameType alone decides a table
 * rename; a column rename is on a table only when relationType says so.
 */
static int
walk_rename(ddl_walk *w, const json_t *body)
{
	ddl_parse_change ch = {0};
	const char *type = ddl_json_str(body, "renameType");

	if (ddl_json_str_is(body, "renameType", "OBJECT_TABLE"))
		ch.kind = DDL_PARSE_RENAME_TABLE;
	else if (ddl_json_str_is(body, "renameType", "OBJECT_COLUMN") &&
			 ddl_json_str_is(body, "relationType", "OBJECT_TABLE")) {
		ch.kind = DDL_PARSE_RENAME_COLUMN;
		ch.column.name = ddl_walk_strdup(w, ddl_json_str(body, "subname"));
		if (ch.column.name == NULL)
			return tm_error_set(w->err, "RENAME COLUMN without a column");
	} else
		return ddl_walk_other(w, "RenameStmt", body, type);
	return push_renaming(w, body, &ch, "newname");
}

static int
walk_set_schema(ddl_walk *w, const json_t *body)
{
	ddl_parse_change ch = {0};

	if (!ddl_json_str_is(body, "objectType", "OBJECT_TABLE"))
		return ddl_walk_other(w, "AlterObjectSchemaStmt", body, ddl_json_str(body, "objectType"));
	ch.kind = DDL_PARSE_SET_SCHEMA;
	return push_renaming(w, body, &ch, "newschema");
}

/* CREATE SCHEMA s CREATE TABLE t ...: the elements are statements of their
 * own, their unqualified names in the new schema. */
static int
walk_create_schema(ddl_walk *w, const json_t *body)
{
	json_t *elts = ddl_json_array(body, "schemaElts");
	const char *saved = w->default_schema;
	int rc = ddl_walk_other(w, "CreateSchemaStmt", NULL, NULL);

	w->default_schema = ddl_json_str(body, "schemaname");
	for (size_t i = 0; rc == 0 && i < json_array_size(elts); i++) {
		json_t *elt = json_array_get(elts, i);
		const char *node = ddl_json_node_name(elt);

		if (node == NULL)
			rc = tm_error_set(w->err, "CREATE SCHEMA element is not a statement");
		else
			rc = ddl_walk_stmt(w, node, ddl_json_node_body(elt));
	}
	w->default_schema = saved;
	w->cls = DDL_PARSE_STMT_DDL;
	return rc;
}

/* Nodes read here; a NULL handler only sets the statement's class. */
static const struct {
	const char *node;
	node_handler fn;
	ddl_parse_stmt_class cls;
} handlers[] = {
	{"CreateStmt", walk_create, DDL_PARSE_STMT_DDL},
	{"CreateTableAsStmt", walk_create_table_as, DDL_PARSE_STMT_DDL},
	{"DropStmt", walk_drop, DDL_PARSE_STMT_DDL},
	{"RenameStmt", walk_rename, DDL_PARSE_STMT_DDL},
	{"AlterObjectSchemaStmt", walk_set_schema, DDL_PARSE_STMT_DDL},
	{"AlterTableStmt", ddl_walk_alter_table, DDL_PARSE_STMT_DDL},
	{"CreateSchemaStmt", walk_create_schema, DDL_PARSE_STMT_DDL},
	{"SelectStmt", walk_select, DDL_PARSE_STMT_DDL},
	{"DoStmt", walk_do, DDL_PARSE_STMT_DDL},
	{"CallStmt", walk_call, DDL_PARSE_STMT_DDL},
	{"ExecuteStmt", walk_execute, DDL_PARSE_STMT_DDL},
	{"ExplainStmt", walk_explain, DDL_PARSE_STMT_DDL},
	{"InsertStmt", NULL, DDL_PARSE_STMT_DML},
	{"UpdateStmt", NULL, DDL_PARSE_STMT_DML},
	{"DeleteStmt", NULL, DDL_PARSE_STMT_DML},
	{"MergeStmt", NULL, DDL_PARSE_STMT_DML},
	{"CopyStmt", NULL, DDL_PARSE_STMT_DML},
	{"TruncateStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"TransactionStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"VariableSetStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"VariableShowStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"VacuumStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"ClusterStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"ReindexStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"LockStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"NotifyStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"ListenStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"UnlistenStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"CheckPointStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"DiscardStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"PrepareStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"DeallocateStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"DeclareCursorStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"FetchStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"ClosePortalStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"LoadStmt", NULL, DDL_PARSE_STMT_IGNORED},
	{"ConstraintsSetStmt", NULL, DDL_PARSE_STMT_IGNORED},
};

/* One statement node (name and body); unknown nodes are OTHER. */
int
ddl_walk_stmt(ddl_walk *w, const char *node, const json_t *body)
{
	if (body == NULL)
		return tm_error_set(w->err, "%s has no body", node);
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
		if (strcmp(handlers[i].node, node) != 0)
			continue;
		if (handlers[i].fn != NULL)
			return handlers[i].fn(w, body);
		w->cls = handlers[i].cls;
		return 0;
	}
	return ddl_walk_other(w, node, body, NULL);
}
