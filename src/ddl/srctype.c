/*
 * srctype.c: type and collation definitions from and to JSON, and their
 * order (see srctype.h). The steps between definitions are in
 * srctype_steps.c.
 */
#include "srctype.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* ---- reading ---- */

static const char *
str_at(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static char *
dup_at(const json_t *o, const char *key)
{
	return xstrdup(str_at(o, key));
}

/* An oid field: 0 when absent or null; -1 when not an oid. */
static int
oid_at(const json_t *o, const char *key, uint32_t *out)
{
	const json_t *v = json_object_get(o, key);
	json_int_t i;

	*out = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || (i = json_integer_value(v)) < 0 || i > UINT32_MAX)
		return -1;
	*out = (uint32_t) i;
	return 0;
}

/* A non-empty string field, or NULL. */
static const char *
name_at(const json_t *o, const char *key)
{
	const char *s = str_at(o, key);

	return s != NULL && s[0] != '\0' ? s : NULL;
}

int
srctype_collation_from_json(const json_t *o, srctype_collation **out, tm_error *err)
{
	srctype_collation *c;
	const char *provider = str_at(o, "provider");

	*out = NULL;
	if (o == NULL || json_is_null(o))
		return 0;
	if (!json_is_object(o) || name_at(o, "schema") == NULL || name_at(o, "name") == NULL ||
	    provider == NULL || (strcmp(provider, "c") != 0 && strcmp(provider, "i") != 0))
		return tm_error_set(err, "a collation without schema, name or a known provider");
	c = xcalloc(1, sizeof *c);
	c->schema = dup_at(o, "schema");
	c->name = dup_at(o, "name");
	c->is_default = json_is_true(json_object_get(o, "default"));
	c->builtin = json_is_true(json_object_get(o, "builtin"));
	c->provider = provider[0];
	c->collate = dup_at(o, "collate");
	c->ctype = dup_at(o, "ctype");
	c->locale = dup_at(o, "locale");
	c->rules = dup_at(o, "rules");
	c->deterministic = !json_is_false(json_object_get(o, "deterministic"));
	c->version = dup_at(o, "version");
	*out = c;
	return 0;
}

static json_t *
str_or_null(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

json_t *
srctype_collation_to_json(const srctype_collation *c)
{
	char provider[2] = {0, 0};

	if (c == NULL)
		return json_null();
	provider[0] = c->provider;
	return json_pack("{s:s, s:s, s:b, s:b, s:s, s:o, s:o, s:o, s:o, s:b, s:o}", "schema",
	                 c->schema, "name", c->name, "default", c->is_default, "builtin", c->builtin,
	                 "provider", provider, "collate", str_or_null(c->collate), "ctype",
	                 str_or_null(c->ctype), "locale", str_or_null(c->locale), "rules",
	                 str_or_null(c->rules), "deterministic", c->deterministic, "version",
	                 str_or_null(c->version));
}

srctype_collation *
srctype_collation_copy(const srctype_collation *c)
{
	srctype_collation *n;

	if (c == NULL)
		return NULL;
	n = xcalloc(1, sizeof *n);
	*n = *c;
	n->schema = xstrdup(c->schema);
	n->name = xstrdup(c->name);
	n->collate = xstrdup(c->collate);
	n->ctype = xstrdup(c->ctype);
	n->locale = xstrdup(c->locale);
	n->rules = xstrdup(c->rules);
	n->version = xstrdup(c->version);
	return n;
}

void
srctype_collation_free(srctype_collation *c)
{
	if (c == NULL)
		return;
	free(c->schema);
	free(c->name);
	free(c->collate);
	free(c->ctype);
	free(c->locale);
	free(c->rules);
	free(c->version);
	free(c);
}

static srctype_kind
kind_of(const char *name)
{
	static const struct {
		const char *name;
		srctype_kind kind;
	} kinds[] = {{"enum", SRCTYPE_ENUM}, {"composite", SRCTYPE_COMPOSITE},
	             {"domain", SRCTYPE_DOMAIN}, {"extension", SRCTYPE_EXTENSION}};

	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(kinds[i].name, name) == 0)
			return kinds[i].kind;
	return SRCTYPE_OTHER;
}

