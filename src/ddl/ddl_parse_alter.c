/*
 * ddl_parse_alter.c: ALTER TABLE, one change per subcommand in order, and
 * column definitions (shared with CREATE TABLE).
 *
 * AlterTableStmt: {"relation": RangeVar, "cmds": [{"AlterTableCmd": {
 *   "subtype": "AT_...", "name": column or constraint, "def": node,
 *   "behavior": "DROP_CASCADE", "missing_ok": true}}], "objtype": ...,
 *   "missing_ok": true}
 */
#include "ddl_parse_int.h"

#include <string.h>

typedef int (*cmd_handler) (ddl_walk *w, const json_t *cmd, ddl_parse_change *ch);

static void
read_column_constraint(const json_t *con, ddl_parse_column *col)
{
	const char *type = ddl_json_str(con, "contype");

	if (type == NULL)
		return;
	if (strcmp(type, "CONSTR_NOTNULL") == 0)
		col->not_null = true;
	else if (strcmp(type, "CONSTR_DEFAULT") == 0)
		col->has_default = true;
	else if (strcmp(type, "CONSTR_PRIMARY") == 0)
		col->primary_key = true;
	else if (strcmp(type, "CONSTR_IDENTITY") == 0)
		col->identity = true;
	else if (strcmp(type, "CONSTR_GENERATED") == 0)
		col->generated = true;
}

/* COLLATE of a ColumnDef, quoted; NULL when none. */
static const char *
read_collation(ddl_walk *w, const json_t *coldef)
{
	json_t *coll = ddl_json_get(coldef, "collClause");

	return ddl_walk_quoted_names(w, ddl_json_array(coll, "collname"));
}

/*
 * A ColumnDef: name, type (absent for the column options of PARTITION OF
 * and OF type), collation, and what its constraints declare.
 */
int
ddl_walk_column(ddl_walk *w, const json_t *coldef, ddl_parse_column *col)
{
	json_t *type_name = ddl_json_get(coldef, "typeName");
	json_t *cons = ddl_json_array(coldef, "constraints");
	size_t n = json_array_size(cons);

	memset(col, 0, sizeof(*col));
	col->name = ddl_walk_strdup(w, ddl_json_str(coldef, "colname"));
	if (col->name == NULL)
		return tm_error_set(w->err, "column definition without a name");
	if (type_name != NULL && ddl_type_read(w, type_name, &col->type) != 0)
		return -1;
	col->collation = read_collation(w, coldef);
	for (size_t i = 0; i < n; i++)
		read_column_constraint(ddl_json_node(json_array_get(cons, i), "Constraint"), col);
	return 0;
}

/* The column a subcommand acts on ("name"): all that DROP COLUMN, SET /
 * DROP NOT NULL say. */
static int
cmd_column(ddl_walk *w, const json_t *cmd, ddl_parse_change *ch)
{
	ch->column.name = ddl_walk_strdup(w, ddl_json_str(cmd, "name"));
	if (ch->column.name == NULL)
		return tm_error_set(w->err, "%s without a column", ddl_json_str(cmd, "subtype"));
	return 0;
}

static int
cmd_add_column(ddl_walk *w, const json_t *cmd, ddl_parse_change *ch)
{
	json_t *coldef = ddl_json_node(ddl_json_get(cmd, "def"), "ColumnDef");

	if (coldef == NULL)
		return tm_error_set(w->err, "ADD COLUMN without a column definition");
	if (ddl_walk_column(w, coldef, &ch->column) != 0)
		return -1;
	if (ch->column.type.canonical == NULL)
		return tm_error_set(w->err, "ADD COLUMN without a type");
	return 0;
}

/* ---- USING ---- */

/* The smallest parse location in a tree: where its text starts (an
 * operator's or a cast's own location is past its first operand's). */
static void
min_location(const json_t *v, int depth, json_int_t *min)
{
	const char *key;
	json_t *item;
	size_t i;

	if (depth > DDL_PARSE_MAX_DEPTH)
		return;
	if (json_is_array(v))
		json_array_foreach(v, i, item) min_location(item, depth + 1, min);
	if (!json_is_object(v))
		return;
	json_object_foreach((json_t *) v, key, item) {
		if (strcmp(key, "location") == 0 && json_is_integer(item) &&
		    json_integer_value(item) >= 0 && (*min < 0 || json_integer_value(item) < *min))
			*min = json_integer_value(item);
		else
			min_location(item, depth + 1, min);
	}
}

