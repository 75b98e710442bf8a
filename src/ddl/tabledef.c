#include "tabledef.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

tabledef *
tabledef_new(const char *schema, const char *name, uint32_t relid)
{
	tabledef *t = calloc(1, sizeof *t);

	if (t == NULL)
		abort();
	t->schema = xstrdup(schema);
	t->name = xstrdup(name);
	t->relid = relid;
	t->replident = 'd';
	t->persistence = 'p';
	return t;
}

tabledef_column *
tabledef_add_column(tabledef *t, int attnum, const char *name, const char *type_sql,
                    uint32_t type_oid, int32_t typmod, bool not_null, bool is_key)
{
	tabledef_column *cols = realloc(t->cols, sizeof *cols * (size_t) (t->ncols + 1));
	tabledef_column *c;

	if (cols == NULL)
		abort();
	t->cols = cols;
	c = &cols[t->ncols++];
	memset(c, 0, sizeof *c);
	c->attnum = attnum;
	c->name = xstrdup(name);
	c->type_sql = xstrdup(type_sql);
	c->target_type = xstrdup(type_sql);
	c->type_oid = type_oid;
	c->typmod = typmod;
	c->not_null = not_null;
	c->is_key = is_key;
	c->key_pos = 0; /* not known until set */
	return c;
}

void
tabledef_free(tabledef *t)
{
	if (t == NULL)
		return;
	for (int i = 0; i < t->ncols; i++) {
		free(t->cols[i].name);
		free(t->cols[i].type_sql);
		free(t->cols[i].target_type);
		srctype_collation_free(t->cols[i].collation);
		free(t->cols[i].generated);
		free(t->cols[i].kept_as);
	}
	free(t->cols);
	srctype_list_clear(&t->types);
	free(t->schema);
	free(t->name);
	free(t);
}

tabledef *
tabledef_copy(const tabledef *t)
{
	tabledef *c = tabledef_new(t->schema, t->name, t->relid);

	c->replident = t->replident;
	c->persistence = t->persistence;
	for (int i = 0; i < t->ncols; i++) {
		const tabledef_column *col = &t->cols[i];

		tabledef_column *nc = tabledef_add_column(c, col->attnum, col->name, col->type_sql,
		                                          col->type_oid, col->typmod, col->not_null,
		                                          col->is_key);

		nc->key_pos = col->key_pos;
		tabledef_set_target_type(nc, col->target_type);
		nc->type_ref = col->type_ref;
		nc->collation = srctype_collation_copy(col->collation);
		nc->collate = col->collate;
		nc->generated = xstrdup(col->generated);
		nc->kept_as = xstrdup(col->kept_as);
	}
	srctype_list_copy(&c->types, &t->types);
	return c;
}

void
tabledef_set_target_type(tabledef_column *c, const char *target_type)
{
	free(c->target_type);
	c->target_type = xstrdup(target_type ? target_type : c->type_sql);
}

void
tabledef_set_kept_as(tabledef_column *c, const char *reason)
{
	free(c->kept_as);
	c->kept_as = xstrdup(reason);
}

bool
tabledef_column_streamed(const tabledef_column *c)
{
	return c->generated == NULL;
}

int
tabledef_nkeys(const tabledef *t)
{
	int n = 0;

	for (int i = 0; i < t->ncols; i++)
		n += t->cols[i].is_key;
	return n;
}

int
tabledef_nstored(const tabledef *t)
{
	int n = 0;

	for (int i = 0; i < t->ncols; i++)
		n += tabledef_column_streamed(&t->cols[i]);
	return n;
}

int
tabledef_key_columns(const tabledef *t, const tabledef_column **out)
{
	int n = 0;
	bool positioned = true;

	for (int i = 0; i < t->ncols; i++)
		if (t->cols[i].is_key) {
			positioned &= t->cols[i].key_pos > 0;
			out[n++] = &t->cols[i];
		}
	/* insertion sort by key_pos: keys have a few columns */
	for (int i = 1; positioned && i < n; i++)
		for (int j = i; j > 0 && out[j - 1]->key_pos > out[j]->key_pos; j--) {
			const tabledef_column *c = out[j];

			out[j] = out[j - 1];
			out[j - 1] = c;
		}
	return n;
}

const tabledef_column *
tabledef_find(const tabledef *t, const char *name)
{
	for (int i = 0; i < t->ncols; i++)
		if (strcmp(t->cols[i].name, name) == 0)
			return &t->cols[i];
	return NULL;
}

json_t *
tabledef_columns_to_json(const tabledef *t)
{
	json_t *arr = json_array();

	for (int i = 0; i < t->ncols; i++) {
		const tabledef_column *c = &t->cols[i];

		json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:I, s:i, s:b, s:b}", "attnum", c->attnum,
		                      "name", c->name, "type", c->type_sql, "target_type",
		                      c->target_type, "type_oid", (json_int_t) c->type_oid, "typmod",
		                      (int) c->typmod, "not_null", c->not_null, "key", c->is_key);

		if (c->key_pos > 0)
			json_object_set_new(o, "key_position", json_integer(c->key_pos));
		if (c->type_ref != 0)
			json_object_set_new(o, "type_ref", json_integer(c->type_ref));
		if (c->collation != NULL) {
			json_object_set_new(o, "collation", srctype_collation_to_json(c->collation));
			json_object_set_new(o, "collate", json_boolean(c->collate));
		}
		if (c->generated != NULL)
			json_object_set_new(o, "generated", json_string(c->generated));
		if (c->kept_as != NULL)
			json_object_set_new(o, "kept_as", json_string(c->kept_as));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* The fields beyond the basic ones, all optional. */
