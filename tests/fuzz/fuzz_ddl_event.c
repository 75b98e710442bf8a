/*
 * fuzz_ddl_event.c: the DDL capture message (src/ddl/ddl_event.c) and the plan
 * of a table's schema change (src/ddl/ddl_track.c), with the target DDL built
 * from the plan (src/sink/target_ddl.c).
 *
 * Input: the message's content, JSON, signed or not (src/ddl/ddl_auth.h: the
 * signature is checked with a fixed key, and the body is what is parsed;
 * a body signed again with that key checks as signed, in the old form and
 * in the bound one, with the xid and seq it was signed with, and another
 * xid does not check). Each table of a parsed message is
 * planned, under every policy, rewritten or not, dropping columns or not:
 *   - against two fixed old definitions, each with three targets (its own
 *     columns; those plus columns kept from earlier drops; its columns all
 *     widened to text);
 *   - against itself: nothing to do (but a copy, when the source converted
 *     values the statement does not show);
 *   - as the new definition of the table before it in the message (its
 *     target being that table's columns, with and without kept ones).
 *
 * Invariants:
 *   - a parsed table has its columns, each with an attnum, a name and a
 *     type, and is found by its relid;
 *   - played on a model of the target's columns, a plan renames, alters,
 *     keeps and drops only columns that exist, renames and adds only to
 *     names that are free, keys only columns that exist, and leaves every
 *     column of the new definition on the target (but a generated column,
 *     which is left out when its expression is refused);
 *   - a table planned against itself gives an empty plan, or a copy and
 *     nothing else when converted;
 *   - the statement built for an action that carries a type or a value
 *     (added columns, type changes) is one statement of that change, when
 *     libpg_query reads it.
 */
#include "fuzz_common.h"

#include "ddl_auth.h"
#include "ddl_event.h"
#include "ddl_parse.h"
#include "ddl_track.h"
#include "sqltype.h"
#include "target_ddl.h"

typedef struct fixed_col {
	int attnum;
	const char *name;
	const char *type;
	bool key;
} fixed_col;

static const fixed_col orders[] = {
	{1, "id", "integer", true},
	{2, "total", "numeric(12,2)", false},
	{3, "name", "character varying(20)", false},
	{4, "note", "text", false},
	{5, "created", "timestamp without time zone", false},
};

static const fixed_col items[] = {
	{1, "Order Id", "bigint", true},
	{2, "line", "integer", true},
	{3, "qty", "smallint", false},
	{4, "price", "real", false},
	{5, "tags", "text[]", false},
};

/* Columns an earlier drop left on the target, one moved aside already. */
static const char *const kept[] = {"legacy", "legacy (dropped)"};

#define N_KEPT (sizeof kept / sizeof kept[0])

/* The target's columns: names and types, owned. */
typedef struct columns {
	int n;
	char **names;
	char **types;
} columns;

/* A name as the server keeps it. */
static char *
server_name(const char *name)
{
	char *s = strdup(name);

	if (s == NULL)
		abort();
	fuzz_clip_identifier(s);
	return s;
}

static void
columns_add(columns *c, const char *name, const char *type)
{
	c->names = realloc(c->names, sizeof(char *) * (size_t) (c->n + 1));
	c->types = realloc(c->types, sizeof(char *) * (size_t) (c->n + 1));
	if (c->names == NULL || c->types == NULL)
		abort();
	c->names[c->n] = server_name(name);
	c->types[c->n++] = strdup(type ? type : "");
}

static int
columns_find(const columns *c, const char *name)
{
	char *s = server_name(name);
	int found = -1;

	for (int i = 0; i < c->n && found < 0; i++)
		if (strcmp(c->names[i], s) == 0)
			found = i;
	free(s);
	return found;
}

static void
columns_remove(columns *c, int i)
{
	free(c->names[i]);
	free(c->types[i]);
	c->names[i] = c->names[--c->n];
	c->types[i] = c->types[c->n];
}

static void
columns_free(columns *c)
{
	while (c->n > 0)
		columns_remove(c, c->n - 1);
	free(c->names);
	free(c->types);
	memset(c, 0, sizeof *c);
}

/* The target of old: its columns, the kept ones too if asked, every type
 * text if asked. */
static void
target_of(const tabledef *old, bool with_kept, bool all_text, columns *out)
{
	memset(out, 0, sizeof *out);
	for (int i = 0; i < old->ncols; i++)
		columns_add(out, old->cols[i].name, all_text ? "text" : old->cols[i].target_type);
	for (size_t k = 0; with_kept && k < N_KEPT; k++)
		if (columns_find(out, kept[k]) < 0)
			columns_add(out, kept[k], "text");
}

