/*
 * typesync.c: the source's types on the target (see typesync.h): created,
 * taken over, or followed, and remembered in tidemark.types. Collations,
 * columns and the key order are in typesync_cols.c.
 */
#include "typesync_int.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pgconn.h"
#include "pipeline.h"
#include "target_ddl.h"
#include "type_ddl.h"
#include "xalloc.h"

/* ---- state ---- */

void
ts_init(ts *x, sink *s, const char *slot, typesync_result *res)
{
	memset(x, 0, sizeof *x);
	x->sink = s;
	x->slot = slot;
	x->res = res;
}

void
ts_clear(ts *x)
{
	for (int i = 0; i < x->ntypes; i++) {
		free(x->types[i].schema);
		free(x->types[i].name);
		free(x->types[i].reason);
	}
	free(x->types);
	for (int i = 0; i < x->ncolls; i++) {
		free(x->colls[i].schema);
		free(x->colls[i].name);
		free(x->colls[i].why);
	}
	free(x->colls);
	memset(x, 0, sizeof *x);
}

const ts_type *
ts_find(const ts *x, uint32_t oid)
{
	for (int i = 0; i < x->ntypes; i++)
		if (x->types[i].oid == oid)
			return &x->types[i];
	return NULL;
}

static void
ts_set(ts *x, uint32_t oid, const char *schema, const char *name, const char *reason)
{
	ts_type *t = (ts_type *) ts_find(x, oid);

	if (t == NULL) {
		x->types = xrealloc(x->types, sizeof(ts_type) * (size_t) (x->ntypes + 1));
		t = &x->types[x->ntypes++];
		memset(t, 0, sizeof *t);
		t->oid = oid;
	}
	free(t->schema);
	free(t->name);
	free(t->reason);
	t->schema = xstrdup(name != NULL ? schema : NULL);
	t->name = xstrdup(name);
	t->reason = xstrdup(reason);
}

void
ts_note(ts *x, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (x->res->actions.len > 0)
		strbuf_append(&x->res->actions, "; ");
	strbuf_append(&x->res->actions, buf);
}

void
typesync_result_free(typesync_result *r)
{
	strbuf_free(&r->actions);
}

/* ---- tidemark.types ---- */

typedef struct mapping {
	PGresult *res;           /* owned; NULL when the type is not known */
	const char *schema;      /* borrowed from res: NULL when kept as text */
	const char *name;
	const char *reason;      /* how the target's type differs, or NULL */
	srctype def;             /* owned: the definition last followed */
	bool has_def;
} mapping;

static void
mapping_clear(mapping *m)
{
	PQclear(m->res);
	if (m->has_def)
		srctype_clear(&m->def);
	memset(m, 0, sizeof *m);
}

static int
mapping_load(ts *x, uint32_t oid, mapping *m)
{
	char id[16];
	const char *p[] = {x->slot, id};
	int rc;

	memset(m, 0, sizeof *m);
	snprintf(id, sizeof id, "%u", oid);
	rc = sink_query(x->sink, "reading a type's record",
	                "SELECT target_schema, target_name, definition::text, reason FROM tidemark.types"
	                " WHERE slot_name = $1 AND source_oid = $2::oid", 2, p, &m->res);
	if (rc != TM_OK || PQntuples(m->res) == 0) {
		PQclear(m->res);
		m->res = NULL;
		return rc;
	}
	if (!PQgetisnull(m->res, 0, 1)) {
		json_t *def = json_loads(PQgetvalue(m->res, 0, 2), 0, NULL);

		m->schema = PQgetvalue(m->res, 0, 0);
		m->name = PQgetvalue(m->res, 0, 1);
		m->reason = PQgetisnull(m->res, 0, 3) ? NULL : PQgetvalue(m->res, 0, 3);
		m->has_def = srctype_from_json(def, &m->def, NULL) == 0;
		json_decref(def);
	}
	return TM_OK;
}