/* The USING expression's text, trimmed; NULL when its place is unknown. */
static const char *
using_text(ddl_walk *w, const json_t *expr)
{
	json_int_t start = -1;
	size_t end;

	min_location(expr, 0, &start);
	if (start < 0 || (size_t) start >= w->sql_len)
		return NULL;
	end = ddl_scan_expr_end(w->sql, w->sql_len, (size_t) start);
	return arena_strndup(&w->res->mem, w->sql + start, end - (size_t) start);
}

/* A ColumnRef of the column itself, unqualified. */
static bool
is_the_column(const json_t *node, const char *column)
{
	json_t *fields = ddl_json_array(ddl_json_node(node, "ColumnRef"), "fields");

	return json_array_size(fields) == 1 && column != NULL &&
	       ddl_json_str_is(ddl_json_node(json_array_get(fields, 0), "String"), "sval", column);
}

static bool
same_typmods(const ddl_parse_type *a, const ddl_parse_type *b)
{
	if (a->n_typmods != b->n_typmods)
		return false;
	for (size_t i = 0; i < a->n_typmods; i++)
		if (a->typmods[i].kind != b->typmods[i].kind || a->typmods[i].ival != b->typmods[i].ival ||
		    (a->typmods[i].text == NULL) != (b->typmods[i].text == NULL) ||
		    (a->typmods[i].text != NULL && strcmp(a->typmods[i].text, b->typmods[i].text) != 0))
			return false;
	return true;
}

/* Types whose explicit cast with a length cuts or pads the value, where
 * the assignment ALTER COLUMN does without USING refuses it. */
static bool
cuts_to_length(const ddl_parse_type *t)
{
	static const char *const names[] = {"varchar", "bpchar", "bit", "varbit", NULL};
	const char *last = t->n_names > 0 ? t->names[t->n_names - 1] : "";

	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(last, names[i]) == 0)
			return true;
	return false;
}

/* The same type name, one of them perhaps unqualified (int8 and the
 * grammar's pg_catalog.int8 for bigint; mood and public.mood: the source
 * took the one the ALTER converts to). */
static bool
same_names(const ddl_parse_type *a, const ddl_parse_type *b)
{
	size_t n = a->n_names < b->n_names ? a->n_names : b->n_names;

	if (n == 0 || (a->n_names != b->n_names && n != 1))
		return false;
	for (size_t i = 1; i <= n; i++)
		if (strcmp(a->names[a->n_names - i], b->names[b->n_names - i]) != 0)
			return false;
	return true;
}

/* c::t of the column to the ALTER's own type (see ddl_parse_using). */
static bool
is_plain_cast(ddl_walk *w, const json_t *cast, const ddl_parse_change *ch)
{
	const ddl_parse_type *to = &ch->column.type;
	ddl_parse_type t;
	tm_error *saved = w->err, ignored;
	int rc;

	if (cast == NULL || !is_the_column(ddl_json_get(cast, "arg"), ch->column.name))
		return false;
	w->err = &ignored;
	rc = ddl_type_read(w, ddl_json_get(cast, "typeName"), &t);
	w->err = saved;
	if (rc != 0 || !same_names(&t, to) || t.n_array_bounds != to->n_array_bounds ||
	    t.setof != to->setof)
		return false;
	return t.n_typmods == 0 || (same_typmods(&t, to) && !cuts_to_length(to));
}

static void
read_using(ddl_walk *w, const json_t *expr, ddl_parse_change *ch)
{
	ch->has_using = expr != NULL;
	if (expr == NULL)
		return;
	ch->using_text = using_text(w, expr);
	ch->using_kind = is_the_column(expr, ch->column.name) ||
	                         is_plain_cast(w, ddl_json_node(expr, "TypeCast"), ch)
	                     ? DDL_PARSE_USING_PLAIN
	                     : DDL_PARSE_USING_EXPR;
}

