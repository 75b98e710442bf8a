/*
 * schema_map.c: source schema -> target schema for a pipeline (see
 * schema_map.h).
 */
#include "schema_map.h"

#include <stdlib.h>
#include <string.h>

#include "ident.h"
#include "xalloc.h"

void
schema_map_clear(schema_map *m)
{
	free(m->target_schema);
	for (int i = 0; i < m->n; i++) {
		free(m->from[i]);
		free(m->to[i]);
	}
	free(m->from);
	free(m->to);
	memset(m, 0, sizeof *m);
}

int
schema_map_check_name(const char *name, const char *option, tm_error *err)
{
	size_t len = strlen(name);

	if (len == 0 || len > IDENT_NAME_BYTES)
		return tm_error_set(err, "%s: a schema name has 1 to %d bytes", option,
		                    IDENT_NAME_BYTES);
	if (strcmp(name, "tidemark") == 0)
		return tm_error_set(err, "%s: schema tidemark holds tidemark's own catalog on the "
		                    "target; choose another name", option);
	if (strncmp(name, "pg_", 3) == 0 || strcmp(name, "information_schema") == 0)
		return tm_error_set(err, "%s: schema %s is reserved by PostgreSQL; choose another name",
		                    option, name);
	return 0;
}

int
schema_map_set_default(schema_map *m, const char *name, tm_error *err)
{
	if (schema_map_check_name(name, "--target-schema", err) != 0)
		return -1;
	if (m->target_schema != NULL && strcmp(m->target_schema, name) != 0)
		return tm_error_set(err, "--target-schema is given twice (%s and %s)", m->target_schema,
		                    name);
	free(m->target_schema);
	m->target_schema = xstrdup(name);
	return 0;
}

static int
find(const schema_map *m, const char *from)
{
	for (int i = 0; i < m->n; i++)
		if (strcmp(m->from[i], from) == 0)
			return i;
	return -1;
}

int
schema_map_add(schema_map *m, const char *from, const char *to, tm_error *err)
{
	int at = find(m, from);

	if (from[0] == '\0' || strlen(from) > IDENT_NAME_BYTES)
		return tm_error_set(err, "--map-schema: a schema name has 1 to %d bytes",
		                    IDENT_NAME_BYTES);
	if (schema_map_check_name(to, "--map-schema", err) != 0)
		return -1;
	if (at >= 0 && strcmp(m->to[at], to) != 0)
		return tm_error_set(err, "--map-schema: schema %s is mapped to %s and to %s", from,
		                    m->to[at], to);
	if (at >= 0)
		return 0;
	m->from = xrealloc(m->from, sizeof(char *) * (size_t) (m->n + 1));
	m->to = xrealloc(m->to, sizeof(char *) * (size_t) (m->n + 1));
	m->from[m->n] = xstrdup(from);
	m->to[m->n++] = xstrdup(to);
	return 0;
}

int
schema_map_parse_pair(schema_map *m, const char *arg, tm_error *err)
{
	const char *eq = strchr(arg, '=');
	char *from;
	int rc;

	if (eq == NULL || eq == arg || eq[1] == '\0' || strchr(eq + 1, '=') != NULL)
		return tm_error_set(err, "--map-schema takes SOURCE_SCHEMA=TARGET_SCHEMA, not \"%s\"",
		                    arg);
	from = xmalloc((size_t) (eq - arg) + 1);
	memcpy(from, arg, (size_t) (eq - arg));
	from[eq - arg] = '\0';
	rc = schema_map_add(m, from, eq + 1, err);
	free(from);
	return rc;
}

const char *
schema_map_target(const schema_map *m, const char *source_schema)
{
	int at = find(m, source_schema);

	if (at >= 0)
		return m->to[at];
	return m->target_schema != NULL ? m->target_schema : source_schema;
}

int
schema_map_merge(schema_map *have, const schema_map *want, tm_error *err)
{
	if (want->target_schema != NULL && have->target_schema != NULL &&
	    strcmp(want->target_schema, have->target_schema) != 0)
		return tm_error_set(err, "this pipeline puts its tables into schema %s on the target "
		                    "already (--target-schema); it cannot change to %s",
		                    have->target_schema, want->target_schema);
	if (want->target_schema != NULL && have->target_schema == NULL)
		have->target_schema = xstrdup(want->target_schema);
	for (int i = 0; i < want->n; i++) {
		int at = find(have, want->from[i]);

		if (at >= 0 && strcmp(have->to[at], want->to[i]) != 0)
			return tm_error_set(err, "this pipeline maps schema %s to %s on the target already "
			                    "(--map-schema); it cannot change to %s", want->from[i],
			                    have->to[at], want->to[i]);
		if (at < 0 && schema_map_add(have, want->from[i], want->to[i], err) != 0)
			return -1;
	}
	return 0;
}