/* 1 when arr is an array, 0 when absent or null, -1 (err set) otherwise. */
static int
array_at(const json_t *arr, const srctype *t, const char *what, tm_error *err)
{
	if (arr == NULL || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return tm_error_set(err, "type %s.%s: \"%s\" is not an array", t->schema, t->name, what);
	return 1;
}

static int
read_labels(const json_t *arr, srctype *t, tm_error *err)
{
	size_t i;
	json_t *v;
	int rc = array_at(arr, t, "labels", err);

	if (rc <= 0)
		return rc;
	t->labels = xcalloc(json_array_size(arr), sizeof(srctype_label));
	json_array_foreach(arr, i, v) {
		srctype_label *l = &t->labels[t->nlabels];

		if (str_at(v, "label") == NULL || oid_at(v, "oid", &l->oid) != 0)
			return tm_error_set(err, "type %s.%s: label %zu is not valid", t->schema, t->name, i);
		l->label = dup_at(v, "label");
		for (int j = 0; j < t->nlabels; j++)
			if (strcmp(t->labels[j].label, l->label) == 0 ||
			    (l->oid != 0 && t->labels[j].oid == l->oid)) {
				free(l->label);
				return tm_error_set(err, "type %s.%s: label %zu repeats another", t->schema,
				                    t->name, i);
			}
		t->nlabels++;
	}
	return 0;
}

static int
read_attr(const json_t *v, srctype_attr *a, tm_error *err)
{
	json_t *attnum = json_object_get(v, "attnum");

	if (!json_is_integer(attnum) || json_integer_value(attnum) <= 0 ||
	    json_integer_value(attnum) > 1600 || name_at(v, "name") == NULL ||
	    name_at(v, "type") == NULL || oid_at(v, "type_oid", &a->type_oid) != 0 ||
	    oid_at(v, "type_ref", &a->type_ref) != 0)
		return tm_error_set(err, "no valid attnum, name or type");
	a->attnum = (int) json_integer_value(attnum);
	a->name = dup_at(v, "name");
	a->type_sql = dup_at(v, "type");
	return srctype_collation_from_json(json_object_get(v, "collation"), &a->collation, err);
}

static int
read_attrs(const json_t *arr, srctype *t, tm_error *err)
{
	size_t i;
	json_t *v;
	int rc = array_at(arr, t, "attributes", err);

	if (rc <= 0)
		return rc;
	t->attrs = xcalloc(json_array_size(arr), sizeof(srctype_attr));
	json_array_foreach(arr, i, v) {
		srctype_attr *a = &t->attrs[t->nattrs];

		tm_error why;

		/* counted first: a half-read attribute is freed with the rest */
		t->nattrs++;
		if (read_attr(v, a, &why) != 0)
			return tm_error_set(err, "type %s.%s: attribute %zu is not valid: %s", t->schema,
			                    t->name, i, why.msg);
		for (int j = 0; j < t->nattrs - 1; j++)
			if (t->attrs[j].attnum == a->attnum || strcmp(t->attrs[j].name, a->name) == 0)
				return tm_error_set(err, "type %s.%s: attribute %zu repeats another", t->schema,
				                    t->name, i);
	}
	return 0;
}

static int
read_strings(const json_t *arr, char ***out, int *n)
{
	size_t i;
	json_t *v;

	*n = 0;
	if (arr == NULL || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return -1;
	*out = xcalloc(json_array_size(arr), sizeof(char *));
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v))
			return -1;
		(*out)[(*n)++] = xstrdup(json_string_value(v));
	}
	return 0;
}

static int
read_deps(const json_t *arr, srctype *t)
{
	size_t i;
	json_t *v;

	if (arr == NULL || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return -1;
	t->deps = xcalloc(json_array_size(arr), sizeof(uint32_t));
	json_array_foreach(arr, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		    json_integer_value(v) > UINT32_MAX)
			return -1;
		t->deps[t->ndeps++] = (uint32_t) json_integer_value(v);
	}
	return 0;
}

static int
read_domain(const json_t *o, srctype *t, tm_error *err)
{
	if (t->kind != SRCTYPE_DOMAIN)
		return 0;
	if (name_at(o, "base_type") == NULL || oid_at(o, "base_type_oid", &t->base_type_oid) != 0 ||
	    oid_at(o, "base_type_ref", &t->base_type_ref) != 0)
		return tm_error_set(err, "domain %s.%s: no valid base type", t->schema, t->name);
	t->base_type = dup_at(o, "base_type");
	t->not_null = json_is_true(json_object_get(o, "not_null"));
	if (read_strings(json_object_get(o, "constraints"), &t->constraints, &t->nconstraints) != 0)
		return tm_error_set(err, "domain %s.%s: \"constraints\" is not valid", t->schema, t->name);
	return srctype_collation_from_json(json_object_get(o, "collation"), &t->collation, err);
}

