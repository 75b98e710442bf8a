/*
 * ddl_parse_json.c: checked access to libpg_query's JSON parse tree, and
 * copies of what is kept into the result's arena.
 *
 * The json_t values read here belong to the tree being walked (freed by the
 * caller of the walk); strings returned by ddl_json_* point into it and are
 * copied with ddl_walk_strdup before they are stored in a result.
 */
#include "ddl_parse_int.h"

#include <string.h>

json_t *
ddl_json_get(const json_t *obj, const char *key)
{
	if (obj == NULL || !json_is_object(obj))
		return NULL;
	return json_object_get(obj, key);
}

json_t *
ddl_json_array(const json_t *obj, const char *key)
{
	json_t *v = ddl_json_get(obj, key);

	return json_is_array(v) ? v : NULL;
}

const char *
ddl_json_str(const json_t *obj, const char *key)
{
	json_t *v = ddl_json_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

bool
ddl_json_bool(const json_t *obj, const char *key)
{
	return json_is_true(ddl_json_get(obj, key));
}

int64_t
ddl_json_int(const json_t *obj, const char *key, int64_t dflt)
{
	json_t *v = ddl_json_get(obj, key);

	return json_is_integer(v) ? (int64_t) json_integer_value(v) : dflt;
}

/* A char field ("relpersistence":"p"); '\0' when absent. */
char
ddl_json_char(const json_t *obj, const char *key)
{
	const char *s = ddl_json_str(obj, key);

	return (s != NULL && s[0] != '\0' && s[1] == '\0') ? s[0] : '\0';
}

/* True when obj[key] is the string value (an enum such as "OBJECT_TABLE"). */
bool
ddl_json_str_is(const json_t *obj, const char *key, const char *value)
{
	const char *s = ddl_json_str(obj, key);

	return s != NULL && strcmp(s, value) == 0;
}

/* A node is written {"TypeName": {fields}}: its one key is its type. */
const char *
ddl_json_node_name(const json_t *node)
{
	const char *key;

	if (node == NULL || !json_is_object(node) || json_object_size(node) != 1)
		return NULL;
	key = json_object_iter_key(json_object_iter((json_t *) node));
	return key;
}

json_t *
ddl_json_node_body(const json_t *node)
{
	const char *name = ddl_json_node_name(node);
	json_t *body;

	if (name == NULL)
		return NULL;
	body = json_object_get(node, name);
	return json_is_object(body) ? body : NULL;
}

/* The body of node when it is a node of type name, else NULL. */
json_t *
ddl_json_node(const json_t *node, const char *name)
{
	const char *actual = ddl_json_node_name(node);

	if (actual == NULL || strcmp(actual, name) != 0)
		return NULL;
	return ddl_json_node_body(node);
}

char *
ddl_walk_strdup(ddl_walk *w, const char *s)
{
	return s == NULL ? NULL : arena_strdup(&w->res->mem, s);
}

/*
 * Makes room for one more element in an arena array holding n elements of
 * elsize bytes, *cap allocated; returns the (possibly moved) array. The
 * old copy stays in the arena until the result is freed.
 */
void *
ddl_walk_grow(ddl_walk *w, void *items, size_t n, size_t *cap, size_t elsize)
{
	size_t newcap;
	void *p;

	if (n < *cap)
		return items;
	newcap = *cap ? *cap * 2 : 8;
	p = arena_alloc(&w->res->mem, newcap * elsize);
	if (n > 0)
		memcpy(p, items, n * elsize);
	*cap = newcap;
	return p;
}

/*
 * A list of String nodes ([{"String":{"sval":"public"}}, ...]) copied into
 * an arena array. An empty string is written {"String":{}}. A missing list
 * gives 0 names; an element of another type is an error.
 */
int
ddl_walk_names(ddl_walk *w, const json_t *list, const char ***names, size_t *n)
{
	size_t count = json_array_size(list);
	const char **out;

	*names = NULL;
	*n = 0;
	if (count == 0)
		return 0;
	out = arena_alloc(&w->res->mem, count * sizeof(*out));
	for (size_t i = 0; i < count; i++) {
		json_t *s = ddl_json_node(json_array_get(list, i), "String");
		const char *sval = ddl_json_str(s, "sval");

		if (s == NULL)
			return tm_error_set(w->err, "a name list holds something other than names");
		out[i] = ddl_walk_strdup(w, sval != NULL ? sval : "");
	}
	*names = out;
	*n = count;
	return 0;
}

/* A list of String nodes as "a"."b"; NULL when the list is empty or not names. */
char *
ddl_walk_quoted_names(ddl_walk *w, const json_t *list)
{
	strbuf sb = STRBUF_INIT;
	char *out = NULL;
	size_t count = json_array_size(list);

	for (size_t i = 0; i < count; i++) {
		const char *sval = ddl_json_str(ddl_json_node(json_array_get(list, i), "String"), "sval");

		if (sval == NULL) {
			strbuf_free(&sb);
			return NULL;
		}
		if (i > 0)
			strbuf_appendc(&sb, '.');
		strbuf_append_ident(&sb, sval);
	}
	if (count > 0)
		out = ddl_walk_strdup(w, strbuf_str(&sb));
	strbuf_free(&sb);
	return out;
}

/* Appends a copy of *ch (its pointers already in the arena) to the result. */
int
ddl_walk_push(ddl_walk *w, const ddl_parse_change *ch)
{
	ddl_parse_result *res = w->res;

	res->changes = ddl_walk_grow(w, res->changes, res->n_changes, &w->changes_cap,
								 sizeof(*res->changes));
	res->changes[res->n_changes] = *ch;
	res->changes[res->n_changes].stmt_index = w->stmt_index;
	res->n_changes++;
	return 0;
}