static tabledef *
fixed_def(const char *schema, const char *name, const fixed_col *cols, size_t n)
{
	tabledef *t = tabledef_new(schema, name, 42);

	for (size_t i = 0; i < n; i++)
		tabledef_add_column(t, cols[i].attnum, cols[i].name, cols[i].type, 0, -1, cols[i].key,
							cols[i].key);
	return t;
}

/* The statements read so far for this input: the plans of one table under
 * each policy and flag repeat most of their actions. */
static int n_seen;
static char **seen;

static bool
seen_before(const char *sql)
{
	for (int i = 0; i < n_seen; i++)
		if (strcmp(seen[i], sql) == 0)
			return true;
	seen = realloc(seen, sizeof(char *) * (size_t) (n_seen + 1));
	if (seen == NULL || (seen[n_seen++] = strdup(sql)) == NULL)
		abort();
	return false;
}

static void
forget_seen(void)
{
	while (n_seen > 0)
		free(seen[--n_seen]);
	free(seen);
	seen = NULL;
}

/* ALTER TABLE ... built for a, read by libpg_query: one change of kind. */
static void
check_statement(const strbuf *sql, ddl_parse_kind kind)
{
	ddl_parse_result res;
	tm_error err;

	if (seen_before(strbuf_str(sql)))
		return;

	FUZZ_REQUIRE(ddl_parse_text(strbuf_str(sql), &res, &err) == 0, "target DDL is read");
	if (!res.unparsable)
		FUZZ_REQUIRE(res.n_stmts == 1 && res.n_changes == 1 && res.changes[0].kind == kind,
					 "target DDL for an action is one statement of that change");
	ddl_parse_result_free(&res);
}

/* The statements of the actions that carry text from the message beyond
 * names: an added column's type and value, a new type. */
static void
check_action_sql(const ddl_action *a)
{
	strbuf sql = STRBUF_INIT;
	tm_error err;

	if (a->kind == DDL_ACT_ADD_COLUMN &&
		target_ddl_add_column(&sql, "s", "t", a->column, a->type, a->coll_schema, a->coll_name,
		                      a->value, &err) == 0)
		check_statement(&sql, DDL_PARSE_ADD_COLUMN);
	if (a->kind == DDL_ACT_ADD_GENERATED) {
		FUZZ_REQUIRE(target_ddl_add_generated(&sql, "s", "t", a->column, a->type, a->coll_schema,
		                                      a->coll_name, a->value, &err) == 0 ||
		             sqltype_parse(a->type, &(sqltype){0}, NULL) != 0,
		             "a planned generated column is written");
		if (sql.len > 0)
			check_statement(&sql, DDL_PARSE_ADD_COLUMN);
	}
	if (a->kind == DDL_ACT_ALTER_TYPE) {
		FUZZ_REQUIRE(target_ddl_alter_type(&sql, "s", "t", a->column, a->from_type, a->type,
										   &err) == 0,
					 "a planned type change has a USING clause");
		check_statement(&sql, DDL_PARSE_ALTER_COLUMN_TYPE);
	}
	strbuf_free(&sql);
}

static void
play_key(const ddl_action *a, const columns *model, const tabledef *now)
{
	/* no key: the table has none any more (replicated without one) */
	FUZZ_REQUIRE(a->nkeys == tabledef_nkeys(now), "the key is the new key");
	for (int k = 0; k < a->nkeys; k++)
		FUZZ_REQUIRE(columns_find(model, a->keys[k]) >= 0, "a key column exists");
}

/* One action on the model of the target's columns. */
static void
play(const ddl_action *a, columns *model, const tabledef *now)
{
	int at = a->column ? columns_find(model, a->column) : -1;

	FUZZ_REQUIRE(a->why != NULL, "every action says why");
	switch (a->kind) {
	case DDL_ACT_RENAME_TABLE:
	case DDL_ACT_SET_SCHEMA:
		FUZZ_REQUIRE(a->name != NULL && a->name[0] != '\0', "a table gets a name");
		break;
	case DDL_ACT_RENAME_COLUMN:
		FUZZ_REQUIRE(at >= 0, "a renamed column exists");
		FUZZ_REQUIRE(columns_find(model, a->name) < 0, "a column is renamed to a free name");
		free(model->names[at]);
		model->names[at] = server_name(a->name);
		break;
	case DDL_ACT_ADD_COLUMN:
	case DDL_ACT_ADD_GENERATED:
		FUZZ_REQUIRE(at < 0, "a column is added under a free name");
		columns_add(model, a->column, a->type);
		break;
	case DDL_ACT_DROP_COLUMN:
		FUZZ_REQUIRE(at >= 0, "a dropped column exists");
		columns_remove(model, at);
		break;
	case DDL_ACT_SET_KEY:
		play_key(a, model, now);
		break;
	case DDL_ACT_RESNAPSHOT:
		FUZZ_REQUIRE(a->column == NULL || tabledef_find(now, a->column) != NULL,
					 "a table is copied again for one of its columns");
		break;
	default:
		FUZZ_REQUIRE(at >= 0, "an altered, kept or constrained column exists");
	}
	check_action_sql(a);
}

