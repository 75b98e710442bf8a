#include "type_ddl.h"

#include "target_ddl.h"

void
type_ddl_create_enum(strbuf *sql, const char *schema, const char *name,
                     const srctype_label *labels, int nlabels)
{
	strbuf_append(sql, "CREATE TYPE ");
	strbuf_append_qualified(sql, schema, name);
	strbuf_append(sql, " AS ENUM (");
	for (int i = 0; i < nlabels; i++) {
		if (i > 0)
			strbuf_append(sql, ", ");
		target_ddl_append_literal(sql, labels[i].label);
	}
	strbuf_appendc(sql, ')');
}

/* "name" type [COLLATE ...] */
static int
append_attr(strbuf *sql, const type_ddl_attr *a, tm_error *err)
{
	strbuf_append_ident(sql, a->name);
	strbuf_appendc(sql, ' ');
	if (target_ddl_append_type(sql, a->type, err) != 0)
		return -1;
	target_ddl_append_collate(sql, a->coll_schema, a->coll_name);
	return 0;
}

int
type_ddl_create_composite(strbuf *sql, const char *schema, const char *name,
                          const type_ddl_attr *attrs, int nattrs, tm_error *err)
{
	strbuf out = STRBUF_INIT;

	strbuf_append(&out, "CREATE TYPE ");
	strbuf_append_qualified(&out, schema, name);
	strbuf_append(&out, " AS (");
	for (int i = 0; i < nattrs; i++) {
		if (i > 0)
			strbuf_append(&out, ", ");
		if (append_attr(&out, &attrs[i], err) != 0) {
			strbuf_free(&out);
			return -1;
		}
	}
	strbuf_appendc(&out, ')');
	strbuf_append(sql, strbuf_str(&out));
	strbuf_free(&out);
	return 0;
}

int
type_ddl_create_domain(strbuf *sql, const char *schema, const char *name, const char *base_type,
                       const char *coll_schema, const char *coll_name, tm_error *err)
{
	strbuf out = STRBUF_INIT;

	strbuf_append(&out, "CREATE DOMAIN ");
	strbuf_append_qualified(&out, schema, name);
	strbuf_append(&out, " AS ");
	if (target_ddl_append_type(&out, base_type, err) != 0) {
		strbuf_free(&out);
		return -1;
	}
	target_ddl_append_collate(&out, coll_schema, coll_name);
	strbuf_append(sql, strbuf_str(&out));
	strbuf_free(&out);
	return 0;
}

void
type_ddl_create_extension(strbuf *sql, const char *extension, const char *schema)
{
	strbuf_append(sql, "CREATE EXTENSION IF NOT EXISTS ");
	strbuf_append_ident(sql, extension);
	strbuf_append(sql, " SCHEMA ");
	strbuf_append_ident(sql, schema);
}

int
type_ddl_create_collation(strbuf *sql, const srctype_collation *c, tm_error *err)
{
	if (!srctype_collation_wellformed(c))
		return tm_error_set(err, "collation %s.%s: its locale is not one tidemark writes",
		                    c->schema, c->name);
	strbuf_append(sql, "CREATE COLLATION IF NOT EXISTS ");
	strbuf_append_qualified(sql, c->schema, c->name);
	if (c->provider == 'i') {
		strbuf_append(sql, " (provider = icu, locale = ");
		target_ddl_append_literal(sql, c->locale);
	} else {
		strbuf_append(sql, " (provider = libc, lc_collate = ");
		target_ddl_append_literal(sql, c->collate);
		strbuf_append(sql, ", lc_ctype = ");
		target_ddl_append_literal(sql, c->ctype);
	}
	strbuf_append(sql, c->deterministic ? ", deterministic = true)" : ", deterministic = false)");
	return 0;
}

static void
alter(strbuf *sql, bool domain, const char *schema, const char *name)
{
	strbuf_append(sql, domain ? "ALTER DOMAIN " : "ALTER TYPE ");
	strbuf_append_qualified(sql, schema, name);
	strbuf_appendc(sql, ' ');
}

void
type_ddl_rename(strbuf *sql, bool domain, const char *schema, const char *name,
                const char *new_name)
{
	alter(sql, domain, schema, name);
	strbuf_append(sql, "RENAME TO ");
	strbuf_append_ident(sql, new_name);
}

void
type_ddl_set_schema(strbuf *sql, bool domain, const char *schema, const char *name,
                    const char *new_schema)
{
	alter(sql, domain, schema, name);
	strbuf_append(sql, "SET SCHEMA ");
	strbuf_append_ident(sql, new_schema);
}

int
type_ddl_step(strbuf *sql, const char *schema, const char *name, const srctype_step *step,
              const type_ddl_attr *attr, tm_error *err)
{
	strbuf out = STRBUF_INIT;
	int rc = 0;

	alter(&out, false, schema, name);
	switch (step->kind) {
	case SRCTYPE_RENAME_VALUE:
		strbuf_append(&out, "RENAME VALUE ");
		target_ddl_append_literal(&out, step->name);
		strbuf_append(&out, " TO ");
		target_ddl_append_literal(&out, step->new_name);
		break;
	case SRCTYPE_ADD_VALUE:
		strbuf_append(&out, "ADD VALUE IF NOT EXISTS ");
		target_ddl_append_literal(&out, step->new_name);
		if (step->name != NULL) {
			strbuf_append(&out, step->before ? " BEFORE " : " AFTER ");
			target_ddl_append_literal(&out, step->name);
		}
		break;
	case SRCTYPE_RENAME_ATTR:
		strbuf_append(&out, "RENAME ATTRIBUTE ");
		strbuf_append_ident(&out, step->name);
		strbuf_append(&out, " TO ");
		strbuf_append_ident(&out, step->new_name);
		break;
	case SRCTYPE_DROP_ATTR:
		strbuf_append(&out, "DROP ATTRIBUTE ");
		strbuf_append_ident(&out, step->name);
		break;
	case SRCTYPE_ADD_ATTR:
		strbuf_append(&out, "ADD ATTRIBUTE ");
		rc = attr != NULL ? append_attr(&out, attr, err) : tm_error_set(err, "no attribute");
		break;
	case SRCTYPE_ALTER_ATTR:
		strbuf_append(&out, "ALTER ATTRIBUTE ");
		strbuf_append_ident(&out, step->name);
		strbuf_append(&out, " TYPE ");
		rc = attr != NULL ? target_ddl_append_type(&out, attr->type, err)
		                  : tm_error_set(err, "no attribute");
		if (rc == 0 && attr != NULL)
			target_ddl_append_collate(&out, attr->coll_schema, attr->coll_name);
		break;
	}
	if (rc == 0)
		strbuf_append(sql, strbuf_str(&out));
	strbuf_free(&out);
	return rc;
}
