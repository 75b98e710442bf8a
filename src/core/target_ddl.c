#include "target_ddl.h"

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

static void
append_key(strbuf *sql, const tabledef *t)
{
	bool first = true;

	strbuf_append(sql, ", PRIMARY KEY (");
	for (int i = 0; i < t->ncols; i++) {
		if (!t->cols[i].is_key)
			continue;
		if (!first)
			strbuf_append(sql, ", ");
		strbuf_append_ident(sql, t->cols[i].name);
		first = false;
	}
	strbuf_appendc(sql, ')');
}

int
target_ddl_create_table(strbuf *sql, const char *schema, const char *name, const tabledef *t,
                        tm_error *err)
{
	strbuf out = STRBUF_INIT;

	strbuf_append(&out, "CREATE TABLE IF NOT EXISTS ");
	strbuf_append_qualified(&out, schema, name);
	strbuf_append(&out, " (");
	for (int i = 0; i < t->ncols; i++) {
		const tabledef_column *c = &t->cols[i];

		if (i > 0)
			strbuf_append(&out, ", ");
		strbuf_append_ident(&out, c->name);
		strbuf_appendc(&out, ' ');
		if (target_ddl_append_type(&out, c->target_type, err) != 0) {
			strbuf_free(&out);
			return -1;
		}
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