/* With FUZZ_VERBOSE set, each plan is printed before it is checked. */
static void
print_plan(const ddl_track_input *in, const ddl_plan *plan)
{
	if (getenv("FUZZ_VERBOSE") == NULL)
		return;
	fprintf(stderr, "plan: policy %s%s%s; old:", ddl_policy_name(in->policy),
			in->rewritten ? ", rewritten" : "", in->drop_columns ? ", drop columns" : "");
	for (int i = 0; i < in->old->ncols; i++)
		fprintf(stderr, " %d:%s", in->old->cols[i].attnum, in->old->cols[i].name);
	fprintf(stderr, "; now:");
	for (int i = 0; i < in->now->def->ncols; i++)
		fprintf(stderr, " %d:%s", in->now->def->cols[i].attnum, in->now->def->cols[i].name);
	fprintf(stderr, "; target:");
	for (int i = 0; i < in->target.ncols; i++)
		fprintf(stderr, " %s", in->target.names[i]);
	fputc('\n', stderr);
	for (int i = 0; i < plan->n; i++)
		fprintf(stderr, "  %s [%s -> %s]\n", plan->actions[i].why,
				plan->actions[i].column ? plan->actions[i].column : "",
				plan->actions[i].name ? plan->actions[i].name : "");
}

static void
check_plan(const ddl_track_input *in, const ddl_plan *plan)
{
	columns model = {0};
	const tabledef *now = in->now->def;

	print_plan(in, plan);
	FUZZ_REQUIRE(plan->summary != NULL, "a plan has a summary");
	if (plan->stop) {
		FUZZ_REQUIRE(plan->stop_reason != NULL, "a stop says why");
		return;
	}
	for (int i = 0; i < in->target.ncols; i++)
		columns_add(&model, in->target.names[i], in->target.types[i]);
	for (int i = 0; i < plan->n; i++)
		play(&plan->actions[i], &model, now);
	/* a generated column may be left out (expression refused, or the target
	 * could not have it before) */
	for (int i = 0; i < now->ncols; i++)
		FUZZ_REQUIRE(now->cols[i].generated != NULL ||
		             columns_find(&model, now->cols[i].name) >= 0,
		             "every column of the new definition is on the target");
	columns_free(&model);
}

/* Plans under every policy and flag; *empty: every plan was empty. */
static void
plan_all(const tabledef *old, const ddl_event_table *now, const columns *target, bool *empty)
{
	*empty = true;
	for (int p = DDL_POLICY_WIDEN; p <= DDL_POLICY_STOP; p++)
		for (int flags = 0; flags < 8; flags++) {
			ddl_track_input in = {old, now,
								  {target->n, (const char *const *) target->names,
								   (const char *const *) target->types},
								  (ddl_policy) p, flags & 1, (flags & 2) != 0, NULL,
								  (flags & 4) != 0, {"UTC", "ISO, YMD", NULL, NULL, NULL}};
			ddl_plan plan;
			tm_error err;

			err.msg[0] = '\0';
			if (ddl_track_plan(&in, &plan, &err) != 0) {
				FUZZ_REQUIRE(err.msg[0] != '\0', "a plan that fails says why");
				*empty = false;
				continue;
			}
			check_plan(&in, &plan);
			/* a rewrite that converted values the statement does not show
			 * (a DO block's same-type USING) copies the table again even when
			 * its definition is the same: that and nothing else */
			for (int k = 0; k < plan.n; k++)
				*empty &= in.converted && plan.actions[k].kind == DDL_ACT_RESNAPSHOT;
			*empty &= !plan.stop;
			ddl_plan_free(&plan);
		}
}

/* old against now, with each of the targets of old. */
static void
plan_against(const tabledef *old, const ddl_event_table *now)
{
	for (int variant = 0; variant < 3; variant++) {
		columns target;
		bool empty;

		target_of(old, variant == 1, variant == 2, &target);
		plan_all(old, now, &target, &empty);
		columns_free(&target);
	}
}