int
srctype_from_json(const json_t *o, srctype *out, tm_error *err)
{
	const char *kind = str_at(o, "kind");
	int rc;

	memset(out, 0, sizeof *out);
	if (!json_is_object(o) || name_at(o, "schema") == NULL || name_at(o, "name") == NULL ||
	    kind == NULL || oid_at(o, "oid", &out->oid) != 0 || out->oid == 0)
		return tm_error_set(err, "a type definition without oid, schema, name or kind");
	out->schema = dup_at(o, "schema");
	out->name = dup_at(o, "name");
	out->kind_name = xstrdup(kind);
	out->kind = kind_of(kind);
	out->extension = dup_at(o, "extension");
	out->extension_schema = dup_at(o, "extension_schema");
	out->extension_version = dup_at(o, "extension_version");
	if (out->kind == SRCTYPE_EXTENSION && (name_at(o, "extension") == NULL ||
	                                       name_at(o, "extension_schema") == NULL))
		rc = tm_error_set(err, "type %s.%s: an extension's type without its extension",
		                  out->schema, out->name);
	else if (read_deps(json_object_get(o, "depends"), out) != 0)
		rc = tm_error_set(err, "type %s.%s: \"depends\" is not valid", out->schema, out->name);
	else if ((rc = read_labels(out->kind == SRCTYPE_ENUM ? json_object_get(o, "labels") : NULL,
	                           out, err)) == 0 &&
	         (rc = read_attrs(out->kind == SRCTYPE_COMPOSITE ? json_object_get(o, "attributes")
	                                                         : NULL, out, err)) == 0)
		rc = read_domain(o, out, err);
	if (rc != 0)
		srctype_clear(out);
	return rc;
}

/* ---- writing ---- */

static json_t *
labels_json(const srctype *t)
{
	json_t *arr = json_array();

	for (int i = 0; i < t->nlabels; i++)
		json_array_append_new(arr, json_pack("{s:I, s:s}", "oid", (json_int_t) t->labels[i].oid,
		                                     "label", t->labels[i].label));
	return arr;
}

static json_t *
attrs_json(const srctype *t)
{
	json_t *arr = json_array();

	for (int i = 0; i < t->nattrs; i++) {
		const srctype_attr *a = &t->attrs[i];

		json_array_append_new(arr, json_pack("{s:i, s:s, s:s, s:I, s:I, s:o}", "attnum",
		                                     a->attnum, "name", a->name, "type", a->type_sql,
		                                     "type_oid", (json_int_t) a->type_oid, "type_ref",
		                                     (json_int_t) a->type_ref, "collation",
		                                     srctype_collation_to_json(a->collation)));
	}
	return arr;
}

static json_t *
strings_json(char *const *s, int n)
{
	json_t *arr = json_array();

	for (int i = 0; i < n; i++)
		json_array_append_new(arr, json_string(s[i]));
	return arr;
}

json_t *
srctype_to_json(const srctype *t)
{
	json_t *o = json_pack("{s:I, s:s, s:s, s:s}", "oid", (json_int_t) t->oid, "schema",
	                      t->schema, "name", t->name, "kind", t->kind_name);
	json_t *deps = json_array();

	for (int i = 0; i < t->ndeps; i++)
		json_array_append_new(deps, json_integer(t->deps[i]));
	json_object_set_new(o, "depends", deps);
	json_object_set_new(o, "extension", str_or_null(t->extension));
	json_object_set_new(o, "extension_schema", str_or_null(t->extension_schema));
	json_object_set_new(o, "extension_version", str_or_null(t->extension_version));
	if (t->kind == SRCTYPE_ENUM)
		json_object_set_new(o, "labels", labels_json(t));
	if (t->kind == SRCTYPE_COMPOSITE)
		json_object_set_new(o, "attributes", attrs_json(t));
	if (t->kind == SRCTYPE_DOMAIN) {
		json_object_set_new(o, "base_type", json_string(t->base_type));
		json_object_set_new(o, "base_type_oid", json_integer(t->base_type_oid));
		json_object_set_new(o, "base_type_ref", json_integer(t->base_type_ref));
		json_object_set_new(o, "collation", srctype_collation_to_json(t->collation));
		json_object_set_new(o, "not_null", json_boolean(t->not_null));
		json_object_set_new(o, "constraints", strings_json(t->constraints, t->nconstraints));
	}
	return o;
}

/* ---- copies and lifecycle ---- */