/* ALTER COLUMN c TYPE t [COLLATE x] [USING expr]: the USING expression is
 * the ColumnDef's raw_default. */
static int
cmd_alter_type(ddl_walk *w, const json_t *cmd, ddl_parse_change *ch)
{
	json_t *coldef = ddl_json_node(ddl_json_get(cmd, "def"), "ColumnDef");

	if (cmd_column(w, cmd, ch) != 0)
		return -1;
	if (coldef == NULL)
		return tm_error_set(w->err, "ALTER COLUMN TYPE without a type");
	if (ddl_type_read(w, ddl_json_get(coldef, "typeName"), &ch->column.type) != 0)
		return -1;
	ch->column.collation = read_collation(w, coldef);
	read_using(w, ddl_json_get(coldef, "raw_default"), ch);
	return 0;
}

/* SET DEFAULT has a "def"; DROP DEFAULT is the same subtype without one. */
static int
cmd_default(ddl_walk *w, const json_t *cmd, ddl_parse_change *ch)
{
	bool set = ddl_json_get(cmd, "def") != NULL;

	ch->kind = set ? DDL_PARSE_SET_DEFAULT : DDL_PARSE_DROP_DEFAULT;
	ch->column.has_default = set;
	return cmd_column(w, cmd, ch);
}

/* ADD [CONSTRAINT name] PRIMARY KEY (cols) | USING INDEX idx; other
 * constraints are OTHER with their type as detail. */
static int
cmd_add_constraint(ddl_walk *w, const json_t *cmd, ddl_parse_change *ch)
{
	json_t *con = ddl_json_node(ddl_json_get(cmd, "def"), "Constraint");

	if (con == NULL)
		return tm_error_set(w->err, "ADD CONSTRAINT without a constraint");
	if (!ddl_json_str_is(con, "contype", "CONSTR_PRIMARY")) {
		ch->kind = DDL_PARSE_OTHER;
		ch->node = ddl_walk_strdup(w, "AlterTableStmt");
		ch->detail = ddl_walk_strdup(w, ddl_json_str(con, "contype"));
		return 0;
	}
	ch->constraint_name = ddl_walk_strdup(w, ddl_json_str(con, "conname"));
	ch->index_name = ddl_walk_strdup(w, ddl_json_str(con, "indexname"));
	return ddl_walk_names(w, ddl_json_array(con, "keys"), &ch->key_columns, &ch->n_key_columns);
}

static int
cmd_drop_constraint(ddl_walk *w, const json_t *cmd, ddl_parse_change *ch)
{
	ch->constraint_name = ddl_walk_strdup(w, ddl_json_str(cmd, "name"));
	if (ch->constraint_name == NULL)
		return tm_error_set(w->err, "DROP CONSTRAINT without a name");
	return 0;
}

/* REPLICA IDENTITY: identity_type is a one-letter string, as relreplident. */
static int
cmd_replica_identity(ddl_walk *w, const json_t *cmd, ddl_parse_change *ch)
{
	json_t *ri = ddl_json_node(ddl_json_get(cmd, "def"), "ReplicaIdentityStmt");
	char type = ddl_json_char(ri, "identity_type");

	if (type == '\0' || strchr("dfin", type) == NULL)
		return tm_error_set(w->err, "REPLICA IDENTITY of unknown type");
	ch->replica_identity = type;
	ch->index_name = ddl_walk_strdup(w, ddl_json_str(ri, "name"));
	return 0;
}

/* ATTACH / DETACH PARTITION part: a PartitionCmd. */
static int
cmd_partition(ddl_walk *w, const json_t *cmd, ddl_parse_change *ch)
{
	json_t *pc = ddl_json_node(ddl_json_get(cmd, "def"), "PartitionCmd");
	json_t *name = ddl_json_node(ddl_json_get(pc, "name"), "RangeVar");
	const char *relname = ddl_json_str(name != NULL ? name : ddl_json_get(pc, "name"), "relname");
	const char *schema = ddl_json_str(name != NULL ? name : ddl_json_get(pc, "name"), "schemaname");

	if (relname == NULL)
		return tm_error_set(w->err, "%s without a partition", ddl_json_str(cmd, "subtype"));
	ch->part_table = ddl_walk_strdup(w, relname);
	ch->part_schema = schema != NULL ? ddl_walk_strdup(w, schema) : NULL;
	ch->concurrently = ddl_json_bool(pc, "concurrent");
	ch->finalize = ddl_json_str_is(cmd, "subtype", "AT_DetachPartitionFinalize");
	return 0;
}

