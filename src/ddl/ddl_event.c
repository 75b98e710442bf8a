#include "ddl_event.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONTENT (64 * 1024 * 1024)

static char *
dup_or_null(const json_t *v)
{
	char *p;

	if (!json_is_string(v))
		return NULL;
	p = strdup(json_string_value(v));
	if (p == NULL)
		abort();
	return p;
}

static const char *
str_field(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static long long
int_field(const json_t *o, const char *key, long long dflt)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long) json_integer_value(v) : dflt;
}

static int
parse_kind(const json_t *root, ddl_event *e, tm_error *err)
{
	const char *kind = str_field(root, "kind");

	if (kind == NULL)
		return tm_error_set(err, "DDL capture message: no \"kind\"");
	if (strcmp(kind, "ddl") == 0)
		e->kind = DDL_EVENT_DDL;
	else if (strcmp(kind, "drop") == 0)
		e->kind = DDL_EVENT_DROP;
	else if (strcmp(kind, "rewrite") == 0)
		e->kind = DDL_EVENT_REWRITE;
	else if (strcmp(kind, "truncate") == 0)
		e->kind = DDL_EVENT_TRUNCATE;
	else
		return tm_error_set(err, "DDL capture message: unknown kind \"%.40s\"", kind);
	return 0;
}

static int
parse_columns_extra(const json_t *cols, ddl_event_table *t)
{
	size_t i;
	json_t *c;

	t->cols = calloc((size_t) t->def->ncols + 1, sizeof(ddl_event_column));
	if (t->cols == NULL)
		abort();
	json_array_foreach(cols, i, c) {
		if ((int) i >= t->def->ncols)
			break;
		t->cols[i].has_missing = json_is_true(json_object_get(c, "has_missing"));
		t->cols[i].missing = dup_or_null(json_object_get(c, "missing"));
		t->cols[i].has_default = json_is_true(json_object_get(c, "default"));
	}
	return 0;
}

/* An oid field: 0 when absent, null or out of range. */
static uint32_t
oid_field(const json_t *o, const char *key)
{
	long long v = int_field(o, key, 0);

	return v > 0 && v <= UINT32_MAX ? (uint32_t) v : 0;
}

static int
parse_table(const json_t *o, ddl_event_table *t, tm_error *err)
{
	const char *relkind = str_field(o, "relkind");
	tm_error why;

	if (tabledef_from_json(o, &t->def, &why) != 0)
		return tm_error_set(err, "DDL capture message: %s", why.msg);
	t->relkind = relkind && relkind[0] ? relkind[0] : 'r';
	t->replident = t->def->replident;
	t->partition_of = oid_field(o, "partition_of");
	t->partition_root = oid_field(o, "partition_root");
	if (t->partition_of == 0 || t->partition_root == 0 || t->partition_root == t->def->relid)
		t->partition_of = t->partition_root = 0; /* a partition has both, and a root not itself */
	return parse_columns_extra(json_object_get(o, "columns"), t);
}