static int
mapping_save(ts *x, const srctype *t)
{
	const ts_type *r = ts_find(x, t->oid);
	json_t *def = srctype_to_json(t);
	char *def_text = json_dumps(def, JSON_COMPACT);
	char id[16];
	const char *p[] = {x->slot, id, t->schema, t->name, t->kind_name,
	                   r ? r->schema : NULL, r ? r->name : NULL, def_text, r ? r->reason : NULL};
	int rc;

	snprintf(id, sizeof id, "%u", t->oid);
	rc = sink_command(x->sink, "recording a type",
	                  "INSERT INTO tidemark.types (slot_name, source_oid, source_schema,"
	                  " source_name, kind, target_schema, target_name, definition, reason)"
	                  " VALUES ($1, $2::oid, $3, $4, $5, $6, $7, $8::jsonb, $9)"
	                  " ON CONFLICT (slot_name, source_oid) DO UPDATE SET"
	                  " source_schema = EXCLUDED.source_schema, source_name = EXCLUDED.source_name,"
	                  " kind = EXCLUDED.kind, target_schema = EXCLUDED.target_schema,"
	                  " target_name = EXCLUDED.target_name, definition = EXCLUDED.definition,"
	                  " reason = EXCLUDED.reason, updated_at = now()", 9, p);
	free(def_text);
	json_decref(def);
	return rc;
}

/* ---- running statements ---- */

/* A statement the target may refuse: *refused is then its message (new). */
static int
try_sql(ts *x, const char *what, strbuf *sql, char **refused)
{
	int rc = sink_try(x->sink, what, strbuf_str(sql), refused);

	strbuf_reset(sql);
	return rc;
}

static int
run_sql(ts *x, const char *what, strbuf *sql)
{
	int rc = sink_command(x->sink, what, strbuf_str(sql), 0, NULL);

	strbuf_reset(sql);
	return rc;
}

static int
ensure_schema(ts *x, const char *schema, char **refused)
{
	strbuf sql = STRBUF_INIT;
	int rc;

	target_ddl_create_schema(&sql, schema);
	rc = try_sql(x, "creating a target schema", &sql, refused);
	strbuf_free(&sql);
	return rc;
}

/* ---- the target's own types ---- */