static void
check_table(const ddl_event *e, const ddl_event_table *t)
{
	FUZZ_REQUIRE(t->def != NULL && t->cols != NULL && t->def->ncols >= 0, "a table has columns");
	for (int i = 0; i < t->def->ncols; i++) {
		const tabledef_column *c = &t->def->cols[i];

		FUZZ_REQUIRE(c->attnum > 0 && c->name[0] != '\0' && c->type_sql[0] != '\0' &&
					 c->target_type != NULL, "a column has an attnum, a name and a type");
	}
	FUZZ_REQUIRE(ddl_event_table_by_relid(e, t->def->relid) != NULL &&
				 ddl_event_table_by_relid(e, t->def->relid)->def->relid == t->def->relid,
				 "a table is found by its relid");
}

static void
plan_tables(const ddl_event *e)
{
	tabledef *fixed[2] = {
		fixed_def("public", "orders", orders, sizeof orders / sizeof orders[0]),
		fixed_def("Sales", "Line Items", items, sizeof items / sizeof items[0]),
	};

	for (int i = 0; i < e->ntables; i++) {
		const ddl_event_table *t = &e->tables[i];
		columns target;
		bool empty;

		check_table(e, t);
		for (int f = 0; f < 2; f++)
			plan_against(fixed[f], t);
		target_of(t->def, false, false, &target);
		plan_all(t->def, t, &target, &empty);
		FUZZ_REQUIRE(empty, "a table planned against itself gives an empty plan (or, converted, a copy)");
		columns_free(&target);
		if (i > 0)
			plan_against(e->tables[i - 1].def, t);
	}
	tabledef_free(fixed[0]);
	tabledef_free(fixed[1]);
}

/* The bound form's round trip: signed and bound to the xid and seq it
 * was signed with, the same body; another xid does not check. */
static void
check_bound(const uint8_t *key, size_t key_len, const char *body, size_t body_len)
{
	char header[DDL_AUTH_HEADER_MAX + 1];
	size_t n = ddl_auth_bound_header(key, key_len, 4294967302ULL, 7, body, body_len, header);
	char *content = malloc(n + body_len + 1);
	ddl_auth_msg m;

	if (content == NULL)
		abort();
	memcpy(content, header, n);
	memcpy(content + n, body, body_len);
	FUZZ_REQUIRE(ddl_auth_verify(key, key_len, content, n + body_len, &m) == DDL_AUTH_SIGNED &&
	             m.bound && m.xid == 4294967302ULL && m.seq == 7 && m.body_len == body_len &&
	             memcmp(m.body, body, body_len) == 0,
	             "a body signed in the bound form checks as signed, with its xid and seq");
	content[3] = content[3] == '4' ? '5' : '4';
	FUZZ_REQUIRE(ddl_auth_verify(key, key_len, content, n + body_len, &m) == DDL_AUTH_FORGED,
	             "another xid does not check");
	free(content);
}

/* The body within content, and the signature's round trip on it. */
static void
check_signature(const char *content, size_t len, const char **body, size_t *body_len)
{
	static const uint8_t key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	char *again = malloc(len + DDL_AUTH_MAC_HEX + 2);
	const char *b2;
	size_t l2;

	if (again == NULL)
		abort();
	ddl_auth_check(key, sizeof key, content, len, body, body_len);
	FUZZ_REQUIRE(*body >= content && *body + *body_len == content + len,
	             "a message's body is its end");
	ddl_auth_mac(key, sizeof key, *body, *body_len, again);
	again[DDL_AUTH_MAC_HEX] = ' ';
	memcpy(again + DDL_AUTH_MAC_HEX + 1, *body, *body_len);
	FUZZ_REQUIRE(ddl_auth_check(key, sizeof key, again, DDL_AUTH_MAC_HEX + 1 + *body_len, &b2,
	                            &l2) == DDL_AUTH_SIGNED && l2 == *body_len,
	             "a body signed with the key checks as signed");
	free(again);
	check_bound(key, sizeof key, *body, *body_len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_input in = {data, size};
	size_t len;
	char *content = fuzz_take(&in, size, &len);
	ddl_event *e = NULL;
	tm_error err;
	const char *body;
	size_t body_len;

	err.msg[0] = '\0';
	check_signature(content, len, &body, &body_len);
	if (ddl_event_parse(body, body_len, &e, &err) == 0) {
		FUZZ_REQUIRE(e->kind <= DDL_EVENT_REWRITE && e->ntables >= 0 && e->ndropped >= 0,
					 "an event has a kind, tables and dropped objects");
		for (int i = 0; i < e->ndropped; i++)
			FUZZ_REQUIRE(e->dropped[i].object_type != NULL, "a dropped object has a type");
		plan_tables(e);
		forget_seen();
		ddl_event_free(e);
	} else
		FUZZ_REQUIRE(err.msg[0] != '\0', "a message that is not read says why");
	free(content);
	return 0;
}