static int
parse_tables(const json_t *root, ddl_event *e, tm_error *err)
{
	const json_t *arr = json_object_get(root, "tables");
	size_t i;
	json_t *o;

	if (arr == NULL || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return tm_error_set(err, "DDL capture message: \"tables\" is not an array");
	e->tables = calloc(json_array_size(arr) + 1, sizeof(ddl_event_table));
	if (e->tables == NULL)
		abort();
	json_array_foreach(arr, i, o) {
		if (parse_table(o, &e->tables[e->ntables++], err) != 0)
			return -1;
	}
	return 0;
}

static int
parse_dropped(const json_t *root, ddl_event *e, tm_error *err)
{
	const json_t *arr = json_object_get(root, "dropped");
	size_t i;
	json_t *o;

	if (arr == NULL || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return tm_error_set(err, "DDL capture message: \"dropped\" is not an array");
	e->dropped = calloc(json_array_size(arr) + 1, sizeof(ddl_event_dropped));
	if (e->dropped == NULL)
		abort();
	json_array_foreach(arr, i, o) {
		ddl_event_dropped *d = &e->dropped[e->ndropped++];
		long long objid = int_field(o, "objid", 0);

		d->object_type = dup_or_null(json_object_get(o, "object_type"));
		d->schema = dup_or_null(json_object_get(o, "schema"));
		d->name = dup_or_null(json_object_get(o, "name"));
		d->identity = dup_or_null(json_object_get(o, "identity"));
		d->objid = objid > 0 && objid <= UINT32_MAX ? (uint32_t) objid : 0;
		d->objsubid = (int) int_field(o, "objsubid", 0);
		if (d->object_type == NULL)
			return tm_error_set(err, "DDL capture message: a dropped object without a type");
	}
	return 0;
}

static void
parse_rewrite(const json_t *root, ddl_event *e)
{
	const json_t *rw = json_object_get(root, "rewrite");

	if (!json_is_object(rw))
		return;
	e->rewrite_relid = oid_field(rw, "relid");
	e->rewrite_reason = (int) int_field(rw, "reason", 0);
}

static void
parse_strings(const json_t *root, ddl_event *e)
{
	e->command_tag = dup_or_null(json_object_get(root, "command_tag"));
	e->statement = dup_or_null(json_object_get(root, "statement"));
	e->user = dup_or_null(json_object_get(root, "user"));
	e->time = dup_or_null(json_object_get(root, "time"));
	e->timezone = dup_or_null(json_object_get(root, "timezone"));
	e->datestyle = dup_or_null(json_object_get(root, "datestyle"));
	e->intervalstyle = dup_or_null(json_object_get(root, "intervalstyle"));
	e->float_digits = dup_or_null(json_object_get(root, "extra_float_digits"));
	e->bytea_output = dup_or_null(json_object_get(root, "bytea_output"));
	e->error = dup_or_null(json_object_get(root, "error"));
	e->xid = int_field(root, "xid", 0);
	e->seq = (int) int_field(root, "seq", 0);
	e->statement_seq = (int) int_field(root, "statement_seq", e->seq);
}

int
ddl_event_parse(const char *content, size_t len, ddl_event **out, tm_error *err)
{
	json_error_t jerr;
	json_t *root;
	ddl_event *e;
	int rc;

	if (len > MAX_CONTENT)
		return tm_error_set(err, "DDL capture message: %zu bytes is too large", len);
	root = json_loadb(content, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(root)) {
		json_decref(root);
		return tm_error_set(err, "DDL capture message is not a JSON object: %s", jerr.text);
	}
	if (int_field(root, "version", 0) != 1) {
		json_decref(root);
		return tm_error_set(err, "DDL capture message: unknown version");
	}
	e = calloc(1, sizeof *e);
	if (e == NULL)
		abort();
	rc = parse_kind(root, e, err);
	if (rc == 0) {
		parse_strings(root, e);
		parse_rewrite(root, e);
		rc = parse_tables(root, e, err);
	}
	if (rc == 0)
		rc = parse_dropped(root, e, err);
	if (rc == 0 && srctype_list_from_json(&e->types, json_object_get(root, "types"), err) != 0)
		rc = -1;
	json_decref(root);
	if (rc != 0) {
		ddl_event_free(e);
		return -1;
	}
	*out = e;
	return 0;
}

void
ddl_event_free(ddl_event *e)
{
	if (e == NULL)
		return;
	for (int i = 0; i < e->ntables; i++) {
		for (int c = 0; e->tables[i].cols && e->tables[i].def && c < e->tables[i].def->ncols; c++)
			free(e->tables[i].cols[c].missing);
		free(e->tables[i].cols);
		tabledef_free(e->tables[i].def);
	}
	free(e->tables);
	for (int i = 0; i < e->ndropped; i++) {
		free(e->dropped[i].object_type);
		free(e->dropped[i].schema);
		free(e->dropped[i].name);
		free(e->dropped[i].identity);
	}
	free(e->dropped);
	srctype_list_clear(&e->types);
	free(e->command_tag);
	free(e->statement);
	free(e->user);
	free(e->time);
	free(e->timezone);
	free(e->datestyle);
	free(e->intervalstyle);
	free(e->float_digits);
	free(e->bytea_output);
	free(e->error);
	free(e);
}

const ddl_event_table *
ddl_event_table_by_relid(const ddl_event *e, uint32_t relid)
{
	for (int i = 0; i < e->ntables; i++)
		if (e->tables[i].def->relid == relid)
			return &e->tables[i];
	return NULL;
}