/* The target's type schema.name: *oid 0 when there is none. */
static int
target_type_oid(ts *x, const char *schema, const char *name, char *oid, size_t size)
{
	const char *p[] = {schema, name};
	PGresult *r = NULL;
	int rc = sink_query(x->sink, "looking for a type on the target",
	                    "SELECT t.oid FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace"
	                    " WHERE n.nspname = $1 AND t.typname = $2", 2, p, &r);

	oid[0] = '\0';
	if (rc == TM_OK && PQntuples(r) == 1)
		snprintf(oid, size, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

/* One text value of a query on the target type oid; *out new or NULL. */
static int
target_type_fact(ts *x, const char *oid, const char *what, const char *sql, char **out)
{
	const char *p[] = {oid};
	PGresult *r = NULL;
	int rc = sink_query(x->sink, what, sql, 1, p, &r);

	*out = NULL;
	if (rc == TM_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
		*out = xstrdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

/* The enum the target has (labels by text) as a definition. */
static int
target_enum(ts *x, const srctype *t, const char *oid, srctype *out, bool *ok)
{
	char *labels = NULL;
	int rc = target_type_fact(x, oid, "reading an enum on the target",
	                          "SELECT json_agg(json_build_object('label', enumlabel)"
	                          " ORDER BY enumsortorder) FROM pg_enum WHERE enumtypid = $1::oid"
	                          " HAVING (SELECT typtype FROM pg_type WHERE oid = $1::oid) = 'e'",
	                          &labels);
	json_t *def;

	*ok = false;
	if (rc != TM_OK || labels == NULL) {
		free(labels);
		return rc;
	}
	def = json_pack("{s:i, s:s, s:s, s:s}", "oid", 1, "schema", t->schema, "name", t->name,
	                "kind", "enum");
	json_object_set_new(def, "labels", json_loads(labels, 0, NULL));
	*ok = srctype_from_json(def, out, NULL) == 0;
	json_decref(def);
	free(labels);
	return TM_OK;
}

/* ---- creating or taking over a type ---- */

/* The attributes of t as the target gets them (types resolved, collations
 * that exist); *differs (borrowed) when one's collation cannot be had. */
static int
target_attrs(ts *x, const srctype *t, type_ddl_attr *attrs, strbuf *types, const char **differs)
{
	int rc = TM_OK;

	*differs = NULL;
	for (int i = 0; rc == TM_OK && i < t->nattrs; i++) {
		const srctype_attr *a = &t->attrs[i];
		const char *why = NULL;
		bool use = false, fallback = false;

		strbuf_reset(&types[i]);
		ts_type_text(x, a->type_sql, a->type_ref, &types[i], &why, &fallback);
		attrs[i].name = a->name;
		attrs[i].type = strbuf_str(&types[i]);
		rc = ts_collation(x, a->collation, &use, &why);
		attrs[i].coll_schema = use ? a->collation->schema : NULL;
		attrs[i].coll_name = use ? a->collation->name : NULL;
		if (why != NULL && *differs == NULL)
			*differs = why;
	}
	return rc;
}

/* Do the target's attributes (JSON of name, type) match attrs in order? */
static bool
attrs_match(const char *json, const type_ddl_attr *attrs, int n)
{
	json_t *arr = json_loads(json, 0, NULL);
	bool same = json_is_array(arr) && (int) json_array_size(arr) == n;

	for (int i = 0; same && i < n; i++) {
		json_t *a = json_array_get(arr, (size_t) i);
		const char *name = json_string_value(json_object_get(a, "name"));
		const char *type = json_string_value(json_object_get(a, "type"));

		same = name != NULL && type != NULL && strcmp(name, attrs[i].name) == 0 &&
		       ts_same_type_text(type, attrs[i].type);
	}
	json_decref(arr);
	return same;
}

/* A composite type: CREATE TYPE for t into sql, or, when the target has a
 * type of its name (oid, not ""), whether its attributes are t's (*same). */
static int
composite_def(ts *x, const srctype *t, const char *oid, strbuf *sql, bool *same,
              const char **differs)
{
	type_ddl_attr *attrs = xcalloc((size_t) t->nattrs + 1, sizeof(type_ddl_attr));
	strbuf *types = xcalloc((size_t) t->nattrs + 1, sizeof(strbuf));
	char *have = NULL;
	tm_error err;
	int rc = target_attrs(x, t, attrs, types, differs);

	if (rc == TM_OK && oid[0] != '\0') {
		rc = target_type_fact(x, oid, "reading a composite type on the target",
		                      "SELECT json_agg(json_build_object('name', a.attname, 'type',"
		                      " tidemark.format_type(a.atttypid, a.atttypmod)) ORDER BY a.attnum)"
		                      " FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid"
		                      " WHERE t.oid = $1::oid AND t.typtype = 'c' AND a.attnum > 0"
		                      " AND NOT a.attisdropped", &have);
		*same = rc == TM_OK && have != NULL && attrs_match(have, attrs, t->nattrs);
	} else if (rc == TM_OK &&
	           type_ddl_create_composite(sql, t->schema, t->name, attrs, t->nattrs, &err) != 0)
		*differs = "its attribute types cannot be written";
	for (int i = 0; i < t->nattrs; i++)
		strbuf_free(&types[i]);
	free(types);
	free(attrs);
	free(have);
	return rc;
}

/* A domain: CREATE DOMAIN for t into sql, or whether the target's domain of
 * its name (oid, not "") has t's base type (*same). */
static int
domain_def(ts *x, const srctype *t, const char *oid, strbuf *sql, bool *same,
           const char **differs)
{
	strbuf base = STRBUF_INIT;
	char *have = NULL;
	const char *why = NULL;
	bool use = false, fallback = false;
	tm_error err;
	int rc;

	ts_type_text(x, t->base_type, t->base_type_ref, &base, &why, &fallback);
	rc = ts_collation(x, t->collation, &use, differs);
	if (rc == TM_OK && oid[0] != '\0') {
		rc = target_type_fact(x, oid, "reading a domain on the target",
		                      "SELECT tidemark.format_type(typbasetype, typtypmod) FROM pg_type"
		                      " WHERE oid = $1::oid AND typtype = 'd'", &have);
		*same = rc == TM_OK && have != NULL && ts_same_type_text(have, strbuf_str(&base));
	} else if (rc == TM_OK &&
	           type_ddl_create_domain(sql, t->schema, t->name, strbuf_str(&base),
	                                  use ? t->collation->schema : NULL,
	                                  use ? t->collation->name : NULL, &err) != 0)
		*differs = "its base type cannot be written";
	strbuf_free(&base);
	free(have);
	return rc;
}

/* An enum the target has under the name: taken when the source's values
 * are its values in order, some added (*ok). */
static int
adopt_enum(ts *x, const srctype *t, const char *oid, bool *ok)
{
	srctype have;
	srctype_steps steps;
	strbuf sql = STRBUF_INIT;
	int rc = target_enum(x, t, oid, &have, ok);

	if (rc != TM_OK || !*ok)
		return rc;
	*ok = srctype_enum_steps(&have, t, &steps, NULL) == 0;
	for (int i = 0; *ok && i < steps.n; i++)
		*ok = steps.steps[i].kind == SRCTYPE_ADD_VALUE;
	for (int i = 0; *ok && rc == TM_OK && i < steps.n; i++) {
		tm_error err;

		if (type_ddl_step(&sql, t->schema, t->name, &steps.steps[i], NULL, &err) != 0) {
			log_error("target: cannot add a value to %s.%s: %s", t->schema, t->name, err.msg);
			rc = TM_EXIT_TARGET;
		} else
			rc = run_sql(x, "adding a value to an enum", &sql);
		x->res->values_added = true;
		ts_note(x, "added value '%s' to %s.%s", steps.steps[i].new_name, t->schema, t->name);
	}
	srctype_steps_free(&steps);
	srctype_clear(&have);
	strbuf_free(&sql);
	return rc;
}

/* Creates t, or takes the target's type of its name when it is the same. */
static int
create_or_adopt(ts *x, const srctype *t)
{
	strbuf sql = STRBUF_INIT;
	char oid[16], *refused = NULL;
	const char *differs = NULL;
	char reason[512];
	bool same = false;
	int rc = ensure_schema(x, t->schema, &refused);

	reason[0] = '\0';
	oid[0] = '\0';
	if (rc == TM_OK && refused == NULL)
		rc = target_type_oid(x, t->schema, t->name, oid, sizeof oid);
	if (rc == TM_OK && refused == NULL && t->kind == SRCTYPE_ENUM) {
		if (oid[0] != '\0')
			rc = adopt_enum(x, t, oid, &same);
		else
			type_ddl_create_enum(&sql, t->schema, t->name, t->labels, t->nlabels);
	} else if (rc == TM_OK && refused == NULL && t->kind == SRCTYPE_COMPOSITE)
		rc = composite_def(x, t, oid, &sql, &same, &differs);
	else if (rc == TM_OK && refused == NULL)
		rc = domain_def(x, t, oid, &sql, &same, &differs);
	if (rc != TM_OK) {
		free(refused);
		strbuf_free(&sql);
		return rc;
	}
	if (refused != NULL)
		snprintf(reason, sizeof reason, "schema %s cannot be created on the target: %s",
		         t->schema, refused);
	else if (oid[0] != '\0' && !same)
		snprintf(reason, sizeof reason, "the target has a type %s.%s of another definition",
		         t->schema, t->name);
	else if (oid[0] == '\0' && sql.len == 0)
		snprintf(reason, sizeof reason, "%s", differs ? differs : "it cannot be written");
	else if (oid[0] == '\0' && (rc = try_sql(x, "creating a type", &sql, &refused)) == TM_OK &&
	         refused != NULL)
		snprintf(reason, sizeof reason, "CREATE failed on the target: %s", refused);
	else if (oid[0] == '\0' && rc == TM_OK)
		ts_note(x, "created %s %s.%s", t->kind_name, t->schema, t->name);
	if (rc == TM_OK && reason[0] != '\0')
		ts_set(x, t->oid, NULL, NULL, reason);
	else if (rc == TM_OK)
		ts_set(x, t->oid, t->schema, t->name, differs);
	free(refused);
	strbuf_free(&sql);
	return rc;
}

/* A type of an extension: the extension installed (in the source's schema
 * when it is not yet), then its type of the name. */
static int
extension_type(ts *x, const srctype *t)
{
	const char *p[] = {t->extension, t->name};
	PGresult *r = NULL;
	strbuf sql = STRBUF_INIT;
	char *refused = NULL, reason[512];
	int rc = sink_query(x->sink, "looking for an extension on the target",
	                    "SELECT (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n"
	                    "   ON n.oid = e.extnamespace WHERE e.extname = $1),"
	                    " EXISTS (SELECT FROM pg_available_extensions WHERE name = $1)", 1, p, &r);

	reason[0] = '\0';
	if (rc == TM_OK && PQgetisnull(r, 0, 0) && strcmp(PQgetvalue(r, 0, 1), "t") != 0)
		snprintf(reason, sizeof reason, "extension %s is not available on the target",
		         t->extension);
	else if (rc == TM_OK && PQgetisnull(r, 0, 0)) {
		rc = ensure_schema(x, t->extension_schema, &refused);
		if (rc == TM_OK && refused == NULL) {
			type_ddl_create_extension(&sql, t->extension, t->extension_schema);
			rc = try_sql(x, "creating an extension", &sql, &refused);
		}
		if (rc == TM_OK && refused != NULL)
			snprintf(reason, sizeof reason, "CREATE EXTENSION %s failed on the target: %s",
			         t->extension, refused);
		else if (rc == TM_OK)
			ts_note(x, "created extension %s in schema %s", t->extension, t->extension_schema);
	}
	PQclear(r);
	r = NULL;
	if (rc == TM_OK && reason[0] == '\0')
		rc = sink_query(x->sink, "looking for an extension's type on the target",
		                "SELECT n.nspname FROM pg_extension e JOIN pg_depend d"
		                "   ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid"
		                "   AND d.classid = 'pg_type'::regclass AND d.deptype = 'e'"
		                " JOIN pg_type t ON t.oid = d.objid JOIN pg_namespace n"
		                "   ON n.oid = t.typnamespace WHERE e.extname = $1 AND t.typname = $2",
		                2, p, &r);
	if (rc == TM_OK && reason[0] == '\0' && PQntuples(r) != 1)
		snprintf(reason, sizeof reason, "extension %s on the target has no type %s",
		         t->extension, t->name);
	if (rc == TM_OK)
		ts_set(x, t->oid, reason[0] ? NULL : PQgetvalue(r, 0, 0), t->name,
		       reason[0] ? reason : NULL);
	PQclear(r);
	free(refused);
	strbuf_free(&sql);
	return rc;
}

/* ---- following a type the target has ---- */

static int
follow_names(ts *x, const srctype *t, const mapping *m, char **schema, char **name)
{
	bool domain = t->kind == SRCTYPE_DOMAIN;
	strbuf sql = STRBUF_INIT;
	char *refused = NULL;
	int rc = TM_OK;

	*schema = xstrdup(m->schema);
	*name = xstrdup(m->name);
	if (strcmp(*schema, t->schema) != 0) {
		rc = ensure_schema(x, t->schema, &refused);
		if (rc == TM_OK && refused == NULL) {
			type_ddl_set_schema(&sql, domain, *schema, *name, t->schema);
			rc = try_sql(x, "moving a type", &sql, &refused);
		}
		if (rc == TM_OK && refused == NULL) {
			ts_note(x, "moved type %s.%s to schema %s", *schema, *name, t->schema);
			free(*schema);
			*schema = xstrdup(t->schema);
		}
	}
	if (rc == TM_OK && refused == NULL && strcmp(*name, t->name) != 0) {
		type_ddl_rename(&sql, domain, *schema, *name, t->name);
		rc = try_sql(x, "renaming a type", &sql, &refused);
		if (rc == TM_OK && refused == NULL) {
			ts_note(x, "renamed type %s.%s to %s", *schema, *name, t->name);
			free(*name);
			*name = xstrdup(t->name);
		}
	}
	if (rc == TM_OK && refused != NULL)
		log_warn("target: type %s.%s cannot follow the source's %s.%s: %s; it keeps its name",
		         *schema, *name, t->schema, t->name, refused);
	free(refused);
	strbuf_free(&sql);
	return rc;
}

static const char *
step_note(const srctype_step *st)
{
	switch (st->kind) {
	case SRCTYPE_RENAME_VALUE: return "renamed value '%s' of %s.%s";
	case SRCTYPE_ADD_VALUE: return "added value '%s' to %s.%s";
	case SRCTYPE_RENAME_ATTR: return "renamed attribute %s of %s.%s";
	case SRCTYPE_DROP_ATTR: return "dropped attribute %s of %s.%s";
	case SRCTYPE_ADD_ATTR: return "added attribute %s to %s.%s";
	case SRCTYPE_ALTER_ATTR: return "changed the type of attribute %s of %s.%s";
	}
	return "%s %s.%s";
}

/* One step; for attributes, the attribute as the target gets it. */
static int
run_step(ts *x, const char *schema, const char *name, const srctype_step *st, strbuf *sql)
{
	type_ddl_attr attr = {NULL, NULL, NULL, NULL};
	strbuf type = STRBUF_INIT;
	const char *why = NULL;
	bool use = false, fallback = false;
	tm_error err;
	int rc = TM_OK;

	if (st->attr != NULL) {
		ts_type_text(x, st->attr->type_sql, st->attr->type_ref, &type, &why, &fallback);
		rc = ts_collation(x, st->attr->collation, &use, &why);
		attr.name = st->attr->name;
		attr.type = strbuf_str(&type);
		attr.coll_schema = use ? st->attr->collation->schema : NULL;
		attr.coll_name = use ? st->attr->collation->name : NULL;
	}
	if (rc == TM_OK && type_ddl_step(sql, schema, name, st, st->attr ? &attr : NULL, &err) != 0) {
		log_error("target: cannot follow a change of type %s.%s: %s", schema, name, err.msg);
		rc = TM_EXIT_TARGET;
	}
	if (rc == TM_OK)
		rc = run_sql(x, "following a change of a type", sql);
	if (rc == TM_OK && st->kind == SRCTYPE_ADD_VALUE)
		x->res->values_added = true;
	if (rc == TM_OK)
		ts_note(x, step_note(st), st->new_name ? st->new_name : st->name, schema, name);
	strbuf_free(&type);
	return rc;
}

/* The changes of an enum or composite type since its last definition. */
static int
follow_steps(ts *x, const srctype *t, const mapping *m, const char *schema, const char *name)
{
	srctype_steps steps = {0, NULL};
	strbuf sql = STRBUF_INIT;
	tm_error err;
	int rc = TM_OK, st = 0;

	if (!m->has_def || m->def.kind != t->kind)
		return TM_OK;
	if (t->kind == SRCTYPE_ENUM)
		st = srctype_enum_steps(&m->def, t, &steps, &err);
	else if (t->kind == SRCTYPE_COMPOSITE)
		st = srctype_composite_steps(&m->def, t, &steps, &err);
	else if (t->kind == SRCTYPE_DOMAIN && (m->def.nconstraints != t->nconstraints ||
	                                       m->def.not_null != t->not_null))
		ts_note(x, "domain %s.%s: constraints and NOT NULL are not carried to the target",
		        schema, name);
	if (st != 0)
		log_warn("target: type %s.%s cannot follow the source: %s", schema, name, err.msg);
	for (int i = 0; rc == TM_OK && i < steps.n; i++)
		rc = run_step(x, schema, name, &steps.steps[i], &sql);
	srctype_steps_free(&steps);
	strbuf_free(&sql);
	return rc;
}

static int
follow(ts *x, const srctype *t, const mapping *m)
{
	char *schema = NULL, *name = NULL;
	const ts_type *known;
	int rc = follow_names(x, t, m, &schema, &name);

	if (rc == TM_OK)
		rc = follow_steps(x, t, m, schema, name);
	if (rc == TM_OK) {
		known = ts_find(x, t->oid);
		ts_set(x, t->oid, schema, name, known ? known->reason : NULL);
	}
	free(schema);
	free(name);
	return rc;
}

/* ---- one type ---- */

/* A type t needs that the target cannot have: t cannot be had either. */
static const char *
missing_dependency(const ts *x, const srctype *t)
{
	for (int d = 0; d < t->ndeps; d++) {
		const ts_type *r = ts_find(x, t->deps[d]);

		if (r == NULL || r->name == NULL)
			return r != NULL && r->reason != NULL ? r->reason : "its definition is unknown";
	}
	return NULL;
}

int
ts_sync_type(ts *x, const srctype *t)
{
	const char *dep = missing_dependency(x, t);
	char reason[600];
	mapping m;
	int rc;

	if (t->kind == SRCTYPE_EXTENSION)
		rc = extension_type(x, t);
	else if (t->kind == SRCTYPE_OTHER || dep != NULL) {
		if (dep != NULL)
			snprintf(reason, sizeof reason, "it needs a type the target cannot have (%s)", dep);
		else
			snprintf(reason, sizeof reason, "a %s type is not created on the target",
			         t->kind_name);
		ts_set(x, t->oid, NULL, NULL, reason);
		rc = TM_OK;
	} else if ((rc = mapping_load(x, t->oid, &m)) == TM_OK) {
		/* the type as it is to be on the target: in the pipeline's schema */
		srctype there = *t;
		char *tschema = NULL;

		rc = pipeline_target_schema(x->sink, x->slot, t->schema, &tschema);
		there.schema = tschema;
		if (rc == TM_OK && m.name != NULL) {
			/* how the target's type differs, found when it was made */
			ts_set(x, t->oid, m.schema, m.name, m.reason);
			rc = follow(x, &there, &m);
		} else if (rc == TM_OK)
			rc = create_or_adopt(x, &there);
		free(tschema);
		mapping_clear(&m);
	}
	if (rc == TM_OK)
		rc = mapping_save(x, t);
	return rc;
}

/* ---- the calls ---- */

/* The oids among types that tidemark.types knows (with a target type). */
static int
known_types(ts *x, const srctype_list *types, bool *known)
{
	strbuf arr = STRBUF_INIT;
	const char *p[] = {x->slot, NULL};
	PGresult *r = NULL;
	int rc;

	strbuf_appendc(&arr, '{');
	for (int i = 0; i < types->n; i++)
		strbuf_appendf(&arr, "%s%u", i ? "," : "", types->types[i].oid);
	strbuf_appendc(&arr, '}');
	p[1] = strbuf_str(&arr);
	rc = sink_query(x->sink, "reading the types the target has",
	                "SELECT source_oid FROM tidemark.types WHERE slot_name = $1"
	                " AND source_oid = ANY ($2::oid[]) AND target_name IS NOT NULL", 2, p, &r);
	for (int i = 0; rc == TM_OK && i < types->n; i++)
		for (int j = 0; j < PQntuples(r); j++)
			if (strtoul(PQgetvalue(r, j, 0), NULL, 10) == types->types[i].oid)
				known[i] = true;
	PQclear(r);
	strbuf_free(&arr);
	return rc;
}

int
typesync_follow(sink *s, const char *slot, const srctype_list *types, typesync_result *res)
{
	srctype_list order = {0, NULL};
	bool *wanted;
	tm_error err;
	ts x;
	int rc;

	srctype_list_copy(&order, types);
	if (srctype_list_order(&order, &err) != 0) {
		log_warn("the source's types cannot be followed: %s", err.msg);
		srctype_list_clear(&order);
		return TM_OK;
	}
	ts_init(&x, s, slot, res);
	wanted = xcalloc((size_t) order.n + 1, sizeof(bool));
	rc = known_types(&x, &order, wanted);
	/* what a followed type needs is had too (a new attribute's enum) */
	for (int i = order.n - 1; i >= 0; i--)
		for (int d = 0; wanted[i] && d < order.types[i].ndeps; d++)
			for (int j = 0; j < i; j++)
				wanted[j] |= order.types[j].oid == order.types[i].deps[d];
	for (int i = 0; rc == TM_OK && i < order.n; i++)
		if (wanted[i])
			rc = ts_sync_type(&x, &order.types[i]);
	free(wanted);
	ts_clear(&x);
	srctype_list_clear(&order);
	return rc;
}
