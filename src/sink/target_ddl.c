#include "target_ddl.h"
#include "xalloc.h"

#include "cast.h"
#include "sqltype.h"

void
target_ddl_create_schema(strbuf *sql, const char *schema)
{
	strbuf_append(sql, "CREATE SCHEMA IF NOT EXISTS ");
	strbuf_append_ident(sql, schema);
}

int
target_ddl_append_type(strbuf *sql, const char *type_text, tm_error *err)
{
	sqltype t;

	if (sqltype_parse(type_text, &t, err) != 0)
		return -1;
	sqltype_render(&t, sql);
	return 0;
}

void
target_ddl_append_collate(strbuf *sql, const char *schema, const char *name)
{
	if (schema == NULL || name == NULL)
		return;
	strbuf_append(sql, " COLLATE ");
	strbuf_append_qualified(sql, schema, name);
}

/* PRIMARY KEY in the key's order, which is the order chunks are read in. */
static void
append_key(strbuf *sql, const tabledef *t)
{
	const tabledef_column **keys = xcalloc((size_t) t->ncols + 1, sizeof *keys);
	int n = tabledef_key_columns(t, keys);

	strbuf_append(sql, ", PRIMARY KEY (");
	for (int i = 0; i < n; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, keys[i]->name);
	}
	strbuf_appendc(sql, ')');
	free(keys);
}

int
target_ddl_create_table(strbuf *sql, const char *schema, const char *name, const tabledef *t,
                        tm_error *err)
{
	strbuf out = STRBUF_INIT;

	strbuf_append(&out, "CREATE TABLE IF NOT EXISTS ");
	strbuf_append_qualified(&out, schema, name);
	strbuf_append(&out, " (");
	bool first = true;

	for (int i = 0; i < t->ncols; i++) {
		const tabledef_column *c = &t->cols[i];

		if (c->generated != NULL)
			continue;
		if (!first)
			strbuf_append(&out, ", ");
		first = false;
		strbuf_append_ident(&out, c->name);
		strbuf_appendc(&out, ' ');
		if (target_ddl_append_type(&out, c->target_type, err) != 0) {
			strbuf_free(&out);
			return -1;
		}
		if (c->collate)
			target_ddl_append_collate(&out, c->collation->schema, c->collation->name);
		if (c->not_null || c->is_key)
			strbuf_append(&out, " NOT NULL");
	}
	if (tabledef_nkeys(t) > 0)
		append_key(&out, t);
	strbuf_appendc(&out, ')');
	strbuf_appendn(sql, out.data, out.len);
	strbuf_free(&out);
	return 0;
}

void
target_ddl_append_literal(strbuf *sql, const char *value)
{
	strbuf_appendc(sql, '\'');
	for (const char *p = value; *p; p++) {
		if (*p == '\'')
			strbuf_appendc(sql, '\'');
		strbuf_appendc(sql, *p);
	}
	strbuf_appendc(sql, '\'');
}

static void
alter(strbuf *sql, const char *schema, const char *table)
{
	strbuf_append(sql, "ALTER TABLE ");
	strbuf_append_qualified(sql, schema, table);
	strbuf_appendc(sql, ' ');
}

/* ALTER TABLE "s"."t" ALTER COLUMN "c" */
static void
alter_column(strbuf *sql, const char *schema, const char *table, const char *column)
{
	alter(sql, schema, table);
	strbuf_append(sql, "ALTER COLUMN ");
	strbuf_append_ident(sql, column);
}

void
target_ddl_rename_table(strbuf *sql, const char *schema, const char *table, const char *new_name)
{
	alter(sql, schema, table);
	strbuf_append(sql, "RENAME TO ");
	strbuf_append_ident(sql, new_name);
}

void
target_ddl_set_schema(strbuf *sql, const char *schema, const char *table, const char *new_schema)
{
	alter(sql, schema, table);
	strbuf_append(sql, "SET SCHEMA ");
	strbuf_append_ident(sql, new_schema);
}

void
target_ddl_rename_column(strbuf *sql, const char *schema, const char *table, const char *column,
                         const char *new_name)
{
	alter(sql, schema, table);
	strbuf_append(sql, "RENAME COLUMN ");
	strbuf_append_ident(sql, column);
	strbuf_append(sql, " TO ");
	strbuf_append_ident(sql, new_name);
}

void
target_ddl_drop_column(strbuf *sql, const char *schema, const char *table, const char *column)
{
	alter(sql, schema, table);
	strbuf_append(sql, "DROP COLUMN ");
	strbuf_append_ident(sql, column);
}

void
target_ddl_not_null(strbuf *sql, const char *schema, const char *table, const char *column,
                    bool set)
{
	alter_column(sql, schema, table, column);
	strbuf_append(sql, set ? " SET NOT NULL" : " DROP NOT NULL");
}