/* Subcommands read here; the handler may change the kind it is given. */
static const struct {
	const char *subtype;
	ddl_parse_kind kind;
	cmd_handler fn;
} cmd_handlers[] = {
	{"AT_AddColumn", DDL_PARSE_ADD_COLUMN, cmd_add_column},
	{"AT_DropColumn", DDL_PARSE_DROP_COLUMN, cmd_column},
	{"AT_AlterColumnType", DDL_PARSE_ALTER_COLUMN_TYPE, cmd_alter_type},
	{"AT_SetNotNull", DDL_PARSE_SET_NOT_NULL, cmd_column},
	{"AT_DropNotNull", DDL_PARSE_DROP_NOT_NULL, cmd_column},
	{"AT_ColumnDefault", DDL_PARSE_SET_DEFAULT, cmd_default},
	{"AT_AddConstraint", DDL_PARSE_ADD_PRIMARY_KEY, cmd_add_constraint},
	{"AT_DropConstraint", DDL_PARSE_DROP_CONSTRAINT, cmd_drop_constraint},
	{"AT_ReplicaIdentity", DDL_PARSE_REPLICA_IDENTITY, cmd_replica_identity},
	{"AT_AttachPartition", DDL_PARSE_ATTACH_PARTITION, cmd_partition},
	{"AT_DetachPartition", DDL_PARSE_DETACH_PARTITION, cmd_partition},
	{"AT_DetachPartitionFinalize", DDL_PARSE_DETACH_PARTITION, cmd_partition},
};

/* One subcommand; base holds what the statement says of the table. */
static int
walk_cmd(ddl_walk *w, const json_t *cmd, const ddl_parse_change *base)
{
	ddl_parse_change ch = *base;
	const char *subtype = ddl_json_str(cmd, "subtype");

	if (subtype == NULL)
		return tm_error_set(w->err, "ALTER TABLE subcommand without a type");
	ch.if_exists = base->if_exists || ddl_json_bool(cmd, "missing_ok");
	ch.cascade = ddl_json_str_is(cmd, "behavior", "DROP_CASCADE");
	ch.kind = DDL_PARSE_OTHER;
	for (size_t i = 0; i < sizeof(cmd_handlers) / sizeof(cmd_handlers[0]); i++) {
		if (strcmp(cmd_handlers[i].subtype, subtype) != 0)
			continue;
		ch.kind = cmd_handlers[i].kind;
		if (cmd_handlers[i].fn(w, cmd, &ch) != 0)
			return -1;
		break;
	}
	if (ch.kind == DDL_PARSE_OTHER && ch.node == NULL) {
		ch.node = ddl_walk_strdup(w, "AlterTableStmt");
		ch.detail = ddl_walk_strdup(w, subtype);
	}
	return ddl_walk_push(w, &ch);
}

/* ALTER TABLE [IF EXISTS] [ONLY] t cmd, cmd, ...; ALTER INDEX, VIEW,
 * SEQUENCE, FOREIGN TABLE ... share the node and are OTHER. */
int
ddl_walk_alter_table(ddl_walk *w, const json_t *body)
{
	ddl_parse_change base = {0};
	json_t *cmds = ddl_json_array(body, "cmds");
	size_t n = json_array_size(cmds);

	if (!ddl_json_str_is(body, "objtype", "OBJECT_TABLE"))
		return ddl_walk_other(w, "AlterTableStmt", body, ddl_json_str(body, "objtype"));
	if (ddl_walk_relation(w, ddl_json_get(body, "relation"), &base) != 0)
		return -1;
	base.if_exists = ddl_json_bool(body, "missing_ok");
	if (n == 0)
		return tm_error_set(w->err, "ALTER TABLE without subcommands");
	for (size_t i = 0; i < n; i++)
		if (walk_cmd(w, ddl_json_node(json_array_get(cmds, i), "AlterTableCmd"), &base) != 0)
			return -1;
	return 0;
}