void
srctype_copy(srctype *dst, const srctype *src)
{
	*dst = *src;
	dst->schema = xstrdup(src->schema);
	dst->name = xstrdup(src->name);
	dst->kind_name = xstrdup(src->kind_name);
	dst->extension = xstrdup(src->extension);
	dst->extension_schema = xstrdup(src->extension_schema);
	dst->extension_version = xstrdup(src->extension_version);
	dst->labels = xcalloc((size_t) src->nlabels, sizeof(srctype_label));
	for (int i = 0; i < src->nlabels; i++) {
		dst->labels[i].oid = src->labels[i].oid;
		dst->labels[i].label = xstrdup(src->labels[i].label);
	}
	dst->attrs = xcalloc((size_t) src->nattrs, sizeof(srctype_attr));
	for (int i = 0; i < src->nattrs; i++) {
		dst->attrs[i] = src->attrs[i];
		dst->attrs[i].name = xstrdup(src->attrs[i].name);
		dst->attrs[i].type_sql = xstrdup(src->attrs[i].type_sql);
		dst->attrs[i].collation = srctype_collation_copy(src->attrs[i].collation);
	}
	dst->base_type = xstrdup(src->base_type);
	dst->collation = srctype_collation_copy(src->collation);
	dst->constraints = xcalloc((size_t) src->nconstraints, sizeof(char *));
	for (int i = 0; i < src->nconstraints; i++)
		dst->constraints[i] = xstrdup(src->constraints[i]);
	dst->deps = xcalloc((size_t) src->ndeps, sizeof(uint32_t));
	if (src->ndeps > 0)
		memcpy(dst->deps, src->deps, sizeof(uint32_t) * (size_t) src->ndeps);
}

void
srctype_clear(srctype *t)
{
	free(t->schema);
	free(t->name);
	free(t->kind_name);
	free(t->extension);
	free(t->extension_schema);
	free(t->extension_version);
	for (int i = 0; i < t->nlabels; i++)
		free(t->labels[i].label);
	free(t->labels);
	for (int i = 0; i < t->nattrs; i++) {
		free(t->attrs[i].name);
		free(t->attrs[i].type_sql);
		srctype_collation_free(t->attrs[i].collation);
	}
	free(t->attrs);
	free(t->base_type);
	srctype_collation_free(t->collation);
	for (int i = 0; i < t->nconstraints; i++)
		free(t->constraints[i]);
	free(t->constraints);
	free(t->deps);
	memset(t, 0, sizeof *t);
}

/* ---- lists ---- */

const srctype *
srctype_list_find(const srctype_list *l, uint32_t oid)
{
	for (int i = 0; l != NULL && i < l->n; i++)
		if (l->types[i].oid == oid)
			return &l->types[i];
	return NULL;
}

static srctype *
list_add(srctype_list *l)
{
	l->types = xrealloc(l->types, sizeof(srctype) * (size_t) (l->n + 1));
	return &l->types[l->n++];
}

int
srctype_list_from_json(srctype_list *l, const json_t *arr, tm_error *err)
{
	size_t i;
	json_t *v;

	if (arr == NULL || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return tm_error_set(err, "\"types\" is not an array");
	json_array_foreach(arr, i, v) {
		srctype t;

		if (srctype_from_json(v, &t, err) != 0)
			return -1;
		if (srctype_list_find(l, t.oid) != NULL)
			srctype_clear(&t);
		else
			*list_add(l) = t;
	}
	return 0;
}

json_t *
srctype_list_to_json(const srctype_list *l)
{
	json_t *arr = json_array();

	for (int i = 0; i < l->n; i++)
		json_array_append_new(arr, srctype_to_json(&l->types[i]));
	return arr;
}

void
srctype_list_copy(srctype_list *dst, const srctype_list *src)
{
	dst->n = 0;
	dst->types = NULL;
	for (int i = 0; i < src->n; i++)
		srctype_copy(list_add(dst), &src->types[i]);
}

void
srctype_list_clear(srctype_list *l)
{
	for (int i = 0; i < l->n; i++)
		srctype_clear(&l->types[i]);
	free(l->types);
	l->n = 0;
	l->types = NULL;
}

/* Are all the types t needs that are in l already placed (done[])? */
static bool
deps_placed(const srctype_list *l, const srctype *t, const bool *done)
{
	for (int d = 0; d < t->ndeps; d++)
		for (int j = 0; j < l->n; j++)
			if (l->types[j].oid == t->deps[d] && l->types[j].oid != t->oid && !done[j])
				return false;
	return true;
}

int
srctype_list_order(srctype_list *l, tm_error *err)
{
	srctype *sorted = xcalloc((size_t) l->n, sizeof(srctype));
	bool *done = xcalloc((size_t) l->n, sizeof(bool));
	int placed = 0;
	bool progress = true;

	while (placed < l->n && progress) {
		progress = false;
		for (int i = 0; i < l->n; i++)
			if (!done[i] && deps_placed(l, &l->types[i], done)) {
				sorted[placed++] = l->types[i];
				done[i] = progress = true;
			}
	}
	if (placed < l->n) {
		free(sorted);
		free(done);
		return tm_error_set(err, "the types depend on each other in a cycle");
	}
	if (l->n > 0)
		memcpy(l->types, sorted, sizeof(srctype) * (size_t) l->n);
	free(sorted);
	free(done);
	return 0;
}