static int
column_extras(tabledef_column *c, const json_t *o, size_t i, tm_error *err)
{
	const json_t *ref = json_object_get(o, "type_ref");
	const json_t *gen = json_object_get(o, "generated");
	const json_t *kept = json_object_get(o, "kept_as");
	const json_t *collate = json_object_get(o, "collate");

	if (json_is_integer(ref) && json_integer_value(ref) > 0 && json_integer_value(ref) <= UINT32_MAX)
		c->type_ref = (uint32_t) json_integer_value(ref);
	else if (ref != NULL && !json_is_null(ref))
		return tm_error_set(err, "table definition: column %zu: \"type_ref\" is not an oid", i);
	if (srctype_collation_from_json(json_object_get(o, "collation"), &c->collation, err) != 0)
		return -1;
	/* a capture message's collation is wanted on the target unless default */
	c->collate = c->collation != NULL &&
	             (collate != NULL ? json_is_true(collate) : !c->collation->is_default);
	if (json_is_string(gen))
		c->generated = xstrdup(json_string_value(gen));
	if (json_is_string(kept))
		c->kept_as = xstrdup(json_string_value(kept));
	return 0;
}

/* Whether a column of t already has this attnum or this name. */
static bool
column_repeated(const tabledef *t, int attnum, const char *name)
{
	for (int i = 0; i < t->ncols; i++)
		if (t->cols[i].attnum == attnum || strcmp(t->cols[i].name, name) == 0)
			return true;
	return false;
}

int
tabledef_columns_from_json(tabledef *t, const json_t *cols, tm_error *err)
{
	size_t i;
	json_t *c;

	if (!json_is_array(cols))
		return tm_error_set(err, "table definition: \"columns\" is not an array");
	json_array_foreach(cols, i, c) {
		int attnum = 0, typmod = -1, not_null = 0, key = 0, key_pos = 0;
		json_int_t oid = 0;
		const char *name = NULL, *type = NULL, *target_type = NULL;
		tabledef_column *col;
		json_error_t jerr;

		if (json_unpack_ex((json_t *) c, &jerr, 0, "{s:i, s:s, s:s, s?s, s?I, s?i, s?b, s?b}",
		                   "attnum", &attnum, "name", &name, "type", &type, "target_type",
		                   &target_type, "type_oid", &oid,
		                   "typmod", &typmod, "not_null", &not_null, "key", &key) != 0)
			return tm_error_set(err, "table definition: column %zu: %s", i, jerr.text);
		if (attnum <= 0 || name[0] == '\0' || type[0] == '\0' || oid < 0 || oid > UINT32_MAX)
			return tm_error_set(err, "table definition: column %zu is not valid", i);
		if (column_repeated(t, attnum, name))
			return tm_error_set(err, "table definition: column %zu repeats an attnum or a name",
			                    i);
		if (json_is_integer(json_object_get(c, "key_position")))
			key_pos = (int) json_integer_value(json_object_get(c, "key_position"));
		if (key_pos < 0 || key_pos > 32 || (key_pos > 0 && !key))
			return tm_error_set(err, "table definition: column %zu: key_position %d is not "
			                    "valid", i, key_pos);
		col = tabledef_add_column(t, attnum, name, type, (uint32_t) oid, typmod, not_null, key);
		col->key_pos = key_pos;
		tabledef_set_target_type(col, target_type);
		if (column_extras(col, c, i, err) != 0)
			return -1;
	}
	return 0;
}

int
tabledef_types_from_json(tabledef *t, const json_t *types, tm_error *err)
{
	tm_error why;

	if (srctype_list_from_json(&t->types, types, &why) != 0)
		return tm_error_set(err, "table definition: %s", why.msg);
	return 0;
}

/* The first character of a string field, or dflt when it is absent or empty. */
static char
char_field(const json_t *o, const char *key, char dflt)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL && v[0] != '\0' ? v[0] : dflt;
}

int
tabledef_from_json(const json_t *o, tabledef **out, tm_error *err)
{
	const char *schema = json_string_value(json_object_get(o, "schema"));
	const char *name = json_string_value(json_object_get(o, "name"));
	const json_t *relid = json_object_get(o, "relid");
	json_int_t oid = json_is_integer(relid) ? json_integer_value(relid) : 0;
	tm_error why;

	*out = NULL;
	if (schema == NULL || name == NULL || schema[0] == '\0' || name[0] == '\0' || oid <= 0 ||
	    oid > UINT32_MAX)
		return tm_error_set(err, "a table without schema, name or relid");
	*out = tabledef_new(schema, name, (uint32_t) oid);
	(*out)->replident = char_field(o, "replident", 'd');
	(*out)->persistence = char_field(o, "persistence", 'p'); /* from source migration 011 */
	if (tabledef_columns_from_json(*out, json_object_get(o, "columns"), &why) != 0 ||
	    tabledef_types_from_json(*out, json_object_get(o, "types"), &why) != 0) {
		tabledef_free(*out);
		*out = NULL;
		return tm_error_set(err, "%s.%s: %s", schema, name, why.msg);
	}
	return 0;
}

char *
tabledef_keys_json(const tabledef *t)
{
	const tabledef_column **keys = xcalloc((size_t) t->ncols + 1, sizeof *keys);
	int n = tabledef_key_columns(t, keys);
	json_t *arr = json_array();
	char *text;

	for (int i = 0; i < n; i++)
		json_array_append_new(arr, json_string(keys[i]->name));
	free(keys);
	text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return text;
}
