/*
 * schema_map.h: which target schema each source schema of a pipeline goes
 * to (setup --target-schema NAME, --map-schema SRC=DST). Pure: no I/O. The
 * same rule, on the target, is tidemark.map_schema() (migrations/target/
 * 012_pipelines.sql): a --map-schema pair first, then --target-schema, then
 * the source's own schema name.
 *
 * Schema names are taken as written (like --schema), not folded.
 */
#ifndef TIDEMARK_SCHEMA_MAP_H
#define TIDEMARK_SCHEMA_MAP_H

#include <stdbool.h>

#include "tm_error.h"

typedef struct schema_map {
	char *target_schema; /* owned; NULL: every source schema keeps its name */
	int n;
	char **from;         /* owned arrays of n owned strings: source schemas */
	char **to;           /* and their target schemas */
} schema_map;

#define SCHEMA_MAP_INIT {NULL, 0, NULL, NULL}

void schema_map_clear(schema_map *m);

/* Is name usable as a target schema: 1 to 63 bytes, not tidemark's own
 * catalog schema, not one PostgreSQL reserves (pg_*, information_schema)?
 * 0, or -1 with err naming the option. */
int schema_map_check_name(const char *name, const char *option, tm_error *err);

/* --target-schema NAME: 0, or -1 with err (a bad name, or given twice). */
int schema_map_set_default(schema_map *m, const char *name, tm_error *err);

/* One pair: 0, or -1 with err (a bad name, or the source schema mapped
 * twice to different schemas). */
int schema_map_add(schema_map *m, const char *from, const char *to, tm_error *err);

/* --map-schema's argument "SRC=DST". */
int schema_map_parse_pair(schema_map *m, const char *arg, tm_error *err);

/* The target schema of source_schema: borrowed from m or source_schema. */
const char *schema_map_target(const schema_map *m, const char *source_schema);

/*
 * Adds what a setup asks (want) to what the pipeline has (have). A mapping,
 * once recorded, is kept: asking another target schema for a source schema
 * already mapped, or another --target-schema, is -1 with err saying both.
 */
int schema_map_merge(schema_map *have, const schema_map *want, tm_error *err);

#endif