/* ADD COLUMN "c" type [COLLATE ...], the type re-rendered into *type. */
static int
add_column_head(strbuf *out, const char *schema, const char *table, const char *column,
                const char *type_text, const char *coll_schema, const char *coll_name,
                strbuf *type, tm_error *err)
{
	if (target_ddl_append_type(type, type_text, err) != 0)
		return -1;
	alter(out, schema, table);
	strbuf_append(out, "ADD COLUMN ");
	strbuf_append_ident(out, column);
	strbuf_appendc(out, ' ');
	strbuf_append(out, strbuf_str(type));
	target_ddl_append_collate(out, coll_schema, coll_name);
	return 0;
}

int
target_ddl_add_column(strbuf *sql, const char *schema, const char *table, const char *column,
                      const char *type, const char *coll_schema, const char *coll_name,
                      const char *value, tm_error *err)
{
	strbuf out = STRBUF_INIT;
	strbuf t = STRBUF_INIT;
	int rc = add_column_head(&out, schema, table, column, type, coll_schema, coll_name, &t, err);

	if (rc == 0) {
		if (value != NULL) {
			strbuf_append(&out, " DEFAULT ");
			target_ddl_append_literal(&out, value);
			strbuf_append(&out, "::");
			strbuf_append(&out, t.data);
		}
		strbuf_appendn(sql, out.data, out.len);
	}
	strbuf_free(&out);
	strbuf_free(&t);
	return rc;
}

int
target_ddl_add_generated(strbuf *sql, const char *schema, const char *table, const char *column,
                         const char *type, const char *coll_schema, const char *coll_name,
                         const char *expr, tm_error *err)
{
	strbuf out = STRBUF_INIT;
	strbuf t = STRBUF_INIT;
	int rc = add_column_head(&out, schema, table, column, type, coll_schema, coll_name, &t, err);

	if (rc == 0 && (expr == NULL || expr[0] == '\0'))
		rc = tm_error_set(err, "generated column %s has no expression", column);
	if (rc == 0) {
		strbuf_append(&out, " GENERATED ALWAYS AS (");
		strbuf_append(&out, expr);
		strbuf_append(&out, ") STORED");
		strbuf_appendn(sql, out.data, out.len);
	}
	strbuf_free(&out);
	strbuf_free(&t);
	return rc;
}

void
target_ddl_drop_expression(strbuf *sql, const char *schema, const char *table, const char *column)
{
	alter_column(sql, schema, table, column);
	strbuf_append(sql, " DROP EXPRESSION");
}

int
target_ddl_set_collation(strbuf *sql, const char *schema, const char *table, const char *column,
                         const char *type, const char *coll_schema, const char *coll_name,
                         tm_error *err)
{
	strbuf t = STRBUF_INIT;

	if (target_ddl_append_type(&t, type, err) != 0) {
		strbuf_free(&t);
		return -1;
	}
	alter_column(sql, schema, table, column);
	strbuf_append(sql, " TYPE ");
	strbuf_append(sql, strbuf_str(&t));
	if (coll_schema != NULL && coll_name != NULL)
		target_ddl_append_collate(sql, coll_schema, coll_name);
	else
		strbuf_append(sql, " COLLATE \"default\"");
	strbuf_free(&t);
	return 0;
}

void
target_ddl_drop_default(strbuf *sql, const char *schema, const char *table, const char *column)
{
	alter_column(sql, schema, table, column);
	strbuf_append(sql, " DROP DEFAULT");
}

int
target_ddl_alter_type(strbuf *sql, const char *schema, const char *table, const char *column,
                      const char *from, const char *to, tm_error *err)
{
	sqltype f, t;
	strbuf frag = STRBUF_INIT;

	if (sqltype_parse(from, &f, err) != 0 || sqltype_parse(to, &t, err) != 0 ||
	    cast_alter_using(&f, &t, column, &frag, err) != 0) {
		strbuf_free(&frag);
		return -1;
	}
	alter_column(sql, schema, table, column);
	strbuf_appendc(sql, ' ');
	strbuf_append(sql, frag.data);
	strbuf_free(&frag);
	return 0;
}

void
target_ddl_set_key(strbuf *sql, const char *schema, const char *table, const char *old_pk,
                   int nkeys, char *const *keys)
{
	alter(sql, schema, table);
	if (old_pk != NULL) {
		strbuf_append(sql, "DROP CONSTRAINT ");
		strbuf_append_ident(sql, old_pk);
		if (nkeys == 0)
			return;
		strbuf_append(sql, ", ");
	}
	strbuf_append(sql, "ADD PRIMARY KEY (");
	for (int k = 0; k < nkeys; k++) {
		if (k > 0)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, keys[k]);
	}
	strbuf_appendc(sql, ')');
}
